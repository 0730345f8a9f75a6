"""Slurm node-state history of a simulated cluster: nightly ``sacctmgr show event`` dumps and their truth.

What slurmctld/slurmdbd would have recorded, consistent with the simulation:

* **Faults** (every fault the scheduler applied, ``truth/faults.csv``): a ``job_fail`` fault (GPU, NVLink,
  InfiniBand, Lustre) is found by LBNL NHC at its first failing run, which drains the node
  (``DRAIN``, ``NHC: <check>:  <text>``, the same text NHC logs in the node's syslog); a ``node_fail``
  fault (kernel panic, DIMM UE, PSU) makes slurmctld mark the node ``DOWN*`` / ``Not responding`` at once
  (the jobs on it end NODE_FAIL then). An operator often replaces the reason after triage
  (``gpu ecc errors - rma``, ``DIMM UE - replace``, ``PSU failure - replace PSU2``...): slurmdbd then
  closes the event and opens a new one, so one outage may be two consecutive events. The last event
  ends when the repair ends (the scheduler's ``repair_s``); ``End=Unknown`` while ongoing at a dump.
* **Maintenance windows** (cluster.yaml): ``MAINT`` / ``DRAIN`` with ``planned maintenance: <reason>``
  over the window, minus the time the node was already out for a fault.
* **Admin drains** (``reboot requested``, ``testing new kernel``...) and **false-positive health checks**
  (NHC fails a process check for 10-30 min, then passes and puts the node back online; no fault).
  Both only where the job stream allows it: no job starts on the node while it is drained (running
  jobs finish: the state is ``DRNG`` then), and at least an hour away from any other outage.

Everything random is drawn from its own stream (``default_rng([seed, 5151])``), after the simulation:
the job stream, sacct dumps and existing node-log lines are unchanged. The false-positive NHC lines
are added to the node logs when ``health_check_logs`` is on.

Files::

    slurm_events/events_YYYY-MM-DD.txt  one per local day, cut at the sacct dump time (00:15 local next day):
        sacctmgr show event Start=<day-6> End=<day+1> -P
            format=Cluster,NodeName,TimeStart,TimeEnd,Duration,State,Reason,User
        (header line, cluster-local times, End=Unknown and Duration up to the cut while ongoing; the
        long-lived "Cluster Registered TRES" cluster event is listed too)
    truth/node_states.csv               every node event: node, state, start_ts, end_ts (the true end,
                                        possibly after the last dump), reason, user, cause (fault /
                                        maintenance / admin / false_positive), fault_id, fault_kind,
                                        reason_kind (nhc / operator / not_responding / maintenance /
                                        admin / false_positive_nhc)
    truth/faults.csv                    + detect_ts (when the node left service: the first event's start)
    truth/summary.json                  + in_service_node_hours (node-hours not covered by any node event
                                        over [horizon start, last dump]; + _by_utc_day), down_node_hours,
                                        node_hours_by_cause (planned-window time counts as maintenance),
                                        node_states_by_cause (event counts), node_state_events,
                                        node_state_drains_unplaced
"""

from __future__ import annotations

import csv
import json
import math
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusre.simulate.clock import LocalClock, format_duration
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import FaultEvent
from gpusre.simulate.log_bursts import (HEALTH_CHECKS, EventLines, NodeHardware, false_positive_health_check,
                                               health_check_text)
from gpusre.simulate.topology import MaintenanceWindow

__all__ = ["EVENT_FIELDS", "EVENTS_HEADER", "NODE_STATES_COLUMNS", "NodeState", "NodeBusy", "NodeStatePlan",
           "plan_node_states", "write_node_states"]

EVENT_FIELDS = ("Cluster", "NodeName", "TimeStart", "TimeEnd", "Duration", "State", "Reason", "User")
EVENTS_HEADER = "|".join(EVENT_FIELDS)
NODE_STATES_COLUMNS = ("node", "state", "start_ts", "end_ts", "reason", "user", "cause", "fault_id", "fault_kind",
                       "reason_kind")
