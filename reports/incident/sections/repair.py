"""Incident retrospective section "Time to detect and repair" (``#repair``).

Reads marts.incident_repairs, marts.repair_times; formats, computes nothing."""

from __future__ import annotations

from typing import Any

from gpusre.models.vocabulary import class_label
from gpusre.models.warehouse import table_exists
from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import (NOT_LOADED, as_utc, at_text, incident_missing, repair_source_text,
                                           when_text)
from gpusre.reports.kit.formatting import MISSING, fmt_int, fmt_span, is_number, span_hours, truncate
from gpusre.reports.kit.labels import component_label
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table
from gpusre.reports.kit.warehouse import query_rows

# -- detection and repair ----------------------------------------------------------------------


def build(inc: Incident) -> Section:
    sec = Section("repair", "Time to detect and repair")
    alerts = inc.safe("alerts", [])
    first_alert = min((a["starts_at"] for a in alerts if a["in_incident"]), default=None)
    # From the first log line (an operator's start in incidents.csv is no hardware event).
    hw_start = min((inc.evidence_span(h)[0] or as_utc(h["start_ts"]) for h in inc.hw_incidents), default=None)
    alert_delay = (first_alert - hw_start).total_seconds() if first_alert and hw_start else None
    missing = incident_missing(inc)
    no_states = "slurm_events" in missing
    if not inc.hw_incidents:
        member = [a for a in alerts if a["in_incident"]]
        ended = [a["ends_at"] for a in member if a["ends_at"]]
        head = ("No node logs were loaded, so no hardware incident can be linked to this alert incident"
                + (" and there is no node-state history either" if no_states else "") + ": its repair time is unknown"
                if "syslog" in missing else
                f"{NO_DATA}: no hardware incident is linked to this alert incident, so there is no repair "
                "record (marts.incident_repairs)")
        sec.no_data = (head
                       + (f"; its alerts fired from {when_text(inc.start)} until {when_text(max(ended))}." if member and
                          len(ended) == len(member) else "."))
        return sec
    if not inc.repairs:
        sec.no_data = (f"{NO_DATA}: marts.incident_repairs has no row for {', '.join(inc.hw_incident_ids)} "
                       + ("(no node-state history was loaded)." if no_states else "(no node-state history ingested yet?)."))
        return sec
    medians: dict[str, dict[str, Any]] = {}
    if table_exists(inc.con, "marts.repair_times"):
        medians = {r.get("component_class"): r for r in query_rows(inc.con, "SELECT * FROM marts.repair_times")}
    rep = inc.repairs[0]
    comp = rep.get("component_class")
    med = medians.get(comp) or {}
    state = rep.get("repair_state")
    parts = []
    source = repair_source_text(rep)
    if no_states:
        # Without node states nobody knows whether or when the nodes were drained: the repair time is an
        # estimate from the fallback marts.incident_repairs used, and says so.
        parts.append(f"{NOT_LOADED['slurm_events'].capitalize()}: "
                     + (f"repair time estimated from {source}, {span_hours(rep['hours_to_repair'])} after the first "
                        "evidence" if source and is_number(rep.get("hours_to_repair")) else
                        "the repair time is unknown")
                     + "; whether and when the nodes were drained is not known")
    elif is_number(rep.get("hours_to_detect")):
        parts.append(f"The nodes were drained {span_hours(rep['hours_to_detect'])} after the first event"
                     + (f" (median for {class_label(comp)}: {span_hours(med['mttd_hours_p50'])})"
                        if is_number(med.get("mttd_hours_p50")) else ""))
    else:
        # Repaired without a drain: Slurm kept the nodes in service (their recovery is said next).
        parts.append("No drain of the incident's nodes followed within 24 h"
                     + (": Slurm kept them in service" if state == "repaired"
                        else f" ({str(state or MISSING).replace('_', ' ')})"))
    if no_states:
        pass
    elif is_number(rep.get("hours_to_repair")):
        # No drain linked: the nodes never left service; the repair end is their recovery, said as such.
        parts.append((f"its nodes recovered {span_hours(rep['hours_to_repair'])} after the first evidence, by {source}"
                      if source else
                      f"every node was back in service {span_hours(rep['hours_to_repair'])} after the first evidence")
                     + (f" (median {span_hours(med['mttr_hours_p50'])}, p90 {span_hours(med.get('mttr_hours_p90'))})"
                        if is_number(med.get("mttr_hours_p50")) else ""))
    elif state == "ongoing":
        parts.append("still out of service at the last dump")
    if alert_delay is not None:
        parts.append(f"the first alert fired {fmt_span(alert_delay)} {'after' if alert_delay >= 0 else 'before'} the "
                     "first hardware event")
    elif inc.kind == "hw" and "alerts" in missing:
        parts.append(f"whether an alert fired is unknown ({NOT_LOADED['alerts']} were loaded)")
    elif inc.kind == "hw":
        parts.append("no alert fired for it")
    sec.lead = "; ".join(parts) + "."
    sec.items.append(Table(
        [Column("Hardware incident", nowrap=True), Column("First evidence (UTC)", nowrap=True),
         Column("Drained (UTC)", nowrap=True), Column("Back in service (UTC)", nowrap=True), Column("Detect", True),
         Column("Repair", True), Column("State", nowrap=True), Column("Drain reason")],
        [[Cell(str(x["incident_id"]), mono=True, title=component_label(x.get("component"))),
          Cell(at_text(x.get("first_evidence_ts") or x.get("incident_start_ts"))), Cell(at_text(x.get("drain_start_ts"))),
          Cell(at_text(x.get("back_in_service_ts"))), Cell(span_hours(x.get("hours_to_detect"))),
          Cell(span_hours(x.get("hours_to_repair"))), Cell(str(x.get("repair_state") or MISSING).replace("_", " ")),
          Cell(truncate(x.get("drain_reason"), 48), title=x.get("drain_reason"))] for x in inc.repairs],
        caption="marts.incident_repairs: the first drain/down of the incident's own nodes from 30 min before to 24 h "
                "after it. Detect: first evidence to drain; repair: first evidence to the last node back in service after that drain/down and any that followed it within 30 min."
                + (f" {NOT_LOADED['slurm_events'].capitalize()} was loaded, so there is no drain to link: the repair "
                   "is estimated (State) from recovery log lines, the end of failing health checks or the node "
                   "running a job again." if no_states else "")))
    seen = list(dict.fromkeys(x.get("component_class") for x in inc.repairs))
    rows = [[Cell(class_label(c)), Cell(span_hours(m.get("mttd_hours_p50"))), Cell(span_hours(m.get("mttr_hours_p50"))),
             Cell(span_hours(m.get("mttr_hours_p90"))), Cell(fmt_int(m.get("repaired")))]
            for c, m in ((c, medians.get(c)) for c in seen) if m]
    if rows:
        sec.items.append(Table([Column("Component class"), Column("Median detect", True),
                                Column("Median repair", True), Column("p90 repair", True), Column("Repairs", True)],
                               rows, caption="For comparison: marts.repair_times of the same component class "
                                             "(the one MTBF uses), whole record."))
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("repair", "Time to detect and repair", lambda con, inc: build(inc))
