"""Alert incidents: cluster ``core.alerts`` into incidents, name a root-cause candidate, measure the
blast radius, the compression and the hygiene of each alert rule.

A leaf switch that dies fires a switch alert and a link-down alert on every node under it; a
Lustre outage fires a file-system alert on every client. An SRE wants one incident for each, with
the switch (the file system) as its likely root, and wants to know which rules only ever make noise.

Method (:func:`cluster_alerts`; parameters in :class:`AlertClusteringSettings`)
    1. **Sessions.** Alerts are sorted by ``starts_at``; an alert joins the current session when it
       starts within ``gap_minutes`` (default 10) of the session's last start, else it opens a new
       one. Alerts of different sessions are never linked. (Start times, not end times: a firing
       alert has no end, and one left firing for days would glue everything together.)
    2. **Links inside a session.** Two alerts are linked when they share a *key* and their starts
       are chained within the key's gap (consecutive alerts of one key, sorted by start, at most
       the gap apart) — a sort per key, never a pairwise loop:

       ==============  ==============================================================  ============
       key             alerts that share it                                            gap
       ==============  ==============================================================  ============
       node            same Slurm node (any rule)                                      ``gap``
       target          same non-node target (switch, OST, unknown host), no node       ``gap``
       storage         storage-level alerts (see levels) about the same file system:   ``gap``
                       ``filesystem``/``fs``/``fsname`` label or target, Lustre
                       ``<fs>-OSTxxxx``/``-MDTxxxx`` reduced to ``<fs>``, else the
                       name after ``:/`` in a network ``device`` (Lustre
                       ``nid@o2ib:/<fs>``, NFS ``server:/export/<fs>``), else the
                       ``mountpoint``'s last component, else the rule name
       rack / leaf     nodes of one rack (one leaf switch) of cluster.yaml with the    ``peer_gap``
       peers           same alertname or co-occurring templates (below)                (5 min)
       hw incident     alerts matched to the same hardware incident (below; each       none
                       alert through its nearest one only)
       ==============  ==============================================================  ============

       and two nearest-neighbour links (as-of joins, one per alert):

       * *switch → nodes*: an alert whose target is a leaf switch of cluster.yaml links every
         alert on that switch's nodes whose start is within ``gap`` of it (nearest switch alert);
       * *co-occurrence*: an alert with no node (a storage server, a switch outside the topology)
         links the nearest alert, within ``gap``, of every template that co-occurs with its own.

       **Hardware incidents** (``marts.hw_incidents``): an alert on one of an incident's nodes that
       starts within [start − ``hw_before_minutes`` (10), end + ``hw_after_minutes`` (30)] — or, when
       later, until its repair (``marts.incident_repairs.repaired_ts``: its nodes back in service; a
       node drained for a DIMM swap an hour after its panic, the last line it logged, is still that
       fault) — gets that
       incident (several match: the one whose evidence is nearest its start, 0 inside it; then the
       earliest); so does an alert whose target is the incident's
       ``leaf_switch``, and a fabric alert on no Slurm node (a spine, a subnet manager) that starts
       within ``hw_before_minutes`` of the start of a network incident wider than a node
       (``leaf_switch``/``fabric``/``cluster`` scope): the upstream side of that outage. Such an
       upstream alert links the alerts of *every* incident it matched (several leaves that went
       down at the spine's minute are one outage), not only its nearest. Likewise a storage alert on no
       Slurm node (the server side: an MDT/OST, a file server) gets each shared-storage incident
       (component class ``storage``) wider than one node whose window its firing [start, end]
       overlaps: the clients' logs see the hang, the server's alert is its upstream side (a storage alert: a
       file system's, or a storage system's by its vendor — NetApp, DDN SFA, Pure, VAST, Weka, GPFS… — or by
       the object it names — a volume, aggregate, LUN, SVM, virtual disk —, ``alert_levels.csv``). And a rack
       alert on no Slurm node (level ``rack``: a PDU/UPS label such as ``pdu``/``pdu_name``/``ups``, a PDU
       host's ``instance``, or a rack/location label such as ``rack``/``location``/``sysLocation`` on a power or
       cooling alert) that names a rack of cluster.yaml — the rack's name as a whole token of such a label
       (``pdu-r02-a``, ``row3-rack-r03``, ``pdu-r03.mgmt:161``: :func:`_alert_racks`) — gets each
       ``rack``-scope hardware incident of that rack (all its nodes in
       it) of class power or thermal whose window its firing overlaps, and links the alerts of each: the
       nodes' BMCs log the power loss, the PDU's alert is its upstream side (a rack's power loss is one
       alert incident, rooted at the PDU). Two kinds of
       alert are never about such incidents: a *node-local file system* alert (on a node, with a
       ``device``/``mountpoint``/``fstype`` label, and not at storage level — the level rules put a
       network ``fstype`` or a ``host:/export`` ``device`` at storage level; ``/dev/md0`` xfs at
       ``/local/scratch`` is one node's disk) is about no shared-storage incident, and a ``housekeeping``
       alert (capacity: a file system almost full, out of inodes, predicted to fill, a quota or storage
       limit reached — never failure evidence, like the capacity health checks and a client's EDQUOT) is
       about no hardware incident at all; both still form their alert incidents. Every key above links a
       housekeeping alert only with housekeeping alerts: a user's quota alert on ``/lustre/scratch`` shares
       the file system with the OST outage that starts minutes later, but it is no part of it.

       **Template co-occurrence** (:func:`template_cooccurrence`), from the alert history itself:
       a *basket* is a session cut into ``gap``-long time buckets (a busy cluster's sessions never
       end); baskets with more than ``cooc_max_basket_templates`` (50) distinct templates (floods)
       are skipped. Two templates (``template_id``, else the alertname) are related when they share
       at least ``cooc_min_support`` (3) baskets, the rarer one comes with the other in at least
       ``cooc_min_confidence`` (0.5) of its baskets (support / min(n_a, n_b): a storage server's
       rare alert always comes with the clients' frequent one, whose Jaccard with it stays small),
       and their lift (support · baskets / (n_a · n_b)) is at least ``cooc_min_lift`` (2: frequent
       templates that meet by chance have a lift near 1).
       Connected templates form a *template group*, used by the rack/leaf peer keys.
    3. **Incidents** are the connected components of the link graph
       (``scipy.sparse.csgraph.connected_components``), i.e. single-linkage clustering. This is
       exactly ``DBSCAN(eps=0.5, min_samples=1, metric="precomputed")`` on a sparse 0/1 distance of
       the same links, but linear in the number of links and without DBSCAN's neighbourhood
       bookkeeping: a flood of 5,000 alerts on one leaf costs 5,000 links, not 25 million pairs.
       Keys are compared by 64-bit hash; ``peer_gap`` may not exceed ``gap`` (then two alerts of
       one key that close are always in one session, and the per-key sort needs no session).
       Single linkage merges *independent* incidents that hit the same node within minutes (a GPU
       fault on a node whose leaf is down): an SRE would look at them together, but on a synthetic
       trace with known truth it is the only kind of mistake (adjusted Rand index 0.95–0.98 at 48
       incidents a day on 512 nodes, about 0.9 at 72, 0.85 at 144; ``tests/test_alert_clustering.py``).
       Cost: 2–4 s for 200,000 alerts on a busy 2-core machine (all of :func:`alert_marts`).

Meta-alerts
    Alerts about the alert pipeline, not the cluster (rule file ``models/catalog/alert_meta.csv``,
    matched by alert name and, where needed, a label): ``heartbeat`` — fire always, by design
    (``Watchdog``, ``DeadMansSwitch``, ``InfoInhibitor``); ``monitoring_gap`` — Grafana's
    ``DatasourceNoData`` / ``DatasourceError`` (with a ``rulename`` label): the rule it names could not
    be evaluated, it was blind; ``test`` — Grafana's contact-point Test button (``TestAlert``,
    ``instance=Grafana``), never resolved. :func:`alert_marts` leaves them all out of every incident,
    rule and daily count; each monitoring gap is a row of ``marts.alert_monitoring_gaps``
    (:func:`monitoring_gaps`: rule, start, end). A delivery of them still dates the alert data by its
    logger's time or its file's name date, and a heartbeat never by its ``startsAt`` (re-sent
    unchanged from the first firing, weeks before: :func:`alert_data_span_sql`).

Root-cause candidate, per incident
    An alert Alertmanager *inhibited* (``suppressed``, from its ``/api/v2/alerts`` snapshots: a
    consequence it tied to another firing alert) is ranked after every other; a *silenced* root's
    reason ends "; silenced in Alertmanager". Then: the server, fabric or rack side on no node first (a PDU, an
    OST, a switch: the cause before its clients' symptoms), (1) those matched to a hardware incident
    (reason "hardware incident <id> (<component>) on <where>": where the hardware incident is, from
    its own nodes — ``gpu005``, ``rack r02 (gpu[009-016])`` for a rack-scope one, ``leaf switch leaf02
    (gpu[017-024])`` for a leaf-switch one —, never the root alert's target: a job's hostlist, a
    rack's cooling controller), then (2) by *level* — fabric (switches) above storage above rack (a PDU
    or a rack's cooling, on no node)
    above node above GPU above Slurm (a drained / down node, a job failed by a node: the scheduler's
    reaction to a fault, never its cause when the fault alerted too) above other above housekeeping
    (a capacity alert: a disk almost full is no fault) — then (3) the
    earliest start, then the first node by name (reason "earliest alert at the most upstream level
    (fabric: leaf switch leaf01)"); a root whose rule fired at that same moment on several nodes of the
    incident is named on all of them (``GPU temperature high on h200-[001-005]``). The level of an alert comes from the rule
    file ``models/catalog/alert_levels.csv`` (first matching row wins; conditions on alertname,
    target_label, a label value and whether the alert is on a node); a fabric level on no node is a
    switch's or subnet manager's, so an alert on a host-local target of a host outside the node list
    (``device``/``mountpoint``, ``10.0.4.3/mlx5_0``: an IB port of a server) is level other. The incident ``id`` is
    ``ainc-`` + 12 hex digits of SHA-1 over the root alert's fingerprint and start, stable across
    reruns. ``scope``: for a fabric root on no leaf switch (a subnet manager, a spine) about a network
    hardware incident wider than a leaf, that incident's scope (``fabric``/``cluster``: an SM failover
    whose own alerts fired on 3 nodes of one leaf spans 20 nodes of two); leaf_switch for a switch root (or a root matched to a leaf-switch hardware
    incident), fabric for another fabric root on no node (a subnet manager), storage for a storage
    root, rack for a rack root with no node alert, else service (no node: a service alert, a host outside the node list), and from the
    incident's *evidence nodes* — the nodes of its alerts on one node, and of a hostlist alert only
    those of the hardware incident it is about (a failed job's ``nodelist`` names the job's nodes, not
    how far the fault reached) —: node (one), nodes (none: several nodes only hostlists name, spread
    unknown), rack / leaf_switch (all in one rack / under one leaf), cluster (in several), nodes
    (several the topology does not place). ``nodes`` / ``n_nodes`` still list every node.

Nodes
    An alert is on its ``node``; an alert whose target is a Slurm hostlist from a node label
    (``nodelist="gpu[065-080]"``, :func:`~gpusre.models.alerts.nodes.alert_nodes`) is on every node
    of it: it links, matches hardware incidents and counts in ``nodes`` through each.

Ongoing incidents
    An alert without an end (no resolved notification) is still firing at the end of the alert data
    (``as_of``: the latest alert start or end, or notification receipt). An incident with one is
    ``ongoing`` (``firing_alerts``): its ``end_ts`` is that end of the data — it lasted at least until
    then — and no duration is claimed.

Blast radius
    Killed runs — a run that ended ``FAILED`` / ``NODE_FAIL`` (``killed_states``), or that job-failure
    attribution gives to a hardware incident whatever its state (an earlier run a GPU fault ended and
    Slurm requeued ends ``REQUEUED``: the hardware incident counts it, so this view does too) — on the
    incident's nodes with an
    end in [start − ``job_before_minutes`` (15), last alert start + ``job_after_minutes`` (5)] — a
    job's final run, or an earlier run Slurm requeued —, except those job-failure attribution gives
    to the user or to a hardware incident the alert incident is not about (it is about every hardware
    incident one of its alerts matched — a rack's power loss is one alert incident over a per-node
    incident on each node): ``n_jobs_killed`` (the
    jobs; a job killed twice counts once, as ``hw_incidents.affected_jobs``), ``n_runs_requeued`` (how
    many of those runs were earlier runs Slurm requeued: the requeued runs beside the jobs), and the
    sum of their attributed ``lost_gpu_hours``. (The window ends at the last alert *start*: jobs die at a fault's
    onset, and an alert left firing for days is no reason to claim every later failure.) Every
    killed run attribution gives to a hardware incident the alert incident is about counts
    too, whenever it ended (a job NCCL kept waiting 10 min on a dead link): the alert view of an
    outage never costs less than the hardware incident's own ``affected_jobs``/``lost_gpu_hours``.

Rule hygiene (:func:`rule_quality`), per alertname
    ``precision`` = share of its alerts in incidents that have a hardware incident or killed jobs;
    a *flap day* is a (fingerprint, UTC day) with at least ``flap_cycles_per_day`` (4) fire/resolve
    cycles (alerts); ``in_maintenance``: its incidents in which an alert of it started on a node in
    maintenance (cluster.yaml windows, node states classed maintenance); verdict: fewer than
    ``min_fired`` (5) alerts → "too few to judge"; at least ``flap_share`` (0.5) of its alerts on
    flap days → "flapping"; fewer than ``min_incidents`` (3) incidents outside maintenance → "too few
    to judge" (one event, however many alerts it fired, decides nothing); precision below
    ``noise_precision`` (0.1) → "noise: consider silencing"; else "useful". Without any hardware
    incident or failed job in the span of the alerts (alerts landed, logs and accounting did not),
    precision is NULL and no rule is called noise ("too few to judge").

Compression and coverage
    ``in_flood``: an alert of the incident started inside an episode of
    :func:`~gpusre.models.alerts.floods.detect_floods`. :func:`alert_daily`: per UTC day the
    notifications received that day (by the day they arrived, :data:`NOTIFICATION_DAYS_SQL`: a
    Watchdog firing since last month and re-sent hourly counts on the days it was re-sent, not on
    its start day) and the webhook deliveries they came in, the alerts and incidents that started
    that day, alerts / incidents and flood episodes. :func:`alert_floods`: each episode with the incidents its
    alerts belong to. :func:`hw_incidents_without_alert`: hardware incidents inside the span of the
    alert data that no alert matched (the matching rule above, levels included: the very match that
    gives an alert incident its ``hw_incident_id``, so the two marts agree) — missing alert coverage;
    ``duration_s`` runs from its start to its repair (``marts.incident_repairs.repaired_ts``: a Lustre
    "Connection restored") where known, else to its last evidence (``end_ts``: an OST outage of 40 min
    may log errors for only 6 s).

Span of the alert data (:func:`alert_coverage`, and where precision can be judged)
    From the first to the last webhook delivery (:func:`alert_data_span_sql`): a delivery was received
    at its logger's timestamp, else no earlier than the latest time its payload shows (a start, or a
    resolved alert's end). A file dated only by its name covers the whole day it is named for: the
    span reaches the next midnight, capped at the data's end (:func:`data_end`; without one, as in an
    alerts-only landing, it ends at the last delivery), so the day's last hardware incidents are
    judged even when the day's last delivery (a Watchdog heartbeat) came before them. A resolve, a
    repeat or a delivery that brought no new alert shows
    Alertmanager was working until then just as a new alert does: the span is not the first to the
    last alert *start*, which would leave every hardware incident after the last alert to fire
    unjudged and let the next unrelated alert flip the verdict on it. Without the notifications, the
    first alert start to the latest alert start or end. Hardware incidents outside the span are not
    judged (the alert data says nothing about them), unless an alert was about one.

:func:`alert_marts` computes every mart the ``marts/alert_incidents`` asset writes.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from importlib import resources
from typing import NamedTuple

import duckdb
import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gpusre.models.accounting_span import accounting_span
from gpusre.models.alerts.floods import EPISODE_SCHEMA, FloodSettings, detect_floods
from gpusre.models.alerts.nodes import DEFAULT_HOST_LOCAL_LABELS, DEFAULT_NODE_LABELS, alert_nodes
from gpusre.models.component_classes import load_component_classes
from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.sources.alerts.parse import SNAPSHOT_SQL
from gpusre.models.sources.slurm_events.ingest import events_as_of
from gpusre.models.vocabulary import (INFRASTRUCTURE, KILLED_STATES, RUN_KEY_SEP, TERMINAL_STATES, failure_incidents,
                                      run_key_job)
from gpusre.models.warehouse import query_frames, table_exists
from gpusre.models.ordered_sums import ordered_sum

__all__ = [
    "ALERT_SCHEMA",
    "AlertClusteringSettings",
    "AlertMarts",
    "AlertLevelRule",
    "DAILY_SCHEMA",
    "FLOOD_SCHEMA",
    "INCIDENT_SCHEMA",
    "LEVEL_RANK",
    "MAINTENANCE_SCHEMA",
    "MEMBER_SCHEMA",
    "NOTIFICATION_DAY_SCHEMA",
    "RULE_QUALITY_SCHEMA",
    "Topology",
    "COVERAGE_SCHEMA",
    "UNCOVERED_SCHEMA",
    "ALERT_DATA_SPAN_SQL",
    "alert_data_span_sql",
    "data_end",
    "alert_daily",
    "alert_data_span",
    "alert_data_span_mart",
    "ALERT_DATA_SPAN_SCHEMA",
    "alert_floods",
    "alert_incident_id",
    "alert_coverage",
    "alert_levels",
    "alert_marts",
    "cluster_alerts",
    "hw_incidents_without_alert",
    "load_alert_levels",
    "NOTIFICATION_DAYS_SQL",
    "is_meta_alert",
    "load_meta_alerts",
    "META_KINDS",
    "MetaAlertRule",
    "MONITORING_GAP_SCHEMA",
    "meta_alert_kind",
    "meta_alert_pattern",
    "monitoring_gaps",
    "rule_quality",
    "sessionize",
    "template_cooccurrence",
]


class AlertClusteringSettings(BaseModel):
    """Alert clustering, blast radius and hygiene parameters (to be cluster.yaml ``alerts.clustering``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    #: Session gap, and the chaining gap of the node / target / storage keys.
    gap_minutes: float = Field(default=10.0, gt=0)
    #: Chaining gap of rack / leaf peers (different nodes that share only a rack or a leaf); unset:
    #: 5 min, or ``gap_minutes`` when that is shorter (setting only a 3-min session gap is valid).
    peer_gap_minutes: float | None = Field(default=None, gt=0)
    #: A flapping rule: an alert of the same fingerprint firing again within this long after the
    #: previous one resolved (or started, while it fires) is the same incident, whatever the sessions.
    flap_minutes: float = Field(default=120.0, ge=0)
    #: Hardware incident window around an alert: [start - before, end + after].
    hw_before_minutes: float = Field(default=10.0, ge=0)
    hw_after_minutes: float = Field(default=30.0, ge=0)
    #: Template co-occurrence.
    cooc_min_support: int = Field(default=3, ge=1)
    cooc_min_confidence: float = Field(default=0.5, ge=0, le=1)
    cooc_min_lift: float = Field(default=2.0, ge=0)
    cooc_max_basket_templates: int = Field(default=50, ge=2)
    #: Blast radius: job ends in [start - before, last alert start + after] on the incident's nodes.
    job_before_minutes: float = Field(default=15.0, ge=0)
    job_after_minutes: float = Field(default=5.0, ge=0)
    #: Job end states an incident counts as killed (default: the vocabulary's KILLED_STATES).
    killed_states: tuple[str, ...] = KILLED_STATES
    #: Rule hygiene: a rule is judged once it fired ``min_fired`` times in ``min_incidents``
    #: distinct incidents outside maintenance (one event — a maintenance storm of 8 InstanceDown —
    #: must not decide its verdict).
    min_fired: int = Field(default=5, ge=1)
    min_incidents: int = Field(default=3, ge=1)
    noise_precision: float = Field(default=0.1, ge=0, le=1)
    flap_cycles_per_day: int = Field(default=4, ge=2)
    flap_share: float = Field(default=0.5, gt=0, le=1)

    @field_validator("killed_states")
    @classmethod
    def _known_states(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # A misspelt state would silently count no job at all.
        unknown = [s for s in value if s not in (*TERMINAL_STATES, "REQUEUED")]
        if unknown:
            raise ValueError(f"unknown Slurm job state(s) {', '.join(unknown)}; expected some of "
                             f"{', '.join((*TERMINAL_STATES, 'REQUEUED'))}")
        return value

    @model_validator(mode="after")
    def _peer_within_session(self) -> AlertClusteringSettings:
        if self.peer_gap_minutes is not None and self.peer_gap_minutes > self.gap_minutes:
            raise ValueError("peer_gap_minutes must not exceed gap_minutes")
        return self

    @staticmethod
    def _us(minutes: float) -> int:
        return int(round(minutes * 60_000_000))

    @property
    def gap_us(self) -> int:
        return self._us(self.gap_minutes)

    @property
    def peer_gap_us(self) -> int:
        return self._us(self.peer_gap_minutes if self.peer_gap_minutes is not None else min(5.0, self.gap_minutes))

    @property
    def flap_us(self) -> int:
        return self._us(self.flap_minutes)


@dataclass(frozen=True)
class Topology:
    """Where nodes sit: node → rack and node → leaf switch (cluster.yaml ``racks`` / ``leaf_switches``)."""

    node_rack: Mapping[str, str] = field(default_factory=dict)
    node_leaf: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_groups(cls, racks: Mapping[str, str | Sequence[str]] | None = None,
                    leaf_switches: Mapping[str, str | Sequence[str]] | None = None) -> Topology:
        """From group name → hostlist string (or list of names); a node listed twice keeps the first."""
        def invert(groups: Mapping[str, str | Sequence[str]] | None) -> dict[str, str]:
            out: dict[str, str] = {}
            for name, nodes in (groups or {}).items():
                for node in expand_hostlist(nodes) if isinstance(nodes, str) else nodes:
                    out.setdefault(node, name)
            return out
        return cls(invert(racks), invert(leaf_switches))

    @classmethod
    def from_config(cls, config: object) -> Topology:
        """From a :class:`~gpusre.pipelines.config.ClusterConfig` (its ``racks`` and ``leaf_switches``)."""
        return cls.from_groups(getattr(config, "racks", None), getattr(config, "leaf_switches", None))

    @property
    def leaves(self) -> frozenset[str]:
        return frozenset(self.node_leaf.values())

    def frame(self) -> pl.DataFrame:
        nodes = sorted(set(self.node_rack) | set(self.node_leaf))
        return pl.DataFrame({"node": nodes, "_rack": [self.node_rack.get(n) for n in nodes],
                             "_leaf": [self.node_leaf.get(n) for n in nodes]},
                            schema={"node": pl.String, "_rack": pl.String, "_leaf": pl.String})


# -- schemas ---------------------------------------------------------------------------------------

_TS = pl.Datetime("us", "UTC")
#: ``core.alerts`` columns read (``labels`` as JSON text). Missing optional columns are null
#: (``n_notifications``: 1).
ALERT_SCHEMA: dict[str, pl.DataType] = {
    "alert_id": pl.Int64(), "fingerprint": pl.String(), "alertname": pl.String(), "status": pl.String(),
    "severity": pl.String(), "node": pl.String(), "target": pl.String(), "target_label": pl.String(),
    "starts_at": _TS, "ends_at": _TS, "labels": pl.String(), "template_id": pl.Int64(),
    "n_notifications": pl.Int64(),
    # Alertmanager held it back (``SUPPRESSED_SQL`` of the alert ingest): inhibited | silenced | null
    "suppressed": pl.String(),
    "description": pl.String(),  # the monitoring-gap mart's reason (Grafana's annotation Error)
}
_REQUIRED = ("alert_id", "fingerprint", "starts_at")

INCIDENT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "start_ts": _TS,
    "end_ts": _TS,                      # latest end of its alerts; while one still fires: the end of the alert data
    "ongoing": pl.Boolean(),            # an alert of it is still firing at the end of the alert data
    "firing_alerts": pl.Int64(),        # its alerts still firing at the end of the alert data
    "n_alerts": pl.Int64(),
    "flaps": pl.Int64(),                # re-firings of a fingerprint already in the incident (a flapping rule)
    "n_nodes": pl.Int64(),
    "nodes": pl.List(pl.String()),
    "root_alert_id": pl.Int64(),
    "root_level": pl.String(),
    "root_cause_candidate": pl.String(),  # "<alertname> on <node | target>"
    "root_cause_reason": pl.String(),
    "templates": pl.List(pl.Int64()),
    "alertnames": pl.List(pl.String()),
    "hw_incident_id": pl.String(),
    "scope": pl.String(),               # node | rack | leaf_switch | storage | cluster | nodes | fabric | service
    "in_flood": pl.Boolean(),
    "n_jobs_killed": pl.Int64(),
    "lost_gpu_hours": pl.Float64(),
    "n_runs_requeued": pl.Int64(),      # of the killed runs, the earlier runs of requeued jobs
}
MEMBER_SCHEMA: dict[str, pl.DataType] = {
    "alert_id": pl.Int64(), "incident_id": pl.String(), "is_root": pl.Boolean(), "level": pl.String(),
    "hw_incident_id": pl.String(),
}
DAILY_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(), "notifications": pl.Int64(), "deliveries": pl.Int64(), "alerts": pl.Int64(),
    "incidents": pl.Int64(), "compression_ratio": pl.Float64(), "flood_episodes": pl.Int64(),
    # Deliveries of that day Alertmanager truncated (max_alerts), and the most alerts one of them
    # dropped: the day's alert counts are lower bounds. NULL without notifications (unknown).
    "truncated_deliveries": pl.Int64(), "truncated_alerts": pl.Int64(),
}
#: Notifications received per UTC day (:func:`alert_daily`): alert entries and webhook payloads.
NOTIFICATION_DAY_SCHEMA: dict[str, pl.DataType] = {"day": pl.Date(), "notifications": pl.Int64(),
                                                   "deliveries": pl.Int64(), "truncated_deliveries": pl.Int64(),
                                                   "truncated_alerts": pl.Int64()}
