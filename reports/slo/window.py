"""The SLO review's window of UTC days (default: 30 days ending on the latest complete day with SLO data)
and each SLI's good / total events over it, read from marts.slo_daily."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import Any

import duckdb

from gpusre.reports.kit.formatting import fmt_date
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import latest_complete_day, latest_record_day
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


def sli_windows(con: duckdb.DuckDBPyConnection, w: SloWindow) -> list[SliWindow]:
    rows = query_rows(con, """SELECT day, sli, value, objective, good, total, budget_remaining, burn_rate_short,
                                burn_rate_long, status
                         FROM marts.slo_daily WHERE day BETWEEN ? AND ? ORDER BY sli, day""", [w.start, w.end])
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["sli"], []).append(r)
    out = []
    for sli in sorted(by, key=lambda s: (SLI_ORDER.index(s) if s in SLI_ORDER else 99, s)):
        rs = by[sli]
        objective = next((r["objective"] for r in reversed(rs) if r["objective"] is not None), None)
        good = sum(float(r["good"] or 0.0) for r in rs)
        total = sum(float(r["total"] or 0.0) for r in rs)
        sw = SliWindow(sli, objective, [r["day"] for r in rs], good, total, [], [r["budget_remaining"] for r in rs],
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
            complete = latest_complete_day(con)
            if complete is not None and (end is None or complete < end):
                end = complete
        if end is None:  # no SLO day (no accounting): the data's last day, not today
            end = latest_record_day(con)
    except duckdb.Error as exc:
        log.warning("SLO report default window: %s", exc)
    if isinstance(end, datetime):
        end = end.date()
    end = end or datetime.now(timezone.utc).date()
    return end - timedelta(days=days - 1), end
