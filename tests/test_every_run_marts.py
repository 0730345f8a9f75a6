"""Every mart that counts GPU time counts every run, and a job that never started is no run.

A small hand-written landing (one `sacct -a -P -D` dump as the nightly export writes it, no node logs)
goes through the whole pipeline (``run_pipeline``); the expected values below were worked out by hand
from the README's definitions. Cluster: gpu[001-004], 8 GPUs each; checkpoint every 3600 s, no restart
overhead, so a run the infrastructure killed after more than an hour lost half an interval: GPUs x 0.5 h.

All on 2026-12-01 (UTC):

| job | user  | account  | GPUs | run                                  | hours | GPU-h | state                       |
|-----|-------|----------|------|--------------------------------------|-------|-------|-----------------------------|
| 100 | bob   | vision   | 16   | 1st 00:00-04:00 (Slurm requeued it)  | 4     | 64    | NODE_FAIL (earlier run)     |
| 100 | bob   | vision   | 16   | 2nd 04:30-10:30                      | 6     | 96    | COMPLETED (final)           |
| 200 | alice | llm      | 8    | 01:00-11:00                          | 10    | 80    | COMPLETED                   |
| 300 | carol | llm      | 8    | 02:00-07:00, exit 1                  | 5     | 40    | FAILED (unknown: no logs)   |
| 400 | alice | llm      | 8    | 11:00-13:00                          | 2     | 16    | CANCELLED by alice          |
| 500 | dave  | research | (8)  | never started: cancelled pending     | -     | -     | CANCELLED by dave, no run   |
| 600 | erin  | vision   | 8    | 1st 13:00-14:00 (preempted, requeued)| 1     | 8     | PREEMPTED (earlier run)     |
| 600 | erin  | vision   | 8    | 2nd 14:30-16:30                      | 2     | 16    | COMPLETED (final)           |
| 700 | frank | research | 8    | 12:00-15:00, no evidence in any log  | 3     | 24    | NODE_FAIL (infrastructure)  |

GPU jobs 100, 200, 300, 400, 600, 700 = 6 (500 never ran: no job, no run); runs 6 + 2 earlier = 8;
GPU-hours 64 + 96 + 80 + 40 + 16 + 8 + 16 + 24 = 344.
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest
from hand_landing import run_hand_landing

from gpusre.reports.nightly import render_nightly_report

HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|ReqTRES|NodeList|Comment")
DUMP = "\n".join([
    HEADER,
    # job 100: requeued after a node failure (sacct -D lists both runs under one JobID)
    "100|100|vit|bob|1002|bob|vision|gpu|normal|NODE_FAIL|0:0|2026-11-30T23:50:00|2026-11-30T23:50:00|"
    "2026-12-01T00:00:00|2026-12-01T04:00:00|04:00:00|1-00:00:00|2|192|billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2|"
    "billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2|gpu[001-002]|",
    "100|100|vit|bob|1002|bob|vision|gpu|normal|COMPLETED|0:0|2026-12-01T04:00:00|2026-12-01T04:00:00|"
    "2026-12-01T04:30:00|2026-12-01T10:30:00|06:00:00|1-00:00:00|2|192|billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2|"
    "billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2|gpu[001-002]|",
    "100.batch|100.batch|batch||||vision|||COMPLETED|0:0|2026-12-01T04:30:00|2026-12-01T04:30:00|2026-12-01T04:30:00|"
    "2026-12-01T10:30:00|06:00:00||1|96|cpu=96,gres/gpu=8,mem=1000G,node=1||gpu001|",
    "100.extern|100.extern|extern||||vision|||COMPLETED|0:0|2026-12-01T04:30:00|2026-12-01T04:30:00|2026-12-01T04:30:00|"
    "2026-12-01T10:30:00|06:00:00||2|192|billing=192,cpu=192,gres/gpu=16,mem=2000G,node=2||gpu[001-002]|",
    "200|200|sft|alice|1001|alice|llm|gpu|normal|COMPLETED|0:0|2026-12-01T01:00:00|2026-12-01T01:00:00|"
    "2026-12-01T01:00:00|2026-12-01T11:00:00|10:00:00|1-00:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu003|",
    "200.batch|200.batch|batch||||llm|||COMPLETED|0:0|2026-12-01T01:00:00|2026-12-01T01:00:00|2026-12-01T01:00:00|"
    "2026-12-01T11:00:00|10:00:00||1|96|cpu=96,gres/gpu=8,mem=1000G,node=1||gpu003|",
    "300|300|dpo|carol|1003|carol|llm|gpu|normal|FAILED|1:0|2026-12-01T02:00:00|2026-12-01T02:00:00|"
    "2026-12-01T02:00:00|2026-12-01T07:00:00|05:00:00|1-00:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu004|",
    "300.batch|300.batch|batch||||llm|||FAILED|1:0|2026-12-01T02:00:00|2026-12-01T02:00:00|2026-12-01T02:00:00|"
    "2026-12-01T07:00:00|05:00:00||1|96|cpu=96,gres/gpu=8,mem=1000G,node=1||gpu004|",
    "400|400|eval|alice|1001|alice|llm|gpu|normal|CANCELLED by 1001|0:0|2026-12-01T11:00:00|2026-12-01T11:00:00|"
    "2026-12-01T11:00:00|2026-12-01T13:00:00|02:00:00|04:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu003|",
    # job 500: cancelled while pending — Start Unknown, no nodes, its 8 GPUs only requested
    "500|500|never|dave|1004|dave|research|gpu|normal|CANCELLED by 1004|0:0|2026-12-01T10:00:00|2026-12-01T10:00:00|"
    "Unknown|2026-12-01T12:00:00|00:00:00|04:00:00|1|96||billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|None assigned|",
    # job 600: preempted and requeued under the same JobID
    "600|600|sweep|erin|1005|erin|vision|gpu|normal|PREEMPTED|0:15|2026-12-01T12:55:00|2026-12-01T12:55:00|"
    "2026-12-01T13:00:00|2026-12-01T14:00:00|01:00:00|04:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu004|",
    "600|600|sweep|erin|1005|erin|vision|gpu|normal|COMPLETED|0:0|2026-12-01T14:00:00|2026-12-01T14:00:00|"
    "2026-12-01T14:30:00|2026-12-01T16:30:00|02:00:00|04:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu004|",
    "700|700|train|frank|1006|frank|research|gpu|normal|NODE_FAIL|0:0|2026-12-01T12:00:00|2026-12-01T12:00:00|"
    "2026-12-01T12:00:00|2026-12-01T15:00:00|03:00:00|1-00:00:00|1|96|billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|"
    "billing=96,cpu=96,gres/gpu=8,mem=1000G,node=1|gpu001|",
]) + "\n"
CLUSTER = """cluster: tiny
timezone: UTC
nodes: "gpu[001-004]"
gpus_per_node: 8
reliability:
  checkpoint: {interval_s: 3600, restart_overhead_s: 0, write_s: 0}
  min_failures: 1
