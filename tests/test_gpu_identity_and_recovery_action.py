"""A GPU is its node and PCI address, and Xid 154's recovery action reaches its GPU's incident
(gpusre.models.failures.hw_incidents: ``gpu_id``, rule 4r; the retrospective and the nightly read them).

Every GB200 compute tray puts its GPUs at the same PCI addresses (``0009:01:00.0`` on each tray), and every
HGX node of one model does too (``0000:18:00.0``): an address alone names no GPU, so four trays' Xid on
``0009:01:00`` are four faulty GPUs, not one. NVIDIA's Xid 154 ("GPU recovery action changed from 0x0 (None) to
0x2 (Node Reboot Required)", NVML ``nvmlDeviceGpuRecoveryAction_t``) is the driver telling the operator which
recovery the GPU needs now: the incident of that GPU takes the strongest of its evidence's catalog action and
its 154 lines' (``ACTION_STRENGTH``), and the 154 line is one of its members. Expected values are worked out by
hand from those rules (incident window 30 min).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.failures.hw_incidents import (ACTION_STRENGTH, OPERATOR_SCHEMA, gpu_id_label, merge_incidents,
                                                  split_gpu_id)
from gpusre.models.warehouse import connect
from gpusre.reports.incident.report import build_incident_context
from gpusre.reports.nightly import build_nightly_context
from hand_landing import query_rows, run_hand_landing
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
M = timedelta(minutes=1)
# The probe's lines (a GB200 NVL72 rack and a B200 node, R570+ driver text).
XID149 = ("NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 0{link} "
          "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
DRAIN_RESET = "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"
XID119 = ("NVRM: Xid (PCI:0000:43:00): 119, pid=91822, name=python3, Timeout after 6s of waiting for RPC response "
          "from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x2080014b 0x5).")
REBOOT = "NVRM: Xid (PCI:0000:43:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
# Another spelling: an 8-digit PCI domain with the function, as some drivers and dmesg relays print it.
REBOOT_LONG = ("NVRM: Xid (PCI:00000000:43:00.0): 154, GPU recovery action changed from 0x1 (GPU Reset Required) "
               "to 0x2 (Node Reboot Required)")
GPU_RESET = "NVRM: Xid (PCI:0000:43:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
DRAIN_P2P = "NVRM: Xid (PCI:0000:43:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)"
NONE = "NVRM: Xid (PCI:0000:43:00): 154, GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)"
XID79 = "NVRM: Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
TRAYS = [f"nvl-a-t{i:02d}" for i in range(3, 7)]
DOMAINS = {"a": "nvl-a-t[01-08]"}


# -- F1: a GPU is (node, PCI address) ------------------------------------------------------------------


def test_gpu_identity_is_node_and_address() -> None:
    assert split_gpu_id("gb-r1-c03:0009:01:00.0") == ("gb-r1-c03", "0009:01:00.0")
    assert split_gpu_id("0000:43:00.0") == (None, "0000:43:00.0")  # a line that named no host
    assert gpu_id_label("dgx-07:0000:18:00.0") == "dgx-07 0000:18:00.0"


def test_four_trays_at_one_address_are_four_gpus() -> None:
    # The probe's NVL72 incident: Xid 149 on trays t03..t06 at 0, 15, 30, 45 s (>= 3 hosts of one domain within
    # 60 s: one rack incident), each on its 0009:01:00 GPU, each followed 1 s later by its Xid 154 (Drain and
    # Reset). 4 GPUs, one per tray; 4 Xid 149 + 4 Xid 154 = 8 member events.
    lines = []
    for k, tray in enumerate(TRAYS):
        lines += [(15 * k * S, tray, XID149.format(link=k + 1)), (15 * k * S + S, tray, DRAIN_RESET)]
    incidents, members = merge_incidents(events_from_lines(lines), nvlink_domains=DOMAINS)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["scope"], row["nodes"]) == ("rack", TRAYS)
    assert row["gpus"] == [f"{t}:0009:01:00.0" for t in TRAYS]
    assert row["n_events"] == 8 and members.height == 8
    # The catalog's NVLink5 workflow (Xid 149) ranks above the 154's GPU reset: the incident keeps it.
    assert ACTION_STRENGTH.index("WORKFLOW_NVLINK5_ERR") > ACTION_STRENGTH.index("RESET_GPU")
    assert row["action"] == "WORKFLOW_NVLINK5_ERR"


def _operator(nodes: str) -> pl.DataFrame:
    return pl.DataFrame({"id": ["OPS-7"], "start": [T0 - M], "end": [T0 + 20 * M], "component": ["network_switch"],
                         "root_cause": ["leaf01 lost power"], "nodes": [nodes], "notes": [None]},
                        schema=OPERATOR_SCHEMA)


def test_two_hgx_nodes_at_one_address_in_one_incident_are_two_gpus() -> None:
    # HGX (8 GPUs a node, same addresses on every node): Xid 79 on 0000:18:00 on dgx-01 and dgx-02 a minute
    # apart, both folded into the operator's leaf-switch incident OPS-7 (dgx-[01-02]): 2 GPUs, not 1.
    lines = [(0 * S, "dgx-01", XID79.format(bus="18")), (1 * M, "dgx-02", XID79.format(bus="18"))]
    incidents, _ = merge_incidents(events_from_lines(lines), operator=_operator("dgx-[01-02]"))
    assert incidents.height == 1
    assert incidents["gpus"].to_list() == [["dgx-01:0000:18:00.0", "dgx-02:0000:18:00.0"]]


def test_one_node_with_two_failed_gpus_is_two_gpus() -> None:
    lines = [(0 * S, "dgx-01", XID79.format(bus="18")), (30 * S, "dgx-01", XID79.format(bus="3b"))]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents["gpus"].to_list() == [["dgx-01:0000:18:00.0", "dgx-01:0000:3b:00.0"]]


# -- F2: Xid 154's recovery action -------------------------------------------------------------------------


def _one(lines: list[tuple[timedelta, str, str]]) -> dict:
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.height == 1
    return incidents.row(0, named=True)


@pytest.mark.parametrize("reboot", [REBOOT, REBOOT_LONG])
def test_node_reboot_required_makes_the_gsp_incident_a_reboot(reboot: str) -> None:
    # The probe's b200-10: Xid 119 (catalog RESET_GPU) then 10 s later 154 -> Node Reboot Required (RESTART_BM,
    # stronger): action RESTART_BM, 2 events, the incident ends at the 154 line; cause stays the 119.
    row = _one([(0 * S, "b200-10", XID119), (10 * S, "b200-10", reboot)])
    assert (row["action"], row["n_events"], row["root_cause"], row["component"]) == (
        "RESTART_BM", 2, "xid 119", "gsp_firmware")
    assert row["end_ts"] - row["start_ts"] == 10 * S
    assert row["gpus"] == ["b200-10:0000:43:00.0"]


@pytest.mark.parametrize(("value", "name", "action"), [
    ("0x5", "Recover IMEX Domain", "RESTART_FM"),       # NVML RECOVER_IMEX_DOMAIN: restart nvidia-imex
    ("0x6", "Bus Reset Required", "RESET_GPU"),         # NVML BUS_RESET: the GPU's PCIe bus, equal to the 119's
    ("0x7", "System Reboot Required", "RESTART_BM"),    # NVML SYSTEM_REBOOT
    ("0x7", "Some Future Name", "RESTART_BM"),          # the value decides, whatever name a driver prints
])
def test_the_newer_recovery_values_are_read_by_their_value(value: str, name: str, action: str) -> None:
    # R610+ drivers add NVML recovery actions 5-7; before, such a 154 fell to the generic Xid row (no action)
    line = f"NVRM: Xid (PCI:0000:43:00): 154, GPU recovery action changed from 0x0 (None) to {value} ({name})"
    row = _one([(0 * S, "b200-10", XID119), (10 * S, "b200-10", line)])
    assert (row["action"], row["n_events"], row["root_cause"]) == (action, 2, "xid 119")


def test_a_weaker_or_no_recovery_action_leaves_the_evidence_action() -> None:
    # Drain P2P (RESTART_APP) is weaker than the 119's RESET_GPU: action stays, the line is still a member (2).
    assert (lambda r: (r["action"], r["n_events"]))(_one([(0 * S, "n1", XID119), (5 * S, "n1", DRAIN_P2P)])) == (
        "RESET_GPU", 2)
    # GPU Reset Required after an Xid 79 (RESTART_BM): a reboot already resets the GPU.
    assert _one([(0 * S, "n1", XID79.format(bus="43")), (5 * S, "n1", GPU_RESET)])["action"] == "RESTART_BM"
    # "to 0x0 (None)": the GPU needs nothing any more: not advice, not a member (1 event).
    assert (lambda r: (r["action"], r["n_events"]))(_one([(0 * S, "n1", XID119), (5 * S, "n1", NONE)])) == (
        "RESET_GPU", 1)


def test_the_154_must_name_the_incidents_gpu_on_its_node_within_the_window() -> None:
    other_gpu = REBOOT.replace("0000:43:00", "0000:9d:00")
    # Another GPU of the node, the same GPU address on another node, or 31 min after the last evidence
    # (window 30 min): none joins; each incident keeps RESET_GPU and 1 event.
    for extra in [(10 * S, "n1", other_gpu), (10 * S, "n2", REBOOT), (31 * M, "n1", REBOOT)]:
        incidents, members = merge_incidents(events_from_lines([(0 * S, "n1", XID119), extra]))
        assert incidents.select("action", "n_events").rows() == [("RESET_GPU", 1)]
        assert members.height == 1
    # 30 min after it (inclusive): joins.
    assert _one([(0 * S, "n1", XID119), (30 * M, "n1", REBOOT)])["action"] == "RESTART_BM"


def test_a_lone_recovery_action_is_no_incident() -> None:
    # Xid 154 is sympathetic (README: never a failure): a Node Reboot Required with no failure evidence on its
    # GPU makes no incident.
    incidents, _ = merge_incidents(events_from_lines([(0 * S, "n1", REBOOT)]))
    assert incidents.height == 0


# -- through the pipeline: the marts, the retrospective and the nightly -----------------------------------------

_CLUSTER = """cluster: bw
timezone: UTC
nodes: "nvl-a-t[01-08]"
gpus_per_node: 4
gpu_type: gb200
nvlink_domains: {a: "nvl-a-t[01-08]"}
"""
_SACCT_HEAD = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
               "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def _job(job: int, state: str, start: str, end: str, elapsed: str, nodes: int, hosts: str) -> str:
    return (f"{job}|{job}|run{job}|alice|1001|alice|ml|gb200|normal|{state}|1:0|2026-12-01T{start}|2026-12-01T{start}|"
            f"2026-12-01T{start}|2026-12-01T{end}|{elapsed}|1-00:00:00|{nodes}|{72 * nodes}|"
            f"cpu={72 * nodes},gres/gpu={4 * nodes},node={nodes}|{hosts}|")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2026-12-01: 06:00:10-06:00:55 Xid 149 + 154 (Drain and Reset) on t03..t06 (one domain incident);
    14:59:50 Xid 119 on t08, 15:00:00 its 154 Node Reboot Required; job 9001 (t[03-06]) and 9002 (t08) FAILED."""
    syslog = ["Dec  1 00:00:00 nvl-a-t01 systemd[1]: Started Session 1 of user root."]
    for k, tray in enumerate(TRAYS):
        syslog += [f"Dec  1 06:00:{10 + 15 * k:02d} {tray} kernel: [100.{k:06d}] {XID149.format(link=k + 1)}",
                   f"Dec  1 06:00:{11 + 15 * k:02d} {tray} kernel: [100.{k:06d}] {DRAIN_RESET}"]
    syslog += [f"Dec  1 14:59:50 nvl-a-t08 kernel: [200.000000] {XID119}",
               f"Dec  1 15:00:00 nvl-a-t08 kernel: [200.000001] {REBOOT}",
               "Dec  1 23:59:59 nvl-a-t01 systemd[1]: Started Session 2 of user root."]
    sacct = "\n".join([_SACCT_HEAD,
                       _job(9001, "FAILED", "04:00:00", "06:01:00", "02:01:00", 4, "nvl-a-t[03-06]"),
                       _job(9002, "FAILED", "13:00:00", "15:00:30", "02:00:30", 1, "nvl-a-t08"),
                       _job(9003, "COMPLETED", "00:00:00", "23:59:00", "23:59:00", 2, "nvl-a-t[01-02]")]) + "\n"
    wh = run_hand_landing(tmp_path_factory.mktemp("bw"), {
        "cluster.yaml": _CLUSTER, "sacct/sacct_2026-12-01.psv": sacct,
        "syslog/2026-12-01/central.log": "\n".join(syslog) + "\n"})
    return wh.with_name("gpusre.snapshot.duckdb")


