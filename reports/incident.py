"""Incident retrospective: one self-contained HTML file (plus Markdown) about one incident.

:func:`render_incident_report` takes an alert incident (``marts.alert_incidents.incident_id``,
``ainc-…``) or a hardware incident (``marts.hw_incidents.incident_id``, ``inc-…``) and writes
``incident-<id>.html`` and ``.md`` with:

1. **Summary** — what, where, when, cost, in cards and one sentence.
2. **Timeline** — one SVG, time on x, lanes grouped as alerts (by alertname and node/target),
   node events (``core.node_events``: Xid, SXid, ECC, link down, NHC health checks … — every event
   that is not ``informational``), jobs on the affected nodes (``core.job_instances``: starts, ends,
   failures) and node drains/downs (``core.node_states``), over the incident window ± a margin
   (10 % of its length, at least 10 min); incidents longer than 6 h get a second chart zoomed on the
   first hour. A "key moments" table lists the same story in words.
3. **Root-cause candidate and evidence** — ``marts.alert_incidents.root_cause_candidate`` /
   ``root_cause_reason`` with the root alert, and for a hardware incident its component, first event
   and ``root_cause`` (``marts.hw_incidents``); the events that make up the incident. The link between a
   hardware incident and alert incidents is followed both ways: ``hw_incident_id`` of
   ``marts.alert_incidents`` and of ``marts.alert_incident_members``.
4. **Blast radius** — nodes, GPUs, jobs, users and lost GPU-hours. The counted jobs follow the mart
   the numbers come from, so the report and the marts agree: for an alert incident, jobs that ended
   FAILED / NODE_FAIL on its nodes from 15 min before its start to 5 min after its last alert started,
   unless job-failure attribution gives them to the user (``marts.alert_incidents.n_jobs_killed``,
   ``lost_gpu_hours``); for a hardware incident, the jobs ``marts.job_failure_attribution`` attributes to
   it (``marts.hw_incidents.affected_jobs``, ``affected_gpus``, ``lost_gpu_hours``). Other failures on the
   same nodes in the window are listed, not counted.
5. **Time to detect and repair** — ``marts.incident_repairs`` (drain start, back in service, hours to
   detect / repair) against the component's medians in ``marts.repair_times``; the delay from the first
   hardware event to the first alert.
6. **Alerts** — every alert of the incident (and other alerts on its nodes in the window), with
   summaries and labels; for a hardware incident no alert covered, that coverage gap.
7. **Similar past incidents** — earlier alert incidents sharing alert templates or alertnames
   (similarity: the mean of the Jaccard indices of ``templates`` and of ``alertnames``) and earlier hardware incidents of the same component
   (similarity 0.5 + 0.5 × Jaccard of their nodes); the top 5 by similarity, then the most recent.

Sections are built independently: a missing table, or a query error, shows "No data yet" / "Could not
be computed" in that section only. Untrusted text (alert summaries, descriptions and labels, job names,
users, drain reasons, log messages) is escaped by Jinja2 autoescape in HTML and by
:func:`~gpusre.reports.formatting.md_escape` in Markdown; chart labels go through
:func:`~gpusre.reports.charts.safe_label`.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

import duckdb
from markupsafe import Markup

from gpusre.models.component_classes import class_label
from gpusre.models.warehouse import select_columns

from . import charts
from .formatting import MISSING, fmt_int, fmt_num, truncate
from .nightly import (
    NO_DATA,
    Cell,
    Column,
    ReportPaths,
    Table,
    _cause_label,
    _environment,
    _nodes_text,
    _rows,
    _svg,
    component_label,
)

__all__ = [
    "ChartBlock",
    "IncidentSection",
    "UnknownIncidentError",
    "build_incident_context",
    "find_incident",
    "recent_incident_ids",
    "render_incident_report",
]

log = logging.getLogger(__name__)

#: Job states that count as killed by an incident (``AlertClusteringSettings.killed_states``).
KILLED_STATES = ("FAILED", "NODE_FAIL")
#: States of an earlier (requeued) instance that mean it was interrupted.
INTERRUPTED_STATES = ("NODE_FAIL", "REQUEUED", "FAILED", "BOOT_FAIL")
#: Blast-radius window of an alert incident: [start − 15 min, last alert start + 5 min]
#: (``AlertClusteringSettings.job_before_minutes`` / ``job_after_minutes``).
JOB_BEFORE = timedelta(minutes=15)
JOB_AFTER = timedelta(minutes=5)
#: Timeline margin around the incident window: a share of its length, at least a minimum.
MARGIN_SHARE = 0.10
MARGIN_MIN = timedelta(minutes=10)
#: Incidents longer than this get a second timeline zoomed on their onset.
ZOOM_AFTER = timedelta(hours=6)
ZOOM_SPAN = timedelta(hours=1)
#: A drain this long after the incident start is shown on the timeline (incident_repairs links up to 24 h).
DRAIN_LINK = timedelta(hours=24)
TOP_SIMILAR = 5
_MAX_ALERT_LANES = 12
_MAX_EVENT_LANES = 10
_MAX_JOB_LANES = 10
_MAX_STATE_LANES = 8
#: An alertname / event kind on more nodes than this gets one lane for all of them.
_GROUP_NODES = 4
_MAX_MOMENTS = 24
_MAX_ALERT_ROWS = 40
_MAX_EVENT_ROWS = 25
_MAX_JOB_ROWS = 40

_ALERT_COLOURS = {"root": "#c62828", "member": "#ef6c00", "context": "#90a4ae"}
_EVENT_COLOURS = {"hardware": "#c62828", "driver_firmware": "#8e24aa", "system_software": "#1e88e5",
                  "user_application": "#f9a825", "sympathetic": "#78909c"}
_STATE_COLOURS = {"hardware": "#6d1b1b", "maintenance": "#1e88e5", "health_check": "#8e24aa",
                  "software": "#ef6c00", "unknown": "#78909c"}
_WINDOW_COLOUR = "#c62828"
_KIND_LABELS = {"xid": "Xid", "sxid": "SXid", "ecc_row_remap": "ECC row remap", "ib_link_down": "IB link down",
                "health_check": "NHC health check", "pcie_aer": "PCIe AER", "lustre_error": "Lustre error",
                "kernel_panic": "kernel panic", "oom_kill": "OOM kill", "slurmd_error": "slurmd error",
                "nic_link_down": "NIC link down", "edac_ce": "EDAC corrected", "edac_ue": "EDAC uncorrected",
                "mce": "MCE", "gsp_timeout": "GSP timeout"}


class UnknownIncidentError(LookupError):
    """The id is neither an alert incident nor a hardware incident; the message names recent ids."""


@dataclass(frozen=True)
class ChartBlock:
    """A chart (trusted SVG from :mod:`charts`) with its one-sentence takeaway."""

    svg: Markup
    takeaway: str


@dataclass
class IncidentSection:
    """One report section: a lead sentence computed from the data, then charts, tables and notes."""

    key: str
    title: str
    lead: str = ""
    items: list[ChartBlock | Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    no_data: str | None = None

    @property
    def takeaways(self) -> list[str]:
        return [i.takeaway for i in self.items if isinstance(i, ChartBlock)]

    @property
    def tables(self) -> list[Table]:
        return [i for i in self.items if isinstance(i, Table)]


# --------------------------------------------------------------------------------------------
# small helpers


def _ok(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def _when(ts: datetime | None) -> str:
    """'2026-08-11 16:55:17 UTC'."""
    t = _utc(ts)
    return MISSING if t is None else t.strftime("%Y-%m-%d %H:%M:%S UTC")


def _at(ts: datetime | None) -> str:
    """A table cell time (the column says UTC): '2026-08-11 16:55:17'."""
    t = _utc(ts)
    return MISSING if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def _dur(seconds: float | None) -> str:
    """A duration: '45 s', '12 min', '3.4 h', '2.1 days'."""
    if not _ok(seconds):
        return MISSING
    s = abs(float(seconds))  # type: ignore[arg-type]
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def _hours(h: float | None) -> str:
    return MISSING if not _ok(h) else _dur(float(h) * 3600)  # type: ignore[arg-type]


def _offset(ts: datetime | None, t0: datetime) -> str:
    """Signed offset from the incident start: '+0:12:05', '−0:05:00', '+2 d 03:00:00'."""
    t = _utc(ts)
    if t is None:
        return MISSING
    s = int(round((t - t0).total_seconds()))
    sign = "−" if s < 0 else "+"
    d, rem = divmod(abs(s), 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return f"{sign}{d} d {h:02d}:{m:02d}:{sec:02d}" if d else f"{sign}{h}:{m:02d}:{sec:02d}"


def _plural(n: int | float | None, word: str, plural: str | None = None) -> str:
    return f"{fmt_int(n)} {word if n == 1 else (plural or word + 's')}"


def _gpuh(x: float | None) -> str:
    return fmt_num(x or 0.0, 0 if x is not None and abs(x) >= 100 else 1)


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _jaccard(a: set[Any], b: set[Any]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def _labels(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _labels_text(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items() if k != "alertname")


def _event_label(kind: str | None, code: int | None) -> str:
    base = _KIND_LABELS.get(kind or "", (kind or "event").replace("_", " "))
    return f"{base} {code}" if code is not None and kind in ("xid", "sxid", "ecc_row_remap") else base


def _exists(con: duckdb.DuckDBPyConnection, qualified: str) -> bool:
    schema, name = qualified.split(".")
    return bool(con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                            [schema, name]).fetchone()[0])


def _loc(alert: dict[str, Any]) -> str:
    return alert.get("node") or alert.get("target") or "(no node)"


def _file_stem(incident_id: str) -> str:
    return "incident-" + (re.sub(r"[^A-Za-z0-9._-]+", "_", incident_id).strip("._") or "unnamed")


# --------------------------------------------------------------------------------------------
# finding the incident


def recent_incident_ids(con: duckdb.DuckDBPyConnection, n: int = 5) -> dict[str, list[str]]:
    """The ``n`` most recent ids of each kind: ``{"alert": [...], "hw": [...]}`` (empty when not built)."""
    out: dict[str, list[str]] = {}
    for kind, table in (("alert", "marts.alert_incidents"), ("hw", "marts.hw_incidents")):
        try:
            out[kind] = [r[0] for r in con.execute(
                f"SELECT incident_id FROM {table} ORDER BY start_ts DESC NULLS LAST, incident_id LIMIT {int(n)}"
            ).fetchall()] if _exists(con, table) else []
        except duckdb.Error:
            out[kind] = []
    return out


def find_incident(con: duckdb.DuckDBPyConnection, incident_id: str) -> tuple[str, dict[str, Any]]:
    """``("alert" | "hw", row)`` for an incident id; :class:`UnknownIncidentError` (one line, with the
    five most recent ids of each kind) when it is neither."""
    for kind, table in (("alert", "marts.alert_incidents"), ("hw", "marts.hw_incidents")):
        if _exists(con, table):
            rows = _rows(con, f"SELECT * FROM {table} WHERE incident_id = ? LIMIT 1", [incident_id])
            if rows:
                return kind, rows[0]
    recent = recent_incident_ids(con)
    parts = []
    for kind, what in (("alert", "alert incidents"), ("hw", "hardware incidents")):
        parts.append(f"recent {what}: " + (", ".join(recent[kind]) if recent[kind] else "none"))
    raise UnknownIncidentError(f"unknown incident id {incident_id!r} (not in marts.alert_incidents or "
                               f"marts.hw_incidents); {'; '.join(parts)}")


# --------------------------------------------------------------------------------------------
# the incident and everything around it


class _Incident:
    """The focus incident, the incidents linked to it, its nodes and window; warehouse rows loaded on
    first use (a failing query fails only the sections that use it)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, kind: str, row: dict[str, Any]) -> None:
        self.con = con
        self.kind = kind
        self.row = row
        self.id = str(row["incident_id"])
        self.start: datetime = _utc(row["start_ts"])  # type: ignore[assignment]
        self.end: datetime = _utc(row.get("end_ts")) or self.start
        self.has_alert_marts = _exists(con, "marts.alert_incidents")
        self.has_members = _exists(con, "marts.alert_incident_members")
        self.has_alerts = _exists(con, "core.alerts")
        self.has_hw = _exists(con, "marts.hw_incidents")
        self.failed: dict[str, str] = {}
        self.alert_incidents: list[dict[str, Any]] = []
        self.hw_incidents: list[dict[str, Any]] = []
        if kind == "alert":
            self.alert_incidents = [row]
            hw_ids = {row.get("hw_incident_id")} - {None}
            if self.has_members:
                hw_ids |= {r[0] for r in con.execute(
                    "SELECT DISTINCT hw_incident_id FROM marts.alert_incident_members "
                    "WHERE incident_id = ? AND hw_incident_id IS NOT NULL", [self.id]).fetchall()}
            if hw_ids and self.has_hw:
                self.hw_incidents = _rows(con, "SELECT * FROM marts.hw_incidents WHERE list_contains(?, incident_id) "
                                               "ORDER BY start_ts, incident_id", [sorted(hw_ids)])
        else:
            self.hw_incidents = [row]
            if self.has_alert_marts:
                member_sql = ("OR incident_id IN (SELECT incident_id FROM marts.alert_incident_members "
                              "WHERE hw_incident_id = ?)" if self.has_members else "")
                params = [self.id, self.id] if self.has_members else [self.id]
                self.alert_incidents = _rows(con, f"""SELECT * FROM marts.alert_incidents
                                                      WHERE hw_incident_id = ? {member_sql}
                                                      ORDER BY start_ts, incident_id""", params)
        nodes = set(row.get("nodes") or [])
        if kind == "alert":  # an alert incident on a switch or file system: the nodes of its hw incident
            for h in self.hw_incidents:
                nodes |= set(h.get("nodes") or [])
        self.nodes: list[str] = sorted(nodes)
        self.anchor_nodes: list[str] = sorted(set(row.get("nodes") or []))
        linked = self.alert_incidents + self.hw_incidents
        self.t0: datetime = min([self.start] + [_utc(r["start_ts"]) for r in linked if r.get("start_ts")])
        self.t1: datetime = max([self.end] + [_utc(r["end_ts"]) or _utc(r["start_ts"]) for r in self.hw_incidents])
        if kind == "alert":
            self.t1 = max(self.t1, self.safe("last_alert_start", None) or self.t1)
        drain = self.drain_start
        if drain is not None and self.t0 <= drain <= self.t0 + DRAIN_LINK:
            self.t1 = max(self.t1, drain)
        span = self.t1 - self.t0
        margin = max(MARGIN_MIN, span * MARGIN_SHARE)
        self.w0, self.w1 = self.t0 - margin, self.t1 + margin

    def safe(self, name: str, default: Any) -> Any:
        """Attribute ``name`` for a section that only uses it in passing: a query error gives ``default``
        (and is remembered in :attr:`failed`) instead of failing that section too."""
        try:
            return getattr(self, name)
        except (duckdb.Error, KeyError, TypeError, ValueError) as exc:
            log.warning("incident report: %s could not be read: %s", name, exc)
            self.failed[name] = f"{type(exc).__name__}: {truncate(exc, 200)}"
            return default

    # -- linked rows ---------------------------------------------------------------------------

    @property
    def alert_incident_ids(self) -> list[str]:
        return [str(r["incident_id"]) for r in self.alert_incidents]

    @property
    def hw_incident_ids(self) -> list[str]:
        return [str(r["incident_id"]) for r in self.hw_incidents]

    @cached_property
    def last_alert_start(self) -> datetime | None:
        if self.kind != "alert" or not (self.has_members and self.has_alerts):
            return None
        return _utc(self.con.execute("""SELECT max(a.starts_at) FROM core.alerts a JOIN marts.alert_incident_members m
                                        USING (alert_id) WHERE m.incident_id = ?""", [self.id]).fetchone()[0])

    @cached_property
    def repairs(self) -> list[dict[str, Any]]:
        if not self.hw_incidents or not _exists(self.con, "marts.incident_repairs"):
            return []
        return _rows(self.con, "SELECT * FROM marts.incident_repairs WHERE list_contains(?, incident_id) "
                               "ORDER BY incident_start_ts, incident_id", [self.hw_incident_ids])

    @cached_property
    def drain_start(self) -> datetime | None:
        starts = [_utc(r["drain_start_ts"]) for r in self.safe("repairs", []) if r.get("drain_start_ts")]
        return min(starts) if starts else None  # type: ignore[type-var]

    @cached_property
    def back_in_service(self) -> datetime | None:
        back = [_utc(r["back_in_service_ts"]) for r in self.safe("repairs", []) if r.get("back_in_service_ts")]
        return max(back) if back else None  # type: ignore[type-var]

    @cached_property
    def alerts(self) -> list[dict[str, Any]]:
        """Alerts of the linked alert incidents plus other alerts on the nodes that started in the window,
        earliest first; ``in_incident``, ``is_root``, ``level``, ``alert_incident`` and ``labels_map`` added."""
        if not self.has_alerts:
            return []
        cols = ("alert_id, a.alertname, a.status, a.severity, a.node, a.target, a.target_label, a.starts_at, "
                "a.ends_at, CAST(a.labels AS VARCHAR) AS labels, a.summary, a.description, a.n_notifications")
        if self.has_members:
            rows = _rows(self.con, f"""SELECT {cols}, m.incident_id AS alert_incident, m.is_root, m.level,
                                              m.hw_incident_id
                                       FROM core.alerts a LEFT JOIN marts.alert_incident_members m USING (alert_id)
                                       WHERE list_contains(?, m.incident_id)
                                          OR (list_contains(?, a.node) AND a.starts_at BETWEEN ? AND ?)
                                       ORDER BY a.starts_at, a.alertname, a.node, alert_id""",
                         [self.alert_incident_ids, self.nodes, self.w0, self.w1])
        else:
            rows = _rows(self.con, f"""SELECT {cols}, NULL AS alert_incident, NULL AS is_root, NULL AS level,
                                              NULL AS hw_incident_id
                                       FROM core.alerts a WHERE list_contains(?, a.node) AND a.starts_at BETWEEN ? AND ?
                                       ORDER BY a.starts_at, a.alertname, a.node, alert_id""",
                         [self.nodes, self.w0, self.w1])
        ids = set(self.alert_incident_ids)
        for r in rows:
            r["in_incident"] = r["alert_incident"] in ids
            r["labels_map"] = _labels(r["labels"])
            r["starts_at"], r["ends_at"] = _utc(r["starts_at"]), _utc(r["ends_at"])
        return rows

    @cached_property
    def events(self) -> list[dict[str, Any]]:
        """Node events on the nodes in the window (not ``informational``) plus the hardware incidents'
        member events, earliest first; ``member`` marks the latter."""
        if not _exists(self.con, "core.node_events"):
            return []
        ids = self.hw_incident_ids
        member = ("SELECT event_id, any_value(incident_id) AS hw_incident FROM marts.hw_incident_members "
                  "WHERE list_contains(?, incident_id) GROUP BY event_id") if ids and _exists(
            self.con, "marts.hw_incident_members") else "SELECT NULL::BIGINT AS event_id, NULL AS hw_incident WHERE false"
        params: list[Any] = ([ids] if "?" in member else []) + [self.nodes, self.w0, self.w1]
        rows = _rows(self.con, f"""SELECT e.event_id, e.ts, e.node, e.kind, e.code, e.component, e.cause_class,
                                          e.severity, e.action, e.message, m.hw_incident
                                   FROM core.node_events e LEFT JOIN ({member}) m USING (event_id)
                                   WHERE m.hw_incident IS NOT NULL
                                      OR (list_contains(?, e.node) AND e.ts BETWEEN ? AND ?
                                          AND e.cause_class IS DISTINCT FROM 'informational')
                                   ORDER BY e.ts, e.node, e.event_id LIMIT 20000""", params)
        for r in rows:
            r["ts"] = _utc(r["ts"])
            r["member"] = r["hw_incident"] is not None
        return rows

    @cached_property
    def first_events(self) -> dict[str, dict[str, Any]]:
        """Per linked hardware incident its first event (``first_event_id``, else its earliest member)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.hw_incidents or not _exists(self.con, "core.node_events"):
            return out
        for h in self.hw_incidents:
            rows = []
            if h.get("first_event_id") is not None:
                rows = _rows(self.con, "SELECT ts, node, kind, code, component, message FROM core.node_events "
                                       "WHERE event_id = ? LIMIT 1", [h["first_event_id"]])
            if not rows:
                rows = [e for e in self.events if e["hw_incident"] == h["incident_id"]][:1]
            if rows:
                out[str(h["incident_id"])] = rows[0]
        return out

    @cached_property
    def jobs(self) -> list[dict[str, Any]]:
        """Job instances on the nodes that overlap the window (``core.job_instances``, else ``core.jobs``)."""
        if not self.nodes or not _exists(self.con, "core.jobs"):
            return []
        if _exists(self.con, "core.job_instances"):
            sql = """SELECT i.job_id, i.instance_no, i.is_latest, i.state, i.start_ts, i.end_ts, i.n_gpus, i.nodes,
                            j.name, j."user", j.account
                     FROM core.job_instances i LEFT JOIN core.jobs j USING (job_id)
                     WHERE len(list_intersect(i.nodes, ?)) > 0 AND i.start_ts <= ? AND (i.end_ts IS NULL OR i.end_ts >= ?)"""
        else:
            sql = """SELECT job_id, 1 AS instance_no, true AS is_latest, state, start_ts, end_ts, n_gpus, nodes, name,
                            "user", account
                     FROM core.jobs WHERE len(list_intersect(nodes, ?)) > 0 AND start_ts <= ?
                                     AND (end_ts IS NULL OR end_ts >= ?)"""
        rows = _rows(self.con, sql + " ORDER BY start_ts, job_id LIMIT 5000", [self.nodes, self.w1, self.w0])
        for r in rows:
            r["start_ts"], r["end_ts"] = _utc(r["start_ts"]), _utc(r["end_ts"])
        return rows

    @cached_property
    def node_states(self) -> list[dict[str, Any]]:
        if not self.nodes or not _exists(self.con, "core.node_states"):
            return []
        rows = _rows(self.con, """SELECT node, state, state_text, start_ts, end_ts, reason, reason_class,
                                         availability_class
                                  FROM core.node_states WHERE list_contains(?, node) AND start_ts <= ?
                                    AND (end_ts IS NULL OR end_ts >= ?) ORDER BY start_ts, node""",
                     [self.nodes, self.w1, self.w0])
        for r in rows:
            r["start_ts"], r["end_ts"] = _utc(r["start_ts"]), _utc(r["end_ts"])
        return rows

    # -- blast radius --------------------------------------------------------------------------

    @property
    def job_window(self) -> tuple[datetime, datetime]:
        """Failures on the nodes ending in this window are listed (and, for an alert incident, counted)."""
        last = (self.safe("last_alert_start", None) or self.start) if self.kind == "alert" else self.end
        return self.start - JOB_BEFORE, last + JOB_AFTER

    @cached_property
    def failed_jobs(self) -> list[dict[str, Any]]:
        """Jobs that ended FAILED / NODE_FAIL on the nodes in :attr:`job_window`, plus jobs attributed to a
        linked hardware incident; ``counted`` follows the mart of the focus incident."""
        if not _exists(self.con, "core.jobs"):
            return []
        lo, hi = self.job_window
        has_attr = _exists(self.con, "marts.job_failure_attribution")
        attr = (f"""SELECT {select_columns(self.con, 'marts.job_failure_attribution',
                                   ['job_id', 'attribution', 'rule', 'component', 'incident_id', 'lost_gpu_hours'])}
                    FROM marts.job_failure_attribution QUALIFY row_number() OVER (PARTITION BY job_id) = 1"""
                if has_attr else "SELECT NULL::VARCHAR AS job_id, NULL::VARCHAR AS attribution, NULL::VARCHAR AS rule, "
                                 "NULL::VARCHAR AS component, NULL::VARCHAR AS incident_id, NULL::DOUBLE AS lost_gpu_hours "
                                 "WHERE false")
        rows = _rows(self.con, f"""SELECT j.job_id, j.name, j."user", j.account, j.state, j.start_ts, j.end_ts, j.n_gpus,
                                          j.nodes, a.attribution, a.rule, a.component AS attributed_component,
                                          a.incident_id AS attributed_incident, a.lost_gpu_hours
                                   FROM core.jobs j LEFT JOIN ({attr}) a USING (job_id)
                                   WHERE (list_contains(?, j.state) AND j.end_ts BETWEEN ? AND ?
                                          AND len(list_intersect(j.nodes, ?)) > 0)
                                      OR (list_contains(?, a.incident_id) AND a.attribution = 'infrastructure')
                                   ORDER BY j.end_ts, j.job_id""",
                     [list(KILLED_STATES), lo, hi, self.nodes, self.hw_incident_ids])
        anchor = set(self.anchor_nodes)
        for r in rows:
            r["instance_no"] = None
            r["start_ts"], r["end_ts"] = _utc(r["start_ts"]), _utc(r["end_ts"])
            if self.kind == "alert":  # the rule of marts.alert_incidents.n_jobs_killed
                r["counted"] = (r["state"] in KILLED_STATES and r["end_ts"] is not None and lo <= r["end_ts"] <= hi
                                and bool(anchor & set(r["nodes"] or [])) and r["attribution"] != "user")
            else:  # marts.hw_incidents.affected_jobs: attributed to this incident
                r["counted"] = r["attribution"] == "infrastructure" and r["attributed_incident"] == self.id
        rows += self._interrupted_instances(lo, hi)
        for r in rows:
            r["start_ts"], r["end_ts"] = _utc(r["start_ts"]), _utc(r["end_ts"])
        return rows

    def _interrupted_instances(self, lo: datetime, hi: datetime) -> list[dict[str, Any]]:
        """Earlier instances of requeued jobs that ended in a failure state on the nodes in the window, or that
        ``marts.instance_failure_attribution`` gives to a linked hardware incident. No mart counts them as
        killed jobs (Slurm requeued the job), so they are listed, never counted."""
        if not _exists(self.con, "core.job_instances"):
            return []
        has_attr = _exists(self.con, "marts.instance_failure_attribution")
        attr = (f"""SELECT {select_columns(self.con, 'marts.instance_failure_attribution',
                                   ['job_id', 'instance_no', 'attribution', 'rule', 'component', 'incident_id',
                                    'lost_gpu_hours'])} FROM marts.instance_failure_attribution""" if has_attr else
                "SELECT NULL::VARCHAR AS job_id, NULL::INTEGER AS instance_no, NULL::VARCHAR AS attribution, "
                "NULL::VARCHAR AS rule, NULL::VARCHAR AS component, NULL::VARCHAR AS incident_id, "
                "NULL::DOUBLE AS lost_gpu_hours WHERE false")
        rows = _rows(self.con, f"""SELECT i.job_id, i.instance_no, j.name, j."user", j.account, i.state, i.start_ts,
                                          i.end_ts, i.n_gpus, i.nodes, a.attribution, a.rule,
                                          a.component AS attributed_component, a.incident_id AS attributed_incident,
                                          a.lost_gpu_hours
                                   FROM core.job_instances i LEFT JOIN core.jobs j USING (job_id)
                                   LEFT JOIN ({attr}) a USING (job_id, instance_no)
                                   WHERE NOT i.is_latest
                                     AND ((list_contains(?, i.state) AND i.end_ts BETWEEN ? AND ?
                                           AND len(list_intersect(i.nodes, ?)) > 0)
                                          OR (list_contains(?, a.incident_id) AND a.attribution = 'infrastructure'))
                                   ORDER BY i.end_ts, i.job_id, i.instance_no""",
                     [list(INTERRUPTED_STATES), lo, hi, self.nodes, self.hw_incident_ids])
        for r in rows:
            r["counted"] = False
        return rows


# --------------------------------------------------------------------------------------------
# sections


def _root_alert(inc: _Incident) -> dict[str, Any] | None:
    if inc.kind != "alert":
        return None
    rid = inc.row.get("root_alert_id")
    alerts = inc.safe("alerts", [])
    return next((a for a in alerts if a["alert_id"] == rid), None) or next(
        (a for a in alerts if a["is_root"] and a["alert_incident"] == inc.id), None)


def _what(inc: _Incident) -> str:
    """'GPUFellOffBus on gpu068' / 'PCIe bus failure on gpu068 (xid 79)' — the incident in a few words."""
    r = inc.row
    if inc.kind == "alert":
        return str(r.get("root_cause_candidate") or "alert incident")
    where = (f" under {r['leaf_switch']}" if r.get("leaf_switch") else
             f" on {truncate(_nodes_text(r.get('nodes')), 40)}" if r.get("nodes") else "")
    cause = f" ({r['root_cause']})" if r.get("root_cause") else ""
    return f"{component_label(r.get('component'))} failure{where}{cause}"


def _summary(inc: _Incident) -> tuple[IncidentSection, list[dict[str, str]]]:
    sec = IncidentSection("summary", "Summary")
    r = inc.row
    dur = (inc.end - inc.start).total_seconds()
    where = truncate(_nodes_text(inc.anchor_nodes), 60) if inc.anchor_nodes else (
        str(_root_alert(inc)["target"]) if inc.kind == "alert" and _root_alert(inc) and _root_alert(inc)["target"]
        else "no Slurm node")
    if inc.kind == "alert":
        jobs, lost = r.get("n_jobs_killed"), r.get("lost_gpu_hours")
        hw = f" (hardware incident {inc.hw_incidents[0]['incident_id']}, {component_label(inc.hw_incidents[0]['component'])})" \
            if inc.hw_incidents else ""
        sec.lead = (f"Alert incident {inc.id} started {_when(inc.start)} on {where} and lasted {_dur(dur)}: "
                    f"{_plural(r.get('n_alerts'), 'alert')}, root-cause candidate {_what(inc)}{hw}; it killed "
                    f"{_plural(jobs or 0, 'job')} and lost {_gpuh(lost)} GPU-hours.")
    else:
        jobs, lost = r.get("affected_jobs"), r.get("lost_gpu_hours")
        rec = (f"; its nodes ran a job to completion again {_hours(r['hours_to_recovery'])} after it ended"
               if _ok(r.get("hours_to_recovery")) else "")
        sec.lead = (f"Hardware incident {inc.id}, {_what(inc)}, started {_when(inc.start)} and lasted {_dur(dur)} "
                    f"({_plural(r.get('n_events'), 'event')}); it killed {_plural(jobs or 0, 'job')} and lost "
                    f"{_gpuh(lost)} GPU-hours{rec}.")
    repairs = inc.safe("repairs", [])
    rep = repairs[0] if repairs else None
    counted = [j for j in inc.safe("failed_jobs", []) if j["counted"]]
    users = {j["user"] for j in counted if j["user"]}
    gpus = sum(int(j["n_gpus"] or 0) for j in counted)
    cards = [
        {"label": "Incident", "value": "Alert incident" if inc.kind == "alert" else "Hardware incident",
         "sub": inc.id, "tone": ""},
        {"label": "Started", "value": _utc(inc.start).strftime("%m-%d %H:%M:%S"), "sub": f"UTC · lasted {_dur(dur)}",
         "tone": ""},
        {"label": "Nodes", "value": fmt_int(len(inc.anchor_nodes)), "sub": truncate(_nodes_text(inc.anchor_nodes), 34),
         "tone": ""},
        {"label": "Jobs killed", "value": fmt_int(jobs or 0),
         "sub": f"{_plural(len(users), 'user')} · {fmt_int(gpus)} GPUs", "tone": "bad" if jobs else ""},
        {"label": "Lost GPU-hours", "value": _gpuh(lost), "sub": "work since the last checkpoint",
         "tone": "bad" if (lost or 0) > 0 else ""},
        {"label": "Time to repair", "value": _hours(rep["hours_to_repair"]) if rep and _ok(rep.get("hours_to_repair"))
         else (str(rep["repair_state"]).replace("_", " ") if rep and rep.get("repair_state") else MISSING),
         "sub": f"detected after {_hours(rep['hours_to_detect'])}" if rep and _ok(rep.get("hours_to_detect"))
         else "no drain linked", "tone": ""},
        {"label": "Root cause", "value": truncate(_what(inc), 40), "sub": truncate(
            (r.get("root_cause_reason") if inc.kind == "alert" else _cause_label(r.get("cause_class"))) or MISSING, 60),
         "tone": ""},
        {"label": "Alerts", "value": fmt_int(sum(1 for a in inc.safe("alerts", []) if a["in_incident"])),
         "sub": f"{_plural(len(inc.alert_incidents), 'alert incident')}", "tone": ""},
    ]
    return sec, cards


# -- timeline --------------------------------------------------------------------------------


def _lane_keys(rows: list[dict[str, Any]], name: Callable[[dict[str, Any]], str],
               loc: Callable[[dict[str, Any]], str]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped into lanes 'name · location'; a name on more than a few locations gets one lane."""
    locs: dict[str, set[str]] = {}
    for r in rows:
        locs.setdefault(name(r), set()).add(loc(r))
    lanes: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        n = name(r)
        key = f"{n} · {len(locs[n])} nodes" if len(locs[n]) > _GROUP_NODES else f"{n} · {loc(r)}"
        lanes.setdefault(key, []).append(r)
    return lanes