#: Maintenance periods (:func:`rule_quality`): ``node`` NULL = every node.
MAINTENANCE_SCHEMA: dict[str, pl.DataType] = {"node": pl.String(), "start_ts": _TS, "end_ts": _TS}
FLOOD_SCHEMA: dict[str, pl.DataType] = {
    "flood_id": pl.String(), "start_ts": _TS, "end_ts": _TS, "n_buckets": pl.Int64(), "n_alerts": pl.Int64(),
    "peak_per_bucket": pl.Int64(), "peak_rate_per_min": pl.Float64(), "baseline": pl.Float64(),
    "threshold": pl.Float64(), "incidents": pl.Int64(), "compression_ratio": pl.Float64(),
}
RULE_QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "alertname": pl.String(), "fired": pl.Int64(), "fingerprints": pl.Int64(), "incidents": pl.Int64(),
    "with_hw_incident": pl.Int64(), "with_job_impact": pl.Int64(), "precision": pl.Float64(),
    "median_duration_s": pl.Float64(), "flapping": pl.Int64(), "flap_share": pl.Float64(),
    "in_maintenance": pl.Int64(), "verdict": pl.String(),
}
UNCOVERED_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "component": pl.String(), "start_ts": _TS, "end_ts": _TS,
    "nodes": pl.List(pl.String()), "scope": pl.String(),
    # When it was repaired (marts.incident_repairs.repaired_ts: a Lustre "Connection restored"), else NULL;
    # end_ts is only its last error line (an OST outage of 40 min logs errors for 6 s).
    "repaired_ts": _TS,
    "duration_s": pl.Float64(),         # start to repair where known, else to the last evidence
}
COVERAGE_SCHEMA: dict[str, pl.DataType] = {**UNCOVERED_SCHEMA, "covered": pl.Boolean(), "n_alerts": pl.Int64()}
_HW_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "component": pl.String(), "start_ts": _TS, "end_ts": _TS,
    "nodes": pl.List(pl.String()), "scope": pl.String(), "leaf_switch": pl.String(),
    # marts.incident_repairs.repaired_ts (:func:`_with_repairs`): the incident is open until then.
    "repaired_ts": _TS,
}
#: ``repairs`` input (``marts.incident_repairs``): the repair end of each hardware incident.
_REPAIR_SCHEMA: dict[str, pl.DataType] = {"incident_id": pl.String(), "repaired_ts": _TS}

# -- levels ----------------------------------------------------------------------------------------

#: Most upstream first: a switch outage explains node alerts, a node outage explains GPU alerts; a
#: Slurm alert (a drained or down node, a failed job) is the scheduler's reaction to a fault, below
#: the fault's own alerts.
#: ``rack`` (an alert on no node naming a rack: its PDU, its cooling) sits above the rack's nodes: a PDU
#: trip explains every BMC and exporter alert of the rack, never the reverse.
#: ``housekeeping`` (a capacity alert: a disk almost full, predicted to fill) is no fault at all, below
#: even an unplaced service alert.
LEVEL_RANK: dict[str, int] = {"fabric": 0, "storage": 1, "rack": 2, "node": 3, "gpu": 4, "slurm": 5, "other": 6,
                              "housekeeping": 7}
#: Levels whose alerts, when on no Slurm node, are the server, fabric or rack side of a fault.
_SERVER_SIDE_LEVELS: tuple[str, ...] = ("fabric", "storage", "rack")
#: Component classes a rack can lose at once (its PDU, its cooling): a rack-scope hardware incident of
#: these is what a rack-level alert is about.
_RACK_CLASSES = ("power", "thermal")
LEVELS_FILE = "alert_levels.csv"


@dataclass(frozen=True)
class AlertLevelRule:
    """One row of ``alert_levels.csv``: every non-empty condition must hold.

    ``alertname``: regex searched in the alertname; ``target_label``: regex the whole target
    label must match; ``label``/``value``: one label name, or several separated by ``|`` (the
    spellings of one thing: ``pdu|pdu_name``), of which one must be present with a value matching
    ``value`` entirely (no ``value``: any); ``has_node``: the alert is (``true``) or is not
    (``false``) on a Slurm node. Case-insensitive.
    ``example``: an alert the row classifies (``Name{label=value} target_label=target @node``), checked
    by a test to be matched first by this row.
    """

    rule_id: str
    level: str
    alertname: re.Pattern[str] | None = None
    target_label: re.Pattern[str] | None = None
    label: str | None = None
    value: re.Pattern[str] | None = None
    has_node: bool | None = None
    example: str = ""

    def matches(self, alertname: str, target_label: str | None, has_node: bool,
                labels: Mapping[str, str | None]) -> bool:
        if self.alertname is not None and not self.alertname.search(alertname or ""):
            return False
        if self.target_label is not None and not (target_label and self.target_label.fullmatch(target_label)):
            return False
        if self.label is not None and self.label_value(labels) is None:
            return False
        return self.has_node is None or self.has_node == has_node

    @property
    def labels(self) -> tuple[str, ...]:
        """The label names the ``label`` condition accepts, in the order written (none: no condition)."""
        return tuple(n.strip() for n in self.label.split("|") if n.strip()) if self.label else ()

    def label_value(self, labels: Mapping[str, str | None]) -> str | None:
        """The value of the first of :attr:`labels` present in ``labels`` whose value matches ``value``
        entirely (any value without one), else None."""
        for name in self.labels:
            got = labels.get(name)
            if got is not None and (self.value is None or self.value.fullmatch(got)):
                return got
        return None


@lru_cache(maxsize=4)
def load_alert_levels(file_name: str = LEVELS_FILE) -> tuple[AlertLevelRule, ...]:
    """The level rules of ``models/catalog/<file_name>``, in file order."""
    text = resources.files("gpusre.models.catalog").joinpath(file_name).read_text(encoding="utf-8")
    rules = []
    for row in csv.DictReader(text.splitlines()):
        def rx(key: str) -> re.Pattern[str] | None:
            return re.compile(row[key], re.IGNORECASE) if row.get(key) else None
        level = row["level"].strip()
        if level not in LEVEL_RANK:
            raise ValueError(f"{file_name}: rule {row['rule_id']}: unknown level {level!r}")
        has_node = {"true": True, "false": False, "": None}[(row.get("has_node") or "").strip().lower()]
        rules.append(AlertLevelRule(row["rule_id"], level, rx("alertname"), rx("target_label"),
                                    row.get("label") or None, rx("value"), has_node, (row.get("example") or "").strip()))
    return tuple(rules)


META_FILE = "alert_meta.csv"
#: Kinds of meta-alert (``models/catalog/alert_meta.csv``): ``heartbeat`` — fires always by design
#: (``Watchdog``; its ``startsAt`` is its first firing, weeks old, and dates nothing); ``monitoring_gap``
#: — a rule could not be evaluated (Grafana's ``DatasourceNoData`` / ``DatasourceError``: the rule was
#: blind, reported in ``marts.alert_monitoring_gaps``); ``test`` — a delivery test (Grafana's contact-point
#: Test button), never resolved.
META_KINDS = ("heartbeat", "monitoring_gap", "test")


class MetaAlertRule(NamedTuple):
    """One row of ``models/catalog/alert_meta.csv``: an alert about the alert pipeline, not the cluster."""

    rule_id: str
    alertname: str          # regex the whole alert name matches, any case
    label: str | None       # a label the alert must carry (Grafana's ``rulename``), else no condition
    value: str | None       # regex the whole label value matches, any case; None: the label is present
    kind: str               # one of META_KINDS
    example: str            # ``alertname`` or ``alertname{label=value}``, checked by a test


@lru_cache(maxsize=4)
def load_meta_alerts(file_name: str = META_FILE) -> tuple[MetaAlertRule, ...]:
    """The meta-alert rules of ``models/catalog/<file_name>`` (:class:`MetaAlertRule`). A meta-alert
    is about the alert pipeline, not the cluster: a heartbeat that fires always (``Watchdog``), a rule
    that could not be evaluated (Grafana's ``DatasourceNoData``), a delivery test — never an incident."""
    text = resources.files("gpusre.models.catalog").joinpath(file_name).read_text(encoding="utf-8")
    rules = []
    for r in csv.DictReader(text.splitlines()):
        if r["kind"] not in META_KINDS:
            raise ValueError(f"{file_name}: rule {r['rule_id']}: unknown kind {r['kind']!r}")
        rules.append(MetaAlertRule(r["rule_id"], r["alertname"], r.get("label") or None, r.get("value") or None,
                                   r["kind"], r["example"]))
    return tuple(rules)


