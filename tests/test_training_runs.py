"""Run grouping, ETTR and goodput on hand-computed small cases."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.reliability.goodput import goodput_daily, interruption_cause
from gpusre.models.reliability.training_runs import (CheckpointAssumption, RunRules, assign_runs, charge_interruptions,
                                                     ettr_runs, run_instances)

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
UTC = pl.Datetime("us", "UTC")


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


JOB_COLS = {"job_id": pl.String, "user": pl.String, "account": pl.String, "name": pl.String, "comment": pl.String,
            "state": pl.String, "n_gpus": pl.Int64, "n_nodes": pl.Int64, "submit_ts": UTC, "start_ts": UTC,
            "end_ts": UTC}
INST_COLS = {"job_id": pl.String, "instance_no": pl.Int32, "state": pl.String, "submit_ts": UTC,
             "eligible_ts": UTC, "start_ts": UTC, "end_ts": UTC, "elapsed_s": pl.Int64, "n_gpus": pl.Int64}


def frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Jobs and instances of a small cluster (hours from T0)."""
    jobs = [
        # run A: job 1 fails after 4 h, resubmitted 30 min later, job 2 completes
        ("1", "alice", "llm", "llm-7b", "", "FAILED", 16, 2, h(0), h(1), h(5)),
        ("2", "alice", "llm", "llm-7b", "", "COMPLETED", 16, 2, h(5.5), h(6), h(10)),
        # after a COMPLETED job a resubmission is a new run
        ("3", "alice", "llm", "llm-7b", "", "COMPLETED", 16, 2, h(10.5), h(11), h(12)),
        # same name, other user: not alice's run
        ("4", "bob", "llm", "llm-7b", "", "COMPLETED", 16, 2, h(5.6), h(6), h(7)),
        # a one-GPU job is never grouped
        ("5", "carol", "eval", "eval", "", "FAILED", 1, 1, h(0), h(0), h(1)),
        ("6", "carol", "eval", "eval", "", "COMPLETED", 1, 1, h(1.1), h(1.2), h(2)),
        # explicit run key in the comment joins different names and a long gap
        ("7", "dave", "llm", "phase-1", "run=big-01", "TIMEOUT", 64, 8, h(0), h(0), h(2)),
        ("8", "dave", "llm", "phase-2", "prio, run=big-01", "COMPLETED", 64, 8, h(20), h(20), h(21)),
        # requeued by a node failure under the same job id (two instances)
        ("9", "erin", "vision", "vit", "", "COMPLETED", 8, 1, h(0), h(1), h(3)),
    ]
    inst = [
        ("1", 1, "FAILED", h(0), h(0), h(1), h(5), 14400, 16),
        ("2", 1, "COMPLETED", h(5.5), h(5.5), h(6), h(10), 14400, 16),
        ("3", 1, "COMPLETED", h(10.5), h(10.5), h(11), h(12), 3600, 16),
        ("4", 1, "COMPLETED", h(5.6), h(5.6), h(6), h(7), 3600, 16),
        ("5", 1, "FAILED", h(0), h(0), h(0), h(1), 3600, 1),
        ("6", 1, "COMPLETED", h(1.1), h(1.1), h(1.2), h(2), 2880, 1),
        ("7", 1, "TIMEOUT", h(0), h(0), h(0), h(2), 7200, 64),
        ("8", 1, "COMPLETED", h(20), h(20), h(20), h(21), 3600, 64),
        ("9", 1, "NODE_FAIL", h(0), h(0), h(0), h(0.5), 1800, 8),
        ("9", 2, "COMPLETED", h(0.5), h(0.6), h(1), h(3), 7200, 8),
    ]
    return (pl.DataFrame(jobs, schema=JOB_COLS, orient="row"), pl.DataFrame(inst, schema=INST_COLS, orient="row"))


RULES = RunRules(checkpoint=CheckpointAssumption(3600, 300, 0),
                 overrides={"vision": CheckpointAssumption(1800, 600, 0)})


