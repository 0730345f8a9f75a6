"""A recovery clears the fault of the part it names, not another part of the same node (outside probe X,
2026-12-05).

The probe's job 1006 (8-rail HGX B200 nodes): on its node, rail mlx5_2 (PCI 0000:40:00.0) went ``Link DOWN``
at 18:00:00 and stayed down until 22:00, while rail mlx5_5 (0000:9a:00.0) flapped DOWN 17:59:50 / ACTIVE
18:00:30. The job (2 nodes, 16 GPUs) died at 18:40:00 FAILED 1:0. The tool paired mlx5_5's ACTIVE with
mlx5_2's DOWN (recovery by node and class only): 18:40:00 - 18:00:30 = 39.5 min > the 30-min collective
timeout, so the "recovered" link was cleared and the job blamed on the user; the incident was "repaired"
at 18:00:30 (0.011 h). Right: mlx5_2 was an open lasting fault at the end (40 min old, inside the 60-min
lookback) → infrastructure/network; the incident was repaired when mlx5_2 came back (22:00).

Rule (``repair_times.same_part``): a recovery or clearing line and a fault are about the same part when
their ``device_pci``, ``gpu_pci`` and ``port`` agree wherever both carry one; a line that carries none
(a reboot, a site's portless ``link down``) still answers for every part of its node.

Hand-computed figures: every job runs 2 h 40 min (≥ Δ = 1 h), so an infrastructure kill loses Δ/2 = 0.5 h
per GPU: 16 GPUs → 8.0 GPU-h, 8 GPUs → 4.0 GPU-h.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from node_event_lines import events_with_parts

from gpusre.models.failures.attribution import HUNG_RULE, attribute_failures
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents
from gpusre.models.reliability.repair_times import (PART_COLUMNS, join_asof_same_part, link_incidents,
                                                    recovery_ends)
from gpusre.models.sources.syslog.nic_identity import pci_of_interface_name

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    """2026-11-26 h:m:s UTC (the probe's day)."""
    return datetime(2026, 11, 26, h, m, s, tzinfo=UTC)


def down(pci: str, rail: str) -> str:
    return f"mlx5_core {pci} {rail}: Port: 1 Link DOWN"


def up(pci: str, rail: str) -> str:
    return f"mlx5_core {pci} {rail}: Port: 1 Link ACTIVE"


MLX5_2, MLX5_5 = "0000:40:00.0", "0000:9a:00.0"
GPU_A, GPU_B = "0000:18:00", "0000:5d:00"
XID79 = "NVRM: Xid (PCI:{}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
BOOT = ("Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
        "GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023")
DRIVER = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024"

#: The probe's node u07 (event ids 1..4 in this order).
PROBE_LINES = [(t(17, 59, 50), "u07", down(MLX5_5, "mlx5_5")), (t(18), "u07", down(MLX5_2, "mlx5_2")),
               (t(18, 0, 30), "u07", up(MLX5_5, "mlx5_5")), (t(22), "u07", up(MLX5_2, "mlx5_2"))]


def events(lines: list[tuple[datetime, str, str]], *, overrides: dict[int, dict] | None = None) -> pl.DataFrame:
    """core.node_events rows (EVENT_SCHEMA and the part columns) of ``(ts, node, raw line)``, classified as the
    ingest does; ``overrides``: column values to set on some event ids (hand-typed lines of other sites)."""
    frame = events_with_parts(lines)
    for event_id, values in (overrides or {}).items():
        frame = frame.with_columns(pl.when(pl.col("event_id") == event_id).then(pl.lit(v, pl.String))
                                   .otherwise(pl.col(c)).alias(c) for c, v in values.items())
    return frame


def job(job_id: str, nodes: list[str], *, start: datetime = t(16), end: datetime = t(18, 40),
        state: str = "FAILED") -> dict:
    return {"job_id": job_id, "state": state, "nodes": nodes, "n_gpus": 8 * len(nodes), "start_ts": start,
            "end_ts": end, "elapsed_s": int((end - start).total_seconds()), "exit_code": 1, "exit_signal": 0}


JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": DT, "end_ts": DT, "elapsed_s": pl.Int64, "exit_code": pl.Int64, "exit_signal": pl.Int64}


def attribute(jobs: list[dict], ev: pl.DataFrame) -> dict[str, dict]:
    incidents, _ = merge_incidents(ev)
    out = attribute_failures(pl.DataFrame(jobs, schema=JOB_SCHEMA), ev, incidents)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}


