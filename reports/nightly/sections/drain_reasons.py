"""Nightly report section "Top drain reasons by node-hours" (``#drain_reasons``).

Reads marts.drain_reasons; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    gpuh,
    plural,
    truncate,
    utc_date,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, table_status
from gpusre.reports.nightly.meta import NightlyMeta, node_state_history

_TOP_N_DRAIN_REASONS = 10


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("drain_reasons", "Top drain reasons by node-hours")
    reason = node_state_history(con) or table_status(con, "marts.drain_reasons")
    if reason:
        sec.no_data = reason
        return sec
    agg = query_rows(con, """SELECT count(*) AS n, coalesce(sum(node_hours_lost), 0) AS hours,
                               coalesce(sum(events), 0) AS events FROM marts.drain_reasons""")[0]
    rows = query_rows(con, f"""SELECT rank, reason_class, availability_class, component, template_id, template, example,
                                 events, nodes, node_hours_lost, share_node_hours, ongoing_events, first_start_ts,
                                 last_start_ts
                          FROM marts.drain_reasons
                          ORDER BY rank NULLS LAST, node_hours_lost DESC NULLS LAST, template_id
                          LIMIT {_TOP_N_DRAIN_REASONS}""")
    top = rows[0]
    top_share = sum(r["share_node_hours"] or 0.0 for r in rows)
    text = lambda r: r["template"] if r["template"] is not None else (r["example"] or MISSING)  # noqa: E731
    which = (f"The top {len(rows)} of {fmt_int(agg['n'])} drain/down reasons" if agg["n"] > len(rows)
             else f"All {fmt_int(len(rows))} drain/down reason{'' if len(rows) == 1 else 's'}")
    sec.lead = (f"{which} cost {fmt_pct(top_share)} of {gpuh(agg['hours'])} node-hours out of service; the largest, "
                f"\u201c{truncate(text(top), 70)}\u201d ({top['reason_class'] or MISSING}, "
                f"{(top['availability_class'] or 'unknown').replace('_', ' ')}), cost {gpuh(top['node_hours_lost'])} "
                f"node-hours ({fmt_pct(top['share_node_hours'])}) on {plural(top['nodes'], 'node')} in "
                f"{plural(top['events'], 'event')}"
                + (f", {fmt_int(top['ongoing_events'])} still open." if top["ongoing_events"] else "."))
    sec.add(Table(
        [Column("#", True), Column("Reason (template)"), Column("Class"), Column("Events", True),
         Column("Nodes", True), Column("Node-hours", True), Column("Share", True), Column("Open", True),
         Column("Last start", nowrap=True)],
        [[Cell(fmt_int(r["rank"])),
          Cell(truncate(text(r), 80), title=text(r) + (f" (e.g. {r['example']})" if r["example"] else "")),
          Cell(f"{r['reason_class'] or MISSING} ({(r['availability_class'] or 'unknown').replace('_', ' ')})"),
          Cell(fmt_int(r["events"])), Cell(fmt_int(r["nodes"])), Cell(fmt_num(r["node_hours_lost"])),
          Cell(fmt_pct(r["share_node_hours"])), Cell(fmt_int(r["ongoing_events"])),
          Cell(fmt_date(utc_date(r["last_start_ts"])))] for r in rows],
        caption="Reasons grouped by Drain3 template (<*> marks a masked variable; hover for an example) and "
                "class (catalog/drain_reasons.csv). Last start: UTC day of the latest event. Node-hours are counted "
                "once where events overlap, so they add up to "
                "the availability mart's down hours. Open: events still ongoing.",
    ))
    return sec


SECTION = SectionSpec("drain_reasons", "Top drain reasons by node-hours", build)
