"""models/day_coverage.py: which UTC days the data covers fully, on a real DuckDB warehouse with raw rows by hand."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest

from gpusre.models.day_coverage import build_day_coverage, complete_days, loaded_file_days, mark_partial_days, named_day
from gpusre.models.warehouse import apply_ddl

UTC = timezone.utc


def _ts(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def con(tmp_path: Path):  # noqa: ANN201 - DuckDB connection
    # Bare DDL: raw.* are views over the typed lake.* tables, which the tests fill by hand.
    c = duckdb.connect(str(tmp_path / "w.duckdb"))
    c.execute("SET TimeZone = 'UTC'")
    apply_ddl(c)
    yield c
    c.close()


def _sacct(con: duckdb.DuckDBPyConnection, *record_times: datetime) -> None:
    for i, t in enumerate(record_times):
        con.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, end_ts) "
                    "VALUES ('s.psv', ?, 'allocation', ?, ?)", [i + 2, str(i), t])


def _syslog(con: duckdb.DuckDBPyConnection, *times: datetime) -> None:
    for i, t in enumerate(times):
        con.execute("INSERT INTO lake.syslog_lines (source_file, line_no, ts) VALUES ('l.log', ?, ?)", [i + 1, t])


def _coverage(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.sql("SELECT day, round(covered_hours, 4), partial FROM marts.day_coverage ORDER BY day").fetchall()


def test_demo_shape_first_day_whole_last_day_to_seven_past_midnight(con: duckdb.DuckDBPyConnection) -> None:
    # accounting 10-27 12:00 .. 10-30 00:07; node logs 10-27 00:00 .. 10-30 00:05 -> covered 10-27 00:00 (the
    # first day counts whole from midnight, models/accounting_span.py) .. 10-30 00:05 (23 h 55 min before
    # its midnight: the day is cut there)
    _sacct(con, _ts(27, 12), _ts(28, 6), _ts(30, 0, 7))
    _syslog(con, _ts(27, 0), _ts(29, 23, 59), _ts(30, 0, 5))
    assert build_day_coverage(con) == 4
    assert _coverage(con) == [(date(2026, 10, 27), 24.0, False), (date(2026, 10, 28), 24.0, False),
                              (date(2026, 10, 29), 24.0, False), (date(2026, 10, 30), round(5 / 60, 4), True)]
    assert complete_days(con) == (date(2026, 10, 27), date(2026, 10, 29))


def test_gap_tolerance(con: duckdb.DuckDBPyConnection) -> None:
    # accounting only, 10-01 00:20 .. 10-02 23:10: 20 and 50 uncovered minutes
    _sacct(con, datetime(2026, 10, 1, 0, 20, tzinfo=UTC), datetime(2026, 10, 2, 23, 10, tzinfo=UTC))
    build_day_coverage(con)
    assert [r[2] for r in _coverage(con)] == [False, False]  # default: up to 60 min uncovered is complete
    build_day_coverage(con, max_gap_minutes=30)
    # the first day counts whole from midnight; the last is cut at 23:10 (50 min > 30 before midnight)
    assert _coverage(con) == [(date(2026, 10, 1), 24.0, False),
                              (date(2026, 10, 2), round(23 + 10 / 60, 4), True)]


def test_mark_partial_days_sets_every_row_and_days_outside_the_data(con: duckdb.DuckDBPyConnection) -> None:
    _sacct(con, _ts(1, 0), _ts(2, 23, 30))
    con.execute("CREATE TABLE marts.x_daily AS SELECT * FROM (VALUES (DATE '2026-09-30', 1), "
                "(DATE '2026-10-01', 2), (DATE '2026-10-02', 3)) t(day, n)")
    mark_partial_days(con, "marts.x_daily")  # builds the coverage table on first use
    assert con.sql("SELECT day, partial FROM marts.x_daily ORDER BY day").fetchall() == [
        (date(2026, 9, 30), True), (date(2026, 10, 1), False), (date(2026, 10, 2), False)]
    # the next dump extends the data: 10-02 stays complete, a new short day 10-03 is partial
    _sacct(con, _ts(3, 0, 7))
    build_day_coverage(con)
    con.execute("INSERT INTO marts.x_daily BY NAME SELECT DATE '2026-10-03' AS day, 4 AS n")
    mark_partial_days(con, "marts.x_daily")
    assert con.sql("SELECT day, partial FROM marts.x_daily ORDER BY day").fetchall()[-2:] == [
        (date(2026, 10, 2), False), (date(2026, 10, 3), True)]


def test_no_raw_data_no_complete_day(con: duckdb.DuckDBPyConnection) -> None:
    assert build_day_coverage(con) == 0
    assert complete_days(con) == (None, None)


def test_accounting_span_not_its_first_record_time(con: duckdb.DuckDBPyConnection) -> None:
    """The accounting's coverage is its span (models/accounting_span.py), the one every analytic uses.
    Job a started two days before the dumps (listed because it ran inside them) and ended 10-01 06:00,
    the first record time; job b started 10-01 00:00; job c started 10-02 20:00 and has run 4 h at the
    last dump. Span: 10-01 00:00 (the earliest start on the first record's day) .. 10-03 00:00 (c's
    start + elapsed) — both days complete, where the records' own times (06:00 .. 20:00) made both partial.
    Node logs 10-01 00:01 .. 10-02 23:58: covered to 23:58, 2 min before midnight -> the day whole, and no
    row for 10-03 (the data ends at its midnight)."""
    rows = [("a", "COMPLETED", datetime(2026, 9, 29, 0, tzinfo=UTC), _ts(1, 6), 54 * 3600),
            ("b", "COMPLETED", _ts(1, 0), _ts(1, 8), 8 * 3600),
            ("c", "RUNNING", _ts(2, 20), None, 4 * 3600)]
    for i, (job, state, start, end, elapsed) in enumerate(rows):
        con.execute("INSERT INTO core.jobs (job_id, state, submit_ts, start_ts, end_ts, elapsed_s, restarts, source_file, "
                    "line_no) VALUES (?, ?, ?, ?, ?, ?, 0, 's.psv', ?)", [job, state, start, start, end, elapsed, i + 2])
        con.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, submit_ts, start_ts, "
                    "end_ts, elapsed_s) VALUES ('s.psv', ?, 'allocation', ?, ?, ?, ?, ?)",
                    [i + 2, job, start, start, end, elapsed])
    _syslog(con, _ts(1, 0, 1), _ts(2, 23, 58))
    build_day_coverage(con)
    assert _coverage(con) == [(date(2026, 10, 1), 24.0, False), (date(2026, 10, 2), 24.0, False)]
    freshness_last = con.sql("SELECT max(last_ts) FROM raw.record_days WHERE source_kind = 'sacct'").fetchall()[0][0]
    assert freshness_last == _ts(3, 0)  # the running job's record speaks up to start + elapsed


def test_a_job_running_all_of_the_first_dumps_day(con: duckdb.DuckDBPyConnection) -> None:
    """Two nightly dumps; job 900 is RUNNING in the first (started 10-27 00:00:01, 23:59:59 so far: the
    dump was cut at midnight) and COMPLETED at 10-28 23:50 in the second. core.jobs keeps only the
    completed row, whose latest moment is 10-28: the dumps' own records (raw.record_days) still say the
    accounting speaks from 10-27 00:00:01 (MTBF once lost the first day's exposure)."""
    start = datetime(2026, 10, 27, 0, 0, 1, tzinfo=UTC)
    con.execute("INSERT INTO core.jobs (job_id, state, submit_ts, start_ts, end_ts, elapsed_s, restarts, source_file, "
                "line_no) VALUES ('900', 'COMPLETED', ?, ?, ?, ?, 0, 'b.psv', 2)",
                [start, start, _ts(28, 23, 50), 2 * 86400 - 11 * 60 - 1])
    for name, end, elapsed in (("a.psv", None, 86399), ("b.psv", _ts(28, 23, 50), 2 * 86400 - 11 * 60 - 1)):
        con.execute("INSERT INTO lake.sacct_records (source_file, line_no, record_type, job_id, submit_ts, start_ts, "
                    "end_ts, elapsed_s) VALUES (?, 2, 'allocation', '900', ?, ?, ?, ?)", [name, start, start, end, elapsed])
    _syslog(con, _ts(27, 0, 1), _ts(28, 23, 58))
    build_day_coverage(con)
    from gpusre.models.accounting_span import accounting_span
    assert accounting_span(con) == (start, _ts(28, 23, 50))
    assert [r[2] for r in _coverage(con)] == [False, False]


def test_doctests() -> None:
    import doctest

    from gpusre.models import day_coverage
    assert doctest.testmod(day_coverage).failed == 0


@pytest.mark.parametrize(("path", "want"), [
    ("sacct/sacct_2026-10-01.psv", date(2026, 10, 1)),
    ("sacct/sacct_20261001.psv.gz", date(2026, 10, 1)),
    ("syslog/2026-10-01/gpu001.log", date(2026, 10, 1)),
    ("syslog/2026-10-01/gpu001_2026-10-02.log", date(2026, 10, 2)),  # the file name before its folder
    ("sacct/sacct_2026-13-40.psv", None),
    ("sacct/job_123456789.psv", None),
    ("sacct/all.psv", None),
])
def test_named_day(path: str, want: date | None) -> None:
    assert named_day(path) == want


def test_loaded_file_days_are_the_days_loaded_files_name(con) -> None:  # noqa: ANN001
    rows = [("sacct/sacct_2026-10-01.psv", "sacct", 0, "loaded"), ("sacct/sacct_2026-10-02.psv", "sacct", 5, "loaded"),
            ("sacct/sacct_2026-10-03.psv", "sacct", 0, "refused"), ("sacct/all.psv", "sacct", 9, "loaded"),
            ("syslog/2026-10-04/gpu001.log", "syslog", 0, "loaded")]
    for f, kind, n, status in rows:
        con.execute("INSERT INTO raw.ingested_files (source_file, source_kind, sha256, size_bytes, rows_read, "
                    "rows_loaded, rows_rejected, status, ingested_at) VALUES (?, ?, 'x', 0, ?, ?, 0, ?, now())",
                    [f, kind, n, n, status])
    assert loaded_file_days(con, "sacct") == {date(2026, 10, 1), date(2026, 10, 2)}
    assert loaded_file_days(con, "syslog") == {date(2026, 10, 4)}
    assert loaded_file_days(con, "alerts") == frozenset()