#: Days each nightly dump looks back (``Start=<day-6>``: the dump day and the six before it).
DUMP_DAYS = 7
#: Seed suffix of this module's random stream.
STREAM = 5151
#: slurmctld's reason user for states it sets itself (not responding); NHC runs as root from slurmd.
SLURM_USER = "slurm(64030)"
ROOT = "root(0)"
ADMINS = ("root(0)", "jchen(21034)", "mkowalski(21871)")
#: LBNL NHC runs every HealthCheckInterval (slurm.conf) seconds; the default of SimulationConfig.nhc_interval_s.
NHC_INTERVAL_S = 300
#: Admin drains and false positives keep this far from any other outage of the node.
MARGIN_S = 3600

#: Operator reasons replacing the first one after triage, per fault kind ({gpu}, {link}, {hca}: the device hit).
OPERATOR_REASONS: dict[str, tuple[str, ...]] = {
    "xid79_fallen_off_bus": ("GPU {gpu} fell off the bus - RMA", "Xid 79 on GPU {gpu} - reseat and retest"),
    "xid48_dbe_ecc": ("gpu ecc errors - rma", "DBE on GPU {gpu} - RMA"),
    "xid94_contained_ecc": ("row remap pending on GPU {gpu} - reset", "GPU {gpu} ECC errors - reset"),
    "xid119_gsp_timeout": ("GSP timeout on GPU {gpu} - driver reload", "GPU {gpu} hung (GSP) - reset"),
    "xid74_nvlink": ("NVLink errors GPU {gpu} link {link} - reseat baseboard", "nvlink down on GPU {gpu}"),
    "ib_link_down": ("IB link down mlx5_{hca}", "replace IB cable mlx5_{hca}"),
    "lustre_mount_missing": ("lustre mount missing", "lustre client evicted - remount"),
    "kernel_panic": ("kernel panic - kdump collected", "crashed: kernel panic, vmcore saved"),
    "dimm_uncorrectable": ("DIMM UE - replace", "EDAC UE on DIMM - replace"),
    "psu_failure": ("PSU failure - replace PSU2", "power supply failed - RMA"),
    "gpu_overtemp": ("GPU {gpu} overheating - check fans", "thermal: GPU {gpu} over 90C - cold plate"),
    "host_overtemp_shutdown": ("thermal shutdown - check fans", "CPU overtemp shutdown - replace fan module"),
    "node_power_loss": ("lost power - PDU tripped", "no power on both feeds - facilities ticket"),
}
#: Share of job_fail faults whose NHC reason an operator replaces (node_fail: always, someone must look).
OPERATOR_NOTE_SHARE = 0.5
#: Admin drains unrelated to faults: (reason, median hours).
ADMIN_REASONS: tuple[tuple[str, float], ...] = (
    ("reboot requested", 0.5),
    ("testing new kernel", 3.0),
    ("draining for OS reimage", 2.0),
    ("NCCL perf investigation - ticket 4211", 2.0),
    ("reserved for benchmark run", 4.0),
)
#: NHC checks that fail with no fault behind them (a daemon restarting); process checks only.
FALSE_POSITIVE_CHECKS: tuple[tuple[str, str], ...] = (
    ("check_ps_service", "Service munged (process munged) owned by munge not running"),
    ("check_ps_service", "Service sshd (process sshd) owned by root not running"),
    ("check_ps_service", "Service chronyd (process chronyd) owned by chrony not running"),
)


@dataclass(frozen=True)
class NodeState:
    """One node event as slurmdbd records it; ``end`` is the true end (None: beyond anything simulated)."""

    node: int
    state: str
    start: int
    end: int
    reason: str
    user: str
    cause: str
    fault_id: int = 0
    fault_kind: str = ""
    reason_kind: str = ""


