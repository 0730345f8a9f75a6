"""Incident retrospective section "Summary" (``#summary``).

Reads the loaded incident; formats, computes nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import (
    NOT_LOADED,
    REPAIR_SOURCE_TEXT,
    UNKNOWN_NO_ACCOUNTING,
    as_utc,
    clock_text,
    evidence_count,
    evidence_words,
    incident_missing,
    killed_split,
    killed_text,
    nodes_phrase,
    operator_text,
    repair_end,
    root_alert,
    start_note,
    what_text,
    when_text,
)
from gpusre.reports.kit.formatting import (
    MISSING,
    fmt_int,
    fmt_span,
    gpuh,
    is_number,
    plural,
    shorten,
    span_hours,
    truncate,
)
from gpusre.reports.kit.labels import cause_label, incident_component
from gpusre.reports.kit.section import Section, SectionSpec


#: Characters of a card's value (two lines of the card's large type).
_CARD_VALUE_LEN = 44


def ongoing(inc: Incident) -> bool:
    """An alert incident with an alert still firing at the end of the alert data (the mart's
    ``ongoing``; a warehouse built before that column: an incident alert without an end)."""
    if inc.kind != "alert":
        return False
    flag = inc.row.get("ongoing")
    if flag is not None:
        return bool(flag)
    return any(a["in_incident"] and a["ends_at"] is None for a in inc.safe("alerts", []))


def _health_checks_only(r: dict[str, Any]) -> bool:
    """The incident rests on failing health-check lines alone (``marts.hw_incidents.evidence_kinds``)."""
    kinds = r.get("evidence_kinds") or []
    return bool(kinds) and set(kinds) == {"health_check"}


def _health_check_only_text(inc: Incident, first: datetime | None, last: datetime | None) -> str:
    """' It rests on health-check lines alone; marts.health_check_quality: check_fs_mount preceded a job failure
    after 0 of its 2 firings (precision 0.00). 1 job on its nodes ran through it and completed (1050).' —
    what a meeting needs to judge a false positive; '' for an incident with other evidence."""
    if inc.kind != "hw" or not _health_checks_only(inc.row):
        return ""
    checks = inc.safe("health_checks", [])
    quality = "; ".join(
        f"{c['check_name']} preceded a job failure after {fmt_int(c['preceded_job_failure'])} of its "
        f"{plural(c['firings'], 'firing')} (precision {c['precision']:.2f})" if is_number(c.get("precision")) else
        f"{c['check_name']}'s precision is {UNKNOWN_NO_ACCOUNTING}" for c in checks)
    text = (" It rests on health-check lines alone"
            + (f"; marts.health_check_quality: {quality}" if quality else "") + ".")
    if "sacct" in incident_missing(inc) or first is None or last is None:
        return text
    # The jobs that ran on its nodes through the failing checks and completed: the check may have cried wolf.
    anchor = set(inc.anchor_nodes)
    ran = sorted({str(j["job_id"]) for j in inc.safe("jobs", [])
                  if j["state"] == "COMPLETED" and j["start_ts"] and j["end_ts"] and j["start_ts"] <= last
                  and j["end_ts"] >= first and anchor & set(j["nodes"] or [])})
    return text + (f" {plural(len(ran), 'job')} on its {'node' if len(anchor) == 1 else 'nodes'} ran through it and "
                   f"completed ({truncate(', '.join(ran), 60)})." if ran else
                   f" No job on its {'node' if len(anchor) == 1 else 'nodes'} ran through it and completed.")


def build(inc: Incident) -> Section:
    sec = Section("summary", "Summary", template="cards")
    r = inc.row
    missing = incident_missing(inc)
    # Job impact is unknown without accounting: the mart's NULL (hardware incidents), or no sacct loaded at all.
    no_jobs = "sacct" in missing or (inc.kind == "hw" and r.get("affected_jobs") is None)
    no_states = "slurm_events" in missing
    dur = (inc.end - inc.start).total_seconds()
    # A hardware incident: its log evidence's first and last line (an operator's window is not evidence).
    first, last = inc.evidence_span(inc.row) if inc.kind == "hw" else (inc.start, inc.end)
    ev_dur = (last - first).total_seconds() if first is not None and last is not None else 0.0
    op = inc.operator_span(inc.row) if inc.kind == "hw" else None
    # The incident's start is marts.hw_incidents.start_ts, as the nightly and the SLO review show it: an
    # operator's window that starts before the log evidence is labelled so, with the first log line beside it.
    note = start_note({**inc.row, "first_evidence_ts": first}, clock_text) if inc.kind == "hw" else ""
    # An alert incident on no Slurm node (a storage server, a PDU) counts the nodes of the hardware
    # incidents it is about, and says so.
    shown_nodes, nodes_from_hw = inc.anchor_nodes, False
    if inc.kind == "alert" and not inc.anchor_nodes and inc.nodes:
        shown_nodes, nodes_from_hw = inc.nodes, True
    where = nodes_phrase(inc.anchor_nodes, 60) if inc.anchor_nodes else (
        str(root_alert(inc)["target"]) if inc.kind == "alert" and root_alert(inc) and root_alert(inc)["target"]
        else "no Slurm node")
    if inc.kind == "alert":
        jobs, lost = r.get("n_jobs_killed"), r.get("lost_gpu_hours")
        # The hardware incident the mart names (the root alert's), as the root-cause section does; a rack's
        # power loss links one per node: the others are counted, not listed.
        named = next((h for h in inc.hw_incidents if h["incident_id"] == r.get("hw_incident_id")),
                     inc.hw_incidents[0] if inc.hw_incidents else None)
        others = len(inc.hw_incidents) - 1
        hw = (f" (hardware incident {named['incident_id']}, {incident_component(named['component'], named.get('scope'))}"
              + (f", and {plural(others, 'other linked hardware incident')}" if others > 0 else "") + ")"
              if named else "")
        impact = (f"its job impact is {UNKNOWN_NO_ACCOUNTING}" if no_jobs else
                  f"it killed {killed_text(inc, jobs)} and lost {gpuh(lost)} GPU-hours")
        if ongoing(inc):
            # Still firing: no duration (the alerts have no end), the end of the alert data instead.
            firing = r.get("firing_alerts")
            firing = firing if firing is not None else sum(1 for a in inc.safe("alerts", [])
                                                           if a["in_incident"] and a["ends_at"] is None)
            span = (f"is ongoing since {when_text(inc.start)} (still firing at the end of the alert data, "
                    f"{when_text(inc.end)})" if inc.end > inc.start else
                    f"is ongoing since {when_text(inc.start)} (still firing at the end of the alert data)")
            sec.lead = (f"Alert incident {inc.id} on {where} {span}: {plural(r.get('n_alerts'), 'alert')} "
                        f"({fmt_int(firing)} still firing), root-cause candidate {what_text(inc)}{hw}; {impact}.")
        else:
            sec.lead = (f"Alert incident {inc.id} started {when_text(inc.start)} on {where} and lasted {fmt_span(dur)}: "
                        f"{plural(r.get('n_alerts'), 'alert')}, root-cause candidate {what_text(inc)}{hw}; {impact}.")
    else:
        jobs, lost = r.get("affected_jobs"), r.get("lost_gpu_hours")
        # The log evidence "spans" (its last line is no end of the outage), and the outage is stated once,
        # from the first evidence to the repair record's end (the duration the card and the repair section
        # show); the job-based recovery only without one.
        own = [x for x in inc.safe("repairs", []) if x.get("incident_id") == inc.id]
        rep0 = own[0] if own else None
        end = repair_end(rep0)
        at = f", at {when_text(end[0])}" if end else ""
        # The repair duration runs from the first log line (marts.incident_repairs.first_evidence_ts: the
        # start this sentence states), else from the incident's start — an operator's, when one labelled it
        # without log evidence: then said.
        t0 = as_utc(rep0.get("first_evidence_ts")) if rep0 else None
        since = f"the operator's start ({when_text(inc.start)})" if t0 is None and op else "the first evidence"
        # The outage comes first, named as such: from the first evidence to the end the repair was timed by
        # (the nodes back in service, the links' recovery lines); the failure lines' span follows, only as
        # that — "its log evidence spans 15 min" beside "back in service 30 min" read as a 15-min outage.
        if rep0 and is_number(rep0.get("hours_to_repair")) and no_states:
            # Without node states the repair end is an estimate: say from what, never "back in service".
            down = (f"{NOT_LOADED['slurm_events']}: repair time estimated from "
                    f"{REPAIR_SOURCE_TEXT.get(str(rep0.get('repair_source')), 'other evidence')}, "
                    f"{span_hours(rep0['hours_to_repair'])} after {since}{at}")
        elif end and is_number(rep0.get("hours_to_repair")) and rep0.get("repair_source") in REPAIR_SOURCE_TEXT:
            # No drain linked: the nodes never left service. The part was down (the links, the file system:
            # to their recovery), and the nodes stayed in service; an incident resting on failing health checks
            # alone was no outage at all: its check failed for that long.
            lasted = "its health check failed for" if _health_checks_only(r) else "it was down"
            stayed = "the node stayed in service" if len(inc.anchor_nodes) == 1 else "its nodes stayed in service"
            down = (f"{lasted} {span_hours(rep0['hours_to_repair'])}"
                    + (f" from {since}" if since != "the first evidence" or note else "")
                    + f", to {end[2]} at {when_text(end[0])}; no drain linked: {stayed}")
        elif rep0 and is_number(rep0.get("hours_to_repair")):
            down = f"it was down until every node was back in service {span_hours(rep0['hours_to_repair'])} after {since}{at}"
        else:
            down = ""
        # Without a repair record the job-based recovery, measured from the last evidence, follows it.
        after = (f"; the last of its nodes started a job that went on to complete {span_hours(r['hours_to_recovery'])} "
                 "after its last evidence" if not down and is_number(r.get("hours_to_recovery")) else "")
        # The log evidence's own first and last line; an operator's window (incidents.csv) is named as the
        # operator's, never as evidence (OPS-1180's 01:08 → 01:56 has no log line at either time).
        words = evidence_words(r)
        if first is None:
            evidence = f"it has no log evidence ({evidence_count(r)})"
        elif ev_dur > 0:
            evidence = f"its {words.lines} span {fmt_span(ev_dur)} ({evidence_count(r)}), the last at {when_text(last)}"
        else:
            evidence = f"its {words.evidence} is a single moment ({evidence_count(r)})"
        started = f"started {when_text(inc.start)}" + (note or (", its first log line" if op and first is not None
                                                                else ""))
        if op:
            started += f"; {operator_text(r)} is {when_text(op[0])} → {when_text(op[1])}"
        impact = (f"its job impact is {UNKNOWN_NO_ACCOUNTING}" if no_jobs else
                  f"it killed {killed_text(inc, jobs)} and lost {gpuh(lost)} GPU-hours")
        sec.lead = (f"Hardware incident {inc.id}, {what_text(inc)}, {started}; "
                    + (f"{down}; " if down else "") + f"{evidence}{after}; "
                    f"{impact}." + _health_check_only_text(inc, first, last))
    repairs = inc.safe("repairs", [])
    rep = repairs[0] if repairs else None
    counted = [j for j in inc.safe("failed_jobs", []) if j["counted"]]
    split = killed_split(inc)
    users = {j["user"] for j in counted if j["user"]}
    gpus = sum(int(j["n_gpus"] or 0) for j in counted)
    cards = [
        {"label": "Incident", "value": "Alert incident" if inc.kind == "alert" else "Hardware incident",
         "sub": inc.id, "tone": ""},
        {"label": "Started", "value": as_utc(inc.start).strftime("%m-%d %H:%M:%S"),  # type: ignore[union-attr]
         "sub": "UTC · ongoing, still firing" if ongoing(inc) else f"UTC · lasted {fmt_span(dur)}" if inc.kind == "alert"
         else f"UTC · {note.strip()[1:-1]}" if note
         else "UTC · no log evidence (operator's start)" if first is None
         else f"UTC · {evidence_words(r).lines} span {fmt_span(ev_dur)}" if ev_dur > 0
         else f"UTC · one moment of {evidence_words(r).evidence}",
         "tone": "bad" if ongoing(inc) else ""},
        {"label": "Nodes", "value": fmt_int(len(shown_nodes)),
         "sub": (f"of hardware incident {', '.join(inc.hw_incident_ids)}: " if nodes_from_hw else "")
         + nodes_phrase(shown_nodes, 34), "tone": ""},
        {"label": "Jobs killed", "value": "unknown", "sub": NOT_LOADED["sacct"], "tone": ""} if no_jobs else
        # A requeued run Slurm ran again is no killed job: the card's value counts jobs, the runs beside it.
        {"label": "Jobs killed", "value": fmt_int(split[0] if split else jobs or 0),
         "sub": (f"+ {plural(split[1], 'requeued run')} · " if split and split[1] else "")
         + f"{plural(len(users), 'user')} · {fmt_int(gpus)} GPUs", "tone": "bad" if jobs else ""},
        {"label": "Lost GPU-hours", "value": "unknown", "sub": NOT_LOADED["sacct"], "tone": ""} if no_jobs else
        {"label": "Lost GPU-hours", "value": gpuh(lost), "sub": "work since the last checkpoint + restart",
         "tone": "bad" if (lost or 0) > 0 else ""},
        {"label": "Time to repair", "value": span_hours(rep["hours_to_repair"]) if rep and is_number(rep.get("hours_to_repair"))
         else (str(rep["repair_state"]).replace("_", " ") if rep and rep.get("repair_state") else MISSING),
         "sub": f"detected after {span_hours(rep['hours_to_detect'])}" if rep and is_number(rep.get("hours_to_detect"))
         else (f"estimated: {NOT_LOADED['slurm_events']}" if no_states and rep and is_number(rep.get("hours_to_repair"))
               else NOT_LOADED["slurm_events"] if no_states else "no drain linked"), "tone": ""},
        # The card's value wraps over two lines: the cause code moves beneath, and only prose is dropped
        # to fit, never the switch or node names (shorten).
        {"label": "Root cause", "value": shorten(what_text(inc, with_cause=False), _CARD_VALUE_LEN),
         "sub": truncate(r.get("root_cause_reason") or MISSING, 60) if inc.kind == "alert" else
         " · ".join(str(x) for x in (r.get("root_cause"), cause_label(r.get("cause_class"))) if x) or MISSING,
         "tone": ""},
        {"label": "Alerts", "value": "unknown", "sub": NOT_LOADED["alerts"], "tone": ""} if "alerts" in missing else
        {"label": "Alerts", "value": fmt_int(sum(1 for a in inc.safe("alerts", []) if a["in_incident"])),
         "sub": f"{plural(len(inc.alert_incidents), 'alert incident')}", "tone": ""},
    ]
    sec.cards = cards
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("summary", "Summary", lambda con, inc: build(inc))
