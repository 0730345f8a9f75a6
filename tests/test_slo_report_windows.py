"""The SLO review quotes one figure per quantity, of the period it names (probes 2026-12-05).

1. A one-month record (a new site's first report): marts.mtbf's month row and whole-record row are the same
   figures; the table shows the whole-record row once, and the lead must still quote it for the month
   (it read "Too few failures for a cluster MTBF in 2026-09" next to a card and a table of 4 failures).
2. The lowest rolling budget: the status sentence and the rolling-budget table quote the same day of the
   window (the sentence quoted the exhausted span's worst day, before the window); a budget over the
   record's first days (fewer than slo.window_days of data) is labelled so, and not headlined next to a
   full-period one.
3. A record whose last (partial) day lies after the window: its whole-record row is not the window's, and
   is named with the record's real days (2026-11-28 … 2026-11-29), not "2026-11-28"."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import duckdb
import polars as pl
import pytest

from gpusre.models.reliability.error_budget import exhausted_spans, rolling_burn_rates
from gpusre.reports.slo.sections import failure_rate, mtbf, status, summary
from gpusre.reports.slo.window import MartPeriod, SloWindow, mart_period, sli_windows


def _w(a: date, b: date) -> SloWindow:
    return SloWindow(a, b, datetime(2026, 12, 1, tzinfo=timezone.utc), "t")


# -- 1 and 3: per-period reliability marts -------------------------------------------------------------------

#: September of probe_w by hand: 12 nodes x 720 h − 22.3333 h unplanned down = 8,617.6667 node-hours in
#: service, 4 failures (power, gpu, network, storage) -> MTBF 2,154.4 h; r_f = 4 / (8,617.6667 / 24) x 1,000
#: = 11.14 per 1,000 node-days.
SEP_H = 8617.6667
SEP_MTBF = SEP_H / 4
SEP_RF = 4 / (SEP_H / 24) * 1000


def _reliability(con: duckdb.DuckDBPyConnection, months: list[tuple[str, int, float]],
                 whole: tuple[int, float], days: list[tuple[date, bool]]) -> None:
    """marts.mtbf / marts.node_failure_rate cluster and GPU-class rows (min_failures 3), marts.day_coverage."""
    con.execute("CREATE SCHEMA IF NOT EXISTS marts")
    rows = []
    for ptype, period, (k, h) in [("all", "all", whole)] + [("month", m, (k, h)) for m, k, h in months]:
        ok = k >= 3
        rows.append((ptype, period, "cluster", "all", k, h, h * 8, h / k if ok else None, 840.0 if ok else None,
                     7896.0 if ok else None, None, k / (h / 24) * 1000 if ok else None, ok, None, "node states"))
        rows.append((ptype, period, "component_class", "gpu", 1, h, h * 8, None, None, None, None, None, False,
                     None, "node states"))
    con.execute("""CREATE TABLE marts.mtbf (period_type VARCHAR, period VARCHAR, scope VARCHAR, component VARCHAR,
                     failures BIGINT, exposure_hours DOUBLE, exposure_gpu_hours DOUBLE, mtbf_hours DOUBLE,
                     ci_low DOUBLE, ci_high DOUBLE, mtbf_gpu_hours DOUBLE, rate_per_1000_node_days DOUBLE,
                     sufficient BOOLEAN, note VARCHAR, exposure_source VARCHAR)""")
    con.executemany("INSERT INTO marts.mtbf VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute("""CREATE TABLE marts.node_failure_rate AS
                   SELECT period_type, period, 'hw_incidents' AS variant, failures, exposure_hours / 24 AS node_days,
                          rate_per_1000_node_days, 5.0 AS ci_low, 25.0 AS ci_high, sufficient
                   FROM marts.mtbf WHERE scope = 'cluster'""")
    con.execute("CREATE TABLE marts.day_coverage (day DATE, partial BOOLEAN)")
    con.executemany("INSERT INTO marts.day_coverage VALUES (?, ?)", days)


@pytest.fixture
def one_month() -> duckdb.DuckDBPyConnection:
    """Only September loaded: the mart's 2026-09 rows repeat its whole-record rows."""
    con = duckdb.connect()
    _reliability(con, [("2026-09", 4, SEP_H)], (4, SEP_H),
                 [(date(2026, 9, 1) + timedelta(days=i), False) for i in range(30)])
    yield con
    con.close()