class NodeBusy:
    """Per node: start and end of every job instance that held it (for drains that must not block a start)."""

    def __init__(self, n_nodes: int) -> None:
        self.starts = [array("q") for _ in range(n_nodes)]
        self.ends = [array("q") for _ in range(n_nodes)]

    def add(self, nodes: tuple[int, ...], t0: int, t1: int) -> None:
        """One instance on ``nodes`` over [t0, t1)."""
        for n in nodes:
            self.starts[n].append(t0)
            self.ends[n].append(t1)

    def finish(self) -> None:
        """Sort by start (call once, before queries)."""
        for n, st in enumerate(self.starts):
            order = sorted(range(len(st)), key=st.__getitem__)
            self.starts[n] = array("q", (st[i] for i in order))
            self.ends[n] = array("q", (self.ends[n][i] for i in order))

    def next_start(self, node: int, t: int) -> int | None:
        """First job start on ``node`` at or after ``t``."""
        st = self.starts[node]
        i = bisect_left(st, t)
        return st[i] if i < len(st) else None

    def running(self, node: int, t: int) -> bool:
        """Whether a job holds ``node`` at ``t``."""
        st, en = self.starts[node], self.ends[node]
        i = bisect_right(st, t)
        # Jobs are hours long at most a few days: look back over the instances started before t.
        return any(en[j] > t for j in range(i - 1, max(-1, i - 400), -1))


@dataclass
class _FaultDraft:
    fault: FaultEvent
    detect_delay: float
    note_at: float | None          # operator triage delay (s after detection), None: no note
    note_template: str
    fallback_device: dict[str, int]


@dataclass
class NodeStatePlan:
    """Everything random about node states, drawn before the logs are written."""

    config: SimulationConfig
    clock: LocalClock
    names: list[str]
    windows: list[MaintenanceWindow]
    faults: list[_FaultDraft] = field(default_factory=list)
    admin: list[NodeState] = field(default_factory=list)
    false_positive: list[tuple[NodeState, list[float], str, str]] = field(default_factory=list)
    #: Drains drawn but not placed (no slot free of job starts and other outages on 8 random nodes).
    unplaced: int = 0

    def health_check_lines(self, out: EventLines, hw: list[NodeHardware]) -> None:
        """Add the NHC lines of the false-positive drains (a ``collect_events`` ``extra`` callback)."""
        for st, runs, check, text in self.false_positive:
            false_positive_health_check(out, runs, st.node, hw[st.node], check, text,
                                        self.config.nhc_message_style)


def _lognormal_s(rng: np.random.Generator, median_h: float, lo_s: int, hi_s: int) -> int:
    return int(min(hi_s, max(lo_s, median_h * 3600 * rng.lognormal(0.0, 0.6))))


def _fault_span(f: FaultEvent) -> tuple[int, int]:
    return f.ts, f.ts + f.repair_s