def charged(ri: pl.DataFrame, infra: tuple[tuple[str, int], ...] = (), user: tuple[tuple[str, int], ...] = ()
            ) -> pl.DataFrame:
    """``ri`` with the interruption losses, the instances ``infra`` attributed to the infrastructure
    and ``user`` to the user (the rest: by their state alone, as the pipeline does)."""
    rows = [(j, n, "infrastructure") for j, n in infra] + [(j, n, "user") for j, n in user]
    attribution = pl.DataFrame(rows, schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String},
                               orient="row")
    return charge_interruptions(ri.with_columns(interruption_cause(ri, attribution)))


def ettr(inst: pl.DataFrame, jobs: pl.DataFrame, as_of: datetime, rules: RunRules = RULES,
         infra: tuple[tuple[str, int], ...] = ()) -> pl.DataFrame:
    runs = assign_runs(jobs, rules)
    return ettr_runs(charged(run_instances(inst, jobs, runs, rules, as_of), infra), jobs, runs, as_of, min_gpus=8)


def test_assign_runs_groups_resubmissions_keys_and_requeues() -> None:
    jobs, _ = frames()
    runs = dict(assign_runs(jobs, RULES).select("job_id", "run_id").iter_rows())
    assert runs["1"] == runs["2"] == "1"
    assert runs["3"] == "3"
    assert runs["4"] == "4"
    assert runs["5"] == "5" and runs["6"] == "6"
    assert runs["7"] == runs["8"] == "big-01"
    assert runs["9"] == "9"
    src = dict(assign_runs(jobs, RULES).select("job_id", "run_key_source").iter_rows())
    assert src["1"] == "resubmission" and src["7"] == "comment" and src["5"] == "single" and src["3"] == "single"


def test_resubmission_gap_and_end_state_are_configurable() -> None:
    jobs, _ = frames()
    strict = RunRules(resubmit_gap_s=600)  # 30 min gap is now too long
    assert dict(assign_runs(jobs, strict).select("job_id", "run_id").iter_rows())["2"] == "2"
    no_fail = RunRules(resubmit_after_states=("TIMEOUT",))
    assert dict(assign_runs(jobs, no_fail).select("job_id", "run_id").iter_rows())["2"] == "2"


def test_ettr_two_jobs_hand_computed() -> None:
    jobs, inst = frames()
    # job 1's failure attributed to the infrastructure (a GPU fell off the bus on its node)
    out = ettr(inst, jobs, h(30), infra=(("1", 1),))
    a = out.filter(pl.col("run_id") == "1").row(0, named=True)
    # wall-clock 0 h -> 10 h = 36,000 s; queue 1 h + 0.5 h = 5,400 s; run 8 h = 28,800 s.
    # job 1 interrupted after t = 4 h >= Δ = 1 h: expected lost work Δ/2 = 1,800 s.
    # job 2 is a restart: overhead u0 = 300 s. productive = 28,800 − 300 − 1,800 = 26,700.
    assert (a["wallclock_s"], a["queue_s"], a["run_s"]) == (36000, 5400, 28800)
    assert (a["interruptions"], a["restart_overhead_s"]) == (1, 300)
    assert a["lost_work_s"] == pytest.approx(1800)
    assert a["productive_s"] == pytest.approx(26700)
    assert a["ettr"] == pytest.approx(26700 / 36000)
    assert a["ettr_excl_queue"] == pytest.approx(26700 / (36000 - 5400))  # 0.8725: the same run, queue wait out
    assert a["job_ids"] == ["1", "2"] and a["n_jobs"] == 2 and a["n_instances"] == 2
    assert a["policy_source"] == "site default"


def test_ettr_a_users_own_failure_is_no_interruption() -> None:
    """The same run with job 1's failure the user's (no infrastructure evidence): Kokolis et al. leave
    user-space failures out of ETTR, and goodput counts their time as delivered — no lost work, no
    restart overhead, no interruption; the resubmission gap still counts in the wall-clock."""
    jobs, inst = frames()
    a = ettr(inst, jobs, h(30)).filter(pl.col("run_id") == "1").row(0, named=True)
    assert (a["interruptions"], a["restart_overhead_s"], a["lost_work_s"]) == (0, 0, 0.0)
    assert a["productive_s"] == pytest.approx(28800)
    assert a["ettr"] == pytest.approx(28800 / 36000)


