"""Nightly report section "Suspect nodes" (``#suspects``).

Reads core.node_events, marts.suspect_nodes; formats, computes nothing."""

from __future__ import annotations

import duckdb

from gpusre.models.failures.suspect_nodes import LOOKBACK, RMA_EPISODES
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.reports.kit.formatting import (
    MISSING,
    days_of_data_text,
    fmt_int,
    fmt_num,
    plural,
    shorten,
)
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status
from gpusre.reports.nightly.meta import NightlyMeta, unbounded_note

_TOP_N_SUSPECTS = 20


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("suspects", "Suspect nodes")
    # The mart's lookback ends at the data's end (not the report day: a snapshot, no per-day rows); a
    # warehouse holding fewer days says how many it holds, and a past night's report says it is a snapshot.
    over = days_of_data_text(LOOKBACK.days, meta.period_first, meta.data_last or meta.report_date)
    snapshot = unbounded_note(meta, "This list")
    status = table_status(con, "marts.suspect_nodes")
    if status and "has not been built" in status:
        sec.no_data = status
        return sec
    if status:  # built but empty (possibly with no columns): nothing was flagged, if there were logs to score
        events = table_status(con, "core.node_events")
        if events:
            sec.no_data = events
        else:
            sec.lead = ("No node stands out from the fleet: none is 3 robust deviations above the fleet median "
                        f"in failure episodes or failed jobs over {over}." + snapshot)
        return sec
    rows = query_rows(con, f"""SELECT node, xid_episodes, hw_episodes, infra_failed_jobs, node_fail_jobs, score, reason,
                                 worst_event, recommended_action
                          FROM marts.suspect_nodes ORDER BY score DESC NULLS LAST, node LIMIT {_TOP_N_SUSPECTS}""")
    n = scalar(con, "SELECT count(*) FROM marts.suspect_nodes")
    top = rows[0]
    sec.lead = (f"{plural(n, 'node')} {'stands' if n == 1 else 'stand'} out from the fleet over {over} "
                f"({compress_hostlist([r['node'] for r in rows]) if n <= len(rows) else 'top: ' + top['node']}); "
                f"the worst, {top['node']}, has {top['reason']} — recommended: {top['recommended_action']}." + snapshot)
    sec.add(Table(
        [Column("Node"), Column("Score (z)", True), Column("Reason"), Column("Worst event"),
         Column("Recommended action"), Column("HW ep.", True), Column("Xid ep.", True),
         Column("Infra jobs", True), Column("NODE_FAIL", True)],
        [[Cell(str(r["node"]), mono=True), Cell(fmt_num(r["score"])),
          Cell(shorten(r["reason"], 60), title=r["reason"]),
          Cell(r["worst_event"] or MISSING), Cell(r["recommended_action"] or MISSING), Cell(fmt_int(r["hw_episodes"])),
          Cell(fmt_int(r["xid_episodes"])), Cell(fmt_int(r["infra_failed_jobs"])), Cell(fmt_int(r["node_fail_jobs"]))]
         for r in rows],
        caption=f"Nodes whose failure signals are at least 3 robust z-scores above the fleet median over {over}. "
                "HW / Xid ep.: episodes of failure events / non-user Xids (a node's lines less than 1 h apart are one); infra jobs: "
                "infrastructure-failed jobs on the node; NODE_FAIL: NODE_FAIL jobs (the score counts their episodes: jobs "
                "ending less than 1 h apart or killed by one incident are one failure). Recommended action from the worst "
                f"event's catalog action; a reboot or GPU reset becomes an RMA from {RMA_EPISODES} failure episodes "
                "in the window (the soft fix has not held).",
    ))
    return sec


SECTION = SectionSpec("suspects", "Suspect nodes", build)
