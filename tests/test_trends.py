"""Size-share trend tests (gpusre.models.job_mix.trends) on hand-made share series."""

from __future__ import annotations

from datetime import date

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.warehouse import apply_ddl
from gpusre.models.job_mix.trends import period_index, size_share_trend, write_size_share_trend

INPUT_SCHEMA = {"period_type": pl.String, "period": pl.String, "size_bucket": pl.String,
                "bucket_order": pl.Int32, "share_gpu_hours": pl.Float64}


def shares_frame(period_type: str, periods: list[str],
                 series: dict[tuple[str, int], list[float | None]]) -> pl.DataFrame:
    """Long frame like marts.size_buckets; a None share means the bucket has no row that period."""
    recs = [
        {"period_type": period_type, "period": p, "size_bucket": b, "bucket_order": o, "share_gpu_hours": s}
        for (b, o), values in series.items()
        for p, s in zip(periods, values)
        if s is not None
    ]
    return pl.DataFrame(recs, schema=INPUT_SCHEMA)


MONTHS_2026 = [f"2026-{m:02d}" for m in range(1, 13)]
WEEKS_2026 = [f"2026-W{w:02d}" for w in range(1, 13)]


def by_bucket(out: pl.DataFrame) -> dict[tuple[str, str], dict]:
    return {(r["granularity"], r["size_bucket"]): r for r in out.iter_rows(named=True)}


def test_planted_linear_shift_is_detected():
    # large share = 0.10 + 0.02 i + 0.005 (-1)^i, i = 0..11; the alternating term biases the OLS
    # slope by 0.005 * sum((-1)^i (i - 5.5)) / sum((i - 5.5)^2) = 0.005 * (-6) / 143
    large = [0.10 + 0.02 * i + 0.005 * (-1) ** i for i in range(12)]
    df = shares_frame("month", MONTHS_2026, {("65-256", 4): large, ("1", 1): [1 - s for s in large]})
    out = by_bucket(size_share_trend(df))
    up, down = out[("month", "65-256")], out[("month", "1")]
    expected_slope = 0.02 - 0.03 / 143
    assert up["slope_per_period"] == pytest.approx(expected_slope, abs=1e-12)
    assert down["slope_per_period"] == pytest.approx(-expected_slope, abs=1e-12)
    assert up["direction"] == "rising" and down["direction"] == "falling"
    assert up["p_value"] < 0.05 and up["slope_ci_low"] < expected_slope < up["slope_ci_high"]
    # each step is 0.02 +- 0.01 > 0: strictly increasing, so tau is exactly 1
    assert up["kendall_tau"] == pytest.approx(1.0) and down["kendall_tau"] == pytest.approx(-1.0)
    assert up["n_periods"] == 12
    assert up["first_share"] == pytest.approx(0.105) and up["last_share"] == pytest.approx(0.315)


def test_flat_noise_has_no_significant_trend():
    # a palindromic series has an OLS slope of exactly 0 and Kendall tau exactly 0
    half = [0.30, 0.50, 0.40, 0.60, 0.35, 0.55]
    noisy = half + half[::-1]
    df = shares_frame("week", WEEKS_2026, {("9-64", 3): noisy, ("1", 1): [1 - s for s in noisy]})
    out = by_bucket(size_share_trend(df))
    for key in (("week", "9-64"), ("week", "1")):
        r = out[key]
        assert r["direction"] == "no significant trend"
        assert r["slope_per_period"] == pytest.approx(0.0, abs=1e-12)
        assert r["p_value"] == pytest.approx(1.0)
        assert r["kendall_tau"] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=6))
def test_any_palindrome_is_never_a_trend(half):
    series = half + half[::-1]
    out = size_share_trend(shares_frame("week", WEEKS_2026[: len(series)], {("2-8", 2): series}))
    assert out["direction"].to_list() == ["no significant trend"]


def test_two_periods_is_insufficient_data_with_null_tests():
    df = shares_frame("month", ["2026-01", "2026-02"], {("1", 1): [0.4, 0.6]})
    r = size_share_trend(df).row(0, named=True)
    assert r["direction"] == "insufficient data" and r["n_periods"] == 2
    for col in ("slope_per_period", "slope_ci_low", "slope_ci_high", "p_value", "kendall_tau", "kendall_p"):
        assert r[col] is None
    assert (r["first_share"], r["last_share"]) == (0.4, 0.6)


