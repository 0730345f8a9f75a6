"""The nightly SRE report: one self-contained HTML file plus a Markdown summary.

:func:`render_nightly_report` reads ``core.jobs``, ``raw.ingested_files``, ``raw.rejects`` and the
job-trend marts (``marts.job_usage_daily``, ``marts.utilization_daily``, ``marts.gpu_time_by_state``,
``marts.size_buckets``, ``marts.runtime_quantiles``, ``marts.queue_wait_quantiles``,
``marts.top_consumers``, ``marts.size_share_trend``, ``marts.findings``), the node-log failure
marts (``marts.job_failure_attribution``, ``marts.failure_taxonomy``, ``marts.hw_incidents``,
``marts.suspect_nodes``), ``core.log_templates``, and the Slurm node-state tables
(``marts.node_availability_daily``, ``core.node_states``, ``marts.repair_times``,
``marts.drain_reasons``), the alert marts (``core.alerts``, ``marts.alert_daily``, ``marts.alert_floods``,
``marts.alert_incidents``, ``marts.alert_rule_quality``, ``marts.hw_incidents_without_alert``), and writes
``nightly-YYYY-MM-DD.html`` and ``nightly-YYYY-MM-DD.md``.

Design choices:

* Every section is built independently; a missing or empty table, or a query error in one
  section, shows "No data yet" / an error note in that section instead of failing the report.
* Each section opens with one sentence computed from the data.
* Warehouse text (job names, users, file names, reject reasons) is escaped by Jinja2 autoescape in
  HTML and by :func:`~gpusre.reports.formatting.md_escape` (applied to every expression) in
  Markdown. Charts are SVG generated here, with labels sanitised, and are the only markup marked
  safe.
* Shares and utilisation are fractions in [0, 1] in the marts.
* "Last night" is the report date as a UTC day: jobs by ``end_ts``, incidents by ``start_ts``,
  log templates by ``first_seen_ts``. "New log templates" are those first seen in the logs that day;
  only when there are none does the section fall back to templates first ingested on the latest
  ingestion day (logs that landed late, or a first load), and its sentence says which it shows.
* An empty ``marts.suspect_nodes`` (it may even have no columns) means no node was flagged.
* Node-state sections say "No node-state history yet" while neither ``raw.slurm_events`` nor
  ``core.node_states`` has rows. The availability heat map covers the 14 days up to the report date,
  every node for up to 48 nodes, else the 40 with the most down time plus one row for the others;
  "out of service now" means at the end of the report day (UTC).
* Alert sections say "No alerts yet" while ``core.alerts`` is empty or missing. Alerts, incidents and
  flood episodes belong to the UTC day they started on; the daily chart covers the 14 days up to the
  report date (days outside the alert history are "no data", not zero). Rule quality is over the
  whole alert history; missing coverage (hardware incidents without an alert) over those 14 days.
"""

from __future__ import annotations

import logging
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from gpusre.models.component_classes import class_label
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.models.warehouse import select_columns

from . import charts
from .coverage import GAP_WARN_DAYS, SOURCE_LABELS, coverage_warnings, ends_early, freshness_rows
from .charts import FAILURE_STATES, bucket_colour, state_colour
from .queries import query_rows as _rows
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
from .formatting import plural as _plural

