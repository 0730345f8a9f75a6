"""The SLO review report: one self-contained HTML file plus a Markdown summary for a review meeting.

:func:`render_slo_report` reads the reliability SLI marts (``marts.slo_daily``, ``marts.mtbf``,
``marts.mtbf_trend``, ``marts.node_failure_rate``, ``marts.tbf_weibull``, ``marts.job_mttf_by_size``,
``marts.job_mttf_projection``, ``marts.job_survival``, ``marts.ettr_runs``, ``marts.ettr_by_size``,
``marts.checkpoint_what_if``, ``marts.goodput_daily``) and ``marts.hw_incidents`` for a window of UTC
days ``[date_from, date_to]`` and writes ``slo-<from>_<to>.html`` and ``.md``.

Design (as the nightly report, :mod:`gpusre.reports.nightly`, whose table model, helpers and CSS
it shares):

* Every section is built independently; a missing or empty mart, or a query error, shows "No data
  yet" / an error note in that section only.
* Every chart carries a one-sentence takeaway computed from the data, and every table a caption
  with the definition and the assumption behind each number.
* What the window covers: SLOs, goodput, incidents and ETTR runs are cut to the window (ETTR: runs
  that *ended* in it). The MTBF marts hold whole calendar months and the whole record, so the report
  shows the months that overlap the window plus the whole record, and ``marts.mtbf_trend`` (latest
  month vs the one before) as built. Job MTTF, survival, expected ETTR and the checkpoint what-if
  exist only for the whole record; their sections say so.
* A row with ``sufficient`` false never shows a point estimate: "insufficient data", the note and
  the confidence interval only.
* Warehouse text (run names, users, root causes) is escaped by Jinja2 autoescape in HTML and by
  :func:`~gpusre.reports.formatting.md_escape` in Markdown; chart labels go through
  :func:`~gpusre.reports.charts.safe_label`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
from markupsafe import Markup

from gpusre.models.component_classes import class_label
from gpusre.models.warehouse import table_columns

from . import charts
from .coverage import coverage_warnings
from .formatting import MISSING, fmt_date, fmt_int, fmt_num, fmt_pct, truncate
from .nightly import (
    NO_DATA,
    Cell,
    Column,
    ReportPaths,
    Table,
    _bucket_cell,
    _cap,
    _cause_label,
    _environment,
    _latest_complete_day,
    _nodes_text,
    _p_phrase,
    _plural,
    _rows,
    _scalar,
    _svg,
    _table_status,
    _utc_day,
    component_label,
)

__all__ = ["ChartBlock", "SloSection", "render_slo_report", "build_slo_context", "default_window",
           "SLI_LABELS", "REFERENCE_RF", "META_RSC1_MTTF", "DEFAULT_WINDOW_DAYS"]

log = logging.getLogger(__name__)

#: Length of the default window (days), ending on the latest complete day with SLO data.
DEFAULT_WINDOW_DAYS = 30

#: SLI names of ``marts.slo_daily`` -> what the meeting calls them (unknown SLIs are shown as stored).
SLI_LABELS: dict[str, str] = {
    "node_availability": "Node availability",
    "job_infra_success": "Jobs not killed by the infrastructure",
    "ettr_large_runs": "ETTR of large runs",
    "goodput": "Goodput",
}
_SLI_ORDER = tuple(SLI_LABELS)
_SLI_DEFS: dict[str, str] = {
    "node_availability": "scheduled node-hours minus unplanned down node-hours, over node-hours minus planned "
                         "maintenance (down time estimated from incidents until the node ran a job again)",
    "job_infra_success": "GPU jobs that ended that day and were not killed by the infrastructure, over all GPU "
                         "jobs that ended that day",
    "ettr_large_runs": "productive seconds over wall-clock seconds of runs of at least slo.ettr_min_run_gpus "
                       "GPUs (default 256) that ended that day",
    "goodput": "productive GPU-hours over capacity GPU-hours",
}

#: Published failure rates per 1,000 node-days: (label, value, as published, citation).
REFERENCE_RF: tuple[tuple[str, float, str, str], ...] = (
    ("Meta RSC-1", 6.50, "6.50", "Kokolis et al., HPCA 2025"),
    ("Meta RSC-2", 2.34, "2.34", "Kokolis et al., HPCA 2025"),
    ("Llama 3", 3.8, "≈ 3.8", "Llama 3 Herd of Models §3.3.4"),
)
#: Meta RSC-1's published job MTTF by job size (GPUs, hours), Kokolis et al., HPCA 2025.
META_RSC1_MTTF: tuple[tuple[int, float], ...] = ((1024, 7.9), (16384, 1.8), (131072, 0.23))

#: A typical GPU count per size bucket, used only when the projection mart has no bucket median.
_BUCKET_MID = {"1": 1, "2-8": 4, "9-64": 24, "65-256": 128, "257-1024": 512, ">1024": 2048}
_BUCKETS = ("1", "2-8", "9-64", "65-256", "257-1024", ">1024")
_KM_HORIZON_H = 24.0
_TOP_N_INCIDENTS = 10
_TOP_N_RUNS = 12
_WEIBULL_SCALE_CAP_H = 1e6  # a fitted scale beyond ~114 years says "the fit is unstable", not a lifetime


# --------------------------------------------------------------------------------------------
# model


@dataclass(frozen=True)
class ChartBlock:
    """A chart (trusted SVG from :mod:`charts`) with its one-sentence takeaway."""

    svg: Markup
    takeaway: str


@dataclass
class SloSection:
    """One report section: lead sentence, what it covers, and charts / tables / notes in order."""

    key: str
    title: str
    lead: str = ""
    scope: str = ""  # what the numbers cover: the window, the whole record, ...
    items: list[ChartBlock | Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    no_data: str | None = None

    @property
    def takeaways(self) -> list[str]:
        return [i.takeaway for i in self.items if isinstance(i, ChartBlock)]

    @property
    def tables(self) -> list[Table]:
        return [i for i in self.items if isinstance(i, Table)]


@dataclass(frozen=True)
class _Window:
    start: date
    end: date
    generated_at: datetime
    warehouse_label: str

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    @property
    def text(self) -> str:
        return f"{fmt_date(self.start)} … {fmt_date(self.end)}"

    @property
    def months(self) -> list[str]:
        """Calendar months ('YYYY-MM') that overlap the window."""
        out = []
        y, m = self.start.year, self.start.month
        while (y, m) <= (self.end.year, self.end.month):
            out.append(f"{y:04d}-{m:02d}")
            y, m = (y + 1, 1) if m == 12 else (y, m + 1)
        return out


# --------------------------------------------------------------------------------------------
# formatting helpers


def _ok(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _hnum(x: float | None) -> str:
    """Hours without unit, with precision that suits the magnitude: 3,538 / 412 / 57.4 / 1.97 / 0.25."""
    if not _ok(x):
        return MISSING
    x = float(x)  # type: ignore[arg-type]
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _hours(x: float | None) -> str:
    return MISSING if not _ok(x) else f"{_hnum(x)} h"


def _ci(lo: float | None, hi: float | None, unit: str = " h", fmt: Callable[[float | None], str] = _hnum) -> str:
    if not _ok(lo) and not _ok(hi):
        return MISSING
    if not _ok(hi):
        return f"≥ {fmt(lo)}{unit}"
    return f"{fmt(lo)}–{fmt(hi)}{unit}"


def _obj(x: float | None) -> str:
    """An objective as a short percentage: 0.995 -> '99.5 %', 0.7 -> '70 %'."""
    return MISSING if not _ok(x) else f"{float(x) * 100:.4g} %"  # type: ignore[arg-type]


def _sli_pct(x: float | None) -> str:
    return fmt_pct(x, 2)


def _budget(x: float | None) -> str:
    """A budget fraction as a whole percentage with a true minus sign: -0.28 -> '−28 %'."""
    return MISSING if not _ok(x) else f"{float(x) * 100:.0f} %".replace("-", "\u2212")  # type: ignore[arg-type]


def _lc(label: str) -> str:
    """Lower-case a label's first letter for use inside a sentence, keeping acronyms ('ETTR of ...')."""
    first = label.split(" ", 1)[0]
    return label if first.isupper() or (len(first) > 1 and first[1].isupper()) else label[:1].lower() + label[1:]


def _dur(seconds: float | None) -> str:
    """A configured interval: 300 -> '5 min', 3600 -> '1 h', 52467 -> '14.6 h'."""
    if not _ok(seconds):
        return MISSING
    s = float(seconds)  # type: ignore[arg-type]
    return f"{s / 60:.0f} min" if s < 3600 else f"{s / 3600:.3g} h"


def _rate(x: float | None) -> str:
    return fmt_num(x, 2)


def _sli_label(sli: str) -> str:
    return SLI_LABELS.get(sli, sli)


def _class_label(c: str | None) -> str:
    return class_label(c)


def _bucket_key(b: str | None) -> int:
    return _BUCKETS.index(b) if b in _BUCKETS else len(_BUCKETS)


def _bucket_of(n_gpus: int | None) -> str:
    n = int(n_gpus or 0)
    for label, lo, hi in (("1", 1, 1), ("2-8", 2, 8), ("9-64", 9, 64), ("65-256", 65, 256),
                          ("257-1024", 257, 1024)):
        if lo <= n <= hi:
            return label
    return ">1024" if n > 1024 else "0"


