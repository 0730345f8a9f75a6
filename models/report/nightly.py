"""The nightly SRE report: one self-contained HTML file plus a Markdown summary.

:func:`render_nightly_report` reads ``core.jobs``, ``raw.ingested_files``, ``raw.rejects`` and the
job-trend marts (``marts.job_usage_daily``, ``marts.utilization_daily``, ``marts.gpu_time_by_state``,
``marts.size_buckets``, ``marts.runtime_quantiles``, ``marts.queue_wait_quantiles``,
``marts.top_consumers``, ``marts.size_share_trend``, ``marts.findings``) and writes
``nightly-YYYY-MM-DD.html`` and ``nightly-YYYY-MM-DD.md``.

Design choices:

* Every section is built independently; a missing or empty table, or a query error in one
  section, shows "No data yet" / an error note in that section instead of failing the report.
* Each section opens with one sentence computed from the data.
* Warehouse text (job names, users, file names, reject reasons) is escaped by Jinja2 autoescape in
  HTML and by :func:`~gpusre.models.report.formatting.md_escape` (applied to every expression) in
  Markdown. Charts are SVG generated here, with labels sanitised, and are the only markup marked
  safe.
* Shares and utilisation are fractions in [0, 1] in the marts.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from . import charts
from .charts import FAILURE_STATES, bucket_colour, state_colour
from .formatting import (
    MISSING,
    fmt_date,
    fmt_duration,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    md_escape,
    truncate,
)

__all__ = [
    "ReportPaths",
    "Cell",
    "Column",
    "Table",
    "Section",
    "render_nightly_report",
    "build_nightly_context",
]

log = logging.getLogger(__name__)

NO_DATA = "No data yet"
_TOP_N_FAILURES = 20
_TOP_N_REJECTS = 20
_TOP_N_CONSUMERS = 10
_UTIL_TABLE_DAYS = 14


@dataclass(frozen=True)
class ReportPaths:
    """Where the nightly report was written."""

    html: Path
    markdown: Path


@dataclass(frozen=True)
class Column:
    """A table column; numeric columns are right-aligned."""

    label: str
    num: bool = False
    nowrap: bool = False


@dataclass(frozen=True)
class Cell:
    """A formatted table cell, optionally with a colour swatch (state / bucket) or monospace text."""

    text: str
    swatch: str | None = None
    mono: bool = False
    title: str | None = None  # full text when ``text`` was truncated


@dataclass(frozen=True)
class Table:
    """A formatted table: column headers and rows of cells, plus an optional caption."""

    columns: Sequence[Column]
    rows: Sequence[Sequence[Cell]]
    caption: str = ""


@dataclass
class Section:
    """One report section: a computed lead sentence, charts (trusted SVG) and tables."""

    key: str
    title: str
    lead: str = ""
    charts: list[Markup] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    no_data: str | None = None  # set when the section has nothing to show, with the reason
    note: str = ""
    side_by_side: bool = False  # lay tables out in two columns


# --------------------------------------------------------------------------------------------
# warehouse access


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, list(params) if params else [])
    names = [d[0] for d in cur.description]
    # DECIMAL columns (e.g. from literal-built marts) would not mix with float arithmetic.
    return [{n: float(v) if isinstance(v, Decimal) else v for n, v in zip(names, r)} for r in cur.fetchall()]


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> Any:
    rows = con.execute(sql, list(params) if params else []).fetchall()
    return rows[0][0] if rows else None


def _table_status(con: duckdb.DuckDBPyConnection, qualified: str) -> str | None:
    """None when the table exists and has rows, otherwise the 'No data yet' reason."""
    schema, name = qualified.split(".")
    exists = _scalar(
        con,
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
        [schema, name],
    )
    if not exists:
        return f"{NO_DATA}: {qualified} has not been built."
    if not _scalar(con, f"SELECT count(*) > 0 FROM {schema}.{name}"):  # name comes from our own list
        return f"{NO_DATA}: {qualified} is empty."
    return None


def _status_many(con: duckdb.DuckDBPyConnection, *tables: str) -> str | None:
    for t in tables:
        reason = _table_status(con, t)
        if reason:
            return reason
    return None


# --------------------------------------------------------------------------------------------
# small presentation helpers


def _state_name(state: str) -> str:
    """'OUT_OF_MEMORY' -> 'Out of memory' for use in sentences."""
    return state.replace("_", " ").capitalize()


def _bucket_name(bucket: str) -> str:
    """'1' -> '1-GPU', '2-8' -> '2-8 GPU' for use in sentences."""
    if bucket == "all":
        return "all jobs"
    return "single-GPU" if bucket == "1" else f"{bucket} GPU"


def _plural(n: int | float | None, word: str) -> str:
    """'1 file', '3 files' with thousands separators."""
    return f"{fmt_int(n)} {word}{'' if n == 1 else 's'}"


def _p_phrase(p: float | None) -> str:
    """'p < 0.001' or 'p = 0.034'."""
    txt = fmt_p(p)
    return f"p {txt}" if txt.startswith("<") else f"p = {txt}"


def _cap(text: str) -> str:
    """Capitalise the first character only ('single-GPU' -> 'Single-GPU', not 'Single-gpu')."""
    return text[:1].upper() + text[1:]


def _period_text(first: str | None, last: str | None) -> str:
    if not first:
        return MISSING
    return first if first == last else f"{first} … {last}"


def _state_cell(state: str) -> Cell:
    return Cell(state, swatch=state_colour(state))


def _bucket_cell(bucket: str) -> Cell:
    return Cell(bucket, swatch=bucket_colour(bucket) if bucket != "all" else None)


def _svg(svg: str) -> Markup:
    # Only SVG produced by charts.figure_to_svg reaches here: labels sanitised, active content refused.
    return Markup(svg)


# --------------------------------------------------------------------------------------------
# sections


@dataclass(frozen=True)
class _Meta:
    report_date: date
    period_first: date | None
    period_last: date | None
    generated_at: datetime
    warehouse_label: str


def _headline(con: duckdb.DuckDBPyConnection, meta: _Meta) -> tuple[Section, list[dict[str, str]]]:
    sec = Section("headline", "Headline")
    cards: list[dict[str, str]] = []
    tot = _rows(
        con,
        "SELECT count(*) AS jobs, sum(gpu_hours) AS gpuh FROM core.jobs WHERE end_day IS NOT NULL",
    )[0]
    util = night_util = None
    if _table_status(con, "marts.utilization_daily") is None:
        util = _scalar(
            con,
            "SELECT sum(allocated_gpu_hours) / nullif(sum(capacity_gpu_hours), 0) FROM marts.utilization_daily",
        )
        night_util = _scalar(con, "SELECT utilization FROM marts.utilization_daily WHERE day = ?",
                             [meta.report_date])
    night = _rows(
        con,
        """SELECT count(*) AS jobs, sum(gpu_hours) AS gpuh,
                  count(*) FILTER (WHERE state IN ('FAILED','NODE_FAIL','OUT_OF_MEMORY','TIMEOUT')) AS failures
           FROM core.jobs WHERE end_day = ?""",
        [meta.report_date],
    )[0]
    fail_by_state = {
        r["state"]: r["n"]
        for r in _rows(
            con,
            "SELECT state, count(*) AS n FROM core.jobs WHERE end_day = ? AND state IN ('FAILED','NODE_FAIL',"
            "'OUT_OF_MEMORY','TIMEOUT') GROUP BY state",
            [meta.report_date],
        )
    }
    # A "run" is not recorded explicitly; files ingested on the latest ingestion day (UTC) stand for it.
    last_run = _rows(
        con,
        """SELECT count(*) AS files, coalesce(sum(rows_rejected), 0) AS rejected,
                  coalesce(sum(rows_read), 0) AS read, max(ingested_at) AS at
           FROM raw.ingested_files
           WHERE CAST(timezone('UTC', ingested_at) AS DATE) =
                 (SELECT max(CAST(timezone('UTC', ingested_at) AS DATE)) FROM raw.ingested_files)""",
    )[0]

    period = _period_text(fmt_date(meta.period_first) if meta.period_first else None,
                          fmt_date(meta.period_last) if meta.period_last else None)
    if not tot["jobs"]:
        sec.lead = f"{NO_DATA}: core.jobs holds no finished jobs."
    else:
        sec.lead = (
            f"From {period}, {fmt_int(tot['jobs'])} jobs used {fmt_int(tot['gpuh'])} GPU-hours"
            + (f" at a mean utilization of {fmt_pct(util)}" if util is not None else "")
            + f"; on {fmt_date(meta.report_date)} {fmt_int(night['jobs'])} jobs ended"
            + f" and {fmt_int(night['failures'])} of them failed."
        )
    fail_detail = ", ".join(f"{s} {fmt_int(fail_by_state.get(s, 0))}" for s in FAILURE_STATES)
    cards = [
        {"label": "Period covered", "value": period, "sub": "job end days, UTC", "tone": ""},
        {"label": "Jobs ended", "value": fmt_int(tot["jobs"]), "sub": "whole period", "tone": ""},
        {"label": "GPU-hours", "value": fmt_int(tot["gpuh"]), "sub": "whole period", "tone": ""},
        {"label": "Mean utilization", "value": fmt_pct(util),
         "sub": "allocated / capacity GPU-hours", "tone": ""},
        {"label": f"Utilization {fmt_date(meta.report_date)}", "value": fmt_pct(night_util),
         "sub": "allocated / capacity GPU-hours", "tone": ""},
        {"label": f"Jobs ended {fmt_date(meta.report_date)}", "value": fmt_int(night["jobs"]),
         "sub": f"{fmt_num(night['gpuh'] or 0.0)} GPU-hours", "tone": ""},
        {"label": f"Failures {fmt_date(meta.report_date)}", "value": fmt_int(night["failures"]),
         "sub": fail_detail, "tone": "bad" if night["failures"] else "good"},
        {"label": "Rejects, last ingestion", "value": fmt_int(last_run["rejected"]),
         "sub": f"of {_plural(last_run['read'], 'row')} in {_plural(last_run['files'], 'file')}"
                + (f", {fmt_date(last_run['at'])}" if last_run["at"] else ""),
         "tone": "bad" if last_run["rejected"] else "good"},
    ]
    return sec, cards


def _findings(con: duckdb.DuckDBPyConnection) -> tuple[Section, list[dict[str, Any]]]:
    sec = Section("findings", "Findings")
    reason = _table_status(con, "marts.findings")
    if reason:
        sec.no_data = reason
        return sec, []
    rows = _rows(con, "SELECT finding_id, title, statement, metric, value, supported FROM marts.findings "
                      "ORDER BY finding_id")
    n_sup = sum(1 for r in rows if r["supported"] is True)
    n_unknown = sum(1 for r in rows if r["supported"] is None)
    sec.lead = (f"{n_sup} of {len(rows)} operator findings are supported by this period's data"
                + (f"; the data cannot decide {n_unknown}." if n_unknown else "."))
    items = []
    for r in rows:
        v = r["value"]
        if isinstance(v, (int, float)) and v is not None:
            value = fmt_int(v) if float(v).is_integer() and abs(v) >= 10 else f"{float(v):,.4g}"
        else:
            value = MISSING if v is None else str(v)
        items.append({
            "id": str(r["finding_id"]),
            "title": r["title"] or "",
            "statement": r["statement"] or "",
            "metric": r["metric"] or "",
            "value": value,
            "supported": r["supported"],  # NULL: the data cannot tell
            "mark": "✓" if r["supported"] else ("?" if r["supported"] is None else "–"),
        })
    return sec, items


def _state_period_label(con: duckdb.DuckDBPyConnection) -> str:
    months = _rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.gpu_time_by_state "
                        "WHERE period_type = 'month'")
    return _period_text(months[0]["a"], months[0]["b"]) if months and months[0]["a"] else "the whole period"


def _by_state(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    sec = Section("states", "GPU-hours by final job state")
    reason = _table_status(con, "marts.gpu_time_by_state")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT state, jobs, gpu_hours, share_jobs, share_gpu_hours
                         FROM marts.gpu_time_by_state WHERE period_type = 'all'
                         ORDER BY gpu_hours DESC NULLS LAST, state""")
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.gpu_time_by_state has no period_type 'all' rows."
        return sec
    period = _state_period_label(con)
    share = {r["state"]: r["share_gpu_hours"] or 0.0 for r in rows}
    top = rows[0]
    failed = sum(share.get(s, 0.0) for s in FAILURE_STATES)
    others = [r for r in rows[1:3] if r["state"] not in FAILURE_STATES]
    sec.lead = (
        f"{_state_name(top['state'])} jobs consumed {fmt_pct(top['share_gpu_hours'])} of GPU time in {period}"
        + "".join(f"; {_state_name(r['state']).lower()} jobs {fmt_pct(r['share_gpu_hours'])}" for r in others)
        + f"; failed jobs (FAILED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT) {fmt_pct(failed)}."
    )
    sec.charts.append(_svg(charts.state_share_chart(
        [(r["state"], r["share_jobs"], r["share_gpu_hours"]) for r in rows],
        f"Share of jobs vs share of GPU-hours by final state, {period}")))
    if _table_status(con, "marts.job_usage_daily") is None:
        daily = _rows(con, """SELECT day, state, sum(gpu_hours) AS gpuh FROM marts.job_usage_daily
                              GROUP BY day, state ORDER BY day""")
        days = sorted({r["day"] for r in daily})
        idx = {d: i for i, d in enumerate(days)}
        order = [r["state"] for r in rows] + sorted({r["state"] for r in daily} - {r["state"] for r in rows})
        series: dict[str, list[float]] = {s: [0.0] * len(days) for s in order if any(r["state"] == s for r in daily)}
        for r in daily:
            series[r["state"]][idx[r["day"]]] += r["gpuh"] or 0.0
        sec.charts.append(_svg(charts.daily_state_chart(days, series, "Daily GPU-hours by final state")))
    sec.tables.append(Table(
        [Column("State"), Column("Jobs", True), Column("Share of jobs", True), Column("GPU-hours", True),
         Column("Share of GPU-hours", True)],
        [[_state_cell(r["state"]), Cell(fmt_int(r["jobs"])), Cell(fmt_pct(r["share_jobs"])),
          Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))] for r in rows],
    ))
    return sec


