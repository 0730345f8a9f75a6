"""SLO error budgets and burn rates (Google SRE Workbook, ch. 5 "Alerting on SLOs").

Definitions (reliability-facts §7):

* SLI = good / total events over a window; SLO objective e.g. 0.99.
* Allowed bad events = (1 − objective) · total; budget consumed = bad / allowed;
  remaining = 1 − consumed (negative once the SLO is violated, so overspend stays visible).
* Burn rate = (bad / total) / (1 − objective): 1 spends the budget exactly over the SLO period;
  at burn rate b a 30-day budget lasts 30/b days.

Multiwindow, multi-burn-rate alerting: alert when the burn rate exceeds a threshold over both a
long window (significance) and a short window (still happening, so the alert resets quickly).
The Workbook's rows for a 30-day SLO are kept as data in :data:`WORKBOOK_WINDOWS`.

Our SLIs (job success for infrastructure causes, ETTR, goodput) are computed nightly, so the
minute/hour windows of the Workbook cannot be observed. :func:`rolling_burn_rates` works in
calendar days (default short 1 d, long 3 d, budget window 30 d) and :func:`slo_status` maps the
result to a status with thresholds that default to the Workbook's 6× and 1× rows.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, Literal

import polars as pl

__all__ = [
    "PAGE_FAST",
    "PAGE_SLOW",
    "TICKET",
    "WORKBOOK_WINDOWS",
    "BudgetState",
    "BurnAlertWindow",
    "SloStatus",
    "EXHAUSTED_SPANS_SCHEMA",
    "burn_rate",
    "error_budget",
    "exhausted_spans",
    "multiwindow_status",
    "rolling_burn_rates",
    "slo_status",
]

SloStatus = Literal["ok", "warning", "ticket", "page", "exhausted", "no_data"]


@dataclass(frozen=True, slots=True)
class BurnAlertWindow:
    """One row of the Workbook's multiwindow table (for a 30-day SLO period).

    ``threshold = budget_fraction * period / long_window``, e.g. 0.02 * 720 h / 1 h = 14.4.
    """

    name: str
    severity: Literal["page", "ticket"]
    long_window: timedelta
    short_window: timedelta
    threshold: float
    budget_fraction: float


PAGE_FAST: Final = BurnAlertWindow("page_fast", "page", timedelta(hours=1), timedelta(minutes=5), 14.4, 0.02)
PAGE_SLOW: Final = BurnAlertWindow("page_slow", "page", timedelta(hours=6), timedelta(minutes=30), 6.0, 0.05)
TICKET: Final = BurnAlertWindow("ticket", "ticket", timedelta(days=3), timedelta(hours=6), 1.0, 0.10)
WORKBOOK_WINDOWS: Final = (PAGE_FAST, PAGE_SLOW, TICKET)


@dataclass(frozen=True, slots=True)
class BudgetState:
    """Error-budget accounting for one window. Ratios are None when there were no events."""

    good: float
    total: float
    bad: float
    objective: float
    sli: float | None
    allowed_bad: float
    consumed: float | None
    remaining: float | None


def _budget_fraction(objective: float) -> float:
    """1 − objective, rounded to 15 decimals.

    Why: 1 − 0.99 is 0.010000000000000009 in binary floating point, which turns "exactly on
    budget" into a remaining budget of 9e-16 instead of 0 and flips exhausted/ok decisions.
    Objectives are written as short decimals, so rounding loses nothing real.
    """
    return round(1.0 - objective, 15)


def _check(good: float, total: float, objective: float) -> None:
    # objective = 1 leaves no budget (every ratio divides by 0): not a usable SLO.
    if not 0.0 < objective < 1.0:
        raise ValueError(f"objective must be in (0, 1), got {objective}")
    if good < 0 or total < 0 or good > total or math.isnan(good) or math.isnan(total):
        raise ValueError(f"need 0 <= good <= total, got good={good}, total={total}")


def error_budget(good: float, total: float, objective: float) -> BudgetState:
    """Budget state of one window: ``allowed_bad = (1 − objective)·total``,
    ``consumed = bad/allowed_bad``, ``remaining = 1 − consumed`` (may be negative), ``sli = good/total``.

    With ``total == 0`` nothing is measurable: sli, consumed and remaining are None.
    Example: objective 0.99, 1000 events, 5 bad -> allowed 10, consumed 0.5, remaining 0.5.
    """
    _check(good, total, objective)
    bad = total - good
    allowed = _budget_fraction(objective) * total
    if total == 0:
        return BudgetState(good, total, bad, objective, None, allowed, None, None)
    consumed = bad / allowed
    return BudgetState(good, total, bad, objective, good / total, allowed, consumed, 1.0 - consumed)


def burn_rate(good: float, total: float, objective: float) -> float | None:
    """Burn rate ``(bad/total) / (1 − objective)``; None when ``total == 0``.

    Example: objective 0.99, 5 bad of 1000 -> 0.005 / 0.01 = 0.5.
    """
    _check(good, total, objective)
    if total == 0:
        return None
    return ((total - good) / total) / _budget_fraction(objective)


def multiwindow_status(burn_long: float | None, burn_short: float | None, threshold: float) -> bool:
    """True when the burn rate exceeds ``threshold`` over both windows (Workbook rule).

    Strictly greater, as in the Workbook's ``burn > T``; a missing window (None) never fires,
    because "no events" is not evidence of burning.
    """
    if burn_long is None or burn_short is None:
        return False
    return burn_long > threshold and burn_short > threshold


def slo_status(budget_remaining: float | None, burn_rate_short: float | None,
               burn_rate_long: float | None, page_threshold: float = PAGE_SLOW.threshold,
               ticket_threshold: float = TICKET.threshold, warn_remaining: float = 0.25) -> SloStatus:
    """Status of an SLO from its remaining budget and short/long burn rates. First match wins:

    1. ``no_data``: ``budget_remaining`` is None (no events in the budget window).
    2. ``exhausted``: ``budget_remaining <= 0`` (the SLO is already missed this window).
    3. ``page``: burn above ``page_threshold`` over both windows (default 6×, the Workbook's
       6 h/30 min row; at 6× a 30-day budget is gone in 5 days).
    4. ``ticket``: burn above ``ticket_threshold`` over both windows (default 1×, the Workbook's
       3 d/6 h row: on track to miss the SLO by the end of the period).
    5. ``warning``: the short window alone burns above ``ticket_threshold`` (a fresh spike the
       long window does not confirm yet), or less than ``warn_remaining`` of the budget is left.
    6. ``ok``.

    The defaults suit daily SLIs with :func:`rolling_burn_rates` (short 1 d, long 3 d); pass
    :data:`PAGE_FAST`.threshold etc. when the inputs come from the Workbook's own windows.
    """
    if budget_remaining is None:
        return "no_data"
    if budget_remaining <= 0:
        return "exhausted"
    if multiwindow_status(burn_rate_long, burn_rate_short, page_threshold):
        return "page"
    if multiwindow_status(burn_rate_long, burn_rate_short, ticket_threshold):
        return "ticket"
    if (burn_rate_short is not None and burn_rate_short > ticket_threshold) or budget_remaining < warn_remaining:
        return "warning"
    return "ok"


def rolling_burn_rates(df: pl.DataFrame, day_col: str, good_col: str, total_col: str, objective: float,
                       short_days: int = 1, long_days: int = 3, window_days: int = 30,
                       by: str | Sequence[str] | None = None) -> pl.DataFrame:
    """Daily rolling error budget and burn rates for a daily SLI.

    Input: one or more rows per day (and per ``by`` group) with good and total event counts
    (e.g. jobs not failed by infrastructure / all jobs, or productive / scheduled GPU-hours).
    Rows of the same day are summed. Missing calendar days between a group's first and last day
    are inserted with good = total = 0, so every window spans calendar days, not rows (a gap
    must not stretch "the last 3 days" into last week).

    Output: one row per group and calendar day (sorted), with ``day_col``, ``by`` columns,
    ``good_col``, ``total_col`` and

    * ``budget_remaining``: ``1 − bad/allowed_bad`` over the trailing ``window_days`` days,
    * ``burn_rate_short`` / ``burn_rate_long``: burn rate over the trailing ``short_days`` /
      ``long_days`` days,
    * ``window_days_covered``: how many days of the budget window lie inside the data (less than
      ``window_days`` at the start of the series, where the budget is computed from fewer events).

    A window with no events gives null. Trailing windows include the current day: the 1-day
    window of day D is D itself, the 3-day window is D-2..D.
    """
    if not 0.0 < objective < 1.0:
        raise ValueError(f"objective must be in (0, 1), got {objective}")
    if min(short_days, long_days, window_days) < 1:
        raise ValueError("window lengths must be >= 1 day")
    keys = [by] if isinstance(by, str) else list(by or [])
    day_dtype = df.schema[day_col]
    day = pl.col(day_col)
    day_as_date = day.dt.date() if isinstance(day_dtype, pl.Datetime) else day.cast(pl.Date)

    daily = (
        df.with_columns(day_as_date.alias(day_col))
        .group_by([*keys, day_col])
        .agg(pl.col(good_col).cast(pl.Float64).sum(), pl.col(total_col).cast(pl.Float64).sum())
    )
    if daily.height == 0:
        return daily.with_columns(
            *(pl.lit(None, dtype=pl.Float64).alias(c)
              for c in ("budget_remaining", "burn_rate_short", "burn_rate_long")),
            pl.lit(None, dtype=pl.Int32).alias("window_days_covered"),
        )
    if ((daily[good_col] < 0) | (daily[good_col] > daily[total_col])).any():
        raise ValueError(f"need 0 <= {good_col} <= {total_col} on every day")

    # Full calendar per group: date_range from the group's first to last day, then left-join.
    if keys:
        spans = daily.group_by(keys).agg(pl.date_range(day.min(), day.max(), "1d").alias(day_col))
    else:
        spans = daily.select(pl.date_range(day.min(), day.max(), "1d").implode().alias(day_col))
    calendar = spans.explode(day_col)
    filled = (
        calendar.join(daily, on=[*keys, day_col], how="left", nulls_equal=True)
        .with_columns(pl.col(good_col, total_col).fill_null(0.0))
        .sort([*keys, day_col])
    )

    budget = _budget_fraction(objective)

    def window_sum(col: str, days: int) -> pl.Expr:
        # rolling_sum_by over the date itself: correct by construction even if a row were missing.
        expr = pl.col(col).rolling_sum_by(day_col, window_size=f"{days}d", closed="right")
        return expr.over(keys) if keys else expr

    def burn(days: int) -> pl.Expr:
        good = window_sum(good_col, days)
        total = window_sum(total_col, days)
        return pl.when(total > 0).then((total - good) / total / budget)

    first_day = pl.col(day_col).min().over(keys) if keys else pl.col(day_col).min()
    good_w = window_sum(good_col, window_days)
    total_w = window_sum(total_col, window_days)
    return filled.with_columns(
        pl.when(total_w > 0).then(1.0 - (total_w - good_w) / (budget * total_w)).alias("budget_remaining"),
        burn(short_days).alias("burn_rate_short"),
        burn(long_days).alias("burn_rate_long"),
        pl.min_horizontal(
            (pl.col(day_col) - first_day).dt.total_days() + 1, pl.lit(window_days)
        ).cast(pl.Int32).alias("window_days_covered"),
    )


EXHAUSTED_SPANS_SCHEMA: dict[str, pl.DataType] = {
    "sli": pl.String(), "objective": pl.Float64(), "window_days": pl.Int32(), "start_day": pl.Date(),
    "end_day": pl.Date(), "days": pl.Int32(), "worst_budget_remaining": pl.Float64(), "worst_day": pl.Date(),
}


def exhausted_spans(daily: pl.DataFrame) -> pl.DataFrame:
    """Periods in which an SLI's rolling error budget was exhausted: :data:`EXHAUSTED_SPANS_SCHEMA` rows.

    Input: ``marts.slo_daily`` rows (``sli``, ``day``, ``objective``, ``budget_remaining`` and, when
    present, ``window_days``), one per SLI and calendar day. A span is a run of consecutive days with
    ``budget_remaining <= 0`` (status ``exhausted``); ``worst_budget_remaining`` / ``worst_day`` are its
    lowest rolling budget and the first day it was reached. Why: a review of a window longer than the
    budget window (a quarter against a 30-day budget) pools the days, so a month that overspent its
    budget can hide inside a quarter that met its objective; these rows keep the breach visible.

    >>> from datetime import date
    >>> d = pl.DataFrame({"sli": ["a"] * 4, "day": [date(2026, 8, i) for i in (1, 2, 3, 4)],
    ...                   "objective": [0.9] * 4, "budget_remaining": [0.5, -0.2, -0.4, 0.1]})
    >>> exhausted_spans(d).select("start_day", "end_day", "days", "worst_budget_remaining").rows()
    [(datetime.date(2026, 8, 2), datetime.date(2026, 8, 3), 2, -0.4)]
    """
    cols = set(daily.columns)
    if not daily.height or not {"sli", "day", "budget_remaining"} <= cols:
        return pl.DataFrame(schema=EXHAUSTED_SPANS_SCHEMA)
    gone = (daily.filter(pl.col("budget_remaining") <= 0)
            .with_columns(pl.col("day").cast(pl.Date))
            .sort("sli", "day")
            # a new span wherever the previous exhausted day of the SLI is not the day before
            .with_columns((pl.col("day").diff().over("sli") != pl.duration(days=1)).fill_null(True)
                          .cast(pl.Int32).cum_sum().over("sli").alias("_span")))
    return (gone.group_by("sli", "_span", maintain_order=True)
            .agg((pl.col("objective").last() if "objective" in cols else pl.lit(None)).alias("objective"),
                 (pl.col("window_days").last() if "window_days" in cols else pl.lit(None)).alias("window_days"),
                 pl.col("day").min().alias("start_day"), pl.col("day").max().alias("end_day"),
                 pl.len().alias("days"),
                 pl.col("budget_remaining").min().alias("worst_budget_remaining"),
                 pl.col("day").sort_by("budget_remaining", "day").first().alias("worst_day"))
            .select([pl.col(c).cast(t) for c, t in EXHAUSTED_SPANS_SCHEMA.items()])
            .sort("sli", "start_day"))