def test_ettr_a_run_the_infrastructure_ended_lost_its_last_work() -> None:
    """A run whose only job a node failure killed, never resubmitted: the work since its last
    checkpoint is lost (goodput charges it too), with no restart to pay for."""
    jobs = pl.DataFrame([("30", "gil", "llm", "solo", "", "NODE_FAIL", 8, 1, h(0), h(0), h(4))],
                        schema=JOB_COLS, orient="row")
    inst = pl.DataFrame([("30", 1, "NODE_FAIL", h(0), h(0), h(0), h(4), 14400, 8)], schema=INST_COLS, orient="row")
    r = ettr(inst, jobs, h(12)).row(0, named=True)
    # run 4 h = 14,400 s, t = 4 h >= Δ: lost Δ/2 = 1,800 s; productive 12,600 of 14,400 wall-clock.
    assert (r["interruptions"], r["restart_overhead_s"]) == (1, 0)
    assert r["lost_work_s"] == pytest.approx(1800)
    assert r["ettr"] == pytest.approx(12600 / 14400)


def test_ettr_requeue_short_instance_and_account_override() -> None:
    jobs, inst = frames()
    out = ettr(inst, jobs, h(30))  # job 9's first instance: NODE_FAIL, the infrastructure's by its state
    r = out.filter(pl.col("run_id") == "9").row(0, named=True)
    # account 'vision': Δ = 1,800 s, u0 = 600 s. Instance 1 ran t = 1,800 s = Δ: lost Δ/2 = 900
    # (t − t²/2Δ = 1800 − 900 = 900 at t = Δ: both branches agree). Instance 2: overhead 600.
    # wall-clock 0 -> 3 h = 10,800; queue 0 + (1 h − 0.6 h) = 1,440; run 9,000.
    assert r["policy_source"] == "account override" and r["checkpoint_interval_s"] == 1800
    assert (r["wallclock_s"], r["queue_s"], r["run_s"], r["restart_overhead_s"]) == (10800, 1440, 9000, 600)
    assert r["lost_work_s"] == pytest.approx(900)
    assert r["ettr"] == pytest.approx((9000 - 600 - 900) / 10800)


def test_ettr_explicit_key_counts_gap_between_jobs() -> None:
    jobs, inst = frames()
    out = ettr(inst, jobs, h(30))
    r = out.filter(pl.col("run_id") == "big-01").row(0, named=True)
    # 0 -> 21 h wall-clock; 3 h run; job 7 hit its time limit (the user's): nothing lost, no overhead.
    assert r["wallclock_s"] == 21 * 3600
    assert r["productive_s"] == pytest.approx(3 * 3600)
    # a TIMEOUT the infrastructure caused (a hung node): lost 1,800 (t = 2 h); overhead 300.
    r = ettr(inst, jobs, h(30), infra=(("7", 1),)).filter(pl.col("run_id") == "big-01").row(0, named=True)
    assert r["productive_s"] == pytest.approx(3 * 3600 - 300 - 1800)
    # small jobs are not runs in the mart
    assert "5" not in out.get_column("run_id").to_list()


def test_short_interruption_uses_the_uniform_phase_expectation() -> None:
    jobs, inst = frames()
    inst = inst.with_columns(pl.when(pl.col("job_id") == "1").then(1200).otherwise(pl.col("elapsed_s"))
                             .alias("elapsed_s"))
    runs = assign_runs(jobs, RULES)
    ri = charged(run_instances(inst, jobs, runs, RULES, h(30)), infra=(("1", 1),))
    lost = ri.filter(pl.col("job_id") == "1").item(0, "lost_work_s")
    assert lost == pytest.approx(1200 - 1200**2 / (2 * 3600))  # 1,000 s


