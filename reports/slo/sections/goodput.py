"""SLO review section "Goodput" (``#goodput``).

Reads marts.goodput_daily, marts.slo_daily, and per pool (cluster.yaml ``pools``: a GPU generation)
marts.utilization_by_pool; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.models.warehouse import select_columns
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import fmt_date, fmt_int, fmt_num, fmt_pct, is_number, plural, sentence_case
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import macro_status, query_rows, scalar, table_status
from gpusre.reports.slo.terms import fmt_objective
from gpusre.reports.slo.window import SloWindow, source_status


def share_text(frac: float | None, decimals: int = 1) -> str:
    """``fmt_pct``, but a share that is not zero never prints as zero: 11 GPU-hours of 285,696 is
    '< 0.01 %', not '0.00 %' next to a table that shows the 11 GPU-hours.

    >>> share_text(11 / 285_696, 2), share_text(0.0, 2), share_text(0.0123, 2)
    ('< 0.01 %', '0.00 %', '1.23 %')
    """
    smallest = 10.0 ** -decimals
    if is_number(frac) and 0 < float(frac) * 100 < smallest / 2:  # type: ignore[arg-type]
        return f"< {smallest:.{decimals}f} %"
    return fmt_pct(frac, decimals)


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("goodput", "Goodput", scope=f"Window {w.text}, from marts.goodput_daily.")
    reason = source_status(con, "goodput_daily")
    if reason:
        sec.no_data = reason
        return sec
    # maintenance_gpu_hours, the preemption and maintenance losses and largest_loss: NULL in a warehouse
    # written before the columns existed (then nothing is known to be planned, and the sentences say only
    # "idle"; no day is called a maintenance day)
    newer = select_columns(con, "marts.goodput_daily", ("maintenance_gpu_hours", "lost_preemption_gpu_hours",
                                                        "lost_maintenance_gpu_hours", "preemptions",
                                                        "planned_interruptions", "largest_loss"))
    rows = query_rows(con, f"""SELECT day, capacity_gpu_hours AS cap, allocated_gpu_hours AS alloc,
                                productive_gpu_hours AS prod, lost_failure_gpu_hours AS lf,
                                lost_restart_gpu_hours AS lr, idle_gpu_hours AS idle, goodput, infra_interruptions,
                                COALESCE(partial, FALSE) AS partial, {newer}
                         FROM marts.goodput_daily WHERE day BETWEEN ? AND ? ORDER BY day""", [w.start, w.end])
    if not rows:
        sec.no_data = f"{NO_DATA}: marts.goodput_daily has no days in the window {w.text}."
        return sec
    tot = {k: sum(float(r[k] or 0.0) for r in rows) for k in ("cap", "alloc", "prod", "lf", "lr", "idle")}
    tot["maint"] = sum(float(r["maintenance_gpu_hours"] or 0.0) for r in rows)
    tot["lp"] = sum(float(r["lost_preemption_gpu_hours"] or 0.0) for r in rows)
    tot["lm"] = sum(float(r["lost_maintenance_gpu_hours"] or 0.0) for r in rows)
    interruptions = sum(int(r["infra_interruptions"] or 0) for r in rows)
    preemptions = sum(int(r["preemptions"] or 0) for r in rows)
    planned = sum(int(r["planned_interruptions"] or 0) for r in rows)
    cap = tot["cap"]
    gp = tot["prod"] / cap if cap else None
    objective = None
    if table_status(con, "marts.slo_daily") is None:
        objective = scalar(con, "SELECT objective FROM marts.slo_daily WHERE sli = 'goodput' AND day <= ? "
                                 "ORDER BY day DESC LIMIT 1", [w.end])
    frac = lambda v: v / cap if cap else None  # noqa: E731
    # Planned maintenance is part of idle capacity: named on its own so that a planned drain does not read
    # like lost capacity nobody planned (node availability leaves it out altogether).
    maint_clause = (f" ({share_text(frac(tot['maint']))} in planned maintenance, {fmt_int(tot['maint'])} GPU-hours)"
                    if tot["maint"] > 0 else "")
    # Preemption and planned maintenance interrupt runs too (lost work and restart each), but are no failure:
    # named on their own, and only when they happened.
    other_losses = "".join(
        f", {share_text(frac(v), 2)} to {what} ({plural(n, noun)})"
        for v, n, what, noun in ((tot["lp"], preemptions, "preemption", "preempted run"),
                                 (tot["lm"], planned, "planned maintenance", "interrupted run"))
        if v > 0 or n > 0)
    take = (f"Of {fmt_int(cap)} GPU-hours of capacity in the window, {share_text(frac(tot['idle']))} "
            f"sat idle{maint_clause}, {share_text(frac(tot['lf']), 2)} were lost to failures and "
            f"{share_text(frac(tot['lr']), 2)} to restarts after them ({plural(interruptions, 'interruption')} by the infrastructure)"
            f"{other_losses}: "
            f"goodput was {fmt_pct(gp)}"
            # the SLO leaves planned maintenance out of capacity (as node availability does): quote its measure too
            + (f" ({fmt_pct(tot['prod'] / (cap - tot['maint']))} of the capacity outside planned maintenance, what "
               "the goodput SLO measures)" if is_number(objective) and cap > tot["maint"] > 0 else "")
            + (f" against an objective of {fmt_objective(objective)}." if is_number(objective) else "."))
    pools = _pool_rows(con, w)
    sec.lead = take + (" Utilization by pool: " + ", ".join(f"{r['pool']} {fmt_pct(r['utilization'])}" for r in pools)
                       + " (goodput is the whole fleet's)." if pools else "")
    idle_steps = ([("Planned maintenance", tot["maint"], "loss"), ("Other idle", tot["idle"] - tot["maint"], "loss")]
                  if tot["maint"] > 0 else [("Idle", tot["idle"], "loss")])
    sec.items.append(Chart(svg(charts.waterfall_chart(
        [("Capacity", cap, "total"), *idle_steps, ("Allocated", tot["alloc"], "total"),
         ("Lost to failures", tot["lf"], "loss"), ("Lost to restarts", tot["lr"], "loss"),
         *([("Lost to preemption", tot["lp"], "loss")] if tot["lp"] > 0 else []),
         *([("Lost to planned maintenance", tot["lm"], "loss")] if tot["lm"] > 0 else []),
         ("Productive", tot["prod"], "total")],
        f"Where the GPU-hours went, {w.text}")), take))
    # Partial days (the data covers part of them) are left out of minima, as everywhere.
    with_gp = [r for r in rows if is_number(r["goodput"]) and not r["partial"]]
    if with_gp:
        worst = min(with_gp, key=lambda r: r["goodput"])
        # below the objective as the SLO counts it: a whole maintenance day (no capacity outside it) is not below
        slo_basis = lambda r: (r["prod"] or 0) / (r["cap"] - (r["maintenance_gpu_hours"] or 0)) \
            if (r["cap"] or 0) - (r["maintenance_gpu_hours"] or 0) > 0 else None  # noqa: E731
        below = [r for r in with_gp if is_number(objective) and slo_basis(r) is not None and slo_basis(r) < objective]
        day_share = lambda r, k: (r[k] or 0) / r["cap"] if r["cap"] else None  # noqa: E731
        daily_take = ((f"Goodput was below the {fmt_objective(objective)} objective on {len(below)} of {len(with_gp)} days; "
                       if is_number(objective) else "")
                      + f"the worst day was {fmt_date(worst['day'])} at {fmt_pct(worst['goodput'])} "
                        f"({fmt_pct(day_share(worst, 'idle'))} of capacity idle")
        # A maintenance day only when planned maintenance is the largest part of the day's non-productive
        # capacity (marts.goodput_daily.largest_loss): a node drained for an hour on a quiet day is no
        # explanation of its goodput.
        maintenance_day = lambda r: r["largest_loss"] == "planned_maintenance"  # noqa: E731
        if (worst["maintenance_gpu_hours"] or 0) > 0:
            daily_take += f", {share_text(day_share(worst, 'maintenance_gpu_hours'))} in planned maintenance"
        if maintenance_day(worst):
            # a planned drain, not an incident: say so, and name the worst day the maintenance did not explain
            daily_take += ": a maintenance day, planned maintenance its largest loss"
            unplanned = [r for r in with_gp if not maintenance_day(r)]
            if unplanned:
                other = min(unplanned, key=lambda r: r["goodput"])
                daily_take += (f"); the worst day that was not a maintenance day was {fmt_date(other['day'])} at "
                               f"{fmt_pct(other['goodput'])} ({fmt_pct(day_share(other, 'idle'))} of capacity idle")
        daily_take += ")."
        sec.items.append(Chart(svg(charts.goodput_daily_chart(
            # a partial day's goodput is not drawn (its capacity is cut at the data's end): the chart shows
            # the days the sentence counts
            [r["day"] for r in rows], [None if r["partial"] else r["goodput"] for r in rows],
            objective if is_number(objective) else None,
            "Daily goodput", [r["alloc"] / r["cap"] if r["cap"] else None for r in rows])), sentence_case(daily_take)))
    if pools:
        sec.items.append(_pool_table(pools, w))
    resid = cap - tot["idle"] - tot["alloc"]
    resid2 = tot["alloc"] - tot["lf"] - tot["lr"] - tot["lp"] - tot["lm"] - tot["prod"]
    if cap and (abs(resid) > 0.005 * cap or abs(resid2) > 0.005 * cap):
        sec.notes.append(f"The waterfall does not close: capacity − idle − allocated = {fmt_num(resid)} GPU-hours, "
                         f"allocated − losses − productive = {fmt_num(resid2)} GPU-hours.")
    sec.items.append(Table(
        [Column("", nowrap=True), Column("GPU-hours", True), Column("Share of capacity", True)],
        [[Cell(k), Cell(fmt_num(v, 0)), Cell(share_text(frac(v), 2))] for k, v in (
            ("Capacity", cap), ("Idle", tot["idle"]),
            *([("of which planned maintenance", tot["maint"])] if tot["maint"] > 0 else []),
            ("Allocated", tot["alloc"]), ("Lost to failures", tot["lf"]),
            ("Lost to restarts", tot["lr"]), ("Lost to preemption", tot["lp"]),
            ("Lost to planned maintenance", tot["lm"]), ("Productive", tot["prod"]))],
        caption="Goodput = productive / capacity GPU-hours. Idle = not allocated (including nodes down or in "
                "maintenance); planned maintenance = the part of it on nodes down for planned maintenance (node "
                "states with a maintenance reason or inside a cluster.yaml window; the windows alone on days "
                "without node states) — node availability and the goodput SLO leave that time out, the goodput "
                "figure keeps it in its capacity (below the objective: days counted as the SLO counts them). A share that rounds to zero but is not zero shows as < 0.01 %. Lost to failures = GPUs × the expected work since the last checkpoint of instances "
                "the infrastructure interrupted (NODE_FAIL, BOOT_FAIL, or attributed to the "
                "infrastructure from node logs), on the day they ended; lost to restarts = GPUs × the restart "
                "overhead of the instance that follows, on the day it started. Lost to preemption and lost to "
                "planned maintenance = the same two losses of instances the scheduler preempted and of those "
                "planned maintenance ended (the attribution marts' planned rows): no failures, but lost work. "
                "A day is a maintenance day when planned maintenance (its idle capacity and its interruptions' "
                "losses) is the largest part of its non-productive capacity. Checkpoint interval and restart "
                "overhead are the cluster.yaml assumptions of the ETTR section. User failures, cancellations and "
                "timeouts count as delivered.",
    ))
    return sec


def _pool_rows(con: duckdb.DuckDBPyConnection, w: SloWindow) -> list[dict]:
    """The window's rows of marts.utilization_by_pool, one per pool; [] with one pool (a fleet without
    cluster.yaml ``pools``) or without the macro."""
    if macro_status(con, "marts.utilization_by_pool") or table_status(con, "marts.utilization_by_pool_daily"):
        return []
    rows = query_rows(con, "SELECT * FROM marts.utilization_by_pool(?, ?)", [w.start, w.end])
    return rows if len(rows) > 1 else []


def _pool_table(pools: list[dict], w: SloWindow) -> Table:
    return Table(
        [Column("Pool", nowrap=True), Column("GPUs", True), Column("Capacity (GPU-h)", True),
         Column("Allocated (GPU-h)", True), Column("Utilization", True)],
        [[Cell(r["pool"]), Cell(fmt_int(r["gpus"])), Cell(fmt_num(r["capacity_gpu_hours"], 0)),
          Cell(fmt_num(r["allocated_gpu_hours"], 0)), Cell(fmt_pct(r["utilization"]))] for r in pools],
        caption=f"Utilization per pool (cluster.yaml pools: the hardware, e.g. a GPU generation; nodes in none form "
                f"pool 'other'), {w.text}, from marts.utilization_by_pool: allocated / capacity GPU-hours of the "
                "pool's nodes. A job on nodes of two pools counts its GPUs in each in proportion to its nodes there, "
                "so the pools add up to the fleet's capacity and allocated GPU-hours above. Goodput (losses to "
                "failures and restarts) is the fleet's, not split by pool.",
    )


SECTION = SectionSpec("goodput", "Goodput", build)