def verdict(row: dict) -> tuple:
    return row["attribution"], row["cause_class"], row["evidence_event_ids"], row["lost_gpu_hours"]


# --- job failure attribution -----------------------------------------------------------------------------


def test_another_rails_recovery_does_not_clear_a_rail_still_down() -> None:
    # The probe's job 1006 on u07 + u08 (16 GPUs), FAILED 18:40:00. mlx5_5: DOWN 17:59:50, ACTIVE 18:00:30;
    # 18:00:30 + 30 min (the multi-node grace) = 18:30:30 <= 18:40: its flap is cleared.
    # mlx5_2: DOWN 18:00:00, its own ACTIVE only at 22:00: open at the end, 40 min old (< 60-min lookback).
    ev = events(PROBE_LINES)
    row = attribute([job("1006", ["u07", "u08"])], ev)["1006"]
    assert verdict(row) == ("infrastructure", "hardware", [2], 8.0)  # event 2: mlx5_2's DOWN only
    assert row["component"] == "network"
    # The node's network incident (both rails' DOWN lines) is the job's: mlx5_2 had not recovered.
    incidents, members = merge_incidents(ev)
    assert row["incident_id"] == members.filter(pl.col("event_id") == 2)["incident_id"].item()


def test_the_same_rails_recovery_clears_its_flap() -> None:
    # mlx5_2 alone: DOWN 18:00:00, its own ACTIVE 18:00:30; 18:00:30 + 30 min = 18:30:30 <= 18:40:00: the
    # 2-node job survived the flap -> the user's exit code.
    ev = events([(t(18), "u07", down(MLX5_2, "mlx5_2")), (t(18, 0, 30), "u07", up(MLX5_2, "mlx5_2"))])
    row = attribute([job("1006", ["u07", "u08"])], ev)["1006"]
    assert (row["attribution"], row["rule"], row["lost_gpu_hours"]) == (
        "user", "non-zero exit without infrastructure evidence", 0.0)


def test_lines_that_name_no_part_still_clear_by_node_and_class() -> None:
    # A site whose link lines carry no PCI address or port (hand-typed: the probe's lines with the part
    # columns emptied): mlx5_5's ACTIVE at 18:00:30 answers every link of the node, as before.
    no_part = {c: None for c in PART_COLUMNS if c != "gpu_pci"}
    ev = events(PROBE_LINES, overrides={i: no_part for i in (1, 2, 3, 4)})
    assert attribute([job("1006", ["u07", "u08"])], ev)["1006"]["attribution"] == "user"
    # Only the recovery lacks the part: it still answers for mlx5_2's DOWN (one side lacks it).
    ev = events(PROBE_LINES, overrides={3: no_part})
    assert attribute([job("1006", ["u07", "u08"])], ev)["1006"]["attribution"] == "user"
    # Event tables without the part columns at all (EVENT_SCHEMA only): node + class, as before.
    ev = events(PROBE_LINES).drop("device_pci", "port")
    assert attribute([job("1006", ["u07", "u08"])], ev)["1006"]["attribution"] == "user"


def test_a_port_name_and_a_device_port_number_are_not_compared() -> None:
    # The kernel's DOWN names the HCA and its port number ("0000:40:00.0", "1"); networkd's "Gained carrier"
    # names the interface ("ibp64s0"), which the ingest places on the NIC its name encodes (bus 64 = 0x40:
    # nic_identity): one NIC, and a number and a name are not compared — the recovery at 18:00:30 clears the
    # DOWN, and the job is the user's.
    assert pl.select(pci_of_interface_name(pl.lit("ibp64s0"))).item() == MLX5_2
    lines = [(t(18), "u07", down(MLX5_2, "mlx5_2")),
             (t(18, 0, 30), "u07", "systemd-networkd[1187]: ibp64s0: Gained carrier")]
    ev = events(lines, overrides={2: {"device_pci": MLX5_2}})
    assert ev.select(PART_COLUMNS).rows() == [(MLX5_2, None, "1"), (MLX5_2, None, "ibp64s0")]
    assert attribute([job("1006", ["u07", "u08"])], ev)["1006"]["attribution"] == "user"
    # (was: 'user' too) An interface nothing ties to an address (the kernel's own name ib0) is no recovery of
    # a NIC identified by its address: mlx5_2 is open at 18:40 (40 min) -> infrastructure, 16 x 0.5 = 8.0 GPU-h.
    ev = events([lines[0], (t(18, 0, 30), "u07", "systemd-networkd[1187]: ib0: Gained carrier")])
    assert ev.select(PART_COLUMNS).rows() == [(MLX5_2, None, "1"), (None, None, "ib0")]
    assert verdict(attribute([job("1006", ["u07", "u08"])], ev)["1006"]) == ("infrastructure", "hardware", [1], 8.0)


