"""Health-check quality and missed detections on a hand-built case."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import count

import polars as pl

from gpusre.models.failures.health_checks import health_check_quality, missed_detections

T = datetime(2026, 4, 1, 12, tzinfo=timezone.utc)
M = timedelta(minutes=1)
TS = pl.Datetime("us", "UTC")
_IDS = count(100)


#: core.node_events_once columns the health-check marts read (missed detections test failure_events' columns).
EVENTS = {"event_id": pl.Int64, "node": pl.String, "ts": TS, "kind": pl.String, "code": pl.Int32, "gpu_pci": pl.String,
          "component": pl.String, "cause_class": pl.String, "severity": pl.String, "action": pl.String,
          "message": pl.String}


def nhc(node: str, minutes: float, check: str, component: str = "gpu_memory", severity: str = "high") -> dict:
    return {"event_id": next(_IDS), "node": node, "ts": T + minutes * M, "kind": "health_check",
            "code": None, "gpu_pci": None, "component": component, "cause_class": "hardware", "severity": severity,
            "action": "DRAIN_NODE", "message": f"nhc[1]: ERROR:  nhc:  Health check failed:  {check}:  something broke"}


def test_firings_precision_and_misses() -> None:
    events = pl.DataFrame([
        # check_nv_healthmon on n1: three runs 5 min apart = one firing; a job on n1 fails 2 min later
        nhc("n1", 0, "check_nv_healthmon"), nhc("n1", 5, "check_nv_healthmon"), nhc("n1", 10, "check_nv_healthmon"),
        # the same check on n2 two hours later, no job fails there: a firing without a failure
        nhc("n2", 120, "check_nv_healthmon"),
        # a second firing on n1 much later (a new episode), nothing fails
        nhc("n1", 300, "check_nv_healthmon"),
        # a process check that fires on n3 and never precedes a failure
        nhc("n3", 0, "check_ps_service", "os"), nhc("n3", 60, "check_ps_service", "os"),
        # not a health check
        {"event_id": 1, "node": "n4", "ts": T, "kind": "xid", "code": 79, "gpu_pci": None, "component": "pcie_bus",
         "cause_class": "hardware", "severity": "critical", "action": "RESET_GPU", "message": "NVRM: Xid 79"},
    ], schema=EVENTS)
    jobs = pl.DataFrame({
        "job_id": ["a", "b", "c"], "state": ["FAILED", "NODE_FAIL", "COMPLETED"],
        "end_ts": [T + 2 * M, T + 30 * M, T + 130 * M], "nodes": [["n1"], ["n4"], ["n2"]],
        "n_gpus": [8, 8, 8],
    }, schema={"job_id": pl.String, "state": pl.String, "end_ts": TS, "nodes": pl.List(pl.String), "n_gpus": pl.Int64})
    q = {r["check_name"]: r for r in health_check_quality(events, jobs).iter_rows(named=True)}
    nv = q["check_nv_healthmon"]
    assert (nv["firings"], nv["events"], nv["nodes"], nv["preceded_job_failure"]) == (3, 5, 2, 1)
    assert abs(nv["precision"] - 1 / 3) < 1e-12
    ps = q["check_ps_service"]
    # 60 min apart > 30 min episode gap: two firings, none before a failure
    assert (ps["firings"], ps["preceded_job_failure"], ps["precision"], ps["component"]) == (2, 0, 0.0, "os")
    attribution = pl.DataFrame({"job_id": ["a", "b"], "state": ["FAILED", "NODE_FAIL"],
                                "end_ts": [T + 2 * M, T + 30 * M], "n_gpus": [8, 8],
                                "attribution": ["infrastructure", "infrastructure"],
                                "component": ["gpu_memory", "unknown (suspected)"],
                                "rule": ["failure event in window", "node failure without evidence"]},
                               schema_overrides={"end_ts": TS})
    misses = missed_detections(attribution, jobs, events)
    # job a's node had a check firing 2 min before its end; job b's node n4 never ran a failing check
    assert misses.get_column("job_id").to_list() == ["b"]
    assert misses.item(0, "nodes").to_list() == ["n4"]


def test_no_health_checks_gives_empty_frames() -> None:
    events = pl.DataFrame(schema={"node": pl.String, "ts": TS, "kind": pl.String, "component": pl.String,
                                  "message": pl.String})
    jobs = pl.DataFrame(schema={"job_id": pl.String, "state": pl.String, "end_ts": TS,
                                "nodes": pl.List(pl.String), "n_gpus": pl.Int64})
    assert health_check_quality(events, jobs).height == 0
    assert "precision" in health_check_quality(events, jobs).columns


def test_killed_states_setting_decides_what_counts_as_a_failure() -> None:
    """A TIMEOUT on the node 3 min after the firing: not a failure by default (killed_states FAILED, NODE_FAIL);
    a site whose cluster.yaml adds TIMEOUT gets it counted, as the alert incidents do."""
    events = pl.DataFrame([nhc("n1", 0, "check_gpu")], schema=EVENTS)
    jobs = pl.DataFrame({"state": ["TIMEOUT"], "end_ts": [T + 3 * M], "nodes": [["n1"]]},
                        schema={"state": pl.String, "end_ts": TS, "nodes": pl.List(pl.String)})
    assert health_check_quality(events, jobs)["preceded_job_failure"].to_list() == [0]
    with_timeout = health_check_quality(events, jobs, killed_states=("FAILED", "NODE_FAIL", "TIMEOUT"))
    assert with_timeout["preceded_job_failure"].to_list() == [1]
