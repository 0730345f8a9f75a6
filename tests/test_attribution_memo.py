"""Attribution kept between nights (models/failures/attribution_memo.py) gives exactly what attributing
every job gives.

Two nights over a few days of four nodes: the first sees the events and jobs before a cut, the second
everything — events after the cut, late events before it (a log file that arrived late), a few of the
first night's events gone (a file replaced), jobs whose record changed (requeued, then failed), het-job
siblings, planned maintenance, node outages and log coverage. Each night's attribution through the memo
must equal the full computation row for row, and the second night must have reused jobs (a memo that
never keeps anything would pass the first check trivially).
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from unittest import mock

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import gpusre.models.failures.attribution_memo as memo_module
from gpusre.models.failures.attribution import attribute_failures_with, prepare_evidence
from gpusre.models.failures.attribution_memo import (MEMO_SCHEMA, attribute_reusing, dirty_days, evidence_signature,
                                                     rules_fingerprint)
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, PLANNED_SCHEMA, merge_incidents

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
NODES = ["n1", "n2", "n3", "n4"]
DAYS = 6
#: (kind, code, component, cause_class, severity, action): lasting and one-off faults, a detection, the
#: user's own error, a recovery.
KINDS = [
    ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM"),
    ("xid", 74, "nvlink", "hardware", "high", "WORKFLOW_NVLINK_ERR"),
    ("xid", 94, "gpu_memory", "hardware", "high", "RESTART_APP"),
    ("health_check", None, "gpu", "hardware", "high", "RESET_GPU"),
    ("xid", 13, "user_application", "user_application", "medium", "RESTART_APP"),
    ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE"),
    ("lustre_recovered", None, "storage", "informational", "info", "IGNORE"),
]
STATES = ["FAILED", "NODE_FAIL", "COMPLETED", "TIMEOUT", "CANCELLED", "REQUEUED", "OUT_OF_MEMORY"]
JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64, "cancelled_by": pl.Int64, "het_job_id": pl.Int64}


def _world(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Events, jobs and planned maintenance of DAYS days; events cluster in bursts so incidents chain."""
    rng = random.Random(seed)
    events = []
    for burst in range(rng.randint(4, 14)):
        node, start = rng.choice(NODES), T0 + timedelta(minutes=rng.uniform(0, DAYS * 24 * 60))
        for _ in range(rng.randint(1, 6)):
            kind = rng.choice(KINDS)
            events.append({"event_id": len(events) + 1, "ts": start + timedelta(minutes=rng.uniform(0, 90)),
                           "node": rng.choice([node, node, rng.choice(NODES)]), "kind": kind[0], "code": kind[1],
                           "gpu_pci": None, "component": kind[2], "cause_class": kind[3], "severity": kind[4],
                           "action": kind[5]})
    jobs = []
    for i in range(rng.randint(20, 60)):
        end = T0 + timedelta(minutes=rng.uniform(30, DAYS * 24 * 60))
        elapsed = timedelta(minutes=rng.choice([5, 45, 300, 2000]))
        het = i // 2 if rng.random() < 0.2 else None
        jobs.append({"job_id": f"j{i}", "state": rng.choice(STATES), "nodes": rng.sample(NODES, rng.randint(1, 2)),
                     "n_gpus": 8, "start_ts": end - elapsed, "end_ts": end, "elapsed_s": int(elapsed.total_seconds()),
                     "exit_code": rng.choice([0, 1]), "exit_signal": 0, "cancelled_by": rng.choice([0, 1000, None]),
                     "het_job_id": het})
    for i in range(0, len(jobs) - 1, 2):  # het siblings end within seconds of each other
        if jobs[i]["het_job_id"] is not None:
            end = jobs[i]["end_ts"] + timedelta(seconds=20)
            jobs[i + 1].update(het_job_id=jobs[i]["het_job_id"], end_ts=end,
                               start_ts=end - timedelta(seconds=jobs[i + 1]["elapsed_s"]))
    planned = [{"node": rng.choice(NODES), "start_ts": T0 + timedelta(hours=rng.uniform(0, DAYS * 24)),
                "end_ts": None, "claims_evidence": True, "fault_drain_ts": None} for _ in range(rng.randint(0, 2))]
    for p in planned:
        p["end_ts"] = p["start_ts"] + timedelta(hours=rng.choice([2, 30]))
    return (pl.DataFrame(events, schema=EVENT_SCHEMA), pl.DataFrame(jobs, schema=JOB_SCHEMA),
            pl.DataFrame(planned, schema=PLANNED_SCHEMA))