def meta_alert_kind(alertname: pl.Expr, labels: pl.Expr | None = None,
                    rules: Sequence[MetaAlertRule] | None = None) -> pl.Expr:
    """The kind (:data:`META_KINDS`) of the first meta-alert rule (:func:`load_meta_alerts`) that
    ``alertname`` (the whole name, any case) and ``labels`` (JSON text) match, else null. A rule with a
    label condition matches nothing without ``labels``."""
    rules = rules if rules is not None else load_meta_alerts()
    out = pl.lit(None, dtype=pl.String)
    # Built last rule first, so the first matching rule wins.
    for r in reversed(rules):
        hit = alertname.fill_null("").str.contains(f"(?i)^(?:{r.alertname})$")
        if r.label is not None:
            got = labels.str.json_path_match(f"$.{r.label}") if labels is not None else pl.lit(None, dtype=pl.String)
            hit = hit & (got.is_not_null() if r.value is None
                         else got.fill_null("").str.contains(f"(?i)^(?:{r.value})$"))
        out = pl.when(hit).then(pl.lit(r.kind)).otherwise(out)
    return out


def is_meta_alert(alertname: pl.Expr, rules: Sequence[MetaAlertRule] | None = None,
                  labels: pl.Expr | None = None) -> pl.Expr:
    """Whether an alert is a meta-alert (:func:`meta_alert_kind` is not null)."""
    return meta_alert_kind(alertname, labels, rules).is_not_null()


#: Labels that name a (shared) file system; ``device`` and ``mountpoint`` only count for
#: storage-level alerts.
_FS_LABELS = ("filesystem", "fs", "fsname")
_FS_TARGET_LABELS = frozenset({*_FS_LABELS, "ost", "mdt"})
#: A Lustre target ``scratch-OST0003`` / ``scratch-MDT0000`` belongs to file system ``scratch``.
_LUSTRE_TARGET = r"^(.+)-(?:OST|MDT)[0-9a-fA-F]+$"
#: A network file system's ``device`` as node_exporter reports it — Lustre ``<nid>[:<nid>]:/<fsname>``,
#: NFS ``<server>:/<export path>`` — names the file system after ``:/`` (its last component), the
#: name the server side's alerts use; a local device (``/dev/sda1``) does not match.
_REMOTE_DEVICE = r":/(?:[^:]*/)?([^/:]+)/*$"
#: Else a mountpoint's last component: ``/lustre/scratch`` is ``scratch`` (``/`` stays itself).
_MOUNT_NAME = r"([^/]+)/*$"


#: Labels that make an alert a file-system alert (node_exporter's ``NodeFilesystem*``): on a node and
#: not at storage level (a network ``fstype`` or ``device`` makes it one, ``alert_levels.csv``), it is
#: about a node-local file system (``/dev/md0`` xfs at ``/local/scratch``), never the shared storage.
_FS_ALERT_LABELS = ("device", "mountpoint", "fstype")


def _label_columns(rules: Sequence[AlertLevelRule]) -> list[str]:
    return sorted({n for r in rules for n in r.labels} | set(_FS_LABELS) | set(_FS_ALERT_LABELS))


def alert_levels(alerts: pl.DataFrame, rules: Sequence[AlertLevelRule] | None = None) -> pl.Series:
    """The level of each alert (``alertname``, ``target_label``, ``node``, ``labels`` JSON text),
    by the first matching rule; each distinct combination is evaluated once."""
    rules = tuple(rules) if rules is not None else load_alert_levels()
    frame = _with_labels(alerts.select("alertname", "target_label", "node", "labels"), rules)
    return _levels(frame, rules)


def _with_labels(frame: pl.DataFrame, rules: Sequence[AlertLevelRule]) -> pl.DataFrame:
    """``frame`` with ``_lb_<name>``: the value of each label the rules read, from ``labels`` (JSON text).

    Each distinct labels text is read once (an alert's labels are its fingerprint's: a night of
    260,000 alerts has ~75,000 texts), by a JSON path per label: ``str.json_decode`` to a struct
    cost ~1.9 kB of peak memory per text, and decoding every row ~400 MB (2026-12-03)."""
    names = _label_columns(rules)
    text = frame.get_column("labels").fill_null("{}").alias("_text")
    # DuckDB reads every path of a text in one parse (Polars' json_path_match parses it once per label: 0.6 s
    # against 0.1 s for a year's 23,000 texts and 42 labels); text that is no JSON has no labels.
    paths = [f'$."{name}"' for name in names]
    values = query_frames("SELECT _text, CASE WHEN json_valid(_text) THEN json_extract_string(_text, $paths) END AS _v "
                          "FROM _texts", {"_texts": text.unique().to_frame()}, {"paths": paths})
    values = values.select("_text", *(pl.col("_v").list.get(i, null_on_oob=True).alias(f"_lb_{name}")
                                      for i, name in enumerate(names)))
    return frame.with_columns(text.to_frame().join(values, on="_text", how="left", maintain_order="left").drop("_text"))


def _levels(frame: pl.DataFrame, rules: Sequence[AlertLevelRule]) -> pl.Series:
    names = [n for n in _label_columns(rules) if any(n in r.labels for r in rules)]
    # On a node: its node, or (``_has_node``) the nodes of a hostlist label.
    has_node = pl.col("_has_node") if "_has_node" in frame.columns else pl.col("node").is_not_null().alias("_has_node")
    cols = ["alertname", "target_label", has_node, *[f"_lb_{n}" for n in names]]
    # A label only rules for alerts on no Slurm node read (a PDU host's ``instance``, a rack's ``location``)
    # says nothing of an alert on a node: left out of its key, so a night's node alerts are not one
    # combination per scrape target (45,000 instead of a few hundred: +2 s a night).
    off_node = [n for n in names if all(r.has_node is False for r in rules if n in r.labels)]
    keyed = frame.select(cols).with_columns(
        pl.when(~pl.col("_has_node")).then(pl.col(f"_lb_{n}")).alias(f"_lb_{n}") for n in off_node)
    combos = keyed.unique()
    levels = []
    for row in combos.iter_rows():
        alertname, target_label, has_node, *values = row
        labels = dict(zip(names, values))
        levels.append(next((r.level for r in rules if r.matches(alertname or "", target_label, has_node, labels)), "other"))
    combos = combos.with_columns(pl.Series("_level", levels, dtype=pl.String))
    return keyed.join(combos, on=combos.columns[:-1], how="left", nulls_equal=True, maintain_order="left")["_level"]


# -- building blocks -------------------------------------------------------------------------------


def _utc(frame: pl.DataFrame, name: str) -> pl.Expr:
    dtype = frame.schema[name]
    col = pl.col(name)
    if isinstance(dtype, pl.Datetime):
        col = col.dt.replace_time_zone("UTC") if dtype.time_zone is None else col.dt.convert_time_zone("UTC")
    return col.cast(_TS).alias(name)