def _sizes(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("sizes", "Job size: share of jobs vs share of GPU-hours")
    reason = _table_status(con, "marts.size_buckets")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT size_bucket, jobs, gpu_hours, share_jobs, share_gpu_hours
                         FROM marts.size_buckets WHERE period_type = 'all' ORDER BY bucket_order""")
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.size_buckets has no period_type 'all' rows."
        return sec
    biggest = max(rows, key=lambda r: r["share_gpu_hours"] or 0.0)
    single = next((r for r in rows if r["size_bucket"] == "1"), None)
    first = single or rows[0]
    sec.lead = (
        f"{_cap(_bucket_name(first['size_bucket']))} jobs are {fmt_pct(first['share_jobs'])} of jobs "
        f"but {fmt_pct(first['share_gpu_hours'])} of GPU-hours; {_bucket_name(biggest['size_bucket'])} jobs take "
        f"the largest share of GPU-hours, {fmt_pct(biggest['share_gpu_hours'])} "
        f"(from {fmt_pct(biggest['share_jobs'])} of jobs)."
    )
    sec.charts.append(_svg(charts.size_share_chart(
        [(r["size_bucket"], r["share_jobs"], r["share_gpu_hours"]) for r in rows],
        "Share of jobs vs share of GPU-hours by job size")))
    sec.tables.append(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column("Share of jobs", True), Column("GPU-hours", True),
         Column("Share of GPU-hours", True)],
        [[_bucket_cell(r["size_bucket"]), Cell(fmt_int(r["jobs"])), Cell(fmt_pct(r["share_jobs"])),
          Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))] for r in rows],
    ))
    return sec


def _quantile_section(con: duckdb.DuckDBPyConnection, *, key: str, title: str, table: str, unit: str,
                      unit_label: str, what: str) -> Section:
    sec = Section(key, title)
    reason = _table_status(con, table)
    if reason:
        sec.no_data = reason
        return sec
    u = unit
    rows = _rows(con, f"""SELECT size_bucket, jobs, p50_{u} AS p50, p90_{u} AS p90, p99_{u} AS p99,
                                 max_{u} AS mx, mean_{u} AS mean
                          FROM {table} ORDER BY (size_bucket = 'all'), bucket_order""")
    buckets = [r for r in rows if r["size_bucket"] != "all"]
    overall = next((r for r in rows if r["size_bucket"] == "all"), None)
    unit_short = "h" if u == "h" else "min"
    dec = 2 if u == "h" else 1
    with_p99 = [r for r in buckets if r["p99"] is not None]
    parts = []
    if overall:
        parts.append(f"Across all jobs the median {what} is {fmt_num(overall['p50'], dec)} {unit_short} "
                     f"and p99 is {fmt_num(overall['p99'], dec)} {unit_short}")
    if with_p99:
        hi = max(with_p99, key=lambda r: r["p99"])
        lo = min(with_p99, key=lambda r: r["p50"] if r["p50"] is not None else float("inf"))
        parts.append(f"the longest tail is in the {_bucket_name(hi['size_bucket'])} bucket "
                     f"(p99 {fmt_num(hi['p99'], dec)} {unit_short}), the shortest median in the "
                     f"{_bucket_name(lo['size_bucket'])} bucket ({fmt_num(lo['p50'], dec)} {unit_short})")
    sec.lead = ("; ".join(parts) + ".") if parts else f"{NO_DATA}: no quantiles in {table}."
    sec.lead = _cap(sec.lead)
    if buckets:
        sec.charts.append(_svg(charts.quantile_chart(
            [(r["size_bucket"], r["p50"], r["p90"], r["p99"], r["mx"]) for r in buckets],
            f"{what.capitalize()} quantiles by job size (log scale)", unit_label)))
    sec.tables.append(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column(f"p50 ({unit_short})", True),
         Column(f"p90 ({unit_short})", True), Column(f"p99 ({unit_short})", True),
         Column(f"max ({unit_short})", True), Column(f"mean ({unit_short})", True)],
        [[_bucket_cell(r["size_bucket"]), Cell(fmt_int(r["jobs"]))]
         + [Cell(fmt_num(r[k], dec)) for k in ("p50", "p90", "p99", "mx", "mean")] for r in rows],
    ))
    return sec


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
                f"the {_bucket_name(r['size_bucket'])} share {'rose' if r['direction'] == 'rising' else 'fell'} "
                f"from {fmt_pct(r['first_share'])} to {fmt_pct(r['last_share'])} "
                f"({fmt_pp(_per_month(r, 'slope_per_period'))} per month, {_p_phrase(r['p_value'])})"
                for r in moving))
    return _cap("; ".join(parts) + ".")


def _monthly_shift(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("shift", "Monthly shift in job size")
    have_months = _table_status(con, "marts.size_buckets") is None
    months = _rows(con, """SELECT period, size_bucket, bucket_order, share_gpu_hours FROM marts.size_buckets
                           WHERE period_type = 'month' ORDER BY period, bucket_order""") if have_months else []
    have_trend = _table_status(con, "marts.size_share_trend") is None
    trend = _rows(con, """SELECT granularity, size_bucket, n_periods, first_share, last_share, slope_per_period,
                                 slope_ci_low, slope_ci_high, p_value, kendall_tau, direction
                          FROM marts.size_share_trend
                          ORDER BY (granularity <> 'month'), granularity, bucket_order""") if have_trend else []
    if not months and not trend:
        sec.no_data = f"{NO_DATA}: marts.size_buckets (monthly rows) and marts.size_share_trend are empty or missing."
        return sec
    periods = sorted({r["period"] for r in months})
    if months:
        order: dict[str, int] = {}
        for r in months:
            order.setdefault(r["size_bucket"], r["bucket_order"])
        idx = {p: i for i, p in enumerate(periods)}
        series: dict[str, list[float]] = {b: [0.0] * len(periods) for b in sorted(order, key=order.__getitem__)}
        for r in months:
            series[r["size_bucket"]][idx[r["period"]]] = r["share_gpu_hours"] or 0.0
        sec.charts.append(_svg(charts.monthly_bucket_share_chart(
            periods, series, f"Monthly share of GPU-hours by job size, {_period_text(periods[0], periods[-1])}")))
    if trend:
        sec.lead = _trend_sentence(trend)
    else:
        sec.lead = (f"The GPU-hour share by job size over {_period_text(periods[0], periods[-1])} is shown below; "
                    f"{NO_DATA.lower()} for the trend test (marts.size_share_trend).")
    if trend:
        sec.tables.append(Table(
            [Column("Series"), Column("GPUs per job"), Column("Periods", True),
             Column("Share first → last", True), Column("Slope (pp / month)", True), Column("95 % CI", True),
             Column("p-value", True), Column("Kendall τ", True), Column("Direction", nowrap=True)],
            [[Cell(f"{r['granularity']}ly"), _bucket_cell(r["size_bucket"]), Cell(fmt_int(r["n_periods"])),
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


def _utilization(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    sec = Section("utilization", "Utilization")
    reason = _table_status(con, "marts.utilization_daily")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT day, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc, utilization,
                                jobs_running FROM marts.utilization_daily ORDER BY day""")
    cap = sum(r["cap"] or 0.0 for r in rows)
    alloc = sum(r["alloc"] or 0.0 for r in rows)
    mean_u = alloc / cap if cap else None
    recent = [r for r in rows if r["day"] <= meta.report_date][-_UTIL_TABLE_DAYS:]
    rc = sum(r["cap"] or 0.0 for r in recent)
    recent_u = sum(r["alloc"] or 0.0 for r in recent) / rc if rc else None
    with_u = [r for r in rows if r["utilization"] is not None]
    low = min(with_u, key=lambda r: r["utilization"]) if with_u else None
    sec.lead = (
        f"Mean utilization was {fmt_pct(mean_u)} over {fmt_int(len(rows))} days "
        f"({fmt_int(alloc)} of {fmt_int(cap)} GPU-hours allocated); the last {len(recent)} days averaged "
        f"{fmt_pct(recent_u)}" + (f", and the lowest day was {fmt_date(low['day'])} at {fmt_pct(low['utilization'])}."
                                  if low else ".")
    )
    sec.charts.append(_svg(charts.utilization_chart(
        # Unknown capacity is a gap in the line, not a drop to zero.
        [r["day"] for r in rows], [float("nan") if r["cap"] is None else r["cap"] for r in rows], [r["alloc"] or 0.0 for r in rows], mean_u,
        "Daily allocated vs capacity GPU-hours")))
    sec.tables.append(Table(
        [Column("Day"), Column("Capacity (GPU-h)", True), Column("Allocated (GPU-h)", True),
         Column("Utilization", True), Column("Jobs running", True)],
        [[Cell(fmt_date(r["day"])), Cell(fmt_num(r["cap"])), Cell(fmt_num(r["alloc"])),
          Cell(fmt_pct(r["utilization"])), Cell(fmt_int(r["jobs_running"]))] for r in reversed(recent)],
        caption=f"Last {len(recent)} days up to {fmt_date(meta.report_date)}, newest first.",
    ))
    return sec