def test_ongoing_run_ends_at_as_of() -> None:
    jobs, inst = frames()
    jobs = jobs.with_columns(pl.when(pl.col("job_id") == "2").then(None).otherwise(pl.col("end_ts")).alias("end_ts"))
    inst = inst.with_columns(pl.when(pl.col("job_id") == "2").then(None).otherwise(pl.col("end_ts")).alias("end_ts"))
    out = ettr(inst, jobs, h(8))
    r = out.filter(pl.col("run_id") == "1").row(0, named=True)
    assert r["ongoing"] and r["wallclock_s"] == 8 * 3600 and r["run_s"] == 4 * 3600 + 2 * 3600


def test_goodput_charges_only_infrastructure_interruptions() -> None:
    jobs, inst = frames()
    runs = assign_runs(jobs, RULES)
    ri = charged(run_instances(inst, jobs, runs, RULES, h(30)), user=(("1", 1),))
    util = pl.DataFrame({"day": [date(2026, 3, 1), date(2026, 3, 2)], "capacity_gpu_hours": [2400.0, 2400.0],
                         "allocated_gpu_hours": [600.0, 100.0]})
    out = goodput_daily(ri, util)
    d1 = out.row(0, named=True)
    # Only job 9's NODE_FAIL instance counts (job 1 failed by the user): 8 GPUs × 900 s lost = 2 GPU-h;
    # its requeue pays 8 × 600 s = 1.3333 GPU-h of restart overhead.
    assert d1["lost_failure_gpu_hours"] == pytest.approx(2.0)
    assert d1["lost_restart_gpu_hours"] == pytest.approx(8 * 600 / 3600)
    assert d1["productive_gpu_hours"] == pytest.approx(600 - 2.0 - 8 * 600 / 3600)
    assert d1["idle_gpu_hours"] == pytest.approx(1800)
    assert d1["goodput"] == pytest.approx((600 - 2.0 - 8 * 600 / 3600) / 2400)
    assert d1["infra_interruptions"] == 1
    d2 = out.row(1, named=True)
    assert d2["lost_failure_gpu_hours"] == 0 and d2["goodput"] == pytest.approx(100 / 2400)


def test_ettr_with_two_interruptions_hand_computed() -> None:
    """A run of two jobs and three instances: job 20 fails after 3 h with a fault on its node
    (attributed to the infrastructure: interruption 1), job 21 is requeued by a node failure after
    40 min (interruption 2), its second instance completes."""
    jobs = pl.DataFrame([
        ("20", "fay", "llm", "llm-70b", "", "FAILED", 64, 8, h(0), h(0.5), h(3.5)),
        ("21", "fay", "llm", "llm-70b", "", "COMPLETED", 64, 8, h(4), h(4.25), h(9)),
    ], schema=JOB_COLS, orient="row")
    inst = pl.DataFrame([
        ("20", 1, "FAILED", h(0), h(0), h(0.5), h(3.5), 10800, 64),
        ("21", 1, "NODE_FAIL", h(4), h(4), h(4.25), h(4 + 55 / 60), 2400, 64),
        ("21", 2, "COMPLETED", h(4 + 55 / 60), h(5), h(5.5), h(9), 12600, 64),
    ], schema=INST_COLS, orient="row")
    rules = RunRules(checkpoint=CheckpointAssumption(3600, 300, 0))
    r = ettr(inst, jobs, h(12), rules, infra=(("20", 1),)).row(0, named=True)
    # wall-clock 0 -> 9 h = 32,400 s; queue 0.5 h + 0.25 h + 0.5 h = 4,500 s; run 3 h + 40 min + 3.5 h = 25,800 s.
    # Interruption 1: t = 10,800 s >= Δ -> lost 1,800. Interruption 2: a restart, overhead 300, work t = 2,100 s
    # < Δ -> lost 2,100 − 2,100²/7,200 = 1,487.5. Instance 3: overhead 300. Productive = 25,800 − 600 − 3,287.5.
    assert (r["n_jobs"], r["n_instances"], r["interruptions"]) == (2, 3, 2)
    assert (r["wallclock_s"], r["queue_s"], r["run_s"], r["restart_overhead_s"]) == (32400, 4500, 25800, 600)
    assert r["lost_work_s"] == pytest.approx(1800 + 2100 - 2100**2 / 7200)
    assert r["productive_s"] == pytest.approx(25800 - 600 - 3287.5)
    assert r["ettr"] == pytest.approx(21912.5 / 32400)  # 0.6763
    assert r["ettr_excl_queue"] == pytest.approx(21912.5 / (32400 - 4500))  # 0.7854


