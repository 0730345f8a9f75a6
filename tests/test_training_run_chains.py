"""Training runs of jobs held before they were eligible, and one quantile method for every ETTR percentile.

A run's available wall-clock starts when its first job became *eligible* (reliability-facts §1.2:
available time = scheduled, or eligible but waiting in the queue), and a resubmission's gap runs from
the previous job's end to the job's eligible time. So a job submitted with ``--dependency=afterany:<prev>``
before its predecessor ended continues that run, two same-name jobs running side by side stay two runs,
and time a job was held (``--begin``, a dependency) before it was eligible is no lost time. All expected
values are worked out by hand below; the last tests take a hand-written ``sacct`` dump through the pipeline.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import run_hand_landing

from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.reliability.goodput import interruption_cause
from gpusre.models.reliability.job_reliability import ETTR_QUANTILE_INTERPOLATION, ettr_by_size
from gpusre.models.reliability.ettr_model import expected_ettr
from gpusre.models.reliability.training_runs import (ETTR_RUNS_SCHEMA, CheckpointAssumption, RunRules, assign_runs,
                                                     charge_interruptions, ettr_runs, run_instances)
from gpusre.models.warehouse import apply_ddl

T0 = datetime(2026, 12, 2, tzinfo=timezone.utc)
UTC = pl.Datetime("us", "UTC")
RULES = RunRules(checkpoint=CheckpointAssumption(3600, 300, 0))

JOB_COLS = {"job_id": pl.String, "user": pl.String, "account": pl.String, "name": pl.String, "comment": pl.String,
            "state": pl.String, "n_gpus": pl.Int64, "n_nodes": pl.Int64, "submit_ts": UTC, "eligible_ts": UTC,
            "start_ts": UTC, "end_ts": UTC}
INST_COLS = {"job_id": pl.String, "instance_no": pl.Int32, "state": pl.String, "submit_ts": UTC,
             "eligible_ts": UTC, "start_ts": UTC, "end_ts": UTC, "elapsed_s": pl.Int64, "n_gpus": pl.Int64}


def at(hh: int, mm: int = 0) -> datetime:
    return T0 + timedelta(hours=hh, minutes=mm)


def frames(jobs: list[tuple]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Job rows (job_id, user, name, state, gpus, submit, eligible, start, end) -> jobs and one instance each."""
    job_rows, inst_rows = [], []
    for job_id, user, name, state, gpus, submit, eligible, start, end in jobs:
        job_rows.append((job_id, user, "research", name, "", state, gpus if start else None, gpus // 8, submit,
                         eligible, start, end))
        if start is not None:
            inst_rows.append((job_id, 1, state, submit, eligible, start, end,
                              int((end - start).total_seconds()) if end else None, gpus))
    return (pl.DataFrame(job_rows, schema=JOB_COLS, orient="row"),
            pl.DataFrame(inst_rows, schema=INST_COLS, orient="row"))


