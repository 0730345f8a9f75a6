"""SLO review section "Time to repair by component class": per window month and the whole record from the
repair marts, and the repairs still open when the window ends with their age — on the hand-made incidents
of tests/hand_repairs.py (values worked out there)."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import pytest
from hand_repairs import write_repair_marts
from report_html import section, visible_text

from gpusre.reports.kit.section import Section
from gpusre.reports.slo import SLO_SECTIONS, render_slo_report
from gpusre.reports.slo.sections import repairs
from gpusre.reports.slo.window import SloWindow

GENERATED = datetime(2026, 11, 2, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    write_repair_marts(c)
    yield c
    c.close()


def _build(con: duckdb.DuckDBPyConnection, start: date, end: date) -> Section:
    return repairs.build(con, SloWindow(start, end, GENERATED, "hand"))


def _table(sec: Section, n: int) -> list[list[str]]:
    return [[c.text for c in row] for row in sec.tables[n].rows]


def test_the_section_follows_mtbf_and_the_failure_rate() -> None:
    keys = [s.key for s in SLO_SECTIONS]
    assert keys.index("repairs") == keys.index("failure-rate") + 1 > keys.index("mtbf")


def test_october_review_names_the_node_still_down(con: duckdb.DuckDBPyConnection) -> None:
    sec = _build(con, date(2026, 10, 1), date(2026, 10, 31))
    assert sec.no_data is None and len(sec.charts) == 1 and "<svg" in sec.charts[0].svg
    take = sec.takeaways[0]
    assert take.startswith("2026-10: median time to repair 12.0 h over 5 repairs (mean 11.6 h); "
                           "network 6.00 h (mean 7.33 h, 3 repairs), GPU 18.0 h (mean 18.0 h, 2 repairs).")
    # the data end at 23:59:59: 2 days 3:59:59 after 2026-10-29 20:00 = 52.0 h
    assert ("1 repair still open at the end of the window (2026-10-31 23:59 UTC): gpu038 (GPU, since "
            "2026-10-29 20:00, open 52.0 h).") in take
    rows = {(r[0], r[1]): r for r in _table(sec, 0)}
    # class, period, incidents, repaired, open at data end, median, mean, p90, CI, timed by node states
    assert rows[("GPU", "whole record")][2:7] == ["11", "10", "1", "15.0 h", "18.0 h"]
    assert rows[("Network", "whole record")][5:7] == ["7.00 h", "7.67 h"]
    assert rows[("Network", "2026-10")][5:7] == ["6.00 h", "7.33 h"]
    assert rows[("Storage", "whole record")][5] == "40 min" and rows[("Storage", "whole record")][9] == "0 of 1"
    assert ("GPU", "2026-09") not in rows  # a month outside the window
    assert [r[0] for r in _table(sec, 0)][:2] == ["All classes", "All classes"]
    opened = _table(sec, 1)
    assert len(opened) == 1 and opened[0][2] == "gpu038" and opened[0][3:5] == ["2026-10-29 20:00", "2026-10-29 20:04"]
    assert opened[0][6] == "52.0 h" and opened[0][7] == "still open at the end of the data"
    assert sec.lead.startswith("Over the whole record (incidents starting 2026-09 … 2026-10) 18 repairs took a median 11.0 h")
    assert sec.lead.endswith("; 1 repair still open at the end of the data (not averaged).")


def test_a_repair_open_when_the_window_ends_counts_even_if_it_finished_later(con: duckdb.DuckDBPyConnection) -> None:
    sec = _build(con, date(2026, 9, 1), date(2026, 9, 30))
    take = sec.takeaways[0]
    # 13 repairs: 0.67, 4, 6, 6, 6, 8, 10, 12, 12, 18, 20, 24, 48 -> median 10, mean 13.44
    assert take.startswith("2026-09: median time to repair 10.0 h over 13 repairs (mean 13.4 h); "
                           "GPU 15.0 h (mean 18.0 h, 8 repairs), network 8.00 h (mean 8.00 h, 3 repairs)")
    # H1 started 2026-09-30 22:00 and was back 10-01 04:00: open 2 h when September ended; gpu038 not yet begun
    assert "1 repair still open at the end of the window (2026-10-01 00:00 UTC): gpu018 (host" in take
    assert "open 2.00 h" in take and "gpu038" not in take
    opened = _table(sec, 1)
    assert [r[2] for r in opened] == ["gpu018"] and opened[0][7] == "back in service 2026-10-01 04:00"


def test_two_month_window_shows_both_months_and_the_record(con: duckdb.DuckDBPyConnection) -> None:
    sec = _build(con, date(2026, 9, 1), date(2026, 10, 31))
    periods = [r[1] for r in _table(sec, 0) if r[0] == "GPU"]
    assert periods == ["2026-09", "2026-10", "whole record"]
    assert re.search(r"2026-09: .*; 2026-10: ", sec.takeaways[0])


def test_window_without_incidents_and_without_marts(con: duckdb.DuckDBPyConnection) -> None:
    sec = _build(con, date(2026, 8, 1), date(2026, 8, 31))
    # nothing started in August, nothing open on 09-01 00:00 (the first incident is on 09-03)
    assert "no hardware incident started in 2026-08" in (sec.lead + " ".join(sec.takeaways)).lower()
    assert "no repair was open at the end of the window" in (sec.lead + " ".join(sec.takeaways)).lower()
    empty = duckdb.connect()
    try:
        assert repairs.build(empty, SloWindow(date(2026, 10, 1), date(2026, 10, 31), GENERATED, "")).no_data
    finally:
        empty.close()


def test_rendered_in_the_slo_report(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    paths = render_slo_report(con, tmp_path, date(2026, 10, 1), date(2026, 10, 31), warehouse_label="hand")
    page = paths.html.read_text(encoding="utf-8")
    sec = visible_text(section(page, "repairs"))
    assert "Time to repair by component class" in sec and "gpu038" in sec and "52.0 h" in sec
    assert "marts.repair_times_monthly" in page  # the sources line
    assert "## Time to repair by component class" in paths.markdown.read_text(encoding="utf-8")


def test_doctests() -> None:
    import doctest

    from gpusre.reports.slo.sections import goodput

    assert doctest.testmod(repairs).failed == 0 and doctest.testmod(goodput).failed == 0
