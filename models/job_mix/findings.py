"""Headline findings about the GPU job mix (``marts.findings``), computed from the other marts.

The four findings mirror what an operator reported for a 100-node H100 cluster over a quarter;
here each is recomputed from data and marked ``supported`` True/False (NULL when the data
cannot tell). Thresholds are assumptions, stated in the statement text where they matter:

1. Cancelled vs failed GPU time (``marts.gpu_time_by_state``, period 'all'). Supported when
   CANCELLED is the state holding the most GPU-hours. "Cancelled" is the Slurm state, whoever
   cancelled (core.jobs.cancelled_by could split user from admin cancellations).
2. Small jobs (<= 8 GPUs, buckets '1' and '2-8') vs large jobs (>= 65 GPUs, buckets '65-256'
   and up) (``marts.size_buckets``, period 'all'). Supported when small jobs are a majority of
   jobs (> 50 %) and large jobs hold a majority of GPU-hours (> 50 %).
3. Short median, long tail (``marts.runtime_quantiles``). Supported when the median runtime of
   all GPU jobs is under :data:`SHORT_MEDIAN_H` hours and the p99 runtime of the largest
   populated size bucket is at least :data:`LONG_TAIL_RATIO` times that median.
4. Usage shift between size classes (``marts.size_share_trend``). The series with the smallest
   HAC p-value over both granularities is reported, slope converted to percentage points per
   month. Supported when that p < 0.05. Picking the smallest of several p-values favours a
   positive result, so the statement says how many series were tested.
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.vocabulary import FAILED_STATES, bucket_order_of

__all__ = [
    "FINDINGS_SCHEMA",
    "LARGE_MIN_BUCKET_ORDER",
    "LONG_TAIL_RATIO",
    "SHORT_MEDIAN_H",
    "SMALL_MAX_BUCKET_ORDER",
    "compute_findings",
    "write_findings",
]

#: core.size_bucket_order of the largest "small" bucket ('2-8': at most 8 GPUs, one node).
SMALL_MAX_BUCKET_ORDER = bucket_order_of("2-8")
#: core.size_bucket_order of the smallest "large" bucket ('65-256': at least 65 GPUs).
LARGE_MIN_BUCKET_ORDER = bucket_order_of("65-256")
#: A median runtime under this many hours counts as "most jobs are short".
SHORT_MEDIAN_H = 1.0
#: p99 of the largest bucket at least this multiple of the overall median counts as a long tail.
LONG_TAIL_RATIO = 10.0
ALPHA = 0.05
#: Average weeks per month, to express weekly slopes per month.
WEEKS_PER_MONTH = 365.25 / 12 / 7

FINDINGS_SCHEMA: dict[str, pl.DataType] = {
    "finding_id": pl.Int32(),
    "title": pl.String(),
    "statement": pl.String(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "supported": pl.Boolean(),
}


def _pct(x: float) -> str:
    """0.4123 -> '41.2 %'."""
    return f"{100 * x:.1f} %"


def _hours(h: float) -> str:
    """Runtime for a sentence: minutes below one hour, else hours."""
    return f"{h * 60:.0f} min" if h < 1 else f"{h:.1f} h"


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _gpus(bucket: str) -> str:
    return f"{bucket} GPU" if bucket == "1" else f"{bucket} GPUs"


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    q = f"SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'marts' AND table_name = '{name}'"
    return con.sql(q).fetchall()[0][0] > 0


def _row(fid: int, title: str, statement: str, metric: str,
         value: float | None, supported: bool | None) -> dict[str, object]:
    return {"finding_id": fid, "title": title, "statement": statement, "metric": metric,
            "value": value, "supported": supported}


def _cancelled_vs_failed(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    title = "GPU time in cancelled vs failed jobs"
    metric = "cancelled_share_gpu_hours"
    if not _has_table(con, "gpu_time_by_state"):
        return _row(1, title, "marts.gpu_time_by_state is missing.", metric, None, None)
    rows = con.sql(
        "SELECT state, share_gpu_hours FROM marts.gpu_time_by_state "
        "WHERE period_type = 'all' AND share_gpu_hours IS NOT NULL "
        "ORDER BY gpu_hours DESC, state"
    ).fetchall()
    if not rows:
        return _row(1, title, "No GPU-hours in terminal GPU jobs, so no state shares.",
                    metric, None, None)
    shares = dict(rows)
    # "failed" is the vocabulary's FAILED_STATES (FAILED, NODE_FAIL, TIMEOUT, ...), as in every other section.
    cancelled = shares.get("CANCELLED", 0.0)
    failed = sum(shares.get(s, 0.0) for s in FAILED_STATES)
    top_state, top_share = rows[0]
    statement = f"Cancelled runs hold {_pct(cancelled)} of GPU time; failed runs hold {_pct(failed)}."
    if top_state != "CANCELLED":
        statement += f" The largest state by GPU time is {top_state} ({_pct(top_share)})."
    return _row(1, title, statement, metric, cancelled, top_state == "CANCELLED")


def _small_vs_large(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    title = "Small jobs dominate by count, large jobs by GPU time"
    metric = "large_share_gpu_hours"
    if not _has_table(con, "size_buckets"):
        return _row(2, title, "marts.size_buckets is missing.", metric, None, None)
    small_jobs, small_gpu, large_jobs, large_gpu, total = con.sql(
        f"""SELECT sum(share_jobs)      FILTER (bucket_order <= {SMALL_MAX_BUCKET_ORDER}),
                   sum(share_gpu_hours) FILTER (bucket_order <= {SMALL_MAX_BUCKET_ORDER}),
                   sum(share_jobs)      FILTER (bucket_order >= {LARGE_MIN_BUCKET_ORDER}),
                   sum(share_gpu_hours) FILTER (bucket_order >= {LARGE_MIN_BUCKET_ORDER}),
                   sum(gpu_hours)
            FROM marts.size_buckets WHERE period_type = 'all'"""
    ).fetchall()[0]
    if not total:
        return _row(2, title, "No GPU-hours in terminal GPU jobs, so no size shares.",
                    metric, None, None)
    small_jobs, small_gpu = small_jobs or 0.0, small_gpu or 0.0
    large_jobs, large_gpu = large_jobs or 0.0, large_gpu or 0.0
    statement = (
        f"Small jobs (<= 8 GPUs) are {_pct(small_jobs)} of jobs but use {_pct(small_gpu)} of "
        f"GPU time; large jobs (>= 65 GPUs) are {_pct(large_jobs)} of jobs but use "
        f"{_pct(large_gpu)} of GPU time."
    )
    return _row(2, title, statement, metric, large_gpu, small_jobs > 0.5 and large_gpu > 0.5)


def _short_median_long_tail(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    title = "Most jobs are short, large jobs have a long tail"
    metric = "p99_largest_bucket_over_median_all"
    if not _has_table(con, "runtime_quantiles"):
        return _row(3, title, "marts.runtime_quantiles is missing.", metric, None, None)
    overall = con.sql(
        "SELECT jobs, p50_h FROM marts.runtime_quantiles WHERE size_bucket = 'all'"
    ).fetchall()
    largest = con.sql(
        "SELECT size_bucket, jobs, p99_h FROM marts.runtime_quantiles "
        "WHERE size_bucket <> 'all' AND jobs > 0 ORDER BY bucket_order DESC LIMIT 1"
    ).fetchall()
    if not overall or not overall[0][0] or not largest:
        return _row(3, title, "No terminal GPU jobs with a runtime.", metric, None, None)
    n_all, median = overall[0]
    bucket, n_big, p99 = largest[0]
    ratio = p99 / median if median > 0 else None
    jobs_word = "job" if n_big == 1 else "jobs"
    statement = (
        f"Half of all {n_all:,} GPU jobs ran for at most {_hours(median)} (median); in the "
        f"largest size class used ({_gpus(bucket)}, {n_big:,} {jobs_word}) the 99th-percentile "
        f"runtime is {_hours(p99)}"
        + (f", {ratio:.1f} times the median." if ratio is not None else ".")
    )
    supported = median < SHORT_MEDIAN_H and p99 > 0 and p99 >= LONG_TAIL_RATIO * median
    return _row(3, title, statement, metric, ratio, supported)


def _size_shift(con: duckdb.DuckDBPyConnection) -> dict[str, object]:
    title = "Usage shifts between size classes"
    metric = "slope_pp_per_month"
    if not _has_table(con, "size_share_trend"):
        return _row(4, title, "marts.size_share_trend is missing.", metric, None, None)
    tested = con.sql(
        "SELECT granularity, size_bucket, slope_per_period, p_value FROM marts.size_share_trend "
        "WHERE p_value IS NOT NULL "
        "ORDER BY p_value, granularity = 'week', bucket_order"  # ties: prefer months
    ).fetchall()
    if not tested:
        return _row(4, title, "Not enough full months or weeks (at least 3) to test for a "
                    "shift between size classes.", metric, None, None)
    gran, bucket, slope, p = tested[0]
    per_month = 100 * slope * (WEEKS_PER_MONTH if gran == "week" else 1.0)
    how = f"{'monthly' if gran == 'month' else 'weekly'} OLS with HAC errors, {_p(p)}"
    of_n = f"smallest p of {len(tested)} series tested"
    if p < ALPHA:
        verb = "rising" if slope > 0 else "falling"
        statement = (
            f"The share of GPU time in jobs of {_gpus(bucket)} is {verb} by "
            f"{abs(per_month):.1f} percentage points per month ({how}; {of_n})."
        )
    else:
        statement = (
            f"No significant shift in GPU-time share between size classes: the strongest "
            f"trend ({_gpus(bucket)}) is {per_month:+.1f} percentage points per month "
            f"({how}; {of_n})."
        )
    return _row(4, title, statement, metric, per_month, p < ALPHA)


def compute_findings(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The four findings (rows of ``marts.findings``) from the marts already built on ``con``.

    Reads marts.gpu_time_by_state, marts.size_buckets, marts.runtime_quantiles and
    marts.size_share_trend; a missing mart gives a row with NULL value and supported.
    """
    rows = [
        _cancelled_vs_failed(con),
        _small_vs_large(con),
        _short_median_long_tail(con),
        _size_shift(con),
    ]
    return pl.DataFrame(rows, schema=FINDINGS_SCHEMA)


def write_findings(con: duckdb.DuckDBPyConnection) -> int:
    """Recompute and replace ``marts.findings``; return the number of rows written."""
    df = compute_findings(con)
    run_mart_sql(con, "findings")
    con.register("_findings_new", df.to_arrow())
    try:
        con.execute("INSERT INTO marts.findings BY NAME SELECT * FROM _findings_new")
    finally:
        con.unregister("_findings_new")
    return df.height
