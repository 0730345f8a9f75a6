"""SLO review section "SLO status and error budgets" (``#slo``).

Reads marts.slo_daily, marts.slo_exhausted_spans, marts.ettr_runs; formats, computes nothing.

A window longer than the rolling budget (a quarter against slo.window_days = 30) pools its days: an SLO
met over the quarter can have exhausted its 30-day budget in one month of it. Then every verdict is
qualified ("met over the window as a whole") and the section names the exhausted periods and the lowest
rolling budget per SLI (marts.slo_exhausted_spans, marts.slo_daily) — the lowest of the window's days, one value
in the sentence and the table, over a full slo.window_days of data (a budget over the record's first few days
is labelled "over the first N days of data" and quoted only when the window has no full-period day)."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import MISSING, fmt_date, fmt_int, fmt_num, lower_first, sentence_case
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import scalar, table_status
from gpusre.reports.coverage import loaded_sources
from gpusre.reports.slo.terms import fmt_budget, fmt_objective, fmt_sli, sli_label, unknown_bound_text
from gpusre.reports.slo.window import SliWindow, SloWindow, sli_windows, source_status


def _period(s: SliWindow) -> str:
    """'30-day' — the rolling budget's period, as the sentences name it."""
    return f"{s.window_days}-day" if s.window_days else "rolling"


def _spans_text(s: SliWindow, counts: bool = True) -> str:
    """'2026-08-07 … 2026-09-05 (30 days)' for each exhausted period, clipped to the window (said so)."""
    out = []
    for r in s.exhausted_spans:
        a, b = r["from_day"], r["to_day"]
        n = r["days_in_window"]
        text = f"{fmt_date(a)} … {fmt_date(b)}" + (f" ({fmt_int(n)} day{'s' if n != 1 else ''})" if counts else "")
        if r["start_day"] < a or r["end_day"] > b:
            text += (" — " + " and ".join(x for x in (
                f"since {fmt_date(r['start_day'])}" if r["start_day"] < a else "",
                f"until {fmt_date(r['end_day'])}" if r["end_day"] > b else "") if x))
        out.append(text)
    return ", ".join(out)


def _short_text(r: dict) -> str:
    """' over the first 5 days of data' for a rolling budget whose trailing period held fewer days of data
    than slo.window_days (the record's first days); '' for a full period."""
    n = r.get("data_days")
    w = r.get("window_days")
    if n is None or w is None or n >= w:
        return ""
    return f" over the first {fmt_int(n)} day{'s' if n != 1 else ''} of data"


def _lowest_text(s: SliWindow) -> str:
    """'−186 % on 2026-10-03': the window's lowest rolling budget (its complete days, over a full period of
    data when it has one; else labelled '… over the first 5 days of data')."""
    r = s.lowest_rolling
    return "" if r is None else (f"{fmt_budget(r['budget_remaining'])} on {fmt_date(r['day'])}{_short_text(r)}")


def _exhausted_clause(s: SliWindow) -> str:
    """'its 30-day budget was exhausted 2026-08-07 … 2026-09-05 (30 days), lowest −124 % on 2026-08-25': the
    lowest of the window's days, the value the rolling-budget table shows (not the whole span's, which may
    lie before the window)."""
    low = _lowest_text(s)
    return f"its {_period(s)} budget was exhausted {_spans_text(s)}" + (f", lowest {low}" if low else "")


def _rolling_gone(s: SliWindow) -> str | None:
    """'2026-11-24' — the first window day marts.slo_exhausted_spans has the rolling budget exhausted on (the
    mart's answer, not recomputed), '2026-11-01 (since 2026-10-20)' when that span began before the window;
    None when it never was in the window."""
    if not s.exhausted_spans:
        return None
    r = min(s.exhausted_spans, key=lambda r: r["from_day"])
    return fmt_date(r["from_day"]) + (f" (since {fmt_date(r['start_day'])})" if r["start_day"] < r["from_day"] else "")


def _value_text(s: SliWindow) -> str:
    """'92.31 %', or '92.31 % at most (4 failed jobs of unknown cause)' when failures nobody could attribute
    count as good (marts.slo_daily.unknown_failures)."""
    if not s.unknown_failures or s.value is None:
        return fmt_sli(s.value)
    n = s.unknown_failures
    return f"{fmt_sli(s.value)} at most ({fmt_int(n)} failed job{'s' if n != 1 else ''} of unknown cause)"