def test_the_marts_carry_gpu_identities_and_the_reboot(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT scope, gpus, action, n_events FROM marts.hw_incidents ORDER BY start_ts")
    assert rows == [("rack", [f"{t}:0009:01:00.0" for t in TRAYS], "WORKFLOW_NVLINK5_ERR", 8),
                    ("node", ["nvl-a-t08:0000:43:00.0"], "RESTART_BM", 2)]
    codes = query_rows(warehouse, "SELECT e.code FROM marts.hw_incident_members m JOIN core.node_events e "
                                  "USING (event_id) JOIN marts.hw_incidents i USING (incident_id) "
                                  "WHERE i.scope = 'node' ORDER BY e.ts")
    assert codes == [(119,), (154,)]


def _cells(ctx: dict, key: str) -> list[list[str]]:
    """The text of every table row of section ``key``."""
    return [[c.title or c.text for c in row] for item in ctx["by_key"][key].items if hasattr(item, "rows")
            for row in item.rows]


def _incident_ids(warehouse: Path) -> list[str]:
    return [r[0] for r in query_rows(warehouse, "SELECT incident_id FROM marts.hw_incidents ORDER BY start_ts")]


def test_the_retrospective_counts_four_gpus_and_shows_the_154(warehouse: Path) -> None:
    rack, gsp = _incident_ids(warehouse)
    con = connect(warehouse, read_only=True)
    try:
        blast = build_incident_context(con, rack)["by_key"]["blast-radius"].lead
        assert "4 nodes (nvl-a-t[03-06]), 4 faulty GPUs named by its evidence (nvl-a-t03 0009:01:00.0, " in blast
        ctx = build_incident_context(con, gsp)
    finally:
        con.close()
    evidence = {r[0]: r[1] for r in _cells(ctx, "root-cause") if len(r) == 2}
    assert evidence["Recommended action"] == "Reboot the node"
    assert evidence["Faulty GPUs (node PCI)"] == "nvl-a-t08 0000:43:00.0"
    assert "1 faulty GPU named by its evidence (nvl-a-t08 0000:43:00.0)" in ctx["by_key"]["blast-radius"].lead
    moments = " | ".join(" ".join(r) for r in _cells(ctx, "timeline"))
    assert "Xid 154 on nvl-a-t08" in moments and "the driver asks to reboot the node" in moments


def test_the_nightly_says_reboot_the_node(warehouse: Path) -> None:
    con = connect(warehouse, read_only=True)
    try:
        ctx = build_nightly_context(con, report_date=datetime(2026, 12, 1, tzinfo=timezone.utc).date())
    finally:
        con.close()
    todo = {e["term"]: e["text"] for e in ctx["by_key"]["last_night"].entries}["To do"]
    assert "Reboot the node (nvl-a-t08)" in todo and "Reset the GPU" not in todo