def _conform(frame: pl.DataFrame | None, schema: Mapping[str, pl.DataType], required: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` with exactly ``schema``'s columns, typed (missing optional columns null)."""
    if frame is None:
        return pl.DataFrame(schema=dict(schema))
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"input lacks columns {missing}")
    exprs = []
    for name, dtype in schema.items():
        if name not in frame.columns:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
        elif dtype == _TS:
            exprs.append(_utc(frame, name))
        else:
            exprs.append(pl.col(name).cast(dtype))
    return frame.select(exprs)


def sessionize(starts_us: np.ndarray, gap_us: int) -> np.ndarray:
    """Session number of each start (microseconds, sorted ascending): a new session begins when a
    start is more than ``gap_us`` after the previous one (the session's last start).

    >>> sessionize(np.array([0, 5, 30, 31, 100]), 10).tolist()
    [0, 0, 1, 1, 2]
    """
    if len(starts_us) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([[0], np.cumsum(np.diff(starts_us) > gap_us)]).astype(np.int64)


def _window_pairs(windows: pl.DataFrame, points: pl.DataFrame, by: str) -> pl.DataFrame:
    """``(_w, _p)`` for every window ``(_w, by, _lo, _hi)`` and point ``(_p, by, _ts)`` with
    ``_lo <= _ts <= _hi`` (same ``by``). Points are sorted by (by, ts) so each window's points are a
    contiguous index range found by two as-of joins; only those ranges are expanded."""
    empty = pl.DataFrame(schema={"_w": pl.Int64, "_p": pl.Int64})
    if windows.is_empty() or points.is_empty():
        return empty
    pts = points.sort(by, "_ts").with_row_index("_r")
    idx = pts.select(pl.col("_r").cast(pl.Int64), by, "_ts")
    lo = windows.sort("_lo").join_asof(idx.rename({"_r": "_a"}), left_on="_lo", right_on="_ts", by=by,
                                       strategy="forward", check_sortedness=False).select("_w", "_a")
    hi = windows.sort("_hi").join_asof(idx.rename({"_r": "_b"}), left_on="_hi", right_on="_ts", by=by,
                                       strategy="backward", check_sortedness=False).select("_w", "_b")
    ranges = lo.join(hi, on="_w").filter(pl.col("_a") <= pl.col("_b"))
    if ranges.is_empty():
        return empty
    pairs = ranges.select("_w", pl.int_ranges("_a", pl.col("_b") + 1, dtype=pl.Int64).alias("_r")).explode("_r")
    return pairs.join(pts.select(pl.col("_r").cast(pl.Int64), pl.col("_p").cast(pl.Int64)), on="_r").select("_w", "_p")


def _chain_edges(keyed: pl.DataFrame, keys: Sequence[str], gap_us: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Links between consecutive rows of one key (the ``keys`` columns, rows with a null key
    skipped) sorted by ``_ts`` that start at most ``gap_us`` apart; ``gap_us`` None: any distance
    within one session ``_s``. (With a gap no longer than the session gap, two rows that close are
    always in one session.) ``keyed``: ``_i``, ``_s``, ``_ts`` and ``keys``."""
    if keyed.is_empty():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cols = [*(["_s"] if gap_us is None else []), *keys]
    k = keyed.drop_nulls(list(keys)).sort([*cols, "_ts", "_i"])
    same = pl.all_horizontal([pl.col(c) == pl.col(c).shift() for c in cols])
    if gap_us is not None:
        same = same & ((pl.col("_ts") - pl.col("_ts").shift()) <= gap_us)
    e = k.select(pl.col("_i").shift().alias("_u"), pl.col("_i").alias("_v"), same.fill_null(False).alias("_x")).filter("_x")
    return e["_u"].to_numpy().astype(np.int64), e["_v"].to_numpy().astype(np.int64)


#: A chaining gap no two alert starts exceed (about 292,000 years in microseconds).
_ANY_DISTANCE_US = 2**63 - 1


def _flap_edges(al: pl.DataFrame, flap_us: int) -> tuple[np.ndarray, np.ndarray]:
    """Links between consecutive alerts of one fingerprint when the later one starts at most ``flap_us``
    after every earlier one ended (a firing one counts from its start): one flapping episode."""
    if al.is_empty():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    k = (al.select("_i", "_ts", "fingerprint",
                   pl.max_horizontal(pl.col("ends_at").dt.epoch("us"), pl.col("_ts")).alias("_end"))
         .drop_nulls("fingerprint").sort("fingerprint", "_ts", "_i"))
    reach = pl.col("_end").cum_max().shift(1).over("fingerprint") + flap_us
    link = (pl.col("fingerprint") == pl.col("fingerprint").shift()) & (pl.col("_ts") <= reach)
    e = k.select(pl.col("_i").shift().alias("_u"), pl.col("_i").alias("_v"), link.fill_null(False).alias("_x")).filter("_x")
    return e["_u"].to_numpy().astype(np.int64), e["_v"].to_numpy().astype(np.int64)


def _nearest_edges(left: pl.DataFrame, right: pl.DataFrame, by: list[str], gap_us: int) -> tuple[np.ndarray, np.ndarray]:
    """Link each ``left`` row (``_i``, ``_ts``, *by*) to the nearest ``right`` row (``_j``, ``_ts``, *by*)
    at most ``gap_us`` away."""
    if left.is_empty() or right.is_empty():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    j = left.sort("_ts").join_asof(right.sort("_ts"), on="_ts", by=by, strategy="nearest", tolerance=gap_us,
                                   check_sortedness=False).filter(pl.col("_j").is_not_null() & (pl.col("_i") != pl.col("_j")))
    return j["_i"].to_numpy().astype(np.int64), j["_j"].to_numpy().astype(np.int64)


def template_cooccurrence(tkeys: pl.Series, sessions: np.ndarray, starts_us: np.ndarray,
                          settings: AlertClusteringSettings | None = None) -> pl.DataFrame:
    """Related template pairs ``(a, b, support, confidence, lift)`` with ``a < b`` (rules in the module
    docstring). ``tkeys``: each alert's template key; baskets are (session, ``gap``-bucket)."""
    settings = settings or AlertClusteringSettings()
    schema = {"a": pl.String, "b": pl.String, "support": pl.Int64, "confidence": pl.Float64, "lift": pl.Float64}
    if tkeys.len() == 0:
        return pl.DataFrame(schema=schema)
    baskets = pl.DataFrame({"_s": sessions, "_bk": starts_us // settings.gap_us, "t": tkeys}).unique()
    baskets = baskets.with_columns(pl.len().over("_s", "_bk").alias("_k")).filter(
        pl.col("_k") <= settings.cooc_max_basket_templates)
    ids = baskets.select("_s", "_bk").unique().with_row_index("_b")
    baskets = baskets.join(ids, on=["_s", "_bk"]).select("_b", "t")
    n_baskets = baskets["_b"].n_unique()
    if n_baskets == 0:
        return pl.DataFrame(schema=schema)
    counts = baskets.group_by("t").agg(pl.len().cast(pl.Int64).alias("n"))
    pairs = (baskets.join(baskets, on="_b", suffix="_2").filter(pl.col("t") < pl.col("t_2"))
             .group_by("t", "t_2").agg(pl.len().cast(pl.Int64).alias("support"))
             .filter(pl.col("support") >= settings.cooc_min_support))
    pairs = (pairs.join(counts.rename({"t": "t", "n": "n_a"}), on="t")
             .join(counts.rename({"t": "t_2", "n": "n_b"}), on="t_2")
             .with_columns((pl.col("support") / pl.min_horizontal("n_a", "n_b")).alias("confidence"),
                           (pl.col("support") * n_baskets / (pl.col("n_a") * pl.col("n_b"))).alias("lift"))
             .filter((pl.col("confidence") >= settings.cooc_min_confidence) & (pl.col("lift") >= settings.cooc_min_lift)))
    return pairs.select(pl.col("t").alias("a"), pl.col("t_2").alias("b"), "support", "confidence", "lift").sort("a", "b")


def _template_groups(tkeys: pl.Series, related: pl.DataFrame) -> pl.Series:
    """Template group of each key: connected components of the related-pairs graph."""
    if related.is_empty():
        return tkeys
    names = pl.concat([related["a"], related["b"]]).unique().sort()
    index = {n: i for i, n in enumerate(names.to_list())}
    a = np.array([index[x] for x in related["a"].to_list()])
    b = np.array([index[x] for x in related["b"].to_list()])
    _, comp = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(len(names), len(names))), directed=False)
    group = pl.DataFrame({"t": names, "_g": pl.Series([f"g{c}" for c in comp], dtype=pl.String)})
    return pl.DataFrame({"t": tkeys}).join(group, on="t", how="left", maintain_order="left").select(
        pl.coalesce("_g", "t"))["_g"]


def _match_hw(al: pl.DataFrame, hw: pl.DataFrame, settings: AlertClusteringSettings,
              an: pl.DataFrame | None = None, topology: Topology | None = None) -> pl.DataFrame:
    """Every (alert ``_i``, hardware incident) match: alert on an incident node within its window, or
    alert targeting the incident's leaf switch. Columns ``_i``, ``hw_incident_id``, ``_hw_start``,
    ``_hw_component``, ``_hw_scope``; per alert the nearest incident first (the alert's own).
    ``an``: one row per (alert ``_i``, ``node``, ``_ts``) (an alert on several nodes); default: ``al.node``;
    ``topology``: which rack each incident's nodes sit in (:func:`_rack_pairs`)."""
    schema = {"_i": pl.Int64, "hw_incident_id": pl.String, "_hw_start": _TS, "_hw_component": pl.String,
              "_hw_scope": pl.String}
    if hw.is_empty() or al.is_empty():
        return pl.DataFrame(schema=schema)
    before = timedelta(minutes=settings.hw_before_minutes)
    after = timedelta(minutes=settings.hw_after_minutes)
    # Open until repaired: a node drained for a DIMM swap is still broken an hour after its last log
    # line (the panic ends the logs), and its late drain alert is about that fault. The repair end is
    # marts.incident_repairs' (the product's one definition: first evidence to every linked node back
    # in service, else its log fallbacks); without one, the last evidence + hw_after_minutes.
    repaired = (pl.col("repaired_ts") if "repaired_ts" in hw.columns else pl.lit(None, dtype=_TS))
    inc = hw.with_row_index("_h").with_columns(
        pl.col("_h").cast(pl.Int64),
        (pl.col("start_ts") - before).dt.epoch("us").alias("_lo"),
        pl.max_horizontal(pl.col("end_ts").fill_null(pl.col("start_ts")) + after, repaired)
        .dt.epoch("us").alias("_hi"))
    by_node = inc.select("_h", "nodes", "_lo", "_hi").explode("nodes").rename({"nodes": "_k"}).drop_nulls("_k")
    by_leaf = inc.select("_h", pl.col("leaf_switch").alias("_k"), "_lo", "_hi").drop_nulls("_k")
    parts = []
    node_rows = an if an is not None else al.select("_i", "node", "_ts")
    for windows, key, rows in ((by_node, "node", node_rows), (by_leaf, "_target_leaf", al)):
        windows = windows.with_row_index("_w").with_columns(pl.col("_w").cast(pl.Int64))
        pts = rows.filter(pl.col(key).is_not_null()).select(pl.col("_i").alias("_p"), pl.col(key).alias("_k"), "_ts")
        pairs = _window_pairs(windows, pts, "_k")
        parts.append(pairs.join(windows.select("_w", "_h"), on="_w").select(pl.col("_p").alias("_i"), "_h"))
    parts.append(_upstream_pairs(al, inc, settings))
    parts.append(_storage_server_pairs(al, inc, settings))
    parts.append(_rack_pairs(al, inc, topology or Topology()))
    matches = _hw_reach(pl.concat(parts).unique(), al, inc)
    matches = matches.join(inc.select("_h", pl.col("incident_id").alias("hw_incident_id"),
                                      pl.col("start_ts").alias("_hw_start"), pl.col("component").alias("_hw_component"),
                                      pl.col("scope").alias("_hw_scope"),
                                      pl.col("start_ts").dt.epoch("us").alias("_s_us"),
                                      pl.col("end_ts").fill_null(pl.col("start_ts")).dt.epoch("us").alias("_e_us")),
                           on="_h")
    # Best first: the incident whose evidence is nearest the alert's start (0 inside it). A Lustre
    # blip 25 min before on the same node also lies in the window, but the Xid 79 at the alert's
    # minute is what the alert is about.
    nearest = (pl.max_horizontal(pl.col("_s_us") - pl.col("_ts"), pl.col("_ts") - pl.col("_e_us"), pl.lit(0))
               .alias("_dist"))
    matches = matches.join(al.select("_i", "_ts"), on="_i").with_columns(nearest)
    return matches.sort("_i", "_dist", "_hw_start", "hw_incident_id").select(list(schema))


#: Hardware-incident scopes wider than a node: a switch or fabric outage whose upstream (spine, subnet
#: manager) alerts name no Slurm node.
_WIDE_SCOPES: tuple[str, ...] = ("leaf_switch", "fabric", "cluster")


def _upstream_alert() -> pl.Expr:
    """A fabric alert on no Slurm node and not on a leaf switch of the topology (a spine, a subnet manager)."""
    return (pl.col("level") == "fabric") & ~pl.col("_has_node") & pl.col("_target_leaf").is_null()


def _upstream_edges(al: pl.DataFrame, matches: pl.DataFrame, primary: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Links from an upstream alert (:func:`_upstream_alert`) to one alert about each wide network
    hardware incident it matched (:func:`_upstream_pairs`), not only its nearest: a spine that fails
    takes down several leaves at once, and until the node logs make that one incident, its alert is
    what ties their alerts together. Likewise a rack alert (a PDU naming its rack, :func:`_rack_pairs`) links
    each rack-scope incident it matched: a rack's power and thermal incidents are one outage."""
    rack_side = (pl.col("level") == "rack") & pl.col("_alert_rack").is_not_null()
    ups = al.filter(_upstream_alert() | rack_side).select("_i", rack_side.alias("_rack_side"))
    wide = (matches.join(ups, on="_i")
            .filter(pl.when(pl.col("_rack_side")).then(pl.col("_hw_scope") == "rack")
                    .otherwise(pl.col("_hw_scope").is_in(list(_WIDE_SCOPES))))
            .select("_i", "hw_incident_id"))
    about = (primary.join(ups, on="_i", how="anti").sort("_i").unique("hw_incident_id", keep="first")
             .select(pl.col("_i").alias("_j"), "hw_incident_id"))
    e = wide.join(about, on="hw_incident_id")
    return e["_i"].to_numpy().astype(np.int64), e["_j"].to_numpy().astype(np.int64)


def _upstream_pairs(al: pl.DataFrame, inc: pl.DataFrame, settings: AlertClusteringSettings) -> pl.DataFrame:
    """``(_i, _h)``: a fabric alert on no Slurm node (a spine, a switch, a subnet manager: target label
    ``switch``/``spine``/``fabric``…) and each network hardware incident wider than a node
    (:data:`_WIDE_SCOPES`) that starts within ``hw_before_minutes`` of it, either side. The node logs
    see the links drop on the leaves' nodes; the spine's own alert is the upstream side of that same
    outage (the server/fabric side rule then makes it the root), not an incident of its own."""
    empty = pl.DataFrame(schema={"_i": pl.Int64, "_h": pl.Int64})
    network = load_component_classes().filter(pl.col("component_class") == "network")["component"].to_list()
    if "level" not in al.columns:  # (coverage reads no levels: the nodes' alerts cover such an incident)
        return empty
    wide = inc.filter(pl.col("component").is_in(network) & pl.col("scope").is_in(list(_WIDE_SCOPES)))
    ups = al.filter(_upstream_alert())
    if wide.is_empty() or ups.is_empty():
        return empty
    near = settings._us(settings.hw_before_minutes)
    return (ups.select("_i", "_ts").join(wide.select("_h", pl.col("start_ts").dt.epoch("us").alias("_hs")), how="cross")
            .filter((pl.col("_ts") - pl.col("_hs")).abs() <= near).select("_i", "_h"))


def _storage_components() -> list[str]:
    """The components of class ``storage`` (``component_classes.csv``): the shared file systems."""
    return load_component_classes().filter(pl.col("component_class") == "storage")["component"].to_list()


def _hw_reach(pairs: pl.DataFrame, al: pl.DataFrame, inc: pl.DataFrame) -> pl.DataFrame:
    """``pairs`` (``_i``, ``_h``) without what an alert can never be about: a ``housekeeping`` alert (a
    disk almost full: capacity, never failure evidence) no hardware incident, a node-local file-system
    alert (``_local_fs``) no shared-storage one — a /local/scratch xfs filling up on 24 nodes during a
    Lustre MDS hang once took the hang's 13 jobs. (Without levels, as for coverage without rules: all.)"""
    if "level" not in al.columns or pairs.is_empty():
        return pairs
    storage = inc.filter(pl.col("component").is_in(_storage_components())).select(pl.col("_h").cast(pl.Int64))
    local = al.filter(pl.col("_local_fs")).select(pl.col("_i").cast(pl.Int64))
    return (pairs.join(al.filter(pl.col("level") == "housekeeping").select(pl.col("_i").cast(pl.Int64)), on="_i", how="anti")
            .join(pairs.join(local, on="_i").join(storage, on="_h"), on=["_i", "_h"], how="anti"))


def _storage_server_pairs(al: pl.DataFrame, inc: pl.DataFrame, settings: AlertClusteringSettings) -> pl.DataFrame:
    """``(_i, _h)``: a storage alert on no Slurm node (the server side: an MDT/OST, a file server such as
    ``home01:9100``) and each shared-storage hardware incident (component class ``storage``) wider than
    one node whose window [start − ``hw_before_minutes``, end + ``hw_after_minutes``] its firing
    [start, end] overlaps. The clients' logs see the file system hang; the server's alert is the
    upstream side of that same outage (and its root), not an incident with no jobs. A one-node storage
    incident (one client's quota, one node's mount) is that client's, never a server's."""
    empty = pl.DataFrame(schema={"_i": pl.Int64, "_h": pl.Int64})
    if "level" not in al.columns:
        return empty
    shared = inc.filter(pl.col("component").is_in(_storage_components())
                        & ((pl.col("scope").fill_null("node") != "node") | (pl.col("nodes").list.len() > 1)))
    servers = al.filter((pl.col("level") == "storage") & ~pl.col("_has_node"))
    if shared.is_empty() or servers.is_empty():
        return empty
    # An alert still firing (no end) counts from its start only: one left firing for days claims nothing later.
    fired = servers.select("_i", "_ts", pl.max_horizontal(pl.col("ends_at").dt.epoch("us"), pl.col("_ts")).alias("_te"))
    return (fired.join(shared.select("_h", "_lo", "_hi"), how="cross")
            .filter((pl.col("_ts") <= pl.col("_hi")) & (pl.col("_te") >= pl.col("_lo"))).select("_i", "_h"))


def _rack_pairs(al: pl.DataFrame, inc: pl.DataFrame, topology: Topology) -> pl.DataFrame:
    """``(_i, _h)``: an alert on no Slurm node that names a rack of cluster.yaml (``_alert_rack``, :func:`_alert_racks`:
    a rack, PDU or location label naming the rack) and each ``rack``-scope hardware incident of that rack (all its
    nodes in it) of a class a rack loses at once (:data:`_RACK_CLASSES`: power, thermal) whose window
    [start − ``hw_before_minutes``, end + ``hw_after_minutes``] its firing [start, end] overlaps. The nodes'
    BMCs log the power loss; the PDU's alert is the upstream side of that same outage (and its root), not a
    service incident with no jobs."""
    empty = pl.DataFrame(schema={"_i": pl.Int64, "_h": pl.Int64})
    if "_alert_rack" not in al.columns or not topology.node_rack:
        return empty
    alerts = al.filter(pl.col("_alert_rack").is_not_null())
    classes = load_component_classes().filter(pl.col("component_class").is_in(list(_RACK_CLASSES)))["component"]
    racked = inc.filter((pl.col("scope") == "rack") & pl.col("component").is_in(classes.to_list()))
    if alerts.is_empty() or racked.is_empty():
        return empty
    rack_of = _incident_racks(racked, "_h", topology).rename({"_hw_rack": "_alert_rack"})
    # An alert still firing (no end) counts from its start only, as for the storage server side.
    fired = alerts.select("_i", "_ts", "_alert_rack",
                          pl.max_horizontal(pl.col("ends_at").dt.epoch("us"), pl.col("_ts")).alias("_te"))
    return (fired.join(racked.select("_h", "_lo", "_hi").join(rack_of, on="_h"), on="_alert_rack")
            .filter((pl.col("_ts") <= pl.col("_hi")) & (pl.col("_te") >= pl.col("_lo")))
            .select(pl.col("_i").cast(pl.Int64), pl.col("_h").cast(pl.Int64)))


def _with_repairs(hw: pl.DataFrame, repairs: pl.DataFrame | None) -> pl.DataFrame:
    """``hw`` (:data:`_HW_SCHEMA`) with ``repaired_ts`` from ``repairs`` (``marts.incident_repairs``:
    ``incident_id``, ``repaired_ts``; None or no row: NULL, the incident closes at its last evidence +
    ``hw_after_minutes``)."""
    if repairs is None:
        return hw
    rep = (_conform(repairs, _REPAIR_SCHEMA, tuple(_REPAIR_SCHEMA)).drop_nulls("repaired_ts")
           .unique("incident_id", keep="first"))
    return (hw.drop("repaired_ts").join(rep, on="incident_id", how="left", maintain_order="left")
            .select(list(_HW_SCHEMA)))


def _incident_racks(inc: pl.DataFrame, key: str, topology: Topology) -> pl.DataFrame:
    """``(key, _hw_rack)``: the rack of each hardware incident of ``inc`` (``key``, ``nodes``) whose nodes
    all sit in one rack of cluster.yaml (a node outside the topology: none)."""
    return (inc.select(key, pl.col("nodes").alias("node")).explode("node")
            .join(topology.frame().select("node", "_rack"), on="node", how="left")
            .group_by(key).agg(pl.col("_rack").unique().alias("_racks"))
            .filter(pl.col("_racks").list.len() == 1)
            .select(key, pl.col("_racks").list.first().alias("_hw_rack")).drop_nulls("_hw_rack"))


def _hw_places(hw: pl.DataFrame, topology: Topology) -> pl.DataFrame:
    """``(hw_incident_id, _hw_nodes, _hw_place)``: where each hardware incident is, from the incident
    itself — its nodes, and for a rack (leaf switch) scope the rack (switch) they share:
    ``rack r02 (gpu[009-016])``, ``leaf switch leaf02 (gpu[017-024])``, ``gpu005`` —; NULL without nodes.
    An alert about it names its own target (a rack's cooling controller ``crac-row1.mgmt:161``, a
    job's hostlist): the reason names the incident's place, not the alert's."""
    schema = {"hw_incident_id": pl.String, "_hw_nodes": pl.List(pl.String), "_hw_place": pl.String}
    hw = hw.unique("incident_id", keep="first", maintain_order=True)
    if hw.is_empty():
        return pl.DataFrame(schema=schema)
    hosts = pl.Series("_hosts", [compress_hostlist(n) if n is not None and len(n) else None for n in hw["nodes"]],
                      dtype=pl.String)
    return (hw.with_columns(hosts).join(_incident_racks(hw, "incident_id", topology), on="incident_id", how="left")
            .select(pl.col("incident_id").alias("hw_incident_id"), pl.col("nodes").alias("_hw_nodes"),
                    pl.when(pl.col("_hosts").is_null()).then(None)
                    .when((pl.col("scope") == "rack") & pl.col("_hw_rack").is_not_null())
                    .then(pl.format("rack {} ({})", "_hw_rack", "_hosts"))
                    .when((pl.col("scope") == "leaf_switch") & pl.col("leaf_switch").is_not_null())
                    .then(pl.format("leaf switch {} ({})", "leaf_switch", "_hosts"))
                    .otherwise(pl.col("_hosts")).alias("_hw_place")))


def _id_of(key: str) -> str:
    return "ainc-" + hashlib.sha1(key.encode()).hexdigest()[:12]


def alert_incident_id(fingerprint: str, starts_us: int) -> str:
    """Stable incident id: ``ainc-`` + 12 hex digits of SHA-1 over the root alert's fingerprint and
    start (epoch microseconds).

    >>> alert_incident_id("a1b2c3", 1_757_000_000_000_000)
    'ainc-2507d06cb398'
    """
    return _id_of(f"{fingerprint}|{starts_us}")


# -- clustering ------------------------------------------------------------------------------------


def _with_nodes(al: pl.DataFrame, node_labels: Sequence[str]) -> pl.DataFrame:
    """``al`` with ``_nodes``: the Slurm nodes each alert is on (:func:`~gpusre.models.alerts.nodes.alert_nodes`:
    its node, or the nodes of a hostlist label such as ``nodelist="gpu[065-080]"``), and ``_has_node``."""
    labels = list(node_labels)
    multi = (pl.col("node").is_null() & pl.col("target").is_not_null() & pl.col("target_label").is_in(labels)
             & pl.col("target").str.contains(r"[\[,]"))
    lists = al.filter(multi).select("target", "target_label").unique()
    expanded = pl.DataFrame({"target": lists["target"], "target_label": lists["target_label"],
                             "_list": pl.Series([alert_nodes(None, t, lb, labels) for t, lb in lists.iter_rows()],
                                                dtype=pl.List(pl.String))},
                            schema={"target": pl.String, "target_label": pl.String, "_list": pl.List(pl.String)})
    al = al.join(expanded, on=["target", "target_label"], how="left", maintain_order="left", nulls_equal=False)
    nodes = (pl.when(pl.col("node").is_not_null()).then(pl.concat_list(pl.col("node")))
             .otherwise(pl.col("_list").fill_null(pl.lit([], dtype=pl.List(pl.String)))))
    return al.with_columns(nodes.alias("_nodes")).drop("_list").with_columns(
        (pl.col("_nodes").list.len() > 0).alias("_has_node"))


def _node_rows(al: pl.DataFrame, topology: Topology, extra: Sequence[str] = ()) -> pl.DataFrame:
    """One row per (alert, node it is on): ``_i``, ``_ts``, ``node``, ``_rack``, ``_leaf`` and ``extra``."""
    rows = al.select("_i", "_ts", pl.col("_nodes").alias("node"), *extra).explode("node").drop_nulls("node")
    return rows.join(topology.frame(), on="node", how="left", maintain_order="left")


#: A network file system's device (``10.0.9.1@o2ib:/scratch``, ``nfs01:/home``): shared, never host-local.
_REMOTE_DEVICE_MARK = ":/"


def _host_local_unplaced(host_local_labels: Sequence[str]) -> pl.Expr:
    """An alert on no Slurm node whose target is a host-local label's value (a NIC, a disk, a mount
    of that host: ``10.0.4.3/mlx5_0``, cluster.yaml ``alerts.nodes.host_local_labels``; not a network
    file system's device): about one host outside the node list."""
    return (~pl.col("_has_node") & pl.col("target_label").is_in(list(host_local_labels))
            & ~pl.col("target").fill_null("").str.contains(_REMOTE_DEVICE_MARK, literal=True))


def _alert_racks(al: pl.DataFrame, rules: Sequence[AlertLevelRule], topology: Topology) -> pl.Series:
    """``_alert_rack``: the cluster.yaml rack a ``rack``-level alert on no Slurm node names, else null.

    A rack is named by its name as a whole token (delimited by anything but a letter or digit, any case)
    of the value of a label a ``rack``-level rule of ``alert_levels.csv`` reads — ``rack="r02"``,
    ``pdu_name="r03-pdu-b"``, ``location="row3-rack-r03"``, ``instance="pdu-r03.mgmt:161"`` — in the
    catalog's order (its rules, then each rule's label names), a value counting only where it matches
    that rule's ``value`` (an ``instance`` only when it names a PDU host). In one value the longest rack
    name wins, so ``r1`` never claims ``pdu-r10-a``. Null for a rack cluster.yaml does not know, a PDU
    naming none. (The label names and conditions are catalog data: a site's spelling is a row there.)
    Each distinct combination of those label values is read once."""
    racks = sorted(set(topology.node_rack.values()), key=lambda r: (-len(r), r))
    rack_rules = [r for r in rules if r.level == "rack" and r.labels]
    if not racks or not rack_rules or al.is_empty():
        return pl.Series("_alert_rack", [None] * al.height, dtype=pl.String)
    by_lower = {r.lower(): r for r in racks}
    token = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(re.escape(r) for r in racks) + r")(?![A-Za-z0-9])",
                       re.IGNORECASE)
    names = sorted({n for r in rack_rules for n in r.labels})
    cols = [f"_lb_{n}" for n in names]
    keyed = al.select(((pl.col("level") == "rack") & ~pl.col("_has_node")).alias("_mine"), *cols)
    combos = keyed.filter("_mine").unique()

    def named(values: Mapping[str, str | None]) -> str | None:
        for rule in rack_rules:
            for name in rule.labels:
                got = values.get(name)
                if got is None or (rule.value is not None and not rule.value.fullmatch(got)):
                    continue
                found = token.findall(got)
                if found:
                    return by_lower[max(found, key=len).lower()]
        return None

    found = [named(dict(zip(names, row[1:]))) for row in combos.iter_rows()]
    combos = combos.with_columns(pl.Series("_alert_rack", found, dtype=pl.String))
    return keyed.join(combos, on=keyed.columns, how="left", nulls_equal=True, maintain_order="left")["_alert_rack"]


def _prepare(alerts: pl.DataFrame, topology: Topology, rules: Sequence[AlertLevelRule],
             node_labels: Sequence[str] = DEFAULT_NODE_LABELS,
             host_local_labels: Sequence[str] = DEFAULT_HOST_LOCAL_LABELS) -> pl.DataFrame:
    al = _conform(alerts, ALERT_SCHEMA, _REQUIRED).with_columns(pl.col("n_notifications").fill_null(1))
    # The labels JSON is the widest column and is read only for the label values the rules use:
    # decoded first and dropped, so the sort and joins below do not copy it.
    al = _with_labels(al, rules).drop("labels")
    al = al.sort("starts_at", "alert_id").with_row_index("_i").with_columns(
        pl.col("_i").cast(pl.Int64), pl.col("starts_at").dt.epoch("us").alias("_ts"))
    al = _with_nodes(al, node_labels)
    leaves = sorted(topology.leaves)
    al = al.with_columns(_levels(al, rules).alias("level"))
    # The fabric rule for alerts on no node means a switch or subnet manager; an IB port of a host
    # (InfinibandPortDown on 10.0.4.3/mlx5_0, an IP no node name resolved) is that host's, never the
    # fabric's: not upstream of anything, an incident on a host outside the node list (scope service).
    al = al.with_columns(
        pl.when((pl.col("level") == "fabric") & _host_local_unplaced(host_local_labels)).then(pl.lit("other"))
        .otherwise(pl.col("level")).alias("level"),
        pl.when(pl.col("target").is_in(leaves)).then(pl.col("target")).otherwise(None).alias("_target_leaf"),
        pl.coalesce(pl.col("template_id").cast(pl.String), pl.lit("name:") + pl.col("alertname"), pl.lit("none")).alias("_tkey"),
    )
    al = al.with_columns(_alert_racks(al, rules, topology), (pl.col("level") == "housekeeping").alias("_hk"))
    # A node-local file system (a block device, xfs / ext4 / tmpfs: the catalog put no network file
    # system's alert at storage level) is one node's disk: never about a shared-storage incident, even
    # when its mountpoint is named like the Lustre file system (/local/scratch vs fsname scratch).
    al = al.with_columns(
        (pl.col("_has_node") & ~pl.col("level").is_in(list(_SERVER_SIDE_LEVELS))
         & pl.any_horizontal([pl.col(f"_lb_{n}").is_not_null() for n in _FS_ALERT_LABELS])).alias("_local_fs"))
    fs_target = pl.when(pl.col("target_label").is_in(list(_FS_TARGET_LABELS))).then(pl.col("target"))
    fs = pl.coalesce(fs_target, *[pl.col(f"_lb_{n}") for n in _FS_LABELS]).str.replace(_LUSTRE_TARGET, "$1")
    return al.with_columns(
        pl.when(pl.col("level") == "storage")
        .then(pl.coalesce(fs, pl.col("_lb_device").str.extract(_REMOTE_DEVICE, 1),
                          pl.col("_lb_mountpoint").str.extract(_MOUNT_NAME, 1), pl.col("_lb_mountpoint"),
                          pl.lit("rule:") + pl.coalesce("alertname", pl.lit(""))))
        .alias("_storage"))


def cluster_alerts(
    alerts: pl.DataFrame,
    topology: Topology | None = None,
    hw_incidents: pl.DataFrame | None = None,
    settings: AlertClusteringSettings | None = None,
    *,
    jobs: pl.DataFrame | None = None,
    attribution: pl.DataFrame | None = None,
    floods: pl.DataFrame | None = None,
    rules: Sequence[AlertLevelRule] | None = None,
    node_labels: Sequence[str] = DEFAULT_NODE_LABELS,
    as_of: object | None = None,
    host_local_labels: Sequence[str] = DEFAULT_HOST_LOCAL_LABELS,
    repairs: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Cluster alerts into incidents (method in the module docstring).

    Args:
        alerts: ``core.alerts`` rows (:data:`ALERT_SCHEMA`; ``alert_id``, ``fingerprint``,
            ``starts_at`` required, ``labels`` as JSON text).
        topology: racks and leaf switches; None: no rack/leaf links.
        hw_incidents: ``marts.hw_incidents`` (``incident_id``, ``component``, ``start_ts``,
            ``end_ts``, ``nodes``, ``scope``, ``leaf_switch``), or None.
        jobs: ``core.jobs`` (``job_id``, ``state``, ``end_ts``, ``nodes``) for the blast radius, and
            the earlier runs of requeued jobs keyed ``<job_id>#<instance_no>`` (:data:`~gpusre.models.vocabulary.RUN_KEY_SEP`);
            None: no Slurm accounting, ``n_jobs_killed`` and ``lost_gpu_hours`` NULL (unknown, not 0);
            an empty frame: accounting without a killed job, 0.
        attribution: ``marts.job_failure_attribution`` (``job_id``, ``attribution``,
            ``lost_gpu_hours``, ``incident_id``) and the requeued runs' rows under their run keys; jobs it
            gives to the user do not count, runs it gives to a hardware incident count whatever their state.
        floods: flood episodes (``start_ts``, ``end_ts``) from
            :func:`~gpusre.models.alerts.floods.detect_floods`; None: detected with its defaults.
        node_labels: the node labels of the node mapping (cluster.yaml ``alerts.nodes.node_labels``):
            an alert whose target is a hostlist from one of them is on all those nodes.
        as_of: the end of the alert data (a datetime); an incident with an alert still firing is
            ``ongoing`` and ends there. Default (and at least): the latest alert start or end.
        host_local_labels: the node mapping's host-local labels (cluster.yaml
            ``alerts.nodes.host_local_labels``): such a target on no node is a host's, not the fabric's.
        repairs: ``marts.incident_repairs`` (``incident_id``, ``repaired_ts``): a hardware incident's
            window stays open until its repair (None, or no repair time: its last evidence + 30 min).

    Returns:
        ``(incidents, members)``: :data:`INCIDENT_SCHEMA` sorted by ``start_ts``, ``incident_id``;
        :data:`MEMBER_SCHEMA` sorted by ``alert_id``.
    """
    settings = settings or AlertClusteringSettings()
    topology = topology or Topology()
    rules = tuple(rules) if rules is not None else load_alert_levels()
    if alerts.is_empty():
        return pl.DataFrame(schema=INCIDENT_SCHEMA), pl.DataFrame(schema=MEMBER_SCHEMA)
    al = _prepare(alerts, topology, rules, node_labels, host_local_labels)
    n = al.height
    ts = al["_ts"].to_numpy()
    al = al.with_columns(pl.Series("_s", sessionize(ts, settings.gap_us)))

    related = template_cooccurrence(al["_tkey"], al["_s"].to_numpy(), ts, settings)
    al = al.with_columns(_template_groups(al["_tkey"], related).alias("_group"))
    # One row per (alert, node): an alert on a hostlist of nodes is on each of them.
    an = _node_rows(al, topology, ("_s", "alertname", "_group"))

    hw = (_with_repairs(_conform(hw_incidents, _HW_SCHEMA, ("incident_id", "start_ts", "nodes")), repairs)
          if hw_incidents is not None else None)
    matches = _match_hw(al, hw if hw is not None else pl.DataFrame(schema=_HW_SCHEMA), settings, an, topology)

    # Each alert's own hardware incident (the nearest its start): an alert between two faults of
    # one node links only the one it is about, never the two together.
    primary = matches.unique("_i", keep="first", maintain_order=True)
    links = _links(al, an, primary, related, settings)
    links["upstream"] = _upstream_edges(al, matches, primary)
    u = np.concatenate([e[0] for e in links.values()])
    v = np.concatenate([e[1] for e in links.values()])
    graph = coo_matrix((np.ones(len(u), dtype=np.int8), (u, v)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    al = al.with_columns(pl.Series("_c", labels.astype(np.int64)))

    al = al.join(primary, on="_i", how="left", maintain_order="left")
    # Kept apart, not joined onto every alert: an incident's node list and place, copied to each of its
    # alerts, were most of the frame's bytes (a fabric incident's 2,000 nodes on each alert about it).
    hw_places = _hw_places(hw if hw is not None else pl.DataFrame(schema=_HW_SCHEMA), topology)
    last = al.select(pl.max_horizontal(pl.col("starts_at").max(), pl.col("ends_at").max()))[0, 0]
    if as_of is not None:
        given = pl.select(pl.lit(as_of).cast(_TS))[0, 0]
        last = max(last, given) if given is not None else last
    # Which (alert, node) rows are evidence of the fault's spread: an alert on its one node, or a node
    # of the hardware incident it is about. A hostlist label (nodelist="gpu[004-006]" of a failed
    # job) names the job's nodes, not how far the fault reached.
    hw_node_pairs = (hw_places.select("hw_incident_id", pl.col("_hw_nodes").alias("node")).explode("node")
                     .drop_nulls().unique().with_columns(pl.lit(True).alias("_on_hw")))
    an = (an.join(al.select("_i", "_c", pl.col("_nodes").list.len().alias("_k"), "hw_incident_id"), on="_i")
          .join(hw_node_pairs, on=["hw_incident_id", "node"], how="left", maintain_order="left")
          .with_columns(((pl.col("_k") == 1) | pl.col("_on_hw").fill_null(False)).alias("_ev"))
          .drop("_k", "hw_incident_id", "_on_hw"))
    incidents, members = _incidents(al, an, settings, last, hw_places.select("hw_incident_id", "_hw_place"))
    incidents = _flag_floods(incidents, al, floods)
    incidents = _job_impact(incidents, _members_hw(al), jobs, attribution, settings)
    return (incidents.select([pl.col(c).cast(t) for c, t in INCIDENT_SCHEMA.items()]).sort("start_ts", "incident_id"),
            members.select([pl.col(c).cast(t) for c, t in MEMBER_SCHEMA.items()]).sort("alert_id"))


def _links(al: pl.DataFrame, an: pl.DataFrame, matches: pl.DataFrame, related: pl.DataFrame,
           settings: AlertClusteringSettings) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The links of the method, by kind: ``kind -> (u, v)`` arrays of alert row numbers ``_i``.
    ``an``: one row per (alert, node) (:func:`_node_rows`: an alert on a hostlist of nodes links
    through each of them); ``matches``: at most one hardware incident per alert (its nearest,
    :func:`_match_hw`).

    Keys are compared by 64-bit hash (sorting integers, not strings); a collision between two
    different keys of alerts minutes apart is a 2^-64 event.
    """
    def h(expr: pl.Expr) -> pl.Expr:
        return pl.when(expr.is_not_null()).then(expr.hash(7))

    # Every key holds ``_hk`` (a housekeeping alert: a disk almost full, a user's quota): housekeeping links
    # only housekeeping. A quota alert on /lustre/scratch shares the file system's target with the OST
    # outage 7 min later, but it is no fault: it forms its own incident, never the outage's root or start.
    hashed = al.select(
        "_i", "_s", "_ts", "_hk",
        h(pl.when(pl.col("node").is_null()).then(pl.col("target"))).alias("target"),
        h(pl.col("_storage")).alias("storage"),
    )
    by_node = an.join(al.select("_i", "_hk"), on="_i", how="left").select(
        "_i", "_s", "_ts", "_hk", h(pl.col("node")).alias("node"),
        h(pl.col("_rack")).alias("rack"), h(pl.col("_leaf")).alias("leaf"),
        h(pl.col("alertname")).alias("alertname"), h(pl.col("_group")).alias("group"),
    )
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    out["node"] = _chain_edges(by_node, ["node", "_hk"], settings.gap_us)
    for key in ("target", "storage"):
        out[key] = _chain_edges(hashed, [key, "_hk"], settings.gap_us)
    for scope in ("rack", "leaf"):
        for what in ("alertname", "group"):
            out[f"{scope}_{what}"] = _chain_edges(by_node, [scope, what, "_hk"], settings.peer_gap_us)
    # One hardware incident is one alert incident for as long as it is open, across sessions: a second
    # wave of link-down alerts an hour later belongs to the switch that is still broken.
    out["hw_incident"] = _chain_edges(
        matches.select("_i", h(pl.col("hw_incident_id")).alias("hw")).join(hashed.select("_i", "_s", "_ts"), on="_i"),
        ["hw"], _ANY_DISTANCE_US)
    out["flap"] = _flap_edges(al, settings.flap_us)
    # Switch alert -> alerts on its leaf's nodes.
    out["switch"] = _nearest_edges(
        an.filter(pl.col("_leaf").is_not_null()).select("_i", "_s", "_ts", "_leaf").join(al.select("_i", "_hk"), on="_i"),
        al.filter(pl.col("_target_leaf").is_not_null()).select(pl.col("_i").alias("_j"), "_s", "_ts", "_hk",
                                                               pl.col("_target_leaf").alias("_leaf")),
        ["_s", "_leaf", "_hk"], settings.gap_us)
    # Unplaced alert -> nearest alert of each co-occurring template.
    if not related.is_empty():
        both = pl.concat([related.select("a", "b"), related.select(pl.col("b").alias("a"), pl.col("a").alias("b"))])
        left = (al.filter(~pl.col("_has_node")).select("_i", "_s", "_ts", "_hk", pl.col("_tkey").alias("a"))
                .join(both, on="a").select("_i", "_s", "_ts", "_hk", pl.col("b").alias("_t")))
        right = al.select(pl.col("_i").alias("_j"), "_s", "_ts", "_hk", pl.col("_tkey").alias("_t"))
        out["cooccurrence"] = _nearest_edges(left, right, ["_s", "_t", "_hk"], settings.gap_us)
    return out

def _where(node: str, target: str) -> pl.Expr:
    return pl.coalesce(pl.col(node), pl.col(target), pl.lit("?"))


def _node_aggs(an: pl.DataFrame) -> pl.DataFrame:
    """Per incident ``_c`` of the (alert, node) rows ``an``: its nodes and how many racks / leaf
    switches they sit in (``_unracked`` / ``_unleafed``: nodes outside the topology)."""
    # Most incidents are one alert on one node: those skip the group-by.
    an = an.with_columns(pl.len().over("_c").alias("_size"))
    one = an.filter(pl.col("_size") == 1)
    rest = an.filter(pl.col("_size") > 1)
    present = lambda name: pl.col(name).is_not_null().cast(pl.UInt32)  # noqa: E731
    singles = one.select("_c", pl.concat_list("node").alias("nodes"),
                         present("_rack").alias("_racks"), (1 - present("_rack")).alias("_unracked"),
                         present("_leaf").alias("_leaves"), (1 - present("_leaf")).alias("_unleafed"))
    grouped = rest.group_by("_c").agg(
        pl.col("node").unique().sort().alias("nodes"),
        pl.col("_rack").drop_nulls().n_unique().alias("_racks"),
        pl.col("_rack").null_count().alias("_unracked"),
        pl.col("_leaf").drop_nulls().n_unique().alias("_leaves"),
        pl.col("_leaf").null_count().alias("_unleafed"))
    return pl.concat([singles, grouped.select(singles.columns).cast(singles.schema)])


def _evidence_aggs(an: pl.DataFrame) -> pl.DataFrame:
    """Per incident ``_c``: :func:`_node_aggs` of its evidence rows only (``_ev``: an alert on one node,
    or a node of the hardware incident a hostlist alert is about), as ``_ev_nodes`` (how many),
    ``_ev_racks``, ``_ev_unracked``, ``_ev_leaves``, ``_ev_unleafed``."""
    ev = _node_aggs(an.filter(pl.col("_ev")).select("_c", "node", "_rack", "_leaf"))
    return ev.select("_c", pl.col("nodes").list.len().cast(pl.UInt32).alias("_ev_nodes"),
                     *[pl.col(c).alias(f"_ev{c}") for c in ("_racks", "_unracked", "_leaves", "_unleafed")])


def _incidents(al: pl.DataFrame, an: pl.DataFrame, settings: AlertClusteringSettings,
               as_of: object, places: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Incident rows and members of the clustered alerts ``al`` (with ``_c``); ``an``: one row per
    (alert, node) with ``_c``; ``as_of``: the end of the alert data (an ongoing incident's end);
    ``places``: ``hw_incident_id``, ``_hw_place`` (:func:`_hw_places`)."""
    # Most incidents are one alert: those skip the group-by (a large share of the time otherwise).
    al = al.with_columns(pl.len().over("_c").alias("_size"))
    single = al.filter(pl.col("_size") == 1)
    multi = al.filter(pl.col("_size") > 1)
    ranked = multi.with_columns(
        # An inhibited alert is a consequence Alertmanager itself tied to another firing alert (its
        # inhibitor, e.g. NodeNetworkReceiveErrs under InfinibandPortDown): never the root while the
        # incident holds an alert that is not inhibited.
        (pl.col("suppressed") == "inhibited").fill_null(False).alias("_inhibited"),
        # The server, fabric or rack side (an OST, a switch, a PDU: upstream and on no node) names the cause before
        # the client symptoms that fire within minutes of it, even when those match a hardware incident.
        ~(pl.col("level").is_in(list(_SERVER_SIDE_LEVELS)) & ~pl.col("_has_node")).alias("_client"),
        pl.col("hw_incident_id").is_null().alias("_no_hw"),
        # Alerts about a hardware incident: the first one is the alarm about the fault (a Xid alert 25 s
        # after the Xid line, before the node exporter went quiet 3 min later); the others: the most
        # upstream level first.
        pl.when(pl.col("hw_incident_id").is_null())
        .then(pl.col("level").replace_strict(LEVEL_RANK, default=len(LEVEL_RANK), return_dtype=pl.Int32))
        .otherwise(0).alias("_rank"),
    # Ties (one rule on several nodes at the same second) go to the first node by name, then target:
    # the root agrees with a timeline sorted by time and node (the alert_id hash would pick any).
    ).sort("_c", "_inhibited", "_client", "_no_hw", "_rank", "_ts", "node", "target", "alert_id", nulls_last=True)
    roots = pl.concat([single, ranked.unique("_c", keep="first", maintain_order=True).select(single.columns)])
    # A root that fired at the same moment on several nodes of its incident (one rule evaluated over a
    # rack) is named on all of them, as a hostlist: "GPU temperature high on h200-[001-005]".
    same = (multi.filter(pl.col("node").is_not_null())
            .group_by("_c", "alertname", "_ts").agg(pl.col("node").unique().sort().alias("_same"))
            .filter(pl.col("_same").list.len() > 1))
    if same.height:
        same = same.with_columns(pl.Series("_same_where", [compress_hostlist(n) for n in same["_same"]],
                                           dtype=pl.String)).drop("_same")
        roots = roots.join(same, on=["_c", "alertname", "_ts"], how="left", nulls_equal=True,
                           maintain_order="left").with_columns(
            pl.coalesce("_same_where", "node").alias("node")).drop("_same_where")

    def one(expr: pl.Expr) -> pl.Expr:
        return pl.concat_list(expr).list.drop_nulls()

    # An alert without an end (status firing) is still firing at the end of the alert data: its
    # incident is ongoing, and lasts at least until then (``as_of``), not until its last start.
    single_aggs = single.select(
        "_c", pl.col("starts_at").alias("start_ts"), pl.max_horizontal("ends_at", "starts_at").alias("_last_end"),
        pl.col("ends_at").is_null().cast(pl.Int64).alias("firing_alerts"),
        pl.col("_ts").alias("_last_ts"), pl.lit(1, dtype=pl.Int64).alias("n_alerts"),
        pl.lit(0, dtype=pl.Int64).alias("flaps"), pl.col("hw_incident_id").alias("_any_hw"),
        one(pl.col("template_id")).alias("templates"), one(pl.col("alertname")).alias("alertnames"),
    )
    multi_aggs = multi.group_by("_c").agg(
        pl.col("starts_at").min().alias("start_ts"),
        pl.max_horizontal(pl.col("ends_at").max(), pl.col("starts_at").max()).alias("_last_end"),
        pl.col("ends_at").null_count().cast(pl.Int64).alias("firing_alerts"),
        pl.col("_ts").max().alias("_last_ts"),
        pl.len().cast(pl.Int64).alias("n_alerts"),
        (pl.len() - pl.col("fingerprint").n_unique()).cast(pl.Int64).alias("flaps"),
        pl.col("hw_incident_id").sort_by("_ts", "alert_id").drop_nulls().first().alias("_any_hw"),
        pl.col("template_id").drop_nulls().unique().sort().alias("templates"),
        pl.col("alertname").drop_nulls().unique().sort().alias("alertnames"),
    )
    aggs = pl.concat([single_aggs, multi_aggs.select(single_aggs.columns).cast(single_aggs.schema)])
    aggs = aggs.with_columns(
        (pl.col("firing_alerts") > 0).alias("ongoing"),
        pl.when(pl.col("firing_alerts") > 0).then(pl.lit(as_of).cast(_TS)).otherwise(pl.col("_last_end")).alias("end_ts"),
    ).join(_node_aggs(an), on="_c", how="left").join(_evidence_aggs(an), on="_c", how="left").with_columns(
        pl.col("nodes").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("_racks", "_unracked", "_leaves", "_unleafed", "_ev_nodes", "_ev_racks", "_ev_unracked",
               "_ev_leaves", "_ev_unleafed").fill_null(0))
    level_desc = (
        pl.when(pl.col("level") == "fabric").then(
            pl.when(pl.col("_target_leaf").is_not_null()).then(pl.lit("fabric: leaf switch ") + pl.col("_target_leaf"))
            .when(pl.col("target").is_not_null()).then(pl.lit("fabric: ") + pl.col("target"))
            .otherwise(pl.lit("fabric")))
        .when(pl.col("level") == "storage").then(pl.lit("storage: ") + pl.col("_storage").str.replace("^rule:", ""))
        .when(pl.col("level") == "rack").then(pl.lit("rack: ") + pl.coalesce("_alert_rack", _where("node", "target")))
        .when(pl.col("level") == "gpu").then(pl.lit("GPU on ") + _where("node", "target"))
        .when(pl.col("level") == "node").then(pl.lit("node ") + _where("node", "target"))
        .when(pl.col("level") == "slurm").then(pl.lit("Slurm reaction on ") + _where("node", "target"))
        .when(pl.col("level") == "housekeeping").then(pl.lit("housekeeping: capacity on ") + _where("node", "target"))
        .otherwise(pl.concat_str(pl.lit("other"), pl.lit(": ") + pl.coalesce("node", "target"), ignore_nulls=True))
    )
    reason = (
        pl.when(pl.col("hw_incident_id").is_not_null())
        .then(pl.format("hardware incident {} ({}) on {}", "hw_incident_id", pl.col("_hw_component").fill_null("?"),
                        pl.coalesce("_hw_place", _where("node", "target"))))
        .otherwise(pl.format("earliest alert at the most upstream level ({})", level_desc))
        # A silenced or inhibited root still names the cause, but nobody was paged for it.
        + pl.when(pl.col("suppressed") == "silenced").then(pl.lit("; silenced in Alertmanager"))
        .when(pl.col("suppressed") == "inhibited").then(pl.lit("; inhibited in Alertmanager"))
        .otherwise(pl.lit(""))
    )
    # The hardware incident is where its own evidence is (_hw_places), not where the root alert points:
    # a failed job's hostlist (the Xid 79 was on gpu005, not on gpu[004-006]), a rack's cooling
    # controller (the thermal incident is on the rack's nodes), an OST (the clients logged the hang).
    roots = roots.join(places, on="hw_incident_id", how="left", maintain_order="left").select(
        "_c", pl.col("alert_id").alias("root_alert_id"), pl.col("level").alias("root_level"),
        pl.concat_str(pl.col("alertname").fill_null("alert"),
                      pl.when(pl.col("node").is_not_null() | pl.col("target").is_not_null())
                      .then(pl.lit(" on ") + _where("node", "target")).otherwise(pl.lit(""))).alias("root_cause_candidate"),
        reason.alias("root_cause_reason"), "hw_incident_id", "_hw_scope", "_hw_component", "_target_leaf",
        "fingerprint", "_ts",
    )
    inc = aggs.join(roots, on="_c").with_columns(pl.coalesce("hw_incident_id", "_any_hw").alias("hw_incident_id"))
    n_nodes = pl.col("nodes").list.len()
    n_ev = pl.col("_ev_nodes")
    one_leaf = (pl.col("_leaves") == 1) & (pl.col("_unleafed") == 0)
    ev_rack = (pl.col("_ev_racks") == 1) & (pl.col("_ev_unracked") == 0)
    ev_leaf = (pl.col("_ev_leaves") == 1) & (pl.col("_ev_unleafed") == 0)
    # "cluster" only for what spans several racks or leaf switches ("nodes": several nodes of which
    # cluster.yaml gives no rack or leaf switch); an incident on no Slurm node is a fabric event (a
    # subnet manager, a switch outside the topology) or a service alert. Node scopes count the
    # evidence nodes only (_evidence_aggs): a failed job's hostlist is no rack event, and several
    # nodes that only hostlists name are "nodes" (spread unknown).
    # A fabric root on no leaf switch (a subnet manager, a spine) about a network hardware incident wider
    # than a leaf (an SM failover on 20 nodes of 2 leaves: scope fabric) takes that incident's scope: the
    # few nodes whose own alerts fired (3 under one leaf) must not point the SRE at one leaf switch.
    wide_root = ((pl.col("root_level") == "fabric") & pl.col("_target_leaf").is_null()
                 & pl.col("_hw_scope").is_in(["fabric", "cluster"]).fill_null(False))
    scope = (
        pl.when(wide_root).then(pl.col("_hw_scope"))
        .when((pl.col("root_level") == "fabric") & (pl.col("_target_leaf").is_not_null() | one_leaf & (n_nodes > 0)))
        .then(pl.lit("leaf_switch"))
        .when((pl.col("root_level") == "fabric") & (n_nodes == 0)).then(pl.lit("fabric"))
        .when(pl.col("root_level") == "fabric").then(pl.lit("cluster"))
        .when(pl.col("_hw_scope") == "leaf_switch").then(pl.lit("leaf_switch"))
        .when((pl.col("root_level") == "storage") | (pl.col("_hw_component") == "storage")).then(pl.lit("storage"))
        # A PDU or rack-cooling alert alone (no node alert came with it) is still about its rack.
        .when((pl.col("root_level") == "rack") & (n_nodes == 0)).then(pl.lit("rack"))
        .when(n_nodes == 0).then(pl.lit("service"))
        .when(n_ev == 1).then(pl.lit("node"))
        .when(n_ev == 0).then(pl.lit("nodes"))
        .when(ev_rack).then(pl.lit("rack"))
        .when(ev_leaf).then(pl.lit("leaf_switch"))
        .when((pl.col("_ev_racks") == 0) & (pl.col("_ev_leaves") == 0)).then(pl.lit("nodes"))  # no topology for them
        .otherwise(pl.lit("cluster"))
    )
    inc = inc.with_columns(scope.alias("scope"), n_nodes.cast(pl.Int64).alias("n_nodes"))
    keys = inc.select(pl.format("{}|{}", "fingerprint", "_ts"))[:, 0].to_list()
    inc = inc.with_columns(pl.Series("incident_id", [_id_of(k) for k in keys], dtype=pl.String))
    members = al.select("_c", "alert_id", "level", "hw_incident_id").join(
        inc.select("_c", "incident_id", "root_alert_id"), on="_c").select(
        "alert_id", "incident_id", (pl.col("alert_id") == pl.col("root_alert_id")).alias("is_root"), "level",
        "hw_incident_id")
    return inc, members


def _flag_floods(inc: pl.DataFrame, al: pl.DataFrame, floods: pl.DataFrame | None) -> pl.DataFrame:
    if floods is None:
        floods = detect_floods(al["starts_at"])
    flagged = _alerts_in_floods(al.select("_c", "starts_at"), floods)
    in_flood = flagged.filter(pl.col("_flood").is_not_null()).select("_c").unique().with_columns(pl.lit(True).alias("in_flood"))
    return inc.join(in_flood, on="_c", how="left").with_columns(pl.col("in_flood").fill_null(False))


def _alerts_in_floods(alerts: pl.DataFrame, floods: pl.DataFrame) -> pl.DataFrame:
    """``alerts`` with ``_flood`` = index of the flood episode [start, end) its start falls in, or null."""
    if floods.is_empty():
        return alerts.with_columns(pl.lit(None, dtype=pl.Int64).alias("_flood"))
    fl = floods.select(pl.col("start_ts").cast(_TS).alias("_fs"),
                       pl.col("end_ts").cast(_TS).alias("_fe")).with_row_index("_flood")
    j = alerts.with_row_index("_row").sort("starts_at").join_asof(
        fl.sort("_fs"), left_on="starts_at", right_on="_fs", strategy="backward", check_sortedness=False)
    inside = pl.col("starts_at") < pl.col("_fe")
    j = j.with_columns(pl.when(inside).then(pl.col("_flood").cast(pl.Int64)).otherwise(None).alias("_flood"))
    return j.sort("_row").drop("_row", "_fs", "_fe")


def _members_hw(al: pl.DataFrame) -> pl.DataFrame:
    """``(_c, _inc_hw)``: every hardware incident an alert of incident ``_c`` is about (its members' own
    matches). A rack's power loss is one alert incident over eight per-node ``host_power`` hardware
    incidents: it is about all eight, not only the one its ``hw_incident_id`` names."""
    return al.select("_c", pl.col("hw_incident_id").alias("_inc_hw")).drop_nulls("_inc_hw").unique()


def _job_impact(inc: pl.DataFrame, about: pl.DataFrame, jobs: pl.DataFrame | None, attribution: pl.DataFrame | None,
                settings: AlertClusteringSettings) -> pl.DataFrame:
    """``inc`` with ``n_jobs_killed`` and ``lost_gpu_hours`` (the blast radius of the module docstring);
    ``about``: ``(_c, _inc_hw)``, the hardware incidents each alert incident is about (:func:`_members_hw`)."""
    if jobs is None:  # no accounting: which jobs died is unknown
        return inc.with_columns(pl.lit(None, dtype=pl.Int64).alias("n_jobs_killed"),
                                pl.lit(None, dtype=pl.Float64).alias("lost_gpu_hours"),
                                pl.lit(None, dtype=pl.Int64).alias("n_runs_requeued"))
    zero = inc.with_columns(pl.lit(0, dtype=pl.Int64).alias("n_jobs_killed"), pl.lit(0.0).alias("lost_gpu_hours"),
                            pl.lit(0, dtype=pl.Int64).alias("n_runs_requeued"))
    if jobs.is_empty():
        return zero
    jb = _conform(jobs, {"job_id": pl.String(), "state": pl.String(), "end_ts": _TS, "nodes": pl.List(pl.String())},
                  ("job_id", "state", "end_ts", "nodes"))
    jb = jb.filter(pl.col("end_ts").is_not_null())
    if attribution is not None and not attribution.is_empty():
        attr = _conform(attribution, {"job_id": pl.String(), "attribution": pl.String(), "lost_gpu_hours": pl.Float64(),
                                      "incident_id": pl.String()},
                        ("job_id",)).unique("job_id", keep="first").rename({"incident_id": "_job_hw"})
        jb = jb.join(attr, on="job_id", how="left")
    else:
        jb = jb.with_columns(pl.lit(None, dtype=pl.String).alias("attribution"),
                             pl.lit(None, dtype=pl.Float64).alias("lost_gpu_hours"),
                             pl.lit(None, dtype=pl.String).alias("_job_hw"))
    # A killed run: it ended in ``killed_states``, or attribution gives it to a hardware incident whatever
    # state Slurm wrote — a run a GPU fault ended that Slurm requeued ends REQUEUED, and that incident's
    # ``affected_jobs`` / ``lost_gpu_hours`` count it (one definition: the attribution marts').
    killed = pl.col("state").is_in(list(settings.killed_states)) | (
        (pl.col("attribution") == INFRASTRUCTURE) & pl.col("_job_hw").is_not_null()).fill_null(False)
    jb = jb.filter(killed & (pl.col("attribution").is_null() | (pl.col("attribution") != "user"))).unique("job_id")
    if jb.is_empty():
        return zero
    job_nodes = jb.select("job_id", "nodes", pl.col("end_ts").dt.epoch("us").alias("_ts")).explode("nodes").drop_nulls("nodes")
    job_nodes = job_nodes.with_row_index("_p").with_columns(pl.col("_p").cast(pl.Int64))
    before = int(settings.job_before_minutes * 60e6)
    after = int(settings.job_after_minutes * 60e6)
    windows = inc.select("_c", pl.col("nodes"), (pl.col("start_ts").dt.epoch("us") - before).alias("_lo"),
                         (pl.col("_last_ts") + after).alias("_hi")).explode("nodes").drop_nulls("nodes")
    windows = windows.rename({"nodes": "node"}).with_row_index("_w").with_columns(pl.col("_w").cast(pl.Int64))
    pairs = _window_pairs(windows.select("_w", "node", "_lo", "_hi"),
                          job_nodes.select("_p", pl.col("nodes").alias("node"), "_ts"), "node")
    # A job attribution puts on a hardware incident is that incident's: an alert incident claims it only
    # when it is about that incident (a /var/log alert on one node of a job a GPU fault killed elsewhere
    # once counted it too — the same job in two alert incidents).
    in_window = pairs.join(windows.select("_w", "_c"), on="_w").join(job_nodes.select("_p", "job_id"), on="_p")
    # And every killed run attribution gives to the hardware incident this one is about, whenever it
    # died: a job NCCL kept alive 10 min past the last alert start is still the outage's (the hardware
    # incident's own count has it; the alert view must not show a smaller cost for the same outage).
    linked = about.join(jb.select("job_id", "_job_hw").drop_nulls("_job_hw"), left_on="_inc_hw", right_on="_job_hw")
    hit = (pl.concat([in_window.select("_c", "job_id"), linked.select("_c", "job_id")]).unique()
           .join(jb.select("job_id", pl.col("lost_gpu_hours").fill_null(0.0), "_job_hw"), on="job_id"))
    # A job blamed on a hardware incident counts only for the alert incidents about it (any of theirs).
    mine = hit.join(about, left_on=["_c", "_job_hw"], right_on=["_c", "_inc_hw"], how="semi")
    hit = (pl.concat([hit.filter(pl.col("_job_hw").is_null()), mine])
           .group_by("_c").agg(run_key_job(pl.col("job_id")).n_unique().cast(pl.Int64)
                               .alias("n_jobs_killed"), ordered_sum("lost_gpu_hours"),
                               # earlier runs (keyed job#instance): the requeued runs beside the jobs
                               pl.col("job_id").str.contains(RUN_KEY_SEP, literal=True).sum().cast(pl.Int64)
                               .alias("n_runs_requeued")))
    return inc.join(hit, on="_c", how="left").with_columns(
        pl.col("n_jobs_killed", "n_runs_requeued").fill_null(0), pl.col("lost_gpu_hours").fill_null(0.0))


# -- marts built on the clusters -------------------------------------------------------------------


def _flood_id(start: object) -> str:
    return "flood-" + hashlib.sha1(str(start).encode()).hexdigest()[:12]


def alert_floods(alerts: pl.DataFrame, members: pl.DataFrame, floods: pl.DataFrame) -> pl.DataFrame:
    """``marts.alert_floods``: each episode of :func:`~gpusre.models.alerts.floods.detect_floods` with
    the incidents its alerts belong to and alerts per incident."""
    if floods.is_empty():
        return pl.DataFrame(schema=FLOOD_SCHEMA)
    al = alerts.select("alert_id", _utc(alerts, "starts_at")).join(members.select("alert_id", "incident_id"), on="alert_id")
    per = (_alerts_in_floods(al, floods).drop_nulls("_flood").group_by("_flood")
           .agg(pl.col("incident_id").n_unique().cast(pl.Int64).alias("incidents")))
    fl = floods.with_row_index("_flood").with_columns(pl.col("_flood").cast(pl.Int64)).join(per, on="_flood", how="left")
    fl = fl.with_columns(
        pl.Series("flood_id", [_flood_id(s) for s in fl["start_ts"].to_list()], dtype=pl.String),
        pl.col("peak_alerts").alias("peak_per_bucket"),
        pl.col("incidents").fill_null(0),
    ).with_columns((pl.col("n_alerts") / pl.col("incidents")).alias("compression_ratio"))
    return fl.select([pl.col(c).cast(t) for c, t in FLOOD_SCHEMA.items()]).sort("start_ts")


#: The day a landing file is named for: the last ``YYYY-MM-DD`` in its path
#: (``alerts/alertmanager-2026-11-10.jsonl``, ``alerts/2026-11-10/am.log``), else NULL. Dashed only:
#: logrotate's ``dateext`` (``alerts.log-20261111``) names a file for the day it was rotated, the
#: day after most of its content, and is not taken for a delivery day.
_FILE_DAY_SQL = r"try_strptime(list_last(regexp_extract_all(source_file, '(\d{4}-\d{2}-\d{2})', 1)), '%Y-%m-%d')::DATE"


def meta_alert_pattern() -> str:
    """The regular expression (RE2, as DuckDB's ``regexp_matches`` takes it) a whole alert name matches when
    it is a heartbeat meta-alert (the catalog's ``heartbeat`` rules, :func:`load_meta_alerts`): the alerts
    whose ``startsAt`` is their first firing, weeks old, and dates nothing; one that matches nothing
    without such rules. For SQL marts that take it as a parameter (``marts.data_freshness``). (A Grafana
    ``DatasourceNoData`` or test alert starts when it is sent: its start dates the data.)"""
    rules = [r for r in load_meta_alerts() if r.kind == "heartbeat" and r.label is None]
    return ("(?i)^(?:" + "|".join(f"(?:{r.alertname})" for r in rules) + ")$") if rules else "$^."


def _meta_alert_sql(column: str = "alertname") -> str:
    """SQL: whether ``column`` is a heartbeat meta-alert (:func:`meta_alert_pattern`)."""
    if meta_alert_pattern() == "$^.":
        return "false"
    pattern = meta_alert_pattern().replace("'", "''")
    return f"coalesce(regexp_matches({column}, '{pattern}'), false)"


#: The latest time a notification row shows, which its delivery cannot precede (a start, or a
#: resolved alert's end: a webhook is sent after what it reports). A meta-alert shows none:
#: Alertmanager re-sends the always-firing Watchdog with its first ``startsAt`` (weeks before).
_SHOWN_SQL = ("CASE WHEN NOT " + _meta_alert_sql() + " THEN CASE WHEN status = 'resolved' "
              "THEN greatest(starts_at, ends_at) ELSE starts_at END END")

#: The error of a truncation reject (``models/sources/alerts/parse.py``); group 1: the alerts dropped.
_TRUNCATED_REJECT_RE = r"(?:Alertmanager|Grafana) truncated (\d+) alerts? from this notification"

#: Notifications received per UTC day (:data:`NOTIFICATION_DAY_SCHEMA`) from
#: ``raw.alert_notifications``. A payload does not say when it was sent; a notification was received
#: on the day of its logger's timestamp (``received_at``), else on the date its file is named for
#: (:data:`_FILE_DAY_SQL`) — but never before the latest time the payload itself shows
#: (:data:`_SHOWN_SQL`), which is also the day of a file without a date in its name (a delivery of
#: meta-alerts only, in such a file, has no known day and is not counted).
#: ``deliveries``: the webhook payloads (one per JSON value: a file line, or an element of an array).
#: ``truncated_deliveries``: those of them Alertmanager (Grafana) cut at the receiver's ``max_alerts``
#: (``truncatedAlerts`` above 0, a reject of ``raw.rejects``); ``truncated_alerts``: the most alerts one
#: of them left out. Those alerts never arrived: every alert count of that day is a lower bound (the
#: most one delivery dropped, not their sum: a group's firing and resolved notifications drop the same
#: alerts, as does a second receiver).
#: An ``/api/v2/alerts`` snapshot (:data:`~gpusre.models.sources.alerts.parse.SNAPSHOT_SQL`) is neither:
#: Alertmanager sent nothing, a poller read its state (it still dates the alert data's span).
NOTIFICATION_DAYS_SQL = r"""
WITH n AS (
    SELECT source_file, line_no, payload_no, received_at, """ + _FILE_DAY_SQL + r""" AS file_day,
           max(""" + _SHOWN_SQL + r""") OVER (PARTITION BY source_file, line_no, payload_no) AS shown
    FROM raw.alert_notifications
    WHERE NOT """ + SNAPSHOT_SQL + r"""
), d AS (
    SELECT source_file, line_no, payload_no,
           CASE WHEN received_at IS NOT NULL THEN CAST(timezone('UTC', received_at) AS DATE)
                ELSE greatest(file_day, CAST(timezone('UTC', shown) AS DATE)) END AS day
    FROM n
), cut AS (
    -- The reject the alert flattening writes for a payload whose truncatedAlerts is above 0
    -- (models/sources/alerts/parse.py: "[payload N: ]Alertmanager|Grafana truncated K alert[s] from this
    -- notification ..."); the delivery itself loaded the alerts it did carry, so it has a day in d.
    SELECT DISTINCT source_file, line_no,
           coalesce(TRY_CAST(regexp_extract(error, '^payload (\d+): ', 1) AS INTEGER), 1) AS payload_no,
           CAST(regexp_extract(error, '""" + _TRUNCATED_REJECT_RE + r"""', 1) AS BIGINT) AS dropped
    FROM raw.rejects
    WHERE source_kind = 'alerts' AND regexp_matches(error, '""" + _TRUNCATED_REJECT_RE + r"""')
), cut_days AS (
    SELECT day, count(*)::BIGINT AS truncated_deliveries, max(dropped)::BIGINT AS truncated_alerts
    FROM cut JOIN (SELECT DISTINCT source_file, line_no, payload_no, day FROM d) USING (source_file, line_no, payload_no)
    WHERE day IS NOT NULL
    GROUP BY day
)
SELECT day, count(*)::BIGINT AS notifications,
       count(DISTINCT (source_file, line_no, payload_no))::BIGINT AS deliveries,
       coalesce(any_value(c.truncated_deliveries), 0)::BIGINT AS truncated_deliveries,
       coalesce(any_value(c.truncated_alerts), 0)::BIGINT AS truncated_alerts
FROM d LEFT JOIN cut_days c USING (day)
WHERE day IS NOT NULL
GROUP BY day ORDER BY day
"""


def alert_data_span_sql(data_end: str = "NULL") -> str:
    """SQL: one row ``first_ts``, ``last_ts`` (UTC), the span of the alert data, from the webhook
    deliveries of ``raw.alert_notifications`` (one per JSON value, as in :data:`NOTIFICATION_DAYS_SQL`).

    A delivery was received at its logger's timestamp (``received_at``; a snapshot's time), else no
    earlier than the latest time its payload shows (:data:`_SHOWN_SQL`, meta-alerts never) nor than
    the start of the day its file is named for (:data:`_FILE_DAY_SQL`): a Watchdog re-sent with its
    start of three weeks before, in ``alerts/2026-11-23.jsonl``, dates the span from 2026-11-23, not
    from its start. A file named for day D holds that day's deliveries: it covers day D, so the span
    reaches D+1 00:00 (a day's last hardware incident is judged though no alert came after it), or the
    latest time a delivery shows when later — capped at ``data_end`` (an SQL expression, the data's
    end: :func:`data_end`), which never pulls the span below what a delivery shows. With ``data_end``
    NULL (no other source says how far the data reaches: an alerts-only landing) the span ends at
    the last delivery: nothing past it is known to have been observed. A delivery
    with neither (meta-alerts only, in a file without a date) dates nothing. Both NULL without
    notifications."""
    file_day = "timezone('UTC', CAST(" + _FILE_DAY_SQL + " AS TIMESTAMP))"
    return r"""
WITH d AS (
    SELECT source_file, line_no, payload_no, max(received_at) AS received_at, max(""" + _SHOWN_SQL + r""") AS shown,
           any_value(""" + file_day + r""") AS file_day
    FROM raw.alert_notifications
    GROUP BY source_file, line_no, payload_no
), t AS (
    SELECT coalesce(received_at, greatest(shown, file_day)) AS ts,
           -- greatest/least skip NULLs: without a data's end, no extension (not an uncapped one)
           coalesce(received_at, greatest(shown, file_day,
                                          CASE WHEN e.data_end IS NOT NULL
                                               THEN least(file_day + INTERVAL 1 DAY, e.data_end) END)) AS ts_end
    FROM d, (SELECT CAST(""" + data_end + r""" AS TIMESTAMPTZ) AS data_end) AS e
)
SELECT min(ts) AS first_ts, max(ts_end) AS last_ts FROM t
"""


#: :func:`alert_data_span_sql` without a data's end: first to last delivery.
ALERT_DATA_SPAN_SQL = alert_data_span_sql()


def data_end(con: duckdb.DuckDBPyConnection) -> object | None:
    """The data's end the alert data's span is capped at (:func:`alert_data_span_sql`): the latest of
    the accounting's last moment (:func:`~gpusre.models.accounting_span.accounting_span`), the node
    logs' last line (``raw.record_days``) and the node-state history's last observation — the ends
    the reliability marts read, so no span runs past what any source saw. None without any of them
    (an alerts-only landing: the span ends at the last delivery)."""
    ends = [accounting_span(con)[1]]
    if table_exists(con, "raw.record_days"):
        ends.append(con.sql("SELECT max(last_ts) FROM raw.record_days WHERE source_kind = 'syslog'").fetchall()[0][0])
    if table_exists(con, "raw.slurm_events"):
        ends.append(events_as_of(con))
    ends = [e for e in ends if e is not None]
    return max(ends) if ends else None


def alert_data_span(alerts: pl.DataFrame, data_span: tuple[object, object] | None = None) -> tuple[object, object]:
    """The span of the alert data as two UTC datetimes (None, None without alerts): ``data_span``
    (:func:`alert_data_span_sql`: first delivery to last, or to the end of the last day a file is
    named for) when known, else the first alert start to the latest alert start or end (each alert
    was notified when it started, and a resolved one when it ended)."""
    if data_span is not None and data_span[0] is not None and data_span[1] is not None:
        return pl.select(pl.lit(data_span[0]).cast(_TS).alias("lo"), pl.lit(data_span[1]).cast(_TS).alias("hi")).row(0)
    if alerts.is_empty():
        return None, None
    al = alerts.select(_utc(alerts, "starts_at"), _utc(alerts, "ends_at") if "ends_at" in alerts.columns
                       else pl.lit(None, dtype=_TS).alias("ends_at"))
    return al["starts_at"].min(), al.select(pl.max_horizontal(pl.col("starts_at").max(), pl.col("ends_at").max()))[0, 0]


#: ``marts.alert_data_span``: one row, the span of the alert data coverage was judged in.
ALERT_DATA_SPAN_SCHEMA: dict[str, pl.DataType] = {"first_ts": _TS, "last_ts": _TS, "span_source": pl.String()}


def alert_data_span_mart(alerts: pl.DataFrame, data_span: tuple[object, object] | None = None) -> pl.DataFrame:
    """``marts.alert_data_span`` (:data:`ALERT_DATA_SPAN_SCHEMA`): :func:`alert_data_span` as one row,
    ``span_source`` ``deliveries`` (:func:`alert_data_span_sql`) or ``alert_times`` (without the
    notifications: first alert start to the latest start or end); no row without alert data."""
    lo, hi = alert_data_span(alerts, data_span)
    if lo is None:
        return pl.DataFrame(schema=ALERT_DATA_SPAN_SCHEMA)
    delivered = data_span is not None and data_span[0] is not None and data_span[1] is not None
    return pl.DataFrame({"first_ts": [lo], "last_ts": [hi], "span_source": ["deliveries" if delivered else "alert_times"]},
                        schema=ALERT_DATA_SPAN_SCHEMA)


def alert_daily(alerts: pl.DataFrame, incidents: pl.DataFrame, floods: pl.DataFrame,
                notifications: pl.DataFrame | None = None) -> pl.DataFrame:
    """``marts.alert_daily``: per UTC day (zero-filled from the first to the last day of an alert
    start or a notification) the notifications received that day and the webhook deliveries
    (payloads) they came in — ``notifications`` (:data:`NOTIFICATION_DAY_SCHEMA`, as
    :data:`NOTIFICATION_DAYS_SQL` selects; None: unknown, NULL; NULL too on a day before the first or
    after the last day a notification was received) —, the alerts and incidents that
    started that day, alerts / incidents, and flood episodes that started that day; the deliveries
    Alertmanager truncated that day and the most alerts one of them dropped (``truncated_deliveries``,
    ``truncated_alerts``: the day's alert counts are lower bounds)."""
    if alerts.is_empty():
        return pl.DataFrame(schema=DAILY_SCHEMA)
    al = alerts.select(_utc(alerts, "starts_at").dt.date().alias("day"))
    by_alert = al.group_by("day").agg(pl.len().cast(pl.Int64).alias("alerts"))
    by_inc = incidents.group_by(pl.col("start_ts").dt.date().alias("day")).agg(pl.len().cast(pl.Int64).alias("incidents"))
    by_flood = floods.group_by(pl.col("start_ts").dt.date().alias("day")).agg(pl.len().cast(pl.Int64).alias("flood_episodes")) \
        if not floods.is_empty() else pl.DataFrame(schema={"day": pl.Date, "flood_episodes": pl.Int64})
    received = _conform(notifications, NOTIFICATION_DAY_SCHEMA, ("day", "notifications", "deliveries"))
    lo = min(d for d in (al["day"].min(), received["day"].min()) if d is not None)
    hi = max(d for d in (al["day"].max(), received["day"].max()) if d is not None)
    days = pl.DataFrame({"day": pl.date_range(lo, hi, "1d", eager=True)})
    out = (days.join(received, on="day", how="left").join(by_alert, on="day", how="left")
           .join(by_inc, on="day", how="left").join(by_flood, on="day", how="left")
           .with_columns(pl.col("alerts", "incidents", "flood_episodes").fill_null(0))
           .with_columns(pl.when(pl.col("incidents") > 0).then(pl.col("alerts") / pl.col("incidents"))
                         .alias("compression_ratio")))
    if notifications is not None:
        # A day without a notification is a quiet day (0) only inside the days notifications were received:
        # an alert re-sent with a startsAt weeks old makes rows reach back to it, and nobody received
        # anything on those days — unknown (NULL), not 0. (Snapshots only, no delivery day at all: 0.)
        known = (pl.col("day").is_between(received["day"].min(), received["day"].max()) if received.height
                 else pl.lit(True))
        out = out.with_columns(pl.when(known).then(pl.col(c).fill_null(0)).alias(c)
                               for c in ("notifications", "deliveries", "truncated_deliveries", "truncated_alerts"))
    return out.select([pl.col(c).cast(t) for c, t in DAILY_SCHEMA.items()]).sort("day")


def _in_maintenance(alerts: pl.DataFrame, maintenance: pl.DataFrame | None,
                    node_labels: Sequence[str] = DEFAULT_NODE_LABELS) -> pl.Series:
    """Per alert (``alert_id``, ``node``, ``target``, ``target_label``, ``starts_at``): whether it
    started inside a maintenance period (:data:`MAINTENANCE_SCHEMA`) of one of its nodes (a period
    without a node covers every node, and alerts on no node too)."""
    if maintenance is None or maintenance.is_empty() or alerts.is_empty():
        return pl.Series("_maint", [False] * alerts.height, dtype=pl.Boolean)
    m = _conform(maintenance, MAINTENANCE_SCHEMA, ("start_ts",))
    al = _with_nodes(_conform(alerts, ALERT_SCHEMA, ("alert_id", "starts_at")).with_row_index("_r"), node_labels)
    hit = pl.Series("_hit", [], dtype=pl.UInt32)
    everywhere = m.filter(pl.col("node").is_null())
    if everywhere.height:
        hit = pl.concat([hit, al.select("_r", "starts_at").join(everywhere, how="cross").filter(
            (pl.col("starts_at") >= pl.col("start_ts"))
            & (pl.col("end_ts").is_null() | (pl.col("starts_at") < pl.col("end_ts"))))["_r"]])
    per_node = m.filter(pl.col("node").is_not_null())
    if per_node.height:
        rows = al.select("_r", "starts_at", pl.col("_nodes").alias("node")).explode("node").drop_nulls("node")
        hit = pl.concat([hit, rows.join(per_node, on="node").filter(
            (pl.col("starts_at") >= pl.col("start_ts"))
            & (pl.col("end_ts").is_null() | (pl.col("starts_at") < pl.col("end_ts"))))["_r"]])
    return al["_r"].is_in(hit.unique().implode()).alias("_maint")


def rule_quality(alerts: pl.DataFrame, members: pl.DataFrame, incidents: pl.DataFrame,
                 settings: AlertClusteringSettings | None = None, *, judge_precision: bool = True,
                 maintenance: pl.DataFrame | None = None,
                 node_labels: Sequence[str] = DEFAULT_NODE_LABELS) -> pl.DataFrame:
    """``marts.alert_rule_quality``: one row per alertname (rules in the module docstring).

    ``judge_precision`` False (no hardware incident and no failed job anywhere in the span of the
    alerts: the warehouse has alerts but no logs or accounting for that time) leaves ``precision``
    NULL and never calls a rule noise — an absence of evidence, not evidence of noise.
    ``maintenance`` (:data:`MAINTENANCE_SCHEMA`: planned windows of cluster.yaml and node states in
    maintenance): an incident in which the rule's alert started on a node in maintenance is an
    expected alarm, not evidence of noise; the rule is judged on its other incidents only.
    """
    settings = settings or AlertClusteringSettings()
    if alerts.is_empty():
        return pl.DataFrame(schema=RULE_QUALITY_SCHEMA)
    al = alerts.select("alert_id", "fingerprint", pl.col("alertname").fill_null("(none)"), _utc(alerts, "starts_at"),
                       _utc(alerts, "ends_at"))
    al = al.with_columns(_in_maintenance(alerts, maintenance, node_labels))
    inc = incidents.select("incident_id", pl.col("hw_incident_id").is_not_null().alias("_hw"),
                           (pl.col("n_jobs_killed") > 0).alias("_jobs"))
    al = al.join(members.select("alert_id", "incident_id"), on="alert_id", how="left").join(inc, on="incident_id", how="left")
    al = al.with_columns(pl.col("_hw", "_jobs").fill_null(False), pl.col("starts_at").dt.date().alias("_day"))
    al = al.with_columns((pl.len().over("alertname", "fingerprint", "_day") >= settings.flap_cycles_per_day).alias("_flap"),
                         pl.col("_maint").any().over("alertname", "incident_id").alias("_inc_maint"))
    q = al.group_by("alertname").agg(
        pl.len().cast(pl.Int64).alias("fired"),
        pl.col("fingerprint").n_unique().cast(pl.Int64).alias("fingerprints"),
        pl.col("incident_id").n_unique().cast(pl.Int64).alias("incidents"),
        pl.col("_hw").sum().cast(pl.Int64).alias("with_hw_incident"),
        pl.col("_jobs").sum().cast(pl.Int64).alias("with_job_impact"),
        (pl.col("_hw") | pl.col("_jobs")).mean().alias("precision"),
        (pl.col("ends_at") - pl.col("starts_at")).dt.total_microseconds().median().truediv(1e6).alias("median_duration_s"),
        pl.struct("fingerprint", "_day").filter(pl.col("_flap")).n_unique().cast(pl.Int64).alias("flapping"),
        pl.col("_flap").mean().alias("flap_share"),
        pl.col("incident_id").filter(pl.col("_inc_maint")).n_unique().cast(pl.Int64).alias("in_maintenance"),
    )
    if not judge_precision:
        q = q.with_columns(pl.lit(None, dtype=pl.Float64).alias("precision"))
    verdict = (
        pl.when(pl.col("fired") < settings.min_fired).then(pl.lit("too few to judge"))
        .when(pl.col("flap_share") >= settings.flap_share).then(pl.lit("flapping"))
        .when(pl.col("precision").is_null()).then(pl.lit("too few to judge"))
        .when(pl.col("incidents") - pl.col("in_maintenance") < settings.min_incidents).then(pl.lit("too few to judge"))
        .when(pl.col("precision") < settings.noise_precision).then(pl.lit("noise: consider silencing"))
        .otherwise(pl.lit("useful"))
    )
    return q.with_columns(verdict.alias("verdict")).select(
        [pl.col(c).cast(t) for c, t in RULE_QUALITY_SCHEMA.items()]).sort("fired", "alertname", descending=[True, False])


def alert_coverage(alerts: pl.DataFrame, hw_incidents: pl.DataFrame | None, topology: Topology | None = None,
                   settings: AlertClusteringSettings | None = None,
                   node_labels: Sequence[str] = DEFAULT_NODE_LABELS,
                   data_span: tuple[object, object] | None = None,
                   host_local_labels: Sequence[str] = DEFAULT_HOST_LOCAL_LABELS,
                   repairs: pl.DataFrame | None = None) -> pl.DataFrame:
    """``marts.alert_coverage``: the hardware incidents the alert data can judge, each with whether
    an alert covered it. An incident is judged when it started within the span of the alert data
    (:func:`alert_data_span` of ``data_span``: first to last delivery, both included) or an alert
    matched it (one that began seconds before the first alert is still covered by it). An alert
    covers the incident it is about — the very match :func:`cluster_alerts` gives it (its
    ``hw_incident_id``), levels included: on its nodes in [start − 10 min, end + 30 min, or its repair
    when later] and nearer to
    it than to another incident, targeting its leaf switch, or the fabric / storage server / rack PDU side of a
    wide incident; never a capacity alert. ``n_alerts``: the alerts that are about it.
    ``repairs``: ``marts.incident_repairs`` (``incident_id``, ``repaired_ts``): ``repaired_ts`` and
    ``duration_s`` (start to repair where known, else to the last evidence)."""
    settings = settings or AlertClusteringSettings()
    if hw_incidents is None or hw_incidents.is_empty() or alerts.is_empty():
        return pl.DataFrame(schema=COVERAGE_SCHEMA)
    # The same window as cluster_alerts (open until repaired), so the two marts agree.
    hw = _with_repairs(_conform(hw_incidents, _HW_SCHEMA, ("incident_id", "start_ts", "nodes")), repairs)
    topology = topology or Topology()
    al = _prepare(alerts, topology, load_alert_levels(), node_labels, host_local_labels)
    about = (_match_hw(al, hw, settings, _node_rows(al, topology), topology).unique("_i", keep="first")
             .group_by("hw_incident_id").agg(pl.len().cast(pl.Int64).alias("n_alerts")))
    lo, hi = alert_data_span(al, data_span)
    repaired = (_conform(repairs, {"incident_id": pl.String(), "repaired_ts": _TS}, ("incident_id", "repaired_ts"))
                .drop_nulls("repaired_ts").unique("incident_id") if repairs is not None
                else pl.DataFrame(schema={"incident_id": pl.String, "repaired_ts": _TS}))
    out = (hw.drop("repaired_ts").join(about, left_on="incident_id", right_on="hw_incident_id", how="left")
           .join(repaired, on="incident_id", how="left")
           .with_columns(pl.col("n_alerts").fill_null(0), (pl.col("n_alerts").fill_null(0) > 0).alias("covered"),
                         ((pl.max_horizontal("repaired_ts", "end_ts") - pl.col("start_ts")).dt.total_microseconds()
                          / 1e6).alias("duration_s"))
           .filter(pl.col("covered") | pl.col("start_ts").is_between(lo, hi)))
    return out.select([pl.col(c).cast(t) for c, t in COVERAGE_SCHEMA.items()]).sort("start_ts", "incident_id")


def hw_incidents_without_alert(coverage: pl.DataFrame) -> pl.DataFrame:
    """``marts.hw_incidents_without_alert``: the judged hardware incidents of :func:`alert_coverage`
    that no alert covered — missing alert coverage."""
    return coverage.filter(~pl.col("covered")).select(list(UNCOVERED_SCHEMA))


def _has_evidence(alerts: pl.DataFrame, hw_incidents: pl.DataFrame | None, jobs: pl.DataFrame | None,
                  settings: AlertClusteringSettings, data_span: tuple[object, object] | None = None) -> bool:
    """Whether any hardware incident started, or any job ended in a killed state, within the span
    of the alert data (:func:`alert_data_span`; else precision cannot be judged)."""
    if alerts.is_empty():
        return False
    lo, hi = alert_data_span(alerts, data_span)
    if hw_incidents is not None and not hw_incidents.is_empty():
        hw = _conform(hw_incidents, {"start_ts": _TS}, ("start_ts",))
        if hw.filter(pl.col("start_ts").is_between(lo, hi)).height:
            return True
    if jobs is not None and not jobs.is_empty():
        jb = _conform(jobs, {"state": pl.String(), "end_ts": _TS}, ("state", "end_ts"))
        return jb.filter(pl.col("state").is_in(list(settings.killed_states)) & pl.col("end_ts").is_between(lo, hi)).height > 0
    return False


class AlertMarts(NamedTuple):
    """Every mart of the ``marts/alert_incidents`` asset."""

    incidents: pl.DataFrame
    members: pl.DataFrame
    daily: pl.DataFrame
    floods: pl.DataFrame
    rule_quality: pl.DataFrame
    coverage: pl.DataFrame
    hw_without_alert: pl.DataFrame
    data_span: pl.DataFrame
    monitoring_gaps: pl.DataFrame


#: ``marts.alert_monitoring_gaps``: one row per gap of one alert rule (a meta-alert of kind
#: ``monitoring_gap``: Grafana's ``DatasourceNoData`` / ``DatasourceError``).
MONITORING_GAP_SCHEMA: dict[str, pl.DataType] = {
    "alert_id": pl.Int64(),
    "rule_name": pl.String(),      # the blind rule: label rulename (else the alert name)
    "rule_uid": pl.String(),       # label __alert_rule_uid__
    "gap_kind": pl.String(),       # the meta-alert's name: DatasourceNoData | DatasourceError
    "datasource_uid": pl.String(),
    "start_ts": _TS,
    "end_ts": _TS,                 # its resolve; still firing: the end of the alert data
    "ongoing": pl.Boolean(),       # still firing at the end of the alert data
    "duration_s": pl.Float64(),    # end - start; NULL while ongoing (no duration yet)
    "reason": pl.String(),         # the alert's description (Grafana's annotation Error)
}


def monitoring_gaps(alerts: pl.DataFrame, as_of: object | None = None) -> pl.DataFrame:
    """``marts.alert_monitoring_gaps`` (:data:`MONITORING_GAP_SCHEMA`) from the meta-alerts of kind
    ``monitoring_gap`` in ``alerts`` (:data:`ALERT_SCHEMA`): one row per alert, i.e. per rule and gap —
    the rule its ``rulename`` label names was blind from its start to its end (still firing: until
    ``as_of``, the end of the alert data, and ``ongoing``)."""
    if alerts.is_empty():
        return pl.DataFrame(schema=MONITORING_GAP_SCHEMA)
    label = lambda name: pl.col("labels").str.json_path_match(f"$.{name}")  # noqa: E731
    out = alerts.select(
        "alert_id", pl.coalesce(label("rulename"), pl.col("alertname")).alias("rule_name"),
        label("__alert_rule_uid__").alias("rule_uid"), pl.col("alertname").alias("gap_kind"),
        label("datasource_uid").alias("datasource_uid"), _utc(alerts, "starts_at").alias("start_ts"),
        _utc(alerts, "ends_at").alias("_end"), pl.col("description").alias("reason"))
    return out.with_columns(
        pl.col("_end").is_null().alias("ongoing"),
        pl.coalesce("_end", pl.lit(as_of).cast(_TS)).alias("end_ts"),
        ((pl.col("_end") - pl.col("start_ts")).dt.total_microseconds() / 1e6).alias("duration_s"),
    ).select([pl.col(c).cast(t) for c, t in MONITORING_GAP_SCHEMA.items()]).sort("start_ts", "rule_name", "alert_id")


def alert_marts(
    alerts: pl.DataFrame,
    *,
    topology: Topology | None = None,
    hw_incidents: pl.DataFrame | None = None,
    jobs: pl.DataFrame | None = None,
    attribution: pl.DataFrame | None = None,
    settings: AlertClusteringSettings | None = None,
    flood_settings: FloodSettings | None = None,
    notifications: pl.DataFrame | None = None,
    maintenance: pl.DataFrame | None = None,
    node_labels: Sequence[str] = DEFAULT_NODE_LABELS,
    as_of: object | None = None,
    data_span: tuple[object, object] | None = None,
    host_local_labels: Sequence[str] = DEFAULT_HOST_LOCAL_LABELS,
    repairs: pl.DataFrame | None = None,
) -> AlertMarts:
    """All alert marts from ``core.alerts`` (may be empty), hardware incidents, jobs and attribution;
    ``notifications``: notifications received per UTC day (:data:`NOTIFICATION_DAYS_SQL`, for
    ``alert_daily``); ``maintenance``: maintenance periods (:func:`rule_quality`); ``node_labels``:
    the node mapping's node labels (hostlist targets); ``host_local_labels``: its host-local labels
    (:func:`cluster_alerts`); ``as_of``: the end of the alert data;
    ``data_span``: the span of the webhook deliveries (:func:`alert_data_span_sql`), the span in
    which coverage and precision are judged (None: from the alerts' own times); ``repairs``:
    ``marts.incident_repairs`` (``incident_id``, ``repaired_ts``): a hardware incident is open until
    then (:func:`cluster_alerts`), and how long each uncovered incident lasted (:func:`alert_coverage`)."""
    settings = settings or AlertClusteringSettings()
    alerts = _conform(alerts, ALERT_SCHEMA, _REQUIRED) if alerts.width else pl.DataFrame(schema=ALERT_SCHEMA)
    # Meta-alerts (the always-firing Watchdog, a Grafana rule that could not be evaluated, a delivery
    # test) are about the alert pipeline, not incidents: their deliveries still date the span of the
    # alert data (data_span comes from the notifications); the rules they left blind are a mart.
    kind = meta_alert_kind(pl.col("alertname"), pl.col("labels"))
    gaps = monitoring_gaps(alerts.filter(kind == "monitoring_gap"), as_of)
    alerts = alerts.filter(kind.is_null())
    floods = detect_floods(alerts["starts_at"], flood_settings) if alerts.height else pl.DataFrame(schema=EPISODE_SCHEMA)
    incidents, members = cluster_alerts(alerts, topology, hw_incidents, settings, jobs=jobs, attribution=attribution,
                                        floods=floods, node_labels=node_labels, as_of=as_of,
                                        host_local_labels=host_local_labels, repairs=repairs)
    # An incident the operator marked not a failure (a cable test) is no 'incident without alert'.
    coverage = alert_coverage(alerts, failure_incidents(hw_incidents) if hw_incidents is not None else None,
                              topology, settings, node_labels, data_span, host_local_labels, repairs)
    return AlertMarts(
        incidents=incidents,
        members=members,
        daily=alert_daily(alerts, incidents, floods, notifications),
        floods=alert_floods(alerts, members, floods),
        rule_quality=rule_quality(alerts, members, incidents, settings,
                                  judge_precision=_has_evidence(alerts, hw_incidents, jobs, settings, data_span),
                                  maintenance=maintenance, node_labels=node_labels),
        coverage=coverage,
        hw_without_alert=hw_incidents_without_alert(coverage),
        data_span=alert_data_span_mart(alerts, data_span),
        monitoring_gaps=gaps,
    )
