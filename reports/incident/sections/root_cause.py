"""Incident retrospective section "Root-cause candidate and evidence" (``#root-cause``).

Reads core.alerts, core.node_events, marts.alert_incident_members, marts.alert_incidents, marts.hw_incident_members, marts.hw_incidents; formats, computes nothing."""

from __future__ import annotations

from gpusre.models.failures.hw_incidents import gpu_id_label
from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import (
    alert_location,
    at_text,
    clock_text,
    event_label,
    evidence_count,
    labels_text,
    lane_keys,
    root_alert,
    start_note,
    what_text,
    when_text,
)
from gpusre.reports.kit.formatting import MISSING, fmt_int, nodes_text, plural, sentence_case, truncate
from gpusre.reports.kit.labels import cause_label, incident_action, incident_component
from gpusre.reports.kit.section import Cell, Column, Section, SectionSpec, Table

_MAX_EVENT_ROWS = 25


# -- root cause --------------------------------------------------------------------------------


def build(inc: Incident) -> Section:
    sec = Section("root-cause", "Root-cause candidate and evidence")
    r = inc.row
    kv: list[tuple[str, str]] = []
    if inc.kind == "alert":
        root = root_alert(inc)
        sec.lead = (f"The root-cause candidate is {r.get('root_cause_candidate') or MISSING}: "
                    f"{r.get('root_cause_reason') or 'no reason recorded'} (scope {r.get('scope') or MISSING}, "
                    f"level {r.get('root_level') or MISSING}).")
        kv += [("Root-cause candidate", str(r.get("root_cause_candidate") or MISSING)),
               ("Why", str(r.get("root_cause_reason") or MISSING)),
               ("Scope / level", f"{r.get('scope') or MISSING} / {r.get('root_level') or MISSING}")]
        if root:
            kv += [("Root alert", f"{root['alertname']} on {alert_location(root)} from {when_text(root['starts_at'])}"
                                  + (f" to {when_text(root['ends_at'])}" if root["ends_at"] else " (still firing)")),
                   ("Root alert summary", str(root["summary"] or MISSING)),
                   ("Root alert description", str(root["description"] or MISSING)),
                   ("Root alert labels", labels_text(root["labels_map"]) or MISSING)]
        levels: dict[str, int] = {}
        for a in inc.safe("alerts", []):
            if a["in_incident"]:
                levels[a["level"] or "other"] = levels.get(a["level"] or "other", 0) + 1
        if levels:
            kv.append(("Alerts by level", ", ".join(f"{k} {v}" for k, v in sorted(levels.items(), key=lambda x: -x[1]))))
        if not inc.hw_incidents:
            kv.append(("Hardware incident", "none matched (no node-log failure on its nodes in "
                                            "[start − 10 min, end + 30 min])"))
    else:
        fe = inc.safe("first_events", {}).get(inc.id)
        sec.lead = (f"{sentence_case(what_text(inc))}: {incident_component(r.get('component'), r.get('scope'))}, "
                    f"{cause_label(r.get('cause_class'))}, "
                    f"severity {r.get('severity') or MISSING}"
                    + (f"; first seen {when_text(fe['ts'])} as {event_label(fe['kind'], fe['code'])} on {fe['node']}"
                       if fe else "")
                    + f"; {evidence_count(r)} on {plural(len(inc.anchor_nodes), 'node')}.")
        kv += [("Component", f"{incident_component(r.get('component'), r.get('scope'))} ({r.get('component') or MISSING})"),
               ("Root cause", str(r.get("root_cause") or MISSING)
                + (" (operator label)" if r.get("label_source") == "operator" else "")),
               ("Cause class / severity", f"{cause_label(r.get('cause_class'))} / {r.get('severity') or MISSING}"),
               ("Recommended action", incident_action(r.get("action"), r.get("component"), r.get("scope"))),
               ("Scope", str(r.get("scope") or MISSING) + (f" (leaf switch {r['leaf_switch']})" if r.get("leaf_switch")
                                                           else "")),
               ("Faulty GPUs (node PCI)", ", ".join(gpu_id_label(g) for g in (r.get("gpus") or [])) or MISSING)]
        if fe:
            kv.append(("First event", f"{when_text(fe['ts'])} on {fe['node']}: {event_label(fe['kind'], fe['code'])} — "
                                      f"{fe.get('message') or MISSING}"))
        if r.get("notes"):
            kv.append(("Operator notes", str(r["notes"])))
    for h in (inc.hw_incidents if inc.kind == "alert" else []):
        fe = inc.safe("first_events", {}).get(str(h["incident_id"]))
        kv.append((f"Hardware incident {h['incident_id']}",
                   f"{incident_component(h.get('component'), h.get('scope'))}, root cause {h.get('root_cause') or MISSING}, "
                   # its start as every report shows it: an operator's earlier one labelled, the first line beside
                   f"started {when_text(h.get('start_ts'))}"
                   f"{start_note({**h, 'first_evidence_ts': inc.evidence_span(h)[0]}, clock_text)}, "
                   f"{evidence_count(h)}"
                   + (f"; first event {event_label(fe['kind'], fe['code'])} on {fe['node']}: {fe.get('message')}"
                      if fe else "")))
    for a in (inc.alert_incidents if inc.kind == "hw" else []):
        kv.append((f"Alert incident {a['incident_id']}",
                   f"{plural(a.get('n_alerts'), 'alert')} from {when_text(a.get('start_ts'))}; root-cause candidate "
                   f"{a.get('root_cause_candidate') or MISSING} ({a.get('root_cause_reason') or MISSING})"))
    if inc.kind == "hw" and not inc.alert_incidents:
        kv.append(("Alert incident", "none: no alert matched this hardware incident"))
    sec.items.append(Table([Column("Evidence", nowrap=True), Column("Value")],
                           [[Cell(k), Cell(truncate(v, 300), title=v)] for k, v in kv],
                           caption="From marts.alert_incidents, marts.alert_incident_members, core.alerts, "
                                   "marts.hw_incidents and core.node_events."))
    # The events that make up the hardware incident(s), grouped.
    evs = [e for e in inc.events if e["member"]] or inc.events
    if evs:
        lanes = lane_keys(evs, lambda e: event_label(e["kind"], e["code"]), lambda e: e["node"] or "?")
        groups = {}
        for rows in lanes.values():
            nodes_ = sorted({e["node"] or "?" for e in rows})
            groups[(event_label(rows[0]["kind"], rows[0]["code"]), nodes_text(nodes_))] = rows
        ordered = sorted(groups.items(), key=lambda kv_: kv_[1][0]["ts"])
        member = evs is not inc.events
        sec.items.append(Table(
            [Column("Event"), Column("Nodes", nowrap=True), Column("Count", True), Column("First (UTC)", nowrap=True),
             Column("Last (UTC)", nowrap=True), Column("Class"), Column("Example message")],
            [[Cell(label), Cell(truncate(node, 24), mono=True, title=node), Cell(fmt_int(len(rows))),
              Cell(at_text(rows[0]["ts"])),
              Cell(at_text(rows[-1]["ts"])), Cell(cause_label(rows[0]["cause_class"])),
              Cell(truncate(rows[0]["message"], 110), mono=True, title=rows[0]["message"])]
             for (label, node), rows in ordered[:_MAX_EVENT_ROWS]],
            caption=("The hardware incident's member events (marts.hw_incident_members)" if member else
                     "Node events on the affected nodes in the window (no hardware incident linked)")
                    + (f"; first {_MAX_EVENT_ROWS} of {len(ordered)} groups." if len(ordered) > _MAX_EVENT_ROWS else "."),
        ))
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("root-cause", "Root-cause candidate and evidence", lambda con, inc: build(inc))