def _log_days(last: date) -> pl.DataFrame:
    days = [T0.date() + timedelta(days=d) for d in range((last - T0.date()).days + 1)]
    return pl.DataFrame({"node": [n for n in NODES[:3] for _ in days], "day": days * 3})


def _night(jobs: pl.DataFrame, events: pl.DataFrame, planned: pl.DataFrame, last: date,
           memo: pl.DataFrame | None, basis: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame, set[str]]:
    """One build: the memo's attribution, checked against the full one; the memo and basis to keep and the
    jobs attributed again."""
    incidents, _ = merge_incidents(events, planned=planned)
    evidence = prepare_evidence(events, incidents, log_days=_log_days(last), planned=planned)
    signature = evidence_signature(evidence, rules_fingerprint())
    attributed: set[str] = set()

    def counting(frame: pl.DataFrame, *args: object, **kwargs: object) -> pl.DataFrame:
        attributed.update(frame.get_column("job_id"))
        return attribute_failures_with(frame, *args, **kwargs)  # type: ignore[arg-type]

    with mock.patch.object(memo_module, "attribute_failures_with", counting):
        got, rows = attribute_reusing(jobs, evidence, kind="job", memo=memo, dirty=dirty_days(basis, signature))
    assert_frame_equal(got, attribute_failures_with(jobs, evidence))
    return rows, signature, attributed


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), cut_day=st.integers(2, DAYS - 1))
def test_two_nights_through_the_memo_equal_attributing_every_job(seed: int, cut_day: int) -> None:
    events, jobs, planned = _world(seed)
    rng = random.Random(seed + 1)
    cut = T0 + timedelta(days=cut_day)
    # Night 1: what had arrived by the cut, less the late events (a node's file that came a day late).
    late = events.sample(fraction=0.15, seed=seed) if events.height else events
    seen = events.filter((pl.col("ts") < cut) & ~pl.col("event_id").is_in(late["event_id"].implode()))
    first_jobs = jobs.filter(pl.col("end_ts") < cut)
    memo, basis, _ = _night(first_jobs, seen, planned, (cut - timedelta(days=1)).date(), None, None)
    # Night 2: everything, but a few of night 1's events gone (a replaced file) and some jobs' records changed.
    gone = seen.sample(fraction=0.1, seed=seed + 2) if seen.height else seen
    events2 = events.filter(~pl.col("event_id").is_in(gone["event_id"].implode()))
    changed = [f"j{i}" for i in range(jobs.height) if rng.random() < 0.1]
    jobs2 = jobs.with_columns(pl.when(pl.col("job_id").is_in(changed)).then(pl.lit("FAILED"))
                              .otherwise(pl.col("state")).alias("state"))
    _night(jobs2, events2, planned, (T0 + timedelta(days=DAYS)).date(), memo, basis)


def test_a_quiet_night_attributes_nothing_again_and_new_code_everything() -> None:
    # The same inputs twice: every job that could have failed keeps its row; only the trivial "not a
    # failure" rows, which the memo does not hold, are built again, and the het-job siblings of those
    # (attributed with them). Another fingerprint (other rules, or code) keeps nothing.
    events, jobs, planned = _world(3)
    last = (T0 + timedelta(days=DAYS)).date()
    memo, basis, first = _night(jobs, events, planned, last, None, None)
    _, _, second = _night(jobs, events, planned, last, memo, basis)
    assert first == set(jobs["job_id"]) and memo.height > 0
    kept = set(memo["job_id"]) - set(jobs.filter(pl.col("het_job_id").is_not_null())["job_id"])
    assert kept and not second & kept and second >= set(jobs["job_id"]) - set(memo["job_id"])
    other = basis.with_columns(pl.lit("another build").alias("fingerprint"))
    assert dirty_days(other, basis) is None and dirty_days(None, basis) is None