def test_one_month_record_quotes_its_month_from_the_whole_record_row(one_month: duckdb.DuckDBPyConnection) -> None:
    w = _w(date(2026, 9, 1), date(2026, 9, 30))
    assert mart_period(one_month, w, "mtbf") == MartPeriod("month", "2026-09", "2026-09", True)
    sec = mtbf.build(one_month, w)
    assert sec.lead.startswith(f"In 2026-09 the cluster's MTBF per node was {SEP_MTBF:,.0f} h "
                               "(95 % CI 840–7,896 h, 4 failures)")
    assert "Too few failures" not in sec.lead
    table = sec.items[1]
    # the two identical periods shown once, named as both
    assert [(r[0].text, r[1].text, r[2].text, r[4].text) for r in table.rows] == [
        ("Cluster (all classes)", "whole record (2026-09)", "4", f"{SEP_MTBF:,.0f} h"),
        ("GPU", "whole record (2026-09)", "1", "insufficient data")]
    cards = {c["label"]: c for c in summary.build(one_month, w).cards}
    assert cards["MTBF per node"]["value"] == f"{SEP_MTBF:,.0f} h"
    assert cards["MTBF per node"]["sub"].endswith("· 2026-09")
    # the failure rate section, same rule
    fr = failure_rate.build(one_month, w)
    assert f"The cluster had {SEP_RF:.2f} hardware failures per 1,000 node-days" in fr.lead
    assert "in 2026-09" in fr.lead and "Too few" not in fr.lead


def test_a_month_with_too_few_failures_still_says_so() -> None:
    con = duckdb.connect()
    _reliability(con, [("2026-09", 2, SEP_H)], (2, SEP_H), [(date(2026, 9, 1), False), (date(2026, 9, 30), False)])
    sec = mtbf.build(con, _w(date(2026, 9, 1), date(2026, 9, 30)))
    assert sec.lead.startswith("Too few failures for a cluster MTBF in 2026-09 (2 failures)")


@pytest.fixture
def partial_tail() -> duckdb.DuckDBPyConnection:
    """probe_v: data 2026-11-28 (complete) and 2026-11-29 (partial); 3 failures, two of them on 11-29;
    exposure 688.88 node-hours -> MTBF 229.6 h, in the whole-record row and November's (the same)."""
    con = duckdb.connect()
    _reliability(con, [("2026-11", 3, 688.88)], (3, 688.88),
                 [(date(2026, 11, 28), False), (date(2026, 11, 29), True)])
    con.execute("""CREATE TABLE marts.hw_incidents AS SELECT * FROM (VALUES
                     (TIMESTAMPTZ '2026-11-28 10:12:29+00', 8.0, 'hardware'),
                     (TIMESTAMPTZ '2026-11-29 08:00:05+00', 4.0, 'hardware'),
                     (TIMESTAMPTZ '2026-11-29 12:00:00+00', 8.0, 'hardware')) t(start_ts, lost_gpu_hours, cause_class)""")
    yield con
    con.close()


def test_a_window_before_the_partial_last_day_does_not_hold_the_whole_record(
        partial_tail: duckdb.DuckDBPyConnection) -> None:
    w = _w(date(2026, 10, 30), date(2026, 11, 28))
    mp = mart_period(partial_tail, w, "mtbf")
    assert mp == MartPeriod("all", "all", "whole record (2026-11-28 … 2026-11-29)", False)
    card = {c["label"]: c for c in summary.build(partial_tail, w).cards}["MTBF per node"]
    assert card["value"] == "230 h" and card["sub"].endswith("· whole record (2026-11-28 … 2026-11-29)")
    # the window's own count beside it: 1 incident (11-28), not the 3 of the whole record
    assert {c["label"]: c for c in summary.build(partial_tail, w).cards}["Hardware incidents"]["value"] == "1"
    lead = mtbf.build(partial_tail, w).lead
    assert lead.startswith("Over the whole record (2026-11-28 … 2026-11-29) the cluster's MTBF per node is 230 h")
    assert "not the window 2026-10-30 … 2026-11-28 alone" in lead
    # a window through the partial day holds every day of data: the whole record is its figure
    assert mart_period(partial_tail, _w(date(2026, 10, 31), date(2026, 11, 29)), "mtbf") == MartPeriod(
        "all", "all", "2026-11-28 … 2026-11-29 (the whole record)", True)


# -- 2: the lowest rolling budget ------------------------------------------------------------------------------

D0 = date(2026, 8, 1)
DAYS = [D0 + timedelta(days=i) for i in range(70)]


def _slo_con() -> duckdb.DuckDBPyConnection:
    """Objective 0.9, 100 events a day from 2026-08-01 (the record's first day), a 10-day rolling budget.
    100 bad on 08-03: over the first 3 days of data 300 events allow 30 bad -> 1 − 100/30 = −233 %;
    08-04 −150 %, 08-05 −100 %, …, 08-09 1 − 100/90 = −11 %, 08-10 (10 days of data) 1 − 100/100 = 0 %
    until 08-12; 75 bad on 08-20 (25 %) and 75 on 08-21: 1 − 150/100 = −50 % from 08-21 to 08-29, 25 % on
    08-30 (08-20 left the period), 100 % from 08-31."""
    bad = {date(2026, 8, 3): 100.0, date(2026, 8, 20): 75.0, date(2026, 8, 21): 75.0}
    series = pl.DataFrame({"day": DAYS, "good": [100.0 - bad.get(d, 0.0) for d in DAYS], "total": [100.0] * 70})
    rated = rolling_burn_rates(series, "day", "good", "total", 0.9, window_days=10).with_columns(
        pl.lit("job_infra_success").alias("sli"), pl.lit(0.9).alias("objective"),
        (pl.col("good") / pl.col("total")).alias("value"),
        pl.when(pl.col("budget_remaining") <= 0).then(pl.lit("exhausted")).otherwise(pl.lit("ok")).alias("status"),
        pl.lit(10, dtype=pl.Int32).alias("window_days"), pl.lit("runs").alias("definition"),
        pl.lit("sacct").alias("source"))
    # marts.slo_daily as built today: without the days-of-data column (the report counts them itself)
    daily = rated.drop("window_days_covered")
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    con.register("d", daily)
    con.register("s", exhausted_spans(daily))
    con.execute("CREATE TABLE marts.slo_daily AS SELECT * FROM d")
    con.execute("CREATE TABLE marts.slo_exhausted_spans AS SELECT * FROM s")
    return con