def test_a_timed_out_job_hung_on_the_rail_still_down() -> None:
    # Rule 1a: TIMEOUT at 18:40 while mlx5_2 was still down (mlx5_5's ACTIVE is not its recovery).
    row = attribute([job("1006", ["u07", "u08"], state="TIMEOUT")], events(PROBE_LINES))["1006"]
    assert (row["attribution"], row["rule"], row["evidence_event_ids"]) == ("infrastructure", HUNG_RULE, [2])


@pytest.mark.parametrize(("clearing", "expected"), [
    # A reboot names no GPU: it clears both GPUs' Xid 79 -> no open fault at 18:40 -> the user's exit code.
    (BOOT, ("user", "user_application", [], 0.0)),
    # A clearing line naming GPU A (hand-typed: a driver reload a site logs per GPU) clears A's fault only;
    # B's Xid 79 (17:55) is still open at 18:40 (45 min < 60-min lookback) -> infrastructure, event 2 only,
    # single node: 8 GPUs x 0.5 h = 4.0 GPU-h.
    (DRIVER, ("infrastructure", "hardware", [2], 4.0)),
])
def test_a_gpu_clearing_clears_only_the_gpu_it_names(clearing: str, expected: tuple) -> None:
    lines = [(t(17, 50), "u10", XID79.format(GPU_A)), (t(17, 55), "u10", XID79.format(GPU_B)),
             (t(18, 0), "u10", clearing)]
    overrides = {3: {"gpu_pci": f"{GPU_A}.0", "device_pci": f"{GPU_A}.0"}} if clearing == DRIVER else None
    ev = events(lines, overrides=overrides)
    assert ev.select("gpu_pci").to_series().to_list()[:2] == [f"{GPU_A}.0", f"{GPU_B}.0"]
    assert verdict(attribute([job("2030", ["u10"])], ev)["2030"]) == expected


# --- repair times ------------------------------------------------------------------------------------------


def probe_evidence(*, parts: bool = True) -> pl.DataFrame:
    """``recovery_ends`` evidence of the probe's incident: one row per node and part (the last evidence of each
    rail), or per node only (``parts=False``, the rail columns absent)."""
    rows = pl.DataFrame({"incident_id": ["w", "w"], "component_class": ["network", "network"], "node": ["u07", "u07"],
                         "last_ts": [t(17, 59, 50), t(18)], "device_pci": [MLX5_5, MLX5_2], "port": ["1", "1"]},
                        schema_overrides={"last_ts": DT})
    if parts:
        return rows
    return rows.group_by("incident_id", "component_class", "node").agg(pl.col("last_ts").max())


def test_a_rails_incident_is_repaired_when_its_last_rail_is_back() -> None:
    ev = events(PROBE_LINES)
    # mlx5_5's last DOWN 17:59:50 -> its ACTIVE 18:00:30; mlx5_2's DOWN 18:00 -> its ACTIVE 22:00: the node is
    # back at 22:00 (not at mlx5_5's 18:00:30).
    assert recovery_ends(probe_evidence(), ev).rows() == [("w", t(22), "recovery_events")]
    incidents = pl.DataFrame({"incident_id": ["w"], "component": ["network"], "start_ts": [t(17, 59, 50)],
                              "first_evidence_ts": [t(17, 59, 50)], "nodes": [["u07"]]},
                             schema_overrides={"start_ts": DT, "first_evidence_ts": DT})
    states = pl.DataFrame(schema={"node": pl.String, "start_ts": DT, "end_ts": DT, "reason": pl.String,
                                  "reason_class": pl.String})
    row = link_incidents(incidents, states, recoveries=recovery_ends(probe_evidence(), ev)).row(0, named=True)
    # 17:59:50 -> 22:00:00 = 4 h 0 min 10 s = 4 + 10/3600 h.
    assert (row["repair_state"], row["repair_source"], row["repaired_ts"]) == ("repaired", "recovery_events", t(22))
    assert row["hours_to_repair"] == pytest.approx(4 + 10 / 3600)
    # mlx5_2 never came back: the incident has no repair from recovery lines.
    assert recovery_ends(probe_evidence(), ev.filter(pl.col("event_id") != 4)).is_empty()