def _bucket_text(b: str) -> str:
    return "single-GPU" if b == "1" else f"{b} GPU"


def _quantile(vals: Sequence[float], q: float) -> float | None:
    """Linear-interpolated quantile (as numpy's default and Polars' 'linear')."""
    v = sorted(vals)
    if not v:
        return None
    pos = (len(v) - 1) * q
    lo = math.floor(pos)
    hi = math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _change_phrase(ratio_mtbf: float) -> str:
    """MTBF now / before -> '18 % lower' / '20 % higher' / 'unchanged'."""
    pct = (ratio_mtbf - 1.0) * 100
    if abs(pct) < 0.5:
        return "unchanged"
    return f"{abs(pct):.0f} % {'higher' if pct > 0 else 'lower'}"


# --------------------------------------------------------------------------------------------
# 1. SLO status and error-budget burn-down


@dataclass
class _SliWindow:
    sli: str
    objective: float | None
    days: list[date]
    good: float
    total: float
    burndown: list[float | None]
    rolling: list[float | None]
    exhausted_on: date | None
    last: dict[str, Any]
    days_measured: int

    @property
    def value(self) -> float | None:
        return self.good / self.total if self.total > 0 else None

    @property
    def allowed(self) -> float | None:
        if self.objective is None or not 0 < self.objective < 1:
            return None
        return round(1.0 - self.objective, 15) * self.total

    @property
    def budget_left(self) -> float | None:
        a = self.allowed
        return 1.0 - (self.total - self.good) / a if a else None

    @property
    def met(self) -> bool | None:
        v = self.value
        return None if v is None or self.objective is None else v >= self.objective


def _sli_windows(con: duckdb.DuckDBPyConnection, w: _Window) -> list[_SliWindow]:
    rows = _rows(con, """SELECT day, sli, value, objective, good, total, budget_remaining, burn_rate_short,
                                burn_rate_long, status
                         FROM marts.slo_daily WHERE day BETWEEN ? AND ? ORDER BY sli, day""", [w.start, w.end])
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["sli"], []).append(r)
    out = []
    for sli in sorted(by, key=lambda s: (_SLI_ORDER.index(s) if s in _SLI_ORDER else 99, s)):
        rs = by[sli]
        objective = next((r["objective"] for r in reversed(rs) if r["objective"] is not None), None)
        good = sum(float(r["good"] or 0.0) for r in rs)
        total = sum(float(r["total"] or 0.0) for r in rs)
        sw = _SliWindow(sli, objective, [r["day"] for r in rs], good, total, [], [r["budget_remaining"] for r in rs],
                        None, rs[-1], sum(1 for r in rs if (r["total"] or 0) > 0))
        allowed = sw.allowed
        bad = 0.0
        for r in rs:
            bad += float(r["total"] or 0.0) - float(r["good"] or 0.0)
            sw.burndown.append(1.0 - bad / allowed if allowed else None)
            if allowed and sw.exhausted_on is None and bad > allowed:
                sw.exhausted_on = r["day"]
        out.append(sw)
    return out


def _slo_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    sec = SloSection("slo", "SLO status and error budgets",
                     scope=f"Window {w.text} ({w.days} days), from marts.slo_daily.")
    reason = _table_status(con, "marts.slo_daily")
    if reason:
        sec.no_data = reason
        return sec
    slis = _sli_windows(con, w)
    if not slis:
        sec.no_data = f"{NO_DATA}: marts.slo_daily has no rows between {fmt_date(w.start)} and {fmt_date(w.end)}."
        return sec
    measured = [s for s in slis if s.met is not None]
    met = [s for s in measured if s.met]
    missed = [s for s in measured if not s.met]
    parts = [f"{len(met)} of {len(measured)} SLOs met their objective over {w.text}"]
    if met:
        parts.append("met: " + ", ".join(f"{_lc(_sli_label(s.sli))} {_sli_pct(s.value)} "
                                         f"(objective {_obj(s.objective)})" for s in met))
    if missed:
        parts.append("missed: " + ", ".join(
            f"{_lc(_sli_label(s.sli))} {_sli_pct(s.value)} (objective {_obj(s.objective)}"
            + (f", budget gone on {fmt_date(s.exhausted_on)})" if s.exhausted_on else ")") for s in missed))
    unmeasured = [s for s in slis if s.met is None]
    if unmeasured:
        parts.append("no events for " + ", ".join(_lc(_sli_label(s.sli)) for s in unmeasured))
    sec.lead = _cap("; ".join(parts) + ".")

    with_budget = [s for s in slis if s.budget_left is not None]
    if with_budget:
        ends = ", ".join(f"{_lc(_sli_label(s.sli))} {_budget(s.budget_left)}" for s in with_budget)
        first = min((s for s in with_budget if s.exhausted_on), key=lambda s: s.exhausted_on, default=None)  # type: ignore[arg-type,return-value]
        take = (f"Error budget left at the end of the window: {ends}"
                + (f"; {_lc(_sli_label(first.sli))} ran out first, on {fmt_date(first.exhausted_on)} "
                   f"(day {(first.exhausted_on - w.start).days + 1} of {w.days})." if first and first.exhausted_on
                   else "; no SLO overspent its budget."))
        panels = [(f"{_sli_label(s.sli)} (objective {_obj(s.objective)})", s.days, s.burndown, s.rolling,
                   "#2e7d32" if (s.budget_left or 0) > 0 else "#c62828") for s in with_budget]
        sec.items.append(ChartBlock(_svg(charts.burndown_chart(panels, f"Error-budget burn-down, {w.text}")), take))
    to = fmt_date(w.end)
    sec.items.append(Table(
        [Column("SLI"), Column("Objective", True), Column("Over window", True), Column("Met", nowrap=True),
         Column("Budget left", True), Column("Budget gone", nowrap=True), Column("Rolling budget", True),
         Column("Burn 1 d / 3 d", True), Column("Status", nowrap=True), Column("Days", True)],
        [[Cell(_sli_label(s.sli), title=_SLI_DEFS.get(s.sli, s.sli)), Cell(_obj(s.objective)), Cell(_sli_pct(s.value)),
          Cell(MISSING if s.met is None else ("yes" if s.met else "no"),
               swatch=None if s.met is None else ("#2e7d32" if s.met else "#c62828")),
          Cell(_budget(s.budget_left)), Cell(fmt_date(s.exhausted_on) if s.exhausted_on else MISSING),
          Cell(_budget(s.last["budget_remaining"])),
          Cell(f"{fmt_num(s.last['burn_rate_short'], 2)} / {fmt_num(s.last['burn_rate_long'], 2)}"),
          Cell(str(s.last["status"] or MISSING).replace("_", " "), swatch=charts.slo_status_colour(s.last["status"])),
          Cell(f"{fmt_int(s.days_measured)} / {fmt_int(len(s.days))}")] for s in slis],
        caption="Over window = Σ good / Σ total of the window's days. Budget left = 1 − bad / ((1 − objective) × "
                "total) over the window (negative = overspent); budget gone = the first day the window's cumulative "
                f"bad events exceeded it. Rolling budget, burn rates and status are marts.slo_daily's values on {to}: "
                "budget over the configured rolling window (slo.window_days, default 30); burn rate = (bad / total) "
                "/ (1 − objective) over the last 1 and 3 days; status page = both burn rates > 6, ticket = both > 1 "
                "(Google SRE Workbook), warning = 1-day burn > 1 or < 25 % budget left. Days = days with events / "
                "days in the window. Hover an SLI for its good / total definition.",
    ))
    partial = [s for s in slis if s.days and s.days[-1] < w.end]
    if partial:
        sec.notes.append("marts.slo_daily ends before the window does for " + ", ".join(
            f"{_lc(_sli_label(s.sli))} (last day {fmt_date(s.days[-1])})" for s in partial) + ".")
    return sec


# --------------------------------------------------------------------------------------------
# 2. MTBF by component class


