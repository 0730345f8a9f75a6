"""The SLO review quotes the window's own row of the per-period reliability marts (a calendar month, or
the whole record when the window covers it), and names a whole-record figure as such otherwise."""

from __future__ import annotations

from datetime import date, datetime, timezone

import duckdb
import pytest

from gpusre.reports.slo.window import MartPeriod, SloWindow, mart_period, record_text


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute("CREATE SCHEMA marts")
    c.execute("""CREATE TABLE marts.node_failure_rate AS SELECT * FROM (VALUES
                   ('all', 'all', 'hw_incidents'), ('month', '2026-09', 'hw_incidents'),
                   ('month', '2026-10', 'hw_incidents'), ('all', 'all', 'jobs_gt_128_gpus'),
                   ('month', '2026-11', 'jobs_gt_128_gpus')) t(period_type, period, variant)""")
    c.execute("""CREATE TABLE marts.data_freshness AS SELECT 'sacct' AS source_kind,
                   TIMESTAMPTZ '2026-09-01 00:00:00+00' AS first_record_ts,
                   TIMESTAMPTZ '2026-10-31 23:59:59+00' AS last_record_ts""")
    yield c
    c.close()


def _w(a: date, b: date) -> SloWindow:
    return SloWindow(a, b, datetime(2026, 12, 1, tzinfo=timezone.utc), "t")


@pytest.mark.parametrize(("start", "end", "want"), [
    # one calendar month: its row
    (date(2026, 9, 1), date(2026, 9, 30), MartPeriod("month", "2026-09", "2026-09", True)),
    # a window reaching into a month without data still covers only September's data
    (date(2026, 8, 1), date(2026, 9, 30), MartPeriod("month", "2026-09", "2026-09", True)),
    # every month the mart holds: the whole record is the window's figure
    (date(2026, 9, 1), date(2026, 10, 31), MartPeriod("all", "all", "2026-09 … 2026-10 (the whole record)", True)),
    # 30 rolling days, or a month and a half: no row of its own -> the whole record, named with its span
    (date(2026, 9, 15), date(2026, 10, 14), MartPeriod("all", "all", "whole record (2026-09 … 2026-10)", False)),
    (date(2026, 9, 1), date(2026, 10, 15), MartPeriod("all", "all", "whole record (2026-09 … 2026-10)", False)),
    (date(2026, 9, 2), date(2026, 9, 30), MartPeriod("all", "all", "whole record (2026-09 … 2026-10)", False)),
])
def test_mart_period_matches_the_window(con: duckdb.DuckDBPyConnection, start: date, end: date,
                                        want: MartPeriod) -> None:
    # the jobs variant's November row does not make November a month of the hardware-incident rate
    assert mart_period(con, _w(start, end), "node_failure_rate", "variant = 'hw_incidents'") == want


def test_record_text_names_the_accounting_span(con: duckdb.DuckDBPyConnection) -> None:
    assert record_text(con) == "whole record 2026-09-01 … 2026-10-31"
    assert record_text(con, "syslog") == "whole record"  # a source without a row: no span to name