def plan_node_states(config: SimulationConfig, clock: LocalClock, names: list[str],
                     faults: list[tuple[FaultEvent, list[str]]], windows: list[MaintenanceWindow],
                     busy: NodeBusy) -> NodeStatePlan:
    """Draw detection delays, operator notes, admin drains and false-positive health checks."""
    rng = np.random.default_rng([config.seed, STREAM])
    plan = NodeStatePlan(config, clock, names, windows)
    for f, _ in faults:
        delay = float(rng.uniform(30, 110)) if f.effect == "job_fail" else 0.0
        templates = OPERATOR_REASONS.get(f.kind, ())
        noted = bool(templates) and (f.effect == "node_fail" or rng.random() < OPERATOR_NOTE_SHARE)
        triage = float(rng.uniform(600, 3600) if f.effect == "node_fail" else rng.uniform(1200, 4 * 3600))
        template = templates[int(rng.integers(len(templates)))] if templates else ""
        device = {"gpu": int(rng.integers(config.gpus_per_node)), "link": int(rng.integers(18)),
                  "hca": int(rng.integers(8))}
        plan.faults.append(_FaultDraft(f, delay, triage if noted else None, template, device))

    # Intervals each node must keep clear of (faults, windows, drains placed so far), with a margin.
    blocked: list[list[tuple[int, int]]] = [[] for _ in names]
    for f, _ in faults:
        a, b = _fault_span(f)
        blocked[f.node].append((a - MARGIN_S, b + MARGIN_S))
    for w in windows:
        for n in w.nodes:
            blocked[n].append((w.start - MARGIN_S, w.end + MARGIN_S))
    h0, h1 = clock.day_start[0], clock.day_start[-1]
    node_days = config.nodes * config.days

    def place(duration: int) -> tuple[int, int] | None:
        """A slot of ``duration`` s on a random node: no job starts in it, clear of blocked spans."""
        for _ in range(8):
            node = int(rng.integers(config.nodes))
            t = int(rng.integers(h0 + MARGIN_S, max(h0 + MARGIN_S + 1, h1 - duration - MARGIN_S)))
            for _ in range(400):
                if t + duration > h1 - MARGIN_S:
                    break
                clash = next(((a, b) for a, b in blocked[node] if a < t + duration and b > t), None)
                if clash is not None:
                    t = clash[1]
                    continue
                nxt = busy.next_start(node, t)
                if nxt is not None and nxt < t + duration:
                    t = nxt + 1  # drain right after that job started: it runs on, no new one starts
                    continue
                blocked[node].append((t - MARGIN_S, t + duration + MARGIN_S))
                return node, t
        return None

    n_admin = int(rng.poisson(config.admin_drains_per_1000_node_days / 1000 * node_days))
    for _ in range(n_admin):
        reason, median_h = ADMIN_REASONS[int(rng.integers(len(ADMIN_REASONS)))]
        user = ADMINS[int(rng.integers(len(ADMINS)))]
        duration = _lognormal_s(rng, median_h, 20 * 60, 8 * 3600)
        slot = place(duration)
        if slot is None:
            plan.unplaced += 1
            continue
        node, t = slot
        state = "DRNG" if busy.running(node, t) else "DRAIN"
        plan.admin.append(NodeState(node, state, t, t + duration, reason, user, "admin", reason_kind="admin"))

    n_fp = int(rng.poisson(config.false_positive_health_checks_per_1000_node_days / 1000 * node_days))
    for _ in range(n_fp):
        check, text = FALSE_POSITIVE_CHECKS[int(rng.integers(len(FALSE_POSITIVE_CHECKS)))]
        failing = int(rng.integers(2, 7))  # failing runs; the next one passes: 10-30 min out of service
        gaps = [config.nhc_interval_s * float(rng.uniform(0.97, 1.03)) for _ in range(failing)]
        duration = int(math.ceil(sum(gaps)))
        slot = place(duration)
        if slot is None:
            plan.unplaced += 1
            continue
        node, t = slot
        runs = [t + sum(gaps[:k]) for k in range(failing)]
        state = "DRNG" if busy.running(node, t) else "DRAIN"
        st = NodeState(node, state, t, t + duration, _drain_reason(check, text, config.nhc_message_style), ROOT,
                       "false_positive",
                       reason_kind="false_positive_nhc")
        plan.false_positive.append((st, runs, check, text))
    plan.admin.sort(key=lambda s: (s.start, s.node))
    plan.false_positive.sort(key=lambda x: (x[0].start, x[0].node))
    return plan


def _fault_states(plan: NodeStatePlan, nhc_first: dict[int, float], fabric_nhc_first: dict[tuple[int, int], float],
                  devices: dict[int, dict[str, int]]) -> tuple[list[NodeState], dict[int, int]]:
    """Node events of every fault, and each fault's detection (drain start) time."""
    out: list[NodeState] = []
    detect: dict[int, int] = {}
    for d in plan.faults:
        f = d.fault
        end = f.ts + f.repair_s
        if f.effect == "node_fail":
            t = f.ts
            out_first = ("DOWN*", "Not responding", SLURM_USER, "not_responding")
            note_state = "DRAIN*"
        else:
            logged = fabric_nhc_first.get((f.incident, f.node)) if f.incident else nhc_first.get(f.fault_id)
            t = int(round(logged)) if logged is not None else f.ts + int(round(d.detect_delay))
            device = devices.get(f.fault_id, d.fallback_device)
            if f.kind in HEALTH_CHECKS:
                check, text = _check_text(f.kind, device, plan.config.nhc_message_style)
                reason = _drain_reason(check, text, plan.config.nhc_message_style)
            else:
                reason = f"NHC: health check failed after {f.kind}"
            out_first = ("DRAIN", reason, ROOT, "nhc")
            note_state = "DRAIN"
        t = min(t, end - 1)
        detect[f.fault_id] = t
        kind = f.kind
        split = None
        if d.note_at is not None and t + d.note_at < end - 300:
            split = int(t + d.note_at)
        first_end = split if split is not None else end
        out.append(NodeState(f.node, out_first[0], t, first_end, out_first[1], out_first[2], "fault", f.fault_id,
                             kind, out_first[3]))
        if split is not None:
            device = devices.get(f.fault_id, d.fallback_device)
            reason = d.note_template.format(gpu=device.get("gpu", 0), link=device.get("link", 0),
                                            hca=device.get("hca", 0))
            user = ADMINS[(f.fault_id * 7) % len(ADMINS)]
            out.append(NodeState(f.node, note_state, split, end, reason, user, "fault", f.fault_id, kind, "operator"))
    return out, detect