def runs_of(jobs: pl.DataFrame, inst: pl.DataFrame, as_of: datetime) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(job -> run, the ETTR mart), every failure the user's (no attribution)."""
    runs = assign_runs(jobs, RULES)
    ri = run_instances(inst, jobs, runs, RULES, as_of)
    none = pl.DataFrame(schema={"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})
    ri = charge_interruptions(ri.with_columns(interruption_cause(ri, none)))
    return runs, ettr_runs(ri, jobs, runs, as_of, min_gpus=8)


# 9500 hits its 12 h limit at 12:10; 9501, submitted at 00:01 with --dependency=afterany:9500, is eligible then.
CHAIN = [
    ("9500", "kim", "llm-13b", "TIMEOUT", 64, at(0), at(0), at(0, 10), at(12, 10)),
    ("9501", "kim", "llm-13b", "COMPLETED", 64, at(0, 1), at(12, 10), at(12, 20), at(20, 20)),
]


def test_dependency_chained_resubmission_is_one_run() -> None:
    runs, mart = runs_of(*frames(CHAIN), as_of=at(30))
    assert dict(runs.select("job_id", "run_id").iter_rows()) == {"9500": "9500", "9501": "9500"}
    assert mart.height == 1
    r = mart.row(0, named=True)
    # wall-clock 00:00 -> 20:20 = 73,200 s; queue 10 min + 10 min = 1,200 s; run 12 h + 8 h = 72,000 s,
    # all productive (a TIMEOUT is the user's: no interruption). ETTR 72,000 / 73,200 = 0.9836.
    assert (r["run_key_source"], r["job_ids"], r["n_jobs"], r["n_instances"]) == ("resubmission", ["9500", "9501"], 2, 2)
    assert (r["wallclock_s"], r["queue_s"], r["run_s"], r["interruptions"]) == (73200, 1200, 72000, 0)
    assert r["productive_s"] == pytest.approx(72000)
    assert r["ettr"] == pytest.approx(72000 / 73200) and round(r["ettr"], 3) == 0.984
    assert r["ettr_excl_queue"] == pytest.approx(1.0)
    assert r["first_submit_ts"] == at(0) and r["last_end_ts"] == at(20, 20) and not r["ongoing"]


def test_same_name_jobs_side_by_side_are_two_runs() -> None:
    """9601 became eligible at 01:05, while 9600 ran (until 05:00): two runs, each with its own wall-clock."""
    jobs = [("9600", "lee", "sweep-a", "TIMEOUT", 16, at(1), at(1), at(1), at(5)),
            ("9601", "lee", "sweep-a", "TIMEOUT", 16, at(1, 5), at(1, 5), at(1, 30), at(5, 30))]
    runs, mart = runs_of(*frames(jobs), as_of=at(30))
    assert dict(runs.select("job_id", "run_id").iter_rows()) == {"9600": "9600", "9601": "9601"}
    got = {r["run_id"]: r for r in mart.iter_rows(named=True)}
    assert got["9600"]["run_key_source"] == got["9601"]["run_key_source"] == "single"
    # 9600: 4 h of 4 h. 9601: 01:05 -> 05:30 = 15,900 s, 25 min queued, 4 h run.
    assert (got["9600"]["wallclock_s"], got["9600"]["ettr"]) == (14400, pytest.approx(1.0))
    assert (got["9601"]["wallclock_s"], got["9601"]["queue_s"]) == (15900, 1500)
    assert got["9601"]["ettr"] == pytest.approx(14400 / 15900)


def test_a_job_held_until_its_begin_time_does_not_count_the_hold() -> None:
    """Submitted 02:00 with --begin=06:00, started 06:30, ran 4 h: the 4 h hold is no available time."""
    jobs = [("9700", "max", "eval-big", "COMPLETED", 16, at(2), at(6), at(6, 30), at(10, 30))]
    _, mart = runs_of(*frames(jobs), as_of=at(30))
    r = mart.row(0, named=True)
    # 06:00 -> 10:30 = 16,200 s, of which 1,800 queued: ETTR 14,400 / 16,200 = 0.8889 (was / 30,600 = 0.47).
    assert (r["wallclock_s"], r["queue_s"], r["run_s"]) == (16200, 1800, 14400)
    assert r["ettr"] == pytest.approx(14400 / 16200)
    assert r["ettr_excl_queue"] == pytest.approx(1.0)
    assert r["first_submit_ts"] == at(2)


def test_a_held_resubmission_of_a_run_going_on_at_the_end_of_the_data() -> None:
    """At 06:00 9500 runs and 9501 is held on it (Eligible=Unknown): 9500's run goes on, 9501 is no run of
    its own in the mart (never got GPUs). At 12:15 9500 has ended and 9501 waits eligible: one run, ongoing."""
    held = [("9500", "kim", "llm-13b", "RUNNING", 64, at(0), at(0), at(0, 10), None),
            ("9501", "kim", "llm-13b", "PENDING", 64, at(0, 1), None, None, None)]
    runs, mart = runs_of(*frames(held), as_of=at(6))
    assert mart.get_column("run_id").to_list() == ["9500"]
    r = mart.row(0, named=True)
    assert r["ongoing"] and (r["wallclock_s"], r["run_s"], r["queue_s"]) == (6 * 3600, 6 * 3600 - 600, 600)

    waiting = [CHAIN[0], ("9501", "kim", "llm-13b", "PENDING", 64, at(0, 1), at(12, 10), None, None)]
    jobs, inst = frames(waiting)
    runs, mart = runs_of(jobs, inst, as_of=at(12, 15))
    assert dict(runs.select("job_id", "run_id").iter_rows()) == {"9500": "9500", "9501": "9500"}
    r = mart.row(0, named=True)
    assert r["ongoing"] and r["job_ids"] == ["9500", "9501"]
    assert (r["wallclock_s"], r["run_s"]) == (12 * 3600 + 15 * 60, 12 * 3600)
    ri = run_instances(inst, jobs, runs, RULES, at(12, 15))
    assert ri.row(0, named=True)["followed"]  # 9501, eligible at 9500's end, follows it


def test_a_chain_submitted_up_front_stays_one_run_while_its_last_job_is_held() -> None:
    """Three jobs submitted at 00:00-00:02, each --dependency=afterany on the one before: at 14:00 the
    second runs and the third is held (Eligible=Unknown). The first two are one run, going on."""
    jobs = [("1", "kim", "llm-70b", "TIMEOUT", 64, at(0), at(0), at(0), at(12)),
            ("2", "kim", "llm-70b", "RUNNING", 64, at(0, 1), at(12), at(12, 30), None),
            ("3", "kim", "llm-70b", "PENDING", 64, at(0, 2), None, None, None)]
    runs, mart = runs_of(*frames(jobs), as_of=at(14))
    run_of = dict(runs.select("job_id", "run_id").iter_rows())
    assert run_of["1"] == run_of["2"] == "1"
    r = mart.filter(pl.col("run_id") == "1").row(0, named=True)
    # 00:00 -> 14:00 = 50,400 s; 12 h + 1.5 h run, 30 min queued.
    assert r["ongoing"] and (r["wallclock_s"], r["run_s"], r["queue_s"]) == (50400, 48600, 1800)


def test_without_eligible_times_the_gap_runs_to_the_submit() -> None:
    """Accounting without an Eligible column: the submit stands in (the old rule)."""
    jobs, inst = frames(CHAIN)
    runs, _ = runs_of(jobs.drop("eligible_ts"), inst, as_of=at(30))
    assert dict(runs.select("job_id", "run_id").iter_rows()) == {"9500": "9500", "9501": "9501"}


# ------------------------------------------------------------------ one quantile method

def _mart_rows(ettrs: list[tuple[int, float]]) -> pl.DataFrame:
    """marts.ettr_runs rows, one finished run per (GPUs, ETTR), all ending on 2026-12-02."""
    rows = []
    for i, (gpus, e) in enumerate(ettrs):
        rows.append({"run_id": f"r{i}", "user": "u", "account": "a", "name": f"n{i}", "run_key_source": "single",
                     "job_ids": [f"{i}"], "n_jobs": 1, "n_instances": 1, "n_gpus": gpus, "n_nodes": max(gpus // 8, 1),
                     "interruptions": 0, "first_submit_ts": at(0), "last_end_ts": at(10), "ongoing": False,
                     "wallclock_s": 36000, "queue_s": 0, "run_s": 36000, "restart_overhead_s": 0, "lost_work_s": 0.0,
                     "productive_s": 36000 * e, "ettr": e, "ettr_excl_queue": e, "checkpoint_interval_s": 3600,
                     "restart_overhead_cfg_s": 300, "policy_source": "site default"})
    return pl.DataFrame(rows, schema=ETTR_RUNS_SCHEMA)


def _window(runs: pl.DataFrame) -> dict[str, dict]:
    con = duckdb.connect()
    try:
        apply_ddl(con, registry_views=False)
        con.register("_runs", runs.to_arrow())
        con.execute("CREATE OR REPLACE TABLE marts.ettr_runs AS SELECT * FROM _runs")
        run_mart_sql(con, "ettr_window_by_size")
        rel = con.sql("SELECT * FROM marts.ettr_window_by_size(DATE '2026-12-01', DATE '2026-12-03')")
        return {r["size_bucket"]: r for r in rel.pl().iter_rows(named=True)}
    finally:
        con.close()


def test_ettr_percentiles_interpolate_linearly_in_the_mart_and_the_window_mart() -> None:
    # 9-64 GPUs: 0.5, 0.7, 0.8, 0.9, 1.0 -> p10 at rank 0.4: 0.5 + 0.4 x 0.2 = 0.58; p50 0.8; p90 at rank 3.6:
    # 0.9 + 0.6 x 0.1 = 0.96 (the nearest run would say 0.5 and 1.0). 2-8 GPUs: 0.6, 0.9 -> p10 0.63, p90 0.87.
    runs = _mart_rows([(16, 0.5), (64, 0.7), (32, 0.8), (16, 0.9), (16, 1.0), (8, 0.6), (8, 0.9)])
    assert ETTR_QUANTILE_INTERPOLATION == "linear"
    mart = {r["gpus_bucket"]: r for r in ettr_by_size(runs, None).iter_rows(named=True)}
    window = _window(runs)
    hand = {"9-64": (0.58, 0.8, 0.96), "2-8": (0.63, 0.75, 0.87)}
    assert set(mart) == set(window) == set(hand)
    for bucket, (p10, p50, p90) in hand.items():
        m, w = mart[bucket], window[bucket]
        assert (m["ettr_p10"], m["ettr_p50"], m["ettr_p90"]) == (pytest.approx(p10), pytest.approx(p50),
                                                                  pytest.approx(p90))
        for col in ("ettr_p10", "ettr_p50", "ettr_p90", "ettr_mean"):
            assert m[col] == pytest.approx(w[col], abs=1e-12), (bucket, col)
        assert m["runs"] == w["runs"] and m["n_nodes_median"] == pytest.approx(w["median_nodes"])


# ------------------------------------------------------------------ through the pipeline

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|ReqTRES|NodeList|Comment")
TRES = "billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2"


def _line(job: str, name: str, user: str, uid: int, state: str, times: tuple[str, str, str, str], elapsed: str,
          limit: str, nodes: str) -> str:
    submit, eligible, start, end = (f"2026-12-01T{t}:00" for t in times)
    return (f"{job}|{job}|{name}|{user}|{uid}|{user}|research|gpu|normal|{state}|0:0|{submit}|{eligible}|{start}|"
            f"{end}|{elapsed}|{limit}|2|192|{TRES}|{TRES}|{nodes}|")


#: A nightly `sacct -a -P -D` dump of 2026-12-01 (UTC), 16-GPU jobs on 2 nodes each:
#: 9500 -> 9501 a dependency chain (9501 submitted 00:01, eligible at 9500's TIMEOUT 12:10);
#: 9600 / 9601 the same name side by side; 9700 submitted 02:00 with --begin=06:00.
DUMP = "\n".join([
    HEADER,
    _line("9500", "llm-13b", "kim", 1010, "TIMEOUT", ("00:00", "00:00", "00:10", "12:10"), "12:00:00", "12:00:00",
          "gpu[001-002]"),
    _line("9501", "llm-13b", "kim", 1010, "COMPLETED", ("00:01", "12:10", "12:20", "20:20"), "08:00:00", "12:00:00",
          "gpu[001-002]"),
    _line("9600", "sweep-a", "lee", 1011, "TIMEOUT", ("01:00", "01:00", "01:00", "05:00"), "04:00:00", "04:00:00",
          "gpu[003-004]"),
    _line("9601", "sweep-a", "lee", 1011, "TIMEOUT", ("01:05", "01:05", "01:30", "05:30"), "04:00:00", "04:00:00",
          "gpu[005-006]"),
    _line("9700", "eval-big", "max", 1012, "COMPLETED", ("02:00", "06:00", "06:30", "10:30"), "04:00:00", "08:00:00",
          "gpu[007-008]"),
]) + "\n"
CLUSTER = """cluster: tiny
timezone: UTC
nodes: "gpu[001-008]"
gpus_per_node: 8
reliability:
  checkpoint: {interval_s: 3600, restart_overhead_s: 300, write_s: 0}
"""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run_chains")
    wh = run_hand_landing(root, {"sacct/sacct_2026-12-01.psv": DUMP, "cluster.yaml": CLUSTER})
    return wh.with_name("gpusre.snapshot.duckdb")


def test_pipeline_ettr_runs_from_a_hand_written_dump(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = {r[0]: r[1:] for r in con.sql(
            "SELECT run_id, job_ids, wallclock_s, queue_s, productive_s, ettr, ettr_excl_queue "
            "FROM marts.ettr_runs ORDER BY run_id").fetchall()}
    finally:
        con.close()
    assert set(rows) == {"9500", "9600", "9601", "9700"}
    assert rows["9500"][:4] == (["9500", "9501"], 73200, 1200, pytest.approx(72000))
    assert rows["9500"][4:] == (pytest.approx(72000 / 73200), pytest.approx(1.0))
    assert rows["9601"][1:3] == (15900, 1500) and rows["9601"][4] == pytest.approx(14400 / 15900)
    assert rows["9700"][1:3] == (16200, 1800) and rows["9700"][4] == pytest.approx(14400 / 16200)


def test_pipeline_mart_and_slo_window_quote_the_same_percentiles(warehouse: Path) -> None:
    # ETTRs of the 9-64 bucket, sorted: 8/9, 48/53, 60/61, 1. p10 at rank 0.3, p90 at rank 2.7.
    e = sorted([8 / 9, 48 / 53, 60 / 61, 1.0])
    p10, p90 = e[0] + 0.3 * (e[1] - e[0]), e[2] + 0.7 * (e[3] - e[2])
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        mart = con.sql("SELECT runs, ettr_p10, ettr_p50, ettr_p90 FROM marts.ettr_by_size "
                       "WHERE gpus_bucket = '9-64'").fetchall()
        window = con.sql("SELECT runs, ettr_p10, ettr_p50, ettr_p90 FROM marts.ettr_window_by_size(?, ?) "
                         "WHERE size_bucket = '9-64'", params=[date(2026, 12, 1), date(2026, 12, 1)]).fetchall()
    finally:
        con.close()
    assert mart[0][0] == window[0][0] == 4
    assert mart[0][1:] == (pytest.approx(p10), pytest.approx((e[1] + e[2]) / 2), pytest.approx(p90))
    assert window[0][1:] == pytest.approx(mart[0][1:], abs=1e-12)


def test_a_bucket_whose_node_counts_are_unknown_has_no_expected_ettr() -> None:
    """A dump without NNodes (and no node list) leaves runs' node counts unknown: the expectation needs
    the node count, so it is NULL for that bucket — the roll-up crashed on it (outside probe M)."""
    runs = _mart_rows([(16, 0.9), (8, 0.8)]).with_columns(
        pl.when(pl.col("n_gpus") == 16).then(None).otherwise(pl.col("n_nodes")).alias("n_nodes"))
    mart = {r["gpus_bucket"]: r for r in ettr_by_size(runs, 0.002).iter_rows(named=True)}
    assert mart["9-64"]["n_nodes_median"] is None and mart["9-64"]["expected_ettr"] is None
    assert mart["2-8"]["expected_ettr"] == pytest.approx(
        expected_ettr(1, 0.002, 3600, 300))