"""
DAY = date(2026, 12, 1)
TOTAL = 344.0


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("every_run")
    wh = run_hand_landing(root, {"sacct/sacct_2026-12-01.psv": DUMP, "cluster.yaml": CLUSTER})
    # The nightly of the one day, rendered from a copy (rendering may write; the run's snapshot stays as it was).
    copy = root / "copy.duckdb"
    shutil.copy(wh.with_name("gpusre.snapshot.duckdb"), copy)
    con = duckdb.connect(str(copy))
    try:
        render_nightly_report(con, root / "nightly", report_date=DAY)
    finally:
        con.close()
    return wh.with_name("gpusre.snapshot.duckdb")


@pytest.fixture
def con(warehouse: Path):
    c = duckdb.connect(str(warehouse), read_only=True)
    yield c
    c.close()


def _nightly(warehouse: Path) -> str:
    return (warehouse.parent.parent / "nightly" / "nightly-2026-12-01.md").read_text()


def test_job_totals_count_every_run_but_no_run_that_never_started(con) -> None:
    # 6 GPU jobs (not 500), 8 runs (+ 100's NODE_FAIL run, + 600's PREEMPTED run), 344 GPU-h.
    # Failed: jobs 300 and 700; runs those + 100's NODE_FAIL run: 40 + 24 + 64 = 128 GPU-h.
    assert con.sql("SELECT gpu_jobs, gpu_runs, gpu_hours, failed_jobs, failed_runs, failed_gpu_hours "
                   "FROM marts.job_totals WHERE scope = 'all'").fetchall() == [(6, 8, TOTAL, 2, 3, 128.0)]
    # CANCELLED holds job 400 only: 500 was cancelled before it ran.
    assert con.sql("SELECT state, jobs, runs, gpu_hours FROM marts.gpu_time_by_state WHERE period_type = 'all' "
                   "ORDER BY state").fetchall() == [
        ("CANCELLED", 1, 1, 16.0), ("COMPLETED", 3, 3, 192.0), ("FAILED", 1, 1, 40.0),
        ("NODE_FAIL", 1, 2, 88.0), ("PREEMPTED", 0, 1, 8.0)]


def test_top_consumers_count_every_run(con) -> None:
    """bob's job ran twice: 64 + 96 = 160 GPU-h, 160 / 344 of all; erin's 8 + 16 = 24 ties frank's 24
    (ranked by name). dave's job never ran: he is not listed. The users' GPU-hours sum to job_totals'."""
    users = con.sql("SELECT rank, name, jobs, runs, gpu_hours, share_gpu_hours FROM marts.top_consumers "
                    "WHERE kind = 'user' ORDER BY rank").fetchall()
    assert users == [
        (1, "bob", 1, 2, 160.0, pytest.approx(160 / TOTAL)),
        (2, "alice", 2, 2, 96.0, pytest.approx(96 / TOTAL)),
        (3, "carol", 1, 1, 40.0, pytest.approx(40 / TOTAL)),
        (4, "erin", 1, 2, 24.0, pytest.approx(24 / TOTAL)),
        (5, "frank", 1, 1, 24.0, pytest.approx(24 / TOTAL)),
    ]
    accounts = con.sql("SELECT name, jobs, runs, gpu_hours FROM marts.top_consumers WHERE kind = 'account' "
                       "ORDER BY rank").fetchall()
    assert accounts == [("vision", 2, 4, 184.0), ("llm", 3, 3, 136.0), ("research", 1, 1, 24.0)]
    total = con.sql("SELECT gpu_hours FROM marts.job_totals WHERE scope = 'all'").fetchall()[0][0]
    assert sum(u[4] for u in users) == pytest.approx(total)


