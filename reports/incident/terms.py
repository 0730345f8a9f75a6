"""How the retrospective writes times, offsets, alert labels and event names, and the colours of its
timeline lanes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import duckdb

from gpusre.models.failures.hw_incidents import NODE_STATE_LABEL
from gpusre.reports.coverage import SOURCES, loaded_sources
from gpusre.reports.kit.formatting import MISSING, gpuh, jobs_and_requeued_runs, nodes_text, plural
from gpusre.reports.kit.labels import incident_kind
from gpusre.models.warehouse import table_columns

if TYPE_CHECKING:  # the incident module formats with these helpers
    from gpusre.reports.incident.incident import Incident


#: An alertname / event kind on more nodes than this gets one lane for all of them.
GROUP_NODES = 4


@dataclass(frozen=True)
class EvidenceWords:
    """What a hardware incident's evidence is called: log lines, or — for an outage nothing logged
    (``label_source`` ``node_state``) — Slurm's node states, never "log evidence" it does not have."""

    evidence: str  # "log evidence"
    lines: str     # "failure lines" (they "span" a time)
    line: str      # "log line" (its last one)


LOG_EVIDENCE = EvidenceWords("log evidence", "failure lines", "log line")
NODE_STATE_EVIDENCE = EvidenceWords("node-state evidence", "node states", "node state")


def evidence_words(h: dict[str, Any]) -> EvidenceWords:
    """:data:`NODE_STATE_EVIDENCE` for an incident made of node states alone, else :data:`LOG_EVIDENCE`."""
    return NODE_STATE_EVIDENCE if h.get("label_source") == NODE_STATE_LABEL else LOG_EVIDENCE


def evidence_count(h: dict[str, Any]) -> str:
    """'3 events', or '0 log lines' for an incident made of node states alone (its evidence is no event)."""
    if evidence_words(h) is NODE_STATE_EVIDENCE:
        return "0 log lines"
    return plural(h.get("n_events"), "event")


ALERT_COLOURS = {"root": "#c62828", "member": "#ef6c00", "context": "#90a4ae"}

EVENT_COLOURS = {"hardware": "#c62828", "driver_firmware": "#8e24aa", "system_software": "#1e88e5",
                  "user_application": "#f9a825", "sympathetic": "#78909c"}

NODE_STATE_COLOURS = {"hardware": "#6d1b1b", "maintenance": "#1e88e5", "health_check": "#8e24aa",
                  "software": "#ef6c00", "unknown": "#78909c"}

WINDOW_COLOUR = "#c62828"

KIND_LABELS = {"xid": "Xid", "sxid": "SXid", "ecc_row_remap": "ECC row remap", "ib_link_down": "IB link down",
                "health_check": "NHC health check", "pcie_aer": "PCIe AER", "lustre_error": "Lustre error",
                "kernel_panic": "kernel panic", "oom_kill": "OOM kill", "slurmd_error": "slurmd error",
                "nic_link_down": "NIC link down", "edac_ce": "EDAC corrected", "edac_ue": "EDAC uncorrected",
                "mce": "MCE", "gsp_timeout": "GSP timeout", "lustre_disconnect": "Lustre connection lost",
                "lustre_eviction": "Lustre eviction", "nfs_soft_timeout": "NFS soft-mount timeout",
                "storage_quota": "quota / file system full", "storage_user_error": "file-system user error",
                "ipoib_mcast_join_failed": "IPoIB multicast join failed", "ipmi_memory": "BMC memory ECC",
                "ipmi_memory_ce": "BMC memory ECC corrected", "ipmi_pcie": "BMC PCIe bus error",
                "ipmi_sel_cleared": "BMC event cleared", "fabric_manager_down": "Fabric Manager down", "imex_down": "IMEX down",
                "ghes_pcie_error": "firmware PCIe error (GHES)", "ghes_processor_error": "firmware CPU error (GHES)",
                "ghes_error": "firmware hardware error (GHES)",
                # recovery lines (catalog/recovery_events.csv): what came back
                "ib_link_up": "IB link back ACTIVE", "nic_link_up": "NIC link back up",
                "lustre_recovered": "Lustre connection restored", "nfs_recovered": "NFS server OK again",
                "ipmi_thermal_cleared": "BMC temperature event deasserted",
                "ipmi_power_cleared": "BMC power-supply event deasserted",
                "driver_loaded": "NVIDIA driver loaded (node booted or driver reloaded)",
                "kernel_boot": "node rebooted (kernel boot)", "health_check_pass": "NHC health check passed"}


def as_utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


def when_text(ts: datetime | None) -> str:
    """'2026-08-11 16:55:17 UTC'."""
    t = as_utc(ts)
    return MISSING if t is None else t.strftime("%Y-%m-%d %H:%M:%S UTC")


