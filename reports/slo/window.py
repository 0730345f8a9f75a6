"""The SLO review's window of UTC days (default: 30 days ending on the latest complete day with SLO data)
and each SLI's good / total events over it, read from marts.slo_daily."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

import duckdb

from gpusre.reports.coverage import loaded_sources
from gpusre.reports.kit.formatting import fmt_date, period_text
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import latest_record_day, nightly_report_day
from gpusre.reports.slo.terms import SLI_ORDER

log = logging.getLogger(__name__)


#: Length of the default window (days), ending on the latest complete day with SLO data.
DEFAULT_WINDOW_DAYS = 30


@dataclass(frozen=True)
class SloWindow:
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


@dataclass
class SliWindow:
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
    #: partial days (marts.day_coverage) with events: their events count in the sums, not as days
    days_partial: int = 0
    #: node availability only: 'node_states' / 'incidents' (estimated) — the sources of the window's days
    sources: tuple[str, ...] = ()
    #: what the SLI divides by (marts.slo_daily.definition of its last day in the window)
    definition: str | None = None
    #: the rolling budget's period in days (marts.slo_daily.window_days; None in a warehouse before the column)
    window_days: int | None = None
    #: the complete day in the window with the lowest rolling budget whose trailing period held
    #: ``window_days`` days of data (its marts.slo_daily row, with ``data_days``), None without one
    worst_rolling: dict[str, Any] | None = None
    #: the same among the window's complete days whose trailing period held fewer days of data (the record's
    #: first ``window_days - 1`` days: a budget over 5 days of data, not 30), None without one
    worst_rolling_short: dict[str, Any] | None = None
    #: marts.slo_exhausted_spans rows meeting the window: when the rolling budget was exhausted
    exhausted_spans: list[dict[str, Any]] = field(default_factory=list)
    #: job_infra_success only: failed runs of unknown cause in the window (marts.slo_daily.unknown_failures),
    #: counted good — the value is then an upper bound
    unknown_failures: int = 0

    @property
    def value_if_unknown_bad(self) -> float | None:
        """The value were every failure of unknown cause the infrastructure's: the lower end of what the
        SLI can be (None without such failures)."""
        if not self.unknown_failures or self.total <= 0:
            return None
        return max(0.0, self.good - self.unknown_failures) / self.total

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

    @property
    def longer_than_budget(self) -> bool:
        """The window spans more days than the rolling budget: pooling its days can hide a breach."""
        return self.window_days is not None and len(self.days) > self.window_days

    @property
    def lowest_rolling(self) -> dict[str, Any] | None:
        """The lowest rolling budget a review quotes for the window: over a full period of data when the
        window has such a day, else the short-period one (which the text labels "over the first N days of
        data")."""
        return self.worst_rolling or self.worst_rolling_short

    @property
    def days_exhausted(self) -> int:
        """Days of the window on which the rolling budget was exhausted (spans clipped to the window)."""
        return sum(int(s["days_in_window"]) for s in self.exhausted_spans)


def sli_windows(con: duckdb.DuckDBPyConnection, w: SloWindow) -> list[SliWindow]:
    cols = {r["column_name"] for r in query_rows(
        con, "SELECT column_name FROM information_schema.columns WHERE table_schema = 'marts' AND table_name = 'slo_daily'")}
    partial = "COALESCE(partial, FALSE)" if "partial" in cols else "FALSE"
    source = "source" if "source" in cols else "NULL"
    definition = "definition" if "definition" in cols else "NULL"
    window_days = "window_days" if "window_days" in cols else "NULL"
    # days of data the rolling budget spans (error_budget.rolling_burn_rates computes it; the mart may carry it)
    data_days = "window_days_covered" if "window_days_covered" in cols else "NULL"
    unknown = "unknown_failures" if "unknown_failures" in cols else "NULL"
    rows = query_rows(con, f"""SELECT day, sli, value, objective, good, total, budget_remaining, burn_rate_short,
                                burn_rate_long, status, {partial} AS partial, {source} AS source,
                                {definition} AS definition, {window_days} AS window_days, {data_days} AS data_days,
                                {unknown} AS unknown_failures
                         FROM marts.slo_daily WHERE day BETWEEN ? AND ? ORDER BY sli, day""", [w.start, w.end])
    spans: dict[str, list[dict[str, Any]]] = {}
    if table_status(con, "marts.slo_exhausted_spans") is None:
        # spans meeting the window, clipped to it (a span may begin before the window or end after it)
        for r in query_rows(con, """SELECT sli, start_day, end_day, days, worst_budget_remaining, worst_day,
                                           greatest(start_day, ?::DATE) AS from_day, least(end_day, ?::DATE) AS to_day,
                                           date_diff('day', greatest(start_day, ?::DATE), least(end_day, ?::DATE)) + 1
                                               AS days_in_window
                                    FROM marts.slo_exhausted_spans WHERE end_day >= ? AND start_day <= ?
                                    ORDER BY sli, start_day""", [w.start, w.end, w.start, w.end, w.start, w.end]):
            spans.setdefault(r["sli"], []).append(r)
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["sli"], []).append(r)
    out = []
    for sli in sorted(by, key=lambda s: (SLI_ORDER.index(s) if s in SLI_ORDER else 99, s)):
        rs = by[sli]
        period = next((int(r["window_days"]) for r in reversed(rs) if r["window_days"] is not None), None)
        _data_days(con, sli, rs, period)
        complete = [r for r in rs if r["budget_remaining"] is not None and not r["partial"]]
        full = [r for r in complete if period is None or r["data_days"] is None or r["data_days"] >= period]
        short = [r for r in complete if r not in full]
        objective = next((r["objective"] for r in reversed(rs) if r["objective"] is not None), None)
        good = sum(float(r["good"] or 0.0) for r in rs)
        total = sum(float(r["total"] or 0.0) for r in rs)
        # Status, rolling budget and burn rates are quoted from the last complete day (README: a partial
        # day's 15 minutes are no day's status); without one, the last day, which the caption says is partial.
        last = next((r for r in reversed(rs) if not r["partial"]), rs[-1])
        sw = SliWindow(sli, objective, [r["day"] for r in rs], good, total, [], [r["budget_remaining"] for r in rs],
                        None, last, sum(1 for r in rs if (r["total"] or 0) > 0 and not r["partial"]),
                        sum(1 for r in rs if (r["total"] or 0) > 0 and r["partial"]),
                        # a 'node_states+incidents' day (the node-state history ends inside it) is of both
                        tuple(sorted({part for r in rs if r["source"] and (r["total"] or 0) > 0
                                      for part in r["source"].split("+")})),
                        next((r["definition"] for r in reversed(rs) if r["definition"]), None),
                        period,
                        # rows of the mart, chosen, not computed: the lowest rolling budget of a complete day,
                        # over a full period of data and over the record's first, shorter ones
                        min(full, key=lambda r: (r["budget_remaining"], r["day"]), default=None),
                        min(short, key=lambda r: (r["budget_remaining"], r["day"]), default=None),
                        spans.get(sli, []),
                        # the window's days' counts, as good and total are (Σ of the mart's daily rows)
                        sum(int(r["unknown_failures"] or 0) for r in rs))
        allowed = sw.allowed
        bad = 0.0
        for r in rs:
            bad += float(r["total"] or 0.0) - float(r["good"] or 0.0)
            sw.burndown.append(1.0 - bad / allowed if allowed else None)
            if allowed and sw.exhausted_on is None and bad > allowed:
                sw.exhausted_on = r["day"]
        out.append(sw)
    return out