def test_a_new_event_dirties_its_day_and_the_jobs_within_reach_only() -> None:
    # Hand-computed: one Xid 79 on n1 at day 3, 12:00. Jobs on day 1 keep their rows; a job ending on
    # day 3 is attributed again; so is one that ended at 00:30 on day 4 (its reach goes back to day 3).
    events, jobs, planned = _world(11)
    last = (T0 + timedelta(days=DAYS)).date()
    jobs = pl.DataFrame([
        {"job_id": "early", "state": "FAILED", "nodes": ["n1"], "n_gpus": 8, "start_ts": T0 + timedelta(hours=20),
         "end_ts": T0 + timedelta(hours=22), "elapsed_s": 7200, "exit_code": 1, "exit_signal": 0,
         "cancelled_by": None, "het_job_id": None},
        {"job_id": "same_day", "state": "FAILED", "nodes": ["n2"], "n_gpus": 8,
         "start_ts": T0 + timedelta(days=2, hours=1), "end_ts": T0 + timedelta(days=2, hours=2), "elapsed_s": 3600,
         "exit_code": 1, "exit_signal": 0, "cancelled_by": None, "het_job_id": None},
        {"job_id": "next_morning", "state": "FAILED", "nodes": ["n3"], "n_gpus": 8,
         "start_ts": T0 + timedelta(days=3, minutes=10), "end_ts": T0 + timedelta(days=3, minutes=30),
         "elapsed_s": 1200, "exit_code": 1, "exit_signal": 0, "cancelled_by": None, "het_job_id": None},
    ], schema=JOB_SCHEMA)
    events = events.filter(pl.col("ts").dt.date() != (T0 + timedelta(days=2)).date())
    memo, basis, _ = _night(jobs, events, planned, last, None, None)
    xid = pl.DataFrame([{"event_id": 99_999, "ts": T0 + timedelta(days=2, hours=12), "node": "n1", "kind": "xid",
                         "code": 79, "gpu_pci": None, "component": "pcie_bus", "cause_class": "hardware",
                         "severity": "critical", "action": "RESTART_BM"}], schema=EVENT_SCHEMA)
    incidents, _ = merge_incidents(pl.concat([events, xid]), planned=planned)
    evidence = prepare_evidence(pl.concat([events, xid]), incidents, log_days=_log_days(last), planned=planned)
    dirty = dirty_days(basis, evidence_signature(evidence, rules_fingerprint()))
    assert dirty is not None and (T0 + timedelta(days=2)).date() in dirty.to_list()
    seen: list[list[str]] = []

    def recording(frame: pl.DataFrame, *args: object, **kwargs: object) -> pl.DataFrame:
        seen.append(frame.get_column("job_id").to_list())
        return attribute_failures_with(frame, *args, **kwargs)  # type: ignore[arg-type]

    with mock.patch.object(memo_module, "attribute_failures_with", recording):
        got, _ = attribute_reusing(jobs, evidence, kind="job", memo=memo, dirty=dirty)
    assert seen == [["same_day", "next_morning"]]
    assert_frame_equal(got, attribute_failures_with(jobs, evidence))


def test_instances_are_kept_by_job_and_instance_number() -> None:
    events, jobs, planned = _world(5)
    instances = pl.concat([jobs.with_columns(pl.lit(1, pl.Int32).alias("instance_no")),
                           jobs.with_columns(pl.lit(2, pl.Int32).alias("instance_no"),
                                             pl.col("end_ts") + timedelta(hours=1))])
    last = (T0 + timedelta(days=DAYS + 1)).date()
    incidents, _ = merge_incidents(events, planned=planned)
    evidence = prepare_evidence(events, incidents, log_days=_log_days(last), planned=planned)
    signature = evidence_signature(evidence, rules_fingerprint())
    first, rows = attribute_reusing(instances, evidence, kind="instance", memo=None, dirty=None)
    again, _ = attribute_reusing(instances, evidence, kind="instance", memo=rows, dirty=dirty_days(signature, signature))
    assert_frame_equal(again, first)
    assert_frame_equal(first, attribute_failures_with(instances, evidence))
    assert rows.schema == pl.Schema(MEMO_SCHEMA) and rows.get_column("instance_no").null_count() == 0
