"""Nightly report section "Monthly shift in job size" (``#shift``).

Reads marts.size_buckets, marts.size_share_trend; formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    months_or_days_text,
    p_phrase,
    sentence_case,
)
from gpusre.reports.kit.labels import bucket_cell, bucket_name
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta

#: Average weeks per month, to express weekly slopes per month (as the findings mart does).
_WEEKS_PER_MONTH = 365.25 / 12 / 7


def _per_month(row: dict[str, Any], col: str) -> float | None:
    v = row[col]
    if v is None:
        return None
    return v * (_WEEKS_PER_MONTH if row["granularity"] == "week" else 1.0)


def _trend_sentence(trend: list[dict[str, Any]]) -> str:
    """One sentence over all trend series: significant movers per granularity, months first."""
    parts = []
    for gran in sorted({r["granularity"] for r in trend}, key=lambda g: (g != "month", g)):
        rows = [r for r in trend if r["granularity"] == gran]
        n = max((r["n_periods"] or 0) for r in rows)
        moving = [r for r in rows if r["direction"] in ("rising", "falling")]
        if all(r["direction"] == "insufficient data" for r in rows):
            parts.append(f"{fmt_int(n)} full {gran}s are too few to test for a trend")
        elif not moving:
            parts.append(f"over {fmt_int(n)} {gran}s no bucket's GPU-hour share moved significantly")
        else:
            parts.append(f"over {fmt_int(n)} {gran}s " + ", ".join(
                f"the {bucket_name(r['size_bucket'])} share {'rose' if r['direction'] == 'rising' else 'fell'} "
                f"from {fmt_pct(r['first_share'])} to {fmt_pct(r['last_share'])} "
                f"({fmt_pp(_per_month(r, 'slope_per_period'))} per month, {p_phrase(r['p_value'])})"
                for r in moving))
    return sentence_case("; ".join(parts) + ".")


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("shift", "Monthly shift in job size")
    have_months = table_status(con, "marts.size_buckets") is None
    months = query_rows(con, """SELECT period, size_bucket, bucket_order, share_gpu_hours FROM marts.size_buckets
                           WHERE period_type = 'month' ORDER BY period, bucket_order""") if have_months else []
    have_trend = table_status(con, "marts.size_share_trend") is None
    trend = query_rows(con, """SELECT granularity, size_bucket, n_periods, first_share, last_share, slope_per_period,
                                 slope_ci_low, slope_ci_high, p_value, kendall_tau, direction
                          FROM marts.size_share_trend
                          ORDER BY (granularity <> 'month'), granularity, bucket_order""") if have_trend else []
    if not months and not trend:
        sec.no_data = f"{NO_DATA}: marts.size_buckets (monthly rows) and marts.size_share_trend are empty or missing."
        return sec
    periods = sorted({r["period"] for r in months})
    # the months, or the days of data in them when fewer ('2026-11-18 … 2026-11-24', not '2026-11')
    span = months_or_days_text(periods[0] if periods else None, periods[-1] if periods else None,
                               meta.period_first, meta.data_last or meta.period_last)
    if months:
        order: dict[str, int] = {}
        for r in months:
            order.setdefault(r["size_bucket"], r["bucket_order"])
        idx = {p: i for i, p in enumerate(periods)}
        series: dict[str, list[float]] = {b: [0.0] * len(periods) for b in sorted(order, key=order.__getitem__)}
        for r in months:
            series[r["size_bucket"]][idx[r["period"]]] = r["share_gpu_hours"] or 0.0
        sec.add(svg(charts.monthly_bucket_share_chart(
            periods, series, f"Monthly share of GPU-hours by job size, {span}")))
    if trend:
        sec.lead = _trend_sentence(trend)
    else:
        sec.lead = (f"The GPU-hour share by job size over {span} is shown below; "
                    f"{NO_DATA.lower()} for the trend test (marts.size_share_trend).")
    if trend:
        sec.add(Table(
            [Column("Series"), Column("GPUs per job"), Column("Periods", True),
             Column("Share first → last", True), Column("Slope (pp / month)", True), Column("95 % CI", True),
             Column("p-value", True), Column("Kendall τ", True), Column("Direction", nowrap=True)],
            [[Cell(f"{r['granularity']}ly"), bucket_cell(r["size_bucket"]), Cell(fmt_int(r["n_periods"])),
              Cell(f"{fmt_pct(r['first_share'])} → {fmt_pct(r['last_share'])}"),
              Cell(fmt_pp(_per_month(r, "slope_per_period"))),
              Cell(MISSING if r["slope_ci_low"] is None else
                   f"{fmt_pp(_per_month(r, 'slope_ci_low'))[:-3]} … {fmt_pp(_per_month(r, 'slope_ci_high'))[:-3]}"),
              Cell(fmt_p(r["p_value"])), Cell(fmt_num(r["kendall_tau"], 2)), Cell(r["direction"] or MISSING)]
             for r in trend],
            caption="OLS slope of each bucket's GPU-hour share, in percentage points per month (weekly series "
                    "scaled by 4.35 weeks per month), with its 95 % confidence interval; a direction is given only "
                    "when the trend is significant.",
        ))
    return sec


SECTION = SectionSpec("shift", "Monthly shift in job size", build)
