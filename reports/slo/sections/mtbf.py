"""SLO review section "MTBF by component class" (``#mtbf``).

Reads marts.hw_incidents, marts.mtbf, marts.mtbf_trend; formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.vocabulary import class_label
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_ci,
    fmt_hours,
    fmt_int,
    is_number,
    lower_first,
    p_phrase,
    plural,
    sentence_case,
    truncate,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.slo.terms import change_phrase, fmt_rate
from gpusre.reports.slo.window import SloWindow, mart_period, source_status


def only_month(con: duckdb.DuckDBPyConnection, table: str, where: str = "TRUE") -> str | None:
    """The one calendar month ``marts.<table>`` holds, when it holds exactly one: its month rows then
    repeat the whole record's, and a table shows the whole-record row alone."""
    months = [r["period"] for r in query_rows(
        con, f"SELECT DISTINCT period FROM marts.{table} WHERE period_type = 'month' AND {where}")]
    return months[0] if len(months) == 1 else None


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    months = w.months
    sec = Section("mtbf", "MTBF by component class",
                     scope=f"Calendar months overlapping the window ({', '.join(months)}) and the whole record, "
                           "from marts.mtbf; month-over-month trend from marts.mtbf_trend.")
    reason = source_status(con, "mtbf")
    if reason:
        sec.no_data = reason
        return sec
    ph = ",".join("?" * len(months))
    rows = query_rows(con, f"""SELECT period_type, period, scope, component, failures, exposure_hours, exposure_gpu_hours,
                                 mtbf_hours, ci_low, ci_high, mtbf_gpu_hours, rate_per_1000_node_days, sufficient,
                                 note, exposure_source
                          FROM marts.mtbf
                          WHERE scope IN ('cluster', 'component_class')
                            AND (period_type = 'all' OR (period_type = 'month' AND period IN ({ph})))""", months)
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.mtbf has no cluster or component-class rows."
        return sec
    fetched = rows  # every row read: the window's own row is looked up here, whichever the table shows
    only = only_month(con, "mtbf")
    one_month = only is not None and any(r["period_type"] == "all" for r in rows)
    if one_month:
        # One month of data: "2026-11" and "whole record" are the same rows; show them once.
        rows = [r for r in rows if r["period_type"] == "all"]

    def period_cell(r: dict[str, Any]) -> str:
        if r["period_type"] != "all":
            return r["period"]
        return f"whole record ({only})" if one_month else "whole record"

    def cat(r: dict[str, Any]) -> str:
        return "all" if r["scope"] == "cluster" else (r["component"] or "other")

    all_rows = {cat(r): r for r in rows if r["period_type"] == "all"}
    cats = sorted({cat(r) for r in rows}, key=lambda c: (c != "all", -(all_rows.get(c, {}).get("failures") or 0), c))
    periods = ["all"] + [m for m in months if any(r["period"] == m for r in rows)]
    ordered = sorted(rows, key=lambda r: (cats.index(cat(r)), periods.index(r["period"]) if r["period"] in periods
                                          else 99))
    chart_rows = [(class_label(cat(r)), period_cell(r),
                   r["mtbf_hours"] if r["sufficient"] else None, r["ci_low"], r["ci_high"], bool(r["sufficient"]))
                  for r in ordered]

    # Takeaway: the trend of the cluster and of the GPU class when mtbf_trend covers a window month.
    trend: list[dict[str, Any]] = []
    if table_status(con, "marts.mtbf_trend") is None:
        trend = query_rows(con, """SELECT comparison, scope, component, period, previous_period, failures,
                                     previous_failures, mtbf_hours, previous_mtbf_hours, rate_ratio, p_value,
                                     direction
                              FROM marts.mtbf_trend
                              ORDER BY comparison <> 'month over month', comparison, scope <> 'cluster',
                                       component""")
    month_rows = {(cat(r), r["period"]): r for r in fetched if r["period_type"] == "month"}

    def trend_clause(t: dict[str, Any]) -> str:
        label = "cluster" if t["scope"] == "cluster" else class_label(t["component"])
        label = f"{label} MTBF per node"
        now = month_rows.get(("all" if t["scope"] == "cluster" else t["component"], t["period"]))
        if not now or not now["sufficient"] or not is_number(t["mtbf_hours"]):
            return (f"{label} in {t['period']}: insufficient data "
                    f"({plural(t['failures'], 'failure')}; {fmt_int(t['previous_failures'])} in "
                    f"{t['previous_period']})")
        text = (f"{label} was {fmt_hours(now['mtbf_hours'])} in {t['period']} "
                f"(95 % CI {fmt_ci(now['ci_low'], now['ci_high'])})")
        if is_number(t["previous_mtbf_hours"]) and is_number(t["rate_ratio"]) and t["rate_ratio"]:
            text += (f", {change_phrase(1.0 / t['rate_ratio'])} than in {t['previous_period']} "
                     f"({p_phrase(t['p_value'])}, {t['direction']})")
        else:
            text += f"; {t['previous_period']} had insufficient data to compare"
        return text

    # Headline the window's own row (a calendar month, or the whole record when the window covers it); a
    # whole-record figure is named as such, so nobody reads it as the window's. The row whose period is the
    # window's, from every row read: with one month of data the table shows only the whole-record rows (the
    # same figures), and the month's lead must not read "too few failures" for want of the row it hid.
    mp = mart_period(con, w, "mtbf")
    head = {cat(r): r for r in fetched if (r["period_type"], r["period"]) == (mp.period_type, mp.period)}
    c = head.get("all")
    if mp.is_window:
        lead = (f"In {mp.label} the cluster's MTBF per node was {fmt_hours(c['mtbf_hours'])} (95 % CI "
                f"{fmt_ci(c['ci_low'], c['ci_high'])}, {plural(c['failures'], 'failure')})" if c and c["sufficient"]
                else f"Too few failures for a cluster MTBF in {mp.label} ({plural(c['failures'], 'failure')})" if c
                else f"marts.mtbf has no cluster row for {mp.label}")
    else:
        lead = (f"Over the {mp.label} the cluster's MTBF per node is {fmt_hours(c['mtbf_hours'])} (95 % CI "
                f"{fmt_ci(c['ci_low'], c['ci_high'])}, {plural(c['failures'], 'failure')})" if c and c["sufficient"]
                else f"Too few failures for a cluster MTBF over the {mp.label}")
        lead += (f", not the window {w.text} alone (marts.mtbf holds calendar months and the whole record"
                 + ("; the months are in the table)" if not one_month else ")"))
    classes = [r for k, r in head.items() if k != "all" and r["sufficient"] and is_number(r["mtbf_hours"])]
    if classes:
        lo = min(classes, key=lambda r: r["mtbf_hours"])
        lead += (f"; {lower_first(class_label(lo['component']))} fails most often (MTBF {fmt_hours(lo['mtbf_hours'])} per node, "
                 f"{plural(lo['failures'], 'failure')})")
    sec.lead = lead + "."
    in_window = [t for t in trend if t["comparison"] == "month over month" and t["period"] in months]
    picked = [t for t in in_window if t["scope"] == "cluster"] + [
        t for t in in_window if t["scope"] == "component_class" and t["component"] == "gpu"]
    if picked:
        take = sentence_case("; ".join(trend_clause(t) for t in picked) + ".")
    else:
        take = sec.lead
        monthly = [t for t in trend if t["comparison"] == "month over month"]
        if monthly:
            take += (f" marts.mtbf_trend compares {monthly[0]['period']} with {monthly[0]['previous_period']}, "
                     "outside this window.")
        elif trend:  # only before/after-maintenance rows: the record has no two months to compare
            take += " The record does not hold two months to compare month over month."
    changed = [t for t in trend if t["comparison"] != "month over month" and t["direction"] in ("worse", "better")]
    if changed:
        t = min(changed, key=lambda r: r["p_value"])
        label = "cluster" if t["scope"] == "cluster" else lower_first(class_label(t["component"]))
        change = (f"is {t['rate_ratio']:.1f}× what it was before" if is_number(t["rate_ratio"]) and t["rate_ratio"]
                  else f"went from {fmt_int(t['previous_failures'])} to {fmt_int(t['failures'])} failures")
        take += (f" {sentence_case(t['comparison'])}, the {label} failure rate of the nodes it touched {change} "
                 f"({p_phrase(t['p_value'])}: {t['direction']}).")
    sec.items.append(Chart(svg(charts.mtbf_chart(chart_rows, "MTBF per node by component class")), take))

    def mtbf_cell(r: dict[str, Any]) -> str:
        if r["sufficient"] and is_number(r["mtbf_hours"]):
            return fmt_hours(r["mtbf_hours"])
        # A class that did not fail in the period: its lower limit is the finding (marts.mtbf.note says it).
        if r["failures"] == 0 and is_number(r["ci_low"]):
            return f"{fmt_ci(r['ci_low'], None)} (0 failures)"
        return "insufficient data"

    def mtbf_cells(r: dict[str, Any]) -> list[Cell]:
        ok = bool(r["sufficient"])
        return [Cell(class_label(cat(r))), Cell(period_cell(r)),
                Cell(fmt_int(r["failures"])), Cell(fmt_int(r["exposure_hours"])),
                Cell(mtbf_cell(r)),
                Cell(fmt_ci(r["ci_low"], r["ci_high"])),
                Cell(fmt_hours(r["mtbf_gpu_hours"]) if ok and is_number(r["mtbf_gpu_hours"]) else MISSING),
                Cell(fmt_rate(r["rate_per_1000_node_days"]) if ok else MISSING),
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
                "Below reliability.min_failures (default 3) failures no point estimate is given. Every hardware "
                "class of the catalog is listed: one with 0 failures shows the lower limit of its MTBF (node-hours "
                "/ 3.689), what the period shows without a failure.",
    ))
    if trend:
        sec.items.append(Table(
            [Column("Comparison"), Column("Scope"), Column("Periods"), Column("Failures", True),
             Column("MTBF now", True),
             Column("MTBF before", True), Column("MTBF change", True), Column("p-value", True),
             Column("Direction")],
            [[Cell(t["comparison"]), Cell(class_label("all" if t["scope"] == "cluster" else t["component"])),
              # two short lines, not one long unbreakable one (it pushed Direction out of view at 1,400 px)
              Cell(str(t["period"]).replace(" to ", " … "), sub=f"vs {str(t['previous_period']).replace(' to ', ' … ')}"),
              Cell(f"{fmt_int(t['failures'])} vs {fmt_int(t['previous_failures'])}"),
              Cell(fmt_hours(t["mtbf_hours"]) if is_number(t["mtbf_hours"]) else "insufficient data"),
              Cell(fmt_hours(t["previous_mtbf_hours"]) if is_number(t["previous_mtbf_hours"]) else "insufficient data"),
              Cell(change_phrase(1.0 / t["rate_ratio"]) if is_number(t["mtbf_hours"]) and is_number(t["previous_mtbf_hours"])
                   and is_number(t["rate_ratio"]) and t["rate_ratio"] else MISSING),
              Cell(MISSING if not is_number(t["p_value"]) else p_phrase(t["p_value"]).removeprefix("p ").removeprefix("= ")),
              Cell(t["direction"] or MISSING)] for t in trend],
            caption="Latest month in the warehouse vs the month before, and the nodes each planned maintenance "
                    "window touched after it vs before it (marts.mtbf_trend): exact conditional test "
                    "of equal Poisson rates given the periods' node-hours in service (the exposure of marts.mtbf; "
                    "a maintenance comparison leaves the window itself out of both sides); 'worse' / 'better' only "
                    "at p < 0.05, 'insufficient data' when neither period has reliability.min_failures failures. "
                    "MTBF change = previous rate / current rate − 1; not given when either period has "
                    "insufficient data.",
        ))
    return sec


SECTION = SectionSpec("mtbf", "MTBF by component class", build)