__all__ = [
    "ReportPaths",
    "Cell",
    "Column",
    "Table",
    "Section",
    "render_nightly_report",
    "build_nightly_context",
    "COMPONENT_LABELS",
    "component_label",
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
    sub: str | None = None  # a second, smaller line (HTML) / appended after a dash (Markdown)


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


#: Last night is compared with the median of this many days before it (those the data covers).
_BASELINE_DAYS = 7


def _baseline(con: duckdb.DuckDBPyConnection, meta: _Meta) -> dict[str, Any]:
    """Medians of jobs ended, failures and utilization over the (up to) :data:`_BASELINE_DAYS` days
    before the report day that the data covers; ``{}`` when there are none. A median, not a mean:
    one big incident night should not move the yardstick."""
    last = meta.report_date - timedelta(days=1)
    first = meta.report_date - timedelta(days=_BASELINE_DAYS)
    if meta.period_first is not None:
        first = max(first, meta.period_first)
    if first > last:
        return {}
    states = list(FAILURE_STATES)
    rows = _rows(con, f"""WITH days AS (SELECT unnest(generate_series(?::DATE, ?::DATE, INTERVAL 1 DAY))::DATE AS day)
                          SELECT d.day, count(j.job_id) AS jobs,
                                 count(j.job_id) FILTER (WHERE j.state IN ({",".join("?" * len(states))})) AS failures
                          FROM days AS d LEFT JOIN core.jobs AS j ON j.end_day = d.day
                          GROUP BY d.day""", [first, last, *states])
    utils = []
    if _table_status(con, "marts.utilization_daily") is None:
        utils = [r["utilization"] for r in _rows(con, "SELECT utilization FROM marts.utilization_daily "
                                                      "WHERE day BETWEEN ? AND ? AND utilization IS NOT NULL",
                                                 [first, last])]
    return {
        "days": len(rows),
        "jobs": statistics.median(r["jobs"] for r in rows),
        "failures": statistics.median(r["failures"] for r in rows),
        "util": statistics.median(utils) if utils else None,
    }


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
    base = _baseline(con, meta) if tot["jobs"] else {}

    def vs_base(key: str, fmt: Callable[[Any], str]) -> str:
        return f" · {base['days']}-day median {fmt(base[key])}" if base.get(key) is not None else ""

    if not tot["jobs"]:
        sec.lead = f"{NO_DATA}: core.jobs holds no finished jobs."
    else:
        sec.lead = (
            f"From {period}, {_plural(tot['jobs'], 'job')} used {fmt_int(tot['gpuh'])} GPU-hours"
            + (f" at a mean utilization of {fmt_pct(util)}" if util is not None else "")
            + f"; on {fmt_date(meta.report_date)} {_plural(night['jobs'], 'job')} ended"
            + f" and {fmt_int(night['failures'])} of them failed"
            + (f" (median of the {_plural(base['days'], 'day')} before: {fmt_num(base['jobs'], 0)} jobs ended, "
               f"{fmt_num(base['failures'], 0)} failed)." if base else ".")
        )
    fail_detail = ", ".join(f"{s} {fmt_int(fail_by_state.get(s, 0))}" for s in FAILURE_STATES)
    cards = [
        {"label": "Period covered", "value": period, "sub": "job end days, UTC", "tone": ""},
        {"label": "Jobs ended", "value": fmt_int(tot["jobs"]), "sub": "whole period", "tone": ""},
        {"label": "GPU-hours", "value": fmt_int(tot["gpuh"]), "sub": "whole period", "tone": ""},
        {"label": "Mean utilization", "value": fmt_pct(util),
         "sub": "allocated / capacity GPU-hours", "tone": ""},
        {"label": f"Utilization {fmt_date(meta.report_date)}", "value": fmt_pct(night_util),
         "sub": "allocated / capacity GPU-hours" + vs_base("util", fmt_pct), "tone": ""},
        {"label": f"Jobs ended {fmt_date(meta.report_date)}", "value": fmt_int(night["jobs"]),
         "sub": f"{fmt_num(night['gpuh'] or 0.0)} GPU-hours" + vs_base("jobs", lambda v: fmt_num(v, 0)), "tone": ""},
        {"label": f"Failures {fmt_date(meta.report_date)}", "value": fmt_int(night["failures"]),
         "sub": fail_detail + vs_base("failures", lambda v: fmt_num(v, 0)),
         "tone": "bad" if night["failures"] else "good"},
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
    if top["share_gpu_hours"] is None:  # GPU jobs that ran 0 s, or no GPU counts in the dumps
        sec.lead = (f"No GPU-hours were recorded in {period}: {_plural(sum(r['jobs'] or 0 for r in rows), 'GPU job')} "
                    "ended, none with a positive runtime × GPU count.")
    else:
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
    if biggest["share_gpu_hours"] is None:
        sec.lead = (f"No GPU-hours were recorded, so no size shares of GPU time; "
                    f"{_bucket_name(first['size_bucket'])} jobs are {fmt_pct(first['share_jobs'])} of jobs.")
    else:
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


def _span(seconds: float | None) -> str:
    """A runtime or queue wait: '45 s', '15.2 min' (a decimal, since the published medians differ by
    less than a minute), then as :func:`_age` ('5.2 h', '3.1 days')."""
    if seconds is None:
        return MISSING
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:,.1f} min"
    return _age(seconds / 3600)


def _against(value: float | None, published: list[tuple[str, float]], fmt: Callable[[float], str]) -> str:
    """Where ``value`` stands among published (cluster, value) figures, as a phrase."""
    if value is None or not published:
        return ""
    lo, hi = min(published, key=lambda x: x[1]), max(published, key=lambda x: x[1])
    if value < lo[1]:
        return f"below every published cluster (lowest {lo[0]}, {fmt(lo[1])})"
    if value > hi[1]:
        return f"above every published cluster (highest {hi[0]}, {fmt(hi[1])})"
    return f"within the published range, {fmt(lo[1])} ({lo[0]}) to {fmt(hi[1])} ({hi[0]})"


#: (label, column, formatter) rows of the comparison table.
_COMPARISON_ROWS: tuple[tuple[str, str, Callable[[Any], str]], ...] = (
    ("Trace period", "trace_period", lambda v: v or MISSING),
    ("GPU jobs", "gpu_jobs", fmt_int),
    ("Completed, share of GPU time", "completed_share_gpu_time", fmt_pct),
    ("Cancelled, share of GPU time", "cancelled_share_gpu_time", fmt_pct),
    ("Failed, share of GPU time", "failed_share_gpu_time", fmt_pct),
    ("Completed, share of jobs", "completed_share_jobs", fmt_pct),
    ("Cancelled, share of jobs", "cancelled_share_jobs", fmt_pct),
    ("Failed, share of jobs", "failed_share_jobs", fmt_pct),
    ("Median runtime", "med_run_time_s", _span),
    ("Mean runtime", "avg_run_time_s", _span),
    ("Median queue wait", "med_queue_s", _span),
    ("Mean queue wait", "avg_queue_s", _span),
    ("Mean GPUs per job", "avg_gpus", lambda v: fmt_num(v)),
    ("Largest job (GPUs)", "max_gpus", fmt_int),
)


def _cluster_comparison(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("published", "Compared with published GPU clusters")
    reason = _table_status(con, "marts.cluster_comparison")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, "SELECT * FROM marts.cluster_comparison ORDER BY this_cluster DESC, gpu_jobs DESC, cluster")
    ours = next((r for r in rows if r["this_cluster"]), None)
    published = [r for r in rows if not r["this_cluster"]]
    if ours is None:
        sec.no_data = "No finished GPU jobs in core.jobs yet"
        return sec

    def figures(column: str) -> list[tuple[str, float]]:
        return [(r["cluster"], r[column]) for r in published if r[column] is not None]

    phrases = (  # (value here, how to say it, column compared)
        ("cancelled_share_gpu_time", lambda v: f"cancelled jobs hold {fmt_pct(v)} of GPU time here", fmt_pct),
        ("failed_share_gpu_time", lambda v: f"failed jobs {fmt_pct(v)}", fmt_pct),
        ("med_run_time_s", lambda v: f"the median GPU job runs {_span(v)}", _span),
    )
    # A figure this cluster does not have (no GPU time yet) is left out rather than shown as a dash.
    parts = [f"{say(ours[col])}, {_against(ours[col], figures(col), fmt)}"
             for col, say, fmt in phrases if ours[col] is not None and figures(col)]
    sec.lead = _cap("; ".join(parts)) + "." if parts else "The published figures, for reference:"
    sec.tables.append(Table(
        [Column(""), *(Column(("This cluster: " if r["this_cluster"] else "") + r["cluster"], True, nowrap=True)
                       for r in rows)],
        [[Cell(label), *(Cell(fmt(r[column])) for r in rows)] for label, column, fmt in _COMPARISON_ROWS],
        caption="GPU jobs that finished; failed = FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE",
    ))
    sec.note = ("Published figures: AcmeTrace `cluster_summary.csv` (Hu et al., NSDI '24; CC-BY-4.0) — "
                + "; ".join(f"{r['cluster']}: {r['organisation']}, {r['trace_period']}" for r in published)
                + ". The traces predate this cluster's hardware and differ in workload; they show what is "
                "usual, not a target.")
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


# --------------------------------------------------------------------------------------------
# node-log failure sections (marts built by assets/failures.py)

#: Catalog / incident component -> the name an SRE uses. Several components may share a label
#: (NVLink and NVSwitch are one fabric to the reader); unknown names are shown as stored.
COMPONENT_LABELS: dict[str, str] = {
    "gpu": "GPU",
    "gpu_compute": "GPU",
    "gpu_memory": "GPU memory",
    "gsp_firmware": "GPU firmware (GSP)",
    "driver": "GPU driver",
    "nvlink": "NVLink/NVSwitch",
    "nvswitch": "NVLink/NVSwitch",
    "sxid": "NVLink/NVSwitch",
    "pcie_bus": "PCIe bus",
    "network": "Network link / NIC",
    "nic": "Network link / NIC",
    "network_switch": "Interconnect switch",
    "interconnect_switch": "Interconnect switch",
    "storage": "Storage",
    "host_memory": "Host memory",
    "host_cpu": "Host CPU",
    "host_power": "Node power supply",
    "power": "Power",
    "thermal": "Thermal",
    "os": "Operating system",
    "slurm": "Slurm",
    "user_application": "User application",
    "other": "Other / unclassified",
    "unknown": "Unknown",
    "unknown (suspected)": "Unknown (suspected NODE_FAIL)",
}
_CAUSE_LABELS = {"driver_firmware": "driver/firmware"}
_ATTRIBUTIONS = ("infrastructure", "user", "unknown")
_TOP_N_INFRA_JOBS = 20
_TOP_N_INCIDENTS = 10
_TOP_N_TEMPLATES = 15
_TOP_N_SUSPECTS = 20


def component_label(component: str | None) -> str:
    """'network_switch' -> 'Interconnect switch'; NULL -> 'Unknown'; other text as stored."""
    if component is None or component == "":
        return COMPONENT_LABELS["unknown"]
    return COMPONENT_LABELS.get(component, component)


def _cause_label(cause: str | None) -> str:
    return MISSING if not cause else _CAUSE_LABELS.get(cause, cause.replace("_", " "))


def _gpuh(x: float | None) -> str:
    """GPU-hours in a sentence: whole hours from 100 up ('2,310'), one decimal below ('7.5')."""
    return fmt_num(x, 0 if x is not None and abs(x) >= 100 else 1)


def _utc_day(col: str) -> str:
    """SQL for the UTC calendar day of a TIMESTAMPTZ column (report days are UTC days)."""
    return f"CAST(timezone('UTC', {col}) AS DATE)"


def _attribution_phrase(counts: dict[str, dict[str, Any]], total: int) -> str:
    """'6 were infrastructure (2,310 GPU-h lost), 33 user, 2 unknown'."""
    infra = counts.get("infrastructure", {"n": 0, "lost": 0.0})
    parts = [f"{fmt_int(infra['n'])} {'was' if infra['n'] == 1 else 'were'} infrastructure"
             + (f" ({_gpuh(infra['lost'] or 0.0)} GPU-h lost)" if infra["n"] else "")]
    parts += [f"{fmt_int(counts.get(a, {'n': 0})['n'])} {a}" for a in _ATTRIBUTIONS[1:]]
    other = total - sum(counts.get(a, {"n": 0})["n"] for a in _ATTRIBUTIONS)
    if other:
        parts.append(f"{fmt_int(other)} other")
    return ", ".join(parts[:-1]) + f" and {parts[-1]}"


def _attribution_counts(con: duckdb.DuckDBPyConnection, where: str = "", params: Sequence[Any] = ()) -> tuple[
        int, dict[str, dict[str, Any]]]:
    rows = _rows(con, f"""SELECT attribution, count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost
                          FROM marts.job_failure_attribution {where} GROUP BY attribution""", params)
    counts = {r["attribution"]: r for r in rows}
    return sum(r["n"] for r in rows), counts


def _failure_cards(con: duckdb.DuckDBPyConnection, meta: _Meta) -> list[dict[str, str]]:
    """KPI cards from the failure marts; '–' with the reason when a mart is missing or broken."""
    d = fmt_date(meta.report_date)
    cards: list[dict[str, str]] = []
    try:
        reason = _table_status(con, "marts.job_failure_attribution")
        if reason and "has not been built" in reason:
            raise LookupError(reason)
        night_total, night = (0, {}) if reason else _attribution_counts(
            con, f"WHERE {_utc_day('end_ts')} = ?", [meta.report_date])
        all_total, every = (0, {}) if reason else _attribution_counts(con)
        ni = night.get("infrastructure", {"n": 0, "lost": 0.0})
        ai = every.get("infrastructure", {"n": 0, "lost": 0.0})
        cards.append({"label": f"Infra failures {d}", "value": fmt_int(ni["n"]),
                      "sub": f"{_gpuh(ni['lost'])} GPU-h lost · of {_plural(night_total, 'failed job')}",
                      "tone": "bad" if ni["n"] else "good"})
        cards.append({"label": "Infra failures, whole period", "value": fmt_int(ai["n"]),
                      "sub": f"{_gpuh(ai['lost'])} GPU-h lost · of {_plural(all_total, 'failed job')}",
                      "tone": ""})
    except (duckdb.Error, LookupError) as exc:
        log.warning("nightly report attribution cards: %s", exc)
        sub = "marts.job_failure_attribution not available"
        cards += [{"label": f"Infra failures {d}", "value": MISSING, "sub": sub, "tone": ""},
                  {"label": "Infra failures, whole period", "value": MISSING, "sub": sub, "tone": ""}]
    try:
        status = _table_status(con, "marts.hw_incidents")
        if status and "has not been built" in status:
            raise LookupError(status)
        inc = _rows(con, f"""SELECT count(*) AS n, count(*) FILTER (WHERE {_utc_day('start_ts')} = ?) AS night
                             FROM marts.hw_incidents""", [meta.report_date])[0]
        cards.append({"label": "Hardware incidents", "value": fmt_int(inc["n"]),
                      "sub": f"whole period · {fmt_int(inc['night'])} began {d}",
                      "tone": "bad" if inc["night"] else ""})
    except (duckdb.Error, LookupError) as exc:
        log.warning("nightly report incident card: %s", exc)
        cards.append({"label": "Hardware incidents", "value": MISSING, "sub": "marts.hw_incidents not available",
                      "tone": ""})
    try:
        status = _table_status(con, "marts.suspect_nodes")
        if status and "has not been built" in status:
            raise LookupError(status)
        nodes = [] if status else [r["node"] for r in _rows(con, "SELECT node FROM marts.suspect_nodes "
                                                                 "ORDER BY score DESC, node")]
        cards.append({"label": "Suspect nodes", "value": fmt_int(len(nodes)),
                      "sub": truncate(compress_hostlist(nodes), 40) if nodes else "none stands out from the fleet",
                      "tone": "bad" if nodes else "good"})
    except (duckdb.Error, LookupError) as exc:
        log.warning("nightly report suspect-node card: %s", exc)
        cards.append({"label": "Suspect nodes", "value": MISSING, "sub": "marts.suspect_nodes not available",
                      "tone": ""})
    return cards


def _attribution(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("attribution", "Why jobs failed")
    reason = _table_status(con, "marts.job_failure_attribution")
    if reason:
        sec.no_data = reason
        return sec
    total, every = _attribution_counts(con)
    night_total, night = _attribution_counts(con, f"WHERE {_utc_day('end_ts')} = ?", [meta.report_date])
    period = _period_text(fmt_date(meta.period_first) if meta.period_first else None,
                          fmt_date(meta.period_last) if meta.period_last else None)
    sec.lead = f"Of {_plural(total, 'failed job')} in {period}, {_attribution_phrase(every, total)}; " + (
        f"on {d}, of {fmt_int(night_total)}, {_attribution_phrase(night, night_total)}."
        if night_total else f"none failed on {d}.")

    cells = _rows(con, """SELECT attribution, state, count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost
                          FROM marts.job_failure_attribution GROUP BY attribution, state""")
    seen = {r["state"] for r in cells}
    states = [s for s in FAILURE_STATES if s in seen] + sorted(seen - set(FAILURE_STATES), key=str)
    attrs = [a for a in _ATTRIBUTIONS if a in every] + sorted(set(every) - set(_ATTRIBUTIONS), key=str)
    n = {(r["attribution"], r["state"]): r["n"] for r in cells}
    rows = []
    for a in attrs + [None]:
        counts = [sum(v for (aa, s), v in n.items() if s == st and (a is None or aa == a)) for st in states]
        tot = sum(counts)
        lost = sum(r["lost"] for r in cells if a is None or r["attribution"] == a)
        rows.append([Cell("Total" if a is None else _cap(str(a)))]
                    + [Cell(fmt_int(c) if c else MISSING) for c in counts]
                    + [Cell(fmt_int(tot)), Cell(fmt_pct(tot / total if total else None)), Cell(fmt_num(lost))])
    sec.tables.append(Table(
        [Column("Attribution")] + [Column(s, True) for s in states]
        + [Column("Jobs", True), Column("Share", True), Column("Lost GPU-hours", True)],
        rows,
        caption="Failed jobs of the whole period by attribution and final state. Lost GPU-hours count "
                "infrastructure failures only: the work since the last checkpoint.",
    ))

    # evidence_node_state: NULL for a warehouse written before attribution read node states.
    cols = select_columns(con, "marts.job_failure_attribution", ["evidence_node_state"])
    jobs = _rows(con, f"""SELECT job_id, state, end_ts, n_gpus, component, cause_class, incident_id,
                                 len(evidence_event_ids) AS n_evidence, {cols}, rule, lost_gpu_hours
                          FROM marts.job_failure_attribution
                          WHERE attribution = 'infrastructure' AND {_utc_day('end_ts')} = ?
                          ORDER BY lost_gpu_hours DESC NULLS LAST, end_ts, job_id""", [meta.report_date])
    if jobs:
        shown = jobs[:_TOP_N_INFRA_JOBS]
        sec.tables.append(Table(
            [Column("Job ID"), Column("Ended", nowrap=True), Column("State", nowrap=True), Column("GPUs", True),
             Column("Component"), Column("Cause class"), Column("Incident"), Column("Evidence"),
             Column("Lost GPU-hours", True)],
            [[Cell(str(r["job_id"]), mono=True), Cell(fmt_date(r["end_ts"])), _state_cell(r["state"]),
              Cell(fmt_int(r["n_gpus"])), Cell(component_label(r["component"])), Cell(_cause_label(r["cause_class"])),
              Cell(truncate(r["incident_id"], 24) if r["incident_id"] else f"none ({r['rule']})",
                   mono=bool(r["incident_id"]), title=r["incident_id"]),
              _evidence_cell(r["n_evidence"], r["evidence_node_state"]), Cell(fmt_num(r["lost_gpu_hours"]))]
             for r in shown],
            caption=f"Infrastructure-failed jobs that ended on {d}"
                    + (f" (top {len(shown)} of {len(jobs)} by lost GPU-hours)." if len(jobs) > len(shown) else "."),
        ))
    else:
        sec.note = f"No job failed because of the infrastructure on {d}."
    return sec


def _evidence_cell(n_events: int | None, node_state: str | None) -> Cell:
    """'3 log events' and/or the Slurm node state (drain reason) that attributed the job."""
    parts = [f"{fmt_int(n_events)} log event{'s' if n_events != 1 else ''}" if n_events else None, node_state]
    text = "; ".join(p for p in parts if p)
    return Cell(truncate(text, 60) if text else MISSING, title=text or None)


def _taxonomy(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("taxonomy", "Failure taxonomy")
    reason = _table_status(con, "marts.failure_taxonomy")
    if reason:
        sec.no_data = reason
        return sec
    raw = _rows(con, """SELECT component, cause_class, incidents, events, affected_jobs, lost_gpu_hours
                        FROM marts.failure_taxonomy WHERE period_type = 'all'""")
    if not raw:
        sec.no_data = f"{NO_DATA}: marts.failure_taxonomy has no period_type 'all' rows."
        return sec
    months = _rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.failure_taxonomy "
                        "WHERE period_type = 'month'")[0]
    period = _period_text(months["a"], months["b"]) if months["a"] else "the whole period"
    groups: dict[str, dict[str, Any]] = {}
    for r in raw:
        g = groups.setdefault(component_label(r["component"]), {"incidents": 0, "events": 0, "jobs": 0, "lost": 0.0,
                                                               "causes": {}})
        g["incidents"] += r["incidents"] or 0
        g["events"] += r["events"] or 0
        g["jobs"] += r["affected_jobs"] or 0
        g["lost"] += r["lost_gpu_hours"] or 0.0
        cause = _cause_label(r["cause_class"])
        g["causes"][cause] = g["causes"].get(cause, 0.0) + (r["lost_gpu_hours"] or 0.0) + (r["incidents"] or 0) * 1e-9
    order = sorted(groups, key=lambda k: (-groups[k]["lost"], -groups[k]["incidents"], k))
    tot_inc = sum(g["incidents"] for g in groups.values())
    tot_jobs = sum(g["jobs"] for g in groups.values())
    tot_lost = sum(g["lost"] for g in groups.values())
    by_inc = sorted((k for k in groups if groups[k]["incidents"]), key=lambda k: (-groups[k]["incidents"], k))
    top = order[0]
    sec.lead = (
        f"In {period} there {'was' if tot_inc == 1 else 'were'} {_plural(tot_inc, 'incident')}"
        + (" — " + ", ".join(f"{k} {fmt_int(groups[k]['incidents'])}" for k in by_inc) + " —" if by_inc else "")
        + f" and {_plural(tot_jobs, 'infrastructure-failed job')}, costing {_gpuh(tot_lost)} GPU-hours"
        + (f"; the most work was lost to {top} ({_gpuh(groups[top]['lost'])} GPU-h, "
           f"{fmt_pct(groups[top]['lost'] / tot_lost)})." if tot_lost > 0 else ".")
    )
    with_loss = [k for k in order if groups[k]["lost"] > 0]
    if with_loss:
        sec.charts.append(_svg(charts.lost_gpu_hours_chart(
            [(k, groups[k]["lost"]) for k in with_loss], f"Lost GPU-hours by component, {period}",
            "Lost GPU-hours (work since the last checkpoint)")))
    sec.tables.append(Table(
        [Column("Component"), Column("Cause class"), Column("Incidents", True), Column("Events", True),
         Column("Affected jobs", True), Column("Lost GPU-hours", True), Column("Share of lost", True)],
        [[Cell(k), Cell(", ".join(sorted(groups[k]["causes"], key=lambda c: (-groups[k]["causes"][c], c)))),
          Cell(fmt_int(groups[k]["incidents"])), Cell(fmt_int(groups[k]["events"])), Cell(fmt_int(groups[k]["jobs"])),
          Cell(fmt_num(groups[k]["lost"])), Cell(fmt_pct(groups[k]["lost"] / tot_lost if tot_lost else None))]
         for k in order]
        + [[Cell("Total"), Cell(""), Cell(fmt_int(tot_inc)), Cell(fmt_int(sum(g["events"] for g in groups.values()))),
            Cell(fmt_int(tot_jobs)), Cell(fmt_num(tot_lost)), Cell(fmt_pct(1.0 if tot_lost else None))]],
        caption="Whole period. Events are the failure log lines merged into the incidents; jobs without a "
                "matching incident (e.g. NODE_FAIL with no log evidence) count under their own component.",
    ))
    return sec


def _recovery_text(r: dict[str, Any]) -> str:
    if r["hours_to_recovery"] is not None:
        return f"{fmt_num(r['hours_to_recovery'])} h"
    n_nodes = len(r["nodes"] or [])
    return f"not yet ({fmt_int(r['nodes_recovered'] or 0)}/{fmt_int(n_nodes)} nodes)" if n_nodes else MISSING


def _nodes_text(nodes: Sequence[str] | None) -> str:
    if not nodes:
        return MISSING
    try:
        return compress_hostlist(nodes)
    except ValueError:  # names that do not fit the hostlist grammar: list them as they are
        return ",".join(nodes)


def _incidents(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("incidents", "Top incidents by lost GPU-hours")
    reason = _table_status(con, "marts.hw_incidents")
    if reason:
        sec.no_data = reason
        return sec
    agg = _rows(con, """SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost,
                               count(*) FILTER (WHERE recovered_ts IS NULL AND len(nodes) > 0) AS open
                        FROM marts.hw_incidents""")[0]
    rows = _rows(con, f"""SELECT incident_id, component, cause_class, start_ts, nodes, n_events, label_source,
                                 root_cause, leaf_switch, affected_jobs, lost_gpu_hours, nodes_recovered,
                                 hours_to_recovery
                          FROM marts.hw_incidents
                          ORDER BY lost_gpu_hours DESC NULLS LAST, affected_jobs DESC NULLS LAST,
                                   n_events DESC NULLS LAST, start_ts, incident_id
                          LIMIT {_TOP_N_INCIDENTS}""")
    top = rows[0]
    shown_lost = sum(r["lost_gpu_hours"] or 0.0 for r in rows)
    where = (f" under {top['leaf_switch']}" if top["leaf_switch"] else
             f" on {truncate(_nodes_text(top['nodes']), 40)}" if top["nodes"] else "")
    sec.lead = (
        f"The top {len(rows)} of {_plural(agg['n'], 'incident')} lost {_gpuh(shown_lost)} GPU-hours"
        + (f" ({fmt_pct(shown_lost / agg['lost'])} of all incident losses)" if agg["lost"] else "")
        + f"; the costliest, {component_label(top['component'])}{where} from {fmt_date(top['start_ts'])}, "
        f"killed {_plural(top['affected_jobs'] or 0, 'job')} and lost {_gpuh(top['lost_gpu_hours'] or 0.0)} GPU-hours"
        + (f"; {_plural(agg['open'], 'incident')} {'has' if agg['open'] == 1 else 'have'} not recovered yet."
           if agg["open"] else "; every incident's nodes have run a job successfully since.")
    )

    def cause(r: dict[str, Any]) -> Cell:
        text = r["root_cause"] or _cause_label(r["cause_class"])
        if r["label_source"] == "operator":
            return Cell(truncate(f"{text} (operator)", 48), title=f"{text} (operator label)")
        return Cell(truncate(text, 48), title=text)

    sec.tables.append(Table(
        [Column("Start", nowrap=True), Column("Incident", nowrap=True), Column("Component"), Column("Root cause"),
         Column("Nodes", nowrap=True), Column("Events", True), Column("Jobs hit", True), Column("Lost GPU-h", True),
         Column("Recovery", True)],
        [[Cell(fmt_date(r["start_ts"])), Cell(str(r["incident_id"]), mono=True), Cell(component_label(r["component"])),
          cause(r), Cell(truncate(_nodes_text(r["nodes"]), 26), mono=True, title=_nodes_text(r["nodes"])),
          Cell(fmt_int(r["n_events"])), Cell(fmt_int(r["affected_jobs"])), Cell(fmt_num(r["lost_gpu_hours"])),
          Cell(_recovery_text(r))] for r in rows],
        caption="Whole period. Root cause: the worst event's catalog name, or the operator's label from "
                "incidents.csv (marked \u201coperator\u201d). Jobs hit: jobs attributed to the incident. Recovery: "
                "hours from the incident's end until every one of its nodes ran a job to completion again.",
    ))
    return sec


def _suspects(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("suspects", "Suspect nodes")
    status = _table_status(con, "marts.suspect_nodes")
    if status and "has not been built" in status:
        sec.no_data = status
        return sec
    if status:  # built but empty (possibly with no columns): nothing was flagged, if there were logs to score
        events = _table_status(con, "core.node_events")
        if events:
            sec.no_data = events
        else:
            sec.lead = ("No node stands out from the fleet: none is 3 robust deviations above the fleet median "
                        "in failure episodes or failed jobs over the last 28 days.")
        return sec
    rows = _rows(con, f"""SELECT node, xid_episodes, hw_episodes, infra_failed_jobs, node_fail_jobs, score, reason,
                                 worst_event, recommended_action
                          FROM marts.suspect_nodes ORDER BY score DESC NULLS LAST, node LIMIT {_TOP_N_SUSPECTS}""")
    n = _scalar(con, "SELECT count(*) FROM marts.suspect_nodes")
    top = rows[0]
    sec.lead = (f"{_plural(n, 'node')} {'stands' if n == 1 else 'stand'} out from the fleet over the last 28 days "
                f"({compress_hostlist([r['node'] for r in rows]) if n <= len(rows) else 'top: ' + top['node']}); "
                f"the worst, {top['node']}, has {top['reason']} — recommended: {top['recommended_action']}.")
    sec.tables.append(Table(
        [Column("Node"), Column("Score (z)", True), Column("Reason"), Column("Worst event"),
         Column("Recommended action"), Column("HW ep.", True), Column("Xid ep.", True),
         Column("Infra jobs", True), Column("NODE_FAIL", True)],
        [[Cell(str(r["node"]), mono=True), Cell(fmt_num(r["score"])),
          Cell(truncate(r["reason"], 60), title=r["reason"]),
          Cell(r["worst_event"] or MISSING), Cell(r["recommended_action"] or MISSING), Cell(fmt_int(r["hw_episodes"])),
          Cell(fmt_int(r["xid_episodes"])), Cell(fmt_int(r["infra_failed_jobs"])), Cell(fmt_int(r["node_fail_jobs"]))]
         for r in rows],
        caption="Nodes whose failure signals are at least 3 robust z-scores above the fleet median over 28 days. "
                "HW / Xid ep.: episodes (distinct hours) with failure events / non-user Xids; infra jobs: "
                "infrastructure-failed jobs on the node; NODE_FAIL: NODE_FAIL jobs. Recommended action from the worst "
                "event's catalog action.",
    ))
    return sec


def _new_templates(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("templates", "New log templates")
    reason = _table_status(con, "core.log_templates")
    if reason:
        sec.no_data = reason
        return sec
    cols = """template_id, template, example, lines, nodes, first_seen_ts, has_event, kind"""
    # "New" means first seen in the logs on the report day; when no template was, fall back to those the
    # warehouse first ingested on its latest ingestion day (late logs, or a first load).
    basis = f"first seen on {d}"
    where, params = f"{_utc_day('first_seen_ts')} = ?", [meta.report_date]
    n = _scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where}", params)
    total = _scalar(con, "SELECT count(*) FROM core.log_templates")
    if not n:
        days = _rows(con, f"""SELECT min({_utc_day('first_ingested_at')}) AS first,
                                     max({_utc_day('first_ingested_at')}) AS last FROM core.log_templates""")[0]
        if days["last"] is None or days["first"] == days["last"]:
            # Everything came with one load: "new" would just list the most common lines.
            sec.lead = (f"No node-log template was first seen on {d}"
                        + (f"; all {fmt_int(total)} templates came with the first load of node logs "
                           f"({fmt_date(days['last'])}), so none is new yet." if days["last"] else "."))
            return sec
        last = days["last"]
        where, params = f"{_utc_day('first_ingested_at')} = ?", [last]
        n = _scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where}", params)
        basis = f"first ingested on {fmt_date(last)}, the latest ingestion day (none was first seen on {d})"
    rows = _rows(con, f"""SELECT {cols} FROM core.log_templates WHERE {where}
                          ORDER BY lines DESC NULLS LAST, template_id LIMIT {_TOP_N_TEMPLATES}""", params)
    uncat = _scalar(con, f"SELECT count(*) FROM core.log_templates WHERE {where} AND NOT coalesce(has_event, false)",
                    params)
    sec.lead = (f"{fmt_int(n)} of {_plural(total, 'template')} {'was' if n == 1 else 'were'} {basis}; "
                + (f"{fmt_int(uncat)} of them {'matches' if uncat == 1 else 'match'} no catalogued event: check "
                   f"whether {'it is' if uncat == 1 else 'they are'} a failure mode the event catalog is missing."
                   if uncat else "every one of them is a catalogued event kind."))
    sec.tables.append(Table(
        [Column("First seen", nowrap=True), Column("Lines", True), Column("Nodes", True), Column("Event kind"),
         Column("Template")],
        [[Cell(fmt_date(r["first_seen_ts"])), Cell(fmt_int(r["lines"])), Cell(fmt_int(r["nodes"])),
          Cell(r["kind"] or ("uncatalogued" if not r["has_event"] else MISSING)),
          Cell(truncate(r["template"] if r["template"] is not None else r["example"], 110), mono=True,
               title=r["template"] if r["template"] is not None else r["example"])] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(n)} new templates by lines; <*> marks a masked variable.",
    ))
    return sec


# --------------------------------------------------------------------------------------------
# node-state sections (marts built by assets/node_states.py from landing/slurm_events)

#: Shown by every node-state section when no Slurm node-state history has been ingested.
NO_NODE_STATES = "No node-state history yet (land `sacctmgr show event -P` dumps in slurm_events/)."
_HEATMAP_DAYS = 14
_HEATMAP_ALL_NODES = 48  # up to this many nodes every node gets a heat-map row
_HEATMAP_WORST = 40  # beyond it: the worst nodes, then one summary row for the others
_TOP_N_WORST_NODES = 15
_TOP_N_OUT = 25
_TOP_N_DRAIN_REASONS = 10
_DOWN_CAUSES = (("hw", "hardware"), ("mnt", "maintenance"), ("hc", "health checks"), ("oth", "other causes"))


def _node_state_history(con: duckdb.DuckDBPyConnection) -> str | None:
    """None when Slurm node-state history has been ingested, otherwise :data:`NO_NODE_STATES`."""
    for table in ("raw.slurm_events", "core.node_states"):
        if _table_status(con, table) is None:
            return None
    return NO_NODE_STATES


def _hours_text(h: float | None) -> str:
    """Hours in a sentence: '3.5 h', '1,234 h'."""
    return MISSING if h is None else f"{_gpuh(h)} h"


def _age(hours: float | None) -> str:
    """How long something has lasted, readable across a room: '45 min', '7.5 h', '3.2 days'."""
    if hours is None:
        return MISSING
    if hours < 1:
        return f"{max(round(hours * 60), 0)} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def _utc_date(ts: datetime | None) -> date | None:
    """The UTC calendar day of a warehouse timestamp."""
    if ts is None:
        return None
    return (ts if ts.tzinfo is None else ts.astimezone(timezone.utc)).date()


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def _availability(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("availability", "Node availability")
    reason = _node_state_history(con) or _table_status(con, "marts.node_availability_daily")
    if reason:
        sec.no_data = reason
        return sec
    last = meta.report_date
    first = last - timedelta(days=_HEATMAP_DAYS - 1)
    rows = _rows(con, """SELECT day, node, coalesce(observed_hours, 0) AS obs, coalesce(in_service_hours, 0) AS ins,
                                coalesce(down_hours, 0) AS down, coalesce(down_hardware_hours, 0) AS hw,
                                coalesce(down_maintenance_hours, 0) AS mnt, coalesce(down_health_check_hours, 0) AS hc,
                                coalesce(down_other_hours, 0) AS oth
                         FROM marts.node_availability_daily WHERE day BETWEEN ? AND ?""", [first, last])
    if not rows:
        span = _rows(con, "SELECT min(day) AS a, max(day) AS b FROM marts.node_availability_daily")[0]
        sec.no_data = (f"{NO_DATA}: marts.node_availability_daily has no rows for {fmt_date(first)} … {d} "
                       f"(it covers {_period_text(fmt_date(span['a']), fmt_date(span['b']))}).")
        return sec
    # A history shorter than the window starts the map at its first day instead of with empty columns;
    # days missing at the end (report date past the last dump) stay visible as "no data".
    first = max(first, min(r["day"] for r in rows))
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    col = {day: i for i, day in enumerate(days)}
    keys = ("obs", "ins", "down", "hw", "mnt", "hc", "oth")
    per_node: dict[str, dict[str, Any]] = {}
    per_day = [{k: 0.0 for k in keys} for _ in days]
    for r in rows:
        n = per_node.setdefault(r["node"], {**{k: 0.0 for k in keys}, "d_obs": [0.0] * len(days),
                                           "d_ins": [0.0] * len(days), "d_down": [0.0] * len(days)})
        i = col[r["day"]]
        for k in keys:
            n[k] += r[k]
            per_day[i][k] += r[k]
        n["d_obs"][i] += r["obs"]
        n["d_ins"][i] += r["ins"]
        n["d_down"][i] += r["down"]
    tot_obs = sum(p["obs"] for p in per_day)
    tot_ins = sum(p["ins"] for p in per_day)
    avail = _share(tot_ins, tot_obs)
    night = per_day[col[last]]
    night_avail = _share(night["ins"], night["obs"])
    order = sorted(per_node, key=lambda k: (-per_node[k]["down"], k))
    down_nodes = [k for k in order if per_node[k]["down"] > 0]
    window = _period_text(fmt_date(days[0]), fmt_date(days[-1]))
    lead = (f"Cluster availability (in-service share of node-hours) was {fmt_pct(avail, 2)} over the "
            f"{_plural(len(days), 'day')} {window} and "
            + (f"{fmt_pct(night_avail, 2)} on {d}" if night_avail is not None else f"unknown on {d} (no data)"))
    if down_nodes:
        w = per_node[down_nodes[0]]
        cause = max(_DOWN_CAUSES, key=lambda c: w[c[0]])[1]
        lead += (f"; {fmt_int(len(down_nodes))} of {_plural(len(per_node), 'node')} had down time, the worst, "
                 f"{down_nodes[0]}, was in service {fmt_pct(_share(w['ins'], w['obs']))} of the time "
                 f"({_hours_text(w['down'])} down, mostly {cause}).")
    else:
        lead += f"; none of the {_plural(len(per_node), 'node')} was out of service in that time."
    sec.lead = lead

    if len(per_node) <= _HEATMAP_ALL_NODES:
        shown, rest = order, []
    else:
        shown = down_nodes[:_HEATMAP_WORST]
        rest = [k for k in order if k not in set(shown)]

    def heat_row(label: str, nodes: Sequence[str], summary: bool) -> tuple[str, list[float | None],
                                                                          list[float | None], bool]:
        obs = [sum(per_node[k]["d_obs"][i] for k in nodes) for i in range(len(days))]
        ins = [sum(per_node[k]["d_ins"][i] for k in nodes) for i in range(len(days))]
        down = [sum(per_node[k]["d_down"][i] for k in nodes) for i in range(len(days))]
        return (label, [_share(a, o) for a, o in zip(ins, obs)],
                [x if o else None for x, o in zip(down, obs)], summary)

    hm_rows = [heat_row(f"All {fmt_int(len(per_node))} nodes", order, True)]
    hm_rows += [heat_row(k, [k], False) for k in shown]
    if rest:
        rest_down = sum(per_node[k]["down"] for k in rest)
        hm_rows.append(heat_row(f"{fmt_int(len(rest))} other nodes fully in service" if rest_down == 0
                                else f"{fmt_int(len(rest))} other nodes", rest, True))
    title = ("In-service share per node and day" + (f", worst {len(shown)} nodes" if rest else ", worst first"))
    sec.charts.append(_svg(charts.availability_heatmap_chart(days, hm_rows, title, highlight_day=last)))

    worst = down_nodes[:_TOP_N_WORST_NODES]
    if worst:
        sec.tables.append(Table(
            [Column("Node"), Column("In service", True), Column("Down (h)", True), Column("Hardware (h)", True),
             Column("Maintenance (h)", True), Column("Health check (h)", True), Column("Other (h)", True),
             Column(f"Down {d} (h)", True)],
            [[Cell(k, mono=True), Cell(fmt_pct(_share(per_node[k]["ins"], per_node[k]["obs"]))),
              Cell(fmt_num(per_node[k]["down"]))] + [Cell(fmt_num(per_node[k][c])) for c, _ in _DOWN_CAUSES]
             + [Cell(fmt_num(per_node[k]["d_down"][col[last]]))] for k in worst],
            caption=f"The {len(worst)} nodes with the most down time over {window}"
                    + (f" (of {fmt_int(len(down_nodes))} with any)" if len(down_nodes) > len(worst) else "")
                    + ". Down node-hours by cause; down time inside planned maintenance windows counts as "
                      "maintenance, software and unknown reasons as other.",
        ))
    return sec


def _out_of_service(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("out_of_service", "Nodes out of service now")
    reason = _node_state_history(con)
    if reason:
        sec.no_data = reason
        return sec
    # "Now" is the end of the report day (UTC): open events, and those that ended only afterwards.
    cutoff = datetime.combine(meta.report_date + timedelta(days=1), time(), tzinfo=timezone.utc)
    rows = _rows(con, """SELECT node, state, start_ts, end_ts, reason, reason_class, availability_class
                         FROM core.node_states
                         WHERE start_ts < ? AND (end_ts IS NULL OR end_ts > ?)
                         ORDER BY node, start_ts, state""", [cutoff, cutoff])
    n_nodes = None
    if _table_status(con, "marts.node_availability_daily") is None:
        n_nodes = _scalar(con, "SELECT count(DISTINCT node) FROM marts.node_availability_daily WHERE day = ?",
                          [meta.report_date]) or None
    # One row per node: the earliest still-open event is the original cause (as in the availability mart);
    # the states of all its open events show how it evolved (DRAIN → DOWN).
    nodes: dict[str, dict[str, Any]] = {}
    for r in rows:
        n = nodes.get(r["node"])
        if n is None:
            nodes[r["node"]] = {**r, "states": [r["state"] or MISSING], "back": r["end_ts"]}
            continue
        if r["state"] and r["state"] not in n["states"]:
            n["states"].append(r["state"])
        n["back"] = None if n["back"] is None or r["end_ts"] is None else max(n["back"], r["end_ts"])
    for n in nodes.values():
        n["hours"] = (cutoff - n["start_ts"]).total_seconds() / 3600
    out = sorted(nodes.values(), key=lambda n: (-n["hours"], n["node"]))
    of = f" of {fmt_int(n_nodes)}" if n_nodes else ""
    if not out:
        sec.lead = (f"All{of} nodes were in service at the end of {d} (UTC): no drain or down event was open."
                    if of else f"No node was out of service at the end of {d} (UTC): no drain or down event was open.")
        return sec
    by_class: dict[str, int] = {}
    for n in out:
        key = (n["availability_class"] or "unknown").replace("_", " ")
        by_class[key] = by_class.get(key, 0) + 1
    classes = ", ".join(f"{fmt_int(v)} {k}" for k, v in sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0])))
    top = out[0]
    sec.lead = (f"At the end of {d} (UTC) {fmt_int(len(out))}{of} node{'' if len(out) == 1 else 's'} "
                f"{'was' if len(out) == 1 else 'were'} out of service ({classes}); the longest, {top['node']}, "
                f"has been {' → '.join(top['states'])} since {fmt_date(top['start_ts'])} ({_age(top['hours'])})"
                + (f" for \u201c{truncate(top['reason'], 80)}\u201d." if top["reason"] else ", with no reason given."))
    shown = out[:_TOP_N_OUT]
    sec.tables.append(Table(
        [Column("Node"), Column("State", nowrap=True), Column("Since", nowrap=True), Column("Out for", True),
         Column("Reason"), Column("Reason class"), Column("Back in service", nowrap=True)],
        [[Cell(n["node"], mono=True), Cell(" → ".join(n["states"])), Cell(fmt_date(n["start_ts"])),
          Cell(_age(n["hours"])), Cell(truncate(n["reason"], 70) if n["reason"] else MISSING, title=n["reason"]),
          Cell(f"{n['reason_class'] or MISSING} ({(n['availability_class'] or 'unknown').replace('_', ' ')})"),
          Cell(fmt_date(n["back"]) if n["back"] else "not yet")] for n in shown],
        caption=(f"Longest {len(shown)} of {fmt_int(len(out))} nodes" if len(out) > len(shown) else "Nodes")
                + f" with a drain/down event open at the end of {d}, longest first; out for = time up to then. "
                  "One row per node: state, reason and class of its earliest open event (the original cause); "
                  "\u201cBack in service\u201d is known when a later dump closed the event.",
    ))
    return sec


def _repair_times(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("repairs", "MTTR by component class")
    reason = _table_status(con, "marts.repair_times")
    if reason:
        # (Without node states repairs fall back to other evidence; an empty mart then says why.)
        sec.no_data = _node_state_history(con) or reason
        return sec
    rows = _rows(con, f"""SELECT {select_columns(con, 'marts.repair_times', _REPAIR_COLUMNS)}
                          FROM marts.repair_times""")
    total = next((r for r in rows if r["component_class"] == "all"), None)
    comps = sorted((r for r in rows if r["component_class"] != "all"),
                   key=lambda r: (r["mttr_hours_p50"] is None, -(r["mttr_hours_p50"] or 0.0),
                                  -(r["incidents"] or 0), str(r["component_class"])))
    if total is None:  # a mart without its 'all' row: sum the counts, no pooled quantiles
        total = {k: sum(r[k] or 0 for r in comps) for k in ("incidents", "linked_incidents", "repaired", "ongoing",
                                                            "from_node_states")}
        total.update({k: None for k in ("mttd_hours_p50", "mttd_hours_p90", "mttr_hours_p50", "mttr_hours_p90",
                                        "mttr_hours_mean", "ci_low", "ci_high", "note")})
        total["component_class"] = "all"

    def label(r: dict[str, Any]) -> str:
        return "All classes" if r["component_class"] == "all" else class_label(r["component_class"])

    t = total
    lead = (f"Of {_plural(t['incidents'], 'hardware incident')}, {fmt_int(t['linked_incidents'])} "
            f"{'was' if t['linked_incidents'] == 1 else 'were'} followed by a node drain")
    if t["repaired"] and t["mttr_hours_p50"] is not None:
        lead += (f"; {fmt_int(t['repaired'])} repaired with a median time to repair of "
                 f"{_hours_text(t['mttr_hours_p50'])}"
                 f" (p90 {_hours_text(t['mttr_hours_p90'])}"
                 + (f", 95 % CI {fmt_num(t['ci_low'])}–{fmt_num(t['ci_high'])} h" if t["ci_low"] is not None else "")
                 + f") after a median {_age(t['mttd_hours_p50'])} to detect")
    else:
        lead += "; none has been repaired yet"
    if t["ongoing"]:
        lead += f"; {fmt_int(t['ongoing'])} {'is' if t['ongoing'] == 1 else 'are'} still under repair"
    timed = [r for r in comps if r["mttr_hours_p50"] is not None]
    if len(timed) > 1:
        lead += (f"; slowest to repair: {label(timed[0])} "
                 f"(median {_hours_text(timed[0]['mttr_hours_p50'])})")
    sec.lead = lead + "."
    ordered = [total] + comps

    if any(r["mttr_hours_p50"] is not None for r in ordered):
        sec.charts.append(_svg(charts.repair_time_chart(
            [(label(r), r["mttr_hours_p50"], r["mttr_hours_p90"], int(r["repaired"] or 0), r is total)
             for r in ordered], "Time to repair by component class: median, whisker to p90")))
    h = lambda v: fmt_num(v)  # noqa: E731

    def ci(r: dict[str, Any]) -> Cell:
        if r["ci_low"] is not None:
            return Cell(f"{fmt_num(r['ci_low'])} … {fmt_num(r['ci_high'])}", title=r["note"])
        return Cell(f"{MISSING} (too few)" if r["repaired"] else MISSING, title=r["note"])

    sec.tables.append(Table(
        [Column("Class"), Column("Incidents", True), Column("Drained", True), Column("Repaired", True),
         Column("Ongoing", True), Column("TTD p50 / p90", True), Column("TTR p50 (h)", True),
         Column("TTR p90 (h)", True), Column("TTR mean (h)", True), Column("95 % CI (h)", True)],
        [[Cell(label(r)), Cell(fmt_int(r["incidents"])), Cell(fmt_int(r["linked_incidents"])),
          Cell(fmt_int(r["repaired"])), Cell(fmt_int(r["ongoing"])),
          # detection takes minutes: '1 min / 4 min', not '0.0 / 0.1'
          Cell(f"{_age(r['mttd_hours_p50'])} / {_age(r['mttd_hours_p90'])}"), Cell(h(r["mttr_hours_p50"])),
          Cell(h(r["mttr_hours_p90"])), Cell(h(r["mttr_hours_mean"])), ci(r)] for r in ordered],
        caption="All classes first, then slowest to repair first (the component classes MTBF uses). Hardware "
                "incidents (marts.hw_incidents) linked to the first drain/down of their own nodes from 30 min "
                "before to 24 h after. TTD (time to detect): first evidence to drain; TTR (time to repair): first "
                "evidence to the last node back in service"
                + (f"; {fmt_int(int(total['repaired'] or 0) - int(total.get('from_node_states') or 0))} of the "
                   f"repairs had no node-state record and were timed by the end of their health-check evidence "
                   f"or the first job that completed on their nodes (marts.incident_repairs.repair_source)"
                   if int(total['repaired'] or 0) > int(total.get('from_node_states') or 0) else "")
                + ". Ongoing repairs are counted but left out of the quantiles. "
                "95 % CI: distribution-free interval of the TTR median (needs at least 6 repairs).",
    ))
    return sec


_REPAIR_COLUMNS = ("component_class", "incidents", "linked_incidents", "repaired", "ongoing", "mttd_hours_p50",
                   "mttd_hours_p90", "mttr_hours_p50", "mttr_hours_p90", "mttr_hours_mean", "ci_low", "ci_high",
                   "from_node_states", "note")


def _drain_reasons(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("drain_reasons", "Top drain reasons by node-hours")
    reason = _node_state_history(con) or _table_status(con, "marts.drain_reasons")
    if reason:
        sec.no_data = reason
        return sec
    agg = _rows(con, """SELECT count(*) AS n, coalesce(sum(node_hours_lost), 0) AS hours,
                               coalesce(sum(events), 0) AS events FROM marts.drain_reasons""")[0]
    rows = _rows(con, f"""SELECT rank, reason_class, availability_class, component, template_id, template, example,
                                 events, nodes, node_hours_lost, share_node_hours, ongoing_events, first_start_ts,
                                 last_start_ts
                          FROM marts.drain_reasons
                          ORDER BY rank NULLS LAST, node_hours_lost DESC NULLS LAST, template_id
                          LIMIT {_TOP_N_DRAIN_REASONS}""")
    top = rows[0]
    top_share = sum(r["share_node_hours"] or 0.0 for r in rows)
    text = lambda r: r["template"] if r["template"] is not None else (r["example"] or MISSING)  # noqa: E731
    which = (f"The top {len(rows)} of {fmt_int(agg['n'])} drain/down reasons" if agg["n"] > len(rows)
             else f"All {fmt_int(len(rows))} drain/down reason{'' if len(rows) == 1 else 's'}")
    sec.lead = (f"{which} cost {fmt_pct(top_share)} of {_gpuh(agg['hours'])} node-hours out of service; the largest, "
                f"\u201c{truncate(text(top), 70)}\u201d ({top['reason_class'] or MISSING}, "
                f"{(top['availability_class'] or 'unknown').replace('_', ' ')}), cost {_gpuh(top['node_hours_lost'])} "
                f"node-hours ({fmt_pct(top['share_node_hours'])}) on {_plural(top['nodes'], 'node')} in "
                f"{_plural(top['events'], 'event')}"
                + (f", {fmt_int(top['ongoing_events'])} still open." if top["ongoing_events"] else "."))
    sec.tables.append(Table(
        [Column("#", True), Column("Reason (template)"), Column("Class"), Column("Events", True),
         Column("Nodes", True), Column("Node-hours", True), Column("Share", True), Column("Open", True),
         Column("Last start", nowrap=True)],
        [[Cell(fmt_int(r["rank"])),
          Cell(truncate(text(r), 80), title=text(r) + (f" (e.g. {r['example']})" if r["example"] else "")),
          Cell(f"{r['reason_class'] or MISSING} ({(r['availability_class'] or 'unknown').replace('_', ' ')})"),
          Cell(fmt_int(r["events"])), Cell(fmt_int(r["nodes"])), Cell(fmt_num(r["node_hours_lost"])),
          Cell(fmt_pct(r["share_node_hours"])), Cell(fmt_int(r["ongoing_events"])),
          Cell(fmt_date(_utc_date(r["last_start_ts"])))] for r in rows],
        caption="Reasons grouped by Drain3 template (<*> marks a masked variable; hover for an example) and "
                "class (catalog/drain_reasons.csv). Last start: UTC day of the latest event. Node-hours are counted "
                "once where events overlap, so they add up to "
                "the availability mart's down hours. Open: events still ongoing.",
    ))
    return sec


def _health_checks(con: duckdb.DuckDBPyConnection) -> Section:
    sec = Section("health_checks", "Health checks: precision and missed detections")
    reason = _table_status(con, "marts.health_check_quality")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT check_name, component, firings, events, nodes, preceded_job_failure, precision,
                                last_ts
                         FROM marts.health_check_quality ORDER BY firings DESC, check_name""")
    if not rows:
        sec.no_data = "No failed health check in the node logs (LBNL NHC 'Health check failed' lines)."
        return sec
    misses = (_rows(con, """SELECT job_id, state, end_ts, n_gpus, nodes, component, rule
                            FROM marts.health_check_misses ORDER BY end_ts DESC, job_id LIMIT 15""")
              if _table_status(con, "marts.health_check_misses") is None else [])
    n_miss = (_rows(con, "SELECT count(*) AS n FROM marts.health_check_misses")[0]["n"]
              if _table_status(con, "marts.health_check_misses") is None else 0)
    fired = sum(r["firings"] for r in rows)
    hits = sum(r["preceded_job_failure"] for r in rows)
    worst = min(rows, key=lambda r: (r["precision"] if r["precision"] is not None else 2.0, -r["firings"]))
    sec.lead = (f"{fmt_int(len(rows))} health check{'s' if len(rows) != 1 else ''} fired {fmt_int(fired)} times; "
                f"{fmt_int(hits)} firings ({fmt_pct(hits / fired if fired else None)}) came with a job failure on the "
                f"node; the least precise, {worst['check_name']}, preceded a failure in "
                f"{fmt_pct(worst['precision'])} of its {fmt_int(worst['firings'])} firings. "
                f"{fmt_int(n_miss)} infrastructure-attributed job failure{'s' if n_miss != 1 else ''} had no failing "
                "check on their nodes (missed detections).")
    sec.tables.append(Table(
        [Column("Check"), Column("Component"), Column("Firings", True), Column("Events", True), Column("Nodes", True),
         Column("Preceded a failure", True), Column("Precision", True), Column("Last fired", nowrap=True)],
        [[Cell(r["check_name"]), Cell(component_label(r["component"])), Cell(fmt_int(r["firings"])),
          Cell(fmt_int(r["events"])), Cell(fmt_int(r["nodes"])), Cell(fmt_int(r["preceded_job_failure"])),
          Cell(fmt_pct(r["precision"])), Cell(fmt_date(_utc_date(r["last_ts"])))] for r in rows],
        caption="marts.health_check_quality: a firing is one episode of a check on a node (runs < 30 min apart); it "
                "preceded a failure when a job on the node ended FAILED/NODE_FAIL/REQUEUED from 5 min before to "
                "10 min after it. A check that fires often and rarely precedes a failure drains healthy nodes.",
    ))
    if misses:
        sec.tables.append(Table(
            [Column("Job"), Column("State"), Column("End (UTC)", nowrap=True), Column("GPUs", True), Column("Nodes"),
             Column("Component"), Column("Attribution rule")],
            [[Cell(r["job_id"]), Cell(r["state"]), Cell(str(r["end_ts"])[:19]), Cell(fmt_int(r["n_gpus"])),
              Cell(truncate(compress_hostlist(r["nodes"] or []), 40)), Cell(component_label(r["component"])),
              Cell(r["rule"] or MISSING)] for r in misses],
            caption="marts.health_check_misses (latest 15): infrastructure-attributed jobs with no failing check on "
                    "their nodes from 10 min before to 30 min after their end.",
        ))
    return sec


# --------------------------------------------------------------------------------------------
# alert sections (marts built by assets/alert_incidents.py from core.alerts)

#: Shown by every alert section when no alert has been ingested.
NO_ALERTS = "No alerts yet (land Alertmanager webhook payloads in alerts/)."
_ALERT_DAYS = 14
_TOP_N_ALERT_INCIDENTS = 10
_TOP_N_RULES = 10  # per verdict: the noisiest rules, then the flapping ones
_TOP_N_UNCOVERED = 20
_NOISE = "noise: consider silencing"
_FLAPPING = "flapping"
_VERDICTS = (_NOISE, _FLAPPING, "useful", "too few to judge")
_SCOPE_LABELS = {"node": "node", "rack": "rack", "leaf_switch": "leaf switch", "storage": "storage",
                 "cluster": "cluster"}


def _alert_history(con: duckdb.DuckDBPyConnection) -> str | None:
    """None when alerts have been ingested (``core.alerts`` has rows), otherwise :data:`NO_ALERTS`."""
    return None if _table_status(con, "core.alerts") is None else NO_ALERTS


def _scope_label(scope: str | None) -> str:
    """'leaf_switch' -> 'leaf switch'; other scopes as stored."""
    return MISSING if not scope else _SCOPE_LABELS.get(scope, scope)


def _utc_hm(ts: datetime | None) -> str:
    """'HH:MM' of a warehouse timestamp in UTC."""
    return MISSING if ts is None else (ts if ts.tzinfo is None else ts.astimezone(timezone.utc)).strftime("%H:%M")


def _ratio(x: float | None) -> str:
    """An alerts-per-incident ratio: '3.4'."""
    return fmt_num(x, 1)


def _count_phrase(counts: Sequence[tuple[str, int]]) -> str:
    """'5 node, 2 leaf switch and 1 storage'."""
    parts = [f"{fmt_int(n)} {label}" for label, n in counts]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"


_VERDICT_WORDS = {_NOISE: ("looks like noise", "look like noise"), _FLAPPING: ("flaps", "flap"),
                  "useful": ("is useful", "are useful"),
                  "too few to judge": ("fired too rarely to judge", "fired too rarely to judge")}


def _verdict_phrase(verdict: str | None, n: int) -> str:
    """'look like noise', 'flaps', ...; verdicts this report does not know are quoted as stored."""
    if verdict in _VERDICT_WORDS:
        return _VERDICT_WORDS[verdict][n != 1]
    if verdict is None:
        return "have no verdict" if n != 1 else "has no verdict"
    return f"{'is' if n == 1 else 'are'} \u201c{verdict}\u201d"


def _reason_text(reason: str) -> str:
    """'No data yet: marts.x is empty.' -> 'marts.x is empty' (for use inside a sentence)."""
    prefix = f"{NO_DATA}: "
    return (reason[len(prefix):] if reason.startswith(prefix) else reason).rstrip(".")


def _alert_window(meta: _Meta) -> tuple[date, date]:
    return meta.report_date - timedelta(days=_ALERT_DAYS - 1), meta.report_date


def _alert_flood(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("alert_flood", f"Last night's alert flood ({d})")
    reason = _alert_history(con) or _table_status(con, "marts.alert_daily")
    if reason:
        sec.no_data = reason
        return sec
    first, last = _alert_window(meta)
    rows = _rows(con, """SELECT day, notifications, alerts, incidents, compression_ratio, flood_episodes
                         FROM marts.alert_daily WHERE day BETWEEN ? AND ? ORDER BY day""", [first, last])
    span = _rows(con, "SELECT min(day) AS a, max(day) AS b FROM marts.alert_daily")[0]
    if not rows:
        sec.no_data = (f"{NO_DATA}: marts.alert_daily has no rows for {fmt_date(first)} … {d} "
                       f"(the alerts cover {_period_text(fmt_date(span['a']), fmt_date(span['b']))}).")
        return sec
    # A shorter alert history starts the chart at its first day; days after its last day stay "no data".
    first = max(first, rows[0]["day"])
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    by_day = {r["day"]: r for r in rows}
    window = _period_text(fmt_date(days[0]), fmt_date(days[-1]))
    w_alerts = sum(r["alerts"] or 0 for r in rows)
    w_inc = sum(r["incidents"] or 0 for r in rows)
    w_ratio = w_alerts / w_inc if w_inc else None
    context = (f"the {_plural(len(days), 'day')} {window} had {_plural(w_alerts, 'alert')} in "
               f"{_plural(w_inc, 'incident')}" + (f" ({_ratio(w_ratio)} alerts per incident)" if w_ratio else ""))

    floods: list[dict[str, Any]] = []
    flood_status = _table_status(con, "marts.alert_floods")
    if flood_status is None:
        floods = _rows(con, f"""SELECT flood_id, start_ts, end_ts, n_buckets, n_alerts, peak_per_bucket,
                                       peak_rate_per_min, baseline, threshold, incidents, compression_ratio
                                FROM marts.alert_floods WHERE {_utc_day('start_ts')} = ?
                                ORDER BY start_ts, flood_id""", [meta.report_date])
    elif "has not been built" in flood_status:
        sec.note = f"Flood episodes cannot be listed: {_reason_text(flood_status)}."

    night = by_day.get(meta.report_date)
    if night is None:
        lead = f"No alert data for {d} (the alerts end on {fmt_date(span['b'])}); {context}."
    elif not night["alerts"]:
        lead = f"No alert started on {d}; {context}."
    else:
        n_floods = night["flood_episodes"] or 0
        lead = (f"On {d}, {_plural(night['notifications'], 'notification')} carried "
                f"{_plural(night['alerts'], 'alert')} "
                f"that started {_plural(night['incidents'], 'incident')}"
                + (f", {_ratio(night['compression_ratio'])} alerts per incident" if night["compression_ratio"] else "")
                + (f" ({_ratio(w_ratio)} over the {len(days)} days {window})" if w_ratio else ""))
        if floods:
            big = max(floods, key=lambda r: (r["n_alerts"] or 0, -r["start_ts"].timestamp()))
            lead += (f"; {_plural(len(floods), 'flood episode')} began, the largest at {_utc_hm(big['start_ts'])} UTC "
                     f"with {_plural(big['n_alerts'], 'alert')} (up to {fmt_num(big['peak_rate_per_min'])} a minute) "
                     f"in {_plural(big['incidents'], 'incident')}.")
        elif n_floods:
            lead += f"; {_plural(n_floods, 'flood episode')} began."
        else:
            lead += "; no flood episode."
    sec.lead = lead

    sec.charts.append(_svg(charts.alert_daily_chart(
        days, [by_day[x]["alerts"] if x in by_day else None for x in days],
        [by_day[x]["incidents"] if x in by_day else None for x in days],
        [by_day[x]["flood_episodes"] if x in by_day else None for x in days],
        f"Alerts and the incidents they form per day, {window}", highlight_day=meta.report_date)))

    if floods:
        def bucket_min(r: dict[str, Any]) -> float | None:
            if not r["n_buckets"] or r["start_ts"] is None or r["end_ts"] is None:
                return None
            return (r["end_ts"] - r["start_ts"]).total_seconds() / 60 / r["n_buckets"]

        bm = {bucket_min(r) for r in floods} - {None}
        per = f"per {fmt_num(bm.pop(), 0)} min" if len(bm) == 1 else "per bucket"  # bucket length: cluster.yaml
        sec.tables.append(Table(
            [Column("Flood", nowrap=True), Column("Start (UTC)", nowrap=True), Column("Lasted", True),
             Column("Alerts", True), Column(f"Peak {per}", True), Column("Baseline → threshold", True),
             Column("Incidents", True), Column("Alerts per incident", True)],
            [[Cell(str(r["flood_id"]), mono=True), Cell(_utc_hm(r["start_ts"]), title=fmt_date(r["start_ts"])),
              Cell(_age((r["end_ts"] - r["start_ts"]).total_seconds() / 3600)
                   if r["start_ts"] is not None and r["end_ts"] is not None else MISSING),
              Cell(fmt_int(r["n_alerts"])),
              Cell(f"{fmt_int(r['peak_per_bucket'])} ({fmt_num(r['peak_rate_per_min'])}/min)"),
              Cell(f"{fmt_num(r['baseline'])} → {fmt_num(r['threshold'])}"), Cell(fmt_int(r["incidents"])),
              Cell(_ratio(r["compression_ratio"]))] for r in floods],
            caption=f"Flood episodes that began on {d}: alert arrivals {per} above a threshold over a robust baseline "
                    "of the previous 24 h (median + k × MAD, and at least a minimum count). Alerts per incident: how "
                    "many of its alerts the clustering folded into each incident.",
        ))
    recent = [by_day.get(x) for x in reversed(days)]
    sec.tables.append(Table(
        [Column("Day"), Column("Notifications", True), Column("Alerts", True), Column("Incidents", True),
         Column("Alerts per incident", True), Column("Flood episodes", True)],
        [[Cell(fmt_date(x))] + ([Cell(fmt_int(r["notifications"])), Cell(fmt_int(r["alerts"])),
                                  Cell(fmt_int(r["incidents"])), Cell(_ratio(r["compression_ratio"])),
                                  Cell(fmt_int(r["flood_episodes"]))] if r else [Cell(MISSING)] * 5)
         for x, r in zip(reversed(days), recent)],
        caption=f"{window}, newest first (UTC days). Notifications: webhook deliveries, repeats included; "
                "alerts: distinct alert occurrences that started that day; incidents: alert incidents that started "
                "that day.",
    ))
    return sec


def _alert_incidents(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("alert_incidents", f"Alert incidents of {d} by size")
    reason = _alert_history(con) or _table_status(con, "marts.alert_incidents")
    if reason:
        sec.no_data = reason
        return sec
    on_day, params = f"{_utc_day('start_ts')} = ?", [meta.report_date]
    agg = _rows(con, f"""SELECT count(*) AS n, coalesce(sum(n_alerts), 0) AS alerts,
                                count(*) FILTER (WHERE hw_incident_id IS NOT NULL) AS hw,
                                count(*) FILTER (WHERE n_jobs_killed > 0) AS killing,
                                coalesce(sum(n_jobs_killed), 0) AS jobs, coalesce(sum(lost_gpu_hours), 0) AS lost
                         FROM marts.alert_incidents WHERE {on_day}""", params)[0]
    if not agg["n"]:
        first, last = _alert_window(meta)
        n14 = _scalar(con, f"SELECT count(*) FROM marts.alert_incidents WHERE {_utc_day('start_ts')} BETWEEN ? AND ?",
                      [first, last])
        sec.lead = (f"No alert incident started on {d}; {fmt_int(n14)} started in the {_ALERT_DAYS} days "
                    f"{fmt_date(first)} … {d}.")
        return sec
    scopes = _rows(con, f"""SELECT scope, count(*) AS n, sum(n_alerts) AS alerts,
                                   count(*) FILTER (WHERE in_flood) AS flood,
                                   count(*) FILTER (WHERE hw_incident_id IS NOT NULL) AS hw,
                                   coalesce(sum(n_jobs_killed), 0) AS jobs, coalesce(sum(lost_gpu_hours), 0) AS lost
                            FROM marts.alert_incidents WHERE {on_day}
                            GROUP BY scope ORDER BY n DESC, alerts DESC, scope""", params)
    rows = _rows(con, f"""SELECT incident_id, start_ts, end_ts, n_alerts, n_nodes, nodes, root_cause_candidate,
                                 root_cause_reason, alertnames, hw_incident_id, scope, in_flood, n_jobs_killed,
                                 lost_gpu_hours
                          FROM marts.alert_incidents WHERE {on_day}
                          ORDER BY n_alerts DESC NULLS LAST, lost_gpu_hours DESC NULLS LAST, start_ts, incident_id
                          LIMIT {_TOP_N_ALERT_INCIDENTS}""", params)
    top = rows[0]
    n = agg["n"]
    lead = (f"{_plural(n, 'alert incident')} started on {d}, grouping {_plural(agg['alerts'], 'alert')} "
            f"(by scope: {_count_phrase([(_scope_label(r['scope']), r['n']) for r in scopes])}); "
            + (f"the largest, " if n > 1 else "it, ")
            + f"\u201c{truncate(top['root_cause_candidate'] or top['incident_id'], 70)}\u201d, grouped "
              f"{_plural(top['n_alerts'], 'alert')} on {_plural(top['n_nodes'] or 0, 'node')}"
            + (f" and killed {_plural(top['n_jobs_killed'], 'job')} ({_gpuh(top['lost_gpu_hours'] or 0.0)} GPU-h lost)"
               if top["n_jobs_killed"] else ""))
    if n > 1:
        lead += (f"; {fmt_int(agg['hw'])} of the {fmt_int(n)} had a hardware incident behind them and "
                 + (f"{fmt_int(agg['killing'])} killed {_plural(agg['jobs'], 'job')} "
                    f"({_gpuh(agg['lost'])} GPU-h lost)." if agg["killing"] else "none killed a job."))
    else:
        lead += "."
    sec.lead = lead

    def cand(r: dict[str, Any]) -> Cell:
        text = r["root_cause_candidate"] or MISSING
        why = r["root_cause_reason"] or ""
        rules = ", ".join(str(a) for a in (r["alertnames"] or []))
        return Cell(truncate(text, 60), sub=truncate(why, 90) or None,
                    title=f"{text}: {why}" + (f" (rules: {rules})" if rules else ""))

    def nodes(r: dict[str, Any]) -> Cell:
        return Cell(fmt_int(r["n_nodes"]), title=_nodes_text(r["nodes"]))

    sec.tables.append(Table(
        [Column("Incident", nowrap=True), Column("Start (UTC)", nowrap=True), Column("Alerts", True),
         Column("Nodes", True), Column("Scope"), Column("Root-cause candidate and why"),
         Column("HW incident", nowrap=True), Column("Jobs killed", True), Column("Lost GPU-h", True)],
        [[Cell(str(r["incident_id"]), mono=True), Cell(_utc_hm(r["start_ts"]), title=fmt_date(r["start_ts"])),
          Cell(fmt_int(r["n_alerts"])), nodes(r),
          Cell(_scope_label(r["scope"]) + (", flood" if r["in_flood"] else "")), cand(r),
          Cell(str(r["hw_incident_id"]) if r["hw_incident_id"] else MISSING, mono=bool(r["hw_incident_id"])),
          Cell(fmt_int(r["n_jobs_killed"])), Cell(fmt_num(r["lost_gpu_hours"]))] for r in rows],
        caption=(f"Top {len(rows)} of {fmt_int(n)}" if n > len(rows) else f"All {fmt_int(n)}")
                + f" alert incidents that started on {d}, most alerts first (hover over a node count for the nodes). "
                  "Root-cause candidate: the alert matched to a hardware incident, else the earliest at the most "
                  "upstream level (fabric > storage > node > GPU). Jobs killed: FAILED / NODE_FAIL on its nodes from "
                  "15 min before its start to 5 min after its last alert, unless attributed to the user. "
                  "\u201cflood\u201d: an alert began inside a flood episode.",
    ))
    sec.tables.append(Table(
        [Column("Scope"), Column("Incidents", True), Column("Alerts", True), Column("Alerts per incident", True),
         Column("In a flood", True), Column("With HW incident", True), Column("Jobs killed", True),
         Column("Lost GPU-h", True)],
        [[Cell(_scope_label(r["scope"])), Cell(fmt_int(r["n"])), Cell(fmt_int(r["alerts"])),
          Cell(_ratio(r["alerts"] / r["n"] if r["n"] else None)), Cell(fmt_int(r["flood"])), Cell(fmt_int(r["hw"])),
          Cell(fmt_int(r["jobs"])), Cell(fmt_num(r["lost"]))] for r in scopes],
        caption=f"Alert incidents of {d} by scope: node (one node), rack / leaf switch (nodes of one rack / under one "
                "leaf switch, or a switch alert), storage (a file-system alert), cluster (several racks, or no node).",
    ))
    warehouse = meta.warehouse_label or "WAREHOUSE"
    sec.note = (f"A retrospective (timeline, evidence, blast radius, similar incidents) of any of them: "
                f"`gpusre report incident {top['incident_id']} --warehouse {warehouse} --out DIR`.")
    return sec


def _alert_hygiene(con: duckdb.DuckDBPyConnection, meta: _Meta) -> Section:
    sec = Section("alert_hygiene", "Alert hygiene: noisy rules and missing coverage")
    reason = _alert_history(con)
    if reason:
        sec.no_data = reason
        return sec
    q_status = _table_status(con, "marts.alert_rule_quality")
    c_status = _table_status(con, "marts.hw_incidents_without_alert")
    c_built = c_status is None or "has not been built" not in c_status  # built and empty: full coverage
    if q_status and not c_built:
        sec.no_data = q_status
        return sec
    first, last = _alert_window(meta)
    window = f"{fmt_date(first)} … {fmt_date(last)}"
    parts: list[str] = []
    rules: list[dict[str, Any]] = []
    if q_status is None:
        verdicts = {r["verdict"]: r for r in _rows(con, """SELECT verdict, count(*) AS n, sum(fired) AS fired
                                                             FROM marts.alert_rule_quality GROUP BY verdict""")}
        tot = _rows(con, """SELECT count(*) AS n, coalesce(sum(fired), 0) AS fired, count(precision) AS judged
                            FROM marts.alert_rule_quality""")[0]
        span = _rows(con, "SELECT min(starts_at) AS a, max(starts_at) AS b FROM core.alerts")[0]
        rules = _rows(con, f"""SELECT alertname, fired, fingerprints, incidents, with_hw_incident, with_job_impact,
                                      precision, median_duration_s, flapping, flap_share, verdict
                               FROM (SELECT *, row_number() OVER (PARTITION BY verdict
                                                                  ORDER BY fired DESC NULLS LAST, alertname) AS k
                                     FROM marts.alert_rule_quality WHERE verdict IN (?, ?))
                               WHERE k <= {_TOP_N_RULES}
                               ORDER BY (verdict <> ?), fired DESC NULLS LAST, alertname""",
                      [_NOISE, _FLAPPING, _NOISE])
        span_txt = _period_text(fmt_date(_utc_date(span["a"])), fmt_date(_utc_date(span["b"])))
        order = [v for v in _VERDICTS if v in verdicts]
        order += sorted((v for v in verdicts if v not in _VERDICTS), key=lambda v: (v is None, str(v)))
        part = (f"of {_plural(tot['n'], 'alert rule')} ({_plural(tot['fired'], 'alert')} in {span_txt}), "
                + _count_phrase([(_verdict_phrase(v, verdicts[v]["n"]), verdicts[v]["n"]) for v in order]))
        noisy = [r for r in rules if r["verdict"] == _NOISE]
        if noisy:
            w = noisy[0]
            part += (f"; the noisiest, \u201c{truncate(w['alertname'], 60)}\u201d, fired {_plural(w['fired'], 'time')} "
                     + ("and none of its alerts" if not w["precision"]
                        else f"and only {fmt_pct(w['precision'])} of them")
                     + " came with a hardware incident or killed jobs")
        elif not tot["judged"]:
            part += " (precision cannot be judged: no hardware incident or failed job in the span of the alerts)"
        parts.append(part)
    else:
        parts.append(f"rule quality is not available ({_reason_text(q_status)})")

    uncovered: list[dict[str, Any]] = []
    if c_status is None:
        uncovered = _rows(con, f"""SELECT incident_id, component, start_ts, end_ts, nodes, scope
                                   FROM marts.hw_incidents_without_alert
                                   WHERE {_utc_day('start_ts')} BETWEEN ? AND ?
                                   ORDER BY start_ts DESC, incident_id""", [first, last])
    if c_built:
        checked = None
        try:  # hardware incidents the coverage mart could check: in the window and within the span of the alerts
            if _table_status(con, "marts.hw_incidents") is None:
                checked = _scalar(con, f"""SELECT count(*) FROM marts.hw_incidents
                                           WHERE {_utc_day('start_ts')} BETWEEN ? AND ?
                                             AND start_ts BETWEEN (SELECT min(starts_at) FROM core.alerts)
                                                              AND (SELECT max(starts_at) FROM core.alerts)""",
                                   [first, last])
        except duckdb.Error as exc:  # the hardware incident mart has its own section to report a bad shape
            log.warning("nightly report alert coverage denominator: %s", exc)
        n_checked = max(checked, len(uncovered)) if checked is not None else None
        of = f" of {fmt_int(n_checked)}" if n_checked is not None else ""
        if uncovered:
            comps: dict[str, int] = {}
            for r in uncovered:
                comps[component_label(r["component"])] = comps.get(component_label(r["component"]), 0) + 1
            by = sorted(comps.items(), key=lambda kv: (-kv[1], kv[0]))
            parts.append((f"{fmt_int(len(uncovered))}{of} hardware incidents" if of
                          else _plural(len(uncovered), "hardware incident"))
                         + f" in {window} had no alert on their nodes "
                         f"(missing coverage: {', '.join(f'{k} {fmt_int(v)}' for k, v in by)})")
        elif checked == 0:
            parts.append(f"no hardware incident in {window} to check alert coverage against")
        else:
            parts.append(f"the one hardware incident in {window} had an alert on its nodes" if n_checked == 1 else
                         f"all {_plural(n_checked, 'hardware incident')} in {window} had an alert on their nodes"
                         if n_checked else f"every hardware incident in {window} had an alert on its nodes")
    else:
        parts.append(f"alert coverage is unknown ({_reason_text(c_status)})")
    sec.lead = _cap("; ".join(parts) + ".")

    if rules:
        def dur(s: float | None) -> str:
            return MISSING if s is None else _age(s / 3600)

        sec.tables.append(Table(
            [Column("Alert rule"), Column("Verdict", nowrap=True), Column("Fired", True), Column("Series", True),
             Column("Incidents", True), Column("Precision", True), Column("Median duration", True),
             Column("Flap days", True), Column("On flap days", True)],
            [[Cell(truncate(r["alertname"], 48), mono=True, title=r["alertname"]), Cell(r["verdict"] or MISSING),
              Cell(fmt_int(r["fired"])), Cell(fmt_int(r["fingerprints"])), Cell(fmt_int(r["incidents"])),
              Cell(fmt_pct(r["precision"])), Cell(dur(r["median_duration_s"])), Cell(fmt_int(r["flapping"])),
              Cell(fmt_pct(r["flap_share"]))] for r in rules],
            caption=f"Rules to review over the whole alert history: the {_TOP_N_RULES} noisiest (\u201cnoise: consider "
                    f"silencing\u201d), then the {_TOP_N_RULES} flapping rules with the most alerts. Series: distinct "
                    "label sets (fingerprints). Precision: share of its alerts in incidents with a hardware incident "
                    "or killed jobs. Flap days: (series, day) pairs with repeated fire/resolve cycles; on flap days: "
                    "share of its alerts fired on one.",
        ))
    if uncovered:
        shown = uncovered[:_TOP_N_UNCOVERED]
        sec.tables.append(Table(
            [Column("Incident", nowrap=True), Column("Component"), Column("Start", nowrap=True), Column("Lasted", True),
             Column("Nodes", nowrap=True), Column("Scope")],
            [[Cell(str(r["incident_id"]), mono=True), Cell(component_label(r["component"])),
              Cell(fmt_date(r["start_ts"])),
              Cell(_age((r["end_ts"] - r["start_ts"]).total_seconds() / 3600)
                   if r["start_ts"] is not None and r["end_ts"] is not None else MISSING),
              Cell(truncate(_nodes_text(r["nodes"]), 30), mono=True, title=_nodes_text(r["nodes"])),
              Cell(str(r["scope"] or MISSING))] for r in shown],
            caption=(f"Latest {len(shown)} of {fmt_int(len(uncovered))}" if len(uncovered) > len(shown) else "The")
                    + f" hardware incidents (marts.hw_incidents) of {window} with no alert on their nodes from 10 min "
                      "before to 30 min after them (nor on their leaf switch), newest first: the alert rules miss "
                      "these failures. Only incidents within the span of the alert data are checked.",
        ))
    return sec


def _freshness_table(rows: list[dict[str, Any]], meta: _Meta) -> Table:
    def status(r: dict[str, Any]) -> str:
        if not r["records"]:
            return "no records"
        if not r["dense"]:
            return "sparse: not judged"
        return "ends early" if ends_early(r, meta.report_date) else "complete"

    def when(ts: datetime | None) -> str:
        return MISSING if ts is None else f"{ts.astimezone(timezone.utc):%Y-%m-%d %H:%M}"

    return Table(
        [Column("Source"), Column("Files", True), Column("Records", True), Column("First record", nowrap=True),
         Column("Last record", nowrap=True), Column("Days without records", True),
         Column(f"For {fmt_date(meta.report_date)}")],
        [[Cell(SOURCE_LABELS.get(r["source_kind"], r["source_kind"])), Cell(fmt_int(r["files"])),
          Cell(fmt_int(r["records"])), Cell(when(r["first_record_ts"]), mono=True),
          Cell(when(r["last_record_ts"]), mono=True),
          Cell(fmt_int(r["n_empty_days"]), title=", ".join(fmt_date(x) for x in (r["empty_days"] or [])[:60]) or None),
          Cell(status(r))] for r in rows],
        caption="Input freshness (UTC; marts.data_freshness). Dense sources record every few minutes, so a day "
                "without records is missing input; for alerts and node states it may be a quiet day.",
    )


def _data_quality(con: duckdb.DuckDBPyConnection, meta: _Meta) -> tuple[Section, dict[str, str]]:
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
    freshness = freshness_rows(con)
    if freshness:
        sec.tables.append(_freshness_table(freshness, meta))
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


def _latest_complete_log_day(con: duckdb.DuckDBPyConnection) -> date | None:
    """The day before the last node-log line: the report day of a landing without Slurm accounting."""
    for table, column in (("raw.syslog_lines", "ts"), ("core.node_events", "ts")):
        if _table_status(con, table) is None:
            rows = _rows(con, f"SELECT (max({column}) AT TIME ZONE 'UTC')::DATE - 1 AS d FROM {table}")
            if rows and rows[0]["d"] is not None:
                return rows[0]["d"]
    return None


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
        report_date = (_latest_complete_day(con) or period["b"] or _latest_complete_log_day(con)
                       or datetime.now(timezone.utc).date())
    meta = _Meta(report_date, period["a"], period["b"], generated_at or datetime.now(timezone.utc),
                 warehouse_label)

    headline, cards = _headline(con, meta)
    cards = cards + _failure_cards(con, meta)
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
        _guard("Compared with published GPU clusters", "published", lambda: _cluster_comparison(con)),
        _guard("Top users and accounts", "top", lambda: _top_consumers(con)),
        _guard("Last night's job failures", "failures", lambda: _failures(con, meta)),
        _guard("Why jobs failed", "attribution", lambda: _attribution(con, meta)),
        _guard("Failure taxonomy", "taxonomy", lambda: _taxonomy(con)),
        _guard("Top incidents by lost GPU-hours", "incidents", lambda: _incidents(con)),
        _guard("Suspect nodes", "suspects", lambda: _suspects(con)),
        _guard("Node availability", "availability", lambda: _availability(con, meta)),
        _guard("Nodes out of service now", "out_of_service", lambda: _out_of_service(con, meta)),
        _guard("MTTR by component class", "repairs", lambda: _repair_times(con)),
        _guard("Top drain reasons by node-hours", "drain_reasons", lambda: _drain_reasons(con)),
        _guard("Health checks: precision and missed detections", "health_checks", lambda: _health_checks(con)),
        _guard(f"Last night's alert flood ({fmt_date(meta.report_date)})", "alert_flood",
               lambda: _alert_flood(con, meta)),
        _guard(f"Alert incidents of {fmt_date(meta.report_date)} by size", "alert_incidents",
               lambda: _alert_incidents(con, meta)),
        _guard("Alert hygiene: noisy rules and missing coverage", "alert_hygiene", lambda: _alert_hygiene(con, meta)),
        _guard("New log templates", "templates", lambda: _new_templates(con, meta)),
    ]
    try:
        warnings = coverage_warnings(con, meta.report_date, meta.report_date,
                                     gaps_since=meta.report_date - timedelta(days=GAP_WARN_DAYS - 1))
    except duckdb.Error as exc:
        log.warning("nightly report coverage warnings failed: %s", exc)
        warnings = [f"Input coverage could not be checked: {truncate(exc, 200)}"]
    try:
        quality, prov = _data_quality(con, meta)
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
        "warnings": warnings,
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


_BACKTICKS = re.compile(r"`([^`]+)`")


def _code(text: str) -> Markup:
    """Escape ``text``, then show `backticked` parts (commands, paths) as code."""
    return Markup(_BACKTICKS.sub(r"<code>\1</code>", str(escape(text))))


def _environment(markdown: bool) -> Environment:
    if markdown:
        # Every {{ expression }} is escaped for Markdown; literal template text is not.
        return Environment(loader=PackageLoader("gpusre.reports", "templates"), autoescape=False,
                           finalize=md_escape, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                           keep_trailing_newline=True)
    env = Environment(loader=PackageLoader("gpusre.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["nbsp"] = _nbsp
    env.filters["code"] = _code
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
