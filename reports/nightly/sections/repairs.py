"""Nightly report section "MTTR by component class" (``#repairs``).

Reads marts.hw_incidents, marts.incident_repairs, marts.repair_times; formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.vocabulary import class_label
from gpusre.models.warehouse import select_columns
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_int,
    fmt_num,
    plural,
    span_hours,
)
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta, node_state_history


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("repairs", "MTTR by component class")
    reason = table_status(con, "marts.repair_times")
    if reason:
        # (Without node states repairs fall back to other evidence; an empty mart then says why.)
        sec.no_data = node_state_history(con) or reason
        return sec
    rows = query_rows(con, f"""SELECT {select_columns(con, 'marts.repair_times', _REPAIR_COLUMNS)}
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
    lead = (f"Of {plural(t['incidents'], 'hardware incident')}, {fmt_int(t['linked_incidents'])} "
            f"{'was' if t['linked_incidents'] == 1 else 'were'} followed by a node drain")
    if t["repaired"] and t["mttr_hours_p50"] is not None:
        lead += (f"; {fmt_int(t['repaired'])} repaired with a median time to repair of "
                 f"{span_hours(t['mttr_hours_p50'])}"
                 f" (p90 {span_hours(t['mttr_hours_p90'])}"
                 + (f", 95 % CI {fmt_num(t['ci_low'])}–{fmt_num(t['ci_high'])} h" if t["ci_low"] is not None else "")
                 + f") after a median {span_hours(t['mttd_hours_p50'])} to detect")
    else:
        lead += "; none has been repaired yet"
    if t["ongoing"]:
        lead += f"; {fmt_int(t['ongoing'])} {'is' if t['ongoing'] == 1 else 'are'} still under repair"
    timed = [r for r in comps if r["mttr_hours_p50"] is not None]
    if len(timed) > 1:
        lead += (f"; slowest to repair: {label(timed[0])} "
                 f"(median {span_hours(timed[0]['mttr_hours_p50'])})")
    sec.lead = lead + "."
    ordered = [total] + comps

    if any(r["mttr_hours_p50"] is not None for r in ordered):
        sec.add(svg(charts.repair_time_chart(
            [(label(r), r["mttr_hours_p50"], r["mttr_hours_p90"], int(r["repaired"] or 0), r is total)
             for r in ordered], "Time to repair by component class: median, whisker to p90")))
    h = span_hours  # one duration formatter: '45 min', not '0.8'

    def ci(r: dict[str, Any]) -> Cell:
        if r["ci_low"] is not None:
            return Cell(f"{fmt_num(r['ci_low'])} … {fmt_num(r['ci_high'])}", title=r["note"])
        return Cell(f"{MISSING} (too few)" if r["repaired"] else MISSING, title=r["note"])

    sec.add(Table(
        [Column("Class"), Column("Incidents", True), Column("Drained", True), Column("Repaired", True),
         Column("Ongoing", True), Column("TTD p50 / p90", True), Column("TTR p50", True),
         Column("TTR p90", True), Column("TTR mean", True), Column("95 % CI (h)", True)],
        [[Cell(label(r)), Cell(fmt_int(r["incidents"])), Cell(fmt_int(r["linked_incidents"])),
          Cell(fmt_int(r["repaired"])), Cell(fmt_int(r["ongoing"])),
          # detection takes minutes: '1 min / 4 min', not '0.0 / 0.1'; repairs likewise
          Cell(f"{span_hours(r['mttd_hours_p50'])} / {span_hours(r['mttd_hours_p90'])}"), Cell(h(r["mttr_hours_p50"])),
          Cell(h(r["mttr_hours_p90"])), Cell(h(r["mttr_hours_mean"])), ci(r)] for r in ordered],
        caption="All classes first, then slowest to repair first (the component classes MTBF uses). Hardware "
                "incidents (marts.hw_incidents) linked to the first drain/down of their own nodes from 30 min "
                "before to 24 h after. TTD (time to detect): first evidence to drain; TTR (time to repair): first "
                "evidence to the last node back in service"
                + (f"; {fmt_int(int(total['repaired'] or 0) - int(total.get('from_node_states') or 0))} of the "
                   f"repairs had no node-state record and were timed by a logged recovery (a link back ACTIVE), "
                   f"the first sign of health after their last failing health check (a passing run, a reboot, "
                   f"else the check's next run) or the first job that completed on their node "
                   f"(marts.incident_repairs.repair_source)"
                   if int(total['repaired'] or 0) > int(total.get('from_node_states') or 0) else "")
                + ". Ongoing repairs are counted but left out of the quantiles. "
                "95 % CI: distribution-free interval of the TTR median (needs at least 6 repairs).",
    ))
    return sec


_REPAIR_COLUMNS = ("component_class", "incidents", "linked_incidents", "repaired", "ongoing", "mttd_hours_p50",
                   "mttd_hours_p90", "mttr_hours_p50", "mttr_hours_p90", "mttr_hours_mean", "ci_low", "ci_high",
                   "from_node_states", "note")


SECTION = SectionSpec("repairs", "MTTR by component class", build)