def _drain_reason(check: str, text: str, style: str) -> str:
    """Slurm drain reason NHC sets: LBNL ``NHC: check:  text``; a site's own script its message."""
    if style == "lbnl":
        return f"NHC: {check}:  {text}"
    return f"HC: {text}" if style == "bare" else f"{check}: {text}"


def _check_text(kind: str, device: dict[str, int], style: str = "lbnl") -> tuple[str, str]:
    # The NHC message names the GPU by PCI address; every node has the same bus layout (NodeHardware).
    hw = NodeHardware(gpus_per_node=max(8, device.get("gpu", 0) + 1), slurmd_pid=0, nhc_base_pid=0, lustre_client="")
    return health_check_text(kind, hw, device, style)


def _subtract(a: int, b: int, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[a, b) minus the union of ``spans``."""
    pieces = []
    t = a
    for s, e in sorted(spans):
        if e <= t or s >= b:
            continue
        if s > t:
            pieces.append((t, s))
        t = max(t, e)
        if t >= b:
            break
    if t < b:
        pieces.append((t, b))
    return pieces


def _maintenance_states(plan: NodeStatePlan, faults: list[NodeState]) -> list[NodeState]:
    by_node: dict[int, list[tuple[int, int]]] = {}
    for s in faults:
        by_node.setdefault(s.node, []).append((s.start, s.end))
    out = []
    for i, w in enumerate(plan.windows):
        state = "MAINT" if i % 2 == 0 else "DRAIN"
        for n in sorted(w.nodes):
            for a, b in _subtract(w.start, w.end, by_node.get(n, [])):
                out.append(NodeState(n, state, a, b, f"planned maintenance: {w.reason}", ROOT, "maintenance",
                                     reason_kind="maintenance"))
    return out


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _truth_summary(states: list[NodeState], plan: NodeStatePlan, lo: int, hi: int) -> dict[str, Any]:
    """Node-hours in service (by UTC day) and lost per cause over [lo, hi): planned-window time counts
    as maintenance whatever else the node had (as cluster.yaml windows are accounted)."""
    n_nodes = plan.config.nodes
    by_node: dict[int, list[NodeState]] = {}
    for s in states:
        by_node.setdefault(s.node, []).append(s)
    day0, day_last = lo // 86400, (hi - 1) // 86400
    down_by_day = [0] * (day_last - day0 + 1)
    by_cause: Counter[str] = Counter()
    windows_of: dict[int, list[tuple[int, int]]] = {}
    for w in plan.windows:
        for n in w.nodes:
            windows_of.setdefault(n, []).append((w.start, w.end))
    for n, rows in by_node.items():
        for a, b in _union([(max(lo, s.start), min(hi, s.end)) for s in rows if s.start < hi and s.end > lo]):
            d = a // 86400
            while a < b:
                nxt = min(b, (d + 1) * 86400)
                down_by_day[d - day0] += nxt - a
                a, d = nxt, d + 1
        wins = _union(windows_of.get(n, []))
        # Rows of one node are disjoint by construction (faults only hit a node in service; drains
        # are placed clear of everything), so each row's time is its cause's.
        for s in rows:
            a, b = max(lo, s.start), min(hi, s.end)
            if a >= b:
                continue
            outside = sum(e - s0 for s0, e in _subtract(a, b, wins))
            by_cause[s.cause] += outside
            by_cause["maintenance"] += (b - a) - outside
    in_service_by_day: dict[str, float] = {}
    for i, down in enumerate(down_by_day):
        d0 = (day0 + i) * 86400
        observed = n_nodes * (min(hi, d0 + 86400) - max(lo, d0))
        in_service_by_day[plan.clock.utc(d0)[:10]] = round((observed - down) / 3600, 6)
    total_down = sum(down_by_day)
    return {
        "in_service_node_hours": round((n_nodes * (hi - lo) - total_down) / 3600, 6),
        "in_service_node_hours_by_utc_day": in_service_by_day,
        "down_node_hours": round(total_down / 3600, 6),
        "node_hours_by_cause": {k: round(v / 3600, 6) for k, v in sorted(by_cause.items())},
        "node_states_by_cause": dict(sorted(Counter(s.cause for s in states).items())),
        "node_state_events": len(states),
    }


def _dump_line(cluster: str, node: str, start: int, end: int | None, cut: int, state: str, reason: str, user: str,
               clock: LocalClock) -> str:
    if end is not None and end <= cut:
        end_text, dur = clock.local(end), end - start
    else:
        end_text, dur = "Unknown", cut - start
    return "|".join((cluster, node, clock.local(start), end_text, format_duration(dur), state, reason, user))


def write_node_states(out_dir: Path, plan: NodeStatePlan, nhc_first: dict[int, float] | None = None,
                      fabric_nhc_first: dict[tuple[int, int], float] | None = None,
                      devices: dict[int, dict[str, int]] | None = None) -> dict[str, Any]:
    """Write ``slurm_events/`` dumps, ``truth/node_states.csv``, ``detect_ts`` in ``truth/faults.csv`` and the
    node-state keys of ``truth/summary.json``; returns those keys.

    ``nhc_first`` / ``fabric_nhc_first`` / ``devices``: when the node logs were written, the time of each
    fault's first failing NHC run (the drain starts there) and the device it hit (named in reasons)."""
    cfg, clock, names = plan.config, plan.clock, plan.names
    faults, detect = _fault_states(plan, nhc_first or {}, fabric_nhc_first or {}, devices or {})
    states = faults + _maintenance_states(plan, faults) + plan.admin + [fp for fp, _, _, _ in plan.false_positive]
    states.sort(key=lambda s: (s.start, s.node, s.end))

    ev_dir = out_dir / "slurm_events"
    ev_dir.mkdir(parents=True, exist_ok=True)
    # slurmdbd's "Cluster Registered TRES" event, open since the controller last registered (weeks before).
    registered = clock.day_start[0] - 37 * 86400 - 3 * 3600 - 17 * 60
    starts = [s.start for s in states]
    for d in range(cfg.days):
        cut = clock.dump_time[d]
        lo, hi = clock.day_start[d] - (DUMP_DAYS - 1) * 86400, clock.day_start[d + 1]
        lines = [EVENTS_HEADER,
                 _dump_line(cfg.cluster, "", registered, None, cut, "", "Cluster Registered TRES", "", clock)]
        for s in states[:bisect_left(starts, hi)]:
            if s.end > lo:
                lines.append(_dump_line(cfg.cluster, names[s.node], s.start, s.end, cut, s.state, s.reason, s.user,
                                        clock))
        (ev_dir / f"events_{clock.day_label[d]}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")

    truth = out_dir / "truth"
    with (truth / "node_states.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(NODE_STATES_COLUMNS)
        for s in states:
            w.writerow((names[s.node], s.state, clock.utc(s.start), clock.utc(s.end), s.reason, s.user, s.cause,
                        s.fault_id or "", s.fault_kind, s.reason_kind))
    faults_csv = truth / "faults.csv"
    if faults_csv.exists():
        with faults_csv.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        if rows and "detect_ts" not in rows[0]:
            with faults_csv.open("w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow([*rows[0], "detect_ts"])
                for r in rows[1:]:
                    t = detect.get(int(r[0]))
                    w.writerow([*r, clock.utc(t) if t is not None else ""])
    keys = _truth_summary(states, plan, clock.day_start[0], clock.dump_time[-1])
    keys["node_state_drains_unplaced"] = plan.unplaced
    path = truth / "summary.json"
    if path.exists():
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary.update(keys)
        path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return keys