def _timeline_lanes(inc: _Incident) -> tuple[list[tuple[str, str, list[charts.TimelineItem]]], list[str]]:
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
        grouped = _lane_keys(alerts, lambda a: a["alertname"] or "(no alertname)", _loc)
        order = sorted(grouped.items(), key=lambda kv: (not any(a["is_root"] and a["in_incident"] for a in kv[1]),
                                                        not any(a["in_incident"] for a in kv[1]),
                                                        min(a["starts_at"] for a in kv[1])))
        items = []
        for label, rows in order:
            its: list[charts.TimelineItem] = []
            for a in rows:
                colour = _ALERT_COLOURS["root" if a["is_root"] and a["in_incident"] else
                                        "member" if a["in_incident"] else "context"]
                its.append(("bar", a["starts_at"], a["ends_at"], colour, ""))
                its.append(("point", a["starts_at"], None, colour, "o"))
            items.append((label, its))
        cap("Alerts", items, _MAX_ALERT_LANES, "alert")
    events = inc.safe("events", [])
    if events:
        grouped = _lane_keys(events, lambda e: _event_label(e["kind"], e["code"]), lambda e: e["node"] or "?")
        order = sorted(grouped.items(), key=lambda kv: (not any(e["member"] for e in kv[1]),
                                                        min(e["ts"] for e in kv[1])))
        items = [(label, [("point", e["ts"], None, _EVENT_COLOURS.get(e["cause_class"] or "", "#78909c"),
                           "D" if e["member"] else "o") for e in rows]) for label, rows in order]
        cap("Node events", items, _MAX_EVENT_LANES, "node-event")
    jobs = inc.safe("jobs", [])
    if jobs:
        counted = {j["job_id"] for j in inc.safe("failed_jobs", []) if j["counted"]}
        lo, hi = inc.job_window

        def rank(j: dict[str, Any]) -> tuple[Any, ...]:
            ended_in = j["end_ts"] is not None and lo <= j["end_ts"] <= hi
            return (j["job_id"] not in counted or not j["is_latest"],
                    not (j["state"] in KILLED_STATES or j["state"] in ("REQUEUED", "BOOT_FAIL")) or not ended_in,
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
        by_node: dict[str, list[dict[str, Any]]] = {}
        for s in states:
            by_node.setdefault(s["node"], []).append(s)
        items = [(f"{node} · {', '.join(sorted({s['state'] or '?' for s in rows}))}",
                  [("bar", s["start_ts"], s["end_ts"], _STATE_COLOURS.get(s["availability_class"] or "unknown",
                                                                           "#78909c"), "") for s in rows])
                 for node, rows in sorted(by_node.items(), key=lambda kv: (min(s["start_ts"] for s in kv[1]), kv[0]))]
        cap("Node drains / downs", items, _MAX_STATE_LANES, "node-state")
    return lanes, notes


def _moments(inc: _Incident) -> list[tuple[datetime, str]]:
    out: list[tuple[datetime, str]] = []
    first_events = inc.safe("first_events", {})
    for hid, e in first_events.items():
        out.append((_utc(e["ts"]), f"first event of hardware incident {hid}: {_event_label(e['kind'], e['code'])} on "
                                   f"{e['node']} — {truncate(e.get('message'), 120)}"))
    for h in inc.hw_incidents:
        if h["incident_id"] not in first_events:
            out.append((_utc(h["start_ts"]), f"hardware incident {h['incident_id']} starts "
                                             f"({component_label(h['component'])})"))
        if h.get("end_ts") and _utc(h["end_ts"]) != _utc(h["start_ts"]):
            out.append((_utc(h["end_ts"]), f"last event of hardware incident {h['incident_id']}"))
    seen_incidents: set[str] = set()
    alerts = inc.safe("alerts", [])
    for a in alerts:
        if not a["in_incident"]:
            continue
        if a["alert_incident"] not in seen_incidents:
            seen_incidents.add(a["alert_incident"])
            out.append((a["starts_at"], f"first alert of {a['alert_incident']}: {a['alertname']} on {_loc(a)} — "
                                        f"{truncate(a['summary'], 100)}"))
        if a["is_root"] and a["alert_incident"] == inc.id and not out[-1][1].startswith(f"first alert of {inc.id}: "
                                                                                          f"{a['alertname']} on {_loc(a)}"):
            out.append((a["starts_at"], f"root-cause alert {a['alertname']} on {_loc(a)} fires"))
    member_alerts = [a for a in alerts if a["in_incident"]]
    if member_alerts and all(a["ends_at"] for a in member_alerts):
        last = max(member_alerts, key=lambda a: a["ends_at"])
        out.append((last["ends_at"], f"last alert resolved ({last['alertname']} on {_loc(last)})"))
    elif member_alerts:
        out.append((max(a["starts_at"] for a in member_alerts),
                    f"{sum(1 for a in member_alerts if not a['ends_at'])} of the incident's alerts still firing"))
    for j in inc.safe("failed_jobs", []):
        if j["counted"] and j["end_ts"]:
            out.append((j["end_ts"], f"job {j['job_id']} ({truncate(j['name'], 40)}, {j['user'] or MISSING}, "
                                     f"{fmt_int(j['n_gpus'])} GPUs) ends {j['state']}"))
        elif j["instance_no"] and j["end_ts"]:
            out.append((j["end_ts"], f"job {j['job_id']} instance #{j['instance_no']} ({truncate(j['name'], 40)}, "
                                     f"{fmt_int(j['n_gpus'])} GPUs) interrupted: {j['state']}"))
    for s in inc.safe("node_states", []):
        if inc.w0 <= s["start_ts"] <= inc.w1:
            out.append((s["start_ts"], f"{s['node']} {s['state'] or '?'}: {truncate(s['reason'], 100)}"))
    if inc.back_in_service:
        out.append((inc.back_in_service, "last linked node back in service"))
    out.sort(key=lambda m: m[0])
    return out


def _timeline(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("timeline", "Timeline")
    lanes, notes = _timeline_lanes(inc)
    moments = _moments(inc)
    if not lanes and not moments:
        sec.no_data = (f"{NO_DATA}: no alert, node event, job or node state on {_nodes_text(inc.nodes)} between "
                       f"{_when(inc.w0)} and {_when(inc.w1)}.")
        return sec
    n_alerts = sum(1 for a in inc.safe("alerts", []) if a["in_incident"])
    n_events = len(inc.safe("events", []))
    n_jobs = len({j["job_id"] for j in inc.safe("jobs", [])})
    n_drains = sum(1 for s in inc.safe("node_states", []) if inc.w0 <= s["start_ts"] <= inc.w1)
    first = moments[0] if moments else None
    take = (f"Between {_when(inc.w0)} and {_when(inc.w1)} ({_dur((inc.w1 - inc.w0).total_seconds())}) the "
            f"{_plural(len(inc.nodes), 'affected node')} saw {_plural(n_alerts, 'incident alert')}, "
            f"{_plural(n_events, 'node event')}, {_plural(n_jobs, 'job')} running and {_plural(n_drains, 'drain/down')}"
            + (f"; it began with the {first[1].split(':', 1)[0]} at {_utc(first[0]).strftime('%H:%M:%S')}." if first
               else "."))
    sec.lead = take
    spans = [(inc.start, inc.end, _WINDOW_COLOUR, "incident window")]
    marks = []
    if inc.drain_start and inc.w0 <= inc.drain_start <= inc.w1:
        marks.append((inc.drain_start, "#6d1b1b", "drained"))
    if inc.back_in_service and inc.w0 <= inc.back_in_service <= inc.w1:
        marks.append((inc.back_in_service, "#2e7d32", "back in service"))
    legend = [("incident alert (root: dark red)", _ALERT_COLOURS["member"], "bar"),
              ("other alert on these nodes", _ALERT_COLOURS["context"], "bar"),
              ("incident event", "#c62828", "D"), ("job failed", "#263238", "x"),
              ("drain/down (hardware)", _STATE_COLOURS["hardware"], "bar")]
    if lanes:
        title = f"Incident {inc.id}: {_what(inc)} (UTC)"
        sec.items.append(ChartBlock(_svg(charts.incident_timeline_chart(
            lanes, (inc.w0, inc.w1), title, spans=spans, marks=marks, legend=legend)), take))
        if inc.w1 - inc.w0 > ZOOM_AFTER or (inc.end - inc.start) < (inc.w1 - inc.w0) * 0.05:
            z0, z1 = inc.t0 - MARGIN_MIN, inc.t0 + ZOOM_SPAN
            in_zoom = [m for m in moments if z0 <= m[0] <= z1]
            ztake = (f"The first hour: {_plural(len(in_zoom), 'key moment')} between {_utc(z0).strftime('%H:%M')} and "
                     f"{_utc(z1).strftime('%H:%M')} UTC.")
            zmarks = [m for m in marks if z0 <= m[0] <= z1]
            sec.items.append(ChartBlock(_svg(charts.incident_timeline_chart(
                lanes, (z0, z1), f"Onset of {inc.id}, first hour (UTC)", spans=spans, marks=zmarks, legend=legend)),
                ztake))
    if moments:
        shown = moments[:_MAX_MOMENTS]
        sec.items.append(Table(
            [Column("Time (UTC)", nowrap=True), Column("From start", True), Column("What happened")],
            [[Cell(_at(t)), Cell(_offset(t, inc.t0), mono=True), Cell(truncate(text, 180), title=text)]
             for t, text in shown],
            caption=f"Key moments, offsets from the first sign of the incident ({_when(inc.t0)})."
                    + (f" First {_MAX_MOMENTS} of {len(moments)}." if len(moments) > _MAX_MOMENTS else ""),
        ))
    sec.notes = notes + [f"Not drawn: {name.replace('_', ' ')} could not be read ({err})."
                         for name, err in inc.failed.items()]
    if inc.back_in_service and inc.back_in_service > inc.w1:
        sec.notes.append(f"The nodes came back in service at {_when(inc.back_in_service)}, "
                         f"{_dur((inc.back_in_service - inc.w1).total_seconds())} after the right edge of the chart.")
    return sec


# -- root cause --------------------------------------------------------------------------------


def _root_cause(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("root-cause", "Root-cause candidate and evidence")
    r = inc.row
    kv: list[tuple[str, str]] = []
    if inc.kind == "alert":
        root = _root_alert(inc)
        sec.lead = (f"The root-cause candidate is {r.get('root_cause_candidate') or MISSING}: "
                    f"{r.get('root_cause_reason') or 'no reason recorded'} (scope {r.get('scope') or MISSING}, "
                    f"level {r.get('root_level') or MISSING}).")
        kv += [("Root-cause candidate", str(r.get("root_cause_candidate") or MISSING)),
               ("Why", str(r.get("root_cause_reason") or MISSING)),
               ("Scope / level", f"{r.get('scope') or MISSING} / {r.get('root_level') or MISSING}")]
        if root:
            kv += [("Root alert", f"{root['alertname']} on {_loc(root)} from {_when(root['starts_at'])}"
                                  + (f" to {_when(root['ends_at'])}" if root["ends_at"] else " (still firing)")),
                   ("Root alert summary", str(root["summary"] or MISSING)),
                   ("Root alert description", str(root["description"] or MISSING)),
                   ("Root alert labels", _labels_text(root["labels_map"]) or MISSING)]
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
        sec.lead = (f"{_cap(_what(inc))}: {component_label(r.get('component'))}, {_cause_label(r.get('cause_class'))}, "
                    f"severity {r.get('severity') or MISSING}"
                    + (f"; first seen {_when(fe['ts'])} as {_event_label(fe['kind'], fe['code'])} on {fe['node']}"
                       if fe else "")
                    + f"; {_plural(r.get('n_events'), 'event')} on {_plural(len(inc.anchor_nodes), 'node')}.")
        kv += [("Component", f"{component_label(r.get('component'))} ({r.get('component') or MISSING})"),
               ("Root cause", str(r.get("root_cause") or MISSING)
                + (" (operator label)" if r.get("label_source") == "operator" else "")),
               ("Cause class / severity", f"{_cause_label(r.get('cause_class'))} / {r.get('severity') or MISSING}"),
               ("Recommended action", str(r.get("action") or MISSING)),
               ("Scope", str(r.get("scope") or MISSING) + (f" (leaf switch {r['leaf_switch']})" if r.get("leaf_switch")
                                                           else "")),
               ("Faulty GPUs (PCI)", ", ".join(r.get("gpus") or []) or MISSING)]
        if fe:
            kv.append(("First event", f"{_when(fe['ts'])} on {fe['node']}: {_event_label(fe['kind'], fe['code'])} — "
                                      f"{fe.get('message') or MISSING}"))
        if r.get("notes"):
            kv.append(("Operator notes", str(r["notes"])))
    for h in (inc.hw_incidents if inc.kind == "alert" else []):
        fe = inc.safe("first_events", {}).get(str(h["incident_id"]))
        kv.append((f"Hardware incident {h['incident_id']}",
                   f"{component_label(h.get('component'))}, root cause {h.get('root_cause') or MISSING}, "
                   f"{_plural(h.get('n_events'), 'event')} from {_when(h.get('start_ts'))}"
                   + (f"; first event {_event_label(fe['kind'], fe['code'])} on {fe['node']}: {fe.get('message')}"
                      if fe else "")))
    for a in (inc.alert_incidents if inc.kind == "hw" else []):
        kv.append((f"Alert incident {a['incident_id']}",
                   f"{_plural(a.get('n_alerts'), 'alert')} from {_when(a.get('start_ts'))}; root-cause candidate "
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
        lanes = _lane_keys(evs, lambda e: _event_label(e["kind"], e["code"]), lambda e: e["node"] or "?")
        groups = {}
        for rows in lanes.values():
            nodes_ = sorted({e["node"] or "?" for e in rows})
            groups[(_event_label(rows[0]["kind"], rows[0]["code"]), _nodes_text(nodes_))] = rows
        ordered = sorted(groups.items(), key=lambda kv_: kv_[1][0]["ts"])
        member = evs is not inc.events
        sec.items.append(Table(
            [Column("Event"), Column("Nodes", nowrap=True), Column("Count", True), Column("First (UTC)", nowrap=True),
             Column("Last (UTC)", nowrap=True), Column("Class"), Column("Example message")],
            [[Cell(label), Cell(truncate(node, 24), mono=True, title=node), Cell(fmt_int(len(rows))),
              Cell(_at(rows[0]["ts"])),
              Cell(_at(rows[-1]["ts"])), Cell(_cause_label(rows[0]["cause_class"])),
              Cell(truncate(rows[0]["message"], 110), mono=True, title=rows[0]["message"])]
             for (label, node), rows in ordered[:_MAX_EVENT_ROWS]],
            caption=("The hardware incident's member events (marts.hw_incident_members)" if member else
                     "Node events on the affected nodes in the window (no hardware incident linked)")
                    + (f"; first {_MAX_EVENT_ROWS} of {len(ordered)} groups." if len(ordered) > _MAX_EVENT_ROWS else "."),
        ))
    return sec


# -- blast radius ------------------------------------------------------------------------------


def _blast_radius(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("blast-radius", "Blast radius")
    r = inc.row
    jobs = inc.failed_jobs
    counted = [j for j in jobs if j["counted"]]
    lost_rows = sum(float(j["lost_gpu_hours"] or 0.0) for j in counted)
    if inc.kind == "alert":
        n_mart, lost_mart = r.get("n_jobs_killed"), r.get("lost_gpu_hours")
        rule = ("jobs that ended FAILED or NODE_FAIL on its nodes from 15 min before its start to 5 min after its "
                "last alert started, unless attributed to the user (marts.alert_incidents.n_jobs_killed)")
    else:
        n_mart, lost_mart = r.get("affected_jobs"), r.get("lost_gpu_hours")
        rule = "jobs marts.job_failure_attribution attributes to this incident (marts.hw_incidents.affected_jobs)"
    users = sorted({j["user"] for j in counted if j["user"]})
    gpus = sum(int(j["n_gpus"] or 0) for j in counted)
    # Faulty GPUs: the PCI addresses of the hardware incident(s), else the gpu label of the incident's alerts.
    faulty = {f"{n} {g}" for h in inc.hw_incidents for g in (h.get("gpus") or []) for n in (h.get("nodes") or [])[:1]}
    if not faulty:
        faulty = {f"{a['node'] or _loc(a)} GPU {a['labels_map']['gpu']}" for a in inc.safe("alerts", [])
                  if a["in_incident"] and a["labels_map"].get("gpu") not in (None, "")}
    faulty_text = f" ({truncate(', '.join(sorted(faulty)), 60)})" if faulty else ""
    sec.lead = (f"{_plural(len(inc.anchor_nodes), 'node')}"
                + (f" ({truncate(_nodes_text(inc.anchor_nodes), 40)})" if inc.anchor_nodes else "")
                + f", {_plural(len(faulty), 'faulty GPU')} named by its evidence{faulty_text}, {_plural(n_mart or 0, 'job')} killed "
                f"({fmt_int(gpus)} GPUs of {_plural(len(users), 'user')}) and {_gpuh(lost_mart)} lost GPU-hours.")
    if inc.kind == "alert" and not inc.anchor_nodes and inc.nodes:
        sec.notes.append(f"The alert incident names no Slurm node; the nodes of its hardware incident "
                         f"({truncate(_nodes_text(inc.nodes), 60)}) are shown on the timeline.")
    if n_mart is not None and (len(counted) != int(n_mart) or abs(lost_rows - float(lost_mart or 0.0)) > 0.05):
        sec.notes.append(f"The jobs listed below add up to {len(counted)} jobs and {_gpuh(lost_rows)} GPU-hours, the "
                         f"mart says {fmt_int(n_mart)} and {_gpuh(lost_mart)}: the marts were built before the latest "
                         "accounting or attribution changes; rerun the pipeline.")
    requeued = [j for j in jobs if j["instance_no"]]
    if requeued:
        sec.notes.append(f"{_plural(len(requeued), 'earlier job instance')} ({fmt_int(sum(int(j['n_gpus'] or 0) for j in requeued))}"
                         f" GPUs) {'was' if len(requeued) == 1 else 'were'} interrupted and requeued by Slurm"
                         + (f", losing {_gpuh(sum(float(j['lost_gpu_hours'] or 0.0) for j in requeued))} GPU-hours by "
                            "instance attribution" if any(j["lost_gpu_hours"] for j in requeued) else "")
                         + f"; the job went on, so the marts do not count {'it' if len(requeued) == 1 else 'them'} "
                           "as killed.")
    for h in (inc.hw_incidents if inc.kind == "alert" else []):
        sec.notes.append(f"Linked hardware incident {h['incident_id']} killed {_plural(h.get('affected_jobs') or 0, 'job')} "
                         f"and lost {_gpuh(h.get('lost_gpu_hours'))} GPU-hours by its own attribution.")
    if not jobs:
        sec.items.append(Table([Column("Measure"), Column("Value", True)], [
            [Cell("Nodes"), Cell(fmt_int(len(inc.anchor_nodes)))], [Cell("Jobs killed"), Cell(fmt_int(n_mart or 0))],
            [Cell("Lost GPU-hours"), Cell(_gpuh(lost_mart))]],
            caption=f"No job ended FAILED or NODE_FAIL on these nodes in {_when(inc.job_window[0])} … "
                    f"{_when(inc.job_window[1])}. Counted: {rule}."))
        return sec
    jobs_sorted = sorted(jobs, key=lambda j: (not j["counted"], -(j["lost_gpu_hours"] or 0.0), j["end_ts"] or inc.t0))
    sec.items.append(Table(
        [Column("Job", nowrap=True), Column("Name"), Column("User"), Column("State", nowrap=True),
         Column("End (UTC)", nowrap=True), Column("GPUs", True), Column("Nodes", nowrap=True), Column("Attribution"),
         Column("Lost GPU-h", True), Column("Counted")],
        [[Cell(f"{j['job_id']} #{j['instance_no']}" if j["instance_no"] else str(j["job_id"]), mono=True,
               title="an earlier instance, requeued by Slurm" if j["instance_no"] else None),
          Cell(truncate(j["name"], 32), title=j["name"]),
          Cell(truncate(j["user"], 20), title=j["user"]),
          Cell(j["state"] or MISSING, swatch=charts.state_colour(j["state"] or "")), Cell(_at(j["end_ts"])),
          Cell(fmt_int(j["n_gpus"])),
          Cell(truncate(_nodes_text(j["nodes"]), 18), mono=True, title=_nodes_text(j["nodes"])),
          Cell(truncate(" · ".join(str(x) for x in (j["attribution"], j["attributed_component"], j["attributed_incident"])
                                  if x) or "not attributed", 48),
               title=" · ".join(str(x) for x in (j["attribution"], j["rule"], j["attributed_component"],
                                                 j["attributed_incident"]) if x) or None),
          Cell(fmt_num(j["lost_gpu_hours"]) if j["lost_gpu_hours"] is not None else MISSING),
          Cell("yes" if j["counted"] else "no (requeued)" if j["instance_no"] else "no")]
         for j in jobs_sorted[:_MAX_JOB_ROWS]],
        caption=f"Jobs that ended FAILED or NODE_FAIL on the affected nodes from {_when(inc.job_window[0])} to "
                f"{_when(inc.job_window[1])}, jobs attributed to a linked hardware incident, and interrupted earlier "
                f"instances of requeued jobs (job #instance, never counted). Counted: {rule}. "
                "Lost GPU-hours: GPUs × (work since the last checkpoint + restart overhead)."
                + (f" First {_MAX_JOB_ROWS} of {len(jobs)}." if len(jobs) > _MAX_JOB_ROWS else ""),
    ))
    if users:
        per_user: dict[str, list[float]] = {}
        for j in counted:
            u = per_user.setdefault(j["user"] or MISSING, [0, 0, 0.0])
            u[0] += 1
            u[1] += int(j["n_gpus"] or 0)
            u[2] += float(j["lost_gpu_hours"] or 0.0)
        sec.items.append(Table(
            [Column("User"), Column("Jobs killed", True), Column("GPUs", True), Column("Lost GPU-h", True)],
            [[Cell(truncate(u, 32), title=u), Cell(fmt_int(v[0])), Cell(fmt_int(v[1])), Cell(fmt_num(v[2]))]
             for u, v in sorted(per_user.items(), key=lambda kv: (-kv[1][2], kv[0]))],
            caption="Users of the counted jobs."))
    return sec


# -- detection and repair ----------------------------------------------------------------------


def _repair(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("repair", "Time to detect and repair")
    alerts = inc.safe("alerts", [])
    first_alert = min((a["starts_at"] for a in alerts if a["in_incident"]), default=None)
    hw_start = min((_utc(h["start_ts"]) for h in inc.hw_incidents), default=None)
    alert_delay = (first_alert - hw_start).total_seconds() if first_alert and hw_start else None
    if not inc.hw_incidents:
        member = [a for a in alerts if a["in_incident"]]
        ended = [a["ends_at"] for a in member if a["ends_at"]]
        sec.no_data = (f"{NO_DATA}: no hardware incident is linked to this alert incident, so there is no repair "
                       "record (marts.incident_repairs)"
                       + (f"; its alerts fired from {_when(inc.start)} until {_when(max(ended))}." if member and
                          len(ended) == len(member) else "."))
        return sec
    if not inc.repairs:
        sec.no_data = (f"{NO_DATA}: marts.incident_repairs has no row for {', '.join(inc.hw_incident_ids)} "
                       "(no node-state history ingested yet?).")
        return sec
    medians: dict[str, dict[str, Any]] = {}
    if _exists(inc.con, "marts.repair_times"):
        medians = {r.get("component_class"): r for r in _rows(inc.con, "SELECT * FROM marts.repair_times")}
    rep = inc.repairs[0]
    comp = rep.get("component_class")
    med = medians.get(comp) or {}
    state = rep.get("repair_state")
    parts = []
    if _ok(rep.get("hours_to_detect")):
        parts.append(f"The nodes were drained {_hours(rep['hours_to_detect'])} after the first event"
                     + (f" (median for {class_label(comp)}: {_hours(med['mttd_hours_p50'])})"
                        if _ok(med.get("mttd_hours_p50")) else ""))
    else:
        parts.append(f"No drain of the incident's nodes followed within 24 h ({str(state or MISSING).replace('_', ' ')})")
    if _ok(rep.get("hours_to_repair")):
        parts.append(f"every node was back in service {_hours(rep['hours_to_repair'])} after the first evidence"
                     + (f" (median {_hours(med['mttr_hours_p50'])}, p90 {_hours(med.get('mttr_hours_p90'))})"
                        if _ok(med.get("mttr_hours_p50")) else ""))
    elif state == "ongoing":
        parts.append("still out of service at the last dump")
    if alert_delay is not None:
        parts.append(f"the first alert fired {_dur(alert_delay)} {'after' if alert_delay >= 0 else 'before'} the "
                     "first hardware event")
    elif inc.kind == "hw":
        parts.append("no alert fired for it")
    sec.lead = "; ".join(parts) + "."
    sec.items.append(Table(
        [Column("Hardware incident", nowrap=True), Column("Start (UTC)", nowrap=True),
         Column("Drained (UTC)", nowrap=True), Column("Back in service (UTC)", nowrap=True), Column("Detect", True),
         Column("Repair", True), Column("State", nowrap=True), Column("Drain reason")],
        [[Cell(str(x["incident_id"]), mono=True, title=component_label(x.get("component"))),
          Cell(_at(x.get("incident_start_ts"))), Cell(_at(x.get("drain_start_ts"))),
          Cell(_at(x.get("back_in_service_ts"))), Cell(_hours(x.get("hours_to_detect"))),
          Cell(_hours(x.get("hours_to_repair"))), Cell(str(x.get("repair_state") or MISSING).replace("_", " ")),
          Cell(truncate(x.get("drain_reason"), 48), title=x.get("drain_reason"))] for x in inc.repairs],
        caption="marts.incident_repairs: the first drain/down of the incident's own nodes from 30 min before to 24 h "
                "after it. Detect: first evidence to drain; repair: first evidence to the last node back in service."))
    seen = list(dict.fromkeys(x.get("component_class") for x in inc.repairs))
    rows = [[Cell(class_label(c)), Cell(_hours(m.get("mttd_hours_p50"))), Cell(_hours(m.get("mttr_hours_p50"))),
             Cell(_hours(m.get("mttr_hours_p90"))), Cell(fmt_int(m.get("repaired")))]
            for c, m in ((c, medians.get(c)) for c in seen) if m]
    if rows:
        sec.items.append(Table([Column("Component class"), Column("Median detect", True),
                                Column("Median repair", True), Column("p90 repair", True), Column("Repairs", True)],
                               rows, caption="For comparison: marts.repair_times of the same component class "
                                             "(the one MTBF uses), whole record."))
    return sec


# -- alerts ------------------------------------------------------------------------------------


def _alerts(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("alerts", "Alerts")
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
        if inc.kind == "hw" and _exists(inc.con, "marts.hw_incidents_without_alert"):
            uncovered = bool(inc.con.execute("SELECT count(*) FROM marts.hw_incidents_without_alert WHERE incident_id = ?",
                                             [inc.id]).fetchone()[0])
        sec.no_data = (f"No alert fired on {_nodes_text(inc.nodes)} between {_when(inc.w0)} and {_when(inc.w1)}"
                       + ("; marts.hw_incidents_without_alert lists this incident: missing alert coverage."
                          if uncovered else "."))
        return sec
    rules = {a["alertname"] for a in member}
    firing = sum(1 for a in member if not a["ends_at"])
    root = _root_alert(inc)
    sec.lead = (f"{_plural(len(member), 'alert')} from {_plural(len(rules), 'rule')} in "
                f"{_plural(len(inc.alert_incidents), 'alert incident')}"
                + (f", root {root['alertname']} on {_loc(root)}" if root else "")
                + (f", {fmt_int(firing)} still firing" if firing else "")
                + f"; {_plural(len(alerts) - len(member), 'other alert')} on the same nodes in the window.")
    shown = sorted(alerts, key=lambda a: (not a["in_incident"], a["starts_at"]))[:_MAX_ALERT_ROWS]
    sec.items.append(Table(
        [Column("Start (UTC)", nowrap=True), Column("Alert"), Column("Node / target", nowrap=True),
         Column("Severity", nowrap=True), Column("Duration", True), Column("Role", nowrap=True), Column("Summary"),
         Column("Labels")],
        [[Cell(_at(a["starts_at"])), Cell(truncate(a["alertname"], 32), title=a["alertname"]),
          Cell(truncate(_loc(a), 24), mono=True, title=_loc(a)), Cell(a["severity"] or MISSING),
          Cell(_dur((a["ends_at"] - a["starts_at"]).total_seconds()) if a["ends_at"] else "firing"),
          Cell("root" if a["is_root"] and a["in_incident"] else (a["level"] or "member") if a["in_incident"]
               else "other", swatch=_ALERT_COLOURS["root" if a["is_root"] and a["in_incident"] else
                                                   "member" if a["in_incident"] else "context"]),
          Cell(truncate(a["summary"] or a["description"], 90),
               title=" — ".join(x for x in (a["summary"], a["description"]) if x) or None),
          Cell(truncate(_labels_text(a["labels_map"]), 70), mono=True, title=_labels_text(a["labels_map"]))]
         for a in shown],
        caption="The alert incident's alerts first (role: its level, root = the root-cause candidate), then other "
                "alerts that started on the same nodes in the window."
                + (f" First {_MAX_ALERT_ROWS} of {len(alerts)}." if len(alerts) > _MAX_ALERT_ROWS else ""),
    ))
    return sec


# -- similar past incidents ----------------------------------------------------------------------


def _similar(inc: _Incident) -> IncidentSection:
    sec = IncidentSection("similar", "Similar past incidents")
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
        rows = _rows(inc.con, """SELECT incident_id, start_ts, templates, alertnames, nodes, hw_incident_id,
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
            cands.append({"kind": "alert", "id": r["incident_id"], "start": _utc(r["start_ts"]), "sim": sim,
                          "matched": "alerts " + ", ".join(shared) if shared else "alert templates",
                          "cause": r["root_cause_candidate"], "nodes": r["nodes"], "jobs": r["n_jobs_killed"],
                          "lost": r["lost_gpu_hours"], "linked": r["hw_incident_id"]})
    if comps and inc.has_hw:
        rows = _rows(inc.con, """SELECT incident_id, start_ts, component, nodes, root_cause, affected_jobs, lost_gpu_hours
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
            cands.append({"kind": "hw", "id": r["incident_id"], "start": _utc(r["start_ts"]),
                          "sim": 0.5 + 0.5 * _jaccard(nodes, n2),
                          "matched": f"component {r['component']}" + (f", nodes {_nodes_text(shared)}" if shared else ""),
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
    sec.lead = (f"{_plural(len({c['id'] for c in cands}), 'earlier incident')} resemble this one; the closest is "
                f"{best['id']} on {_when(best['start'])} (similarity {best['sim']:.2f}, {best['matched']}), and the "
                f"{_plural(len(picked), 'incident')} shown lost {_gpuh(lost)} GPU-hours together.")
    sec.items.append(Table(
        [Column("Incident", nowrap=True), Column("Kind", nowrap=True), Column("Start (UTC)", nowrap=True),
         Column("Similarity", True), Column("Matched on"), Column("Root cause"), Column("Nodes", nowrap=True),
         Column("Jobs killed", True), Column("Lost GPU-h", True), Column("Linked")],
        [[Cell(str(c["id"]), mono=True), Cell("alert" if c["kind"] == "alert" else "hardware"),
          Cell(_at(c["start"])[:16]),
          Cell(f"{c['sim']:.2f}"), Cell(truncate(c["matched"], 60), title=c["matched"]),
          Cell(truncate(c["cause"], 50), title=c["cause"]),
          Cell(truncate(_nodes_text(c["nodes"]), 16), mono=True, title=_nodes_text(c["nodes"])),
          Cell(fmt_int(c["jobs"])), Cell(fmt_num(c["lost"])), Cell(str(c["linked"] or MISSING), mono=True)]
         for c in picked],
        caption="Earlier alert incidents: similarity = the mean of the Jaccard indices of their alert templates and of "
                "their alertnames with this incident's (alertnames only when templates are missing). Earlier hardware incidents of the same component: 0.5 + 0.5 × Jaccard of their nodes. "
                f"Top {TOP_SIMILAR} by similarity, then the most recent; an incident linked to one already shown is "
                "left out.",
    ))
    return sec


# --------------------------------------------------------------------------------------------
# assembly


def _guard(title: str, key: str, build: Callable[[], IncidentSection]) -> IncidentSection:
    """Run one section builder; a query error (or an unexpected mart shape) degrades to a note in that section."""
    try:
        return build()
    except (duckdb.Error, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
        log.warning("incident report section %s failed: %s", key, exc, exc_info=True)
        return IncidentSection(key, title, no_data=f"Could not be computed: {type(exc).__name__}: {truncate(exc, 300)}")


def build_incident_context(con: duckdb.DuckDBPyConnection, incident_id: str, *, warehouse_label: str = "",
                           generated_at: datetime | None = None) -> dict[str, Any]:
    """Everything the incident templates need: ``meta``, ``cards``, ``summary`` and ``sections``.

    Raises :class:`UnknownIncidentError` when ``incident_id`` is neither an alert nor a hardware incident.
    """
    kind, row = find_incident(con, incident_id)
    inc = _Incident(con, kind, row)
    try:
        summary, cards = _summary(inc)
    except (duckdb.Error, KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as exc:
        log.warning("incident report summary failed: %s", exc, exc_info=True)
        summary, cards = IncidentSection("summary", "Summary", no_data=f"Could not be computed: {truncate(exc, 300)}"), []
    sections = [
        _guard("Timeline", "timeline", lambda: _timeline(inc)),
        _guard("Root-cause candidate and evidence", "root-cause", lambda: _root_cause(inc)),
        _guard("Blast radius", "blast-radius", lambda: _blast_radius(inc)),
        _guard("Time to detect and repair", "repair", lambda: _repair(inc)),
        _guard("Alerts", "alerts", lambda: _alerts(inc)),
        _guard("Similar past incidents", "similar", lambda: _similar(inc)),
    ]
    generated = generated_at or datetime.now(timezone.utc)
    return {
        "meta": {
            "incident_id": inc.id,
            "kind": "alert incident" if kind == "alert" else "hardware incident",
            "what": _what(inc),
            "start": _when(inc.start),
            "end": _when(inc.end),
            "window": f"{_when(inc.w0)} … {_when(inc.w1)}",
            "nodes": _nodes_text(inc.nodes),
            "linked": ", ".join(i for i in inc.alert_incident_ids + inc.hw_incident_ids if i != inc.id) or MISSING,
            "generated_at": generated.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "warehouse": warehouse_label or "(in-memory or unnamed warehouse)",
        },
        "cards": cards,
        "summary": summary,
        "sections": sections,
        "by_key": {s.key: s for s in [summary, *sections]},
    }


def render_incident_report(con: duckdb.DuckDBPyConnection, out_dir: Path, incident_id: str, *,
                           warehouse_label: str = "") -> ReportPaths:
    """Render the retrospective of one incident to ``out_dir/incident-<id>.html`` and ``.md``.

    Raises :class:`UnknownIncidentError` (nothing written) when the id is unknown.
    """
    ctx = build_incident_context(con, incident_id, warehouse_label=warehouse_label)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = _file_stem(ctx["meta"]["incident_id"])
    html_path = out_dir / f"{stem}.html"
    md_path = out_dir / f"{stem}.md"
    html = _environment(markdown=False).get_template("incident.html.j2").render(**ctx)
    md = _environment(markdown=True).get_template("incident.md.j2").render(**ctx, html_name=html_path.name)
    for path, text in ((html_path, html), (md_path, md)):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return ReportPaths(html=html_path, markdown=md_path)