def _data_days(con: duckdb.DuckDBPyConnection, sli: str, rs: list[dict[str, Any]], period: int | None) -> None:
    """Set each row's ``data_days``: the days of data its rolling budget spans — ``period``
    (slo.window_days) once the record is that long, fewer on its first days (a budget on 2026-09-05 over a
    record starting 2026-09-01 counts 5 days). marts.slo_daily's own ``window_days_covered`` when it carries
    it; else the days from the SLI's first day in marts.slo_daily, capped at ``period``."""
    if period is None or all(r["data_days"] is not None for r in rs):
        return
    first = scalar(con, "SELECT min(day) FROM marts.slo_daily WHERE sli = ?", [sli])
    if isinstance(first, datetime):
        first = first.date()
    for r in rs:
        if r["data_days"] is None and first is not None:
            day = r["day"].date() if isinstance(r["day"], datetime) else r["day"]
            r["data_days"] = min(period, (day - first).days + 1)


def default_window(con: duckdb.DuckDBPyConnection, days: int = DEFAULT_WINDOW_DAYS) -> tuple[date, date]:
    """The last ``days`` days ending on the latest day with data in ``marts.slo_daily``, but never after the
    last UTC day the job dumps cover completely (the dumps' final day is a sliver: its capacity is whole but
    its jobs are not, which would show as a goodput collapse); without SLO days, the last day any source
    has a record on. Today (UTC) when there is no data."""
    end: date | None = None
    try:
        if table_status(con, "marts.slo_daily") is None:
            end = scalar(con, "SELECT max(day) FROM marts.slo_daily")
        if table_status(con, "core.jobs") is None:
            # The nightly's default day: the last the job dumps cover completely (one rule for both reports).
            complete = nightly_report_day(con)
            if complete is not None and (end is None or complete < end):
                end = complete
        else:  # no accounting: node states run to their dump's cut, hours past the last record
            last = latest_record_day(con)
            if last is not None and (end is None or last < end):
                end = last
        if end is None:  # no SLO day: the data's last day, not today
            end = latest_record_day(con)
    except duckdb.Error as exc:
        log.warning("SLO report default window: %s", exc)
    if isinstance(end, datetime):
        end = end.date()
    end = end or datetime.now(timezone.utc).date()
    return end - timedelta(days=days - 1), end