def _gone_text(s: SliWindow, rolling: bool = True) -> str:
    """', its 30-day rolling budget exhausted from 2026-11-24; the window's budget overspent from 2026-11-25':
    the mart's rolling budget first, then the window's own (sized on the window's events, counted from its
    first day) — two budgets, each named, so neither date reads as the other's."""
    parts = []
    if _rolling_gone(s):
        parts.append(f"its {_period(s)} rolling budget exhausted from {_rolling_gone(s)}")
    if s.exhausted_on:
        parts.append(f"the window's budget overspent from {fmt_date(s.exhausted_on)}")
    return (", " + "; ".join(parts)) if parts else ""


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("slo", "SLO status and error budgets",
                     scope=f"Window {w.text} ({w.days} days), from marts.slo_daily.")
    reason = source_status(con, "slo_daily")
    if reason:
        sec.no_data = reason
        return sec
    slis = sli_windows(con, w)
    if not slis:
        sec.no_data = f"{NO_DATA}: marts.slo_daily has no rows between {fmt_date(w.start)} and {fmt_date(w.end)}."
        return sec
    measured = [s for s in slis if s.met is not None]
    met = [s for s in measured if s.met]
    missed = [s for s in measured if not s.met]
    # a window longer than the rolling budget: "met" is the pooled verdict, and says so
    pooled = any(s.longer_than_budget for s in slis)
    broke = [s for s in slis if s.longer_than_budget and s.exhausted_spans]
    parts = [f"{len(met)} of {len(measured)} SLOs met their objective over {w.text}"
             + (" as a whole" if pooled else "")]
    if met:
        parts.append(("met over the window as a whole: " if pooled else "met: ") + ", ".join(
            f"{lower_first(sli_label(s.sli))} {_value_text(s)} (objective {fmt_objective(s.objective)}"
            + (f"; but {_exhausted_clause(s)})" if s in broke else ")") for s in met))
    if missed:
        parts.append("missed: " + ", ".join(
            f"{lower_first(sli_label(s.sli))} {_value_text(s)} (objective {fmt_objective(s.objective)}"
            + _gone_text(s, rolling=s not in broke)
            + (f"; {_exhausted_clause(s)})" if s in broke else ")") for s in missed))
    unmeasured = [s for s in slis if s.met is None]
    if unmeasured:
        parts.append("no events for " + ", ".join(lower_first(sli_label(s.sli)) for s in unmeasured)
                     + _ettr_size_hint(con, w, unmeasured))
    if pooled:
        parts.append(f"{len(broke)} of {len(slis)} SLOs exhausted their rolling error budget on some day of the "
                     "window" if broke else
                     "no SLO exhausted its rolling error budget on any day of the window")
    sec.lead = sentence_case("; ".join(parts) + ".")

    with_budget = [s for s in slis if s.budget_left is not None]
    if with_budget:
        ends = ", ".join(f"{lower_first(sli_label(s.sli))} {fmt_budget(s.budget_left)}" for s in with_budget)
        # Two budgets, each named: marts.slo_exhausted_spans' rolling budget (the mart's answer), and the
        # window's own budget (sized on the window's events, counted from its first day: the burn-down's line).
        rolled = min((s for s in with_budget if s.exhausted_spans), default=None,
                     key=lambda s: min(r["from_day"] for r in s.exhausted_spans))
        first = min((s for s in with_budget if s.exhausted_on), key=lambda s: s.exhausted_on, default=None)  # type: ignore[arg-type,return-value]
        if first and first.exhausted_on:
            verdict = (f"; {lower_first(sli_label(first.sli))} overspent the window's budget first, on "
                       f"{fmt_date(first.exhausted_on)} (day {(first.exhausted_on - w.start).days + 1} of "
                       f"{w.days}, counted from the window's first day)")
        elif pooled:
            verdict = "; no SLO overspent the budget of the window as a whole"
        else:
            verdict = "; no SLO overspent its budget"
        if broke:  # the pooled budget must not read as "never breached"
            verdict += (", but the rolling budget was exhausted inside the window: " + "; ".join(
                f"{lower_first(sli_label(s.sli))}'s {_period(s)} budget on {fmt_int(s.days_exhausted)} "
                f"day{'s' if s.days_exhausted != 1 else ''}: {_spans_text(s, counts=False)}" for s in broke))
        elif rolled:
            verdict += (f"; {lower_first(sli_label(rolled.sli))}'s {_period(rolled)} rolling budget "
                        f"(marts.slo_exhausted_spans) was exhausted first, from {_rolling_gone(rolled)}")
        elif pooled:
            verdict += ", nor its rolling budget on any day of it"
        take = f"Error budget left at the end of the window: {ends}{verdict}."
        panels = [(f"{sli_label(s.sli)} (objective {fmt_objective(s.objective)})", s.days, s.burndown, s.rolling,
                   "#2e7d32" if (s.budget_left or 0) > 0 else "#c62828") for s in with_budget]
        take += (" Solid line: budget left in the report window, counted from its first day (the window's Budget "
                 "left); dashed: marts.slo_daily's rolling budget over the trailing slo.window_days days ending on "
                 "each day (the Rolling budget column) — it counts days before the window and forgets older ones, so "
                 "the two differ.")
        sec.items.append(Chart(svg(charts.burndown_chart(
            panels, f"Error-budget burn-down, {w.text}",
            rolling_label="rolling budget, trailing slo.window_days (marts.slo_daily)")), take))
    quoted = sorted({s.last["day"] for s in slis})
    to = " / ".join(fmt_date(d) for d in quoted)
    last_partial = any(s.last.get("partial") for s in slis)
    estimated = [s for s in slis if s.sli == "node_availability" and "incidents" in s.sources]
    node_logs = "syslog" in loaded_sources(con)
    sec.items.append(Table(
        [Column("SLI"), Column("Objective", True), Column("Over window", True), Column("Met", nowrap=True),
         Column("Budget left", True), Column("Window budget gone", nowrap=True),
         Column("Rolling budget exhausted", nowrap=True), Column("Rolling budget", True),
         Column("Burn 1 d / 3 d", True), Column("Status", nowrap=True), Column("Days", True)],
        [[Cell(sli_label(s.sli), title=s.definition or s.sli), Cell(fmt_objective(s.objective)),
          Cell(fmt_sli(s.value),
               sub=unknown_bound_text(s.unknown_failures, s.value_if_unknown_bad, node_logs)
               if s.unknown_failures and s.value is not None else None),
          Cell(MISSING if s.met is None else ("yes" if s.met else "no")
               + (f" as a whole; {_period(s)} budget exhausted" if s in broke else ""),
               swatch=None if s.met is None else ("#2e7d32" if s.met and s not in broke else "#c62828")),
          Cell(fmt_budget(s.budget_left)), Cell(fmt_date(s.exhausted_on) if s.exhausted_on else MISSING),
          Cell(_rolling_gone(s) or MISSING),
          Cell(fmt_budget(s.last["budget_remaining"]), sub=(_short_text(s.last).strip() or None)
               if s.last["budget_remaining"] is not None else None),
          Cell(f"{fmt_num(s.last['burn_rate_short'], 2)} / {fmt_num(s.last['burn_rate_long'], 2)}"),
          Cell(str(s.last["status"] or MISSING).replace("_", " "), swatch=charts.slo_status_colour(s.last["status"])),
          Cell(f"{fmt_int(s.days_measured)} / {fmt_int(w.days)}"
               + (f" + {fmt_int(s.days_partial)} partial" if s.days_partial else ""))] for s in slis],
        caption="Over window = Σ good / Σ total of the window's days. Budget left = 1 − bad / ((1 − objective) × "
                "total) over the window (negative = overspent); window budget gone = the first day the window's cumulative "
                "bad events exceeded that budget (sized on the whole window's events); rolling budget exhausted = the "
                "first day of the window marts.slo_exhausted_spans has the rolling budget exhausted on. Rolling budget, burn rates and status are marts.slo_daily's values on "
                + (f"{to}, the last day (no complete day: the data covers it only in part): " if last_partial else
                   f"{to}, the last complete day (marts.day_coverage) — not a partial last day: ")
                + 
                "budget over the configured rolling window (slo.window_days, default 30); burn rate = (bad / total) "
                "/ (1 − objective) over the last 1 and 3 days; status page = both burn rates > 6, ticket = both > 1 "
                "(Google SRE Workbook), warning = 1-day burn > 1 or < 25 % budget left. Days = complete days with events / "
                "days in the window (days before or after the data have none); + N partial = days the data covers "
                "only in part (their events count in the sums, not as days). Hover an SLI for its good / total definition."
                + (" Node availability is estimated from hardware incidents (no node-state history)"
                   + (" on some days" if "node_states" in estimated[0].sources else "") + "." if estimated else ""),
    ))
    long = [s for s in slis if s.longer_than_budget and s.lowest_rolling is not None]
    if long:
        sec.items.append(Table(
            [Column("SLI"), Column("Budget period", True), Column("Lowest rolling budget", True),
             Column("On", nowrap=True), Column("Days exhausted", True), Column("Exhausted")],
            [[Cell(sli_label(s.sli)), Cell(f"{fmt_int(s.window_days)} days"),
              Cell(fmt_budget(s.lowest_rolling["budget_remaining"])),  # type: ignore[index]
              Cell(fmt_date(s.lowest_rolling["day"]), sub=_short_text(s.lowest_rolling).strip() or None),  # type: ignore[index,arg-type]
              Cell(f"{fmt_int(s.days_exhausted)} / {fmt_int(w.days)}",
                   swatch="#c62828" if s.exhausted_spans else "#2e7d32"),
              Cell(_spans_text(s) or "never")] for s in long],
            caption=f"The window ({w.days} days) is longer than the SLO period: its Over window, Met and Budget left "
                    "pool every day, so a month that overspent can hide in it. Here, per SLI, marts.slo_daily's "
                    "rolling budget (over the trailing slo.window_days days ending on each day) on the window's "
                    "complete days: the lowest, and the periods it was exhausted (≤ 0, status exhausted; "
                    "marts.slo_exhausted_spans, clipped to the window). The lowest is taken over days whose "
                    "trailing period holds slo.window_days days of data; only a window without such a day "
                    "quotes a budget over the record's first, fewer days, and says so (\"over the first 5 days "
                    "of data\").",
        ))
    # The record's first days: a rolling budget over a few days of data swings on one event (one kill in 35
    # runs over 5 days is −471 %). Never headlined next to a full-period figure; said, labelled, in a note.
    early = [s for s in slis if s.worst_rolling is not None and s.worst_rolling_short is not None
             and s.worst_rolling_short["budget_remaining"] < s.worst_rolling["budget_remaining"]]
    if early:
        sec.notes.append("Before the record holds slo.window_days days, the rolling budget counts fewer days and "
                         "swings on single events; not quoted as the lowest above: " + ", ".join(
                             f"{lower_first(sli_label(s.sli))} {fmt_budget(s.worst_rolling_short['budget_remaining'])} "  # type: ignore[index]
                             f"on {fmt_date(s.worst_rolling_short['day'])}{_short_text(s.worst_rolling_short)}"  # type: ignore[index,arg-type]
                             for s in early) + ".")
    partial = [s for s in slis if s.days and s.days[-1] < w.end]
    if partial:
        sec.notes.append("marts.slo_daily ends before the window does for " + ", ".join(
            f"{lower_first(sli_label(s.sli))} (last day {fmt_date(s.days[-1])})" for s in partial) + ".")
    return sec


SECTION = SectionSpec("slo", "SLO status and error budgets", build)


def _ettr_size_hint(con: duckdb.DuckDBPyConnection, w: SloWindow, unmeasured: list[SliWindow]) -> str:
    """Why the ETTR SLO has no events when smaller training runs did finish: at a site whose largest job
    is one NVLink domain (72 GPUs on a GB200 NVL72) the default size (256 GPUs) judges nothing."""
    if not any(s.sli == "ettr_large_runs" for s in unmeasured) or table_status(con, "marts.ettr_runs") is not None:
        return ""
    largest = scalar(con, "SELECT max(n_gpus) FROM marts.ettr_runs WHERE NOT ongoing "
                          "AND CAST(last_end_ts AT TIME ZONE 'UTC' AS DATE) BETWEEN ? AND ?", [w.start, w.end])
    if not largest:
        return ""
    return (f" (no training run as large as the ETTR SLO judges finished in the window; the largest that did had "
            f"{fmt_int(largest)} GPUs: cluster.yaml `reliability.ettr_min_run_gpus` sets that size)")
