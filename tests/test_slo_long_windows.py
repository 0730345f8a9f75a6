"""A review window longer than the SLO period (a quarter against a 30-day budget) must not hide a breach.

marts.slo_exhausted_spans keeps each run of days with the rolling budget exhausted; the SLO status
section names them and qualifies its pooled verdict. Hand series: objective 0.9, 100 events a day for
70 days from 2026-08-01, 60 bad on 08-11 and on 08-12, a 10-day rolling budget (allowed 100 bad):
08-11 holds 60 bad (budget 0.4), 08-12 … 08-20 hold 120 (budget 1 − 120/100 = −0.2, exhausted, 9
days), 08-21 drops 08-11 (0.4 again). Pooled over the 70 days: 120 bad of 700 allowed, 83 % left, SLI
6,880 / 7,000 = 98.29 % — met as a whole."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import duckdb
import polars as pl
import pytest

from gpusre.models.reliability.error_budget import exhausted_spans, rolling_burn_rates
from gpusre.models.reliability.slo import SLO_DAILY_SCHEMA, SloTarget, slo_daily
from gpusre.reports.slo.sections import status
from gpusre.reports.slo.window import SloWindow, sli_windows

D0 = date(2026, 8, 1)
DAYS = [D0 + timedelta(days=i) for i in range(70)]


def _daily(window_days: int = 10) -> pl.DataFrame:
    bad = [60.0 if d in (date(2026, 8, 11), date(2026, 8, 12)) else 0.0 for d in DAYS]
    series = pl.DataFrame({"day": DAYS, "good": [100.0 - b for b in bad], "total": [100.0] * 70})
    rated = rolling_burn_rates(series, "day", "good", "total", 0.9, window_days=window_days)
    return rated.with_columns(
        pl.lit("job_infra_success").alias("sli"), pl.lit(0.9).alias("objective"),
        (pl.col("good") / pl.col("total")).alias("value"),
        pl.when(pl.col("budget_remaining") <= 0).then(pl.lit("exhausted")).otherwise(pl.lit("ok")).alias("status"),
        pl.lit(window_days, dtype=pl.Int32).alias("window_days"), pl.lit("runs").alias("definition"),
        pl.lit("sacct").alias("source"))


def test_exhausted_spans_by_hand() -> None:
    spans = exhausted_spans(_daily())
    assert spans.rows(named=True) == [{
        "sli": "job_infra_success", "objective": 0.9, "window_days": 10, "start_day": date(2026, 8, 12),
        "end_day": date(2026, 8, 20), "days": 9, "worst_budget_remaining": pytest.approx(-0.2),
        "worst_day": date(2026, 8, 12)}]


def test_two_runs_of_exhausted_days_are_two_spans() -> None:
    d = pl.DataFrame({"sli": ["a"] * 6 + ["b"] * 2, "day": [D0 + timedelta(days=i) for i in (0, 1, 2, 3, 4, 5, 0, 1)],
                      "objective": [0.99] * 8, "window_days": [30] * 8,
                      "budget_remaining": [-0.1, -0.3, 0.2, -0.5, -0.4, 0.0, 0.5, 0.6]})
    got = exhausted_spans(d).select("sli", "start_day", "end_day", "days", "worst_budget_remaining", "worst_day").rows()
    # 0.0 left is exhausted (status rule: budget_remaining <= 0); b never is
    assert got == [("a", D0, D0 + timedelta(days=1), 2, -0.3, D0 + timedelta(days=1)),
                   ("a", D0 + timedelta(days=3), D0 + timedelta(days=5), 3, -0.5, D0 + timedelta(days=3))]
    assert exhausted_spans(pl.DataFrame(schema=SLO_DAILY_SCHEMA)).height == 0


def test_slo_daily_says_its_budget_period() -> None:
    t0 = datetime(2026, 8, 1, tzinfo=timezone.utc)
    out = slo_daily(targets=[SloTarget("node_availability", 0.99)], window_days=7, t0=t0, t1=t0 + timedelta(days=2),
                    node_count=2, maintenance_node_hours=pl.DataFrame(schema={"day": pl.Date,
                                                                              "maintenance_node_hours": pl.Float64}),
                    down=pl.DataFrame(schema={"day": pl.Date, "down_node_hours": pl.Float64}),
                    jobs=pl.DataFrame(), job_attribution=pl.DataFrame(), runs=pl.DataFrame(), goodput=pl.DataFrame(),
                    ettr_min_run_gpus=32, job_slis=False)
    assert out.get_column("window_days").to_list() == [7, 7]


def _con(window_days: int = 10) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    daily = _daily(window_days).select([c for c in SLO_DAILY_SCHEMA if c in _daily(window_days).columns])
    spans = exhausted_spans(daily)
    con.register("d", daily)
    con.register("s", spans)
    con.execute("CREATE TABLE marts.slo_daily AS SELECT * FROM d")
    con.execute("CREATE TABLE marts.slo_exhausted_spans AS SELECT * FROM s")
    return con


def _window(a: date, b: date) -> SloWindow:
    return SloWindow(a, b, datetime(2026, 12, 1, tzinfo=timezone.utc), "test")


def test_window_reads_the_worst_rolling_budget_and_the_spans() -> None:
    (sw,) = sli_windows(_con(), _window(DAYS[0], DAYS[-1]))
    assert sw.window_days == 10 and sw.longer_than_budget
    assert sw.worst_rolling["day"] == date(2026, 8, 12) and sw.worst_rolling["budget_remaining"] == pytest.approx(-0.2)
    assert sw.days_exhausted == 9
    assert sw.budget_left == pytest.approx(1 - 120 / 700) and sw.met


def test_a_quarter_that_met_its_objective_names_the_exhausted_period() -> None:
    sec = status.build(_con(), _window(DAYS[0], DAYS[-1]))
    assert sec.lead.startswith("1 of 1 SLOs met their objective over 2026-08-01 … 2026-10-09 as a whole")
    assert ("its 10-day budget was exhausted 2026-08-12 … 2026-08-20 (9 days), lowest \u221220 % on 2026-08-12"
            in sec.lead)
    take = sec.items[0].takeaway
    assert "no SLO overspent its budget" not in take
    assert ("no SLO overspent the budget of the window as a whole, but the rolling budget was exhausted inside the "
            "window: jobs not killed by the infrastructure's 10-day budget on 9 days: 2026-08-12 … 2026-08-20") in take
    main, rolling = sec.items[1], sec.items[2]
    assert main.rows[0][3].text == "yes as a whole; 10-day budget exhausted"
    assert main.rows[0][4].text == "83 %"
    assert [c.text for c in rolling.rows[0]] == ["Jobs not killed by the infrastructure", "10 days", "\u221220 %",
                                                 "2026-08-12", "9 / 70", "2026-08-12 … 2026-08-20 (9 days)"]


def test_a_span_cut_by_the_window_says_so() -> None:
    sec = status.build(_con(), _window(date(2026, 8, 15), DAYS[-1]))
    assert "2026-08-15 … 2026-08-20 (6 days) — since 2026-08-12" in sec.lead


def test_a_window_no_longer_than_the_budget_keeps_the_plain_verdict() -> None:
    sec = status.build(_con(window_days=30), _window(date(2026, 9, 10), DAYS[-1]))  # 30 days, nothing exhausted
    assert sec.lead.startswith("1 of 1 SLOs met their objective over 2026-09-10 … 2026-10-09; met: ")
    assert "as a whole" not in sec.lead and len(sec.items) == 2
    assert sec.items[0].takeaway.startswith("Error budget left at the end of the window: jobs not killed by the "
                                           "infrastructure 100 %; no SLO overspent its budget.")


def test_goodput_slo_leaves_planned_maintenance_out_of_its_budget() -> None:
    # Item of the same probe: a planned maintenance day exhausted the goodput budget on planned work alone.
    # Day 1: capacity 1,000 GPU-h, 400 in planned maintenance, 500 productive -> SLO 500 / 600; day 2: a whole
    # maintenance day -> 0 / 0 (no events, no burn), as node availability counts it.
    t0 = datetime(2026, 9, 21, tzinfo=timezone.utc)
    days = [date(2026, 9, 21), date(2026, 9, 22)]
    goodput = pl.DataFrame({"day": days, "productive_gpu_hours": [500.0, 0.0], "capacity_gpu_hours": [1000.0, 1000.0],
                            "maintenance_gpu_hours": [400.0, 1000.0]})
    out = slo_daily(targets=[SloTarget("goodput", 0.4)], window_days=30, t0=t0, t1=t0 + timedelta(days=2),
                    node_count=2, maintenance_node_hours=pl.DataFrame(schema={"day": pl.Date,
                                                                              "maintenance_node_hours": pl.Float64}),
                    down=pl.DataFrame(schema={"day": pl.Date, "down_node_hours": pl.Float64}),
                    jobs=pl.DataFrame(schema={"job_id": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                              "end_ts": pl.Datetime("us", "UTC")}),
                    job_attribution=pl.DataFrame(schema={"job_id": pl.String, "attribution": pl.String}),
                    runs=pl.DataFrame(schema={"ongoing": pl.Boolean, "n_gpus": pl.Int64,
                                              "last_end_ts": pl.Datetime("us", "UTC"), "productive_s": pl.Float64,
                                              "wallclock_s": pl.Int64, "queue_s": pl.Int64}),
                    goodput=goodput, ettr_min_run_gpus=32, estimate_availability=False)
    g = out.filter(pl.col("sli") == "goodput").sort("day")
    assert g.select("good", "total").rows() == [(500.0, 600.0), (0.0, 0.0)]
    # budget: allowed 0.6 × 600 = 360 bad, 100 bad -> 1 − 100/360; the maintenance day changes nothing
    assert g.get_column("budget_remaining").to_list() == pytest.approx([1 - 100 / 360, 1 - 100 / 360])
    assert set(g.get_column("status")) == {"ok"}
    assert "minus planned maintenance" in g.item(0, "definition")
