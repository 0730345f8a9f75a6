"""Suspect (lemon) nodes (gpusre.models.failures.suspect_nodes) in small hand-made fleets.

Robust z = (x − median) / max(1.4826 · MAD, 1); medians and MADs below are computed by hand.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.failures.hw_incidents import EVENT_SCHEMA
from gpusre.models.failures.suspect_nodes import SUSPECT_SCHEMA, WATCH_ACTION, suspect_nodes

AS_OF = datetime(2025, 3, 29, tzinfo=timezone.utc)
H = timedelta(hours=1)

XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
XID94 = ("xid", 94, "gpu_memory", "hardware", "high", "RESTART_APP")
XID13 = ("xid", 13, "user_application", "user_application", "medium", "RESTART_APP")
FLEET = [f"n{i:02d}" for i in range(1, 11)]

JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String)}
ATTR_SCHEMA = {"job_id": pl.String, "attribution": pl.String}


def events(specs: list[tuple[str, timedelta, tuple]]) -> pl.DataFrame:
    """(node, time before AS_OF, catalog spec) -> events."""
    rows = []
    for i, (node, ago, (kind, code, component, cause, severity, action)) in enumerate(specs, start=1):
        rows.append({"event_id": i, "ts": AS_OF - ago, "node": node, "kind": kind, "code": code, "gpu_pci": None,
                     "component": component, "cause_class": cause, "severity": severity, "action": action})
    return pl.DataFrame(rows, schema=EVENT_SCHEMA)


NO_JOBS = pl.DataFrame(schema=JOB_SCHEMA)
NO_ATTR = pl.DataFrame(schema=ATTR_SCHEMA)


def test_lemon_flagged_among_quiet_nodes() -> None:
    # n01: Xid 79 in 5 different hours (days apart) plus an Xid 94; n02: one Xid 79; others quiet.
    specs = [("n01", timedelta(days=d), XID79) for d in (1, 3, 5, 7, 9)] + [("n01", timedelta(days=2), XID94)]
    specs.append(("n02", timedelta(days=4), XID79))
    out = suspect_nodes(events(specs), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n01"]
    row = out.row(0, named=True)
    # hw_episodes: 6 distinct hours; fleet median 0, MAD 0 -> scale 1 -> z = 6.
    assert (row["hw_events"], row["hw_episodes"], row["xid_events"], row["xid_episodes"]) == (6, 6, 6, 6)
    assert row["score"] == pytest.approx(6.0)
    assert row["reason"].startswith("hw_episodes 6 vs fleet median 0")
    # Worst event is the critical Xid 79 (RESTART_BM): a reboot, but 6 failure episodes >= RMA_EPISODES (3)
    # from 9 to 1 days ago say reboots do not hold -> RMA, 6 failures in 8 days.
    assert (row["worst_event"], row["action"]) == ("xid 79", "RESTART_BM")
    assert row["recommended_action"] == "drain, RMA (6 hardware failures in 8 days)"


def test_burst_in_one_hour_is_one_episode() -> None:
    burst = [("n01", timedelta(days=1, minutes=m), XID79) for m in range(10)]
    assert suspect_nodes(events(burst), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET).is_empty()


def test_user_xids_and_old_events_do_not_count() -> None:
    specs = [("n01", timedelta(days=d), XID13) for d in range(1, 8)]  # user Xids: not the node's fault
    specs += [("n02", timedelta(days=30 + d), XID79) for d in range(1, 8)]  # before the 28-day lookback
    assert suspect_nodes(events(specs), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET).is_empty()


def test_robust_threshold_with_spread_fleet() -> None:
    # Episodes per node: 0..8 and 30. Median 4.5; |x - 4.5| sorted: .5 .5 1.5 1.5 2.5 2.5 3.5 3.5 4.5 25.5
    # -> MAD 2.5, scale 1.4826 * 2.5 = 3.7065. n10 (30): z = 25.5 / 3.7065 = 6.8798; n09 (8): 0.944.
    counts = dict(zip(FLEET, [0, 1, 2, 3, 4, 5, 6, 7, 8, 30], strict=True))
    specs = [(n, timedelta(hours=2 * k + 1), XID94) for n, c in counts.items() for k in range(c)]
    out = suspect_nodes(events(specs), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n10"]
    assert out["score"][0] == pytest.approx(25.5 / (1.4826 * 2.5))
    # Xid 94 (RESTART_APP: reset the GPU) on 30 episodes 1..59 h ago: escalated, 59 h -> 3 days.
    assert out["recommended_action"][0] == "drain, RMA (30 hardware failures in 3 days)"


def test_flagged_on_infrastructure_failed_jobs() -> None:
    # n03 ran 4 infrastructure-failed jobs (one a NODE_FAIL) on 4 different days; n04 one user-failed job;
    # no events.
    ends = [AS_OF - timedelta(days=d) for d in (1, 3, 5, 7, 2, 2)]
    jobs = pl.DataFrame({"job_id": ["1", "2", "3", "4", "5", "6"],
                         "state": ["FAILED", "FAILED", "FAILED", "NODE_FAIL", "FAILED", "COMPLETED"],
                         "end_ts": ends, "nodes": [["n03"], ["n03"], ["n03", "n05"], ["n03"], ["n04"], ["n06"]]},
                        schema=JOB_SCHEMA)
    attribution = pl.DataFrame({"job_id": ["1", "2", "3", "4", "5", "6"],
                                "attribution": ["infrastructure"] * 4 + ["user", "none"]}, schema=ATTR_SCHEMA)
    out = suspect_nodes(events([]), attribution, jobs, as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n03"]
    row = out.row(0, named=True)
    # infra_failure_episodes: fleet [4, 1 (n05), 0 x 8] -> median 0, MAD 0 -> z = 4.
    assert (row["infra_failed_jobs"], row["infra_failure_episodes"], row["node_fail_jobs"],
            row["node_fail_episodes"], row["score"]) == (4, 4, 1, 1, 4.0)
    assert row["reason"] == "infra_failure_episodes 4 vs fleet median 0 (z 4.0)"
    assert row["recommended_action"] == "drain"  # no event to name a repair


def test_one_fault_killing_several_jobs_is_one_failure() -> None:
    """Six one-GPU jobs one fault killed within 20 min on n03, and a hung job of the same incident that
    hit its time limit 5 h later: 7 jobs, 1 failure episode -> not suspect (z 1 < 3). n07: three jobs
    killed on three days -> 3 episodes, z 3 -> suspect."""
    at = AS_OF - timedelta(days=2)
    burst = [(str(i), "NODE_FAIL" if i == 1 else "FAILED", at + timedelta(minutes=4 * i), ["n03"], "inc-1")
             for i in range(1, 7)]
    burst.append(("7", "TIMEOUT", at + 5 * H, ["n03"], "inc-1"))
    spread = [(str(10 + d), "FAILED", AS_OF - timedelta(days=d), ["n07"], None) for d in (1, 4, 9)]
    rows = burst + spread
    jobs = pl.DataFrame({"job_id": [r[0] for r in rows], "state": [r[1] for r in rows],
                         "end_ts": [r[2] for r in rows], "nodes": [r[3] for r in rows]}, schema=JOB_SCHEMA)
    attribution = pl.DataFrame({"job_id": [r[0] for r in rows], "attribution": ["infrastructure"] * len(rows),
                                "incident_id": [r[4] for r in rows],
                                "evidence_nodes": [r[3] for r in rows]})
    out = suspect_nodes(events([]), attribution, jobs, as_of=AS_OF, fleet=FLEET)
    assert out["node"].to_list() == ["n07"]
    assert out.select("infra_failed_jobs", "infra_failure_episodes", "score").row(0) == (3, 3, 3.0)
    # n03's counts, had it been scored alone against quiet nodes: 7 jobs, 1 episode, 1 NODE_FAIL.
    full = suspect_nodes(events([]), attribution, jobs, as_of=AS_OF, fleet=FLEET, z=0.5)
    n03 = full.filter(pl.col("node") == "n03").row(0, named=True)
    assert (n03["infra_failed_jobs"], n03["infra_failure_episodes"], n03["node_fail_jobs"],
            n03["node_fail_episodes"]) == (7, 1, 1, 1)


def test_empty_inputs() -> None:
    out = suspect_nodes(events([]), NO_ATTR, NO_JOBS, as_of=AS_OF)
    assert out.is_empty() and dict(out.schema) == SUSPECT_SCHEMA


NHC_GPU = ("health_check", None, "gpu", "hardware", "high", "RESTART_BM")


def test_a_check_failing_every_5_min_through_a_repair_is_one_episode() -> None:
    """NHC repeats its failing check every 5 min for 7 h while the node waits for a GPU swap: one
    episode (clock hours made it 7 and flagged a node with one fault as a lemon); bursts 3 h apart are
    separate episodes."""
    nhc = [("n01", timedelta(days=1, minutes=5 * k), NHC_GPU) for k in range(84)]
    out = suspect_nodes(events(nhc), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET)
    assert out.is_empty()
    bursts = [("n01", timedelta(days=1, hours=3 * b, minutes=m), XID79) for b in range(4) for m in (0, 5, 10)]
    row = suspect_nodes(events(bursts), NO_ATTR, NO_JOBS, as_of=AS_OF, fleet=FLEET).row(0, named=True)
    assert (row["hw_events"], row["hw_episodes"]) == (12, 4)


def test_a_repaired_node_is_watched_not_drained_again() -> None:
    """n01 failed on 5 days (a lemon), the last 20 days ago, and completed a job since: mean time between
    its failures 28 d / 5 = 5.6 d, quiet 20 d >= 3 x 5.6 = 16.8 d — the GPU was swapped and it works; the
    advice is to watch it. (Failures 2-9 days ago with a job completed yesterday once got "watch" too: a
    lemon recovers between failures, see tests/test_suspect_actions.py.)"""
    specs = [("n01", timedelta(days=d), XID79) for d in (20, 21, 23, 25, 27)]
    done = pl.DataFrame([{"job_id": "9", "state": "COMPLETED", "end_ts": AS_OF - timedelta(days=1), "nodes": ["n01"]}],
                        schema=JOB_SCHEMA)
    row = suspect_nodes(events(specs), NO_ATTR, done, as_of=AS_OF, fleet=FLEET).row(0, named=True)
    assert row["recommended_action"] == WATCH_ACTION
    # a job that completed before the last failure changes nothing (drained since, not shown working)
    early = done.with_columns(pl.lit(AS_OF - timedelta(days=20, hours=1)).cast(pl.Datetime("us", "UTC")).alias("end_ts"))
    row = suspect_nodes(events(specs), NO_ATTR, early, as_of=AS_OF, fleet=FLEET).row(0, named=True)
    assert row["recommended_action"] == "drain, RMA (5 hardware failures in 7 days)"  # days 27 .. 20 ago


def test_requeued_runs_count_and_a_job_killed_twice_counts_once() -> None:
    """Runs keyed <job>#<instance> (core.instances_outside_jobs) count: n01 killed 3 jobs by NODE_FAIL,
    one of them twice (its requeued first run and its final run)."""
    runs = [("1#1", "NODE_FAIL"), ("1", "NODE_FAIL"), ("2#1", "NODE_FAIL"), ("3#2", "NODE_FAIL")]
    jobs = pl.DataFrame([{"job_id": j, "state": s, "end_ts": AS_OF - timedelta(days=1 + i), "nodes": ["n01"]}
                         for i, (j, s) in enumerate(runs)], schema=JOB_SCHEMA)
    attr = pl.DataFrame([{"job_id": j, "attribution": "infrastructure"} for j, _ in runs], schema=ATTR_SCHEMA)
    row = suspect_nodes(events([]), attr, jobs, as_of=AS_OF, fleet=FLEET).row(0, named=True)
    assert (row["node"], row["infra_failed_jobs"], row["node_fail_jobs"]) == ("n01", 3, 3)
