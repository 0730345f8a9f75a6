"""The incident retrospective: one alert or hardware incident's timeline, root-cause evidence, blast
radius, repair, alerts and similar past incidents, built from the section list
:data:`~gpusre.reports.incident.report.INCIDENT_SECTIONS`."""

from gpusre.reports.incident.incident import UnknownIncidentError, find_incident, recent_incident_ids
from gpusre.reports.incident.report import INCIDENT_SECTIONS, build_incident_context, render_incident_report

__all__ = ["INCIDENT_SECTIONS", "UnknownIncidentError", "build_incident_context", "find_incident",
           "recent_incident_ids", "render_incident_report"]