def test_cluster_comparison_shares_are_gpu_time_by_state_shares(con) -> None:
    """Completed 192 / 344 (100's final run, 200, 600's final run), cancelled 16 / 344 (400), failed
    (FAILED + NODE_FAIL) 128 / 344; 600's PREEMPTED run (8) is in no class. Jobs: 3 completed, 1 cancelled,
    2 failed of 6. Runtimes of the jobs' final runs 2, 2, 3, 5, 6, 10 h: median 4 h."""
    row = con.sql("SELECT * FROM marts.cluster_comparison WHERE this_cluster").pl().row(0, named=True)
    assert row["gpu_jobs"] == 6
    assert (row["completed_share_jobs"], row["cancelled_share_jobs"], row["failed_share_jobs"]) == (
        pytest.approx(3 / 6), pytest.approx(1 / 6), pytest.approx(2 / 6))
    assert row["completed_share_gpu_time"] == pytest.approx(192 / TOTAL)
    assert row["cancelled_share_gpu_time"] == pytest.approx(16 / TOTAL)
    assert row["failed_share_gpu_time"] == pytest.approx(128 / TOTAL)
    assert row["med_run_time_s"] == 4 * 3600 and row["max_run_time_s"] == 10 * 3600
    # the same quantity, one value: gpu_time_by_state's shares summed over each class's states
    shares = dict(con.sql("SELECT state, share_gpu_hours FROM marts.gpu_time_by_state "
                          "WHERE period_type = 'all'").fetchall())
    assert row["completed_share_gpu_time"] == pytest.approx(shares["COMPLETED"], abs=1e-12)
    assert row["cancelled_share_gpu_time"] == pytest.approx(shares["CANCELLED"], abs=1e-12)
    assert row["failed_share_gpu_time"] == pytest.approx(shares["FAILED"] + shares["NODE_FAIL"], abs=1e-12)
    failed_share = con.sql("SELECT failed_share_gpu_hours FROM marts.job_totals WHERE scope = 'all'").fetchall()[0][0]
    assert row["failed_share_gpu_time"] == pytest.approx(failed_share, abs=1e-12)


