"""The incident retrospective as an ordered list of sections about one incident, and its entry points.

Adding a section: write ``sections/<name>.py`` with ``build(inc) -> Section`` and
``SECTION = SectionSpec(key, title, lambda con, inc: build(inc))``, then add it to :data:`INCIDENT_SECTIONS`.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb

from gpusre.reports.coverage import coverage_warnings
from gpusre.reports.incident.incident import Incident, find_incident
from gpusre.reports.incident.sections import alerts, blast_radius, repair, root_cause, similar, summary, timeline
from gpusre.reports.incident.terms import (
    UNKNOWN_NO_ACCOUNTING,
    as_utc,
    clock_text,
    evidence_words,
    incident_missing,
    operator_text,
    repair_end,
    repair_source_text,
    start_note,
    what_text,
    when_text,
)
from gpusre.reports.kit import zone
from gpusre.reports.kit.formatting import MISSING, nodes_text, truncate
from gpusre.reports.kit.render import write_report
from gpusre.reports.kit.section import ReportPaths, SectionSpec, build_sections

log = logging.getLogger(__name__)


def _file_stem(incident_id: str) -> str:
    return "incident-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", incident_id).strip("._") or "unnamed")


#: The retrospective, in reading order.
INCIDENT_SECTIONS: tuple[SectionSpec[Incident], ...] = (
    summary.SECTION,
    timeline.SECTION,
    root_cause.SECTION,
    blast_radius.SECTION,
    repair.SECTION,
    alerts.SECTION,
    similar.SECTION,
)


def _incident_warnings(con: duckdb.DuckDBPyConnection, inc: Incident) -> list[str]:
    """The data warnings of the nightly report (a source never loaded, refused files, a source ending or
    missing days inside the incident's window: ``reports/coverage.py``) plus what a missing source means
    for this incident: unknown job impact, an estimated repair time."""
    try:
        warnings = coverage_warnings(con, as_utc(inc.w0).date(), as_utc(inc.w1).date())
    except duckdb.Error as exc:
        warnings = [f"Input coverage could not be checked: {truncate(exc, 200)}"]
    missing = incident_missing(inc)
    if "sacct" in missing:
        warnings.append(f"Job impact {UNKNOWN_NO_ACCOUNTING} — which jobs ran on the incident's nodes, which it "
                        "killed and the GPU-hours they lost are not known (not 0).")
    if "slurm_events" in missing and inc.hw_incidents:
        sources = sorted({repair_source_text(r) or "" for r in inc.safe("repairs", [])} - {""})
        warnings.append("No node-state history (Slurm sacctmgr events) was loaded: whether and when the incident's "
                        "nodes were drained is not known, and its repair time is "
                        + (f"estimated from {' and '.join(sources)}." if sources else "unknown."))
    return warnings


def _span_text(inc: Incident) -> str:
    """The header's time span. An alert incident: its start → end. A hardware incident: its log evidence,
    first → last line ('log evidence A → B'; ``end_ts`` is no end of the outage), after its start when an
    operator's window begins it before the first line ('started A (operator's window; first log line B)'), an
    operator's window (incidents.csv) labelled as the operator's, then the repair end when one is known ('· links back ACTIVE
    C', from marts.incident_repairs)."""
    if inc.kind != "hw":
        return f"{when_text(inc.start)} → {when_text(inc.end)}"
    first, last = inc.evidence_span(inc.row)
    parts = []
    # An operator's window that starts before the log evidence is the incident's start (marts.hw_incidents
    # .start_ts): said first, with the one label the nightly and the SLO review give it.
    note = start_note({**inc.row, "first_evidence_ts": first}, clock_text)
    if note:
        parts.append(f"started {when_text(inc.start)}{note}")
    if first is not None:
        words = evidence_words(inc.row).evidence
        parts.append(f"{words} {when_text(first)} → {when_text(last)}" if last and last > first else
                     f"{words} at {when_text(first)}")
    op = inc.operator_span(inc.row)
    if op is not None:
        parts.append(f"{operator_text(inc.row)} {when_text(op[0])} → {when_text(op[1])}")
    own = [r for r in inc.safe("repairs", []) if r.get("incident_id") == inc.id]
    end = repair_end(own[0] if own else None)
    if end:
        parts.append(f"{end[1]} {when_text(end[0])}")
    return " · ".join(parts) or f"{when_text(inc.start)} → {when_text(inc.end)}"


def build_incident_context(con: duckdb.DuckDBPyConnection, incident_id: str, *, warehouse_label: str = "",
                           generated_at: datetime | None = None, cluster_timezone: str | None = None) -> dict[str, Any]:
    """Everything the incident templates need: ``meta``, ``sections`` (summary first) and ``by_key``.

    ``incident_id`` is an alert or hardware incident id, or the operator's id of a hardware incident
    (``OPS-1``); the report names the incident by its incident id. Raises :class:`UnknownIncidentError`
    when it is none of these. ``cluster_timezone`` (cluster.yaml's ``timezone``, else
    :func:`~gpusre.reports.kit.zone.cluster_timezone`) is named in the header when it is not UTC.
    """
    kind, row = find_incident(con, incident_id)
    inc = Incident(con, kind, row)
    # An unexpected mart shape degrades to a note in that section, like a query error.
    sections = build_sections(con, inc, INCIDENT_SECTIONS, "incident",
                              errors=(duckdb.Error, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError))
    generated = generated_at or datetime.now(timezone.utc)
    return {
        "meta": {
            "incident_id": inc.id,
            "kind": "alert incident" if kind == "alert" else "hardware incident",
            "what": what_text(inc),
            "start": when_text(inc.start),
            "end": when_text(inc.end),
            "span": _span_text(inc),
            "zone_note": zone.zone_note(zone.cluster_timezone(cluster_timezone, con), [
                inc.start.date() + timedelta(days=i) for i in range(min((inc.end.date() - inc.start.date()).days, 366) + 1)]),
            "window": f"{when_text(inc.w0)} … {when_text(inc.w1)}",
            "nodes": nodes_text(inc.nodes),
            "linked": ", ".join(i for i in inc.alert_incident_ids + inc.hw_incident_ids if i != inc.id) or MISSING,
            "generated_at": generated.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
            "file_stem": _file_stem(inc.id),
        },
        "warnings": _incident_warnings(con, inc),
        "sections": sections,
        "by_key": {s.key: s for s in sections},
    }


def render_incident_report(con: duckdb.DuckDBPyConnection, out_dir: Path, incident_id: str, *,
                           warehouse_label: str = "", cluster_timezone: str | None = None) -> ReportPaths:
    """Render the retrospective of one incident to ``out_dir/incident-<id>.html`` and ``.md`` (``<id>`` the
    incident id, also when the operator's id named it).

    Raises :class:`UnknownIncidentError` (nothing written) when the id is unknown.
    """
    ctx = build_incident_context(con, incident_id, warehouse_label=warehouse_label, cluster_timezone=cluster_timezone)
    return write_report(out_dir, _file_stem(ctx["meta"]["incident_id"]), "incident", ctx)
