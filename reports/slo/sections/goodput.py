"""SLO review section "Goodput" (``#goodput``).

Reads marts.goodput_daily, marts.slo_daily; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import fmt_date, fmt_int, fmt_num, fmt_pct, is_number, plural, sentence_case
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.slo.terms import fmt_objective
from gpusre.reports.slo.window import SloWindow, source_status


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("goodput", "Goodput", scope=f"Window {w.text}, from marts.goodput_daily.")
    reason = source_status(con, "goodput_daily")
    if reason:
        sec.no_data = reason
        return sec
    rows = query_rows(con, """SELECT day, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc,
                                productive_gpu_hours AS prod, lost_failure_gpu_hours AS lf,
                                lost_restart_gpu_hours AS lr, idle_gpu_hours AS idle, goodput, infra_interruptions,
                                COALESCE(partial, FALSE) AS partial
                         FROM marts.goodput_daily WHERE day BETWEEN ? AND ? ORDER BY day""", [w.start, w.end])
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.goodput_daily has no days in the window {w.text}."
        return sec
    tot = {k: sum(float(r[k] or 0.0) for r in rows) for k in ("cap", "alloc", "prod", "lf", "lr", "idle")}
    interruptions = sum(int(r["infra_interruptions"] or 0) for r in rows)
    cap = tot["cap"]
    gp = tot["prod"] / cap if cap else None
    objective = None
    if table_status(con, "marts.slo_daily") is None:
        objective = scalar(con, "SELECT objective FROM marts.slo_daily WHERE sli = 'goodput' AND day <= ? "
                                 "ORDER BY day DESC LIMIT 1", [w.end])
    take = (f"Of {fmt_int(cap)} GPU-hours of capacity in the window, {fmt_pct(tot['idle'] / cap if cap else None)} "
            f"sat idle, {fmt_pct(tot['lf'] / cap if cap else None, 2)} were lost to failures and "
            f"{fmt_pct(tot['lr'] / cap if cap else None, 2)} to restarts ({plural(interruptions, 'interruption')} by the infrastructure or preemption): "
            f"goodput was {fmt_pct(gp)}" + (f" against an objective of {fmt_objective(objective)}." if is_number(objective) else "."))
    sec.lead = take
    sec.items.append(Chart(svg(charts.waterfall_chart(
        [("Capacity", cap, "total"), ("Idle", tot["idle"], "loss"), ("Allocated", tot["alloc"], "total"),
         ("Lost to failures", tot["lf"], "loss"), ("Lost to restarts", tot["lr"], "loss"),
         ("Productive", tot["prod"], "total")],
        f"Where the GPU-hours went, {w.text}")), take))
    # Partial days (the data covers part of them) are left out of minima, as everywhere.
    with_gp = [r for r in rows if is_number(r["goodput"]) and not r["partial"]]
    if with_gp:
        worst = min(with_gp, key=lambda r: r["goodput"])
        below = [r for r in with_gp if is_number(objective) and r["goodput"] < objective]
        daily_take = ((f"Goodput was below the {fmt_objective(objective)} objective on {len(below)} of {len(with_gp)} days; "
                       if is_number(objective) else "")
                      + f"the worst day was {fmt_date(worst['day'])} at {fmt_pct(worst['goodput'])} "
                        f"({fmt_pct((worst['idle'] or 0) / worst['cap'] if worst['cap'] else None)} of capacity idle).")
        sec.items.append(Chart(svg(charts.goodput_daily_chart(
            # a partial day's goodput is not drawn (its capacity is cut at the data's end): the chart shows
            # the days the sentence counts
            [r["day"] for r in rows], [None if r["partial"] else r["goodput"] for r in rows],
            objective if is_number(objective) else None,
            "Daily goodput", [r["alloc"] / r["cap"] if r["cap"] else None for r in rows])), sentence_case(daily_take)))
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


SECTION = SectionSpec("goodput", "Goodput", build)
