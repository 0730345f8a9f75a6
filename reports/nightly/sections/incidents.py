"""Nightly report section "Top incidents by lost GPU-hours" (``#incidents``).

Reads marts.hw_incidents (those that began by the end of the report day) and marts.incident_repairs (the first
log line beside an operator's earlier start); formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.reports.incident.terms import (
    COMPLETING_JOB_CAPTION,
    COSTLIEST_ORDER,
    NOT_LOADED,
    UNKNOWN_NO_ACCOUNTING,
    first_evidence_sql,
    missing_sources,
    nodes_phrase,
    start_note,
    tie_text,
)
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    gpuh,
    is_number,
    nodes_text,
    or_unknown,
    plural,
    span_hours,
    truncate,
    utc_hm,
)
from gpusre.reports.kit.labels import cause_label, incident_component
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.nightly.meta import NightlyMeta
from gpusre.models.vocabulary import failure_incident_sql

_TOP_N_INCIDENTS = 10


def _recovery_text(r: dict[str, Any], day: str = "") -> str:
    """Hours until a completing job started on the incident's nodes; ``day``: the report day, when that
    start came after it (a past night's re-render shows what that night showed: not yet)."""
    if r["nodes_recovered"] is None:  # no Slurm accounting: nobody knows whether the nodes ran jobs again
        return "unknown"
    if r.get("later"):
        return f"not yet by the end of {day}"
    if r["hours_to_recovery"] is not None:
        return span_hours(r["hours_to_recovery"])
    n_nodes = len(r["nodes"] or [])
    return f"not yet ({fmt_int(r['nodes_recovered'] or 0)}/{fmt_int(n_nodes)} nodes)" if n_nodes else MISSING


def build(con: duckdb.DuckDBPyConnection, meta: NightlyMeta) -> Section:
    sec = Section("incidents", "Top incidents by lost GPU-hours")
    reason = table_status(con, "marts.hw_incidents")
    if reason:
        # A source never loaded is named, not read as "no incident" (reports/coverage.py warns at the top).
        sec.no_data = (reason + (f" {NOT_LOADED['syslog'].capitalize()} were loaded (landing/syslog/): hardware "
                                 "incidents come from the node logs, so whether any happened is unknown."
                                 if "syslog" in missing_sources(con) else ""))
        return sec
    # Incidents that began up to the end of the report day: a past night's re-render shows what it showed.
    # Incidents the operator marked not a failure (incidents.csv) stay out of every count and list.
    on_or_before = f"{utc_day_sql('start_ts')} <= ? AND {failure_incident_sql()}"
    if not scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {on_or_before}", [meta.through]):
        sec.no_data = f"{NO_DATA}: no hardware incident began by the end of {fmt_date(meta.report_date)}."
        return sec
    agg = query_rows(con, f"""SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost,
                               count(*) FILTER (WHERE (recovered_ts IS NULL OR {utc_day_sql('recovered_ts')} > ?)
                                                AND len(nodes) > 0) AS open,
                               count(*) FILTER (WHERE affected_jobs IS NULL) AS unknown
                        FROM marts.hw_incidents WHERE {on_or_before}""", [meta.through, meta.through])[0]
    # The one "costliest" order of every report (COSTLIEST_ORDER); without any job impact (no Slurm
    # accounting) nothing is costliest, and the lead says the rows are those with the most events.
    order = (f"n_events DESC NULLS LAST, {COSTLIEST_ORDER}" if agg["unknown"] == agg["n"] else COSTLIEST_ORDER)
    rows = query_rows(con, f"""SELECT incident_id, component, scope, cause_class, start_ts, nodes, n_events, label_source,
                                 root_cause, leaf_switch, affected_jobs, lost_gpu_hours, nodes_recovered,
                                 hours_to_recovery, coalesce({utc_day_sql('recovered_ts')} > ?, false) AS later,
                                 {first_evidence_sql(con)}
                          FROM marts.hw_incidents WHERE {on_or_before}
                          ORDER BY {order}
                          LIMIT {_TOP_N_INCIDENTS}""", [meta.through, meta.through])
    top = rows[0]
    shown_lost = sum(r["lost_gpu_hours"] or 0.0 for r in rows)
    # Incidents that lost as much as the costliest: the one order picks it (as the SLO review does), the
    # sentence says it is one of them.
    tied = (scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE lost_gpu_hours = ? AND {on_or_before}",
                   [top["lost_gpu_hours"], meta.through])
            if is_number(top["lost_gpu_hours"]) and top["lost_gpu_hours"] > 0 else 0)
    where = (f" under {top['leaf_switch']}" if top["leaf_switch"] else
             f" on {nodes_phrase(top['nodes'], 40)}" if top["nodes"] else "")
    if agg["unknown"] == agg["n"]:
        # No Slurm accounting: the marts' job impact is NULL, and so is whether the nodes ran jobs again.
        sec.lead = (f"{plural(agg['n'], 'hardware incident')} (the {len(rows)} with the most events below); their job "
                    "impact (jobs hit, lost GPU-hours) and whether their nodes have completed a job since are "
                    f"{UNKNOWN_NO_ACCOUNTING}.")
    else:
        sec.lead = (
            f"The top {len(rows)} of {plural(agg['n'], 'incident')} lost {gpuh(shown_lost)} GPU-hours"
            + (f" ({fmt_pct(shown_lost / agg['lost'])} of all incident losses)" if agg["lost"] else "")
            + f"; the costliest, {incident_component(top['component'], top['scope'])}{where} from "
              f"{fmt_date(top['start_ts'])}{start_note(top, utc_hm)}, "
            f"killed {plural(top['affected_jobs'] or 0, 'job')} and lost {gpuh(top['lost_gpu_hours'] or 0.0)} GPU-hours"
            + tie_text(tied, top["lost_gpu_hours"])
            # "Recovered" here is "started a job that went on to complete" (recovered_ts: that job's start),
            # not MTTR's "back in service": named apart.
            + (f"; on the nodes of {plural(agg['open'], 'incident')} no job started after the incident has completed yet"
               + (f" by the end of {fmt_date(meta.report_date)}." if meta.past else ".")
               if agg["open"] else "; on every incident's nodes a job started since its end has completed.")
        )

    def cause(r: dict[str, Any]) -> Cell:
        text = r["root_cause"] or cause_label(r["cause_class"])
        if r["label_source"] == "operator":
            return Cell(truncate(f"{text} (operator)", 48), title=f"{text} (operator label)")
        return Cell(truncate(text, 48), title=text)

    sec.add(Table(
        # a start labelled as an operator's (start_note) wraps rather than widen the table past the page
        [Column("Start", nowrap=not any(start_note(r, utc_hm) for r in rows)), Column("Incident", nowrap=True),
         Column("Component"), Column("Root cause"),
         Column("Nodes", nowrap=True), Column("Events", True), Column("Jobs hit", True), Column("Lost GPU-h", True),
         Column("Completing job started", True)],
        [[Cell(fmt_date(r["start_ts"]) + start_note(r, utc_hm)), Cell(str(r["incident_id"]), mono=True),
          Cell(incident_component(r["component"], r["scope"])),
          cause(r), Cell(nodes_phrase(r["nodes"], 26), mono=True, title=nodes_text(r["nodes"])),
          Cell(fmt_int(r["n_events"])),
          Cell(or_unknown(r["affected_jobs"], fmt_int)), Cell(or_unknown(r["lost_gpu_hours"], fmt_num)),
          Cell(_recovery_text(r, fmt_date(meta.report_date)))] for r in rows],
        caption=(f"Incidents that began by the end of {fmt_date(meta.report_date)}." if meta.past else "Whole period.")
                + " Root cause: the worst event's catalog name, or the operator's label from "
                "incidents.csv (marked \u201coperator\u201d). Jobs hit: jobs attributed to the incident. "
                f"{COMPLETING_JOB_CAPTION} (Back in service, as the repair-time table times it, may be earlier.)"
                + (f" Jobs hit, lost GPU-hours and the completing job's start are {UNKNOWN_NO_ACCOUNTING} (not 0)."
                   if agg["unknown"]
                   else ""),
    ))
    return sec


SECTION = SectionSpec("incidents", "Top incidents by lost GPU-hours", build)
