"""Incident retrospective section "Timeline" (``#timeline``).

Reads the loaded incident; formats, computes nothing."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from gpusre.models.failures.health_checks import CHECK_NAME_PATTERN
from gpusre.models.failures.hw_incidents import recovery_action_codes
from gpusre.models.vocabulary import KILLED_STATES, RESTART_STATES
from gpusre.reports.incident.incident import MARGIN_MIN, Incident
from gpusre.reports.incident.terms import (
    ALERT_COLOURS,
    EVENT_COLOURS,
    NODE_STATE_COLOURS,
    NOT_LOADED,
    WINDOW_COLOUR,
    alert_location,
    as_utc,
    at_text,
    event_label,
    evidence_words,
    incident_missing,
    lane_keys,
    nodes_phrase,
    offset_text,
    operator_text,
    repair_end,
    what_text,
    when_text,
)
from gpusre.reports.kit import charts
from gpusre.reports.kit.formatting import MISSING, fmt_int, fmt_span, nodes_text, plural, truncate
from gpusre.reports.kit.labels import action_label, incident_component
from gpusre.reports.kit.render import svg
from gpusre.reports.kit.section import NO_DATA, Cell, Chart, Column, Section, SectionSpec, Table

#: Incidents longer than this get a second timeline zoomed on their onset.
ZOOM_AFTER = timedelta(hours=6)

ZOOM_SPAN = timedelta(hours=1)

_MAX_ALERT_LANES = 12

_MAX_EVENT_LANES = 10

_MAX_JOB_LANES = 10

_MAX_STATE_LANES = 8

#: Characters of a node-state lane's hostlist label.
_STATE_LANE_LABEL = 30

_MAX_MOMENTS = 24

#: How the key moments of an operator's window begin (never the first sign of the incident).
_OPERATOR_MOMENTS = ("start of ", "end of ")

#: Rows of a table the Markdown summary shows (``templates/base.md.j2``: the rest is "in the HTML report").
_MD_ROWS = 10

#: Key moments kept apart, in a table of their own, when there are more than the Markdown shows: the last
#: ones (the recovery, the repair, the last alert resolved) are what a postmortem pastes.
_TAIL_MOMENTS = 4


def _timeline_lanes(inc: Incident) -> tuple[list[tuple[str, str, list[charts.TimelineItem]]], list[str]]:
    lanes: list[tuple[str, str, list[charts.TimelineItem]]] = []
    notes: list[str] = []

    def cap(group: str, items: list[tuple[str, list[charts.TimelineItem]]], limit: int, what: str) -> None:
        for label, its in items[:limit]:
            lanes.append((group, label, its))
        if len(items) > limit:
            notes.append(f"{len(items) - limit} more {what} lanes are not drawn.")

    # Alerts: the incident's own first (root on top), then other alerts on the nodes.
    alerts = inc.safe("alerts", [])
    if alerts:
        grouped = lane_keys(alerts, lambda a: a["alertname"] or "(no alertname)", alert_location)
        order = sorted(grouped.items(), key=lambda kv: (not any(a["is_root"] and a["in_incident"] for a in kv[1]),
                                                        not any(a["in_incident"] for a in kv[1]),
                                                        min(a["starts_at"] for a in kv[1])))
        items = []
        for label, rows in order:
            its: list[charts.TimelineItem] = []
            for a in rows:
                colour = ALERT_COLOURS["root" if a["is_root"] and a["in_incident"] else
                                        "member" if a["in_incident"] else "context"]
                its.append(("bar", a["starts_at"], a["ends_at"], colour, ""))
                its.append(("point", a["starts_at"], None, colour, "o"))
            items.append((label, its))
        cap("Alerts", items, _MAX_ALERT_LANES, "alert")
    events = inc.safe("events", [])
    if events:
        grouped = lane_keys(events, lambda e: event_label(e["kind"], e["code"]), lambda e: e["node"] or "?")
        order = sorted(grouped.items(), key=lambda kv: (not any(e["member"] for e in kv[1]),
                                                        min(e["ts"] for e in kv[1])))
        items = [(label, [("point", e["ts"], None, EVENT_COLOURS.get(e["cause_class"] or "", "#78909c"),
                           "D" if e["member"] else "o") for e in rows]) for label, rows in order]
        cap("Node events", items, _MAX_EVENT_LANES, "node-event")
    jobs = inc.safe("jobs", [])
    if jobs:
        counted = {j["job_id"] for j in inc.safe("failed_jobs", []) if j["counted"]}
        lo, hi = inc.job_window

        def rank(j: dict[str, Any]) -> tuple[Any, ...]:
            ended_in = j["end_ts"] is not None and lo <= j["end_ts"] <= hi
            return (j["job_id"] not in counted or not j["is_latest"],
                    not (j["state"] in KILLED_STATES or j["state"] in RESTART_STATES) or not ended_in,
                    -(j["n_gpus"] or 0), j["start_ts"] or inc.t0)

        items = []
        for j in sorted(jobs, key=rank):
            colour = charts.state_colour(j["state"] or "")
            its: list[charts.TimelineItem] = [("bar", j["start_ts"], j["end_ts"], colour, "")]
            if j["start_ts"] and inc.w0 <= j["start_ts"]:
                its.append(("point", j["start_ts"], None, "#263238", "|"))
            if j["end_ts"] and j["state"] not in ("COMPLETED", "RUNNING", "PENDING"):
                its.append(("point", j["end_ts"], None, "#263238" if j["job_id"] in counted else colour, "x"))
            inst = f"#{j['instance_no']} " if (j["instance_no"] or 1) > 1 or not j["is_latest"] else ""
            items.append((f"job {j['job_id']} {inst}{(j['state'] or '?')} · {fmt_int(j['n_gpus'])} GPUs", its))
        cap("Jobs on these nodes", items, _MAX_JOB_LANES, "job")
    states = inc.safe("node_states", [])
    if states:
        items = [(f"{nodes_phrase(nodes, _STATE_LANE_LABEL)} · {', '.join(sorted({s['state'] or '?' for s in rows}))}",
                  [("bar", s["start_ts"], s["end_ts"], NODE_STATE_COLOURS.get(s["availability_class"] or "unknown",
                                                                           "#78909c"), "") for s in rows])
                 for nodes, rows in _same_state_lanes(states)]
        cap("Node drains / downs", items, _MAX_STATE_LANES, "node-state")
    return lanes, notes


def _state_key(s: dict[str, Any]) -> tuple[Any, ...]:
    return (s["state"], s.get("reason"), s["start_ts"], s["end_ts"], s.get("availability_class"))


def _same_state_lanes(states: list[dict[str, Any]]) -> list[tuple[list[str], list[dict[str, Any]]]]:
    """Node-state lanes, one per group of nodes with the very same drains/downs (state, reason, start and
    end): a leaf switch drains its 16 nodes at once, one lane ``gpu[0065-0080] · DRAIN``, not 16 identical
    lanes of which 8 are left out. ``(nodes, the first node's rows)``, earliest first."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for s in states:
        by_node.setdefault(s["node"], []).append(s)
    groups: dict[tuple[Any, ...], tuple[list[str], list[dict[str, Any]]]] = {}
    for node, rows in sorted(by_node.items()):
        rows = sorted(rows, key=lambda s: (s["start_ts"], s["end_ts"] is None, s["end_ts"] or s["start_ts"]))
        groups.setdefault(tuple(_state_key(s) for s in rows), ([], rows))[0].append(node)
    return sorted(groups.values(), key=lambda g: (min(s["start_ts"] for s in g[1]), g[0][0]))


def _moments(inc: Incident) -> list[tuple[datetime, str]]:
    out: list[tuple[datetime, str]] = []
    first_events = inc.safe("first_events", {})
    for hid, e in first_events.items():
        out.append((as_utc(e["ts"]), f"first event of hardware incident {hid}: {event_label(e['kind'], e['code'])} on "
                                   f"{e['node']} — {truncate(e.get('message'), 120)}"))
    # The driver's recovery action (Xid 154, a member of its GPU's incident): what the GPU needs now, often the
    # incident's recommended action.
    for e in inc.safe("events", []):
        if e["member"] and e["kind"] == "xid" and e["code"] in recovery_action_codes():
            out.append((e["ts"], f"{event_label(e['kind'], e['code'])} on {e['node']} (hardware incident "
                                 f"{e['hw_incident']}): the driver asks to {action_label(e['action']).lower()} — "
                                 f"{truncate(e.get('message'), 100)}"))
    for h in inc.hw_incidents:
        first, last = inc.evidence_span(h)
        if h["incident_id"] not in first_events and first is not None:
            out.append((first, f"hardware incident {h['incident_id']} starts "
                               f"({incident_component(h['component'], h.get('scope'))})"))
        members = [e for e in inc.safe("events", []) if e["hw_incident"] == h["incident_id"]]
        # Detection: the first failing health check (NHC), when the incident began with other evidence.
        check = next((e for e in members if e["kind"] == "health_check"), None)
        if check is not None and check["ts"] != first:
            out.append((check["ts"], f"first failing health check of hardware incident {h['incident_id']} (detection): "
                                      f"{_check_text(check)} — {truncate(check.get('message'), 100)}"))
        if first is not None and last is not None and last != first:
            at_last = next((e for e in reversed(members) if e["ts"] == last), None)
            what = (f": {_check_text(at_last)}" if at_last and at_last["kind"] == "health_check" else
                    f": {event_label(at_last['kind'], at_last['code'])} on {at_last['node']}" if at_last else "")
            out.append((last, f"last evidence of hardware incident {h['incident_id']} (its last {evidence_words(h).line}{what})"))
        # The operator's times are the operator's (incidents.csv), never a log line: said as such.
        op = inc.operator_span(h)
        if op is not None:
            out.append((op[0], f"{_OPERATOR_MOMENTS[0]}{operator_text(h)} for hardware incident {h['incident_id']}"))
            if op[1] != op[0]:
                out.append((op[1], f"{_OPERATOR_MOMENTS[1]}{operator_text(h)} for hardware incident {h['incident_id']}"))
    seen_incidents: set[str] = set()
    alerts = inc.safe("alerts", [])
    for a in alerts:
        if not a["in_incident"]:
            continue
        if a["alert_incident"] not in seen_incidents:
            seen_incidents.add(a["alert_incident"])
            out.append((a["starts_at"], f"first alert of {a['alert_incident']}: {a['alertname']} on {alert_location(a)} — "
                                        f"{truncate(a['summary'], 100)}"))
        if a["is_root"] and a["alert_incident"] == inc.id and not out[-1][1].startswith(f"first alert of {inc.id}: "
                                                                                          f"{a['alertname']} on {alert_location(a)}"):
            out.append((a["starts_at"], f"root-cause alert {a['alertname']} on {alert_location(a)} fires"))
    member_alerts = [a for a in alerts if a["in_incident"]]
    if member_alerts and all(a["ends_at"] for a in member_alerts):
        last = max(member_alerts, key=lambda a: a["ends_at"])
        out.append((last["ends_at"], f"last alert resolved ({last['alertname']} on {alert_location(last)})"))
    elif member_alerts:
        # An ongoing incident: its alerts are still firing when the alert data ends (the mart's end_ts).
        firing = sum(1 for a in member_alerts if not a["ends_at"])
        last_start = max(a["starts_at"] for a in member_alerts)
        as_of = inc.end if inc.kind == "alert" and inc.row.get("ongoing") and inc.end >= last_start else None
        out.append((as_of or last_start,
                    f"end of the alert data: {firing} of the incident's alerts still firing (ongoing)" if as_of else
                    f"{firing} of the incident's alerts still firing"))
    for j in inc.safe("failed_jobs", []):
        if j["instance_no"] and j["end_ts"]:
            out.append((j["end_ts"], f"job {j['job_id']} instance #{j['instance_no']} ({truncate(j['name'], 40)}, "
                                     f"{fmt_int(j['n_gpus'])} GPUs) interrupted: {j['state']}"))
        elif j["counted"] and j["end_ts"]:
            out.append((j["end_ts"], f"job {j['job_id']} ({truncate(j['name'], 40)}, {j['user'] or MISSING}, "
                                     f"{fmt_int(j['n_gpus'])} GPUs) ends {j['state']}"))
    # Nodes drained at the same moment for the same reason are one moment, named by their hostlist.
    drained: dict[tuple[Any, ...], list[str]] = {}
    for s in inc.safe("node_states", []):
        if inc.w0 <= s["start_ts"] <= inc.w1:
            drained.setdefault((s["start_ts"], s["state"], s.get("reason")), []).append(s["node"])
    for (start, state, reason), nodes in drained.items():
        out.append((start, f"{nodes_phrase(nodes, 60)} {state or '?'}: {truncate(reason, 100)}"))
    if inc.back_in_service:
        out.append((inc.back_in_service, "last linked node back in service"))
    repairs = _repairs_without_drain(inc)
    for ts, text in repairs:
        out.append((ts, text))
    out += _recovery_moments(inc, {ts for ts, _ in repairs})
    out.sort(key=lambda m: m[0])
    return out


def _check_text(e: dict[str, Any]) -> str:
    """'NHC check_nv_healthmon on gpu005': a failing health-check line named by its check (the name as
    marts.health_check_quality extracts it)."""
    found = re.search(CHECK_NAME_PATTERN, e.get("message") or "")
    return f"NHC {found.group(1) if found else 'health check'} on {e['node']}"


def _recovery_moments(inc: Incident, repair_ends: set[datetime]) -> list[tuple[datetime, str]]:
    """The recovery lines the nodes logged (:attr:`Incident.recovery_lines`: a reboot, links back ACTIVE, a
    passing health check), one moment per kind at its first line, its nodes by hostlist: how the incident was
    detected over, named by what came back. A kind whose last line is a repair end already shown (a
    repair timed by it, :func:`_repairs_without_drain`) is that moment."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in inc.safe("recovery_lines", []):
        by_kind.setdefault(r["kind"], []).append(r)
    out = []
    for kind, rows in by_kind.items():
        t0, t1 = min(r["ts"] for r in rows), max(r["ts"] for r in rows)
        if t1 in repair_ends:
            continue
        nodes = sorted({r["node"] for r in rows})
        until = f", to {as_utc(t1).strftime('%H:%M:%S')}" if t1 != t0 else ""
        out.append((t0, f"recovery: {event_label(kind, None)} on {nodes_phrase(nodes, 60)}"
                        + (f" ({plural(len(nodes), 'node')}{until})" if len(nodes) > 1 else "")
                        + f" — {truncate(rows[0].get('message'), 100)}"))
    return out


def _repairs_without_drain(inc: Incident) -> list[tuple[datetime, str]]:
    """The repair ends of linked hardware incidents whose nodes were not drained (marts.incident_repairs
    ``repaired_ts`` with another ``repair_source``: links back ACTIVE, a passing health check, ...); a drained
    incident's end is the "last linked node back in service" moment."""
    out = []
    for rep in inc.safe("repairs", []):
        end = repair_end(rep)
        if end and rep.get("repair_source") != "node_states":
            out.append((end[0], f"{end[1]}: hardware incident {rep['incident_id']} repaired"))
    return out


def build(inc: Incident) -> Section:
    sec = Section("timeline", "Timeline")
    lanes, notes = _timeline_lanes(inc)
    moments = _moments(inc)
    if not lanes and not moments:
        sec.no_data = (f"{NO_DATA}: no alert, node event, job or node state on {nodes_text(inc.nodes)} between "
                       f"{when_text(inc.w0)} and {when_text(inc.w1)}.")
        return sec
    n_alerts = sum(1 for a in inc.safe("alerts", []) if a["in_incident"])
    n_events = len(inc.safe("events", []))
    n_jobs = len({j["job_id"] for j in inc.safe("jobs", [])})
    n_drains = sum(1 for s in inc.safe("node_states", []) if inc.w0 <= s["start_ts"] <= inc.w1)
    # It began with the first sign the cluster gave, not with an operator's start (incidents.csv).
    first = next((m for m in moments if not (m[1].startswith(_OPERATOR_MOMENTS) and "the operator's window" in m[1])),
                 moments[0] if moments else None)
    # A source never loaded is named, not counted: "0 jobs running" would claim the nodes were idle.
    missing = incident_missing(inc)
    kinds = (("alerts", "alerts", plural(n_alerts, "incident alert")),
             ("syslog", "node events", plural(n_events, "node event")),
             ("sacct", "jobs running", f"{plural(n_jobs, 'job')} running"),
             ("slurm_events", "drains", plural(n_drains, "drain/down")))
    seen = [text for k, _, text in kinds if k not in missing]
    unknown = [f"{what}: unknown, {NOT_LOADED[k]}" for k, what, _ in kinds if k in missing]
    saw = (", ".join(seen[:-1]) + " and " + seen[-1]) if len(seen) > 1 else (seen[0] if seen else "nothing loaded")
    take = (f"Between {when_text(inc.w0)} and {when_text(inc.w1)} ({fmt_span((inc.w1 - inc.w0).total_seconds())}) the "
            f"{plural(len(inc.nodes), 'affected node')} saw {saw}" + (f" ({'; '.join(unknown)})" if unknown else "")
            + (f"; it began with the {first[1].split(':', 1)[0]} at {as_utc(first[0]).strftime('%H:%M:%S')}." if first
               else "."))
    sec.lead = take
    spans = [(inc.start, inc.end, WINDOW_COLOUR,
              "incident window (ongoing: to the end of the alert data)" if inc.row.get("ongoing") else "incident window")]
    marks = []
    if inc.drain_start and inc.w0 <= inc.drain_start <= inc.w1:
        marks.append((inc.drain_start, "#6d1b1b", "drained"))
    if inc.back_in_service and inc.w0 <= inc.back_in_service <= inc.w1:
        marks.append((inc.back_in_service, "#2e7d32", "back in service"))
    for ts, text in _repairs_without_drain(inc):
        if inc.w0 <= ts <= inc.w1:
            marks.append((ts, "#2e7d32", text.split(":", 1)[0]))
    legend = [("incident alert (root: dark red)", ALERT_COLOURS["member"], "bar"),
              ("other alert on these nodes", ALERT_COLOURS["context"], "bar"),
              ("incident event", "#c62828", "D"), ("job failed", "#263238", "x"),
              ("drain/down (hardware)", NODE_STATE_COLOURS["hardware"], "bar")]
    if lanes:
        title = f"Incident {inc.id}: {what_text(inc)} (UTC)"
        sec.items.append(Chart(svg(charts.incident_timeline_chart(
            lanes, (inc.w0, inc.w1), title, spans=spans, marks=marks, legend=legend)), take))
        if inc.w1 - inc.w0 > ZOOM_AFTER or (inc.end - inc.start) < (inc.w1 - inc.w0) * 0.05:
            z0, z1 = inc.t0 - MARGIN_MIN, inc.t0 + ZOOM_SPAN
            in_zoom = [m for m in moments if z0 <= m[0] <= z1]
            ztake = (f"The first hour: {plural(len(in_zoom), 'key moment')} between {as_utc(z0).strftime('%H:%M')} and "
                     f"{as_utc(z1).strftime('%H:%M')} UTC.")
            zmarks = [m for m in marks if z0 <= m[0] <= z1]
            sec.items.append(Chart(svg(charts.incident_timeline_chart(
                lanes, (z0, z1), f"Onset of {inc.id}, first hour (UTC)", spans=spans, marks=zmarks, legend=legend)),
                ztake))
    if moments:
        columns = [Column("Time (UTC)", nowrap=True), Column("From start", True), Column("What happened")]

        def rows(part: list[tuple[datetime, str]]) -> list[list[Cell]]:
            return [[Cell(at_text(t)), Cell(offset_text(t, inc.t0), mono=True), Cell(truncate(text, 180), title=text)]
                    for t, text in part]

        caption = f"Key moments, offsets from the first sign of the incident ({when_text(inc.t0)})."
        if len(moments) <= _MD_ROWS:
            sec.items.append(Table(columns, rows(moments), caption=caption))
        else:
            # Onset and end in two tables: the Markdown cuts a long table after its first rows, and the
            # recovery is what a postmortem needs most.
            head = moments[:min(len(moments) - _TAIL_MOMENTS, _MAX_MOMENTS - _TAIL_MOMENTS)]
            tail = moments[-_TAIL_MOMENTS:]
            skipped = len(moments) - len(head) - len(tail)
            sec.items.append(Table(columns, rows(head), caption=caption + (
                f" The first {len(head)} of {len(moments)}; {skipped} more before the last {len(tail)}."
                if skipped else f" The first {len(head)} of {len(moments)}; the last {len(tail)} follow.")))
            sec.items.append(Table(columns, rows(tail),
                                   caption=f"Key moments, continued: the last {len(tail)}, to the recovery."))
    sec.notes = notes + [f"Not drawn: {name.replace('_', ' ')} could not be read ({err})."
                         for name, err in inc.failed.items()]
    if inc.back_in_service and inc.back_in_service > inc.w1:
        # The time, not another duration: the repair section states the one repair duration.
        sec.notes.append(f"The nodes came back in service at {when_text(inc.back_in_service)}, after the right "
                         "edge of the chart (see Time to detect and repair).")
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("timeline", "Timeline", lambda con, inc: build(inc))
