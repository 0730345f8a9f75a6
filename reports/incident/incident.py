"""Finding one incident (alert or hardware) and loading what its retrospective reads: the incident row,
its linked incidents, alerts, node events, jobs, node states and repair records, each read once and
cached; a read that fails is recorded so its section says so."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import duckdb

from gpusre.models.failures.health_checks import CHECK_NAME_PATTERN
from gpusre.models.reliability.repair_times import load_health_evidence_kinds, load_recovery_kinds
from gpusre.models.vocabulary import KILLED_STATES, RESTART_STATES
from gpusre.models.logs.node_event_copies import node_events_once_sql
from gpusre.models.warehouse import select_columns, table_columns, table_exists
from gpusre.reports.incident.terms import as_utc
from gpusre.reports.kit.formatting import truncate
from gpusre.reports.kit.warehouse import query_rows

log = logging.getLogger(__name__)


#: States of an earlier (requeued) instance that mean it was interrupted: killed, or restarted.
INTERRUPTED_STATES = (*KILLED_STATES, *RESTART_STATES)

#: Blast-radius window of an alert incident: [start − 15 min, last alert start + 5 min]
#: (``AlertClusteringSettings.job_before_minutes`` / ``job_after_minutes``).
JOB_BEFORE = timedelta(minutes=15)

JOB_AFTER = timedelta(minutes=5)

#: Timeline margin around the incident window: a share of its length, at least a minimum.
MARGIN_SHARE = 0.10

MARGIN_MIN = timedelta(minutes=10)

#: A drain this long after the incident start is shown on the timeline (incident_repairs links up to 24 h).
DRAIN_LINK = timedelta(hours=24)


def recovery_line_kinds() -> list[str]:
    """Event kinds that say a node came back (``catalog/recovery_events.csv``: a component class's recovery,
    a reboot, a passing health check)."""
    return sorted(set(load_recovery_kinds().get_column("kind").to_list())
                  | set(load_health_evidence_kinds().get_column("kind").to_list()))


class UnknownIncidentError(LookupError):
    """The id is neither an alert incident nor a hardware incident; the message names recent ids."""


def parse_labels(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    try:
        data = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def recent_incident_ids(con: duckdb.DuckDBPyConnection, n: int = 5) -> dict[str, list[str]]:
    """The ``n`` most recent ids of each kind: ``{"alert": [...], "hw": [...]}`` (empty when not built)."""
    out: dict[str, list[str]] = {}
    for kind, table in (("alert", "marts.alert_incidents"), ("hw", "marts.hw_incidents")):
        try:
            out[kind] = [r[0] for r in con.execute(
                f"SELECT incident_id FROM {table} ORDER BY start_ts DESC NULLS LAST, incident_id LIMIT {int(n)}"
            ).fetchall()] if table_exists(con, table) else []
        except duckdb.Error:
            out[kind] = []
    return out


def find_incident(con: duckdb.DuckDBPyConnection, incident_id: str) -> tuple[str, dict[str, Any]]:
    """``("alert" | "hw", row)`` for an incident id, or for the operator's id of a hardware incident
    (``OPS-1`` of ``incidents.csv``, case and surrounding spaces ignored: tickets quote the operator's id);
    :class:`UnknownIncidentError` (one line, with the five most recent ids of each kind) when it is neither."""
    for kind, table in (("alert", "marts.alert_incidents"), ("hw", "marts.hw_incidents")):
        if table_exists(con, table):
            rows = query_rows(con, f"SELECT * FROM {table} WHERE incident_id = ? LIMIT 1", [incident_id])
            if rows:
                return kind, rows[0]
    if "operator_id" in table_columns(con, "marts.hw_incidents"):
        # parse.py refuses repeated operator ids, so one row at most; the order only makes a stale
        # warehouse's answer deterministic.
        rows = query_rows(con, "SELECT * FROM marts.hw_incidents WHERE lower(trim(operator_id)) = lower(trim(?)) "
                               "ORDER BY start_ts, incident_id LIMIT 1", [incident_id])
        if rows:
            return "hw", rows[0]
    recent = recent_incident_ids(con)
    parts = []
    for kind, what in (("alert", "alert incidents"), ("hw", "hardware incidents")):
        parts.append(f"recent {what}: " + (", ".join(recent[kind]) if recent[kind] else "none"))
    raise UnknownIncidentError(f"unknown incident id {incident_id!r} (not in marts.alert_incidents or "
                               f"marts.hw_incidents, nor an operator id of incidents.csv); {'; '.join(parts)}")


class Incident:
    """The focus incident, the incidents linked to it, its nodes and window; warehouse rows loaded on
    first use (a failing query fails only the sections that use it)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, kind: str, row: dict[str, Any]) -> None:
        self.con = con
        self.kind = kind
        self.row = row
        self.id = str(row["incident_id"])
        self.start: datetime = as_utc(row["start_ts"])  # type: ignore[assignment]
        self.end: datetime = as_utc(row.get("end_ts")) or self.start
        self.has_alert_marts = table_exists(con, "marts.alert_incidents")
        self.has_members = table_exists(con, "marts.alert_incident_members")
        self.has_alerts = table_exists(con, "core.alerts")
        self.has_hw = table_exists(con, "marts.hw_incidents")
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
                self.hw_incidents = query_rows(con, "SELECT * FROM marts.hw_incidents WHERE list_contains(?, incident_id) "
                                               "ORDER BY start_ts, incident_id", [sorted(hw_ids)])
        else:
            self.hw_incidents = [row]
            if self.has_alert_marts:
                member_sql = ("OR incident_id IN (SELECT incident_id FROM marts.alert_incident_members "
                              "WHERE hw_incident_id = ?)" if self.has_members else "")
                params = [self.id, self.id] if self.has_members else [self.id]
                self.alert_incidents = query_rows(con, f"""SELECT * FROM marts.alert_incidents
                                                      WHERE hw_incident_id = ? {member_sql}
                                                      ORDER BY start_ts, incident_id""", params)
        nodes = set(row.get("nodes") or [])
        if kind == "alert":  # an alert incident on a switch or file system: the nodes of its hw incident
            for h in self.hw_incidents:
                nodes |= set(h.get("nodes") or [])
        self.nodes: list[str] = sorted(nodes)
        self.anchor_nodes: list[str] = sorted(set(row.get("nodes") or []))
        # The first sign and the end of the outage: the first log line or alert, to the last log line, the
        # repair (a Lustre recovery 45 min after 64 s of error lines) and the drain. An operator's times
        # (incidents.csv) are no sign the cluster gave: they widen the window drawn, not the offsets.
        starts = [self.start if kind == "alert" else None] + [as_utc(r["start_ts"]) for r in self.alert_incidents]
        ends = [self.end if kind == "alert" else None]
        for h in self.hw_incidents:
            first, last = self.evidence_span(h)
            starts.append(first)
            ends.append(last)
        ends += [as_utc(r.get("repaired_ts")) for r in self.safe("repairs", [])]
        self.t0: datetime = min(t for t in starts if t is not None)
        self.t1: datetime = max([t for t in ends if t is not None] or [self.t0])
        if kind == "alert":
            self.t1 = max(self.t1, self.safe("last_alert_start", None) or self.t1)
        drain = self.drain_start
        if drain is not None and self.t0 <= drain <= self.t0 + DRAIN_LINK:
            self.t1 = max(self.t1, drain)
        span = self.t1 - self.t0
        margin = max(MARGIN_MIN, span * MARGIN_SHARE)
        self.w0, self.w1 = self.t0 - margin, self.t1 + margin
        for h in self.hw_incidents:
            op = self.operator_span(h)
            if op is not None:
                self.w0, self.w1 = min(self.w0, op[0]), max(self.w1, op[1])

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

    def _repair_row(self, incident_id: str) -> dict[str, Any] | None:
        return next((r for r in self.safe("repairs", []) if r.get("incident_id") == incident_id), None)

    def evidence_span(self, h: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
        """A linked hardware incident's log evidence: its first and last log line. From
        ``marts.incident_repairs.first_evidence_ts`` / ``last_evidence_ts``; a warehouse built before
        ``last_evidence_ts``: its member events' last line (the rows :attr:`events` already read). An
        incident nobody labelled spans its evidence (``start_ts`` / ``end_ts``); an operator's (incidents.csv)
        spans the operator's window too, never taken for evidence. ``(None, None)``: no log evidence."""
        rep = self._repair_row(str(h["incident_id"])) or {}
        first, last = as_utc(rep.get("first_evidence_ts")), as_utc(rep.get("last_evidence_ts"))
        if first is not None and last is None:
            last = self._last_member_line(str(h["incident_id"]))
        if h.get("label_source") != "operator":
            first = first or as_utc(h.get("start_ts"))
            last = last or as_utc(h.get("end_ts")) or first
        return first, last if last is None or first is None or last >= first else first

    def _last_member_line(self, incident_id: str) -> datetime | None:
        """The latest member event of a hardware incident (marts.hw_incident_members, core.node_events): the
        last evidence line, for a warehouse whose marts.incident_repairs predates ``last_evidence_ts``."""
        if not (table_exists(self.con, "marts.hw_incident_members") and table_exists(self.con, "core.node_events")):
            return None
        try:
            row = self.con.execute("""SELECT e.ts FROM core.node_events e JOIN marts.hw_incident_members m USING (event_id)
                                      WHERE m.incident_id = ? ORDER BY e.ts DESC LIMIT 1""", [incident_id]).fetchone()
        except duckdb.Error as exc:
            self.failed["last evidence"] = f"{type(exc).__name__}: {truncate(exc, 200)}"
            return None
        return as_utc(row[0]) if row else None

    @staticmethod
    def operator_span(h: dict[str, Any]) -> tuple[datetime, datetime] | None:
        """The span of an operator-labelled hardware incident (``label_source`` operator): the operator's
        start and end of ``incidents.csv`` joined with its log evidence (``marts.hw_incidents.start_ts`` /
        ``end_ts``); None for an incident nobody labelled."""
        if h.get("label_source") != "operator" or h.get("start_ts") is None:
            return None
        start = as_utc(h["start_ts"])
        return start, as_utc(h.get("end_ts")) or start  # type: ignore[return-value]

    @cached_property
    def last_alert_start(self) -> datetime | None:
        if self.kind != "alert" or not (self.has_members and self.has_alerts):
            return None
        return as_utc(self.con.execute("""SELECT max(a.starts_at) FROM core.alerts a JOIN marts.alert_incident_members m
                                        USING (alert_id) WHERE m.incident_id = ?""", [self.id]).fetchone()[0])

    @cached_property
    def repairs(self) -> list[dict[str, Any]]:
        if not self.hw_incidents or not table_exists(self.con, "marts.incident_repairs"):
            return []
        return query_rows(self.con, "SELECT * FROM marts.incident_repairs WHERE list_contains(?, incident_id) "
                               "ORDER BY incident_start_ts, incident_id", [self.hw_incident_ids])

    @cached_property
    def health_checks(self) -> list[dict[str, Any]]:
        """``marts.health_check_quality`` rows of the NHC checks whose failing lines are members of the linked
        hardware incidents (the check name as that mart extracts it, ``CHECK_NAME_PATTERN``): how often each
        check's firings preceded a job failure, for a meeting judging a possible false positive."""
        if (not self.hw_incident_ids or not table_exists(self.con, "marts.health_check_quality")
                or not table_exists(self.con, "marts.hw_incident_members")):
            return []
        return query_rows(self.con, """SELECT q.check_name, q.component, q.firings, q.preceded_job_failure, q.precision
                                  FROM marts.health_check_quality q
                                  WHERE q.check_name IN (
                                      SELECT regexp_extract(e.message, ?, 1) FROM core.node_events e
                                      JOIN marts.hw_incident_members m USING (event_id)
                                      WHERE list_contains(?, m.incident_id) AND e.kind = 'health_check')
                                  ORDER BY q.check_name""", [CHECK_NAME_PATTERN, self.hw_incident_ids])

    @cached_property
    def recovery_lines(self) -> list[dict[str, Any]]:
        """The recovery log lines on the incident's nodes after its first evidence, through the timeline
        window: the kinds of ``catalog/recovery_events.csv`` (a port back ``ACTIVE``, a Lustre client
        reconnected, a kernel boot, a passing NHC run) — what the nodes logged as they came back, which
        :attr:`events` leaves out as informational. Each node's first line of each kind only (a healthy
        node's NHC may log a pass every run)."""
        first = min((self.evidence_span(h)[0] for h in self.hw_incidents if self.evidence_span(h)[0] is not None),
                    default=None)
        if first is None or not self.nodes or not table_exists(self.con, "core.node_events"):
            return []
        kinds = recovery_line_kinds()
        # Each node's first line of each kind: a selection of lines (DISTINCT ON), not an aggregate.
        rows = query_rows(self.con, """SELECT DISTINCT ON (kind, node) kind, node, ts, message
                                  FROM core.node_events
                                  WHERE list_contains(?, node) AND list_contains(?, kind) AND ts > ? AND ts <= ?
                                  ORDER BY kind, node, ts, event_id""", [self.nodes, kinds, first, self.w1])
        for r in rows:
            r["ts"] = as_utc(r["ts"])
        return sorted(rows, key=lambda r: (r["ts"], r["node"]))

    @cached_property
    def drain_start(self) -> datetime | None:
        starts = [as_utc(r["drain_start_ts"]) for r in self.safe("repairs", []) if r.get("drain_start_ts")]
        return min(starts) if starts else None  # type: ignore[type-var]

    @cached_property
    def back_in_service(self) -> datetime | None:
        back = [as_utc(r["back_in_service_ts"]) for r in self.safe("repairs", []) if r.get("back_in_service_ts")]
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
            rows = query_rows(self.con, f"""SELECT {cols}, m.incident_id AS alert_incident, m.is_root, m.level,
                                              m.hw_incident_id
                                       FROM core.alerts a LEFT JOIN marts.alert_incident_members m USING (alert_id)
                                       WHERE list_contains(?, m.incident_id)
                                          OR (list_contains(?, a.node) AND a.starts_at BETWEEN ? AND ?)
                                       ORDER BY a.starts_at, a.alertname, a.node, alert_id""",
                         [self.alert_incident_ids, self.nodes, self.w0, self.w1])
        else:
            rows = query_rows(self.con, f"""SELECT {cols}, NULL AS alert_incident, NULL AS is_root, NULL AS level,
                                              NULL AS hw_incident_id
                                       FROM core.alerts a WHERE list_contains(?, a.node) AND a.starts_at BETWEEN ? AND ?
                                       ORDER BY a.starts_at, a.alertname, a.node, alert_id""",
                         [self.nodes, self.w0, self.w1])
        ids = set(self.alert_incident_ids)
        for r in rows:
            r["in_incident"] = r["alert_incident"] in ids
            r["labels_map"] = parse_labels(r["labels"])
            r["starts_at"], r["ends_at"] = as_utc(r["starts_at"]), as_utc(r["ends_at"])
        return rows

    @cached_property
    def events(self) -> list[dict[str, Any]]:
        """Node events on the nodes in the window (not ``informational``) plus the hardware incidents'
        member events, earliest first; ``member`` marks the latter. Each event once, as the failure marts
        read them (``sql/core/node_events_once.sql``): slurmd's report of an NHC run beside NHC's own line,
        a line rsyslog wrote to both syslog and kern.log, is one event (``hw_incidents.n_events`` counts it
        once; the timeline must not show it twice)."""
        if not table_exists(self.con, "core.node_events"):
            return []
        once = node_events_once_sql(self.con).strip().rstrip(";")
        ids = self.hw_incident_ids
        # one row per member event (an event may belong to several of the linked incidents)
        member = ("SELECT DISTINCT ON (event_id) event_id, incident_id AS hw_incident FROM marts.hw_incident_members "
                  "WHERE list_contains(?, incident_id) ORDER BY event_id, incident_id") if ids and table_exists(
            self.con, "marts.hw_incident_members") else "SELECT NULL::BIGINT AS event_id, NULL AS hw_incident WHERE false"
        params: list[Any] = ([ids] if "?" in member else []) + [self.nodes, self.w0, self.w1]
        rows = query_rows(self.con, f"""SELECT e.event_id, e.ts, e.node, e.kind, e.code, e.component, e.cause_class,
                                          e.severity, e.action, e.message, m.hw_incident
                                   FROM ({once}) e LEFT JOIN ({member}) m USING (event_id)
                                   WHERE m.hw_incident IS NOT NULL
                                      OR (list_contains(?, e.node) AND e.ts BETWEEN ? AND ?
                                          AND e.cause_class IS DISTINCT FROM 'informational')
                                   ORDER BY e.ts, e.node, e.event_id LIMIT 20000""", params)
        for r in rows:
            r["ts"] = as_utc(r["ts"])
            r["member"] = r["hw_incident"] is not None
        return rows

    @cached_property
    def first_events(self) -> dict[str, dict[str, Any]]:
        """Per linked hardware incident its first event (``first_event_id``, else its earliest member)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.hw_incidents or not table_exists(self.con, "core.node_events"):
            return out
        for h in self.hw_incidents:
            rows = []
            if h.get("first_event_id") is not None:
                rows = query_rows(self.con, "SELECT ts, node, kind, code, component, message FROM core.node_events "
                                       "WHERE event_id = ? LIMIT 1", [h["first_event_id"]])
            if not rows:
                rows = [e for e in self.events if e["hw_incident"] == h["incident_id"]][:1]
            if rows:
                out[str(h["incident_id"])] = rows[0]
        return out

    @cached_property
    def jobs(self) -> list[dict[str, Any]]:
        """Job instances on the nodes that overlap the window (``core.job_instances``, else ``core.jobs``)."""
        if not self.nodes or not table_exists(self.con, "core.jobs"):
            return []
        if table_exists(self.con, "core.job_instances"):
            sql = """SELECT i.job_id, i.instance_no, i.is_latest, i.state, i.start_ts, i.end_ts, i.n_gpus, i.nodes,
                            j.name, j."user", j.account
                     FROM core.job_instances i LEFT JOIN core.jobs j USING (job_id)
                     WHERE len(list_intersect(i.nodes, ?)) > 0 AND i.start_ts <= ? AND (i.end_ts IS NULL OR i.end_ts >= ?)"""
        else:
            sql = """SELECT job_id, 1 AS instance_no, true AS is_latest, state, start_ts, end_ts, n_gpus, nodes, name,
                            "user", account
                     FROM core.jobs WHERE len(list_intersect(nodes, ?)) > 0 AND start_ts <= ?
                                     AND (end_ts IS NULL OR end_ts >= ?)"""
        rows = query_rows(self.con, sql + " ORDER BY start_ts, job_id LIMIT 5000", [self.nodes, self.w1, self.w0])
        for r in rows:
            r["start_ts"], r["end_ts"] = as_utc(r["start_ts"]), as_utc(r["end_ts"])
        return rows

    @cached_property
    def node_states(self) -> list[dict[str, Any]]:
        if not self.nodes or not table_exists(self.con, "core.node_states"):
            return []
        rows = query_rows(self.con, """SELECT node, state, state_text, start_ts, end_ts, reason, reason_class,
                                         availability_class
                                  FROM core.node_states WHERE list_contains(?, node) AND start_ts <= ?
                                    AND (end_ts IS NULL OR end_ts >= ?) ORDER BY start_ts, node""",
                     [self.nodes, self.w1, self.w0])
        for r in rows:
            r["start_ts"], r["end_ts"] = as_utc(r["start_ts"]), as_utc(r["end_ts"])
        return rows

    # -- blast radius --------------------------------------------------------------------------

    @property
    def job_window(self) -> tuple[datetime, datetime]:
        """Failures on the nodes ending in this window are listed (and, for an alert incident, counted: the
        mart's rule, to its last alert start). A hardware incident's runs from its first sign to its repair
        (``marts.incident_repairs.repaired_ts``) when known, else its last evidence: the jobs a Lustre outage
        kills die while it lasts, not only while its error lines are logged."""
        if self.kind == "alert":
            return self.start - JOB_BEFORE, (self.safe("last_alert_start", None) or self.start) + JOB_AFTER
        first, last = self.evidence_span(self.row)
        repaired = as_utc((self._repair_row(self.id) or {}).get("repaired_ts"))
        end = max([t for t in (last, repaired) if t is not None] or [self.end])
        return (first or self.start) - JOB_BEFORE, end + JOB_AFTER

    @cached_property
    def failed_jobs(self) -> list[dict[str, Any]]:
        """Jobs that ended FAILED / NODE_FAIL on the nodes in :attr:`job_window`, plus jobs attributed to a
        linked hardware incident; ``counted`` follows the mart of the focus incident."""
        if not table_exists(self.con, "core.jobs"):
            return []
        lo, hi = self.job_window
        has_attr = table_exists(self.con, "marts.job_failure_attribution")
        attr = (f"""SELECT {select_columns(self.con, 'marts.job_failure_attribution',
                                   ['job_id', 'attribution', 'rule', 'component', 'incident_id', 'lost_gpu_hours'])}
                    FROM marts.job_failure_attribution QUALIFY row_number() OVER (PARTITION BY job_id) = 1"""
                if has_attr else "SELECT NULL::VARCHAR AS job_id, NULL::VARCHAR AS attribution, NULL::VARCHAR AS rule, "
                                 "NULL::VARCHAR AS component, NULL::VARCHAR AS incident_id, NULL::DOUBLE AS lost_gpu_hours "
                                 "WHERE false")
        rows = query_rows(self.con, f"""SELECT j.job_id, j.name, j."user", j.account, j.state, j.start_ts, j.end_ts, j.n_gpus,
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
            r["start_ts"], r["end_ts"] = as_utc(r["start_ts"]), as_utc(r["end_ts"])
            if self.kind == "alert":
                r["counted"] = self._alert_counts(r, lo, hi, anchor)
            else:  # marts.hw_incidents.affected_jobs: attributed to this incident
                r["counted"] = r["attribution"] == "infrastructure" and r["attributed_incident"] == self.id
        rows += self._interrupted_instances(lo, hi)
        for r in rows:
            r["start_ts"], r["end_ts"] = as_utc(r["start_ts"]), as_utc(r["end_ts"])
        return rows

    def _interrupted_instances(self, lo: datetime, hi: datetime) -> list[dict[str, Any]]:
        """Earlier instances of requeued jobs that ended in a failure state on the nodes in the window, or that
        ``marts.instance_failure_attribution`` gives to a linked hardware incident. A hardware incident's
        ``affected_jobs`` counts the ones attributed to it (Slurm requeued the job, but the run was killed),
        an alert incident's ``n_jobs_killed`` the killed ones on its nodes in its window."""
        if not table_exists(self.con, "core.job_instances"):
            return []
        has_attr = table_exists(self.con, "marts.instance_failure_attribution")
        attr = (f"""SELECT {select_columns(self.con, 'marts.instance_failure_attribution',
                                   ['job_id', 'instance_no', 'attribution', 'rule', 'component', 'incident_id',
                                    'lost_gpu_hours'])} FROM marts.instance_failure_attribution""" if has_attr else
                "SELECT NULL::VARCHAR AS job_id, NULL::INTEGER AS instance_no, NULL::VARCHAR AS attribution, "
                "NULL::VARCHAR AS rule, NULL::VARCHAR AS component, NULL::VARCHAR AS incident_id, "
                "NULL::DOUBLE AS lost_gpu_hours WHERE false")
        rows = query_rows(self.con, f"""SELECT i.job_id, i.instance_no, j.name, j."user", j.account, i.state, i.start_ts,
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
        anchor = set(self.anchor_nodes)
        for r in rows:
            r["start_ts"], r["end_ts"] = as_utc(r["start_ts"]), as_utc(r["end_ts"])
            r["counted"] = (self._alert_counts(r, lo, hi, anchor) if self.kind == "alert" else
                            r["attribution"] == "infrastructure" and r["attributed_incident"] == self.id)
        return rows

    def _alert_counts(self, r: dict[str, Any], lo: datetime, hi: datetime, anchor: set[str]) -> bool:
        """The rule of ``marts.alert_incidents.n_jobs_killed`` for one job run (a final or a requeued one,
        ``models/alerts/clustering.py`` "Blast radius"): killed (ended FAILED / NODE_FAIL, or given by
        attribution to a hardware incident whatever its state: a run Slurm requeued after a GPU fault ends
        REQUEUED) and not the user's fault, and either on the incident's nodes in the window and not blamed
        on a hardware incident this alert incident is not about, or given by attribution to a hardware
        incident it is about, whenever it ended. It is about every hardware incident its member alerts
        matched (:attr:`hw_incident_ids`), as in the mart."""
        about = set(self.hw_incident_ids)
        killed = r["state"] in KILLED_STATES or (r["attribution"] == "infrastructure"
                                                 and r["attributed_incident"] is not None)
        if not killed or r["end_ts"] is None or r["attribution"] == "user":
            return False
        if r["attributed_incident"] in about:
            return True
        return (lo <= r["end_ts"] <= hi and bool(anchor & set(r["nodes"] or []))
                and r["attributed_incident"] is None)
