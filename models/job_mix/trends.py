"""Trend tests on the GPU-hour share of each job-size bucket (``marts.size_share_trend``).

For each granularity ('month', 'week') and size bucket the series is the bucket's share of the
period's GPU-hours (from ``marts.size_buckets``); a period in which the bucket had no jobs
counts as share 0. Two tests are reported side by side:

* OLS of share on the period index with Newey-West (HAC) standard errors, because consecutive
  periods of a job mix are autocorrelated. Lags follow the Newey-West rule of thumb
  ``floor(4 * (n / 100) ** (2 / 9))`` (at least 1, at most n - 2), with the small-sample
  correction and t-distributed p-values and intervals, since n is small (a quarter is 3 months
  or ~13 weeks); normal p-values would overstate significance.
* Kendall's tau of share against the period index (rank based, robust to outliers).

``direction`` follows the OLS slope: 'rising' / 'falling' when ``p_value < 0.05``, otherwise
'no significant trend'; with fewer than 3 periods it is 'insufficient data' and every test
column is NULL. A constant series has slope 0 and NULL p-values (the test is undefined).

Partial periods: when the span of data days is known, a month or ISO week that the span covers
on fewer than half of its days is dropped (only the first and last periods can be partial), so
that e.g. a month with 3 days of data does not become a full point of the series.

The period index is the calendar position (months since year 0, weeks since 0001-01-01), so a
period with no jobs at all (0/0 share, no rows) is a gap in the series rather than being
silently squeezed out of the time axis.
"""

from __future__ import annotations

import calendar
import math
import warnings
from datetime import date, timedelta

import duckdb
import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy import stats

from gpusre.models.day_coverage import complete_days
from gpusre.models.marts_runner import run_mart_sql

__all__ = [
    "ALPHA",
    "MIN_PERIODS",
    "TREND_SCHEMA",
    "period_days",
    "period_index",
    "size_share_trend",
    "write_size_share_trend",
]

ALPHA = 0.05
MIN_PERIODS = 3
#: Shares that differ by less than this are equal: below it the OLS works on rounding noise (a series
#: of 1e-293 and 0 once gave a "significant" slope).
SHARE_RESOLUTION = 1e-9
GRANULARITIES = ("month", "week")

TREND_SCHEMA: dict[str, pl.DataType] = {
    "granularity": pl.String(),
    "size_bucket": pl.String(),
    "bucket_order": pl.Int32(),
    "n_periods": pl.Int32(),
    "first_share": pl.Float64(),
    "last_share": pl.Float64(),
    "slope_per_period": pl.Float64(),
    "slope_ci_low": pl.Float64(),
    "slope_ci_high": pl.Float64(),
    "p_value": pl.Float64(),
    "kendall_tau": pl.Float64(),
    "kendall_p": pl.Float64(),
    "direction": pl.String(),
}


def period_days(granularity: str, period: str) -> tuple[date, date]:
    """First and last calendar day of a period label: 'YYYY-MM' (month) or 'YYYY-Www' (ISO week)."""
    if granularity == "month":
        y, m = (int(x) for x in period.split("-"))
        return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])
    if granularity == "week":
        y, w = period.split("-W")
        monday = date.fromisocalendar(int(y), int(w), 1)
        return monday, monday + timedelta(days=6)
    raise ValueError(f"unknown granularity {granularity!r}")


def period_index(granularity: str, period: str) -> int:
    """Calendar position of a period, so consecutive periods differ by exactly 1."""
    first, _ = period_days(granularity, period)
    if granularity == "month":
        return first.year * 12 + first.month - 1
    return first.toordinal() // 7  # ordinal of a Monday; all Mondays share the same residue


def _coverage(granularity: str, period: str, data_start: date, data_end: date) -> float:
    """Fraction of the period's days that fall inside [data_start, data_end]."""
    first, last = period_days(granularity, period)
    lo, hi = max(first, data_start), min(last, data_end)
    covered = max(0, (hi - lo).days + 1)
    return covered / ((last - first).days + 1)


def _finite(x: float) -> float | None:
    """None for NaN/inf so the mart stores NULL instead of a fake number."""
    return float(x) if x is not None and math.isfinite(x) else None