def test_missing_bucket_rows_count_as_zero_share():
    df = shares_frame("month", ["2026-01", "2026-02", "2026-03"],
                      {("1", 1): [1.0, 1.0, 0.7], ("9-64", 3): [None, None, 0.3]})
    r = by_bucket(size_share_trend(df))[("month", "9-64")]
    # y = 0, 0, 0.3 on x = 0, 1, 2: slope = ((-1)(-0.1) + (1)(0.2)) / 2 = 0.15
    assert r["n_periods"] == 3 and r["first_share"] == 0.0 and r["last_share"] == 0.3
    assert r["slope_per_period"] == pytest.approx(0.15)


def test_constant_series_has_zero_slope_and_null_p():
    df = shares_frame("month", ["2026-01", "2026-02", "2026-03"], {("1", 1): [1.0, 1.0, 1.0]})
    r = size_share_trend(df).row(0, named=True)
    assert r["slope_per_period"] == 0.0 and r["p_value"] is None
    assert r["direction"] == "no significant trend"


def test_partial_first_and_last_month_are_dropped():
    # data 2026-01-20 .. 2026-05-10: January covered 12/31 days, May 10/31 -> both dropped
    months = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-05"]
    df = shares_frame("month", months, {("1", 1): [0.9, 0.5, 0.6, 0.7, 0.1]})
    r = size_share_trend(df, data_start=date(2026, 1, 20), data_end=date(2026, 5, 10)).row(0, named=True)
    assert r["n_periods"] == 3 and r["first_share"] == 0.5 and r["last_share"] == 0.7
    assert r["slope_per_period"] == pytest.approx(0.1)
    # exactly half a week covered (4 of 7 days >= 3.5) is kept
    wk = shares_frame("week", ["2026-W01", "2026-W02", "2026-W03"], {("1", 1): [0.2, 0.3, 0.5]})
    out = size_share_trend(wk, data_start=date(2026, 1, 1), data_end=date(2026, 1, 18))
    assert out["n_periods"].to_list() == [3]


def test_week_without_any_jobs_is_a_gap_on_the_time_axis():
    # W03 has no rows at all (no jobs): x = 0, 1, 3 for y = 0.1, 0.2, 0.4 -> slope 0.1 per week
    df = shares_frame("week", ["2026-W01", "2026-W02", "2026-W04"], {("1", 1): [0.1, 0.2, 0.4]})
    r = size_share_trend(df).row(0, named=True)
    assert r["n_periods"] == 3 and r["slope_per_period"] == pytest.approx(0.1)


def test_period_index_is_consecutive_across_year_ends():
    assert period_index("month", "2027-01") - period_index("month", "2026-12") == 1
    # 2026 has 53 ISO weeks (2026-12-31 is a Thursday)
    assert period_index("week", "2027-W01") - period_index("week", "2026-W53") == 1


def test_write_size_share_trend_from_warehouse(tmp_path):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    apply_ddl(con)
    run_mart_sql(con, "job_usage_daily", {"day": date(2026, 1, 1)})  # creates the (empty) table
    con.execute("""INSERT INTO marts.job_usage_daily VALUES
        ('2026-01-01', 'COMPLETED', '1', 1, 9, 9, 90.0), ('2026-01-01', 'COMPLETED', '65-256', 4, 1, 1, 10.0),
        ('2026-02-15', 'COMPLETED', '1', 1, 7, 7, 70.0), ('2026-02-15', 'COMPLETED', '65-256', 4, 1, 1, 30.0),
        ('2026-03-31', 'COMPLETED', '1', 1, 6, 6, 65.0), ('2026-03-31', 'COMPLETED', '65-256', 4, 1, 1, 35.0)""")
    run_mart_sql(con, "size_buckets")
    assert write_size_share_trend(con) == 4
    got = {(g, b): (n, fs, ls, s, d) for g, b, n, fs, ls, s, d in con.sql(
        "SELECT granularity, size_bucket, n_periods, first_share, last_share, slope_per_period, "
        "direction FROM marts.size_share_trend").fetchall()}
    # months Jan..Mar fully inside the data span; large share 0.10, 0.30, 0.35 -> slope (0.35 - 0.10) / 2
    n, fs, ls, slope, direction = got[("month", "65-256")]
    assert (n, fs, ls) == (3, 0.1, 0.35) and slope == pytest.approx(0.125)
    assert direction in {"rising", "no significant trend"}
    # weeks with data: W01 (4 of 7 days in span, kept), W07, W14 (2 of 7 days, dropped) -> 2
    assert got[("week", "65-256")] == (2, 0.1, 0.3, None, "insufficient data")
    assert got[("week", "1")][3:] == (None, "insufficient data")
    # rerun replaces, never appends
    assert write_size_share_trend(con) == 4
    assert con.sql("SELECT count(*) FROM marts.size_share_trend").fetchall() == [(4,)]
    con.close()
