"""Link flaps: one flapping port is one incident, and a job that dies just after its port came back died of it.

Built from raw log lines (classified by the catalog as the ingest does): the texts of an outside
evaluator's probe (gpu13's IB port mlx5_0 and its NHC check_hw_ib failure; gpu07's 20-s RoCE flap)
and other shapes of the same fault (systemd-networkd carrier lines of an IPoIB interface). Expected
incidents, windows and lost GPU-hours are worked out by hand in the comments.

Lost work: every job here ran 1 h 01 min (3660 s ≥ Δ = 3600 s), so it lost Δ/2 = 0.5 h per GPU:
8 GPUs × 0.5 h = 4.0 GPU-h when the infrastructure killed it.
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from gpusre.models.failures.attribution import GRACE_CLASSES, RECOVERY_GRACE, attribute_failures
from gpusre.models.failures.hw_incidents import merge_incidents
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
M = timedelta(minutes=1)

# (down line, up line, the node's health-check line for that port), as logged.
IB = ("mlx5_core 0000:8b:00.0 mlx5_0: Port: 1 Link DOWN", "mlx5_core 0000:8b:00.0 mlx5_0: Port: 1 Link ACTIVE",
      "Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec).")
ROCE = ("mlx5_core 0000:8b:00.0 ens8np0: Link down", "mlx5_core 0000:8b:00.0 ens8np0: Link up",
        "Health check failed:  check_hw_eth:  Could not find Ethernet device ens8np0.")
NETWORKD_IB = ("systemd-networkd[1187]: ibp59s0: Lost carrier", "systemd-networkd[1187]: ibp59s0: Gained carrier",
               "Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE (LinkUp 400 Gb/sec).")
FAMILIES = pytest.mark.parametrize("texts", [IB, ROCE, NETWORKD_IB], ids=["ib", "roce", "networkd_ib"])


def gpu13_flaps(texts: tuple[str, str, str], node: str = "gpu13") -> list[tuple[timedelta, str, str]]:
    """The probe's gpu13 evening, from T0 (18:00): down 0 / check fails 0:31 / up 0:40; down 30:00 /
    up 31:00; down 70:00 / up 70:30."""
    down, up, check = texts
    return [(0 * S, node, down), (31 * S, node, check), (40 * S, node, up),
            (30 * M, node, down), (31 * M, node, up),
            (70 * M, node, down), (70 * M + 30 * S, node, up)]


@FAMILIES
def test_a_port_that_flaps_three_times_with_its_check_failing_is_one_incident(texts: tuple[str, str, str]) -> None:
    # The first two downs (0 and 30:00, gap 30 min <= the 30-min window) and the check at 0:31 are one
    # block; the down at 70:00 is 39 min later, but the port came back by itself at 31:00 and failed again
    # within a day with no repair: one flapping fault of 4 failure events (3 downs + 1 check), 0 - 70 min.
    # (The check inside the first block once kept it out of the flap chain: two incidents.)
    incidents, members = merge_incidents(events_from_lines(gpu13_flaps(texts)))
    assert incidents.select("component", "nodes", "n_events", "n_health_check_episodes").rows() == [
        ("network", ["gpu13"], 4, 1)]
    assert incidents.select("start_ts", "end_ts").row(0) == (T0, T0 + 70 * M)
    assert members.height == 4


@FAMILIES
def test_without_the_up_lines_the_window_decides(texts: tuple[str, str, str]) -> None:
    # Nothing says the port came back: downs at 0 and 30:00 (with the check) are one fault, the down at
    # 70:00, 40 min after, another.
    down, up, _ = texts
    lines = [x for x in gpu13_flaps(texts) if x[2] != up]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.select("start_ts", "n_events").rows() == [(T0, 3), (T0 + 70 * M, 1)]


def test_a_repair_between_the_flaps_splits_them() -> None:
    # The node drained at 40:00 and returned at 60:00 (an operator reseated the cable): the flap at 70:00
    # is a new fault.
    outages = pl.DataFrame({"node": ["gpu13"], "outage_start_ts": [T0 + 40 * M], "outage_end_ts": [T0 + 60 * M]},
                           schema={"node": pl.String, "outage_start_ts": pl.Datetime("us", "UTC"),
                                   "outage_end_ts": pl.Datetime("us", "UTC")})
    incidents, _ = merge_incidents(events_from_lines(gpu13_flaps(IB)), outages=outages)
    assert incidents.select("start_ts", "n_events").rows() == [(T0, 3), (T0 + 70 * M, 1)]


def test_a_health_check_alone_does_not_chain_flaps() -> None:
    # Down/up at 0 (with its check); 3 h later only the check fails (twice, 5 min apart: a fault on its
    # own). Health checks take no part in the flap chain: two incidents.
    down, up, check = IB
    lines = [(0 * S, "gpu13", down), (31 * S, "gpu13", check), (40 * S, "gpu13", up),
             (180 * M, "gpu13", check), (185 * M, "gpu13", check)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.select("start_ts", "n_events").rows() == [(T0, 2), (T0 + 180 * M, 2)]


def _jobs(rows: list[tuple[str, str, timedelta]]) -> pl.DataFrame:
    """FAILED 1:0 jobs (job id, node, end offset from T0), 8 GPUs, 1 h 01 min each."""
    elapsed = 61 * M
    return pl.DataFrame(
        {"job_id": [r[0] for r in rows], "state": ["FAILED"] * len(rows), "nodes": [[r[1]] for r in rows],
         "n_gpus": [8] * len(rows), "start_ts": [T0 + r[2] - elapsed for r in rows],
         "end_ts": [T0 + r[2] for r in rows], "elapsed_s": [int(elapsed.total_seconds())] * len(rows),
         "exit_code": [1] * len(rows), "exit_signal": [0] * len(rows)},
        schema={"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
                "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
                "exit_code": pl.Int64, "exit_signal": pl.Int64})


def _attribute(lines: list[tuple[timedelta, str, str]], jobs: list[tuple[str, str, timedelta]]) -> dict[str, dict]:
    events = events_from_lines(lines)
    incidents, _ = merge_incidents(events)
    out = attribute_failures(_jobs(jobs), events, incidents)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}


@FAMILIES
def test_a_job_that_ends_just_after_its_port_came_back_died_of_the_flap(texts: tuple[str, str, str]) -> None:
    # gpu13's job 1004: the port came back at 0:40 and the job ended at 1:00, 20 s later — well inside
    # the 5-min grace: infrastructure, network, 8 × 0.5 = 4.0 GPU-h (it was the user's: the recovery
    # before the end cleared the flap).
    got = _attribute(gpu13_flaps(texts), [("1004", "gpu13", 1 * M)])["1004"]
    assert (got["attribution"], got["component"], got["lost_gpu_hours"]) == ("infrastructure", "network", 4.0)
    assert got["incident_id"] is not None


def test_a_twenty_second_roce_flap_kills_the_job_ending_a_minute_after_it() -> None:
    # Round 2's gpu07: ens8np0 down 08:00:00, up 08:00:20, job 2007 ended 08:01:00 (40 s after).
    down, up, _ = ROCE
    got = _attribute([(0 * S, "gpu07", down), (20 * S, "gpu07", up)], [("2007", "gpu07", 1 * M)])["2007"]
    assert (got["attribution"], got["component"], got["lost_gpu_hours"]) == ("infrastructure", "network", 4.0)


def test_the_recovery_clears_the_flap_only_after_the_grace() -> None:
    # Port down at -7 min (inside the 10-min window), back at -5 min: the job ran RECOVERY_GRACE (5 min)
    # after it — it survived the flap: its own exit code blames the user, 0 GPU-h. Back at -4 min 59 s:
    # one second short of the grace, the flap's.
    assert RECOVERY_GRACE == 5 * M and GRACE_CLASSES == ("network",)
    down, up, _ = IB
    end = 60 * M
    got = _attribute([(end - 7 * M, "n1", down), (end - 5 * M, "n1", up),
                      (end - 7 * M, "n2", down), (end - 5 * M + S, "n2", up)],
                     [("survived", "n1", end), ("killed", "n2", end)])
    assert (got["survived"]["attribution"], got["survived"]["rule"], got["survived"]["lost_gpu_hours"]) == (
        "user", "non-zero exit without infrastructure evidence", 0.0)
    assert (got["killed"]["attribution"], got["killed"]["component"], got["killed"]["lost_gpu_hours"]) == (
        "infrastructure", "network", 4.0)


def test_a_job_that_ran_on_long_after_a_flap_of_the_flapping_port_is_not_its_victim() -> None:
    # The flapping-port incident spans 0 - 70 min. A job ending at 60:00 meets it (its window 50:00 -
    # 65:00 lies inside the span), but the port had been back since 31:00, 29 min before the end, with
    # nothing logged since: the user's. A job ending at 71:00, 30 s after the port came back at 70:30,
    # and one ending at 70:20, while it was down: the flap's.
    got = _attribute(gpu13_flaps(IB), [("ran_on", "gpu13", 60 * M), ("after_up", "gpu13", 71 * M),
                                        ("while_down", "gpu13", 70 * M + 20 * S)])
    assert (got["ran_on"]["attribution"], got["ran_on"]["incident_id"]) == ("user", None)
    for job_id in ("after_up", "while_down"):
        assert (got[job_id]["attribution"], got[job_id]["component"], got[job_id]["lost_gpu_hours"]) == (
            "infrastructure", "network", 4.0), job_id


def test_a_storage_reconnect_clears_its_fault_at_once() -> None:
    # A Lustre client loses its server at -3 min and reconnects at -1 min (GRACE_CLASSES is network only):
    # the client replayed its blocked I/O, so the job failing at the end crashed on its own — the user's.
    # Without the reconnect: the storage fault's, 8 × 0.5 = 4.0 GPU-h.
    lustre = "LustreError: 11-0: fs-OST0000-osc-X: operation ost_read to node 10.0.1.5@tcp failed: rc = -107"
    restored = "Lustre: lustre1-OST0000-osc-ffff8f2a: Connection restored to 10.0.1.5@tcp (at 10.0.1.5@tcp)"
    end = 60 * M
    got = _attribute([(end - 3 * M, "n1", lustre), (end - 1 * M, "n1", restored), (end - 3 * M, "n2", lustre)],
                     [("reconnected", "n1", end), ("lost", "n2", end)])
    assert (got["reconnected"]["attribution"], got["reconnected"]["lost_gpu_hours"]) == ("user", 0.0)
    assert (got["lost"]["attribution"], got["lost"]["component"], got["lost"]["lost_gpu_hours"]) == (
        "infrastructure", "storage", 4.0)


def test_a_job_that_hangs_on_a_port_still_down_died_of_it() -> None:
    # An outside evaluator's leaf-switch outage: gpu01-03 (leaf01) log Link DOWN at T0 + 0..2 s and Link
    # ACTIVE at 12 min. Job "hung" on gpu01 ended at 11 min 30 s — NCCL's watchdog gave up ~10 min into the
    # outage, so the DOWN line lies 11.5 min before the end, outside the 10-min window, but the port
    # never came back before the end: the outage's, and the leaf incident's. 8 GPUs × 0.5 h = 4.0 GPU-h.
    # Not the outage's: "recovered" on gpu02, whose port came back at 3 min (ACTIVE 8.5 min before its
    # 11:30 end, past the 5-min grace; gpu02 logged its own early ACTIVE); "late" on gpu03, ending
    # 61 min after the DOWN (beyond OPEN_FAULT_LOOKBACK, 60 min; its port came back at 12 min
    # anyway); "started_after" on gpu01, which started at 2 min, after the DOWN, and ended at 11:30
    # (a node the scheduler gave a job while its port was down: the job's own exit code decides).
    from gpusre.models.failures.attribution import OPEN_FAULT_LOOKBACK
    assert OPEN_FAULT_LOOKBACK == 60 * M
    down, up, _ = IB
    lines = [(0 * S, "gpu01", down), (1 * S, "gpu02", down), (2 * S, "gpu03", down),
             (3 * M, "gpu02", up), (12 * M, "gpu01", up), (12 * M + S, "gpu03", up)]
    events = events_from_lines(lines)
    incidents, _ = merge_incidents(events, topology={"leaf01": "gpu[01-08]"})
    leaf = incidents.filter(pl.col("scope") == "leaf_switch")
    assert leaf.height == 1
    jobs = _jobs([("hung", "gpu01", 11 * M + 30 * S), ("recovered", "gpu02", 11 * M + 30 * S),
                  ("late", "gpu03", 61 * M + 2 * S), ("started_after", "gpu01", 11 * M + 30 * S)])
    jobs = jobs.with_columns(pl.when(pl.col("job_id") == "started_after").then(pl.lit(T0 + 2 * M))
                             .otherwise(pl.col("start_ts")).alias("start_ts"))
    got = {r["job_id"]: r for r in attribute_failures(jobs, events, incidents).iter_rows(named=True)}
    hung = got["hung"]
    assert (hung["attribution"], hung["component"], hung["lost_gpu_hours"]) == ("infrastructure", "network_switch", 4.0)
    assert hung["incident_id"] == leaf.item(0, "incident_id")
    for job_id in ("recovered", "late", "started_after"):
        assert (got[job_id]["attribution"], got[job_id]["incident_id"]) == ("user", None), job_id
