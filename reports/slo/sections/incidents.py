"""SLO review section "Top incidents by lost GPU-hours" (``#incidents``).

Reads marts.hw_incidents, marts.hw_incidents_by_component, marts.job_failure_attribution (which of the jobs
the incidents hit ended failed, the rest being requeued runs), marts.incident_repairs (the first log line beside
an operator's earlier start); formats, computes nothing."""

from __future__ import annotations

from typing import Any

import duckdb

from gpusre.models.warehouse import table_columns
from gpusre.reports.incident.terms import (COMPLETING_JOB_CAPTION, COSTLIEST_ORDER, first_evidence_sql, nodes_phrase,
                                         start_note, tie_text)
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import (
    fmt_date,
    fmt_int,
    fmt_num,
    fmt_pct,
    is_number,
    jobs_and_requeued_runs,
    nodes_text,
    plural,
    span_hours,
    truncate,
    utc_hm,
)
from gpusre.reports.kit.labels import cause_label, component_label, incident_component, incident_kind
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import Cell, Chart, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows, scalar, table_status, utc_day_sql
from gpusre.reports.slo.window import SloWindow
from gpusre.models.vocabulary import failure_incident_sql

_TOP_N_INCIDENTS = 10


def build(con: duckdb.DuckDBPyConnection, w: SloWindow) -> Section:
    sec = Section("incidents", "Top incidents by lost GPU-hours",
                     scope=f"Hardware incidents that started in the window (UTC days {w.text}), from marts.hw_incidents.")
    reason = table_status(con, "marts.hw_incidents")
    if reason:
        sec.no_data = reason
        return sec
    # Incidents the operator marked not a failure (incidents.csv) stay out of the counts and the list.
    where = f"{utc_day_sql('start_ts')} BETWEEN ? AND ? AND {failure_incident_sql()}"
    agg = query_rows(con, f"""SELECT count(*) AS n, coalesce(sum(lost_gpu_hours), 0) AS lost,
                                coalesce(sum(affected_jobs), 0) AS jobs, count(affected_jobs) AS known
                         FROM marts.hw_incidents WHERE {where}""", [w.start, w.end])[0]
    if not agg["n"]:
        sec.lead = f"No hardware incident started in the window {w.text}."
        return sec
    cols = table_columns(con, "marts.hw_incidents")
    opt = {c: c if c in cols else f"NULL AS {c}" for c in ("root_cause", "label_source", "leaf_switch",
                                                            "hours_to_recovery", "severity", "affected_gpus",
                                                            "n_events")}
    rows = query_rows(con, f"""SELECT incident_id, component, cause_class, {opt['severity']}, start_ts, nodes, scope,
                                 affected_jobs, {opt['affected_gpus']}, lost_gpu_hours, {opt['root_cause']},
                                 {opt['label_source']}, {opt['leaf_switch']}, {opt['hours_to_recovery']},
                                 {opt['n_events']}, {first_evidence_sql(con)}
                          FROM marts.hw_incidents WHERE {where}
                          ORDER BY {COSTLIEST_ORDER}
                          LIMIT {_TOP_N_INCIDENTS}""", [w.start, w.end])
    comp = query_rows(con, "SELECT component, incidents AS n, lost_gpu_hours AS lost "
                           "FROM marts.hw_incidents_by_component(?, ?)", [w.start, w.end])
    groups: dict[str, list[float]] = {}
    for r in comp:
        g = groups.setdefault(component_label(r["component"]), [0.0, 0.0])
        g[0] += r["n"]
        g[1] += r["lost"]
    order = sorted(groups, key=lambda k: (-groups[k][1], -groups[k][0], k))
    top = rows[0]
    # Incidents that lost as much as the costliest: the order picks one, the sentence says it is one of them.
    tied = (scalar(con, f"SELECT count(*) FROM marts.hw_incidents WHERE {where} AND lost_gpu_hours = ?",
                   [w.start, w.end, top["lost_gpu_hours"]]) if is_number(top["lost_gpu_hours"]) else 0)
    lost = float(agg["lost"])
    # affected_jobs counts a requeued job whose run an incident killed; worded as the nightly words it
    # ("13 jobs + 1 requeued run"), the failed jobs being those attributed to the window's incidents.
    failed = None if table_status(con, "marts.job_failure_attribution") else scalar(
        con, "SELECT count(*) FROM marts.job_failure_attribution WHERE attribution = 'infrastructure' AND incident_id IN "
             f"(SELECT incident_id FROM marts.hw_incidents WHERE {where})", [w.start, w.end])
    hit = (jobs_and_requeued_runs(failed, agg["jobs"]) if failed is not None and failed <= agg["jobs"]
           else plural(agg["jobs"], "job"))
    # NULL job impact: no Slurm accounting was loaded (marts.hw_incidents), unknown rather than none
    unknown = not agg["known"]
    take = (f"{plural(agg['n'], 'hardware incident')} started in the window; which jobs they hit and the GPU-hours "
            "they cost are unknown: no Slurm accounting was loaded." if unknown else
            f"{plural(agg['n'], 'hardware incident')} started in the window, hit {hit} and "
            f"lost {fmt_num(lost, 1)} GPU-hours"
            # named denominator: the nightly's taxonomy shares are of every infrastructure loss, a larger total
            + (f"; {order[0]} cost the most ({fmt_num(groups[order[0]][1], 1)} GPU-h, "
               f"{fmt_pct(groups[order[0]][1] / lost)} of the {fmt_num(lost, 1)} GPU-h lost in hardware incidents; "
               "infrastructure failures no incident explains, e.g. a NODE_FAIL without log evidence, are not "
               "counted here), and the costliest single incident, "
               f"{incident_kind(top['component'], top['scope'])}"
               + (f" under {top['leaf_switch']}" if top["leaf_switch"] else "")
               + f" on {fmt_date(top['start_ts'])}{start_note(top, utc_hm)}, lost {fmt_num(top['lost_gpu_hours'], 1)} "
                 "GPU-hours"
               + tie_text(tied, top["lost_gpu_hours"]) + "." if lost > 0 else
               "; none of them cost GPU-hours of running jobs."))
    sec.lead = take
    with_loss = [k for k in order if groups[k][1] > 0]
    if with_loss:
        sec.items.append(Chart(svg(charts.lost_gpu_hours_chart(
            [(k, groups[k][1]) for k in with_loss], f"Lost GPU-hours by component, incidents started {w.text}",
            "Lost GPU-hours (work since the last checkpoint + restart)")), take))

    def cause(r: dict[str, Any]) -> Cell:
        text = r["root_cause"] or cause_label(r["cause_class"])
        if r["label_source"] == "operator":
            return Cell(truncate(f"{text} (operator)", 44), title=f"{text} (operator label)")
        return Cell(truncate(text, 44), title=text)

    sec.items.append(Table(
        # a start labelled as an operator's (start_note) wraps rather than widen the table past the page
        [Column("Start", nowrap=not any(start_note(r, utc_hm) for r in rows)), Column("Incident", nowrap=True),
         Column("Component"), Column("Root cause"),
         Column("Nodes", nowrap=True), Column("Jobs hit", True), Column("Lost GPU-h", True),
         Column("Completing job started", True)],
        [[Cell(fmt_date(r["start_ts"]) + start_note(r, utc_hm)), Cell(str(r["incident_id"]), mono=True,
                                                                     title=r["severity"] or None),
          Cell(incident_component(r["component"], r["scope"])), cause(r),
          Cell(nodes_phrase(r["nodes"], 22), mono=True, title=nodes_text(r["nodes"])),
          Cell("unknown" if unknown else fmt_int(r["affected_jobs"])),
          Cell("unknown" if unknown else fmt_num(r["lost_gpu_hours"])),
          Cell("unknown" if unknown else span_hours(r["hours_to_recovery"]) if is_number(r["hours_to_recovery"])
               else "not yet")] for r in rows],
        caption=f"Top {len(rows)} of {fmt_int(agg['n'])} incidents that started in the window. Lost GPU-hours: GPUs × "
                "(the work since the last checkpoint + the restart overhead) of the jobs and requeued runs the incident "
                f"killed. {COMPLETING_JOB_CAPTION} (Back in service, as the incident report's time to repair "
                "measures it, may be earlier.)",
    ))
    return sec


SECTION = SectionSpec("incidents", "Top incidents by lost GPU-hours", build)