@dataclass(frozen=True)
class MartPeriod:
    """The row of a per-period reliability mart (``period_type``/``period``: ``month`` rows and ``all``) that a
    review quotes for its window, and how to name it."""

    period_type: str
    period: str
    #: '2026-09', '2026-09 … 2026-10 (the whole record)', '2026-11-18 … 2026-11-24 (the whole record)' (the
    #: days of a record shorter than its months), 'whole record (2026-09 … 2026-10)' or 'whole record
    #: (2026-11-28 … 2026-11-29)' (not the window's: the record holds days outside it)
    label: str
    #: True when the row covers exactly the window's months, or the window covers the whole data span: the
    #: window's own figure
    is_window: bool


def _month_bounds(month: str) -> tuple[date, date]:
    y, m = (int(x) for x in month.split("-"))
    nxt = date(y + (m == 12), m % 12 + 1, 1)
    return date(y, m, 1), nxt - timedelta(days=1)


def _data_span(con: duckdb.DuckDBPyConnection) -> tuple[date, date] | None:
    """The days a whole-record row covers (marts.day_coverage): the data's first day to its last complete
    day — and on to its partial last day when a hardware incident (marts.hw_incidents) started on it: the
    whole-record row counts that failure, so a window that stops before the day does not hold the whole
    record, and its label must reach that day. A sliver without failures (a dump cut at 00:15) does not
    count. None before that mart exists."""
    try:
        if table_status(con, "marts.day_coverage") is not None:
            return None
        got = query_rows(con, "SELECT min(day) AS a, COALESCE(max(day) FILTER (WHERE NOT partial), max(day)) AS b, "
                              "max(day) AS c FROM marts.day_coverage")
        if not got or got[0]["a"] is None or got[0]["b"] is None:
            return None
        a, b, c = ((x.date() if isinstance(x, datetime) else x) for x in (got[0]["a"], got[0]["b"], got[0]["c"]))
        if c > b and table_status(con, "marts.hw_incidents") is None:
            late = scalar(con, f"SELECT max({utc_day_sql('start_ts')}) FROM marts.hw_incidents "
                               f"WHERE {utc_day_sql('start_ts')} > ?", [b])
            if late is not None:
                b = max(b, late.date() if isinstance(late, datetime) else late)
    except duckdb.Error as exc:
        log.warning("SLO report data span: %s", exc)
        return None
    return a, b