def _test_series(idx: np.ndarray, share: np.ndarray) -> dict[str, float | str | None]:
    """OLS+HAC and Kendall tests of one share series (already sorted by idx, n >= MIN_PERIODS)."""
    n = len(share)
    out: dict[str, float | str | None] = dict.fromkeys(
        ("slope_per_period", "slope_ci_low", "slope_ci_high", "p_value", "kendall_tau", "kendall_p")
    )
    if np.ptp(share) < SHARE_RESOLUTION:
        # constant series: the slope is 0 but no test statistic is defined
        out.update(slope_per_period=0.0, slope_ci_low=0.0, slope_ci_high=0.0)
        out["direction"] = "no significant trend"
        return out
    x = sm.add_constant(idx - idx[0])
    maxlags = max(1, min(n - 2, math.floor(4 * (n / 100) ** (2 / 9))))
    with warnings.catch_warnings():
        # a perfect fit gives zero residual variance; the resulting inf/nan are mapped to NULL
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = sm.OLS(share, x).fit(
            cov_type="HAC", cov_kwds={"maxlags": maxlags, "use_correction": True}, use_t=True
        )
        ci = fit.conf_int(alpha=ALPHA)
        tau, kp = stats.kendalltau(idx, share)
    slope, p = float(fit.params[1]), _finite(float(fit.pvalues[1]))
    out.update(
        slope_per_period=slope,
        slope_ci_low=_finite(float(ci[1][0])),
        slope_ci_high=_finite(float(ci[1][1])),
        p_value=p,
        kendall_tau=_finite(float(tau)),
        kendall_p=_finite(float(kp)),
    )
    if p is not None and p < ALPHA:
        out["direction"] = "rising" if slope > 0 else "falling"
    else:
        out["direction"] = "no significant trend"
    return out


def size_share_trend(
    shares: pl.DataFrame,
    *,
    data_start: date | None = None,
    data_end: date | None = None,
    min_coverage: float = 0.5,
) -> pl.DataFrame:
    """Trend of each size bucket's GPU-hour share per granularity; rows of ``marts.size_share_trend``.

    ``shares`` has the columns of ``marts.size_buckets`` that matter: ``period_type`` ('month',
    'week'; other values such as 'all' are ignored), ``period``, ``size_bucket``,
    ``bucket_order``, ``share_gpu_hours``. Missing (period, bucket) pairs count as share 0.
    When ``data_start``/``data_end`` (first and last day with data) are given, periods covered
    on fewer than ``min_coverage`` of their days are dropped first.
    """
    rows: list[dict[str, object]] = []
    df = shares.filter(pl.col("period_type").is_in(GRANULARITIES))
    for gran in GRANULARITIES:
        g = df.filter(pl.col("period_type") == gran)
        if g.is_empty():
            continue
        periods = sorted(set(g["period"].to_list()), key=lambda p: period_index(gran, p))
        if data_start is not None and data_end is not None:
            periods = [
                p for p in periods if _coverage(gran, p, data_start, data_end) >= min_coverage
            ]
        idx = np.array([period_index(gran, p) for p in periods], dtype=float)
        buckets = g.select("size_bucket", "bucket_order").unique().sort("bucket_order", "size_bucket")
        lookup = {
            (r["period"], r["size_bucket"]): (r["share_gpu_hours"] or 0.0)
            for r in g.iter_rows(named=True)
        }
        for b in buckets.iter_rows(named=True):
            share = np.array([lookup.get((p, b["size_bucket"]), 0.0) for p in periods], dtype=float)
            row: dict[str, object] = {
                "granularity": gran,
                "size_bucket": b["size_bucket"],
                "bucket_order": b["bucket_order"],
                "n_periods": len(periods),
                "first_share": float(share[0]) if len(share) else None,
                "last_share": float(share[-1]) if len(share) else None,
            }
            if len(periods) < MIN_PERIODS:
                row.update(dict.fromkeys(
                    ("slope_per_period", "slope_ci_low", "slope_ci_high", "p_value",
                     "kendall_tau", "kendall_p")
                ))
                row["direction"] = "insufficient data"
            else:
                row.update(_test_series(idx, share))
            rows.append(row)
    return pl.DataFrame(rows, schema=TREND_SCHEMA)


def write_size_share_trend(con: duckdb.DuckDBPyConnection) -> int:
    """Recompute ``marts.size_share_trend`` from ``marts.size_buckets``; return rows written.

    The data span used to drop partial periods is the first and last complete day
    (:func:`gpusre.models.day_coverage.complete_days`): a month whose days are mostly partial or
    outside the data is no point of the series.
    """
    shares = con.sql(
        "SELECT period_type, period, size_bucket, bucket_order, share_gpu_hours "
        "FROM marts.size_buckets WHERE period_type IN ('month', 'week')"
    ).pl()
    start, end = complete_days(con)
    if start is None and not con.sql("SELECT count(*) FROM marts.day_coverage").fetchall()[0][0]:
        # No raw records to define coverage (marts loaded from elsewhere): the span of the daily mart.
        start, end = con.sql("SELECT min(day), max(day) FROM marts.job_usage_daily").fetchall()[0]
    elif start is None:
        shares = shares.clear()  # data, but not one complete day: no period is a point of a series
    result = size_share_trend(shares, data_start=start, data_end=end)
    run_mart_sql(con, "size_share_trend")
    if result.height:
        con.register("_size_share_trend_new", result.to_arrow())
        try:
            con.execute("INSERT INTO marts.size_share_trend BY NAME SELECT * FROM _size_share_trend_new")
        finally:
            con.unregister("_size_share_trend_new")
    return result.height