def at_text(ts: datetime | None) -> str:
    """A table cell time (the column says UTC): '2026-08-11 16:55:17'."""
    t = as_utc(ts)
    return MISSING if t is None else t.strftime("%Y-%m-%d %H:%M:%S")


def clock_text(ts: datetime) -> str:
    """A time of day in UTC to the second: '05:30:00' (beside a full timestamp of the same day)."""
    return as_utc(ts).strftime("%H:%M:%S")  # type: ignore[union-attr]


def offset_text(ts: datetime | None, t0: datetime) -> str:
    """Signed offset from the incident start: '+0:12:05', '−0:05:00', '+2 d 03:00:00'."""
    t = as_utc(ts)
    if t is None:
        return MISSING
    s = int(round((t - t0).total_seconds()))
    sign = "−" if s < 0 else "+"
    d, rem = divmod(abs(s), 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    return f"{sign}{d} d {h:02d}:{m:02d}:{sec:02d}" if d else f"{sign}{h}:{m:02d}:{sec:02d}"


def labels_text(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items() if k != "alertname")


def event_label(kind: str | None, code: int | None) -> str:
    base = KIND_LABELS.get(kind or "", (kind or "event").replace("_", " "))
    return f"{base} {code}" if code is not None and kind in ("xid", "sxid", "ecc_row_remap") else base


def alert_location(alert: dict[str, Any]) -> str:
    return alert.get("node") or alert.get("target") or "(no node)"


def root_alert(inc: Incident) -> dict[str, Any] | None:
    if inc.kind != "alert":
        return None
    rid = inc.row.get("root_alert_id")
    alerts = inc.safe("alerts", [])
    return next((a for a in alerts if a["alert_id"] == rid), None) or next(
        (a for a in alerts if a["is_root"] and a["alert_incident"] == inc.id), None)


def what_text(inc: Incident, *, with_cause: bool = True) -> str:
    """'GPUFellOffBus on gpu068' / 'PCIe bus failure on gpu068 (xid 79)' / 'Rack power loss on gpu[033-040]
    (PDU breaker r5)' — the incident in a few words (:func:`~gpusre.reports.kit.labels.incident_kind`);
    ``with_cause=False`` leaves out the parenthesised root cause (a card shows it beneath). A long node
    list is shortened by whole hostlist ranges, never cut inside a name (:func:`nodes_phrase`)."""
    r = inc.row
    if inc.kind == "alert":
        return str(r.get("root_cause_candidate") or "alert incident")
    where = (f" under {r['leaf_switch']}" if r.get("leaf_switch") else
             f" on {nodes_phrase(r.get('nodes'), 40)}" if r.get("nodes") else "")
    cause = f" ({r['root_cause']})" if r.get("root_cause") and with_cause else ""
    # by the incident's spread: a rack's PDU trip is a "Rack power loss", not one node's power supply failure
    return f"{incident_kind(r.get('component'), r.get('scope'))}{where}{cause}"


# -- sources that were never loaded -----------------------------------------------------------

#: What a report writes instead of a count whose source was never loaded: "0 jobs" without Slurm
#: accounting would claim that no job ran, when nobody can know.
NOT_LOADED = {"sacct": "no Slurm accounting", "syslog": "no node logs", "slurm_events": "no node-state history",
              "alerts": "no alerts"}

#: A job-impact figure (jobs killed, lost GPU-hours, jobs again, health-check precision) without accounting.
UNKNOWN_NO_ACCOUNTING = "unknown: no Slurm accounting"

#: How ``marts.incident_repairs.repair_source`` estimated a repair without a drain of the nodes.
REPAIR_SOURCE_TEXT = {"recovery_events": "recovery log lines of its component class",
                      "health_check_pass": "a passing run of its health check after the last failure",
                      "reboot": "the node's reboot after its last failing health check",
                      "health_checks": "the health check's next run after its last failure",
                      "operator": "the end the operator wrote in incidents.csv",
                      "job_completed": "the node running a job again"}

def killed_split(inc: Incident) -> tuple[int, int] | None:
    """The killed runs the incident counts, split as the marts split them: ``(jobs, requeued runs)`` —
    jobs whose final run attribution gives it (``marts.job_failure_attribution``, or the alert incident's rule)
    and earlier runs Slurm requeued (``marts.instance_failure_attribution``), from the job list's ``counted``
    rows; None when the list has none (the caller then shows the mart's count alone). A job whose requeued
    run was killed and that then completed is no killed job: "0 jobs + 1 requeued run", as the nightly says."""
    counted = [j for j in inc.safe("failed_jobs", []) if j["counted"]]
    if not counted:
        return None
    jobs = len({j["job_id"] for j in counted if not j["instance_no"]})
    return jobs, sum(1 for j in counted if j["instance_no"])


def killed_text(inc: Incident, n_mart: int | None, *, verb: str = "") -> str:
    """'0 jobs + 1 requeued run' (``verb`` "killed": '0 jobs killed + 1 requeued run'): the counted runs
    by :func:`killed_split`, the mart's job count (``hw_incidents.affected_jobs``,
    ``alert_incidents.n_jobs_killed``) when the list has none."""
    split = killed_split(inc)
    jobs, requeued = split if split else (n_mart or 0, 0)
    if not verb:
        return jobs_and_requeued_runs(jobs, jobs + requeued)
    return f"{plural(jobs, 'job')} {verb}" + (f" + {plural(requeued, 'requeued run')}" if requeued else "")


def operator_text(h: dict[str, Any]) -> str:
    """What an operator-labelled hardware incident's ``start_ts`` → ``end_ts`` are: "the operator's window
    (incidents.csv OPS-1187, joined with the log evidence)" — the operator's start and end joined with the log lines,
    never evidence of their own (no log line need exist at either time)."""
    op = f" {h['operator_id']}" if h.get("operator_id") else ""
    return f"the operator's window (incidents.csv{op}, joined with the log evidence)"


def first_evidence_sql(con: duckdb.DuckDBPyConnection) -> str:
    """A select-list item ``first_evidence_ts`` for a query over ``marts.hw_incidents`` (not aliased): the
    incident's first log line, ``marts.incident_repairs.first_evidence_ts`` — ``NULL`` when that mart (or the
    column) is missing, and then :func:`start_note` says nothing rather than guess."""
    if "first_evidence_ts" not in table_columns(con, "marts.incident_repairs"):
        return "NULL::TIMESTAMPTZ AS first_evidence_ts"
    return ("(SELECT r.first_evidence_ts FROM marts.incident_repairs AS r "
            "WHERE r.incident_id = hw_incidents.incident_id LIMIT 1) AS first_evidence_ts")


def start_note(h: dict[str, Any], clock: Callable[[datetime], str]) -> str:
    """What a hardware incident's start (``marts.hw_incidents.start_ts``) is, when it is not its first log
    line: ' (operator's window; first log line 05:30)' — an operator's window (incidents.csv) that starts
    before the log evidence is the incident's start (attribution and repairs count from it), and every report
    shows that start with this one label; ' (operator's window; no log evidence)' for an operator's incident
    without log evidence (``n_events`` 0); '' otherwise (the start is the first log line). ``h`` holds
    ``start_ts``, ``label_source``, ``first_evidence_ts`` (:func:`first_evidence_sql`, or the repair record's)
    and optionally ``n_events``; ``clock`` writes the first line's time (``utc_hm``: '05:30'), with its date
    when it falls on another UTC day than the start."""
    start = as_utc(h.get("start_ts"))
    if h.get("label_source") != "operator" or start is None:
        return ""
    first = as_utc(h.get("first_evidence_ts"))
    if first is None:
        return " (operator's window; no log evidence)" if h.get("n_events") == 0 else ""
    if start >= first:
        return ""
    when = clock(first) if first.date() == start.date() else f"{first:%Y-%m-%d} {clock(first)}"
    return f" (operator's window; first log line {when})"


def nodes_phrase(nodes: Any, max_len: int) -> str:
    """A hostlist within about ``max_len`` characters, cut only between whole names:
    'gpu[0001-0004,0009]' or 'gpu[0001-0004] and 3 more nodes' — never 'gpu[0001-00…'."""
    full = nodes_text(nodes)
    ordered = sorted(nodes or [])
    if len(full) <= max_len or len(ordered) < 2:
        return full
    shown = 1
    for k in range(2, len(ordered)):
        if len(nodes_text(ordered[:k])) + len(f" and {len(ordered) - k} more nodes") > max_len:
            break
        shown = k
    rest = len(ordered) - shown
    return f"{nodes_text(ordered[:shown])} and {rest} more node{'s' if rest != 1 else ''}"


#: The one order of "the costliest" hardware incident in every report (nightly, SLO review, the incident
#: list): lost GPU-hours, then jobs killed, then nodes hit, then the earliest, then the id — so tied
#: incidents name the same one everywhere. An ``ORDER BY`` body over ``marts.hw_incidents`` columns.
COSTLIEST_ORDER = ("lost_gpu_hours DESC NULLS LAST, affected_jobs DESC NULLS LAST, len(nodes) DESC NULLS LAST, "
                   "start_ts, incident_id")


def tie_text(n_tied: int | None, lost: float | None) -> str:
    """' (one of 4 incidents that each lost 1,024 GPU-hours)' when the costliest shares its loss with
    others (:data:`COSTLIEST_ORDER` picked it), else ''."""
    if not n_tied or n_tied < 2 or lost is None:
        return ""
    return f" (one of {n_tied} incidents that each lost {gpuh(lost)} GPU-hours)"


#: What ``marts.hw_incidents.hours_to_recovery`` measures, for the nightly's and the SLO review's incident
#: tables: ``recovered_ts`` is the START of the first job that went on to complete on the incident's last node.
COMPLETING_JOB_CAPTION = ("Completing job started: hours from the incident's end (its last evidence, or the end of an "
                          "operator's window when later) until the last of "
                          "its nodes started a job that went on to complete — that job's start, not its end (a job "
                          "that ran 12:00–16:00 counts at 12:00).")

#: A logged recovery (``repair_source = 'recovery_events'``, ``catalog/recovery_events.csv``) by component
#: class: what came back (a key moment) and what the outage lasted to (a sentence).
_RECOVERY_BY_CLASS = {"network": ("links back ACTIVE", "the links' recovery"),
                      "storage": ("file system back on its clients", "the file system's recovery on its clients"),
                      "thermal": ("BMC sensors deasserted", "the BMC sensors' deassertion"),
                      "power": ("BMC sensors deasserted", "the BMC sensors' deassertion")}

#: The other repair ends of ``marts.incident_repairs``: (key moment, what the outage lasted to).
_REPAIR_END = {"node_states": ("last linked node back in service", "the last linked node back in service"),
               "health_check_pass": ("health check passing again", "the first passing run of its health check"),
               "reboot": ("node rebooted after its last failing health check", "the node's reboot"),
               "health_checks": ("health check's next run after its last failure", "the health check's next run"),
               "operator": ("end written by the operator (incidents.csv)", "the end the operator wrote"),
               "job_completed": ("a job that went on to complete started on its node",
                                 "the start of a job on its node that went on to complete")}


def repair_end(rep: dict[str, Any] | None) -> tuple[datetime, str, str] | None:
    """When a hardware incident's repair record (``marts.incident_repairs``) ends and how: ``(repaired_ts,
    key moment, what the outage lasted to)`` — ``(03:12:08, "links back ACTIVE", "the links' recovery")``;
    None while it is not repaired (or the record has no end)."""
    if not rep or rep.get("repaired_ts") is None:
        return None
    source = str(rep.get("repair_source") or "")
    if source == "recovery_events":
        moment, to = _RECOVERY_BY_CLASS.get(str(rep.get("component_class") or ""),
                                            ("recovery logged on every node", "the recovery its nodes logged"))
    else:
        moment, to = _REPAIR_END.get(source, ("repaired", "the repair"))
    return as_utc(rep["repaired_ts"]), moment, to  # type: ignore[return-value]


def repair_source_text(rep: dict[str, Any] | None) -> str | None:
    """How ``marts.incident_repairs`` timed a repair without a drain, named by what recovered: "recovery log
    lines — file system back on its clients" for a Lustre outage, "— links back ACTIVE" for a link's — the
    recovery of the incident's own component class (``catalog/recovery_events.csv``), never another class's
    example; :data:`REPAIR_SOURCE_TEXT` for the other sources; None for an unknown source."""
    source = str((rep or {}).get("repair_source") or "")
    if source == "recovery_events":
        moment = _RECOVERY_BY_CLASS.get(str((rep or {}).get("component_class") or ""), ("recovery logged on every node",))[0]
        return f"recovery log lines — {moment}"
    return REPAIR_SOURCE_TEXT.get(source)


def missing_sources(con: duckdb.DuckDBPyConnection) -> frozenset[str]:
    """The sources of :data:`SOURCES` that never loaded a record."""
    return frozenset(SOURCES) - loaded_sources(con)


def incident_missing(inc: Incident) -> frozenset[str]:
    """:func:`missing_sources` of the incident's warehouse, read once per report."""
    cached = inc.__dict__.get("_missing_sources")
    if cached is None:
        cached = inc.__dict__["_missing_sources"] = missing_sources(inc.con)
    return cached


# -- timeline --------------------------------------------------------------------------------


def lane_keys(rows: list[dict[str, Any]], name: Callable[[dict[str, Any]], str],
               loc: Callable[[dict[str, Any]], str]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped into lanes 'name · location'; a name on more than a few locations gets one lane."""
    locs: dict[str, set[str]] = {}
    for r in rows:
        locs.setdefault(name(r), set()).add(loc(r))
    lanes: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        n = name(r)
        key = f"{n} · {len(locs[n])} nodes" if len(locs[n]) > GROUP_NODES else f"{n} · {loc(r)}"
        lanes.setdefault(key, []).append(r)
    return lanes