def mart_period(con: duckdb.DuckDBPyConnection, w: SloWindow, table: str, where: str = "TRUE") -> MartPeriod:
    """Which row of ``marts.<table>`` (``marts.mtbf``, ``marts.node_failure_rate``) holds the window's figure.

    A review of a window headlines that window, never a whole-record figure that reads as one. The marts
    hold calendar months (UTC) and the whole record, so: a window that covers exactly one month the mart
    holds, and no part of another, quotes that month's row (when that month is the whole record, the
    section finds the same figures in the ``all`` row); one that covers every month the mart holds quotes
    ``all`` (the whole record *is* the window then). Anything else (30 rolling days, a run of months short
    of the record) has no row of its own: the ``all`` row, labelled as the whole record with its span so
    nobody reads it as the window's — by its days when the data does not fill its months. Month rows are
    clipped to the data span, so a month the data starts in part-way still matches. A window that covers
    the whole data span (marts.day_coverage: its first day to its last complete one, or to a partial last
    day a hardware incident started on, since the ``all`` row counts that failure) quotes ``all`` as the
    window's own figure
    too — 30 days over a warehouse of 7 are those 7 — named by the days the data covers when they are not
    whole months. A single month is named once ('2026-11', not '2026-11 … 2026-11'). ``where`` narrows the
    rows (``variant = 'hw_incidents'``)."""
    months = sorted(r["period"] for r in query_rows(
        con, f"SELECT DISTINCT period FROM marts.{table} WHERE period_type = 'month' AND {where}"))
    span_months = period_text(months[0], months[-1]) if months else None
    touched = [m for m in months if _month_bounds(m)[0] <= w.end and _month_bounds(m)[1] >= w.start]
    inside = [m for m in touched if w.start <= _month_bounds(m)[0] and _month_bounds(m)[1] <= w.end]
    if touched and touched == inside:
        if len(inside) == 1:
            return MartPeriod("month", inside[0], inside[0], True)
        if inside == months:
            return MartPeriod("all", "all", f"{span_months} (the whole record)", True)
    span = _data_span(con) if months else None
    # The whole record's days: its months when the data fills them, else the days themselves (a week of
    # November is not "2026-11"; a record that runs into a partial 11-29 is not "2026-11-28").
    days = span_months
    if span is not None and not (_month_bounds(months[0])[0] >= span[0] and _month_bounds(months[-1])[1] <= span[1]):
        days = period_text(fmt_date(span[0]), fmt_date(span[1]))
    if span is not None and touched == months and w.start <= span[0] and span[1] <= w.end:
        # The window holds every day of data (a partial last day included): the whole record is the
        # window's figure.
        return MartPeriod("all", "all", f"{days} (the whole record)", True)
    return MartPeriod("all", "all", f"whole record ({days})" if months else "whole record", False)


def record_text(con: duckdb.DuckDBPyConnection, source: str = "sacct") -> str:
    """'whole record 2026-09-01 … 2026-10-31': the span of a source (marts.data_freshness), for figures the
    marts hold only over the whole record (job MTTF, expected ETTR), so none reads as the window's."""
    try:
        if table_status(con, "marts.data_freshness") is None:
            got = query_rows(con, "SELECT first_record_ts AS a, last_record_ts AS b FROM marts.data_freshness "
                                  "WHERE source_kind = ?", [source])
            if got and got[0]["a"] is not None and got[0]["b"] is not None:
                a, b = ((x.astimezone(timezone.utc) if x.tzinfo else x).date() if isinstance(x, datetime) else x
                        for x in (got[0]["a"], got[0]["b"]))
                return f"whole record {fmt_date(a)} … {fmt_date(b)}"
    except duckdb.Error as exc:
        log.warning("SLO report record span: %s", exc)
    return "whole record"


#: The sources each reliability mart needs (any one of them): when none was ingested, the mart is absent or
#: empty because of that, and the report says which source is missing instead of "not built".
_MART_SOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    **{m: (("syslog", "incidents"), "no node logs (and no incidents.csv): without failure evidence MTBF and the "
           "failure rate are unknown — zero failures seen is no lower bound when nothing was watched")
       for m in ("mtbf", "mtbf_trend", "tbf_weibull", "node_failure_rate", "hw_incidents")},
    **{m: (("sacct",), "no Slurm accounting (sacct dumps): the job SLIs (goodput, ETTR, jobs not killed by the "
           "infrastructure) and job MTTF need jobs")
       for m in ("goodput_daily", "ettr_runs", "ettr_by_size", "checkpoint_what_if", "job_mttf_by_size",
                 "job_mttf_projection", "job_survival")},
    "slo_daily": (("sacct", "syslog", "slurm_events"), "no Slurm accounting, node logs or node states"),
}


def source_status(con: duckdb.DuckDBPyConnection, mart: str) -> str | None:
    """Like ``table_status(con, 'marts.<mart>')``, but when the mart is absent or empty because the source it
    needs was never ingested, says which source is missing ("Unknown: no node logs ...")."""
    reason = table_status(con, f"marts.{mart}")
    need = _MART_SOURCES.get(mart)
    loaded = loaded_sources(con)
    if not loaded and reason is not None:  # files were ingested, but none loaded a record
        return f"No data yet: nothing has been loaded ({need[1] if need else 'no input'})."
    if need is not None and not (loaded & set(need[0])):
        if reason is not None or mart in ("mtbf", "node_failure_rate", "tbf_weibull", "mtbf_trend"):
            return f"Unknown: {need[1]}."
    return reason


def failure_evidence(con: duckdb.DuckDBPyConnection) -> bool:
    """Node logs or the operator's incident log were ingested: MTBF and r_f have something to count."""
    return bool(loaded_sources(con) & {"syslog", "incidents"})