def _top_consumers(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("top", "Top users and accounts", side_by_side=True)
    reason = _table_status(con, "marts.top_consumers")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT kind, rank, name, jobs, gpu_hours, share_gpu_hours FROM marts.top_consumers
                         WHERE rank <= ? ORDER BY kind DESC, rank""", [_TOP_N_CONSUMERS])
    users = [r for r in rows if r["kind"] == "user"]
    accounts = [r for r in rows if r["kind"] == "account"]
    parts = []
    for label, rs in (("users", users), ("accounts", accounts)):
        if rs:
            tot = sum(r["share_gpu_hours"] or 0.0 for r in rs)
            parts.append(f"the top {len(rs)} {label} consumed {fmt_pct(tot)} of GPU-hours "
                         f"(largest: {rs[0]['name']}, {fmt_pct(rs[0]['share_gpu_hours'])})")
    sec.lead = _cap("; ".join(parts) + ".")
    if users:
        sec.charts.append(_svg(charts.top_consumers_chart(
            [(r["name"], r["share_gpu_hours"]) for r in users], f"Top {len(users)} users by share of GPU-hours",
            "Share of GPU-hours (%)")))
    for label, rs in (("User", users), ("Account", accounts)):
        if rs:
            sec.tables.append(Table(
                [Column("#", True), Column(label), Column("Jobs", True), Column("GPU-hours", True),
                 Column("Share", True)],
                [[Cell(fmt_int(r["rank"])), Cell(truncate(r["name"], 32), title=r["name"]),
                  Cell(fmt_int(r["jobs"])), Cell(fmt_num(r["gpu_hours"])), Cell(fmt_pct(r["share_gpu_hours"]))]
                 for r in rs],
                caption=f"Top {len(rs)} {label.lower()}s",
            ))
    return sec


def _failures(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("failures", f"Last night's job failures ({d})")
    states = list(FAILURE_STATES)
    ph = ",".join("?" * len(states))
    rows = _rows(con, f"""SELECT job_id, "user", name, n_gpus, elapsed_s, state, exit_code, exit_signal, gpu_hours
                          FROM core.jobs WHERE end_day = ? AND state IN ({ph})
                          ORDER BY gpu_hours DESC NULLS LAST, job_id LIMIT {_TOP_N_FAILURES}""",
                 [meta.report_date, *states])
    agg = _rows(con, f"""SELECT count(*) FILTER (WHERE state IN ({ph})) AS n,
                                sum(gpu_hours) FILTER (WHERE state IN ({ph})) AS gpuh,
                                sum(gpu_hours) AS day_gpuh
                         FROM core.jobs WHERE end_day = ?""", [*states, *states, meta.report_date])[0]
    if not rows:
        sec.lead = f"No jobs ended in FAILED, NODE_FAIL, OUT_OF_MEMORY or TIMEOUT on {d}."
        return sec
    share = (agg["gpuh"] or 0.0) / agg["day_gpuh"] if agg["day_gpuh"] else None
    top = rows[0]
    sec.lead = (f"{fmt_int(agg['n'])} jobs ended in a failure state on {d}, using {fmt_num(agg['gpuh'])} GPU-hours "
                f"({fmt_pct(share)} of that day's GPU-hours); the largest was job {top['job_id']} "
                f"({top['state']}, {fmt_num(top['gpu_hours'])} GPU-hours).")
    sec.tables.append(Table(
        [Column("Job ID"), Column("User"), Column("Name"), Column("GPUs", True), Column("Elapsed", True),
         Column("State"), Column("Exit code", True), Column("GPU-hours", True)],
        [[Cell(str(r["job_id"]), mono=True), Cell(truncate(r["user"], 24), title=r["user"]),
          Cell(truncate(r["name"], 40), title=r["name"]), Cell(fmt_int(r["n_gpus"])),
          Cell(fmt_duration(r["elapsed_s"]), mono=True), _state_cell(r["state"]),
          Cell(MISSING if r["exit_code"] is None else f"{r['exit_code']}:{r['exit_signal'] or 0}", mono=True),
          Cell(fmt_num(r["gpu_hours"]))] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(agg['n'])} failed jobs by GPU-hours; exit code as code:signal.",
    ))
    return sec


def _data_quality(con: duckdb.DuckDBPyConnection) -> tuple[Section, dict[str, str]]:
    sec = Section("quality", "Data quality")
    tot = _rows(con, """SELECT count(*) AS files, coalesce(sum(rows_read), 0) AS rd,
                               coalesce(sum(rows_loaded), 0) AS ld, coalesce(sum(rows_rejected), 0) AS rj,
                               count(*) FILTER (WHERE status = 'refused') AS refused
                        FROM raw.ingested_files""")[0]
    n_rejects = _scalar(con, "SELECT count(*) FROM raw.rejects") or 0
    prov = {"files": fmt_int(tot["files"]), "rows_read": fmt_int(tot["rd"]), "rejects": fmt_int(tot["rj"])}
    if not tot["files"] and not n_rejects:
        sec.no_data = f"{NO_DATA}: no files have been ingested (raw.ingested_files is empty)."
        return sec, prov
    rate = tot["rj"] / tot["rd"] if tot["rd"] else None
    sec.lead = (f"{_plural(tot['files'], 'file')} ingested: {fmt_int(tot['rd'])} rows read, {fmt_int(tot['ld'])} "
                f"loaded and {fmt_int(tot['rj'])} rows rejected ({fmt_pct(rate, 2)})"
                + (f"; {_plural(tot['refused'], 'file')} refused as a whole." if tot["refused"] else "."))
    kinds = _rows(con, """SELECT source_kind, count(*) AS files, sum(rows_read) AS rd, sum(rows_loaded) AS ld,
                                 sum(rows_rejected) AS rj, count(*) FILTER (WHERE status = 'refused') AS refused,
                                 max(ingested_at) AS last_at
                          FROM raw.ingested_files GROUP BY source_kind ORDER BY source_kind""")
    sec.tables.append(Table(
        [Column("Source"), Column("Files", True), Column("Rows read", True), Column("Loaded", True),
         Column("Rows rejected", True), Column("Reject rate", True), Column("Files refused", True),
         Column("Last ingested")],
        [[Cell(r["source_kind"]), Cell(fmt_int(r["files"])), Cell(fmt_int(r["rd"])), Cell(fmt_int(r["ld"])),
          Cell(fmt_int(r["rj"])), Cell(fmt_pct(r["rj"] / r["rd"] if r["rd"] else None, 2)),
          Cell(fmt_int(r["refused"])), Cell(fmt_date(r["last_at"]))] for r in kinds],
        caption="Ingestion by source kind.",
    ))
    rejects = _rows(con, f"""SELECT source_file, line_no, error, raw, rejected_at FROM raw.rejects
                             ORDER BY rejected_at DESC, source_file, line_no LIMIT {_TOP_N_REJECTS}""")
    if rejects:
        sec.tables.append(Table(
            [Column("Rejected at"), Column("File:line"), Column("Reason"), Column("Raw record")],
            [[Cell(fmt_date(r["rejected_at"])),
              Cell(truncate(f"{r['source_file']}:{r['line_no']}", 60), mono=True,
                   title=f"{r['source_file']}:{r['line_no']}"),
              Cell(truncate(r["error"], 90), title=r["error"]),
              Cell(truncate(r["raw"], 70), mono=True, title=r["raw"])] for r in rejects],
            caption=f"Latest {len(rejects)} of {fmt_int(n_rejects)} rejected records (line 0 = whole file refused).",
        ))
    return sec, prov


# --------------------------------------------------------------------------------------------
# assembly


def _guard(title: str, key: str, build: Callable[[], Section]) -> Section:
    """Run one section builder; a query error degrades to a note in that section only."""
    try:
        return build()
    except duckdb.Error as exc:
        # One mart with an unexpected shape must not cost the SREs the whole nightly report.
        log.warning("nightly report section %s failed: %s", key, exc)
        return Section(key, title, no_data=f"Could not be computed: {type(exc).__name__}: {truncate(exc, 300)}")


def _latest_complete_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The last UTC day the dumps cover completely: a dump cut at 00:15 shows only a sliver of
    the new day, and reporting that sliver as "last night" would show near-zero utilization."""
    rows = _rows(con, """SELECT (max(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))))::DATE - 1) AS d,
                                 max(end_day) AS last_end FROM core.jobs""")
    if not rows or rows[0]["d"] is None:
        return None
    return min(rows[0]["d"], rows[0]["last_end"]) if rows[0]["last_end"] else rows[0]["d"]


def build_nightly_context(
    con: duckdb.DuckDBPyConnection,
    *,
    report_date: date | None = None,
    warehouse_label: str = "",
    generated_at: datetime | None = None,
) -> dict[str, Any]:
    """Query the warehouse and build everything the nightly templates need.

    Returns a dict with ``meta`` (report date, period, provenance strings), ``cards`` (headline KPI
    cards), ``findings`` and ``sections`` (list of :class:`Section`, in report order). Exposed so
    callers (e.g. an asset) can attach the headline numbers as metadata.
    """
    period = _rows(con, "SELECT min(end_day) AS a, max(end_day) AS b FROM core.jobs")[0]
    if report_date is None:
        report_date = _latest_complete_day(con) or period["b"] or datetime.now(timezone.utc).date()
    meta = _Meta(report_date, period["a"], period["b"], generated_at or datetime.now(timezone.utc),
                 warehouse_label)

    headline, cards = _headline(con, meta)
    try:
        findings_sec, findings = _findings(con)
    except duckdb.Error as exc:
        log.warning("nightly report findings failed: %s", exc)
        findings_sec, findings = Section("findings", "Findings", no_data=f"Could not be computed: {exc}"), []
    sections = [
        _guard("GPU-hours by final job state", "states", lambda: _by_state(con, meta)),
        _guard("Job size", "sizes", lambda: _sizes(con)),
        _guard("Runtime tail by job size", "runtime", lambda: _quantile_section(
            con, key="runtime", title="Runtime tail by job size", table="marts.runtime_quantiles", unit="h",
            unit_label="Runtime (hours, log scale)", what="runtime")),
        _guard("Monthly shift in job size", "shift", lambda: _monthly_shift(con)),
        _guard("Utilization", "utilization", lambda: _utilization(con, meta)),
        _guard("Queue wait by job size", "queue", lambda: _quantile_section(
            con, key="queue", title="Queue wait by job size", table="marts.queue_wait_quantiles", unit="min",
            unit_label="Queue wait (minutes, log scale)", what="queue wait")),
        _guard("Top users and accounts", "top", lambda: _top_consumers(con)),
        _guard("Last night's job failures", "failures", lambda: _failures(con, meta)),
    ]
    try:
        quality, prov = _data_quality(con)
    except duckdb.Error as exc:
        log.warning("nightly report data quality section failed: %s", exc)
        quality = Section("quality", "Data quality", no_data=f"Could not be computed: {truncate(exc, 300)}")
        prov = {"files": MISSING, "rows_read": MISSING, "rejects": MISSING}
    sections.append(quality)
    period_txt = _period_text(fmt_date(meta.period_first) if meta.period_first else None,
                              fmt_date(meta.period_last) if meta.period_last else None)
    return {
        "meta": {
            "report_date": fmt_date(meta.report_date),
            "period": period_txt,
            "generated_at": meta.generated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
            "files": prov["files"],
            "rows_read": prov["rows_read"],
            "rejects": prov["rejects"],
        },
        "headline": headline,
        "cards": cards,
        "findings_section": findings_sec,
        "findings": findings,
        "sections": sections,
        "by_key": {s.key: s for s in sections},
    }


_UNIT_SPACE = re.compile(r"(?<=\d) (?=%|pp\b|h\b|min\b)|(?<=\bp) (?=[<=])|(?<=[<=]) (?=\d)")


def _nbsp(text: str) -> str:
    """Glue numbers to their unit ('41.2 %') so a sentence never wraps between them."""
    return _UNIT_SPACE.sub("\u00a0", text)


def _environment(markdown: bool) -> Environment:
    if markdown:
        # Every {{ expression }} is escaped for Markdown; literal template text is not.
        return Environment(loader=PackageLoader("gpusre.models.report", "templates"), autoescape=False,
                           finalize=md_escape, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                           keep_trailing_newline=True)
    env = Environment(loader=PackageLoader("gpusre.models.report", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["nbsp"] = _nbsp
    return env


def render_nightly_report(
    con: duckdb.DuckDBPyConnection,
    out_dir: Path,
    *,
    report_date: date | None = None,
    warehouse_label: str = "",
) -> ReportPaths:
    """Render the nightly report to ``out_dir/nightly-YYYY-MM-DD.html`` and ``.md``.

    ``report_date`` is "last night" (default: the last UTC day the dumps cover completely, or today in
    UTC for an empty warehouse); ``warehouse_label`` names the DuckDB file in the footer. Missing or
    empty marts yield "No data yet" in their section. Returns the two paths written.
    """
    ctx = build_nightly_context(con, report_date=report_date, warehouse_label=warehouse_label)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"nightly-{ctx['meta']['report_date']}"
    html_path = out_dir / f"{stem}.html"
    md_path = out_dir / f"{stem}.md"
    html = _environment(markdown=False).get_template("nightly.html.j2").render(**ctx)
    md = _environment(markdown=True).get_template("nightly.md.j2").render(**ctx)
    # Write then rename so a mail job picking the file up never sees a half-written report.
    for path, text in ((html_path, html), (md_path, md)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return ReportPaths(html=html_path, markdown=md_path)