def _mtbf_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    months = w.months
    sec = SloSection("mtbf", "MTBF by component class",
                     scope=f"Calendar months overlapping the window ({', '.join(months)}) and the whole record, "
                           "from marts.mtbf; month-over-month trend from marts.mtbf_trend.")
    reason = _table_status(con, "marts.mtbf")
    if reason:
        sec.no_data = reason
        return sec
    ph = ",".join("?" * len(months))
    rows = _rows(con, f"""SELECT period_type, period, scope, component, failures, exposure_hours, exposure_gpu_hours,
                                 mtbf_hours, ci_low, ci_high, mtbf_gpu_hours, rate_per_1000_node_days, sufficient,
                                 note, exposure_source
                          FROM marts.mtbf
                          WHERE scope IN ('cluster', 'component_class')
                            AND (period_type = 'all' OR (period_type = 'month' AND period IN ({ph})))""", months)
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.mtbf has no cluster or component-class rows."
        return sec
    span = _rows(con, "SELECT min(period) AS a, max(period) AS b FROM marts.mtbf WHERE period_type = 'month'")[0]
    record = f"whole record ({span['a']} … {span['b']})" if span["a"] else "whole record"

    def cat(r: dict[str, Any]) -> str:
        return "all" if r["scope"] == "cluster" else (r["component"] or "other")

    all_rows = {cat(r): r for r in rows if r["period_type"] == "all"}
    cats = sorted({cat(r) for r in rows}, key=lambda c: (c != "all", -(all_rows.get(c, {}).get("failures") or 0), c))
    periods = ["all"] + [m for m in months if any(r["period"] == m for r in rows)]
    ordered = sorted(rows, key=lambda r: (cats.index(cat(r)), periods.index(r["period"]) if r["period"] in periods
                                          else 99))
    chart_rows = [(_class_label(cat(r)), "whole record" if r["period_type"] == "all" else r["period"],
                   r["mtbf_hours"] if r["sufficient"] else None, r["ci_low"], r["ci_high"], bool(r["sufficient"]))
                  for r in ordered]

    # Takeaway: the trend of the cluster and of the GPU class when mtbf_trend covers a window month.
    trend: list[dict[str, Any]] = []
    if _table_status(con, "marts.mtbf_trend") is None:
        trend = _rows(con, """SELECT comparison, scope, component, period, previous_period, failures,
                                     previous_failures, mtbf_hours, previous_mtbf_hours, rate_ratio, p_value,
                                     direction
                              FROM marts.mtbf_trend
                              ORDER BY comparison <> 'month over month', comparison, scope <> 'cluster',
                                       component""")
    month_rows = {(cat(r), r["period"]): r for r in rows if r["period_type"] == "month"}

    def trend_clause(t: dict[str, Any]) -> str:
        label = "cluster" if t["scope"] == "cluster" else _class_label(t["component"])
        label = f"{label} MTBF per node"
        now = month_rows.get(("all" if t["scope"] == "cluster" else t["component"], t["period"]))
        if not now or not now["sufficient"] or not _ok(t["mtbf_hours"]):
            return (f"{label} in {t['period']}: insufficient data "
                    f"({_plural(t['failures'], 'failure')}; {fmt_int(t['previous_failures'])} in "
                    f"{t['previous_period']})")
        text = (f"{label} was {_hours(now['mtbf_hours'])} in {t['period']} "
                f"(95 % CI {_ci(now['ci_low'], now['ci_high'])})")
        if _ok(t["previous_mtbf_hours"]) and _ok(t["rate_ratio"]) and t["rate_ratio"]:
            text += (f", {_change_phrase(1.0 / t['rate_ratio'])} than in {t['previous_period']} "
                     f"({_p_phrase(t['p_value'])}, {t['direction']})")
        else:
            text += f"; {t['previous_period']} had insufficient data to compare"
        return text

    c = all_rows.get("all")
    lead = (f"Over the {record} the cluster's MTBF per node is {_hours(c['mtbf_hours'])} (95 % CI "
            f"{_ci(c['ci_low'], c['ci_high'])}, {_plural(c['failures'], 'failure')})" if c and c["sufficient"] else
            f"Too few failures for a cluster MTBF over the {record}")
    classes = [r for k, r in all_rows.items() if k != "all" and r["sufficient"] and _ok(r["mtbf_hours"])]
    if classes:
        lo = min(classes, key=lambda r: r["mtbf_hours"])
        lead += (f"; {_lc(_class_label(lo['component']))} fails most often (MTBF {_hours(lo['mtbf_hours'])} per node, "
                 f"{_plural(lo['failures'], 'failure')})")
    sec.lead = lead + "."
    in_window = [t for t in trend if t["comparison"] == "month over month" and t["period"] in months]
    picked = [t for t in in_window if t["scope"] == "cluster"] + [
        t for t in in_window if t["scope"] == "component_class" and t["component"] == "gpu"]
    if picked:
        take = _cap("; ".join(trend_clause(t) for t in picked) + ".")
    else:
        take = sec.lead
        if trend:
            take += (f" marts.mtbf_trend compares {trend[0]['period']} with {trend[0]['previous_period']}, "
                     "outside this window.")
    changed = [t for t in trend if t["comparison"] != "month over month" and t["direction"] in ("worse", "better")]
    if changed:
        t = min(changed, key=lambda r: r["p_value"])
        label = "cluster" if t["scope"] == "cluster" else _lc(_class_label(t["component"]))
        change = (f"is {t['rate_ratio']:.1f}× what it was before" if _ok(t["rate_ratio"]) and t["rate_ratio"]
                  else f"went from {fmt_int(t['previous_failures'])} to {fmt_int(t['failures'])} failures")
        take += (f" {_cap(t['comparison'])}, the {label} failure rate of the nodes it touched {change} "
                 f"({_p_phrase(t['p_value'])}: {t['direction']}).")
    sec.items.append(ChartBlock(_svg(charts.mtbf_chart(chart_rows, "MTBF per node by component class")), take))

    def mtbf_cells(r: dict[str, Any]) -> list[Cell]:
        ok = bool(r["sufficient"])
        return [Cell(_class_label(cat(r))), Cell("whole record" if r["period_type"] == "all" else r["period"]),
                Cell(fmt_int(r["failures"])), Cell(fmt_int(r["exposure_hours"])),
                Cell(_hours(r["mtbf_hours"]) if ok and _ok(r["mtbf_hours"]) else "insufficient data"),
                Cell(_ci(r["ci_low"], r["ci_high"])),
                Cell(_hours(r["mtbf_gpu_hours"]) if ok and _ok(r["mtbf_gpu_hours"]) else MISSING),
                Cell(_rate(r["rate_per_1000_node_days"]) if ok else MISSING),
                Cell(truncate(r["note"], 70) if r["note"] else "", title=r["note"] or None)]

    source = next((r["exposure_source"] for r in rows if r.get("exposure_source")), None)
    sec.items.append(Table(
        [Column("Component class"), Column("Period", nowrap=True), Column("Failures", True),
         Column("Node-hours", True), Column("MTBF per node", True), Column("95 % CI", True),
         Column("MTBF per GPU", True), Column("r_f", True), Column("Note")],
        [mtbf_cells(r) for r in ordered],
        caption="Failures: hardware incidents that started in the period (marts.hw_incidents; fabric- and "
                "storage-wide incidents count once). MTBF per node = node-hours in service / failures"
                + (f" (exposure: {source})" if source else "")
                + "; the cluster sees a failure every MTBF / N nodes hours. 95 % CI: exact Poisson (Garwood). "
                "MTBF per GPU = GPU-hours / failures, GPU components only. r_f = failures per 1,000 node-days. "
                "Below reliability.min_failures (default 3) failures no point estimate is given.",
    ))
    if trend:
        sec.items.append(Table(
            [Column("Comparison"), Column("Scope"), Column("Periods", nowrap=True), Column("Failures", True),
             Column("MTBF now", True),
             Column("MTBF before", True), Column("MTBF change", True), Column("p-value", True),
             Column("Direction", nowrap=True)],
            [[Cell(t["comparison"]), Cell(_class_label("all" if t["scope"] == "cluster" else t["component"])),
              Cell(f"{t['period']} vs {t['previous_period']}"),
              Cell(f"{fmt_int(t['failures'])} vs {fmt_int(t['previous_failures'])}"),
              Cell(_hours(t["mtbf_hours"]) if _ok(t["mtbf_hours"]) else "insufficient data"),
              Cell(_hours(t["previous_mtbf_hours"]) if _ok(t["previous_mtbf_hours"]) else "insufficient data"),
              Cell(_change_phrase(1.0 / t["rate_ratio"]) if _ok(t["mtbf_hours"]) and _ok(t["previous_mtbf_hours"])
                   and _ok(t["rate_ratio"]) and t["rate_ratio"] else MISSING),
              Cell(MISSING if not _ok(t["p_value"]) else _p_phrase(t["p_value"]).removeprefix("p ").removeprefix("= ")),
              Cell(t["direction"] or MISSING)] for t in trend],
            caption="Latest month in the warehouse vs the month before, and the nodes each planned maintenance "
                    "window touched after it vs before it (marts.mtbf_trend): exact conditional test "
                    "of equal Poisson rates given the months' node-hours; 'worse' / 'better' only at p < 0.05. "
                    "MTBF change = previous rate / current rate − 1; not given when either month has "
                    "insufficient data.",
        ))
    return sec


def _exposure_source(con: duckdb.DuckDBPyConnection) -> str:
    """Where marts.mtbf's node-hours came from (node states, or cluster.yaml), for captions."""
    try:
        got = _rows(con, "SELECT exposure_source FROM marts.mtbf WHERE exposure_source IS NOT NULL LIMIT 1")
    except duckdb.Error:
        return "exposure source unknown"
    return got[0]["exposure_source"] if got else "exposure source unknown"


# --------------------------------------------------------------------------------------------
# 2b. failure rate vs published figures, and time between failures


