"""Nightly report section "Node availability" (``#availability``).

Reads marts.node_availability_daily (observed node-days only: the days and hours the node_availability
SLI reads) and marts.data_freshness (where the node-state history ends); formats, computes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import duckdb

from gpusre.reports.coverage import history_ends_early
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    hours_text,
    period_text,
    plural,
    share,
    utc_date,
    utc_hm,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import NightlyMeta, node_state_history

_HEATMAP_DAYS = 14

_HEATMAP_ALL_NODES = 48  # up to this many nodes every node gets a heat-map row

_HEATMAP_WORST = 40  # beyond it: the worst nodes, then one summary row for the others

_TOP_N_WORST_NODES = 15

_DOWN_CAUSES = (("hw", "hardware"), ("mnt", "maintenance"), ("hc", "health checks"), ("oth", "other causes"))


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("availability", "Node availability")
    reason = node_state_history(con) or table_status(con, "marts.node_availability_daily")
    if reason:
        sec.no_data = reason
        return sec
    warning = history_ends_early(con)
    warning = f"Data warning: {warning}" if warning else None
    if warning:
        sec.notes.append(warning)
    last = meta.report_date
    first = last - timedelta(days=_HEATMAP_DAYS - 1)
    rows = query_rows(con, """SELECT day, node, coalesce(observed_hours, 0) AS obs, coalesce(in_service_hours, 0) AS ins,
                                coalesce(down_hours, 0) AS down, coalesce(down_hardware_hours, 0) AS hw,
                                coalesce(down_maintenance_hours, 0) AS mnt, coalesce(down_health_check_hours, 0) AS hc,
                                coalesce(down_other_hours, 0) AS oth
                         FROM marts.node_availability_daily WHERE day BETWEEN ? AND ?""", [first, last])
    if not rows:
        span = query_rows(con, "SELECT min(day) AS a, max(day) AS b FROM marts.node_availability_daily")[0]
        sec.no_data = (f"{NO_DATA}: marts.node_availability_daily has no rows for {fmt_date(first)} … {d} "
                       f"(it covers {period_text(fmt_date(span['a']), fmt_date(span['b']))})."
                       + (f" {warning}" if warning else ""))
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
    avail = share(tot_ins, tot_obs)
    night = per_day[col[last]]
    night_avail = share(night["ins"], night["obs"])
    order = sorted(per_node, key=lambda k: (-per_node[k]["down"], k))
    down_nodes = [k for k in order if per_node[k]["down"] > 0]
    # The days with rows: the mart holds observed node-days only (a day after the node-state history
    # ended has none), so the share is over the days and hours the node-availability SLI reads.
    observed = sorted({r["day"] for r in rows})
    window = period_text(fmt_date(observed[0]), fmt_date(observed[-1]))
    # Not the node-availability SLI (which leaves planned maintenance out of both sides): named apart.
    lead = (f"In-service share of node-hours (planned maintenance counts as out of service here; the "
            f"node-availability SLO leaves it out) was {fmt_pct(avail, 2)} over the "
            f"{plural(len(observed), 'day')} {window} and "
            + (f"{fmt_pct(night_avail, 2)} on {d}" if night_avail is not None else f"unknown on {d} (no data)"))
    # A day the node-state history ends inside: its share is of the hours observed, not of the day (the
    # node-availability SLI estimates the rest from incidents).
    observed_per_node = night["obs"] / len(per_node) if per_node else 0.0
    if night_avail is not None and observed_per_node < 24 - 1 / 60:
        lead += f" (node states cover {hours_text(observed_per_node)} of it per node)"
    if down_nodes:
        w = per_node[down_nodes[0]]
        cause = max(_DOWN_CAUSES, key=lambda c: w[c[0]])[1]
        lead += (f"; {fmt_int(len(down_nodes))} of {plural(len(per_node), 'node')} had down time, the worst, "
                 f"{down_nodes[0]}, was in service {fmt_pct(share(w['ins'], w['obs']))} of the time "
                 f"({hours_text(w['down'])} down, mostly {cause}).")
    else:
        lead += f"; none of the {plural(len(per_node), 'node')} was out of service in that time."
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
        return (label, [share(a, o) for a, o in zip(ins, obs)],
                [x if o else None for x, o in zip(down, obs)], summary)

    hm_rows = [heat_row(f"All {fmt_int(len(per_node))} nodes", order, True)]
    hm_rows += [heat_row(k, [k], False) for k in shown]
    if rest:
        rest_down = sum(per_node[k]["down"] for k in rest)
        hm_rows.append(heat_row(f"{fmt_int(len(rest))} other nodes fully in service" if rest_down == 0
                                else f"{fmt_int(len(rest))} other nodes", rest, True))
    title = ("In-service share per node and day" + (f", worst {len(shown)} nodes" if rest else ", worst first"))
    sec.add(svg(charts.availability_heatmap_chart(days, hm_rows, title, highlight_day=last)))

    worst = down_nodes[:_TOP_N_WORST_NODES]
    if worst:
        sec.add(Table(
            [Column("Node"), Column("In service", True), Column("Down (h)", True), Column("Hardware (h)", True),
             Column("Maintenance (h)", True), Column("Health check (h)", True), Column("Other (h)", True),
             Column(f"Down {d} (h)", True)],
            [[Cell(k, mono=True), Cell(fmt_pct(share(per_node[k]["ins"], per_node[k]["obs"]))),
              Cell(fmt_num(per_node[k]["down"]))] + [Cell(fmt_num(per_node[k][c])) for c, _ in _DOWN_CAUSES]
             + [Cell(fmt_num(per_node[k]["d_down"][col[last]]))] for k in worst],
            caption=f"The {len(worst)} nodes with the most down time over {window}"
                    + (f" (of {fmt_int(len(down_nodes))} with any)" if len(down_nodes) > len(worst) else "")
                    + ". Down node-hours by cause; down time inside planned maintenance windows counts as "
                      "maintenance, software and unknown reasons as other.",
        ))
    return sec


SECTION = SectionSpec("availability", "Node availability", build)
