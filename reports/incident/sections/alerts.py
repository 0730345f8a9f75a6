"""Incident retrospective section "Alerts" (``#alerts``).

Reads core.alerts, marts.hw_incidents_without_alert; formats, computes nothing."""

from __future__ import annotations

from gpusre.models.warehouse import table_exists
from gpusre.reports.incident.incident import Incident
from gpusre.reports.incident.terms import ALERT_COLOURS, alert_location, at_text, labels_text, root_alert, when_text
from gpusre.reports.kit.formatting import MISSING, fmt_int, fmt_span, nodes_text, plural, truncate
from gpusre.reports.kit.section import NO_DATA, Cell, Column, Section, SectionSpec, Table

_MAX_ALERT_ROWS = 40


# -- alerts ------------------------------------------------------------------------------------


def build(inc: Incident) -> Section:
    sec = Section("alerts", "Alerts")
    if not inc.has_alerts:
        sec.no_data = f"{NO_DATA}: core.alerts has not been built (no alert payloads in landing/alerts)."
        return sec
    if not inc.con.execute("SELECT count(*) > 0 FROM core.alerts").fetchone()[0]:
        sec.no_data = f"{NO_DATA}: core.alerts is empty (no alert payloads in landing/alerts)."
        return sec
    alerts = inc.alerts
    member = [a for a in alerts if a["in_incident"]]
    if not alerts:
        uncovered = False
        if inc.kind == "hw" and table_exists(inc.con, "marts.hw_incidents_without_alert"):
            uncovered = bool(inc.con.execute("SELECT count(*) FROM marts.hw_incidents_without_alert WHERE incident_id = ?",
                                             [inc.id]).fetchone()[0])
        sec.no_data = (f"No alert fired on {nodes_text(inc.nodes)} between {when_text(inc.w0)} and {when_text(inc.w1)}"
                       + ("; marts.hw_incidents_without_alert lists this incident: missing alert coverage."
                          if uncovered else "."))
        return sec
    rules = {a["alertname"] for a in member}
    firing = sum(1 for a in member if not a["ends_at"])
    root = root_alert(inc)
    sec.lead = (f"{plural(len(member), 'alert')} from {plural(len(rules), 'rule')} in "
                f"{plural(len(inc.alert_incidents), 'alert incident')}"
                + (f", root {root['alertname']} on {alert_location(root)}" if root else "")
                + (f", {fmt_int(firing)} still firing" if firing else "")
                + f"; {plural(len(alerts) - len(member), 'other alert')} on the same nodes in the window.")
    shown = sorted(alerts, key=lambda a: (not a["in_incident"], a["starts_at"]))[:_MAX_ALERT_ROWS]
    sec.items.append(Table(
        [Column("Start (UTC)", nowrap=True), Column("Alert"), Column("Node / target", nowrap=True),
         Column("Severity", nowrap=True), Column("Duration", True), Column("Role", nowrap=True), Column("Summary"),
         Column("Labels")],
        [[Cell(at_text(a["starts_at"])), Cell(truncate(a["alertname"], 32), title=a["alertname"]),
          Cell(truncate(alert_location(a), 24), mono=True, title=alert_location(a)), Cell(a["severity"] or MISSING),
          Cell(fmt_span((a["ends_at"] - a["starts_at"]).total_seconds()) if a["ends_at"] else "firing"),
          Cell("root" if a["is_root"] and a["in_incident"] else (a["level"] or "member") if a["in_incident"]
               else "other", swatch=ALERT_COLOURS["root" if a["is_root"] and a["in_incident"] else
                                                   "member" if a["in_incident"] else "context"]),
          Cell(truncate(a["summary"] or a["description"], 90),
               title=" — ".join(x for x in (a["summary"], a["description"]) if x) or None),
          Cell(truncate(labels_text(a["labels_map"]), 70), mono=True, title=labels_text(a["labels_map"]))]
         for a in shown],
        caption="The alert incident's alerts first (role: its level, root = the root-cause candidate), then other "
                "alerts that started on the same nodes in the window."
                + (f" First {_MAX_ALERT_ROWS} of {len(alerts)}." if len(alerts) > _MAX_ALERT_ROWS else ""),
    ))
    return sec


SECTION: SectionSpec[Incident] = SectionSpec("alerts", "Alerts", lambda con, inc: build(inc))