def _rate_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    months = w.months
    sec = SloSection("failure-rate", "Node failure rate vs published figures",
                     scope="Whole record and the months overlapping the window, from marts.node_failure_rate; "
                           "time between failures from marts.tbf_weibull (whole record).")
    reason = _table_status(con, "marts.node_failure_rate")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT period_type, period, variant, failures, node_days, rate_per_1000_node_days, ci_low,
                                ci_high, sufficient
                         FROM marts.node_failure_rate ORDER BY period_type <> 'all', variant <> 'hw_incidents',
                                                             variant, period""")
    rows = [r for r in rows if r["period_type"] == "all" or r["period"] in months]
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.node_failure_rate has no whole-record or window rows."
        return sec

    def label(r: dict[str, Any]) -> str:
        what = ("all hardware incidents" if r["variant"] == "hw_incidents" else
                f"jobs > {r['variant'].removeprefix('jobs_gt_').removesuffix('_gpus')} GPUs"
                if r["variant"].startswith("jobs_gt_") else r["variant"])
        return f"{_cap(what)}, {'whole record' if r['period_type'] == 'all' else r['period']}"

    refs = [(f"{name} (published)", v, t) for name, v, t, _ in REFERENCE_RF]
    main = next((r for r in rows if r["period_type"] == "all" and r["variant"] == "hw_incidents"), rows[0])
    if main["sufficient"] and _ok(main["rate_per_1000_node_days"]):
        lo, hi = main["ci_low"], main["ci_high"]
        def group(names: list[str], where: str) -> str:
            if not names:
                return ""
            joined = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            return f"{joined} {'lies' if len(names) == 1 else 'lie'} {where}"

        inside = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if _ok(lo) and _ok(hi) and lo <= v <= hi]
        below = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if _ok(lo) and v < lo]
        above = [f"{n}'s {t}" for n, v, t, _ in REFERENCE_RF if _ok(hi) and v > hi]
        rel = "; ".join(p for p in (group(inside, "inside that interval"), group(below, "below it"),
                                    group(above, "above it")) if p)
        take = (f"The cluster had {_rate(main['rate_per_1000_node_days'])} hardware failures per 1,000 node-days "
                f"(95 % CI {_ci(lo, hi, '', _rate)}) over the "
                f"{'whole record' if main['period_type'] == 'all' else main['period']}"
                + (f"; {rel}" if rel else "") + " (Kokolis et al., HPCA 2025; Llama 3 Herd of Models §3.3.4).")
    else:
        take = (f"Too few failures for a rate: insufficient data ({_plural(main['failures'], 'failure')} in "
                f"{fmt_int(main['node_days'])} node-days; 95 % CI {_ci(main['ci_low'], main['ci_high'], '', _rate)}).")
    sec.lead = take
    sec.items.append(ChartBlock(_svg(charts.rate_reference_chart(
        [(label(r), r["rate_per_1000_node_days"] if r["sufficient"] else None, r["ci_low"], r["ci_high"],
          bool(r["sufficient"])) for r in rows], refs,
        "Failures per 1,000 node-days: this cluster vs published figures")), take))
    sec.items.append(Table(
        [Column("Rate"), Column("Failures", True), Column("Node-days", True), Column("per 1,000 node-days", True),
         Column("95 % CI", True)],
        [[Cell(label(r)), Cell(fmt_int(r["failures"])), Cell(fmt_num(r["node_days"], 0)),
          Cell(_rate(r["rate_per_1000_node_days"]) if r["sufficient"] else "insufficient data"),
          Cell(_ci(r["ci_low"], r["ci_high"], "", _rate))] for r in rows]
        + [[Cell(f"{n} (published, {cite})"), Cell(MISSING), Cell(MISSING), Cell(t), Cell(MISSING)]
           for n, _, t, cite in REFERENCE_RF],
        caption="r_f = failures per 1,000 node-days. Hardware incidents: every incident over in-service node-days "
                f"({_exposure_source(con)}). Meta's variant: infrastructure failures of jobs "
                "with more than N GPUs (reliability.rf_min_job_gpus, default 128) over those jobs' node-days of "
                "runtime. 95 % CI: exact Poisson (Garwood). Published: Meta RSC-1 6.50 and RSC-2 2.34 (Kokolis "
                "et al., HPCA 2025); Llama 3 ≈ 3.8 (419 unexpected interruptions in 54 days on 16,384 GPUs, "
                "Llama 3 Herd of Models §3.3.4).",
    ))
    if _table_status(con, "marts.tbf_weibull") is None:
        wb = _rows(con, """SELECT component_class, n_failures, n_censored, shape, shape_ci_low, shape_ci_high,
                                  scale_hours, interpretation
                           FROM marts.tbf_weibull ORDER BY component_class <> 'all', component_class""")

        def scale(x: float | None) -> str:
            if not _ok(x):
                return MISSING
            return f"> {_WEIBULL_SCALE_CAP_H:,.0f} h (unstable fit)" if x > _WEIBULL_SCALE_CAP_H else _hours(x)

        sec.items.append(Table(
            [Column("Component class"), Column("Repeat failures", True), Column("Censored", True),
             Column("Weibull shape k", True), Column("95 % CI", True), Column("Scale", True),
             Column("Interpretation")],
            [[Cell(_class_label(r["component_class"])), Cell(fmt_int(r["n_failures"])), Cell(fmt_int(r["n_censored"])),
              Cell(fmt_num(r["shape"], 2)), Cell(_ci(r["shape_ci_low"], r["shape_ci_high"], "",
                                                     lambda v: fmt_num(v, 2))),
              Cell(scale(r["scale_hours"])), Cell(r["interpretation"] or MISSING)] for r in wb],
            caption="Time between failures of the same node, whole record: Weibull fit with right-censoring (time "
                    "from a node's last failure, or from the start for a node that never failed, to the end of the "
                    "data). Shape k < 1: failures repeat on the same nodes soon after (lemon nodes, infant "
                    "mortality); k ≈ 1: constant rate; k > 1: wear-out. A scale beyond 10⁶ h means the fit did not "
                    "converge to a usable lifetime.",
        ))
        a = next((r for r in wb if r["component_class"] == "all"), None)
        if a and _ok(a["shape"]) and _ok(a["shape_ci_high"]):
            sec.notes.append(
                f"Repeat failures: Weibull shape over all classes k = {fmt_num(a['shape'], 2)} (95 % CI "
                f"{_ci(a['shape_ci_low'], a['shape_ci_high'], '', lambda v: fmt_num(v, 2))}) from "
                f"{_plural(a['n_failures'], 'repeat failure')}: "
                + ("nodes that failed once tend to fail again soon — check for lemon nodes before returning them "
                   "to service." if a["shape_ci_high"] < 1 else
                   "no evidence against a constant failure rate." if a["shape_ci_low"] <= 1 else
                   "failures become more frequent with time since the last one (wear-out)."))
    return sec


# --------------------------------------------------------------------------------------------
# 3. job MTTF by size


def _mttf_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    sec = SloSection("mttf", "Job MTTF by size and projection",
                     scope="Whole record (the job MTTF marts have no per-period rows): marts.job_mttf_by_size, "
                           "marts.job_mttf_projection, marts.job_survival.")
    reason = _table_status(con, "marts.job_mttf_by_size")
    if reason:
        sec.no_data = reason
        return sec
    size = _rows(con, """SELECT gpus_bucket, bucket_order, jobs, instances, infra_failures, runtime_hours, gpu_hours,
                                mttf_hours, ci_low, ci_high, sufficient, note
                         FROM marts.job_mttf_by_size ORDER BY bucket_order""")
    proj: list[dict[str, Any]] = []
    if _table_status(con, "marts.job_mttf_projection") is None:
        proj = _rows(con, """SELECT kind, gpus_bucket, n_gpus, mttf_hours, ci_low, ci_high, r_gpu_per_hour, exponent,
                                    exponent_ci_low, exponent_ci_high
                             FROM marts.job_mttf_projection ORDER BY n_gpus""")
    medians = {r["gpus_bucket"]: r["n_gpus"] for r in proj if r["kind"] != "projected" and r["gpus_bucket"]}
    projected = [r for r in proj if r["kind"] == "projected"]
    measured = [(r["gpus_bucket"], float(medians.get(r["gpus_bucket"]) or _BUCKET_MID.get(r["gpus_bucket"], 1)),
                 r["mttf_hours"] if r["sufficient"] else None, r["ci_low"], r["ci_high"], bool(r["sufficient"]))
                for r in size if r["gpus_bucket"] in _BUCKET_MID]
    fit = None
    p0 = next((r for r in proj if _ok(r["r_gpu_per_hour"])), None)
    if p0:
        band = next((r for r in proj if _ok(r["ci_low"]) and _ok(r["ci_high"]) and r["ci_low"] > 0), None)
        r_hi = 1.0 / (band["n_gpus"] * band["ci_low"]) if band else None
        r_lo = 1.0 / (band["n_gpus"] * band["ci_high"]) if band else None
        fit = (p0["r_gpu_per_hour"], r_lo, r_hi)

    suff = [r for r in size if r["sufficient"] and _ok(r["mttf_hours"])]
    parts = []
    if len(suff) >= 2:
        a, b = suff[0], suff[-1]
        parts.append(f"Measured job MTTF falls from {_hours(a['mttf_hours'])} for {_bucket_text(a['gpus_bucket'])} "
                     f"jobs to {_hours(b['mttf_hours'])} (95 % CI {_ci(b['ci_low'], b['ci_high'])}) for "
                     f"{_bucket_text(b['gpus_bucket'])} jobs")
    elif suff:
        b = suff[0]
        parts.append(f"Only the {_bucket_text(b['gpus_bucket'])} bucket has enough failures for an MTTF: "
                     f"{_hours(b['mttf_hours'])} (95 % CI {_ci(b['ci_low'], b['ci_high'])})")
    else:
        parts.append("No size bucket has enough infrastructure failures for a measured MTTF")
    if p0 and projected:
        meta = dict(META_RSC1_MTTF)
        shown = [r for r in projected if r["n_gpus"] in meta and _ok(r["mttf_hours"])]
        if shown:
            ex = ""
            if _ok(p0["exponent"]) and _ok(p0["exponent_ci_low"]) and _ok(p0["exponent_ci_high"]):
                fits = p0["exponent_ci_low"] <= 1 <= p0["exponent_ci_high"]
                ex = (f" (free exponent {fmt_num(p0['exponent'], 2)}, 95 % CI {fmt_num(p0['exponent_ci_low'], 2)}–"
                      f"{fmt_num(p0['exponent_ci_high'], 2)}: {'consistent with' if fits else 'not consistent with'} "
                      "1/N)")
            parts.append(f"the 1/N fit{ex} projects " + ", ".join(
                f"{_hours(r['mttf_hours'])} at {fmt_int(r['n_gpus'])} GPUs" for r in shown)
                + " against Meta RSC-1's published " + ", ".join(f"{meta[r['n_gpus']]:g} h" for r in shown))
    take = "; ".join(parts) + "."
    sec.lead = take
    sec.items.append(ChartBlock(_svg(charts.mttf_projection_chart(
        measured, fit, [(float(r["n_gpus"]), r["mttf_hours"], r["ci_low"], r["ci_high"]) for r in projected],
        [(float(n), v) for n, v in META_RSC1_MTTF],
        "Job MTTF vs job size: measured, 1/N fit and projection (log-log)")), take))

    if _table_status(con, "marts.job_survival") is None:
        km = _rows(con, """SELECT gpus_bucket, time_h, survival, ci_low, ci_high, at_risk FROM marts.job_survival
                           ORDER BY gpus_bucket, time_h""")
        curves: dict[str, list[dict[str, Any]]] = {}
        for r in km:
            curves.setdefault(r["gpus_bucket"], []).append(r)
        order = sorted(curves, key=_bucket_key)
        series = [(b, [0.0] + [r["time_h"] for r in curves[b]], [1.0] + [r["survival"] for r in curves[b]],
                   [1.0] + [r["ci_low"] for r in curves[b]], [1.0] + [r["ci_high"] for r in curves[b]]) for b in order]
        at_h: list[tuple[str, dict[str, Any]]] = []
        for b in order:
            pts = curves[b]
            if pts and pts[-1]["time_h"] >= _KM_HORIZON_H:  # follow-up reaches the horizon
                before = [r for r in pts if r["time_h"] <= _KM_HORIZON_H]
                at_h.append((b, before[-1] if before else {"survival": 1.0, "ci_low": None, "ci_high": None}))
        if at_h:
            big, small = at_h[-1], at_h[0]
            km_take = (f"{fmt_pct(big[1]['survival'])} of {_bucket_text(big[0])} job instances ran "
                       f"{_KM_HORIZON_H:.0f} h without an infrastructure failure (95 % CI "
                       f"{_ci(big[1]['ci_low'], big[1]['ci_high'], '', lambda v: fmt_pct(v))})"
                       + (f", against {fmt_pct(small[1]['survival'])} of {_bucket_text(small[0])} instances."
                          if small[0] != big[0] else "."))
        else:
            km_take = (f"No size bucket has infrastructure failures observed beyond {_KM_HORIZON_H:.0f} h; the curves "
                       "show survival up to the last failure seen.")
        sec.items.append(ChartBlock(_svg(charts.survival_chart(
            series, "Kaplan–Meier: job instances still running without an infrastructure failure")), km_take))

    sec.items.append(Table(
        [Column("GPUs per job"), Column("Jobs", True), Column("Instances", True), Column("Infra failures", True),
         Column("Runtime (h)", True), Column("MTTF", True), Column("95 % CI", True), Column("Note")],
        [[_bucket_cell(r["gpus_bucket"]), Cell(fmt_int(r["jobs"])), Cell(fmt_int(r["instances"])),
          Cell(fmt_int(r["infra_failures"])), Cell(fmt_int(r["runtime_hours"])),
          Cell(_hours(r["mttf_hours"]) if r["sufficient"] and _ok(r["mttf_hours"]) else "insufficient data"),
          Cell(_ci(r["ci_low"], r["ci_high"])), Cell(truncate(r["note"], 60) if r["note"] else "",
                                                     title=r["note"] or None)] for r in size],
        caption="Job MTTF = runtime hours of the bucket's job instances / infrastructure failures (NODE_FAIL, "
                "BOOT_FAIL, or failures attributed to the infrastructure from node logs); a requeued job counts "
                "once per instance. 95 % CI: exact Poisson (Garwood). Below reliability.min_failures no point "
                "estimate is given.",
    ))
    if proj:
        meta = dict(META_RSC1_MTTF)
        sec.items.append(Table(
            [Column("GPUs", True), Column("Kind"), Column("MTTF (1/N fit)", True), Column("95 % CI", True),
             Column("Meta RSC-1 (published)", True)],
            [[Cell(fmt_int(r["n_gpus"])), Cell(r["kind"] + (f" ({r['gpus_bucket']})" if r["gpus_bucket"] else "")),
              Cell(_hours(r["mttf_hours"])), Cell(_ci(r["ci_low"], r["ci_high"])),
              Cell(f"{meta[r['n_gpus']]:g} h" if r["n_gpus"] in meta else MISSING)] for r in proj],
            caption="Projection under MTTF(N) = 1 / (N · r), r = infrastructure failures per GPU-hour of job runtime "
                    + (f"({p0['r_gpu_per_hour']:.3g}); " if p0 and _ok(p0["r_gpu_per_hour"]) else "; ")
                    + "interval from the Garwood interval of r. Meta RSC-1's published figures: Kokolis et al., "
                      "HPCA 2025.",
        ))
    return sec


# --------------------------------------------------------------------------------------------
# 4. ETTR by run size


def _ettr_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    sec = SloSection("ettr", "ETTR by run size: measured vs expected",
                     scope=f"Measured: training runs that ended in the window (marts.ettr_runs, last job end "
                           f"{w.text}, not ongoing). Expected ETTR and the checkpoint what-if: whole record "
                           "(marts.ettr_by_size, marts.checkpoint_what_if).")
    reason = _table_status(con, "marts.ettr_runs")
    if reason:
        sec.no_data = reason
        return sec
    runs = _rows(con, f"""SELECT run_id, "user", account, name, run_key_source, n_jobs, n_instances, n_gpus, n_nodes,
                                 interruptions, last_end_ts, wallclock_s, queue_s, run_s, restart_overhead_s,
                                 lost_work_s, productive_s, ettr, checkpoint_interval_s, restart_overhead_cfg_s,
                                 policy_source
                          FROM marts.ettr_runs
                          WHERE NOT coalesce(ongoing, false) AND ettr IS NOT NULL
                            AND {_utc_day('last_end_ts')} BETWEEN ? AND ?""", [w.start, w.end])
    if not runs:
        sec.no_data = f"{NO_DATA}: no training run in marts.ettr_runs ended in the window {w.text}."
        return sec
    expected: dict[str, dict[str, Any]] = {}
    if _table_status(con, "marts.ettr_by_size") is None:
        expected = {r["gpus_bucket"]: r for r in _rows(
            con, "SELECT gpus_bucket, expected_ettr, r_f_per_1000_node_days, n_nodes_median FROM marts.ettr_by_size")}
    by: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by.setdefault(_bucket_of(r["n_gpus"]), []).append(r)
    buckets = sorted(by, key=_bucket_key)

    def share(rs: list[dict[str, Any]], part: Callable[[dict[str, Any]], float]) -> float | None:
        vals = [part(r) / r["wallclock_s"] for r in rs if r["wallclock_s"]]
        return sum(vals) / len(vals) if vals else None

    def gap_s(r: dict[str, Any]) -> float:
        return max(float(r["wallclock_s"] or 0) - float(r["queue_s"] or 0) - float(r["run_s"] or 0), 0.0)

    big = buckets[-1]
    rs = by[big]
    p50 = _quantile([r["ettr"] for r in rs], 0.5)
    exp = expected.get(big, {}).get("expected_ettr")
    take = (f"Runs of {big} GPUs that ended in the window had a median ETTR of {fmt_num(p50, 2)} "
            f"({_plural(len(rs), 'run')})"
            + (f" against {fmt_num(exp, 2)} expected from failures alone" if _ok(exp) else "")
            + f"; on average queue wait took {fmt_pct(share(rs, lambda r: float(r['queue_s'] or 0)))} of their "
              f"wall-clock, gaps between jobs {fmt_pct(share(rs, gap_s))}, restarts "
              f"{fmt_pct(share(rs, lambda r: float(r['restart_overhead_s'] or 0)))} and re-done work "
              f"{fmt_pct(share(rs, lambda r: float(r['lost_work_s'] or 0)))}.")
    sec.lead = take
    sec.items.append(ChartBlock(_svg(charts.ettr_distribution_chart(
        [(b, [r["ettr"] for r in by[b]], expected.get(b, {}).get("expected_ettr")) for b in buckets],
        f"ETTR per run by run size, runs that ended {w.text}")), take))

    rf = next((e["r_f_per_1000_node_days"] for e in expected.values() if _ok(e.get("r_f_per_1000_node_days"))), None)
    sec.items.append(Table(
        [Column("GPUs per run"), Column("Runs", True), Column("Median nodes", True), Column("ETTR mean", True),
         Column("p10", True), Column("p50", True), Column("p90", True), Column("Interruptions / run", True),
         Column("Queue share", True), Column("Expected ETTR", True)],
        [[_bucket_cell(b), Cell(fmt_int(len(by[b]))),
          Cell(fmt_num(_quantile([float(r["n_nodes"] or 0) for r in by[b]], 0.5), 0)),
          Cell(fmt_num(sum(r["ettr"] for r in by[b]) / len(by[b]), 2)),
          Cell(fmt_num(_quantile([r["ettr"] for r in by[b]], 0.1), 2)),
          Cell(fmt_num(_quantile([r["ettr"] for r in by[b]], 0.5), 2)),
          Cell(fmt_num(_quantile([r["ettr"] for r in by[b]], 0.9), 2)),
          Cell(fmt_num(sum(float(r["interruptions"] or 0) for r in by[b]) / len(by[b]), 2)),
          Cell(fmt_pct(share(by[b], lambda r: float(r["queue_s"] or 0)))),
          Cell(fmt_num(expected.get(b, {}).get("expected_ettr"), 3))] for b in buckets],
        caption="ETTR (Kokolis et al., HPCA 2025) = productive time / wall-clock of a run; wall-clock = first submit "
                "to last end (queue waits and gaps between resubmissions count as unproductive); productive = run "
                "time − restart overhead u0 after each interruption − re-done work since the last checkpoint (on "
                "average half a checkpoint interval Δ). Queue share = mean of queue wait / wall-clock. Expected "
                "ETTR ≈ (1 − N · r_f · (u0 + Δ/2)) / (1 + w_cp/Δ) with the bucket's median nodes N, the measured "
                + (f"r_f = {_rate(rf)} per 1,000 node-days " if _ok(rf) else "r_f ")
                + "and the median Δ, u0 of its runs (whole record): it counts failures only, not queue wait, which "
                  "is why measured ETTR sits far below it when runs wait in the queue.",
    ))

    # The assumptions behind every ETTR number: which checkpoint policy the window's runs were given.
    policies: dict[tuple[Any, Any, Any], int] = {}
    for r in runs:
        key = (r["policy_source"], r["checkpoint_interval_s"], r["restart_overhead_cfg_s"])
        policies[key] = policies.get(key, 0) + 1
    sec.notes.append(
        "Assumptions, not measurements: the checkpoint interval Δ and restart overhead u0 come from cluster.yaml "
        "(reliability.checkpoint, per-account overrides) — "
        + "; ".join(f"{_plural(n, 'run')} with Δ = {_dur(k[1])} and u0 = {_dur(k[2])} "
                    f"({k[0] or 'unknown source'})" for k, n in sorted(policies.items(), key=lambda kv: -kv[1]))
        + ". Runs group jobs by explicit run key (job comment / name), requeues of one job id, or resubmission "
          "of the same user, account and job name.")

    if _table_status(con, "marts.checkpoint_what_if") is None:
        wi = _rows(con, """SELECT n_nodes, interval_s, expected_ettr, reaches_target, target, max_interval_for_target_s
                           FROM marts.checkpoint_what_if ORDER BY interval_s""")
        if wi:
            w0 = wi[0]
            best = w0["max_interval_for_target_s"]
            sec.notes.append(
                f"Checkpoint what-if (whole record): for a run on {fmt_int(w0['n_nodes'])} nodes (the largest run "
                + (f"size) at r_f = {_rate(rf)} per 1,000 node-days, " if _ok(rf) else "size), ")
                + (f"checkpointing at least every {_dur(best)} keeps the expected ETTR at or above "
                   f"{fmt_num(w0['target'], 2)}." if _ok(best) else
                   f"no checkpoint interval reaches the expected ETTR target {fmt_num(w0['target'], 2)}."))
            sec.items.append(Table(
                [Column("Checkpoint interval Δ")] + [Column(_dur(r["interval_s"]), True) for r in wi],
                [[Cell("Expected ETTR")] + [Cell(fmt_num(r["expected_ettr"], 3)) for r in wi],
                 [Cell(f"Reaches {fmt_num(w0['target'], 2)}")]
                 + [Cell("yes" if r["reaches_target"] else "no", swatch="#2e7d32" if r["reaches_target"] else "#c62828")
                    for r in wi]],
                caption=f"Expected ETTR of a {fmt_int(w0['n_nodes'])}-node run by checkpoint interval (Kokolis et al. "
                        f"closed form, site restart overhead and write time), target {fmt_num(w0['target'], 2)} "
                        "(the ETTR objective).",
            ))

    worst = sorted(runs, key=lambda r: (-(r["n_gpus"] or 0), r["ettr"], str(r["run_id"])))[:_TOP_N_RUNS]
    sec.items.append(Table(
        [Column("Run"), Column("User"), Column("Account"), Column("Name"), Column("GPUs", True), Column("Jobs", True),
         Column("Interrupted", True), Column("Wall-clock", True), Column("Queue", True), Column("ETTR", True),
         Column("Δ / u0", nowrap=True)],
        [[Cell(truncate(r["run_id"], 20), title=str(r["run_id"])), Cell(truncate(r["user"], 16), title=r["user"]),
          Cell(truncate(r["account"], 18), title=r["account"]), Cell(truncate(r["name"], 34), title=r["name"]),
          Cell(fmt_int(r["n_gpus"])), Cell(fmt_int(r["n_jobs"])), Cell(fmt_int(r["interruptions"])),
          Cell(_hours((r["wallclock_s"] or 0) / 3600)), Cell(_hours((r["queue_s"] or 0) / 3600)),
          Cell(fmt_num(r["ettr"], 2)),
          Cell(f"{_dur(r['checkpoint_interval_s'])} / {_dur(r['restart_overhead_cfg_s'])}",
               title=r["policy_source"])] for r in worst],
        caption=f"The largest runs that ended in the window, lowest ETTR first (top {len(worst)} of "
                f"{fmt_int(len(runs))}). Wall-clock: first submit to last end; queue: summed waits of its "
                "instances; Δ / u0: assumed checkpoint interval and restart overhead (hover for the source).",
    ))
    return sec


# --------------------------------------------------------------------------------------------
# 5. goodput


def _goodput_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    sec = SloSection("goodput", "Goodput", scope=f"Window {w.text}, from marts.goodput_daily.")
    reason = _table_status(con, "marts.goodput_daily")
    if reason:
        sec.no_data = reason
        return sec
    rows = _rows(con, """SELECT day, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc,
                                productive_gpu_hours AS prod, lost_failure_gpu_hours AS lf,
                                lost_restart_gpu_hours AS lr, idle_gpu_hours AS idle, goodput, infra_interruptions
                         FROM marts.goodput_daily WHERE day BETWEEN ? AND ? ORDER BY day""", [w.start, w.end])
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.goodput_daily has no days in the window {w.text}."
        return sec
    tot = {k: sum(float(r[k] or 0.0) for r in rows) for k in ("cap", "alloc", "prod", "lf", "lr", "idle")}
    interruptions = sum(int(r["infra_interruptions"] or 0) for r in rows)
    cap = tot["cap"]
    gp = tot["prod"] / cap if cap else None
    objective = None
    if _table_status(con, "marts.slo_daily") is None:
        objective = _scalar(con, "SELECT objective FROM marts.slo_daily WHERE sli = 'goodput' AND day <= ? "
                                 "ORDER BY day DESC LIMIT 1", [w.end])
    take = (f"Of {fmt_int(cap)} GPU-hours of capacity in the window, {fmt_pct(tot['idle'] / cap if cap else None)} "
            f"sat idle, {fmt_pct(tot['lf'] / cap if cap else None, 2)} were lost to failures and "
            f"{fmt_pct(tot['lr'] / cap if cap else None, 2)} to restarts ({_plural(interruptions, 'infrastructure interruption')}): "
            f"goodput was {fmt_pct(gp)}" + (f" against an objective of {_obj(objective)}." if _ok(objective) else "."))
    sec.lead = take
    sec.items.append(ChartBlock(_svg(charts.waterfall_chart(
        [("Capacity", cap, "total"), ("Idle", tot["idle"], "loss"), ("Allocated", tot["alloc"], "total"),
         ("Lost to failures", tot["lf"], "loss"), ("Lost to restarts", tot["lr"], "loss"),
         ("Productive", tot["prod"], "total")],
        f"Where the GPU-hours went, {w.text}")), take))
    with_gp = [r for r in rows if _ok(r["goodput"])]
    if with_gp:
        worst = min(with_gp, key=lambda r: r["goodput"])
        below = [r for r in with_gp if _ok(objective) and r["goodput"] < objective]
        daily_take = ((f"Goodput was below the {_obj(objective)} objective on {len(below)} of {len(with_gp)} days; "
                       if _ok(objective) else "")
                      + f"the worst day was {fmt_date(worst['day'])} at {fmt_pct(worst['goodput'])} "
                        f"({fmt_pct((worst['idle'] or 0) / worst['cap'] if worst['cap'] else None)} of capacity idle).")
        sec.items.append(ChartBlock(_svg(charts.goodput_daily_chart(
            [r["day"] for r in rows], [r["goodput"] for r in rows], objective if _ok(objective) else None,
            "Daily goodput", [r["alloc"] / r["cap"] if r["cap"] else None for r in rows])), _cap(daily_take)))
    resid = cap - tot["idle"] - tot["alloc"]
    resid2 = tot["alloc"] - tot["lf"] - tot["lr"] - tot["prod"]
    if cap and (abs(resid) > 0.005 * cap or abs(resid2) > 0.005 * cap):
        sec.notes.append(f"The waterfall does not close: capacity − idle − allocated = {fmt_num(resid)} GPU-hours, "
                         f"allocated − losses − productive = {fmt_num(resid2)} GPU-hours.")
    sec.items.append(Table(
        [Column("", nowrap=True), Column("GPU-hours", True), Column("Share of capacity", True)],
        [[Cell(k), Cell(fmt_num(v, 0)), Cell(fmt_pct(v / cap if cap else None, 2))] for k, v in (
            ("Capacity", cap), ("Idle", tot["idle"]), ("Allocated", tot["alloc"]), ("Lost to failures", tot["lf"]),
            ("Lost to restarts", tot["lr"]), ("Productive", tot["prod"]))],
        caption="Goodput = productive / capacity GPU-hours. Idle = not allocated (including nodes down or in "
                "maintenance). Lost to failures = GPUs × the expected work since the last checkpoint of instances "
                "the infrastructure interrupted (NODE_FAIL, BOOT_FAIL, PREEMPTED, or attributed to the "
                "infrastructure from node logs), on the day they ended; lost to restarts = GPUs × the restart "
                "overhead of the instance that follows, on the day it started. Checkpoint interval and restart "
                "overhead are the cluster.yaml assumptions of the ETTR section. User failures, cancellations and "
                "timeouts count as delivered.",
    ))
    return sec


# --------------------------------------------------------------------------------------------
# 6. incidents


def _incident_section(con: duckdb.DuckDBPyConnection, w: _Window) -> SloSection:
    sec = SloSection("incidents", "Top incidents by lost GPU-hours",
                     scope=f"Hardware incidents that started in the window (UTC days {w.text}), from marts.hw_incidents.")
    reason = _table_status(con, "marts.hw_incidents")
    if reason:
        sec.no_data = reason
        return sec
    where = f"{_utc_day('start_ts')} BETWEEN ? AND ?"
    agg = _rows(con, f"""SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost,
                                coalesce(sum(affected_jobs), 0) AS jobs
                         FROM marts.hw_incidents WHERE {where}""", [w.start, w.end])[0]
    if not agg["n"]:
        sec.lead = f"No hardware incident started in the window {w.text}."
        return sec
    cols = table_columns(con, "marts.hw_incidents")
    opt = {c: c if c in cols else f"NULL AS {c}" for c in ("root_cause", "label_source", "leaf_switch",
                                                            "hours_to_recovery", "severity", "affected_gpus")}
    rows = _rows(con, f"""SELECT incident_id, component, cause_class, {opt['severity']}, start_ts, nodes, scope,
                                 affected_jobs, {opt['affected_gpus']}, lost_gpu_hours, {opt['root_cause']},
                                 {opt['label_source']}, {opt['leaf_switch']}, {opt['hours_to_recovery']}
                          FROM marts.hw_incidents WHERE {where}
                          ORDER BY lost_gpu_hours DESC NULLS LAST, affected_jobs DESC NULLS LAST, start_ts, incident_id
                          LIMIT {_TOP_N_INCIDENTS}""", [w.start, w.end])
    comp = _rows(con, f"""SELECT component, count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost
                          FROM marts.hw_incidents WHERE {where} GROUP BY component
                          ORDER BY lost DESC, n DESC, component""", [w.start, w.end])
    groups: dict[str, list[float]] = {}
    for r in comp:
        g = groups.setdefault(component_label(r["component"]), [0.0, 0.0])
        g[0] += r["n"]
        g[1] += r["lost"]
    order = sorted(groups, key=lambda k: (-groups[k][1], -groups[k][0], k))
    top = rows[0]
    lost = float(agg["lost"])
    take = (f"{_plural(agg['n'], 'hardware incident')} started in the window, hit {_plural(agg['jobs'], 'job')} and "
            f"lost {fmt_num(lost, 1)} GPU-hours"
            + (f"; {order[0]} cost the most ({fmt_num(groups[order[0]][1], 1)} GPU-h, "
               f"{fmt_pct(groups[order[0]][1] / lost)}), and the costliest single incident, "
               f"{component_label(top['component'])} on {fmt_date(top['start_ts'])}, lost "
               f"{fmt_num(top['lost_gpu_hours'], 1)} GPU-hours." if lost > 0 else
               "; none of them cost GPU-hours of running jobs."))
    sec.lead = take
    with_loss = [k for k in order if groups[k][1] > 0]
    if with_loss:
        sec.items.append(ChartBlock(_svg(charts.lost_gpu_hours_chart(
            [(k, groups[k][1]) for k in with_loss], f"Lost GPU-hours by component, incidents started {w.text}",
            "Lost GPU-hours (work since the last checkpoint)")), take))

    def cause(r: dict[str, Any]) -> Cell:
        text = r["root_cause"] or _cause_label(r["cause_class"])
        if r["label_source"] == "operator":
            return Cell(truncate(f"{text} (operator)", 44), title=f"{text} (operator label)")
        return Cell(truncate(text, 44), title=text)

    sec.items.append(Table(
        [Column("Start", nowrap=True), Column("Incident", nowrap=True), Column("Component"), Column("Root cause"),
         Column("Nodes", nowrap=True), Column("Jobs hit", True), Column("Lost GPU-h", True), Column("Recovery", True)],
        [[Cell(fmt_date(r["start_ts"])), Cell(str(r["incident_id"]), mono=True, title=r["severity"] or None),
          Cell(component_label(r["component"])), cause(r),
          Cell(truncate(_nodes_text(r["nodes"]), 22), mono=True, title=_nodes_text(r["nodes"])),
          Cell(fmt_int(r["affected_jobs"])), Cell(fmt_num(r["lost_gpu_hours"])),
          Cell(_hours(r["hours_to_recovery"]) if _ok(r["hours_to_recovery"]) else "not yet")] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(agg['n'])} incidents that started in the window. Lost GPU-hours: GPUs × "
                "the work since the last checkpoint of the jobs the incident killed. Recovery: hours from the "
                "incident's end until each of its nodes ran a job to completion again.",
    ))
    return sec


# --------------------------------------------------------------------------------------------
# headline cards and definitions


def _cards(con: duckdb.DuckDBPyConnection, w: _Window) -> list[dict[str, str]]:
    cards: list[dict[str, str]] = []
    try:
        if _table_status(con, "marts.slo_daily") is None:
            for s in _sli_windows(con, w):
                cards.append({"label": _sli_label(s.sli), "value": _sli_pct(s.value),
                              "sub": (f"objective {_obj(s.objective)} · budget left {_budget(s.budget_left)}"
                                      if s.value is not None else f"objective {_obj(s.objective)} · no events"),
                              "tone": "" if s.met is None else ("good" if s.met else "bad")})
    except duckdb.Error as exc:
        log.warning("SLO report cards: %s", exc)
    try:
        if _table_status(con, "marts.mtbf") is None:
            c = _rows(con, """SELECT mtbf_hours, ci_low, ci_high, sufficient, failures FROM marts.mtbf
                              WHERE period_type = 'all' AND scope = 'cluster' LIMIT 1""")
            if c:
                c0 = c[0]
                cards.append({"label": "MTBF per node", "value": _hours(c0["mtbf_hours"]) if c0["sufficient"]
                              else "insufficient data",
                              "sub": f"95 % CI {_ci(c0['ci_low'], c0['ci_high'])} · whole record", "tone": ""})
        if _table_status(con, "marts.node_failure_rate") is None:
            r = _rows(con, """SELECT rate_per_1000_node_days AS r, ci_low, ci_high, sufficient FROM marts.node_failure_rate
                              WHERE period_type = 'all' AND variant = 'hw_incidents' LIMIT 1""")
            if r:
                r0 = r[0]
                cards.append({"label": "Failures / 1,000 node-days",
                              "value": _rate(r0["r"]) if r0["sufficient"] else "insufficient data",
                              "sub": f"95 % CI {_ci(r0['ci_low'], r0['ci_high'], '', _rate)} · RSC-1 6.50",
                              "tone": ""})
        if _table_status(con, "marts.hw_incidents") is None:
            i = _rows(con, f"""SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost FROM marts.hw_incidents
                               WHERE {_utc_day('start_ts')} BETWEEN ? AND ?""", [w.start, w.end])[0]
            cards.append({"label": "Hardware incidents", "value": fmt_int(i["n"]),
                          "sub": f"{fmt_num(i['lost'], 0)} GPU-h lost · window", "tone": ""})
    except duckdb.Error as exc:
        log.warning("SLO report cards: %s", exc)
    return cards


#: (term, definition) shown at the end of the report.
DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("SLI, SLO", "An SLI is good events / total events per UTC day (marts.slo_daily); the SLO holds when the SLI over "
                 "a window is at least the objective. Node availability: " + _SLI_DEFS["node_availability"]
     + ". Jobs not killed by the infrastructure: " + _SLI_DEFS["job_infra_success"] + ". ETTR of large runs: "
     + _SLI_DEFS["ettr_large_runs"] + ". Goodput: " + _SLI_DEFS["goodput"] + "."),
    ("Error budget", "Allowed bad events = (1 − objective) × total events; budget left = 1 − bad / allowed "
                     "(negative = overspent). The burn-down chart uses the report window's own budget; the mart's "
                     "rolling budget (dashed) covers the configured rolling window (slo.window_days)."),
    ("Burn rate", "(bad / total) / (1 − objective) over a trailing window: 1 spends the budget exactly over the SLO "
                  "period, 6 spends a 30-day budget in 5 days. Multiwindow alerting per the Google SRE Workbook, "
                  "ch. 5 \u201cAlerting on SLOs\u201d; with daily SLIs the windows are 1 day and 3 days (page: both > 6, "
                  "ticket: both > 1)."),
    ("MTBF", "Mean time between failures per node = node-hours in service (cluster.yaml nodes minus planned "
             "maintenance) / hardware incidents started in the period. MTBF per GPU = GPU-hours / failures, GPU "
             "components only. The whole cluster sees a failure every MTBF / N nodes hours."),
    ("Garwood CI", "Exact Poisson 95 % interval of a rate from k events in exposure T: [χ²(0.025; 2k) / 2T, "
                   "χ²(0.975; 2k + 2) / 2T]; MTBF and MTTF intervals are its inverse. Below reliability.min_failures "
                   "(default 3) failures no point estimate is reported (\u201cinsufficient data\u201d)."),
    ("r_f", "Failures per 1,000 node-days (Kokolis et al., \u201cRevisiting Reliability in Large-Scale Machine "
            "Learning Research Clusters\u201d, HPCA 2025: RSC-1 6.50, RSC-2 2.34; Llama 3 ≈ 3.8 from Llama 3 Herd "
            "of Models §3.3.4)."),
    ("Job MTTF", "Runtime hours of job instances in a size bucket / infrastructure failures. Under the 1/N law a job "
                 "on N GPUs has MTTF(N) = 1 / (N · r), r = failures per GPU-hour; the free exponent of a Poisson GLM "
                 "tests the law (1 = holds)."),
    ("Kaplan–Meier", "Share of job instances still running without an infrastructure failure after t hours; "
                     "instances that ended for any other reason are censored. Pointwise 95 % log-log intervals."),
    ("ETTR", "Effective Training Time Ratio (Kokolis et al., HPCA 2025) = productive time / wall-clock time of a "
             "training run. Expected E[ETTR] ≈ (1 − N · r_f · (u0 + Δ/2)) / (1 + w_cp / Δ) for N nodes, "
             "checkpoint interval Δ, restart overhead u0 and blocking checkpoint write w_cp (all cluster.yaml "
             "assumptions)."),
    ("Goodput", "Productive GPU-hours / capacity GPU-hours: capacity − idle = allocated; allocated − lost to failures "
                "− lost to restarts = productive. Only infrastructure interruptions are charged as losses."),
    ("Weibull shape", "k of a Weibull fit to the time between failures of the same node (censored): k < 1 failures "
                      "cluster on a few nodes (lemons), k ≈ 1 constant rate, k > 1 wear-out."),
    ("Incident", "Hardware / system failure events merged per node and component (fabric- and storage-wide "
                 "incidents once), marts.hw_incidents; lost GPU-hours = GPUs × work since the last checkpoint of "
                 "the jobs it killed."),
)


# --------------------------------------------------------------------------------------------
# assembly


def _guard(title: str, key: str, build: Callable[[], SloSection]) -> SloSection:
    """Run one section builder; a query error (or an unexpected mart shape) degrades to a note in that section."""
    try:
        return build()
    except (duckdb.Error, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        log.warning("SLO report section %s failed: %s", key, exc, exc_info=True)
        return SloSection(key, title, no_data=f"Could not be computed: {type(exc).__name__}: {truncate(exc, 300)}")


def default_window(con: duckdb.DuckDBPyConnection, days: int = DEFAULT_WINDOW_DAYS) -> tuple[date, date]:
    """The last ``days`` days ending on the latest day with data in ``marts.slo_daily``, but never after the
    last UTC day the job dumps cover completely (the dumps' final day is a sliver: its capacity is whole but
    its jobs are not, which would show as a goodput collapse). Today (UTC) when there is no data."""
    end: date | None = None
    try:
        if _table_status(con, "marts.slo_daily") is None:
            end = _scalar(con, "SELECT max(day) FROM marts.slo_daily")
        if _table_status(con, "core.jobs") is None:
            complete = _latest_complete_day(con)
            if complete is not None and (end is None or complete < end):
                end = complete
    except duckdb.Error as exc:
        log.warning("SLO report default window: %s", exc)
    if isinstance(end, datetime):
        end = end.date()
    end = end or datetime.now(timezone.utc).date()
    return end - timedelta(days=days - 1), end


def build_slo_context(con: duckdb.DuckDBPyConnection, date_from: date, date_to: date, *, warehouse_label: str = "",
                      generated_at: datetime | None = None) -> dict[str, Any]:
    """Query the warehouse and build everything the SLO templates need: ``meta``, ``cards``, ``sections``
    (list of :class:`SloSection`), ``by_key`` and ``definitions``."""
    if date_from > date_to:
        raise ValueError(f"the window starts after it ends: {date_from} > {date_to}")
    w = _Window(date_from, date_to, generated_at or datetime.now(timezone.utc), warehouse_label)
    sections = [
        _guard("SLO status and error budgets", "slo", lambda: _slo_section(con, w)),
        _guard("MTBF by component class", "mtbf", lambda: _mtbf_section(con, w)),
        _guard("Node failure rate vs published figures", "failure-rate", lambda: _rate_section(con, w)),
        _guard("Job MTTF by size and projection", "mttf", lambda: _mttf_section(con, w)),
        _guard("ETTR by run size: measured vs expected", "ettr", lambda: _ettr_section(con, w)),
        _guard("Goodput", "goodput", lambda: _goodput_section(con, w)),
        _guard("Top incidents by lost GPU-hours", "incidents", lambda: _incident_section(con, w)),
    ]
    try:
        cards = _cards(con, w)
    except (duckdb.Error, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        log.warning("SLO report cards failed: %s", exc)
        cards = []
    try:
        warnings = coverage_warnings(con, w.start, w.end)
    except duckdb.Error as exc:
        log.warning("SLO report coverage warnings failed: %s", exc)
        warnings = [f"Input coverage could not be checked: {truncate(exc, 200)}"]
    return {
        "meta": {
            "date_from": fmt_date(w.start),
            "date_to": fmt_date(w.end),
            "window": w.text,
            "days": w.days,
            "months": ", ".join(w.months),
            "generated_at": w.generated_at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
        },
        "cards": cards,
        "warnings": warnings,
        "sections": sections,
        "by_key": {s.key: s for s in sections},
        "definitions": DEFINITIONS,
    }


def render_slo_report(con: duckdb.DuckDBPyConnection, out_dir: Path, date_from: date | None = None,
                      date_to: date | None = None, warehouse_label: str = "") -> ReportPaths:
    """Render the SLO review report for the UTC days ``[date_from, date_to]`` to
    ``out_dir/slo-<from>_<to>.html`` and ``.md``.

    Missing dates default to :func:`default_window` (30 days ending on the latest complete day with SLO
    data); only ``date_to`` given: the 30 days ending on it; only ``date_from``: from it to that latest day. Raises ``ValueError`` when ``date_from`` is
    after ``date_to``. Missing or empty marts yield "No data yet" in their section.
    """
    if date_from is None or date_to is None:
        d_from, d_to = default_window(con)
        if date_from is None and date_to is None:
            date_from, date_to = d_from, d_to
        elif date_from is None:
            date_from = date_to - timedelta(days=DEFAULT_WINDOW_DAYS - 1)  # type: ignore[operator]
        else:  # from a given day up to the latest data (a month on when the data ends before it)
            date_to = d_to if d_to >= date_from else date_from + timedelta(days=DEFAULT_WINDOW_DAYS - 1)
    ctx = build_slo_context(con, date_from, date_to, warehouse_label=warehouse_label)  # type: ignore[arg-type]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"slo-{ctx['meta']['date_from']}_{ctx['meta']['date_to']}"
    html_path = out_dir / f"{stem}.html"
    md_path = out_dir / f"{stem}.md"
    html = _environment(markdown=False).get_template("slo.html.j2").render(**ctx)
    md = _environment(markdown=True).get_template("slo.md.j2").render(**ctx, html_name=html_path.name)
    for path, text in ((html_path, html), (md_path, md)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return ReportPaths(html=html_path, markdown=md_path)
