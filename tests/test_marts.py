"""Job-trend marts and findings on a real DuckDB file with a small hand-made core.jobs.

Main data set (UTC; D1 = 2026-09-01, D2 = 2026-09-02, both in ISO week 2026-W36):

| job | state     | GPUs | start     | end       | hours | GPU-h | end day | wait  | user  | acct |
|-----|-----------|------|-----------|-----------|-------|-------|---------|-------|-------|------|
| j1  | COMPLETED | 1    | D1 00:00  | D1 02:00  | 2     | 2     | D1      | 10 m  | alice | A    |
| j2  | FAILED    | 4    | D1 10:00  | D1 11:00  | 1     | 4     | D1      | 0     | bob   | A    |
| j3  | CANCELLED | 128  | D1 20:00  | D2 04:00  | 8     | 1024  | D2      | 60 m  | carol | B    |
| j4  | CANCELLED | 8    | D2 06:00  | D2 09:00  | 3     | 24    | D2      | 30 m  | alice | A    |
| j5  | COMPLETED | 16   | D2 12:00  | D2 12:30  | 0.5   | 8     | D2      | 120 m | bob   | B    |
| j6  | COMPLETED | 0    | D1 00:00  | D1 10:00  | CPU only: excluded everywhere             |
| j7  | RUNNING   | 2    | D2 20:00  | -         | as_of D2 23:00: 6 GPU-h in D2 utilization |
| j8  | PENDING   | 8    | -         | -         | never started: excluded everywhere        |

Terminal GPU total = 2 + 4 + 1024 + 24 + 8 = 1062 GPU-h over 5 jobs.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import duckdb
import pytest

from gpusre.models.accounting_span import MAX_GAP_MINUTES
from gpusre.models.job_mix.findings import compute_findings, write_findings
from gpusre.models.marts_runner import (
    DAILY_MARTS,
    ROLLUP_MARTS,
    mart_sql,
    run_daily_marts,
    run_mart_sql,
    run_rollup_marts,
)
from gpusre.models.job_mix.trends import write_size_share_trend
from gpusre.models.warehouse import apply_ddl

UTC = timezone.utc
D1, D2 = date(2026, 9, 1), date(2026, 9, 2)
AS_OF = datetime(2026, 9, 2, 23, 0, tzinfo=UTC)
CAPACITY = 160  # GPUs -> 3840 GPU-h per day
TOTAL = 1062.0


def ts(day: date, hour: float) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour)


def add_job(con: duckdb.DuckDBPyConnection, job_id: str, state: str, n_gpus: int,
            start: datetime | None, end: datetime | None, wait_min: float | None = None,
            user: str | None = None, account: str | None = None) -> None:
    """Insert a core.jobs row; derived columns are filled the way core defines them."""
    submit = start - timedelta(minutes=wait_min) if start is not None and wait_min is not None else None
    con.execute(
        """INSERT INTO core.jobs (job_id, "user", account, state, submit_ts, start_ts, end_ts,
                                  elapsed_s, queue_wait_s, n_gpus, size_bucket, gpu_hours,
                                  restarts, end_day, source_file, line_no)
           SELECT $id, $user, $acct, $state, $submit::TIMESTAMPTZ, $start::TIMESTAMPTZ,
                  $end::TIMESTAMPTZ, e, w, $g, core.size_bucket($g), $g * e / 3600.0, 0,
                  CAST(timezone('UTC', $end::TIMESTAMPTZ) AS DATE), 'test.psv', 1
           FROM (SELECT epoch($end::TIMESTAMPTZ - $start::TIMESTAMPTZ)::BIGINT AS e,
                        epoch($start::TIMESTAMPTZ - $submit::TIMESTAMPTZ)::BIGINT AS w)""",
        {"id": job_id, "user": user, "acct": account, "state": state, "submit": submit,
         "start": start, "end": end, "g": n_gpus},
    )
    if start is not None:
        # Its single started instance (utilization counts instances, so requeues are included).
        con.execute(
            """INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, end_ts,
                                               elapsed_s, n_gpus, source_file, line_no)
               SELECT job_id, 1, true, state, start_ts, end_ts, elapsed_s, n_gpus, source_file, line_no
               FROM core.jobs WHERE job_id = $id""",
            {"id": job_id},
        )


@pytest.fixture
def con(tmp_path):
    c = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    apply_ddl(c)  # the vocabulary macros, then sql/ddl/*.sql
    yield c
    c.close()


@pytest.fixture
def jobs(con):
    add_job(con, "j1", "COMPLETED", 1, ts(D1, 0), ts(D1, 2), 10, "alice", "A")
    add_job(con, "j2", "FAILED", 4, ts(D1, 10), ts(D1, 11), 0, "bob", "A")
    add_job(con, "j3", "CANCELLED", 128, ts(D1, 20), ts(D2, 4), 60, "carol", "B")
    add_job(con, "j4", "CANCELLED", 8, ts(D2, 6), ts(D2, 9), 30, "alice", "A")
    add_job(con, "j5", "COMPLETED", 16, ts(D2, 12), ts(D2, 12.5), 120, "bob", "B")
    add_job(con, "j6", "COMPLETED", 0, ts(D1, 0), ts(D1, 10), 1, "dave", "C")
    add_job(con, "j7", "RUNNING", 2, ts(D2, 20), None, 5, "erin", "C")
    add_job(con, "j8", "PENDING", 8, None, None, None, "frank", "C")
    return con


def build(con: duckdb.DuckDBPyConnection, days=(D1, D2)) -> None:
    for d in days:
        run_daily_marts(con, d, CAPACITY, AS_OF)
    run_rollup_marts(con)


def rows(con, q: str) -> list[tuple]:
    return con.sql(q).fetchall()


def test_every_listed_mart_has_a_sql_file_with_a_header():
    for name in DAILY_MARTS + ROLLUP_MARTS + ("size_share_trend", "findings"):
        assert mart_sql(name).startswith(f"-- marts.{name}:")
    with pytest.raises(ValueError):
        mart_sql("../ddl/020_core")


def test_job_usage_daily_per_end_day(jobs):
    build(jobs)
    got = rows(jobs, "SELECT day, state, size_bucket, bucket_order, jobs, gpu_hours "
                     "FROM marts.job_usage_daily ORDER BY day, bucket_order, state")
    assert got == [
        (D1, "COMPLETED", "1", 1, 1, 2.0),
        (D1, "FAILED", "2-8", 2, 1, 4.0),
        (D2, "CANCELLED", "2-8", 2, 1, 24.0),
        (D2, "COMPLETED", "9-64", 3, 1, 8.0),
        (D2, "CANCELLED", "65-256", 4, 1, 1024.0),  # j3 belongs to its end day only
    ]


def test_daily_partition_rerun_is_idempotent_and_touches_one_day(jobs):
    build(jobs)
    q_usage = "SELECT * FROM marts.job_usage_daily ORDER BY ALL"
    q_util = "SELECT * FROM marts.utilization_daily ORDER BY ALL"
    before = rows(jobs, q_usage), rows(jobs, q_util)
    run_daily_marts(jobs, D2, CAPACITY, AS_OF)
    run_daily_marts(jobs, D2, CAPACITY, AS_OF)
    assert (rows(jobs, q_usage), rows(jobs, q_util)) == before

    # j5 disappears from core: rerunning D2 drops its row, D1 is untouched
    jobs.execute("DELETE FROM core.jobs WHERE job_id = 'j5'")
    jobs.execute("DELETE FROM core.job_instances WHERE job_id = 'j5'")
    run_mart_sql(jobs, "job_usage_daily", {"day": D2})
    assert rows(jobs, "SELECT day, count(*), sum(gpu_hours) FROM marts.job_usage_daily "
                      "GROUP BY day ORDER BY day") == [(D1, 2, 6.0), (D2, 2, 1048.0)]


def test_job_usage_daily_earlier_runs_by_utc_end_day_at_midnight(jobs):
    """An earlier run (requeued) counts on its UTC end day, whatever the session's time zone: one ending at
    23:59:59.999999 on D1, one at 00:00 of D2 exactly (the SQL filters end_ts as a range of the UTC day)."""
    jobs.execute("SET TimeZone = 'America/Chicago'")  # local D1 ends at 05:00 UTC of D2
    for job_id, no, end in (("j1", 0, ts(D2, 0) - timedelta(microseconds=1)), ("j2", 0, ts(D2, 0))):
        jobs.execute("""INSERT INTO core.job_instances (job_id, instance_no, is_latest, state, start_ts, end_ts,
                                                        elapsed_s, n_gpus, source_file, line_no)
                        VALUES (?, ?, false, 'NODE_FAIL', ?::TIMESTAMPTZ - INTERVAL 1 HOUR, ?, 3600, 2, 'test.psv', 2)""",
                     [job_id, no, end, end])
    for d in (D1, D2):
        run_mart_sql(jobs, "job_usage_daily", {"day": d})
    assert rows(jobs, "SELECT day, jobs, runs, gpu_hours FROM marts.job_usage_daily "
                      "WHERE state = 'NODE_FAIL' ORDER BY day") == [(D1, 0, 1, 2.0), (D2, 0, 1, 2.0)]


def test_utilization_splits_a_job_across_midnight(jobs):
    build(jobs)
    got = rows(jobs, "SELECT day, capacity_gpu_hours, allocated_gpu_hours, utilization, jobs_running "
                     "FROM marts.utilization_daily ORDER BY day")
    # D1: j1 1x2 + j2 4x1 + j3 128x4 (20:00-24:00) = 518; j6 is CPU only, j8 never started
    # D2: j3 128x4 (00:00-04:00) + j4 8x3 + j5 16x0.5 + j7 2x3 (20:00 to as_of 23:00) = 550
    assert got == [
        (D1, 3840.0, 518.0, pytest.approx(518 / 3840), 3),
        (D2, 3840.0, 550.0, pytest.approx(550 / 3840), 4),
    ]


def test_utilization_independent_of_session_timezone(jobs):
    jobs.execute("SET TimeZone = 'America/Los_Angeles'")
    run_daily_marts(jobs, D1, CAPACITY, datetime(2026, 9, 2, 23, 0))  # naive as_of = UTC
    assert rows(jobs, "SELECT allocated_gpu_hours FROM marts.utilization_daily") == [(518.0,)]


def test_utilization_running_job_without_as_of_is_left_out(jobs):
    run_mart_sql(jobs, "utilization_daily", {"day": D2, "capacity_gpus": CAPACITY, "as_of": None,
                                             "max_gap_minutes": MAX_GAP_MINUTES, "acct_from": None})
    assert rows(jobs, "SELECT allocated_gpu_hours, jobs_running FROM marts.utilization_daily") == [
        (544.0, 3)
    ]


def test_gpu_time_by_state(jobs):
    build(jobs)
    got = rows(jobs, "SELECT state, jobs, gpu_hours, share_jobs, share_gpu_hours "
                     "FROM marts.gpu_time_by_state WHERE period_type = 'all' ORDER BY state")
    assert got == [
        ("CANCELLED", 2, 1048.0, pytest.approx(2 / 5), pytest.approx(1048 / TOTAL)),
        ("COMPLETED", 2, 10.0, pytest.approx(2 / 5), pytest.approx(10 / TOTAL)),
        ("FAILED", 1, 4.0, pytest.approx(1 / 5), pytest.approx(4 / TOTAL)),
    ]
    # both days are in the same month and ISO week, so those periods equal 'all'
    assert rows(jobs, "SELECT DISTINCT period_type, period FROM marts.gpu_time_by_state "
                      "ORDER BY ALL") == [("all", "all"), ("month", "2026-09"), ("week", "2026-W36")]


def test_size_buckets(jobs):
    build(jobs)
    got = rows(jobs, "SELECT size_bucket, bucket_order, jobs, gpu_hours, share_jobs, share_gpu_hours "
                     "FROM marts.size_buckets WHERE period_type = 'all' ORDER BY bucket_order")
    assert got == [
        ("1", 1, 1, 2.0, pytest.approx(0.2), pytest.approx(2 / TOTAL)),
        ("2-8", 2, 2, 28.0, pytest.approx(0.4), pytest.approx(28 / TOTAL)),
        ("9-64", 3, 1, 8.0, pytest.approx(0.2), pytest.approx(8 / TOTAL)),
        ("65-256", 4, 1, 1024.0, pytest.approx(0.2), pytest.approx(1024 / TOTAL)),
    ]


def test_periods_split_and_shares_sum_to_one(jobs):
    # j9 ends Monday 2026-10-05: month 2026-10, ISO week 2026-W41 (Monday of W36 is Aug 31)
    add_job(jobs, "j9", "COMPLETED", 2, ts(date(2026, 10, 5), 10), ts(date(2026, 10, 5), 13), 0, "bob", "A")
    build(jobs, days=(D1, D2, date(2026, 10, 5)))
    for mart in ("gpu_time_by_state", "size_buckets"):
        sums = rows(jobs, f"SELECT period_type, period, sum(share_jobs), sum(share_gpu_hours) "
                          f"FROM marts.{mart} GROUP BY ALL ORDER BY ALL")
        assert [(t, p) for t, p, _, _ in sums] == [
            ("all", "all"), ("month", "2026-09"), ("month", "2026-10"),
            ("week", "2026-W36"), ("week", "2026-W41"),
        ]
        for _, _, sj, sg in sums:
            assert sj == pytest.approx(1.0) and sg == pytest.approx(1.0)
    assert rows(jobs, "SELECT period, state, jobs, gpu_hours, share_gpu_hours FROM marts.gpu_time_by_state "
                      "WHERE state = 'COMPLETED' ORDER BY period_type, period") == [
        ("all", "COMPLETED", 3, 16.0, pytest.approx(16 / 1068)),
        ("2026-09", "COMPLETED", 2, 10.0, pytest.approx(10 / TOTAL)),
        ("2026-10", "COMPLETED", 1, 6.0, 1.0),
        ("2026-W36", "COMPLETED", 2, 10.0, pytest.approx(10 / TOTAL)),
        ("2026-W41", "COMPLETED", 1, 6.0, 1.0),
    ]


def test_runtime_quantiles(jobs):
    build(jobs)
    got = {r[0]: r[1:] for r in rows(jobs, "SELECT size_bucket, bucket_order, jobs, p50_h, p90_h, "
                                           "p99_h, max_h, mean_h FROM marts.runtime_quantiles")}
    # all runtimes sorted: 0.5, 1, 2, 3, 8 h; quantile_cont position = (n - 1) * q
    #   p90: pos 3.6 -> 3 + 0.6 * (8 - 3) = 6.0;  p99: pos 3.96 -> 3 + 0.96 * 5 = 7.8
    assert got["all"] == (99, 5, 2.0, pytest.approx(6.0), pytest.approx(7.8), 8.0, pytest.approx(2.9))
    # '2-8': 1 h (j2) and 3 h (j4): p90 = 1 + 0.9 * 2, p99 = 1 + 0.99 * 2
    assert got["2-8"] == (2, 2, 2.0, pytest.approx(2.8), pytest.approx(2.98), 3.0, 2.0)
    assert got["1"] == (1, 1, 2.0, 2.0, 2.0, 2.0, 2.0)
    assert got["9-64"] == (3, 1, 0.5, 0.5, 0.5, 0.5, 0.5)
    assert got["65-256"] == (4, 1, 8.0, 8.0, 8.0, 8.0, 8.0)
    assert set(got) == {"all", "1", "2-8", "9-64", "65-256"}


def test_queue_wait_quantiles_include_running_jobs(jobs):
    build(jobs)
    got = {r[0]: r[1:] for r in rows(jobs, "SELECT size_bucket, jobs, p50_min, p90_min, p99_min, "
                                           "max_min, mean_min FROM marts.queue_wait_quantiles")}
    # started GPU jobs j1..j5 and j7: waits 0, 5, 10, 30, 60, 120 min
    #   p50: pos 2.5 -> 10 + 0.5 * 20 = 20;  p90: pos 4.5 -> 60 + 0.5 * 60 = 90
    #   p99: pos 4.95 -> 60 + 0.95 * 60 = 117;  mean 225 / 6 = 37.5
    assert got["all"] == (6, pytest.approx(20.0), pytest.approx(90.0), pytest.approx(117.0),
                          120.0, pytest.approx(37.5))
    # '2-8': j2 0, j7 5, j4 30 -> p50 5, p90 pos 1.8 -> 5 + 0.8 * 25 = 25
    assert got["2-8"][:3] == (3, pytest.approx(5.0), pytest.approx(25.0))
    assert got["2-8"][5] == pytest.approx(35 / 3)


def test_top_consumers(jobs):
    build(jobs)
    got = rows(jobs, "SELECT kind, rank, name, jobs, gpu_hours, share_gpu_hours "
                     "FROM marts.top_consumers ORDER BY kind, rank")
    # dave (CPU only), erin (running), frank (pending) and account C must not appear
    assert got == [
        ("account", 1, "B", 2, 1032.0, pytest.approx(1032 / TOTAL)),
        ("account", 2, "A", 3, 30.0, pytest.approx(30 / TOTAL)),
        ("user", 1, "carol", 1, 1024.0, pytest.approx(1024 / TOTAL)),
        ("user", 2, "alice", 2, 26.0, pytest.approx(26 / TOTAL)),
        ("user", 3, "bob", 2, 12.0, pytest.approx(12 / TOTAL)),
    ]


def test_top_consumers_keeps_top_20_with_share_of_all(con):
    # user u01..u22 runs one 1-GPU job of k hours (k = 1..22): total 22 * 23 / 2 = 253 GPU-h
    for k in range(1, 23):
        add_job(con, f"u{k}", "COMPLETED", 1, ts(D1, 0), ts(D1, k), 0, f"u{k:02d}", "A")
    run_daily_marts(con, D1, CAPACITY, AS_OF)
    run_rollup_marts(con)
    users = rows(con, "SELECT rank, name, gpu_hours, share_gpu_hours FROM marts.top_consumers "
                      "WHERE kind = 'user' ORDER BY rank")
    assert len(users) == 20
    assert users[0] == (1, "u22", 22.0, pytest.approx(22 / 253))
    assert users[-1] == (20, "u03", 3.0, pytest.approx(3 / 253))
    assert rows(con, "SELECT rank, name, jobs, share_gpu_hours FROM marts.top_consumers "
                     "WHERE kind = 'account'") == [(1, "A", 22, 1.0)]


# ---------------------------------------------------------------- findings (marts.findings)


def test_findings_from_the_main_data_set(jobs):
    build(jobs)
    write_size_share_trend(jobs)
    assert write_findings(jobs) == 4
    f = {r[0]: r[1:] for r in rows(jobs, "SELECT finding_id, title, statement, metric, value, supported "
                                         "FROM marts.findings ORDER BY finding_id")}
    # (1) cancelled 1048 / 1062 = 98.68 %; failed 4 / 1062 = 0.377 %
    _, stmt, metric, value, supported = f[1]
    assert stmt == "Cancelled runs hold 98.7 % of GPU time; failed runs hold 0.4 %."
    assert metric == "cancelled_share_gpu_hours" and value == pytest.approx(1048 / TOTAL) and supported
    # (2) <= 8 GPUs: j1, j2, j4 = 3 / 5 jobs, 30 / 1062 = 2.82 %; >= 65: j3 = 1 / 5, 1024 / 1062 = 96.42 %
    _, stmt, _, value, supported = f[2]
    assert stmt == ("Small jobs (<= 8 GPUs) are 60.0 % of jobs but use 2.8 % of GPU time; "
                    "large jobs (>= 65 GPUs) are 20.0 % of jobs but use 96.4 % of GPU time.")
    assert value == pytest.approx(1024 / TOTAL) and supported
    # (3) median of 0.5, 1, 2, 3, 8 h = 2 h; largest bucket 65-256 (j3 only): p99 = 8 h = 4 x median;
    #     a 2 h median is not "short" (< 1 h), so not supported
    _, stmt, _, value, supported = f[3]
    assert stmt == ("Half of all 5 GPU jobs ran for at most 2.0 h (median); in the largest size "
                    "class used (65-256 GPUs, 1 job) the 99th-percentile runtime is 8.0 h, "
                    "4.0 times the median.")
    assert value == pytest.approx(4.0) and supported is False
    # (4) 2 days of data: September (2/30 days) and W36 (2/7 days) are partial -> nothing to test
    _, stmt, _, value, supported = f[4]
    assert stmt.startswith("Not enough full months or weeks") and value is None and supported is None
    # rerun replaces
    write_findings(jobs)
    assert rows(jobs, "SELECT count(*) FROM marts.findings") == [(4,)]


def test_findings_unsupported_state_claim_and_trend_statements(con):
    run_mart_sql(con, "job_usage_daily", {"day": D1})
    run_rollup_marts(con)
    con.execute("""INSERT INTO marts.gpu_time_by_state VALUES
        ('all', 'all', 'COMPLETED', 6, 6, 60.0, 0.6, 0.6),
        ('all', 'all', 'CANCELLED', 3, 3, 30.0, 0.3, 0.3),
        ('all', 'all', 'TIMEOUT', 1, 1, 10.0, 0.1, 0.1)""")
    run_mart_sql(con, "size_share_trend")
    con.execute("""INSERT INTO marts.size_share_trend VALUES
        ('month', '65-256', 4, 3, 0.1, 0.2, 0.05, -0.2, 0.3, 0.30, 0.3, 0.5, 'no significant trend'),
        ('week', '1', 1, 13, 0.6, 0.4, -0.005, -0.008, -0.002, 0.004, -0.6, 0.01, 'falling'),
        ('week', '9-64', 3, 13, 0.2, 0.2, 0.0, -0.01, 0.01, 0.9, 0.0, 1.0, 'no significant trend')""")
    f = compute_findings(con)
    one, four = f.row(0, named=True), f.row(3, named=True)
    # failed = the vocabulary's FAILED_STATES: TIMEOUT 10 %; COMPLETED is the largest state
    assert one["statement"] == ("Cancelled runs hold 30.0 % of GPU time; failed runs hold 10.0 %. "
                                "The largest state by GPU time is COMPLETED (60.0 %).")
    assert one["supported"] is False
    # most significant: weekly bucket '1', -0.5 pp/week x (365.25 / 12 / 7) weeks/month = -2.17 pp/month
    assert four["statement"] == ("The share of GPU time in jobs of 1 GPU is falling by 2.2 percentage "
                                 "points per month (weekly OLS with HAC errors, p = 0.004; smallest p "
                                 "of 3 series tested).")
    assert four["value"] == pytest.approx(-0.5 * 365.25 / 84) and four["supported"] is True

    con.execute("DELETE FROM marts.size_share_trend WHERE granularity = 'week'")
    four = compute_findings(con).row(3, named=True)
    assert four["statement"] == ("No significant shift in GPU-time share between size classes: the "
                                 "strongest trend (65-256 GPUs) is +5.0 percentage points per month "
                                 "(monthly OLS with HAC errors, p = 0.300; smallest p of 1 series tested).")
    assert four["supported"] is False and four["value"] == pytest.approx(5.0)


def test_findings_short_median_long_tail_supported(con):
    # 9 one-GPU jobs of 0.5 h and one 128-GPU job of 20 h, all ending D1
    for k in range(9):
        add_job(con, f"s{k}", "COMPLETED", 1, ts(D1, k), ts(D1, k + 0.5), 0, "u", "A")
    add_job(con, "big", "COMPLETED", 128, ts(D1, 1), ts(D1, 21), 0, "u", "A")
    run_daily_marts(con, D1, CAPACITY, AS_OF)
    run_rollup_marts(con)
    three = compute_findings(con).row(2, named=True)
    # median of ten runtimes (nine 0.5 h, one 20 h) = 0.5 h = 30 min; 65-256 p99 = 20 h = 40 x median
    assert three["statement"] == ("Half of all 10 GPU jobs ran for at most 30 min (median); in the "
                                  "largest size class used (65-256 GPUs, 1 job) the 99th-percentile "
                                  "runtime is 20.0 h, 40.0 times the median.")
    assert three["supported"] is True and three["value"] == pytest.approx(40.0)


def test_missing_parameter_is_an_error_and_extra_ones_are_ignored(con):
    with pytest.raises(duckdb.Error):
        run_mart_sql(con, "job_usage_daily", {"days": D1})
    run_mart_sql(con, "job_usage_daily", {"day": D1, "capacity_gpus": 8})
    assert rows(con, "SELECT count(*) FROM marts.job_usage_daily") == [(0,)]
