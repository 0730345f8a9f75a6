"""Incident retrospective section "Similar past incidents" (``#similar``).

Reads marts.alert_incidents, marts.hw_incidents; formats, computes nothing."""

from __future__ import annotations

from typing import Any

from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import UNKNOWN_NO_ACCOUNTING, as_utc, at_text, incident_missing, when_text
from gpusre.reports.kit.formatting import MISSING, fmt_int, fmt_num, gpuh, nodes_text, plural, truncate
from gpusre.reports.kit.labels import component_label
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows

TOP_SIMILAR = 5


def _jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


# -- similar past incidents ----------------------------------------------------------------------


def build(inc: Incident) -> Section:
    sec = Section("similar", "Similar past incidents")
    templates: set[int] = set()
    names: set[str] = set()
    for a in inc.alert_incidents:
        templates |= {t for t in (a.get("templates") or []) if t is not None}
        names |= {n for n in (a.get("alertnames") or []) if n is not None}
    comps = {h.get("component") for h in inc.hw_incidents} - {None}
    nodes = set(inc.nodes)
    exclude = set(inc.alert_incident_ids) | set(inc.hw_incident_ids)
    cands: list[dict[str, Any]] = []
    if (templates or names) and inc.has_alert_marts:
        rows = query_rows(inc.con, """SELECT incident_id, start_ts, templates, alertnames, nodes, hw_incident_id,
                                        root_cause_candidate, n_alerts, n_jobs_killed, lost_gpu_hours
                                 FROM marts.alert_incidents
                                 WHERE start_ts < ? AND NOT list_contains(?, incident_id)
                                   AND (len(list_intersect(templates, ?)) > 0 OR len(list_intersect(alertnames, ?)) > 0)""",
                     [inc.t0, sorted(exclude), sorted(templates), sorted(names)])
        for r in rows:
            t2 = {t for t in (r["templates"] or []) if t is not None}
            n2 = {n for n in (r["alertnames"] or []) if n is not None}
            sim = (_jaccard(templates, t2) + _jaccard(names, n2)) / 2 if templates and t2 else _jaccard(names, n2)
            if sim <= 0:
                continue
            shared = sorted(names & n2)
            cands.append({"kind": "alert", "id": r["incident_id"], "start": as_utc(r["start_ts"]), "sim": sim,
                          "matched": "alerts " + ", ".join(shared) if shared else "alert templates",
                          "cause": r["root_cause_candidate"], "nodes": r["nodes"], "jobs": r["n_jobs_killed"],
                          "lost": r["lost_gpu_hours"], "linked": r["hw_incident_id"]})
    if comps and inc.has_hw:
        rows = query_rows(inc.con, """SELECT incident_id, start_ts, component, nodes, root_cause, affected_jobs, lost_gpu_hours
                                 FROM marts.hw_incidents
                                 WHERE start_ts < ? AND list_contains(?, component) AND NOT list_contains(?, incident_id)""",
                     [inc.t0, sorted(comps), sorted(exclude)])
        linked: dict[str, str] = {}
        if rows and inc.has_alert_marts:
            linked = {h: a for a, h in inc.con.execute(
                "SELECT incident_id, hw_incident_id FROM marts.alert_incidents WHERE hw_incident_id IS NOT NULL "
                "ORDER BY start_ts").fetchall()}
        for r in rows:
            n2 = set(r["nodes"] or [])
            shared = sorted(nodes & n2)
            cands.append({"kind": "hw", "id": r["incident_id"], "start": as_utc(r["start_ts"]),
                          "sim": 0.5 + 0.5 * _jaccard(nodes, n2),
                          "matched": f"component {r['component']}" + (f", nodes {nodes_text(shared)}" if shared else ""),
                          "cause": r["root_cause"] or component_label(r["component"]), "nodes": r["nodes"],
                          "jobs": r["affected_jobs"], "lost": r["lost_gpu_hours"], "linked": linked.get(r["incident_id"])})
    if not cands:
        what = ("alert templates" if templates or names else "") + (" or " if (templates or names) and comps else "") + \
               (f"component ({', '.join(sorted(comps))})" if comps else "")
        sec.no_data = (f"No earlier incident shares this incident's {what}." if what else
                       f"{NO_DATA}: this incident has neither alert templates nor a hardware component to compare.")
        return sec
    cands.sort(key=lambda c: (-round(c["sim"], 9), -c["start"].timestamp(), c["id"]))
    picked: list[dict[str, Any]] = []
    covered: set[str] = set()
    for c in cands:
        if c["id"] in covered:
            continue
        picked.append(c)
        covered.add(c["id"])
        if c["linked"]:
            covered.add(c["linked"])
        if len(picked) == TOP_SIMILAR:
            break
    best = picked[0]
    lost = sum(float(c["lost"] or 0.0) for c in picked)
    # Without Slurm accounting the jobs they killed are unknown (NULL in the marts, or no sacct loaded).
    no_jobs = "sacct" in incident_missing(inc) or all(c["jobs"] is None for c in picked)
    n_similar = len({c['id'] for c in cands})
    sec.lead = (f"{plural(n_similar, 'earlier incident')} {'resembles' if n_similar == 1 else 'resemble'} this one; "
                "the closest is "
                f"{best['id']} on {when_text(best['start'])} (similarity {best['sim']:.2f}, {best['matched']}), and the "
                + (f"job impact of the {plural(len(picked), 'incident')} shown is {UNKNOWN_NO_ACCOUNTING}." if no_jobs else
                   f"{plural(len(picked), 'incident')} shown lost {gpuh(lost)} GPU-hours together."))
    sec.items.append(Table(
        [Column("Incident", nowrap=True), Column("Kind", nowrap=True), Column("Start (UTC)", nowrap=True),
         Column("Similarity", True), Column("Matched on"), Column("Root cause"), Column("Nodes", nowrap=True),
         Column("Jobs killed", True), Column("Lost GPU-h", True), Column("Linked")],
        [[Cell(str(c["id"]), mono=True), Cell("alert" if c["kind"] == "alert" else "hardware"),
          Cell(at_text(c["start"])[:16]),
          Cell(f"{c['sim']:.2f}"), Cell(truncate(c["matched"], 60), title=c["matched"]),
          Cell(truncate(c["cause"], 50), title=c["cause"]),
          Cell(truncate(nodes_text(c["nodes"]), 16), mono=True, title=nodes_text(c["nodes"])),
          Cell("unknown" if no_jobs else fmt_int(c["jobs"])), Cell("unknown" if no_jobs else fmt_num(c["lost"])),
          Cell(str(c["linked"] or MISSING), mono=True)]
         for c in picked],
        caption="Earlier alert incidents: similarity = the mean of the Jaccard indices of their alert templates and of "
                "their alertnames with this incident's (alertnames only when templates are missing). Earlier hardware incidents of the same component: 0.5 + 0.5 × Jaccard of their nodes. "
                f"Top {TOP_SIMILAR} by similarity, then the most recent; an incident linked to one already shown is "
                "left out.",
    ))
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("similar", "Similar past incidents", lambda con, inc: build(inc))