def test_repair_without_part_columns_keeps_node_and_class() -> None:
    # Evidence per node only (no rail columns): the node's first recovery of the class after its last evidence
    # (18:00:00) is mlx5_5's 18:00:30 — today's behaviour for sites whose lines carry no part.
    assert recovery_ends(probe_evidence(parts=False), events(PROBE_LINES)).rows() == [
        ("w", t(18, 0, 30), "recovery_events")]


def test_repair_of_a_lasting_gpu_fault_by_the_gpu_it_names() -> None:
    # An Xid 79 (RESTART_BM) on GPUs A (last 17:50) and B (17:55) of u10. A clearing line naming GPU A at 18:00
    # (hand-typed) repairs A only: B is still off the bus -> no repair. A reboot (naming no GPU) at 19:00
    # repairs both -> 19:00, repair_source reboot.
    evidence = pl.DataFrame({"incident_id": ["g", "g"], "component_class": ["gpu", "gpu"], "node": ["u10", "u10"],
                             "last_ts": [t(17, 50), t(17, 55)], "action": ["RESTART_BM", "RESTART_BM"],
                             "gpu_pci": [f"{GPU_A}.0", f"{GPU_B}.0"]}, schema_overrides={"last_ts": DT})
    named = events([(t(18), "u10", DRIVER)], overrides={1: {"gpu_pci": f"{GPU_A}.0"}})
    assert recovery_ends(evidence, named).is_empty()
    rebooted = pl.concat([named, events([(t(19), "u10", BOOT)]).with_columns(pl.lit(2, pl.Int64).alias("event_id"))],
                         how="diagonal_relaxed")
    assert recovery_ends(evidence, rebooted).rows() == [("g", t(19), "reboot")]


def test_join_asof_same_part_compares_the_columns_both_carry() -> None:
    # Faults (left): f1 NIC 40 port 1; f2 no part; f3 interface ibp1 (no PCI). Recoveries (right, after 01:00):
    # r1 01:10 NIC 9a port 1 (another NIC); r2 01:20 port 1 of NIC 40; r3 01:30 no part; r4 01:05 ibp2.
    # f1 -> r2 01:20 (r1 another device; r4 an interface nothing placed: no recovery of an addressed NIC —
    # was r4). f2 -> r4 01:05 (no part: anything). f3 -> r3 01:30 (r1 and r2 are NICs identified by address,
    # f3 is not — was r1; r4 names another interface; r3 names no part).
    left = pl.DataFrame({"node": ["n"] * 3, "at": [t(1)] * 3, "device_pci": [MLX5_2, None, None],
                         "gpu_pci": [None] * 3, "port": ["1", None, "ibp1"]},
                        schema_overrides={"at": DT, "gpu_pci": pl.String})
    right = pl.DataFrame({"node": ["n"] * 4, "up": [t(1, 10), t(1, 20), t(1, 30), t(1, 5)],
                          "device_pci": [MLX5_5, MLX5_2, None, None], "gpu_pci": [None] * 4,
                          "port": ["1", "1", None, "ibp2"]}, schema_overrides={"up": DT, "gpu_pci": pl.String})
    got = join_asof_same_part(left, right, left_on="at", right_on="up", by=["node"], strategy="forward")
    assert got["up"].to_list() == [t(1, 20), t(1, 5), t(1, 30)]
    # Without r4: f1 -> r2 01:20 (r1 names another NIC), f2 -> r1 01:10, f3 -> r3 01:30.
    got = join_asof_same_part(left, right.head(3), left_on="at", right_on="up", by=["node"], strategy="forward")
    assert got["up"].to_list() == [t(1, 20), t(1, 10), t(1, 30)]