def test_rolling_budget_series_by_hand() -> None:
    got = {d: b for d, b in _slo_con().execute(
        "SELECT day, budget_remaining FROM marts.slo_daily").fetchall()}
    assert got[date(2026, 8, 3)] == pytest.approx(1 - 100 / 30)
    assert got[date(2026, 8, 9)] == pytest.approx(1 - 100 / 90)
    assert got[date(2026, 8, 10)] == pytest.approx(0.0)
    assert got[date(2026, 8, 20)] == pytest.approx(0.25) and got[date(2026, 8, 21)] == pytest.approx(-0.5)
    assert got[date(2026, 8, 29)] == pytest.approx(-0.5) and got[date(2026, 8, 30)] == pytest.approx(0.25)


def test_quarter_headlines_the_full_period_lowest_and_labels_the_first_days() -> None:
    con = _slo_con()
    (sw,) = sli_windows(con, _w(DAYS[0], DAYS[-1]))
    assert sw.worst_rolling["day"] == date(2026, 8, 21) and sw.worst_rolling["budget_remaining"] == pytest.approx(-0.5)
    assert sw.worst_rolling_short["day"] == date(2026, 8, 3) and sw.worst_rolling_short["data_days"] == 3
    sec = status.build(con, _w(DAYS[0], DAYS[-1]))
    assert ("its 10-day budget was exhausted 2026-08-03 … 2026-08-12 (10 days), 2026-08-21 … 2026-08-29 "
            "(9 days), lowest \u221250 % on 2026-08-21") in sec.lead
    assert "\u2212233 %" not in sec.lead
    rolling = sec.items[2]
    assert [c.text for c in rolling.rows[0][:4]] == ["Jobs not killed by the infrastructure", "10 days",
                                                     "\u221250 %", "2026-08-21"]
    assert rolling.rows[0][3].sub is None
    assert any("\u2212233 % on 2026-08-03 over the first 3 days of data" in n for n in sec.notes)


def test_sentence_and_table_quote_the_windows_lowest_not_the_spans() -> None:
    # The span 08-21 … 08-29 began before the window: its worst day (08-21) is not the window's.
    con = _slo_con()
    sec = status.build(con, _w(date(2026, 8, 25), DAYS[-1]))
    assert ("2026-08-25 … 2026-08-29 (5 days) — since 2026-08-21, lowest \u221250 % on 2026-08-25") in sec.lead
    rolling = sec.items[2]
    assert [c.text for c in rolling.rows[0][2:4]] == ["\u221250 %", "2026-08-25"]
    assert not sec.notes or not any("first" in n for n in sec.notes)


def test_a_window_inside_the_first_days_labels_its_budget() -> None:
    # 08-01 … 08-15 (15 days > the 10-day budget): full-period days 08-10 … 08-15 (lowest 0 % on 08-10);
    # the first days' −233 % is not headlined.
    con = _slo_con()
    sec = status.build(con, _w(D0, date(2026, 8, 15)))
    assert "lowest 0 % on 2026-08-10" in sec.lead
    # a window with only short days (08-01 … 08-09 is shorter than the budget: no rolling table) labels the
    # last day's rolling budget in the status table: 1 − 100/90 = −11 % over 9 days of data
    sec = status.build(con, _w(D0, date(2026, 8, 9)))
    row = sec.items[1].rows[0]
    assert row[7].text == "\u221211 %" and row[7].sub == "over the first 9 days of data"
    (sw,) = sli_windows(con, _w(D0, date(2026, 8, 9)))
    assert sw.worst_rolling is None and sw.lowest_rolling["day"] == date(2026, 8, 3)


def test_a_failure_free_sliver_after_the_last_complete_day_leaves_the_record_whole(
        partial_tail: duckdb.DuckDBPyConnection) -> None:
    # The same days, no failure on the partial 11-29 (a dump cut just after midnight): the window through the
    # last complete day counts every failure of the whole record, which is its figure.
    partial_tail.execute("DELETE FROM marts.hw_incidents WHERE start_ts >= TIMESTAMPTZ '2026-11-29 00:00:00+00'")
    assert mart_period(partial_tail, _w(date(2026, 10, 30), date(2026, 11, 28)), "mtbf") == MartPeriod(
        "all", "all", "2026-11-28 (the whole record)", True)