def test_a_job_that_never_started_has_no_runtime(con) -> None:
    """Runtimes 2, 2, 3, 5, 6, 10 h (not a 0 h for job 500): p50 at position 2.5 = 3 + 0.5 x 2 = 4 h,
    mean 28 / 6 h. Bucket 2-8: 10, 5, 2, 2, 3 h (jobs 200, 300, 400, 600, 700); 9-64: job 100's 6 h."""
    got = {r[0]: r[1:] for r in con.sql("SELECT size_bucket, jobs, p50_h, max_h, mean_h "
                                        "FROM marts.runtime_quantiles").fetchall()}
    assert got == {"all": (6, 4.0, 10.0, pytest.approx(28 / 6)), "2-8": (5, 3.0, 10.0, 4.4),
                   "9-64": (1, 6.0, 6.0, 6.0)}
    # Nowhere a run: not in the job's states, runs or GPU-hours of any mart.
    assert con.sql("SELECT count(*) FROM core.jobs WHERE job_id = '500' AND start_ts IS NULL").fetchall() == [(1,)]
    assert con.sql("SELECT sum(jobs), sum(runs) FROM marts.job_usage_daily WHERE state = 'CANCELLED'").fetchall() == [
        (1, 1)]


def test_attribution_summary_counts_the_requeued_run_as_the_headline_does(con, warehouse: Path) -> None:
    """Infrastructure: job 700 (NODE_FAIL, no evidence) and job 100's first run (NODE_FAIL, requeued):
    8 x 0.5 + 16 x 0.5 = 12 GPU-h lost, 1 failed job, 2 runs. Unknown: job 300 (exit 1): the landing has no
    node logs, so nothing could have shown a fault on gpu004 (until 2026-12-05 it was the user's for lack of
    evidence that could not be seen). 600's PREEMPTED run was the scheduler's doing, no failure; 500 and 400
    were cancelled by their users."""
    rows = con.sql("SELECT scope, attribution, state, jobs, runs, lost_gpu_hours FROM marts.failure_attribution_summary "
                   "WHERE attribution <> '(all)' AND (scope = 'all' OR day = '2026-12-01') "
                   "ORDER BY scope, attribution, state").fetchall()
    assert rows == [
        ("all", "infrastructure", "(all)", 1, 2, 12.0), ("all", "infrastructure", "NODE_FAIL", 1, 2, 12.0),
        ("all", "unknown", "(all)", 1, 1, 0.0), ("all", "unknown", "FAILED", 1, 1, 0.0),
        ("day", "infrastructure", "(all)", 1, 2, 12.0), ("day", "infrastructure", "NODE_FAIL", 1, 2, 12.0),
        ("day", "unknown", "(all)", 1, 1, 0.0), ("day", "unknown", "FAILED", 1, 1, 0.0),
    ]
    # The summary's infrastructure runs are the two attribution marts' (the incidents and the taxonomy count both).
    marts = con.sql("""SELECT count(*), sum(lost_gpu_hours) FROM (
                           SELECT lost_gpu_hours FROM marts.job_failure_attribution WHERE attribution = 'infrastructure'
                           UNION ALL
                           SELECT lost_gpu_hours FROM marts.instance_failure_attribution
                           WHERE attribution = 'infrastructure')""").fetchall()
    assert marts == [(2, pytest.approx(12.0))]
    md = _nightly(warehouse)
    # The headline's card and "Why jobs failed" show the same figure.
    assert ("**Infra failures 2026-12-01:** 2 (12.0 GPU-h lost · 1 of 2 failed jobs + 1 requeued run · "
            "1 unknown: no node logs)") in md
    assert "1 was infrastructure + 1 requeued run (12.0 GPU-h lost), 0 user and 1 unknown; on 2026-12-01, of 2, " \
           "1 was infrastructure + 1 requeued run (12.0 GPU-h lost), 0 user and 1 unknown." in md
    assert "| Infrastructure | – | 1 | 1 | 50.0 % | 1 | 12.0 |" in md


def test_nightly_sections_quote_one_value_per_quantity(warehouse: Path) -> None:
    md = _nightly(warehouse)
    assert "**GPU jobs ended:** 6 (whole period)" in md and "**GPU-hours:** 344 (whole period)" in md
    # top users: bob's two runs
    assert "| 1 | bob | 1 | 160.0 | 46.5 % |" in md
    # published comparison: the state section's shares (completed 55.8 %, cancelled 4.7 %, failed 37.2 %)
    assert "| Completed, share of GPU time | 55.8 % |" in md
    assert "| Cancelled, share of GPU time | 4.7 % |" in md and "| Failed, share of GPU time | 37.2 % |" in md
    assert "| GPU jobs compared | 6 |" in md
