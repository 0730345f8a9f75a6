"""Nightly report section "Alert incidents by size" (``#alert_incidents``).

Reads marts.alert_incident_scopes, marts.alert_incidents, marts.alert_daily (deliveries Alertmanager
truncated that day); formats, computes nothing.

Besides the incidents that started on the report day, the lead names those that started earlier and
ended that day: an earlier night's report showed them ongoing, and this one says when they ended."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.warehouse import select_columns
from gpusre.reports.incident.terms import UNKNOWN_NO_ACCOUNTING
from gpusre.reports.kit.formatting import (
    MISSING,
    count_phrase,
    fmt_date,
    fmt_int,
    fmt_num,
    gpuh,
    nodes_text,
    or_unknown,
    plural,
    ratio_text,
    span_hours,
    truncate,
    utc_hm,
)
from gpusre.reports.kit.labels import scope_label
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.sections.alert_flood import truncation_text
from gpusre.reports.nightly.meta import NightlyMeta, alert_history, alert_window

_TOP_N_ALERT_INCIDENTS = 10

_TOP_N_RESOLVED = 5  # incidents that started earlier and ended on the report day, named in the lead


def _resolved_text(con: duckdb.DuckDBPyConnection, day: Any) -> str:
    """' 1 alert incident that started earlier ended on D: “X” (start → end, 8 h).' — or ''.

    An incident that started before the report day and ended on it was still open at the end of the
    day before (a previous report showed it ongoing); without this line the reader never learns it
    ended. Ongoing incidents (``end_ts`` is the end of the alert data, not an end) are not listed."""
    where = f"NOT ongoing AND {utc_day_sql('start_ts')} < ? AND {utc_day_sql('end_ts')} = ?"
    n = scalar(con, f"SELECT count(*) FROM marts.alert_incidents WHERE {where}", [day, day])
    if not n:
        return ""
    rows = query_rows(con, f"""SELECT incident_id, start_ts, end_ts, root_cause_candidate FROM marts.alert_incidents
                               WHERE {where} ORDER BY end_ts, incident_id LIMIT {_TOP_N_RESOLVED}""", [day, day])
    named = "; ".join(
        f"\u201c{truncate(r['root_cause_candidate'] or r['incident_id'], 70)}\u201d ({r['incident_id']}, "
        f"{fmt_date(r['start_ts'])} \u2192 {fmt_date(r['end_ts'])}, "
        f"{span_hours((r['end_ts'] - r['start_ts']).total_seconds() / 3600)})" for r in rows)
    more = f"; and {fmt_int(n - len(rows))} more" if n > len(rows) else ""
    return (f" {plural(n, 'alert incident')} that started earlier ended on "
            f"{fmt_date(day)}: {named}{more}.")


def _requeued_text(r: dict[str, Any]) -> str:
    """'1 requeued run among its killed runs; ' (``marts.alert_incidents.n_runs_requeued``: earlier runs Slurm
    requeued, counted beside the jobs as the hardware incidents count them) — or ''."""
    n = r.get("n_runs_requeued")
    return f"{plural(n, 'requeued run')} among its killed runs; " if n else ""


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    d = fmt_date(meta.report_date)
    sec = Section("alert_incidents", f"Alert incidents of {d} by size")
    reason = alert_history(con) or table_status(con, "marts.alert_incidents")
    if reason:
        sec.no_data = reason
        return sec
    on_day, params = f"{utc_day_sql('start_ts')} = ?", [meta.report_date]
    agg = query_rows(con, f"""SELECT count(*) AS n, coalesce(sum(n_alerts), 0) AS alerts,
                                count(*) FILTER (WHERE hw_incident_id IS NOT NULL) AS hw,
                                count(*) FILTER (WHERE n_jobs_killed > 0) AS killing,
                                coalesce(sum(n_jobs_killed), 0) AS jobs, coalesce(sum(lost_gpu_hours), 0) AS lost,
                                count(*) FILTER (WHERE n_jobs_killed IS NULL) AS unknown,
                                count(*) FILTER (WHERE ongoing) AS ongoing
                         FROM marts.alert_incidents WHERE {on_day}""", params)[0]
    if not agg["n"]:
        first, last = alert_window(meta)
        n14 = scalar(con, f"SELECT count(*) FROM marts.alert_incidents WHERE {utc_day_sql('start_ts')} BETWEEN ? AND ?",
                      [first, last])
        sec.lead = (f"No alert incident started on {d}; {fmt_int(n14)} started in the {plural((last - first).days + 1, 'day')} "
                    f"{fmt_date(first)} … {d}."
                    + ("" if table_status(con, "marts.alert_daily") else truncation_text(con, meta.report_date))
                    + _resolved_text(con, meta.report_date))
        return sec
    scopes = [] if table_status(con, "marts.alert_incident_scopes") else query_rows(
        con, "SELECT scope, incidents AS n, alerts, alerts_per_incident, in_flood AS flood, with_hw_incident AS hw, "
             "jobs_killed AS jobs, lost_gpu_hours AS lost FROM marts.alert_incident_scopes WHERE day = ? "
             "ORDER BY incidents DESC, alerts DESC, scope", [meta.report_date])
    # n_runs_requeued: a warehouse built before the column reads NULL (no requeued run named).
    rows = query_rows(con, f"""SELECT incident_id, start_ts, end_ts, ongoing, n_alerts, n_nodes, nodes, root_cause_candidate,
                                 root_cause_reason, alertnames, hw_incident_id, scope, in_flood, n_jobs_killed,
                                 lost_gpu_hours, {select_columns(con, 'marts.alert_incidents', ['n_runs_requeued'])}
                          FROM marts.alert_incidents WHERE {on_day}
                          ORDER BY n_alerts DESC NULLS LAST, lost_gpu_hours DESC NULLS LAST, start_ts, incident_id
                          LIMIT {_TOP_N_ALERT_INCIDENTS}""", params)
    top = rows[0]
    n = agg["n"]
    lead = (f"{plural(n, 'alert incident')} started on {d}, grouping {plural(agg['alerts'], 'alert')}"
            + (f" (by scope: {count_phrase([(scope_label(r['scope']), r['n']) for r in scopes])})" if scopes else "")
            + "; "
            + ("the largest, " if n > 1 else "it, ")
            + f"\u201c{truncate(top['root_cause_candidate'] or top['incident_id'], 70)}\u201d, grouped "
              f"{plural(top['n_alerts'], 'alert')} on {plural(top['n_nodes'] or 0, 'node')}"
            + (f" and killed {plural(top['n_jobs_killed'], 'job')} ({_requeued_text(top)}"
               f"{gpuh(top['lost_gpu_hours'] or 0.0)} GPU-h lost)" if top["n_jobs_killed"] else ""))
    # Without Slurm accounting the jobs they killed are unknown (the mart's NULL), never "none killed a job".
    no_jobs = agg["unknown"] == n
    if n > 1:
        lead += (f"; {fmt_int(agg['hw'])} of the {fmt_int(n)} had a hardware incident behind them"
                 + (f"; jobs killed: {UNKNOWN_NO_ACCOUNTING}." if no_jobs else
                    f" and {fmt_int(agg['killing'])} killed {plural(agg['jobs'], 'job')} "
                    f"({gpuh(agg['lost'])} GPU-h lost)." if agg["killing"] else " and none killed a job."))
    else:
        lead += f"; jobs killed: {UNKNOWN_NO_ACCOUNTING}." if no_jobs else "."
    if agg["ongoing"]:
        lead += (f" {fmt_int(agg['ongoing'])} of them {'is' if agg['ongoing'] == 1 else 'are'} ongoing: an alert "
                 "still firing at the end of the alert data.")
    # Alerts a truncated webhook delivery left out are in no incident: the counts above are lower bounds.
    if not table_status(con, "marts.alert_daily"):
        lead += truncation_text(con, meta.report_date)
    sec.lead = lead + _resolved_text(con, meta.report_date)

    def cand(r: dict[str, Any]) -> Cell:
        text = r["root_cause_candidate"] or MISSING
        why = r["root_cause_reason"] or ""
        rules = ", ".join(str(a) for a in (r["alertnames"] or []))
        return Cell(truncate(text, 60), sub=truncate(why, 90) or None,
                    title=f"{text}: {why}" + (f" (rules: {rules})" if rules else ""))

    def nodes(r: dict[str, Any]) -> Cell:
        return Cell(fmt_int(r["n_nodes"]), title=nodes_text(r["nodes"]))

    sec.add(Table(
        [Column("Incident", nowrap=True), Column("Start (UTC)", nowrap=True), Column("Alerts", True),
         Column("Nodes", True), Column("Scope"), Column("Root-cause candidate and why"),
         Column("HW incident", nowrap=True), Column("Jobs killed", True), Column("Lost GPU-h", True)],
        [[Cell(str(r["incident_id"]), mono=True), Cell(utc_hm(r["start_ts"]), title=fmt_date(r["start_ts"])),
          Cell(fmt_int(r["n_alerts"])), nodes(r),
          Cell(scope_label(r["scope"]) + (", flood" if r["in_flood"] else "") + (", ongoing" if r["ongoing"] else "")),
          cand(r),
          Cell(str(r["hw_incident_id"]) if r["hw_incident_id"] else MISSING, mono=bool(r["hw_incident_id"])),
          Cell(or_unknown(r["n_jobs_killed"], fmt_int),
               sub=f"{plural(r['n_runs_requeued'], 'requeued run')}" if r["n_runs_requeued"] else None),
          Cell(or_unknown(r["lost_gpu_hours"], fmt_num))] for r in rows],
        caption=(f"Top {len(rows)} of {fmt_int(n)}" if n > len(rows) else f"All {fmt_int(n)}")
                + f" alert incidents that started on {d}, most alerts first (hover over a node count for the nodes). "
                  "Root-cause candidate: the alert matched to a hardware incident, else the earliest at the most "
                  "upstream level (fabric > storage > rack > node > GPU > Slurm's reaction). Jobs killed: jobs with a run (requeued runs included, "
                  "counted beneath) that ended FAILED / NODE_FAIL, or that attribution gives to a hardware incident "
                  "(a run Slurm requeued), on its nodes from "
                  "15 min before its start to 5 min after its last alert, unless attributed to the user"
                + (f" ({UNKNOWN_NO_ACCOUNTING})" if no_jobs else "") + ". "
                  "\u201cflood\u201d: an alert began inside a flood episode; \u201congoing\u201d: an alert of it "
                  "was still firing at the end of the alert data.",
    ))
    sec.add(Table(
        [Column("Scope"), Column("Incidents", True), Column("Alerts", True), Column("Alerts per incident", True),
         Column("In a flood", True), Column("With HW incident", True), Column("Jobs killed", True),
         Column("Lost GPU-h", True)],
        [[Cell(scope_label(r["scope"])), Cell(fmt_int(r["n"])), Cell(fmt_int(r["alerts"])),
          Cell(ratio_text(r["alerts_per_incident"])), Cell(fmt_int(r["flood"])), Cell(fmt_int(r["hw"])),
          Cell(or_unknown(r["jobs"], fmt_int)), Cell(or_unknown(r["lost"], fmt_num))] for r in scopes],
        caption=f"Alert incidents of {d} by scope: node (one node), rack / leaf switch (nodes of one rack / under one "
                "leaf switch, or a switch alert), storage (a file-system alert), cluster (nodes in several racks), "
                "several nodes (cluster.yaml gives no rack for them), "
                "fabric (a fabric alert on no node, e.g. a subnet manager), service (no node: a service or a host "
                "outside the node list).",
    ))
    warehouse = meta.warehouse_label or "WAREHOUSE"
    sec.notes.append(f"A retrospective (timeline, evidence, blast radius, similar incidents) of any of them: "
                f"`gpusre report incident {top['incident_id']} --warehouse {warehouse} --out DIR`.")
    return sec


SECTION = SectionSpec("alert_incidents", "Alert incidents by size", build)