def test_goodput_splits_unavailable_capacity_from_node_states() -> None:
    jobs, inst = frames()
    runs = assign_runs(jobs, RULES)
    ri = charged(run_instances(inst, jobs, runs, RULES, h(30)))
    util = pl.DataFrame({"day": [date(2026, 3, 1), date(2026, 3, 2)], "capacity_gpu_hours": [2400.0, 2400.0],
                         "allocated_gpu_hours": [600.0, 100.0]})
    # node states for day 1 only: of 10 nodes x 8 GPUs, node n9 was out of service all day
    svc = pl.DataFrame({"day": [date(2026, 3, 1)] * 10, "node": [f"n{i}" for i in range(10)],
                        "in_service_hours": [24.0] * 9 + [0.0]})
    out = goodput_daily(ri, util, in_service=svc, gpus_per_node=8)
    d1, d2 = out.row(0, named=True), out.row(1, named=True)
    assert d1["in_service_gpu_hours"] == 9 * 24 * 8 and d1["unavailable_gpu_hours"] == 2400 - 9 * 24 * 8
    assert d1["goodput_in_service"] == pytest.approx(d1["productive_gpu_hours"] / (9 * 24 * 8))
    assert d1["capacity_source"].startswith("node states")
    assert d2["in_service_gpu_hours"] == 2400 and d2["capacity_source"].startswith("cluster.yaml")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 6)), min_size=1, max_size=12))
def test_run_positions_follow_start_order_within_each_run(specs: list[tuple[int, int, int]]) -> None:
    """Each instance's place in its run (``run_pos``), the instance before it and whether it was
    followed, against a plain sort of each run's instances by (start, job id, instance number).
    ``specs``: per job, its explicit run key, its number of instances and its first start hour
    (ties between jobs included)."""
    job_rows, inst_rows = [], []
    for n, (key, count, start) in enumerate(specs):
        job_id = str(100 + n)
        job_rows.append((job_id, "u", "acct", f"job{n}", f"run=r{key}", "COMPLETED", 8, 1, h(start), h(start),
                         h(start + count)))
        inst_rows += [(job_id, i + 1, "REQUEUED" if i + 1 < count else "COMPLETED", h(start), h(start),
                       h(start + i), h(start + i + 1), 3600, 8) for i in range(count)]
    jobs = pl.DataFrame(job_rows, schema=JOB_COLS, orient="row")
    inst = pl.DataFrame(inst_rows, schema=INST_COLS, orient="row")
    runs = assign_runs(jobs, RULES)
    got = {(r["job_id"], r["instance_no"]): r for r in run_instances(inst, jobs, runs, RULES, h(40)).iter_rows(named=True)}
    run_of = dict(runs.select("job_id", "run_id").iter_rows())
    by_run: dict[str, list[tuple]] = {}
    for job_id, no, *_ in inst_rows:
        by_run.setdefault(run_of[job_id], []).append((got[(job_id, no)]["start_ts"], job_id, no))
    for members in by_run.values():
        members.sort()
        for pos, (_, job_id, no) in enumerate(members, start=1):
            row = got[(job_id, no)]
            prev = members[pos - 2][1:] if pos > 1 else (None, None)
            assert (row["run_pos"], row["is_restart"], row["followed"]) == (pos, pos > 1, pos < len(members))
            assert (row["prev_job_id"], row["prev_instance_no"]) == prev
