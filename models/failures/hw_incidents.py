"""Hardware incidents: which node events are failures, and how repeated failure events merge into incidents.

A GPU that falls off the bus logs an Xid 79, a few PCIe AER lines and a "fallen off the bus" line;
a flapping InfiniBand port logs link down/up every few minutes; a leaf switch that dies takes every
node under it off the fabric at once. An SRE counts each of these as *one* incident, so lost work,
taxonomy and suspect-node counts are per incident, not per log line.

Failure events (:func:`failure_events`)
    ``cause_class`` in :data:`FAILURE_CLASSES` (hardware, driver/firmware, system software) and
    ``severity`` at least ``high`` (the catalog's severity, :data:`SEVERITY_RANK`). Xid codes the
    catalog marks "informational unless repeated" (``repeat_threshold`` in ``xid.csv``: 63, 92)
    become failures from the event that takes the count of the same code on the same node/GPU in
    the trailing 24 h above the threshold; those events are *escalated* to ``hardware``/``high``
    (repeated row remaps / ECC pages are a failing HBM). User-application Xids (13, 31, 43),
    sympathetic ones (45, 154) and informational lines are never failures.

Merging (:func:`merge_incidents`), in this order:
    1. *Fabric*: network failure events (component ``network``) of the nodes under one leaf switch
       are chained in time (a gap of at most ``window`` keeps the chain). A chain touching at least
       ``fabric_min_nodes`` distinct nodes, that many out at one moment (a node is out while any part
       it lost is, until that part's recovery: cable faults in turn are not a switch failure, and on an
       8-rail node one rail back ``ACTIVE`` does not bring back another), is one ``network_switch``
       incident (scope ``leaf_switch``). Link failures no leaf took that come in a burst — chained with
       gaps of at most :data:`FABRIC_SIMULTANEITY` (60 s), ``fabric_min_nodes`` nodes out at once — are
       one ``network_switch`` incident of scope ``fabric`` (nodes under several leaves with too few each,
       or with no ``leaf_switches`` configured: lockstep is then the only evidence of a shared cause).
       Leaf and burst incidents of different groups whose onsets (the moment each had
       ``fabric_min_nodes`` nodes out) chain within :data:`FABRIC_SIMULTANEITY` are one ``fabric``
       incident too: no leaf fails in lockstep with another by chance — a spine, a subnet manager or a
       core switch did. A fabric incident names no ``leaf_switch`` (null); its ``nodes`` cover them all.
    2. *Storage*: storage failure events of the whole cluster are chained the same way; a chain
       touching at least ``storage_min_nodes`` nodes (as many out at once) is one ``storage`` incident (scope ``cluster``)
       — a Lustre/NFS server outage, not N client faults.
    3. *Rack and NVLink domain*: with ``racks`` given, failure events of one rack-wide class
       (:data:`RACK_CLASSES`, the ``rack_wide`` column of ``component_classes.csv``: power, thermal) on hosts
       of one rack, chained with gaps of at most :data:`RACK_SIMULTANEITY` (60 s), at least
       ``rack_min_nodes`` (:data:`RACK_MIN_NODES`) out at once (until each logged the sensor deasserted),
       are one incident of scope ``rack``: a PDU trip or a cooling loss, not N parts failing together. With
       ``nvlink_domains`` given (cluster.yaml: a GB200 NVL72 rack, the two racks of an NVL36x2), failures of
       an NVLink-domain class (:data:`NVLINK_DOMAIN_CLASSES`, ``nvlink_domain_wide``: nvlink) on hosts of
       one domain form one incident by the same rule, also of scope ``rack`` (a rack-scale shared part: the
       domain's NVSwitch trays or Fabric Manager). Without ``nvlink_domains`` NVLink faults stay per node:
       on HGX / DGX nodes the NVSwitches are on each node's baseboard, so nodes of one rack losing NVLink
       together share no NVLink part. The component is the class's first such one (``host_power``,
       ``thermal``, ``nvlink``), or the earliest evidence's when that is one of the class's too
       (``nvswitch``: a switch tray's SXid logged before the compute trays' Xids is the cause). A rack or a
       domain may list hosts outside ``nodes`` (NVSwitch trays): their events join its incident. Without
       racks or domains nothing changes.
    4. Everything else chains per (node, component): a gap of at most ``window`` (inclusive) between
       consecutive events of the same node and component continues the incident, a longer gap
       starts a new one; an informational Xid escalated by its repeat threshold chains with the
       escalated repeats of its GPU across the repeat window (a failing HBM is one fault); a part that
       came back by itself (a recovery line about that part: port ``ACTIVE``, sensor deasserted) and failed
       again within a day, with no repair of its node in between, is one flapping fault (the part as
       :func:`~gpusre.models.reliability.repair_times.same_part` tells it: rail B's flap between two
       failures of rail A chains nothing; a line naming no part answers for every part of its node). A
       health-check episode attaches to the fault it follows and takes no part in the co-occurrence
       signatures (a check failing for hours would bridge faults far apart); a signature's cause
       names the incident only when logged before its effect, or at most the row's
       ``cause_after_effect_s`` after it (a minute by default; 15 min for a DIMM error EDAC decodes
       at the boot after the machine-check panic it caused). GPUs are not part of the key: PCIe AER / pciehp lines carry the port's
       address, not the GPU's, and several GPUs of one node failing together are one node event
       for the SRE; the incident lists every GPU its evidence names (``gpus``), each as its node and PCI address
       (:func:`gpu_id`: ``gb-r1-c03:0009:01:00.0``): every GB200 tray, and every HGX node of one model, puts its
       GPUs at the same addresses, so an address alone names no GPU.
    4r. *Recovery action* (Xid 154, :func:`recovery_action_lines`): the driver's "GPU recovery action changed
       ... to 0x2 (Node Reboot Required)" line says what the GPU needs now. It is no failure (sympathetic: the
       Xid before it is the fault), but it joins the incident of its GPU (same node and address, logged from
       the incident's first evidence to ``window`` after its last) as a member, and the incident's ``action``
       is the strongest (:data:`ACTION_STRENGTH`) of its evidence's and its recovery-action lines'. A recovery
       action on a GPU with no failure evidence stays no incident (the README: sympathetic lines never are).
    5. *Operator incidents* (``incidents.csv``) take precedence: every event incident that overlaps
       one in time and shares a node (an operator row without nodes covers all nodes) is folded
       into it; the operator's component and root cause label the result (``label_source`` =
       ``operator``, ``operator_id``). Its ``scope`` is the widest of the evidence it folds
       (:data:`SCOPE_ORDER`: ``node``, ``rack``, ``leaf_switch``, ``fabric``, ``cluster``): labelling an
       incident says who explained it, not how far it spread, so per-node analytics keep counting it. Operator incidents with no matching events are
       kept (``n_events`` = 0; not the "not a failure" rows of rule 6): a human saw an outage the logs do not show, and attribution should
       still see it; their scope is ``node`` for one named node, ``cluster`` for none (the whole
       cluster), ``nodes`` for several (how far it spread is not known).
    0. *Planned maintenance* (``planned``, :func:`planned_maintenance`): failure evidence a node logs while
       it is in planned maintenance — the firmware flash that drops a link or loses a GPU on a node drained
       for it — is the maintenance's work, not a fault (:func:`planned_evidence`): it makes no incident, so
       no MTBF failure, repair time or to-do. The lines stay in ``core.node_events``. A fault logged before the
       maintenance began is a failure: its evidence inside the maintenance, chained to it (same node and
       component, gaps of at most ``window``), stays with it. A fault still logged after the maintenance
       ended is a failure from its first line after it. A drain on a node still running jobs begins the
       maintenance when they end (a fault logged under the running job is the job's), and a hardware drain
       that replaces or follows a maintenance drain ends it and claims the lines up to 30 min before it (a
       fault found during the maintenance, keeping the node down for it).
    6. *Not a failure*: an operator row whose component is one of
       :data:`~gpusre.models.vocabulary.NOT_A_FAILURE_WORDS` (``none``, ``false_positive``, ``not_a_failure``)
       marks each event incident it overlaps by the same rule (same nodes — none = all — and overlapping
       time) as not a failure: its component, component class and cause class become
       :data:`~gpusre.models.vocabulary.NOT_A_FAILURE` (the network team's cable test took a link down: the
       logs were right, the fleet did not fail). It folds nothing together: each marked incident keeps its
       own row, nodes, scope and times (two flaps of two nodes during one cable swap stay two). Each row
       stays (``label_source`` ``operator``, the operator's id, root cause and notes: the audit trail of the
       decision); every failure count leaves it out
       (:func:`~gpusre.models.vocabulary.is_failure_incident`). Such a row overlapping no event incident makes
       no incident: there is nothing to mark, and a human's "nothing failed" is no outage.

7. *Node-state outages* (:func:`node_state_incidents`, after merging): a hardware outage nothing logged — a
       tray that lost power logs no line, slurmctld marks it ``DOWN*`` "Not responding" and the operator drains
       it "lost power (PDB)" — is one incident of its node (``label_source`` ``node_state``, ``n_events`` 0):
       an outage chain (:func:`~gpusre.models.reliability.repair_times.chain_faults`) whose part-naming state
       is classed ``hardware`` (``drain_reasons.csv``; a generic reason — ``Not responding``, none, ``Kill task
       failed`` —, a reboot request or planned work names no part), not in planned maintenance, and that no
       incident's window reaches (the linking rule of ``marts.incident_repairs``, whatever the class its drain
       names: evidence logged up to 30 min before a drain is the fault the drain is for). With ``racks``, trays of
       one rack losing power (or cooling) together without logs — chains of one rack-wide class starting within
       :data:`NODE_STATE_SIMULTANEITY` of each other, at least ``rack_min_nodes`` — are one incident of scope
       ``rack``, as rule 3 makes of logged lines.

Incident ids are stable across reruns: ``inc-`` + the first 12 hex digits of SHA-1 over component,
first timestamp (ISO-8601 UTC) and first node. A fabric incident that joins leaf incidents keeps the id
the earliest leaf's had (same component, first evidence and node), and so does a rack incident that joins
node incidents named by its component (a PSU's ``host_power``, a switch tray's ``nvswitch``). An operator incident
that folds event incidents keeps the id of the earliest of them (the id the night before the label printed stays
valid, and editing the label's text or start keeps it); only one with no evidence hashes ``operator`` and its id.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import numpy as np
import polars as pl
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gpusre.models.component_classes import nvlink_domain_components, rack_wide_components
from gpusre.models.vocabulary import HEALTH_CHECK_KIND, NOT_A_FAILURE, class_of, is_failure_incident
from gpusre.models.logs.event_catalog import (
    ACTION_STRENGTH,
    CAUSE_CLASSES,
    SEVERITY_RANK,
    action_strength,
    load_log_patterns,
    load_xid_catalog,
)
from gpusre.models.failures.fault_signatures import node_signatures, wide_signature
from gpusre.models.failures.health_checks import check_name
from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.span_islands import span_islands
from gpusre.models.reliability.node_availability import DOWN_FROM, MaintenanceSpan, down_segments, with_down_from
from gpusre.models.reliability.repair_times import (LINK_BEFORE, PART_COLUMNS, chain_faults, incident_outage_links,
                                                    join_asof_same_part, recovery_lines, with_parts)

__all__ = [
    "ACTION_STRENGTH",
    "EVENT_SCHEMA",
    "GPU_ID_SEPARATOR",
    "FABRIC_COMPONENT",
    "FAILURE_CLASSES",
    "INCIDENT_SCHEMA",
    "MEMBERSHIP_SCHEMA",
    "OPERATOR_NODES_SCOPE",
    "OPERATOR_SCHEMA",
    "PLANNED_SCHEMA",
    "FABRIC_SIMULTANEITY",
    "NVLINK_DOMAIN_CLASSES",
    "RACK_CLASSES",
    "RACK_MIN_NODES",
    "RACK_SIMULTANEITY",
    "SCOPE_ORDER",
    "action_strength",
    "failure_events",
    "gpu_id",
    "gpu_id_label",
    "incident_id",
    "merge_incidents",
    "NODE_STATE_ACTION",
    "NODE_STATE_LABEL",
    "node_state_incidents",
    "not_a_failure_events",
    "operator_incident_id",
    "as_planned",
    "periods_of",
    "planned_evidence",
    "planned_maintenance",
    "recovery_action_codes",
    "recovery_action_lines",
    "severity_rank",
    "split_gpu_id",
    "shared_part_events",
]

#: Cause classes whose high-severity events are infrastructure failures (``system_software`` covers
#: file systems, kernel panics and Slurm daemons: infrastructure, though neither GPU nor driver).
FAILURE_CLASSES: tuple[str, ...] = ("hardware", "driver_firmware", "system_software")
assert set(FAILURE_CLASSES) <= CAUSE_CLASSES
#: Incident component of a leaf-switch-wide or fabric-wide link loss (not a catalog component: no single log line
#: names the switch, the pattern across nodes does).
FABRIC_COMPONENT = "network_switch"
#: Trailing window over which repeats of an informational-unless-repeated Xid are counted
#: (``xid.csv`` documents ``repeat_threshold`` as "escalate above this count in 24 h").
REPEAT_WINDOW = timedelta(hours=24)
#: NHC repeats a failing check on every run (often every 300 s) until the condition clears: failures
#: of one check on one node with gaps up to this are one firing episode.
EPISODE_GAP = timedelta(minutes=30)
#: A firing episode with no other evidence is an incident only when its check failed on this many runs.
MIN_EPISODE_RUNS = 2
#: How far past its start a span may extend a multi-node chain (see :func:`_wide_edges`).
WIDE_SPAN_CAP = timedelta(hours=2)
#: Multi-node incidents of one leaf switch (or of the file systems) starting within this of the
#: previous one are one failure in waves (see :func:`_wide_edges`).
WIDE_REJOIN = timedelta(hours=2)
#: Leaf-switch outages of different leaves whose onsets (the moment each had ``fabric_min_nodes`` nodes out)
#: chain with gaps of at most this are one upstream fabric failure (see :func:`_fabric_edges`): a spine or a
#: subnet manager takes its leaves down within seconds (the kernel logs each port's loss as the link
#: training times out), while two independent leaf failures are minutes or hours apart. A minute leaves
#: room for syslog clocks a few seconds off and for links that time out one after another.
FABRIC_SIMULTANEITY = timedelta(seconds=60)
#: Failure events of a rack-wide class on nodes of one rack (or of an NVLink-domain class on hosts of one NVLink
#: domain) chained with gaps of at most this form one incident (see :func:`_rack_edges`): a PDU trip, a cooling
#: loss or an NVSwitch tray failure hits every tray within seconds; parts failing on their own are hours apart.
RACK_SIMULTANEITY = timedelta(seconds=60)
#: Nodes of one rack out at once that make a rack incident (as the catalog's leaf-switch rule: 3).
RACK_MIN_NODES = 3
#: Component classes whose rack-wide bursts are one rack incident -> the components that may name it, the
#: default first (``component_classes.csv`` ``rack_wide``): {"power": ("host_power",), "thermal": ("thermal",)}.
RACK_CLASSES: dict[str, tuple[str, ...]] = rack_wide_components()
#: Component classes whose bursts across one cluster.yaml ``nvlink_domains`` domain are one incident -> the
#: components that may name it (``component_classes.csv`` ``nvlink_domain_wide``): {"nvlink": ("nvlink", "nvswitch")}.
NVLINK_DOMAIN_CLASSES: dict[str, tuple[str, ...]] = nvlink_domain_components()
#: A part that came back by itself (a port back ``ACTIVE``, a sensor deasserted) and failed again
#: within this long, with no repair of its node in between, is one flapping fault (see :func:`_flap_edges`).
FLAP_WINDOW = timedelta(hours=24)

#: Between a GPU's node and its PCI address in a GPU's identity (:func:`gpu_id`). A host name holds no colon
#: (RFC 1123), so the node is the text before the first one and the address the rest.
GPU_ID_SEPARATOR = ":"
#: A PCI address as :func:`~gpusre.models.logs.event_catalog.normalize_pci` writes it (``0009:01:00.0``), at the end
#: of a GPU identity; what precedes it (and the separator) is the node.
_GPU_ID_RE = re.compile(r"^(?:(?P<node>[^:]+):)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])$")
# ACTION_STRENGTH (the ranking of catalog actions, rule 4r) and action_strength are defined beside ACTIONS in
# event_catalog and re-exported here.
#: The catalog action of an Xid whose own text names the recovery action (``xid.csv``: Xid 154).
_TEXT_NAMES_ACTION = "XID_154"

#: ``core.node_events`` columns the analytics read.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "event_id": pl.Int64(),
    "ts": pl.Datetime("us", "UTC"),
    "node": pl.String(),
    "kind": pl.String(),
    "code": pl.Int32(),
    "gpu_pci": pl.String(),
    "component": pl.String(),
    "cause_class": pl.String(),
    "severity": pl.String(),
    "action": pl.String(),
}
#: Planned-maintenance periods (:func:`planned_maintenance`): one row per node and period; ``node`` null =
#: every node (a cluster.yaml window naming none, without a fleet list to expand it).
PLANNED_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    # True: the node was out of service for the maintenance (or no node states tell): what it logs then is the
    # maintenance's work (:func:`planned_evidence`). False: a cluster.yaml window's whole span on a node node
    # states show in service in part of it: only a job the system ended in it is the maintenance's (rule 2p).
    "claims_evidence": pl.Boolean(),
    # The start of a hardware drain of the node that ends the period or follows it within LINK_BEFORE: the
    # failure lines from LINK_BEFORE before it are that fault's, not the maintenance's. Null: none.
    "fault_drain_ts": pl.Datetime("us", "UTC"),
}
#: Output of :func:`merge_incidents` (first frame).
INCIDENT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "component": pl.String(),
    "component_class": pl.String(),
    "cause_class": pl.String(),
    "severity": pl.String(),
    "action": pl.String(),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "nodes": pl.List(pl.String()),
    "gpus": pl.List(pl.String()),
    "n_events": pl.Int64(),
    "first_event_id": pl.Int64(),
    "scope": pl.String(),
    "leaf_switch": pl.String(),
    "label_source": pl.String(),
    "root_cause": pl.String(),
    "operator_id": pl.String(),
    "notes": pl.String(),
    "evidence_kinds": pl.List(pl.String()),
    "n_health_check_episodes": pl.Int64(),
    "single_symptom": pl.Boolean(),
}
#: Output of :func:`merge_incidents` (second frame): which incident each failure event belongs to, and each
#: recovery-action line (Xid 154) its GPU's incident took (rule 4r).
MEMBERSHIP_SCHEMA: dict[str, pl.DataType] = {"event_id": pl.Int64(), "incident_id": pl.String()}
#: Operator incident log (``incidents.csv``) as :func:`merge_incidents` expects it; ``nodes`` is a
#: Slurm hostlist (empty/null = the whole cluster), ``start``/``end`` are UTC datetimes.
OPERATOR_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "start": pl.Datetime("us", "UTC"),
    "end": pl.Datetime("us", "UTC"),
    "component": pl.String(),
    "root_cause": pl.String(),
    "nodes": pl.String(),
    "notes": pl.String(),
}

_UTC = pl.Datetime("us", "UTC")
_MIN_SEVERITY = "high"
_UNKNOWN_RANK = len(SEVERITY_RANK)  # a severity the catalog does not know sorts below "info"


def severity_rank(expr: pl.Expr) -> pl.Expr:
    """Catalog severity rank of ``expr`` (0 = critical); unknown or null severities rank last."""
    return expr.replace_strict(SEVERITY_RANK, default=_UNKNOWN_RANK, return_dtype=pl.Int32)


def gpu_id(node: pl.Expr, pci: pl.Expr) -> pl.Expr:
    """A GPU's identity, ``<node>:<PCI address>`` (``gb-r1-c03:0009:01:00.0``): the one definition every count and
    list of GPUs uses (``marts.hw_incidents.gpus``). Null without an address; the address alone for a line that
    names no host."""
    return (pl.when(pci.is_null()).then(pl.lit(None, pl.String))
            .when(node.is_null() | (node == "")).then(pci)
            .otherwise(pl.concat_str(node, pl.lit(GPU_ID_SEPARATOR), pci)))


def split_gpu_id(identity: str) -> tuple[str | None, str]:
    """``(node, PCI address)`` of a :func:`gpu_id` (node None for an address alone).

    >>> split_gpu_id("gb-r1-c03:0009:01:00.0"), split_gpu_id("0000:43:00.0")
    (('gb-r1-c03', '0009:01:00.0'), (None, '0000:43:00.0'))
    """
    m = _GPU_ID_RE.match(identity)
    if m is None:
        node, sep, rest = identity.partition(GPU_ID_SEPARATOR)
        return (node, rest) if sep else (None, identity)
    return m.group("node"), m.group("pci")


def gpu_id_label(identity: str) -> str:
    """How reports write a GPU: ``gb-r1-c03 0009:01:00.0`` (node, space, address)."""
    node, pci = split_gpu_id(identity)
    return f"{node} {pci}" if node else pci


@lru_cache(maxsize=1)
def recovery_action_codes() -> tuple[int, ...]:
    """Xid codes whose line names the GPU's recovery action in its text (``xid.csv`` action ``XID_154``: Xid 154)."""
    xid = load_xid_catalog()
    return tuple(sorted(xid.filter(pl.col("action") == _TEXT_NAMES_ACTION)["code"].cast(pl.Int64).to_list()))


def recovery_action_lines(events: pl.DataFrame) -> pl.DataFrame:
    """The recovery-action lines among ``events`` (:data:`EVENT_SCHEMA`): Xid lines of
    :func:`recovery_action_codes` whose text named an action to take (the catalog pattern's action, not
    ``IGNORE`` — "changed ... to 0x0 (None)" says the GPU needs nothing any more — nor the catalog's
    placeholder ``XID_154`` of a text no pattern reads). Columns ``event_id``, ``ts``, ``node``, ``_gpu``
    (:func:`gpu_id`), ``action``."""
    _, xid_kinds = _repeat_thresholds()
    ev = _conform(events)
    return (ev.filter(pl.col("kind").is_in(xid_kinds) & pl.col("code").is_in(recovery_action_codes())
                      & pl.col("gpu_pci").is_not_null()
                      & ~pl.col("action").is_in(["IGNORE", _TEXT_NAMES_ACTION]) & pl.col("action").is_not_null())
            .select("event_id", "ts", "node", gpu_id(pl.col("node"), pl.col("gpu_pci")).alias("_gpu"), "action"))


def _short_hash(*parts: str) -> str:
    """``inc-`` + 12 hex digits of SHA-1 over ``parts`` joined by ``|`` (stable across runs and versions)."""
    return "inc-" + hashlib.sha1("|".join(parts).encode("utf-8")).hexdigest()[:12]


def incident_id(component: str, first_ts: datetime, first_node: str | None) -> str:
    """Stable id of an event incident: its component, first timestamp (UTC, microseconds) and first node
    (none for events whose log named no host, e.g. a Fabric Manager log of an NVSwitch tray).

    >>> from datetime import timezone
    >>> incident_id("pcie_bus", datetime(2025, 1, 15, 3, 4, 5, tzinfo=timezone.utc), "gpu001")
    'inc-a9ce05ee24b6'
    """
    utc = first_ts.astimezone(timezone.utc) if first_ts.tzinfo else first_ts
    return _short_hash(component, f"{utc:%Y-%m-%dT%H:%M:%S.%f}Z", first_node or "")


def operator_incident_id(operator_id: str) -> str:
    """Stable id of an operator incident with no log evidence (from its id in ``incidents.csv``); one that
    folds event incidents keeps the earliest one's :func:`incident_id`."""
    return _short_hash("operator", operator_id)


#: rsyslog's repeated-message line and its count (at most this many copies are counted).
_REPEATED = r"^message repeated (\d+) times: \["
_MAX_REPEATED = 10_000


@lru_cache(maxsize=1)
def _repeat_thresholds() -> tuple[pl.DataFrame, tuple[str, ...]]:
    """(code -> repeat_threshold) for Xids informational unless repeated, and the Xid event kinds."""
    thresholds = (
        load_xid_catalog()
        .filter(pl.col("repeat_threshold").is_not_null())
        .select("code", pl.col("repeat_threshold").cast(pl.Int64))
    )
    xid_kinds = tuple(sorted(set(load_log_patterns().filter(pl.col("catalog") == "xid")["kind"].to_list())))
    return thresholds, xid_kinds


def _conform(events: pl.DataFrame) -> pl.DataFrame:
    """The event columns the analytics use, typed; other columns (message, template_id…) are dropped."""
    missing = [c for c in EVENT_SCHEMA if c not in events.columns]
    if missing:
        raise ValueError(f"node events lack columns {missing}")
    return events.select(pl.col(c).cast(t) for c, t in EVENT_SCHEMA.items())


def failure_events(
    events: pl.DataFrame,
    *,
    classes: Sequence[str] = FAILURE_CLASSES,
    min_severity: str = _MIN_SEVERITY,
    repeat_window: timedelta = REPEAT_WINDOW,
) -> pl.DataFrame:
    """The failure-relevant subset of ``events`` (``core.node_events`` columns of :data:`EVENT_SCHEMA`).

    Keeps events with ``cause_class`` in ``classes`` and severity at least ``min_severity``, plus
    repeated informational Xids above their catalog ``repeat_threshold`` within ``repeat_window``
    (same node, GPU and code), which are returned with ``cause_class='hardware'``,
    ``severity='high'``. Adds ``escalated`` (Boolean). Sorted by ``ts``, ``event_id``.
    """
    ev = _conform(events)
    thresholds, xid_kinds = _repeat_thresholds()
    keys = ["node", "gpu_pci", "code"]
    candidates = ev.filter(pl.col("kind").is_in(xid_kinds)).join(thresholds, on="code", how="inner")
    # rsyslog's "message repeated 9 times: [ NVRM: Xid ... ]" (Ubuntu's default $RepeatedMsgReduction)
    # stands for that many lines: counted as many times.
    times = pl.lit(1, pl.Int64)
    if "message" in events.columns:
        counts = (events.join(candidates.select("event_id"), on="event_id", how="semi")
                  .select("event_id", pl.col("message").cast(pl.String).str.extract(_REPEATED, 1)
                          .cast(pl.Int64, strict=False).alias("_times")))
        candidates = candidates.join(counts, on="event_id", how="left")
        times = pl.col("_times").fill_null(1).clip(1, _MAX_REPEATED)
    repeats = (
        candidates
        .with_columns(pl.int_ranges(0, times).alias("_copy"))
        .explode("_copy")
        .sort([*keys, "ts", "event_id", "_copy"], nulls_last=True)
        .with_columns(
            # Events of the same node/GPU/code in (ts - window, ts]: position minus the first
            # position inside the window, on the group's sorted timestamps.
            (
                pl.int_range(pl.len()).over(keys)
                + 1
                - pl.col("ts").search_sorted(pl.col("ts") - repeat_window, side="right").over(keys).cast(pl.Int64)
            ).alias("_repeats")
        )
        .filter(pl.col("_repeats") > pl.col("repeat_threshold"))
        .select("event_id").unique(maintain_order=True)
        .with_columns(pl.lit(True).alias("escalated"))
    )
    relevant = pl.col("cause_class").is_in(list(classes)) & (
        severity_rank(pl.col("severity")) <= SEVERITY_RANK[min_severity]
    )
    # Only the relevant events and the escalated ones go on (a third of a year's million events): an
    # event neither escalated nor relevant stays irrelevant, as its class and severity do not change.
    ev = ev.filter(relevant | pl.col("event_id").is_in(repeats.get_column("event_id").implode()))
    ev = ev.join(repeats, on="event_id", how="left").with_columns(pl.col("escalated").fill_null(False))
    ev = ev.with_columns(
        pl.when("escalated").then(pl.lit("hardware")).otherwise(pl.col("cause_class")).alias("cause_class"),
        pl.when("escalated").then(pl.lit(_MIN_SEVERITY)).otherwise(pl.col("severity")).alias("severity"),
    )
    return ev.filter(relevant).sort("ts", "event_id")


def _group_of(groups: Mapping[str, Sequence[str] | str] | None, column: str) -> pl.DataFrame:
    """node -> group name (``column``), from group -> nodes (a list of names or a Slurm hostlist string),
    as ``cluster.yaml`` ``leaf_switches`` and ``racks`` give them."""
    rows: dict[str, str] = {}
    for name, nodes in (groups or {}).items():
        names = expand_hostlist(nodes) if isinstance(nodes, str) else list(nodes)
        for node in names:
            rows.setdefault(node, name)  # a node listed under two groups keeps the first
    return pl.DataFrame({"node": list(rows), column: list(rows.values())}, schema={"node": pl.String, column: pl.String})


def _leaf_of(topology: Mapping[str, Sequence[str] | str] | None) -> pl.DataFrame:
    """node -> leaf switch (``_leaf``), from leaf -> nodes."""
    return _group_of(topology, "_leaf")


def _matches(name: str) -> pl.Expr:
    """Evidence whose component or component class is ``name`` (a catalog side)."""
    return (pl.col("component") == name) | (pl.col("component_class") == name)


def _evidence(ev: pl.DataFrame, messages: pl.DataFrame | None, episode_gap: timedelta) -> pl.DataFrame:
    """Evidence items: one per failure log event, one per health-check firing episode.

    A firing episode is the run of failures of one check (its name, else its component) on one node
    with gaps of at most ``episode_gap``: NHC repeats a failing check on every run until the
    condition clears, and an SRE counts the episode once.
    """
    ev = with_parts(ev)
    hc = ev.filter(pl.col("kind") == HEALTH_CHECK_KIND)
    logs = ev.filter(pl.col("kind") != HEALTH_CHECK_KIND).select(
        "node", pl.col("ts").alias("start"), pl.col("ts").alias("end"), "kind", "code", "component",
        "cause_class", "severity", "action",
        pl.concat_list(gpu_id(pl.col("node"), pl.col("gpu_pci"))).list.drop_nulls().alias("gpus"),
        # the part the line names (a NIC's PCI address and port, a GPU's): recoveries count per part
        *PART_COLUMNS,
        pl.lit(1, pl.Int64).alias("n_events"), pl.concat_list(pl.col("event_id")).alias("event_ids"),
        pl.lit(False).alias("is_hc"),
        # an informational Xid repeated past its threshold: keyed by its GPU to chain the repeats
        pl.when(pl.col("escalated")).then(pl.concat_str(pl.col("code").cast(pl.String), pl.col("gpu_pci"),
                                                        separator="|", ignore_nulls=True)).alias("_repeat_key"))
    if messages is not None and hc.height:
        hc = hc.join(messages, on="event_id", how="left")
        check = check_name(pl.col("message"))
    else:
        check = pl.lit("unknown")
    hc = hc.with_columns(pl.when(check == "unknown").then(pl.col("component")).otherwise(check).alias("_check"))
    keys = ["node", "_check"]
    gap = pl.col("ts") - pl.col("ts").shift(1).over(keys)
    episodes = (
        hc.sort(*keys, "ts", "event_id", nulls_last=True)
        .with_columns((gap.is_null() | (gap > episode_gap)).cast(pl.Int64).cum_sum().over(keys).alias("_ep"))
        .group_by(*keys, "_ep")
        .agg(pl.col("ts").min().alias("start"), pl.col("ts").max().alias("end"), pl.col("kind").first(),
             pl.col("code").first(), pl.col("component").first(), pl.col("cause_class").first(),
             pl.col("severity").first(), pl.col("action").first(),
             gpu_id(pl.col("node"), pl.col("gpu_pci")).drop_nulls().unique().sort().alias("gpus"),
             pl.len().cast(pl.Int64).alias("n_events"), pl.col("event_id").sort().alias("event_ids"))
        .with_columns(pl.lit(True).alias("is_hc"), pl.lit(None, pl.String).alias("_repeat_key"),
                      # a check run names no part it failed on: it answers for every part of its node
                      *(pl.lit(None, pl.String).alias(c) for c in PART_COLUMNS))
        .select(logs.columns)
    )
    items = pl.concat([logs, episodes], how="vertical_relaxed")
    return (items.with_columns(class_of(pl.col("component")).alias("component_class"),
                               severity_rank(pl.col("severity")).alias("_rank"),
                               pl.col("node").fill_null("").alias("_nkey"))
            .sort("start", pl.col("event_ids").list.first())
            .with_row_index("_item"))


def _first_recovery(frame: pl.DataFrame, at: str, recoveries: pl.DataFrame, node: str,
                    by_class: bool = False) -> pl.DataFrame:
    """``frame`` with ``_up``: the first recovery line (``recoveries``: ``node``, ``component_class``,
    ``_up``, the :data:`~gpusre.models.reliability.repair_times.PART_COLUMNS`) its row's node (column
    ``node``) logged strictly after ``at`` about the row's part — of the row's ``component_class`` when
    ``by_class`` — or null. The one question the switch simultaneity and the flap chain ask of the
    recovery lines.

    The part is :func:`~gpusre.models.reliability.repair_times.same_part`'s: on an 8-rail node one NIC back
    ``ACTIVE`` is no recovery of another NIC still down. A row or a line naming no part (a site whose link
    lines name no port, a health-check episode) matches every part of its node, as before parts were read.
    """
    by = [node, "component_class"] if by_class else [node]
    rec = with_parts(recoveries).select(pl.col("node").alias(node), *(["component_class"] if by_class else []),
                                        "_up", *PART_COLUMNS)
    return join_asof_same_part(with_parts(frame), rec, left_on=at, right_on="_up", by=by, strategy="forward",
                               allow_exact_matches=False)


def _simultaneous(cand: pl.DataFrame, key: str, recoveries: pl.DataFrame | None, need: int) -> pl.DataFrame:
    """(``key``, ``_isl``, ``_onset``) islands in which at least ``need`` nodes were out at one moment, and
    the first such moment (``_onset``: when the outage became multi-node). A node is out while any of its
    downed parts is (:data:`~gpusre.models.reliability.repair_times.PART_COLUMNS`: an 8-rail node with one
    rail back ``ACTIVE`` and another still down is out); a part is out from its first evidence in the
    island until the first recovery of that part (:func:`_first_recovery`; ``recoveries``: ``node``,
    ``_up``, the part columns) logged after its last, or to the island's end when it logged none: cable
    faults in turn on one leaf, each link back ``ACTIVE`` before the next went down, are not a switch
    failure. Evidence naming no part (a portless link line, a health check) is one part answered by any
    recovery of its node: without part columns a node is out until the first recovery after its last
    evidence."""
    parts = [*PART_COLUMNS]
    cand = with_parts(cand)
    down = (cand.group_by(key, "_isl", "_nkey", *parts)
            .agg(pl.col("start").min().alias("_from"), pl.col("end").max().alias("_last")))
    if recoveries is not None and not recoveries.is_empty():
        down = _first_recovery(down, "_last", recoveries, "_nkey")
    else:
        down = down.with_columns(pl.lit(None, _UTC).alias("_up"))
    marks = pl.concat([down.select(key, "_isl", "_nkey", pl.col("_from").alias("_t"), pl.lit(1, pl.Int64).alias("_d")),
                       down.drop_nulls("_up").select(key, "_isl", "_nkey", pl.col("_up").alias("_t"),
                                                     pl.lit(-1, pl.Int64).alias("_d"))])
    # Parts out per node, then the moments the node goes out (0 -> some) and comes back (some -> 0): the
    # count below is of nodes, however many rails each lost.
    node = ["_nkey", key, "_isl"]
    out = pl.col("_parts") > 0
    nodes = (marks.sort(key, "_isl", "_nkey", "_t", "_d")
             .with_columns(pl.col("_d").cum_sum().over(node).alias("_parts"))
             .with_columns((out.cast(pl.Int64) - out.shift(1).over(node).fill_null(False).cast(pl.Int64)).alias("_d"))
             .filter(pl.col("_d") != 0))
    # a recovery at the very moment another node goes down is not an overlap: -1 sorts first
    peak = (nodes.sort(key, "_isl", "_t", "_d").with_columns(pl.col("_d").cum_sum().over(key, "_isl").alias("_n"))
            .group_by(key, "_isl").agg(pl.col("_n").max(), pl.col("_t").filter(pl.col("_n") >= need).min().alias("_onset")))
    return peak.filter(pl.col("_n") >= need).select(key, "_isl", "_onset")


#: Columns of the multi-node evidence frames (:func:`_wide_islands` and the rules built on it).
_WIDE_SCHEMA: dict[str, pl.DataType] = {"_item": pl.UInt32(), "_root": pl.UInt32(), "_scope": pl.String(),
                                        "_leaf": pl.String(), "_wcomp": pl.String(), "_gkey": pl.String(),
                                        "_onset": _UTC}


def _wide_islands(cand: pl.DataFrame, key: str, window: timedelta, need: int, recoveries: pl.DataFrame | None,
                  scope: str, component: str, leaf: pl.Expr) -> pl.DataFrame:
    """:data:`_WIDE_SCHEMA` rows for the candidate evidence ``cand`` (one wide rule's side, with its group
    in column ``key``) in multi-node islands: chained per ``key`` with gaps of at most ``window``, at least
    ``need`` nodes out at one moment (:func:`_simultaneous`; ``recoveries`` of the rule's class).

    Spans enter the chain capped at ``WIDE_SPAN_CAP`` after their start: a health check failing for days
    on one node must not bridge unrelated faults elsewhere, but a second wave within ``WIDE_REJOIN``
    (links down again 30-60 min later, a flapping switch) stays the same incident. ``_onset`` is the
    incident's first multi-node moment; ``_gkey`` the group (leaf, rack) it belongs to.
    """
    if cand.is_empty():
        return pl.DataFrame(schema=_WIDE_SCHEMA)
    cand = (cand.with_columns(pl.min_horizontal("end", pl.col("start") + WIDE_SPAN_CAP).alias("_cap"))
            .sort(key, "start", "_item").with_columns(span_islands([key], window, end="_cap").alias("_isl")))
    wide = cand.join(_simultaneous(cand, key, recoveries, need), on=[key, "_isl"], how="inner")
    # A second wave: multi-node islands of one key starting within WIDE_REJOIN of the previous one are
    # the same failure — a switch or file server that came back briefly and failed again, whether or not
    # every link logged ACTIVE in between: a flapping switch is one fault until it is fixed, as a
    # flapping port of one node is (_flap_edges) and as the alert side counts a rule that fires again
    # within its flap window. Waves further apart are separate failures.
    isl = wide.group_by(key, "_isl").agg(pl.col("start").min().alias("_s")).sort(key, "_s")
    waves = isl.with_columns((((pl.col("_s") - pl.col("_s").shift(1).over(key)) > WIDE_REJOIN).fill_null(True))
                             .cast(pl.Int64).cum_sum().over(key).alias("_wave"))
    wide = wide.join(waves.select(key, "_isl", "_wave"), on=[key, "_isl"])
    return wide.select("_item", pl.col("_item").min().over(key, "_wave").alias("_root"), pl.lit(scope).alias("_scope"),
                       leaf.alias("_leaf"), pl.lit(component).alias("_wcomp"), pl.col(key).cast(pl.String).alias("_gkey"),
                       pl.col("_onset").min().over(key, "_wave").alias("_onset")).cast(_WIDE_SCHEMA)


def _class_recoveries(recoveries: pl.DataFrame | None, component_class: str) -> pl.DataFrame | None:
    """The recovery lines of one component class (they clear that class's outages only)."""
    return None if recoveries is None else recoveries.filter(pl.col("component_class") == component_class)


def _untaken(items: pl.DataFrame, taken: pl.DataFrame, key: str) -> pl.DataFrame:
    """Evidence not yet in a multi-node incident, of a named node with a group in ``key``."""
    return items.join(taken, on="_item", how="anti").filter(pl.col(key).is_not_null() & (pl.col("_nkey") != ""))


def _wide_edges(items: pl.DataFrame, scope: str, key: str, taken: pl.DataFrame,
                min_nodes: int | None = None, recoveries: pl.DataFrame | None = None) -> pl.DataFrame:
    """:data:`_WIDE_SCHEMA` rows for evidence in multi-node islands of one catalog wide signature
    (``leaf_switch``: per leaf in ``key``; ``storage``: the whole cluster), see :func:`_wide_islands`."""
    sig = wide_signature(scope)
    if sig is None:
        return pl.DataFrame(schema=_WIDE_SCHEMA)
    cand = _untaken(items, taken, key).filter(_matches(sig.cause))
    klass = "network" if scope == "leaf_switch" else "storage"
    return _wide_islands(cand, key, timedelta(seconds=sig.window_s), min_nodes or sig.min_nodes,
                         _class_recoveries(recoveries, klass), "cluster" if scope == "storage" else scope,
                         FABRIC_COMPONENT if scope == "leaf_switch" else "storage",
                         pl.col(key) if scope == "leaf_switch" else pl.lit(None, pl.String))


def _fabric_edges(items: pl.DataFrame, min_nodes: int | None, recoveries: pl.DataFrame | None) -> pl.DataFrame:
    """:data:`_WIDE_SCHEMA` rows of the fabric: leaf-switch incidents, and upstream ``fabric`` incidents.

    1. Per leaf, the catalog's ``leaf_switch`` rule (:func:`_wide_edges`).
    2. A *burst*: the link failures no leaf incident took, across the cluster, chained with gaps of at most
       :data:`FABRIC_SIMULTANEITY`, at least ``min_nodes`` nodes out at once (the leaf rule's count), are
       a ``fabric`` incident. What one leaf alone would explain the leaf rule has taken already, so such a
       burst spans several leaves with too few nodes each (a spine losing 2 uplinked nodes on each of 4
       leaves), or nodes under no configured leaf (no ``leaf_switches`` at all: the same lockstep test is
       the only topology-free evidence of a shared cause, while cable faults minutes apart stay per node).
       Health-check episodes take no part in the burst (a check failing for an hour would chain it); they
       attach to their node's fault.
    3. Lockstep: leaf and burst incidents of *different* groups whose onsets (the first moment each had
       ``min_nodes`` nodes out) chain with gaps of at most :data:`FABRIC_SIMULTANEITY` are one ``fabric``
       incident. Fabric incidents name no leaf switch (``_leaf`` null; their nodes say where they reached):
       no leaf fails in lockstep with another by chance — a spine, a subnet manager or a core switch took
       them down together.
    """
    sig = wide_signature("leaf_switch")
    leaves = _wide_edges(items, "leaf_switch", "_leaf", items.clear().select("_item"), min_nodes, recoveries)
    if sig is None:
        return leaves
    cand = (_untaken(items.with_columns(pl.lit("(burst)").alias("_burst")), leaves.select("_item"), "_burst")
            .filter(_matches(sig.cause) & ~pl.col("is_hc")))
    burst = _wide_islands(cand, "_burst", FABRIC_SIMULTANEITY, min_nodes or sig.min_nodes,
                          _class_recoveries(recoveries, "network"), "fabric", FABRIC_COMPONENT, pl.lit(None, pl.String))
    wide = pl.concat([leaves, burst])
    if wide.is_empty():
        return wide
    # Lockstep: onsets of different groups chained with gaps <= FABRIC_SIMULTANEITY (a leaf's own waves are
    # joined already, and bursts are chained in that same window, so a chain holds each group once).
    incidents = (wide.group_by("_root").agg(pl.col("_onset").first(), pl.col("_gkey").first())
                 .sort("_onset", "_root").with_columns(pl.lit(0).alias("_k"))
                 .with_columns(span_islands(["_k"], FABRIC_SIMULTANEITY, end="_onset", start="_onset").alias("_lock")))
    locked = (incidents.with_columns(pl.col("_gkey").n_unique().over("_lock").alias("_groups"),
                                     pl.col("_root").min().over("_lock").alias("_fabric_root"))
              .filter(pl.col("_groups") >= 2).select("_root", "_fabric_root"))
    return (wide.join(locked, on="_root", how="left")
            .with_columns(pl.when(pl.col("_fabric_root").is_not_null()).then(pl.lit("fabric")).otherwise("_scope").alias("_scope"),
                          pl.when(pl.col("_fabric_root").is_not_null()).then(pl.lit(None, pl.String)).otherwise("_leaf").alias("_leaf"),
                          pl.coalesce("_fabric_root", "_root").alias("_root"))
            .select(list(_WIDE_SCHEMA)))


def _rack_edges(items: pl.DataFrame, taken: pl.DataFrame, min_nodes: int | None,
                recoveries: pl.DataFrame | None) -> pl.DataFrame:
    """:data:`_WIDE_SCHEMA` rows of rack-scope incidents: a rack's power or cooling, an NVLink domain.

    Failure events of one class of :data:`RACK_CLASSES` (power: PSU / PDU sensors; thermal: temperature,
    fans) on hosts of one rack (column ``_rack``), or of one class of :data:`NVLINK_DOMAIN_CLASSES` (nvlink:
    NVLink Xids, NVSwitch SXids) on hosts of one NVLink domain (column ``_nvdomain``), chained with gaps of
    at most :data:`RACK_SIMULTANEITY`, with at least ``min_nodes`` (default :data:`RACK_MIN_NODES`) hosts
    out at once (until each logged its recovery), are one incident (scope ``rack``) of the rack's PDU or
    cooling or of the domain's NVSwitches, as a leaf switch's link losses are one: a PDU trip, not N power
    supplies failing together. The incident is named by its earliest evidence's component when the catalog
    lists it for the class (an NVSwitch tray's SXid before the compute trays' Xids: ``nvswitch``), else by
    the class's first listed component (a GPU power brake at a PDU trip is still the PDU's: ``host_power``).
    Health-check episodes take no part in the burst (they attach to their node's fault).
    """
    frames = []
    for group, classes in (("_rack", RACK_CLASSES), ("_nvdomain", NVLINK_DOMAIN_CLASSES)):
        for klass, components in classes.items():
            # A class the catalog flags for both groups is taken by the first (the rack) only.
            done = pl.concat([taken, *(f.select("_item") for f in frames)])
            cand = _untaken(items, done, group).filter((pl.col("component_class") == klass) & ~pl.col("is_hc"))
            wide = _wide_islands(cand.with_columns(pl.concat_str(group, pl.lit(klass), separator="|").alias("_rkey")),
                                 "_rkey", RACK_SIMULTANEITY, min_nodes or RACK_MIN_NODES,
                                 _class_recoveries(recoveries, klass), "rack", components[0], pl.lit(None, pl.String))
            # The root is the earliest evidence (items are numbered by start): its component names the
            # incident when it is one of the class's listed ones.
            root = cand.select(pl.col("_item").alias("_root"), pl.col("component").alias("_root_comp"))
            frames.append(wide.join(root, on="_root", how="left")
                          .with_columns(pl.when(pl.col("_root_comp").is_in(list(components))).then("_root_comp")
                                        .otherwise("_wcomp").alias("_wcomp"))
                          .select(list(_WIDE_SCHEMA)))
    return pl.concat(frames) if frames else pl.DataFrame(schema=_WIDE_SCHEMA)


def _flap_edges(blocks: pl.DataFrame, segments: pl.DataFrame, recoveries: pl.DataFrame | None,
                outages: pl.DataFrame | None) -> pl.DataFrame:
    """(``_a``, ``_b``) edges between blocks of one node and component where a part failed in the earlier
    block, came back by itself (a recovery of its class about that part, logged after the part's last
    failure there) and failed again in the later block within :data:`FLAP_WINDOW`, with no repair in between
    (an outage of the node that ended there: drained and returned). A flapping port, or a sensor that
    asserts and deasserts, is one fault until repaired — not one incident per flap.

    A part's earlier block is the last one before its later block with a failure of the same part
    (:func:`~gpusre.models.reliability.repair_times.same_part`): on an 8-rail node rail B flapping between
    two failures of rail A says nothing of A, and B's ``ACTIVE`` does not chain them. Lines naming no part
    are one part that any recovery of the class answers, so without part columns this is the earlier rule:
    consecutive blocks, any recovery of the class in between.

    ``blocks``: ``_root``, ``_nkey``, ``component``, ``component_class``, ``_lstart`` (first logged evidence;
    null for a block of health checks alone), ``_chainable`` (no evidence of the block is in a multi-node
    incident). ``segments``: per block (``_root``) and part (the part columns), ``_s`` and ``_e``: the span
    of that part's logged evidence in the block (its health checks aside)."""
    schema = {"_a": pl.UInt32, "_b": pl.UInt32}
    if recoveries is None or recoveries.is_empty() or segments.is_empty():
        return pl.DataFrame(schema=schema)
    keys = ["_nkey", "component"]
    # Blocks chain by the span of their logged evidence: the recovery line answers the kernel's failure
    # line, while a health check runs on its own clock and may lag both. Health checks alone take no part
    # (nor stand between two flaps); a block of a multi-node incident breaks the chain (its waves are
    # _wide_edges' to join).
    seg = with_parts(segments).join(
        blocks.filter(pl.col("_lstart").is_not_null())
        .select("_root", *keys, "component_class", "_lstart", "_chainable"), on="_root")
    earlier = seg.select(*keys, *PART_COLUMNS, pl.col("_root").alias("_prev"), pl.col("_e").alias("_prev_end"),
                         pl.col("_chainable").alias("_prev_chainable"),
                         *(pl.col(c).alias(f"_prev_{c}") for c in PART_COLUMNS))
    # Each part's previous failure: the latest one of the same part ending before this block's first logged
    # evidence (blocks of a node and component are disjoint in time, so it is in an earlier block).
    pairs = (join_asof_same_part(seg, earlier, left_on="_lstart", right_on="_prev_end", by=keys,
                                 strategy="backward", allow_exact_matches=False)
             .filter(pl.col("_prev").is_not_null() & pl.col("_chainable") & pl.col("_prev_chainable")
                     & (pl.col("_s") - pl.col("_prev_end") <= FLAP_WINDOW)))
    # The recovery must be about the part both failures name: asked with the side naming more of it (a
    # NIC's address and port over a portless line of the same node).
    named = pl.sum_horizontal(pl.col(c).is_not_null() for c in PART_COLUMNS)
    prev_named = pl.sum_horizontal(pl.col(f"_prev_{c}").is_not_null() for c in PART_COLUMNS)
    pairs = (pairs.with_columns(pl.when(prev_named > named).then(pl.col(f"_prev_{c}")).otherwise(pl.col(c)).alias(c)
                                for c in PART_COLUMNS)
             .with_row_index("_pair"))
    pairs = (_first_recovery(pairs, "_prev_end", recoveries, "_nkey", by_class=True)
             .filter(pl.col("_up") < pl.col("_s")).drop("_up"))
    if outages is not None and not outages.is_empty() and pairs.height:
        out = outages.select(pl.col("node").alias("_nkey"), pl.col("outage_end_ts").cast(_UTC).alias("_oe"))
        repaired = (pairs.join(out, on="_nkey").filter((pl.col("_oe") > pl.col("_prev_end")) & (pl.col("_oe") < pl.col("_s")))
                    .select("_pair").unique())
        pairs = pairs.join(repaired, on="_pair", how="anti")
    return pairs.select(pl.col("_root").alias("_a"), pl.col("_prev").alias("_b")).cast(schema)


def _node_edges(items: pl.DataFrame, window: timedelta, outages: pl.DataFrame | None = None,
                recoveries: pl.DataFrame | None = None, wide_items: pl.DataFrame | None = None) -> pl.DataFrame:
    """(``_a``, ``_b``) edges between evidence items of one node that the node-scope signatures join.

    Items first merge into blocks per node and component (gap <= ``window``); the catalog's rules then
    link blocks, so the pairwise joins stay small however chatty a component is. Evidence of one class
    that meets one continuous outage of its node (``outages``: ``node``, ``outage_start_ts``,
    ``outage_end_ts``; null end = still out) is one fault however far apart: the node stayed drained
    for it (a reset attempt that fails again, a health check that pauses while the node reboots). The
    drain usually follows the evidence by minutes, so evidence up to ``window`` before the outage meets it.
    A part that flaps (fails, recovers by itself, fails again) is one fault (:func:`_flap_edges`);
    ``recoveries``: the recovery lines; ``wide_items``: ``_item`` of evidence in multi-node incidents,
    whose waves :func:`_wide_edges` joins or separates (the flap chain leaves them alone).
    """
    it = items.sort("_nkey", "component", "start", "_item").with_columns(
        span_islands(["_nkey", "component"], window).alias("_blk"))
    it = it.with_columns(pl.col("_item").min().over("_nkey", "component", "_blk").alias("_root"))
    edges = [it.select(pl.col("_item").alias("_a"), pl.col("_root").alias("_b"))]
    # (a column before the aggregation: an is_in inside it would copy the list into every group)
    it = it.with_columns((pl.col("_item").is_in(wide_items["_item"].implode()) if wide_items is not None
                          and wide_items.height else pl.lit(False)).alias("_wide"))
    logged_item = ~pl.col("is_hc")
    blocks = (it.group_by("_root").agg(pl.col("_nkey").first(), pl.col("component").first(),
                                       pl.col("component_class").first(), pl.col("start").min(),
                                       pl.col("end").max(), pl.col("is_hc").all(),
                                       # The flap chain reads the logged lines of a block (the kernel's
                                       # down and up lines), not the health checks inside it: a port
                                       # down at 18:00, its IB check failing at 18:00:31 and down again
                                       # at 18:30 is a block with a check in it, and it once chained
                                       # with no later flap (an evaluator's gpu13: two incidents).
                                       (~pl.col("_wide").any()).alias("_chainable"),
                                       pl.col("start").filter(logged_item).min().alias("_lstart")))
    # Health-check episodes take no part in the signatures, not even inside a block of their component:
    # an episode failing for hours would bridge faults far apart (a GPU lost at 02:00, its check failing
    # until 06:00, a DBE on another GPU at 02:40); each attaches to its nearest fault below.
    logged = (it.filter(~pl.col("is_hc")).group_by("_root")
              .agg(pl.col("_nkey").first(), pl.col("component").first(), pl.col("component_class").first(),
                   pl.col("start").min(), pl.col("end").max()))
    for sig in node_signatures():
        w = timedelta(seconds=sig.window_s)
        side_a = logged.filter(_matches(sig.cause))
        if sig.cause == sig.effect:
            isl = side_a.sort("_nkey", "start", "_root").with_columns(span_islands(["_nkey"], w).alias("_isl"))
            edges.append(isl.select(pl.col("_root").alias("_a"), pl.col("_root").min().over("_nkey", "_isl").alias("_b")))
            continue
        side_b = logged.filter(_matches(sig.effect))
        pairs = side_a.join(side_b, on="_nkey", suffix="_e").filter(
            (pl.col("_root") != pl.col("_root_e"))
            & (pl.max_horizontal("start", "start_e") - pl.min_horizontal("end", "end_e") <= w))
        edges.append(pairs.select(pl.col("_root").alias("_a"), pl.col("_root_e").alias("_b")))
    # Escalated repeats of one informational Xid on one GPU (Xid 63 row remappings every 90 min: a
    # failing HBM) are one fault while they keep escalating: chained across the repeat window, not
    # the 30-min incident gap (they once made one incident per line).
    rep = items.filter(pl.col("_repeat_key").is_not_null())
    if rep.height:
        rep = rep.sort("_nkey", "_repeat_key", "start", "_item").with_columns(
            span_islands(["_nkey", "_repeat_key"], REPEAT_WINDOW).alias("_risl"))
        edges.append(rep.select(pl.col("_item").alias("_a"),
                                pl.col("_item").min().over("_nkey", "_repeat_key", "_risl").alias("_b")))
    if outages is not None and not outages.is_empty():
        out = outages.select(pl.col("node").alias("_nkey"), pl.col("outage_start_ts").cast(_UTC).alias("_os"),
                             pl.col("outage_end_ts").cast(_UTC).alias("_oe"))
        # (blocks meeting an outage of their node; both are few per node)
        inside = blocks.join(out, on="_nkey").filter(
            (pl.col("end") >= pl.col("_os") - window) & (pl.col("_oe").is_null() | (pl.col("start") <= pl.col("_oe"))))
        edges.append(inside.select(pl.col("_root").alias("_a"),
                                   pl.col("_root").min().over("_nkey", "_os", "component_class").alias("_b")))
    # (per block and part: the flap chain asks whether the part that failed again came back in between)
    segments = (it.filter(logged_item).pipe(with_parts).group_by("_root", *PART_COLUMNS)
                .agg(pl.col("start").min().alias("_s"), pl.col("end").max().alias("_e")))
    edges.append(_flap_edges(blocks, segments, recoveries, outages))
    # A health-check episode attaches to the fault it overlaps on its node (the nearest log evidence
    # within the window, whatever its class: checks are symptoms, and their names can mislead); one whose
    # check names no known component may also join other health-check evidence; neither is then a fault
    # of its own.
    # (It must start near the target: an episode failing since yesterday is not today's outage's symptom.)
    gap = pl.when(pl.col("start") < pl.col("start_k")).then(pl.col("start_k") - pl.col("start")) \
        .otherwise(pl.col("start") - pl.col("end_k"))
    unknown = pl.col("component_class") == "other"
    for episodes, targets in ((blocks.filter(pl.col("is_hc")), blocks.filter(~pl.col("is_hc"))),
                              (blocks.filter(pl.col("is_hc") & unknown), blocks.filter(pl.col("is_hc") & ~unknown))):
        if episodes.height and targets.height:
            near = (episodes.join(targets, on="_nkey", suffix="_k")
                    .with_columns(gap.alias("_gap"),
                                  (pl.col("component_class") != pl.col("component_class_k")).alias("_other_class"))
                    .filter(pl.col("_gap") <= window)
                    # the same class first: a GPU check beside an unrelated link flap stays with the GPU fault
                    .sort("_root", "_other_class", "_gap", "_root_k").unique("_root", keep="first"))
            edges.append(near.select(pl.col("_root").alias("_a"), pl.col("_root_k").alias("_b")))
    return pl.concat([e.cast(pl.UInt32) for e in edges])


def _components(n: int, edges: list[pl.DataFrame]) -> np.ndarray:
    """Connected-component label of each of ``n`` items given edge frames (``_a``, ``_b``)."""
    e = pl.concat([x.select(pl.col(x.columns[0]).alias("_a"), pl.col(x.columns[1]).alias("_b")).cast(pl.Int64)
                   for x in edges]) if edges else pl.DataFrame(schema={"_a": pl.Int64, "_b": pl.Int64})
    graph = coo_matrix((np.ones(e.height), (e["_a"].to_numpy(), e["_b"].to_numpy())), shape=(n, n))
    return connected_components(graph, directed=False)[1]


def _effects(items: pl.DataFrame) -> pl.Expr:
    """True for evidence that a cross signature names as the effect of a cause present in its group,
    logged before it or at most the row's ``cause_after_effect_s`` after it: a DBE and then the GPU
    falling off the bus is a memory fault; the bus drop first and a DBE ten minutes later is the bus
    drop's (one minute, the catalog's default: lines of one fault in either order); a fatal machine
    check panic and the DIMM UE that EDAC decodes at the boot after it (minutes later) is the DIMM's."""
    present = pl.concat([items.select("_group", pl.col("component").alias("_name"), "start"),
                         items.select("_group", pl.col("component_class").alias("_name"), "start")])
    effect = pl.lit(False)
    for sig in node_signatures():
        if sig.cause == sig.effect:
            continue
        first_cause = (present.filter(pl.col("_name") == sig.cause).group_by("_group")
                       .agg(pl.col("start").min().alias("_cause_start")))
        cause_start = pl.col("_group").replace_strict(first_cause["_group"], first_cause["_cause_start"],
                                                      default=None, return_dtype=_UTC)
        slack = timedelta(seconds=sig.cause_after_effect_s)
        effect = effect | (_matches(sig.effect) & ~_matches(sig.cause)
                           & (cause_start.is_not_null() & (cause_start <= pl.col("start") + slack)))
    return effect


def _aggregate(items: pl.DataFrame) -> pl.DataFrame:
    """One row per ``_group``: span, nodes, GPUs, counts, evidence kinds, and the cause's component."""
    items = items.with_columns(_effects(items).alias("_effect"))
    # The most severe component names the fault, and within it the first line logged: one component's
    # lines are one fault getting worse (a contained Xid 94 that killed the job, then the uncontained
    # Xid 95 twenty minutes later once nothing ran: "xid 94"), and naming it by its worst line named
    # the fault after what happened after the job died. Across components severity still decides,
    # after the signatures' cause-before-effect (``_effect``).
    items = items.with_columns(pl.col("_rank").min().over("_group", "component", "_effect", "is_hc")
                               .alias("_component_rank"))
    # Lines of one fault logged in the same second (the Xid 79 line and "GPU has fallen off the bus")
    # name the cause by its code first, then by kind: never by which line the log happened to hold first.
    cause = [pl.col("_effect"), pl.col("is_hc"), pl.col("_component_rank"), pl.col("start"), pl.col("code").is_null(),
             pl.col("kind"), pl.col("_item")]
    worst = [pl.col("_rank"), pl.col("_effect"), pl.col("is_hc"), pl.col("start"), pl.col("_item")]
    first = [pl.col("start"), pl.col("_item")]
    what = (pl.when(pl.col("code").is_null()).then(pl.col("kind"))
            .otherwise(pl.concat_str(pl.col("kind"), pl.col("code").cast(pl.String), separator=" ")))
    return (
        items.group_by("_group")
        .agg(
            pl.col("component").sort_by(cause).first().alias("_cause_component"),
            pl.col("_scope").drop_nulls().first().alias("scope"),
            pl.col("_wcomp").drop_nulls().first().alias("_wide_component"),
            pl.col("_leaf").drop_nulls().first().alias("leaf_switch"),
            pl.col("cause_class").sort_by(worst).first(),
            pl.col("severity").sort_by(worst).first(),
            pl.col("action").sort_by(worst).first(),
            pl.col("start").min().alias("start_ts"),
            pl.col("end").max().alias("end_ts"),
            pl.col("node").drop_nulls().unique().sort().alias("nodes"),
            pl.col("gpus").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique().sort().alias("gpus"),
            pl.col("n_events").sum().cast(pl.Int64),
            pl.col("event_ids").sort_by(first).first().list.first().alias("first_event_id"),
            pl.col("node").sort_by(first).first().alias("_first_node"),
            what.sort_by(cause).first().alias("root_cause"),
            pl.col("kind").unique().sort().alias("evidence_kinds"),
            pl.col("is_hc").sum().cast(pl.Int64).alias("n_health_check_episodes"),
            pl.col("is_hc").all().alias("_hc_only"),
            pl.col("component_class").filter(~pl.col("is_hc") | (pl.col("component_class") != "other"))
            .n_unique().alias("_classes"),
        )
        .with_columns(
            pl.col("scope").fill_null("node"),
            # a multi-node incident is named by its rule (the switch, the file system, the rack's PDU)
            pl.coalesce("_wide_component", "_cause_component").alias("component"),
            (pl.col("evidence_kinds").list.len() == 1).alias("single_symptom"),
        )
        .with_columns(class_of(pl.col("component")).alias("component_class"))
    )


def _with_recovery_actions(groups: pl.DataFrame, members: pl.DataFrame, items: pl.DataFrame, events: pl.DataFrame,
                           window: timedelta) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``groups`` (:func:`_aggregate`) and ``members`` (``_group``, ``event_id``) with the recovery-action lines
    (:func:`recovery_action_lines`) of each group's GPUs (rule 4r): a line of a GPU (:func:`gpu_id`) the group's
    evidence names, logged from the group's first evidence to ``window`` after its last, is a member; it counts
    in ``n_events``, may extend ``end_ts`` (the driver's last word on the fault), and the group's ``action``
    becomes the line's when :data:`ACTION_STRENGTH` ranks it stronger. The cause, severity and classes stay
    the evidence's: the line is the driver's advice about the Xid before it, not a fault of its own. A line
    two incidents of its GPU could take goes to the later-starting one (the fault it followed)."""
    lines = recovery_action_lines(events).join(members.select("event_id"), on="event_id", how="anti")
    if lines.is_empty() or groups.is_empty():
        return groups, members
    gpus = (items.select("_group", pl.col("gpus").alias("_gpu")).explode("_gpu").drop_nulls("_gpu").unique()
            .join(groups.select("_group", "start_ts", "end_ts"), on="_group"))
    attached = (lines.join(gpus, on="_gpu")
                .filter((pl.col("ts") >= pl.col("start_ts")) & (pl.col("ts") <= pl.col("end_ts") + window))
                .sort("event_id", "start_ts", "_group").unique("event_id", keep="last", maintain_order=True))
    if attached.is_empty():
        return groups, members
    strength = action_strength(pl.col("action"))
    advice = attached.group_by("_group").agg(
        pl.len().cast(pl.Int64).alias("_n_advice"), pl.col("ts").max().alias("_advice_end"),
        # the strongest action the driver named, and of equals the latest
        pl.col("action").sort_by(strength, pl.col("ts")).last().alias("_advice_action"))
    groups = (groups.join(advice, on="_group", how="left")
              .with_columns((pl.col("n_events") + pl.col("_n_advice").fill_null(0)).alias("n_events"),
                            pl.max_horizontal("end_ts", "_advice_end").alias("end_ts"),
                            pl.when(action_strength(pl.col("_advice_action")) > strength)
                            .then(pl.col("_advice_action")).otherwise(pl.col("action")).alias("action"))
              .drop("_n_advice", "_advice_end", "_advice_action"))
    members = pl.concat([members, attached.select("_group", pl.col("event_id").cast(members.schema["event_id"]))])
    return groups, members


def _operator_frame(operator: pl.DataFrame) -> pl.DataFrame:
    """Operator incidents typed, with ``nodes`` expanded to a list (empty = every node)."""
    op = operator.select(
        pl.col("id").cast(pl.String).alias("operator_id"),
        pl.col("start").cast(pl.Datetime("us", "UTC")).alias("_op_start"),
        pl.col("end").cast(pl.Datetime("us", "UTC")).alias("_op_end"),
        pl.col("component").cast(pl.String).alias("_op_component"),
        pl.col("root_cause").cast(pl.String).alias("_op_root_cause"),
        pl.col("nodes").cast(pl.String).alias("_op_hostlist"),
        (pl.col("notes").cast(pl.String) if "notes" in operator.columns else pl.lit(None, pl.String)).alias("notes"),
    )
    # One incident per operator id (read_operator_incidents refuses all but the last row of an id; a
    # caller passing a frame directly gets the same): two rows would be two incidents under one id.
    op = op.unique("operator_id", keep="last", maintain_order=True)
    # Operator logs are hand-kept and short: expanding hostlists row by row is cheap and exact.
    return op.with_columns(
        pl.col("_op_hostlist")
        .map_elements(lambda h: expand_hostlist(h), return_dtype=pl.List(pl.String))
        .fill_null(pl.lit([], dtype=pl.List(pl.String)))
        .alias("_op_nodes")
    ).drop("_op_hostlist")


def _match_operator(groups: pl.DataFrame, op: pl.DataFrame) -> pl.DataFrame:
    """``_group`` -> ``operator_id`` for event groups overlapping an operator incident (earliest wins)."""
    if groups.is_empty() or op.is_empty():
        return pl.DataFrame(schema={"_group": pl.String, "operator_id": pl.String})
    return (
        groups.select("_group", "start_ts", "end_ts", "nodes")
        .join(op.select("operator_id", "_op_start", "_op_end", "_op_nodes"), how="cross")
        .filter(
            (pl.col("start_ts") <= pl.col("_op_end"))
            & (pl.col("end_ts") >= pl.col("_op_start"))
            & (
                (pl.col("_op_nodes").list.len() == 0)
                | (pl.col("nodes").list.set_intersection("_op_nodes").list.len() > 0)
            )
        )
        .sort("_group", "_op_start", "operator_id")
        .unique("_group", keep="first", maintain_order=True)
        .select("_group", "operator_id")
    )


#: How far a fault spread, narrowest first: an operator incident folding evidence of several scopes takes
#: the widest (a leaf switch's link loss labelled together with one node's is the switch's).
SCOPE_ORDER: tuple[str, ...] = ("node", "rack", "leaf_switch", "fabric", "cluster")
#: Scope of an operator incident with no log evidence naming several nodes: how far the fault spread
#: (one node's fault seen on each, or one shared cause) is not known, so per-node analytics leave it out.
OPERATOR_NODES_SCOPE = "nodes"


def _operator_scope(ev_scope: pl.Expr, op_nodes: pl.Expr) -> pl.Expr:
    """Scope of an operator incident: the widest of the evidence it folds; without evidence ``node`` when
    the operator named exactly one node, ``cluster`` when none (the row covers the whole cluster), else
    :data:`OPERATOR_NODES_SCOPE`."""
    n = op_nodes.list.len()
    return (pl.when(ev_scope.is_not_null()).then(ev_scope)
            .when(n == 1).then(pl.lit("node"))
            .when(n == 0).then(pl.lit("cluster"))
            .otherwise(pl.lit(OPERATOR_NODES_SCOPE)))


def _folded_aggregate(folded: pl.DataFrame, key: str) -> pl.DataFrame:
    """The event groups ``folded`` (aggregated, with ``incident_id``) summed up per ``key``: the evidence an
    operator incident takes over (its id, widest scope, worst classes, span, nodes, GPUs, counts)."""
    folded = folded.with_columns(
        severity_rank(pl.col("severity")).alias("_rank"),
        pl.col("scope").replace_strict({s: i for i, s in enumerate(SCOPE_ORDER)}, default=0,
                                       return_dtype=pl.Int32).alias("_scope_rank"),
    )
    worst = [pl.col("_rank"), pl.col("start_ts")]
    earliest = [pl.col("start_ts"), pl.col("incident_id")]
    return folded.group_by(key).agg(
        pl.col("incident_id").sort_by(earliest).first().alias("_ev_incident_id"),
        pl.col("scope").sort_by("_scope_rank").last().alias("_ev_scope"),
        pl.col("cause_class").sort_by(worst).first(),
        pl.col("severity").sort_by(worst).first(),
        pl.col("action").sort_by(worst).first(),
        pl.col("start_ts").min().alias("_ev_start"),
        pl.col("end_ts").max().alias("_ev_end"),
        pl.col("nodes").list.explode(keep_nulls=False, empty_as_null=False).alias("_ev_nodes"),
        pl.col("gpus").list.explode(keep_nulls=False, empty_as_null=False).unique().sort().alias("gpus"),
        pl.col("n_events").sum(),
        pl.col("first_event_id").sort_by(earliest).first(),
        pl.col("leaf_switch").drop_nulls().first(),
        pl.col("evidence_kinds").list.explode(keep_nulls=False, empty_as_null=False).drop_nulls().unique().sort(),
        pl.col("n_health_check_episodes").sum(),
    )


def _operator_incidents(op: pl.DataFrame, folded: pl.DataFrame) -> pl.DataFrame:
    """One incident per operator row (:func:`_operator_frame`), labelled by the operator, over the event
    groups ``folded`` into it (aggregated groups with their ``_group``, ``incident_id`` and matched
    ``operator_id``) — except a "not a failure" row, which marks each group it overlaps on its own row
    (rule 6). ``_group`` is the marked group of such a row, else null (the membership's key).

    The id is the earliest folded group's (its first evidence: the id the events alone gave, which the
    previous night's report printed), so labelling an incident, or editing the label's text or start
    later, never changes its id; only a row with no evidence gets :func:`operator_incident_id`. The
    scope says how far the fault spread, as for event incidents (:func:`_operator_scope`); who labelled
    it is ``label_source``.
    """
    by_op = _folded_aggregate(folded, "operator_id")
    # Operator logs are hand-kept and short: hashing row by row is cheap.
    op = op.with_columns(pl.Series("_op_incident_id", [operator_incident_id(i) for i in op["operator_id"].to_list()],
                                   dtype=pl.String))
    dismissed = pl.col("_op_component").eq_missing(pl.lit(NOT_A_FAILURE))
    labelled = op.join(by_op, on="operator_id", how="left")
    # "Not a failure" marks each incident it overlaps, folding none together: one row per folded group,
    # with that group's own span and nodes (rule 6).
    marks = (op.filter(dismissed).select("operator_id")
             .join(folded.select("operator_id", "_group"), on="operator_id", how="inner"))
    labelled = pl.concat([labelled.filter(~dismissed).with_columns(pl.lit(None, pl.String).alias("_group")),
                          labelled.filter(dismissed).drop(by_op.drop("operator_id").columns)
                          .join(marks, on="operator_id", how="left")
                          .join(_folded_aggregate(folded, "_group"), on="_group", how="left")],
                         how="diagonal_relaxed")
    own = dismissed & pl.col("_ev_incident_id").is_not_null()
    # "Not a failure" with no tool-made incident under it marks nothing: no incident (rule 6).
    labelled = labelled.filter(~dismissed | pl.col("_ev_incident_id").is_not_null())
    return labelled.select(
        pl.coalesce("_ev_incident_id", "_op_incident_id").alias("incident_id"),
        pl.col("_op_component").alias("component"),
        # Humans give no cause class; the worst folded event's is the best evidence we have — unless the
        # operator said it was no failure, which every failure count reads from the cause class.
        pl.when(dismissed).then(pl.lit(NOT_A_FAILURE)).otherwise(pl.col("cause_class").fill_null("unknown"))
        .alias("cause_class"),
        "severity",
        "action",
        pl.when(own).then(pl.col("_ev_start")).otherwise(pl.min_horizontal("_op_start", "_ev_start")).alias("start_ts"),
        pl.when(own).then(pl.col("_ev_end")).otherwise(pl.max_horizontal("_op_end", "_ev_end")).alias("end_ts"),
        pl.concat_list(pl.when(own).then(pl.lit([], dtype=pl.List(pl.String))).otherwise(pl.col("_op_nodes")),
                       pl.col("_ev_nodes").fill_null(pl.lit([], dtype=pl.List(pl.String))))
        .list.unique().list.sort().alias("nodes"),
        pl.col("gpus").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("n_events").fill_null(0),
        "first_event_id",
        _operator_scope(pl.col("_ev_scope"), pl.col("_op_nodes")).alias("scope"),
        "leaf_switch",
        pl.lit("operator").alias("label_source"),
        pl.col("_op_root_cause").alias("root_cause"),
        "operator_id",
        "notes",
        # its own class, not the catalog's ``other``: a report grouping by class shows it apart
        pl.when(dismissed).then(pl.lit(NOT_A_FAILURE)).otherwise(class_of(pl.col("_op_component")))
        .alias("component_class"),
        pl.col("evidence_kinds").fill_null(pl.lit([], dtype=pl.List(pl.String))),
        pl.col("n_health_check_episodes").fill_null(0),
        (pl.col("evidence_kinds").list.len().fill_null(0) == 1).alias("single_symptom"),
        "_group",
    )


#: ``label_source`` of an incident made of Slurm node states alone (rule 7, :func:`node_state_incidents`).
NODE_STATE_LABEL = "node_state"
#: The recommended action of such an incident: nothing logged, so the node's BMC event log and the part the
#: drain reason names are where to look.
NODE_STATE_ACTION = "CHECK_BMC"


#: Rule 7's rack rule: unlogged outages of one rack-wide class on nodes of one rack whose chains start with gaps of
#: at most this are one incident. Wider than :data:`RACK_SIMULTANEITY` because the start is slurmctld's ``DOWN*``,
#: not a logged line: it marks a node that stopped answering on its next ping round (every SlurmdTimeout / 3,
#: 100 s by default), so trays that lost power together go ``DOWN*`` up to a few minutes apart.
NODE_STATE_SIMULTANEITY = timedelta(minutes=5)


def node_state_incidents(incidents: pl.DataFrame, states: pl.DataFrame | None,
                         planned: pl.DataFrame | None = None, *,
                         racks: Mapping[str, Sequence[str] | str] | None = None,
                         rack_min_nodes: int | None = None) -> pl.DataFrame:
    """Rule 7: one :data:`INCIDENT_SCHEMA` row per hardware outage chain of a node that no incident explains.

    A node that loses power logs nothing; Slurm marks it ``DOWN*`` and the operator drains it for the part
    (``tray c15 lost power (PDB), reseated``). The outage chain (:func:`~gpusre.models.reliability.repair_times.chain_faults`)
    is a failure when the state naming its part is classed ``hardware`` by ``drain_reasons.csv`` (its
    ``availability_class``), neither the chain nor that state starts in planned maintenance (``planned``, the
    periods that claim evidence, :func:`planned_maintenance`: a fault found in maintenance with no log line makes
    no incident), and no incident (``incidents``, any class) is linked to an outage of
    the chain by the ``marts.incident_repairs`` rule
    (:func:`~gpusre.models.reliability.repair_times.incident_outage_links`, ``any_class``: a drain naming another
    class than the logged fault 20 min before it is still that fault's drain, never a second incident).

    The row: scope ``node``, the naming state's component and its class, cause class ``hardware``, severity
    ``high``, action :data:`NODE_STATE_ACTION`, ``start_ts`` the chain's first outage's start (the ``DOWN*``), ``end_ts`` the naming state's start
    (the last node-state evidence), ``n_events`` 0, ``label_source`` :data:`NODE_STATE_LABEL`, ``root_cause`` the
    drain reason as written. Its repair is the chain's end, as any incident linked to it.

    With ``racks`` given, such chains of one rack-wide class (:data:`RACK_CLASSES`: power, thermal) on nodes of one
    rack whose starts follow each other within :data:`NODE_STATE_SIMULTANEITY`, at least ``rack_min_nodes``
    (:data:`RACK_MIN_NODES`) nodes, are one incident of scope ``rack`` (a PDU or a rack's cooling, as rule 3 makes
    of logged lines): its nodes, the first chain's start, component, reason and id (the id its first node's incident
    would have), the last naming state's start as its end.

    Args:
        incidents: :func:`merge_incidents` output (``incident_id``, ``component``, ``start_ts``, ``end_ts``,
            ``nodes``; ``component_class`` optional).
        states: ``core.node_states`` rows (None or empty: no rows).
        planned: :func:`planned_maintenance` periods, or None.
        racks: rack -> its hosts (``cluster.yaml`` ``racks``), or None: no rack incidents.
        rack_min_nodes: nodes of one rack that make a rack incident (default :data:`RACK_MIN_NODES`).
    """
    empty = pl.DataFrame(schema=INCIDENT_SCHEMA)
    if states is None or states.is_empty():
        return empty
    faults = chain_faults(states).filter((pl.col("availability_class") == "hardware")
                                         & pl.col("reason_component").is_not_null())
    if planned is not None and not planned.is_empty() and not faults.is_empty():
        # Planned work's own drains are no failure; a chain that began as maintenance is left out too (a fault
        # found in it with no log line: its drain is hardware down time in availability, but no incident).
        in_period = lambda c: pl.col(c).is_between(pl.col("_pm_start"), pl.col("_pm_end"))  # noqa: E731
        in_planned = (periods_of(faults.select("node", "chain_start_ts", "named_ts"), planned)
                      .filter(pl.col("_pm_claims") & (in_period("chain_start_ts") | in_period("named_ts")))
                      .select("node", "chain_start_ts").unique())
        faults = faults.join(in_planned, on=["node", "chain_start_ts"], how="anti")
    if faults.is_empty():
        return empty
    if not incidents.is_empty():
        explained = incident_outage_links(incidents, states, any_class=True).select("node", "chain_start_ts").unique()
        faults = faults.join(explained, on=["node", "chain_start_ts"], how="anti")
    if faults.is_empty():
        return empty
    rows = _node_state_groups(faults, racks, RACK_MIN_NODES if rack_min_nodes is None else rack_min_nodes)
    # Incidents are few: hashing row by row is cheap (ids as merge_incidents gives them).
    ids = [incident_id(c, t, n[0]) for c, t, n in rows.select("component", "start_ts", "nodes").rows()]
    return rows.with_columns(
        pl.Series("incident_id", ids, dtype=pl.String),
        class_of(pl.col("component")).alias("component_class"),
        pl.lit("hardware").alias("cause_class"), pl.lit(_MIN_SEVERITY).alias("severity"),
        pl.lit(NODE_STATE_ACTION).alias("action"), pl.lit([], pl.List(pl.String)).alias("gpus"),
        pl.lit(0, pl.Int64).alias("n_events"), pl.lit(None, pl.Int64).alias("first_event_id"),
        pl.lit(None, pl.String).alias("leaf_switch"),
        pl.lit(NODE_STATE_LABEL).alias("label_source"), pl.lit(None, pl.String).alias("operator_id"),
        pl.lit(None, pl.String).alias("notes"), pl.lit([], pl.List(pl.String)).alias("evidence_kinds"),
        pl.lit(0, pl.Int64).alias("n_health_check_episodes"), pl.lit(True).alias("single_symptom"),
    ).select(pl.col(c).cast(t) for c, t in INCIDENT_SCHEMA.items())


def _node_state_groups(faults: pl.DataFrame, racks: Mapping[str, Sequence[str] | str] | None,
                       min_nodes: int) -> pl.DataFrame:
    """One row per rule-7 incident (``component``, ``start_ts``, ``end_ts``, ``nodes``, ``root_cause``, ``scope``)
    from :func:`~gpusre.models.reliability.repair_times.chain_faults` rows: a rack's simultaneous chains of one
    rack-wide class (:func:`node_state_incidents`) as one, every other chain as its own node's."""
    # Chains of one rack and class whose starts follow each other within NODE_STATE_SIMULTANEITY.
    f = (faults.with_columns(class_of(pl.col("reason_component")).alias("_class"))
         .join(_group_of(racks, "_rack"), on="node", how="left")
         .sort("_rack", "_class", "chain_start_ts", "node", nulls_last=True)
         .with_columns(span_islands(["_rack", "_class"], NODE_STATE_SIMULTANEITY, end="chain_start_ts",
                                    start="chain_start_ts").alias("_burst")))
    wide = (pl.col("_rack").is_not_null() & pl.col("_class").is_in(list(RACK_CLASSES))
            & (pl.col("node").n_unique().over("_rack", "_class", "_burst") >= min_nodes))
    f = f.with_columns(pl.when(wide).then(pl.concat_str("_rack", "_class", "_burst", separator="\x1f"))
                       .otherwise(pl.concat_str("node", pl.col("chain_start_ts").cast(pl.String), separator="\x1f"))
                       .alias("_group"))
    return (f.group_by("_group", maintain_order=True)
            .agg(pl.col("reason_component").first().alias("component"), pl.col("chain_start_ts").first().alias("start_ts"),
                 pl.col("named_ts").max().alias("end_ts"), pl.col("node").unique(maintain_order=True).alias("nodes"),
                 pl.col("reason").first().alias("root_cause"))
            .with_columns(pl.when(pl.col("nodes").list.len() > 1).then(pl.lit("rack")).otherwise(pl.lit("node"))
                          .alias("scope"))
            .sort("start_ts", pl.col("nodes").list.first())
            .drop("_group"))


def not_a_failure_events(incidents: pl.DataFrame, membership: pl.DataFrame) -> pl.DataFrame:
    """``event_id`` of the failure events merged into incidents an operator marked not a failure
    (:func:`~gpusre.models.vocabulary.is_failure_incident` false): what per-node failure signals built
    on events (suspect nodes) leave out, as the incident counts leave the incident out.

    Args:
        incidents: ``incident_id``, ``cause_class`` (the first output of :func:`merge_incidents`).
        membership: ``event_id``, ``incident_id`` (the second).
    """
    dismissed = incidents.filter(~is_failure_incident()).select("incident_id")
    return membership.join(dismissed, on="incident_id", how="semi").select(pl.col("event_id").cast(pl.Int64)).unique()


def shared_part_events(incidents: pl.DataFrame, membership: pl.DataFrame) -> pl.DataFrame:
    """``event_id``, ``incident_id`` of the incidents wider than one node (``scope`` past ``node`` in
    :data:`SCOPE_ORDER`, and an operator's several-node incident of unknown spread): a shared part's
    failure (a leaf switch, the fabric, a rack's power, the storage), which per-node failure signals
    (suspect nodes) leave out — the nodes under it did not fail. An incident with no member events
    gives one row with a null ``event_id``.

    Args:
        incidents: ``incident_id``, ``scope`` (the first output of :func:`merge_incidents`).
        membership: ``event_id``, ``incident_id`` (the second).
    """
    wide = incidents.filter(pl.col("scope").is_in([*SCOPE_ORDER[1:], OPERATOR_NODES_SCOPE])).select("incident_id")
    return wide.join(membership.select(pl.col("event_id").cast(pl.Int64), "incident_id"), on="incident_id",
                     how="left").select("event_id", "incident_id")


def planned_maintenance(states: pl.DataFrame | None, windows: Sequence[MaintenanceSpan], as_of: datetime | None,
                        nodes: Sequence[str] | None = None, jobs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Each node's planned-maintenance periods (:data:`PLANNED_SCHEMA`): the one definition node availability,
    MTBF exposure and goodput's ``maintenance_gpu_hours`` take out, reused here.

    With Slurm node-state history (``states``: ``core.node_states`` rows, non-empty), the down time
    :func:`~gpusre.models.reliability.node_availability.down_segments` classes ``maintenance``: a state whose
    reason class is maintenance (``catalog/drain_reasons.csv``) from when it took the node out of service
    (a drain on a node still running ``jobs`` waits for them:
    :func:`~gpusre.models.reliability.node_availability.with_down_from`) to its end (ongoing: ``as_of``), and
    any down time inside a cluster.yaml window — less the time a hardware drain of the node holds it: a fault
    found in the maintenance (the operator rewrote the reason, or NHC drained the node for it) ends the
    planned period where its drain begins, and the failure lines from ``LINK_BEFORE`` (30 min) before that
    drain are its evidence (``fault_drain_ts``), not the maintenance's. These rows claim the node's failure
    lines (``claims_evidence``). A node that stayed in service through a window was exposed (MTBF counts its
    hours) and its faults count; the window's whole span on each node it names is a row too
    (``claims_evidence`` false), for rule 2p of job attribution: a job root, a NODE_FAIL or a requeue ended in
    the reservation is the maintenance's whether or not the node went down. Without node states, the
    cluster.yaml ``windows`` naming the node, as MTBF exposure subtracts them then (``nodes``: the fleet a window
    naming none covers; None leaves such a window's ``node`` null = every node), claiming its lines.

    >>> from datetime import datetime, timezone
    >>> t = lambda h: datetime(2026, 11, 25, h, tzinfo=timezone.utc)
    >>> states = pl.DataFrame({"node": ["n1", "n2"], "start_ts": [t(6), t(1)], "end_ts": [t(12), t(2)],
    ...                        "availability_class": ["maintenance", "hardware"]})
    >>> [(n, a.hour, b.hour) for n, a, b, *_ in planned_maintenance(states, [], t(23)).rows()]
    [('n1', 6, 12)]
    """
    fleet = list(nodes) if nodes else None
    window_rows = [(n, w.start, w.end) for w in windows
                   for n in (sorted(w.nodes) if w.nodes is not None else (fleet or [None]))]
    spans = pl.DataFrame(window_rows, schema={"node": pl.String, "start_ts": _UTC, "end_ts": _UTC}, orient="row")
    if not (states is not None and states.height and as_of is not None):
        return as_planned(spans.with_columns(pl.lit(True).alias("claims_evidence")))
    st = with_down_from(states, jobs)
    segments = down_segments(st, as_of, windows).filter(pl.col("availability_class") == "maintenance")
    # A hardware drain holds the node for its fault: no planned maintenance while it is open.
    end = pl.min_horizontal(pl.col("end_ts").fill_null(pl.lit(as_of, _UTC)), pl.lit(as_of, _UTC))
    faults = (st.filter(pl.col("availability_class") == "hardware")
              .select("node", pl.col(DOWN_FROM).cast(_UTC).alias("start_ts"), end.cast(_UTC).alias("end_ts"))
              .filter(pl.col("start_ts") < pl.col("end_ts")))
    seg = _minus(segments.select("node", pl.col("start_ts").cast(_UTC), pl.col("end_ts").cast(_UTC)), faults)
    # down_segments cuts at window edges and attribution changes: touching pieces are one period.
    seg = seg.sort("node", "start_ts")
    periods = (seg.with_columns(span_islands(["node"], end="end_ts", start="start_ts").alias("_p"))
               .group_by("node", "_p").agg(pl.col("start_ts").min(), pl.col("end_ts").max()).drop("_p")
               .sort("end_ts"))
    # The hardware drain that ends a period, or follows it within LINK_BEFORE, claims the lines before it.
    drains = faults.select("node", pl.col("start_ts").alias("fault_drain_ts")).unique().sort("fault_drain_ts")
    periods = periods.join_asof(drains, left_on="end_ts", right_on="fault_drain_ts", by="node", strategy="forward",
                                tolerance=LINK_BEFORE, check_sortedness=False)
    return as_planned(pl.concat([periods.with_columns(pl.lit(True).alias("claims_evidence")),
                                 spans.with_columns(pl.lit(False).alias("claims_evidence"))], how="diagonal"))


def _minus(periods: pl.DataFrame, cuts: pl.DataFrame) -> pl.DataFrame:
    """``periods`` (``node``, ``start_ts``, ``end_ts``) less the time ``cuts`` (same columns) cover on their node."""
    if cuts.is_empty() or periods.is_empty():
        return periods
    # The cuts merged per node, so that the pieces between them are the gaps of one sorted list.
    merged = (cuts.sort("node", "start_ts")
              .with_columns(span_islands(["node"], end="end_ts", start="start_ts").alias("_c"))
              .group_by("node", "_c").agg(pl.col("start_ts").min().alias("_cs"), pl.col("end_ts").max().alias("_ce"))
              .drop("_c"))
    p = periods.with_row_index("_p")
    hits = (p.join(merged, on="node")
            .filter((pl.col("_cs") < pl.col("end_ts")) & (pl.col("_ce") > pl.col("start_ts")))
            .sort("_p", "_cs"))
    # Each period's pieces: from its start (or a cut's end) to the next cut's start (or its end).
    inner = hits.select("_p", "node", pl.col("_ce").alias("start_ts"),
                        pl.col("_cs").shift(-1).over("_p").fill_null(pl.col("end_ts")).alias("end_ts"))
    first = hits.group_by("_p", "node").agg(pl.col("start_ts").first(), pl.col("_cs").min().alias("end_ts"))
    untouched = p.join(hits.select("_p").unique(), on="_p", how="anti")
    pieces = pl.concat([untouched.select("node", "start_ts", "end_ts"), first.select("node", "start_ts", "end_ts"),
                        inner.select("node", "start_ts", "end_ts")])
    return pieces.filter(pl.col("start_ts") < pl.col("end_ts"))


def as_planned(planned: pl.DataFrame) -> pl.DataFrame:
    """``planned`` with the :data:`PLANNED_SCHEMA` columns, typed; a frame without ``claims_evidence`` (built by
    hand, or before the column) claims the evidence of every period, one without ``fault_drain_ts`` names none."""
    defaults = {"claims_evidence": pl.lit(True), "fault_drain_ts": pl.lit(None, _UTC)}
    planned = planned.with_columns(v.alias(c) for c, v in defaults.items() if c not in planned.columns)
    return (planned.select(pl.col(c).cast(t) for c, t in PLANNED_SCHEMA.items())
            .with_columns(pl.col("claims_evidence").fill_null(True))
            .sort("node", "start_ts", nulls_last=True))


def periods_of(frame: pl.DataFrame, planned: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (with ``node``) joined with the planned-maintenance periods of its node (:data:`PLANNED_SCHEMA`,
    columns ``_pm_start``, ``_pm_end``, ``_pm_claims``, ``_pm_fault``): a period with a null ``node`` is every node's."""
    p = as_planned(planned).select("node", pl.col("start_ts").alias("_pm_start"), pl.col("end_ts").alias("_pm_end"),
                                   pl.col("claims_evidence").alias("_pm_claims"),
                                   pl.col("fault_drain_ts").alias("_pm_fault"))
    return pl.concat([frame.join(p.drop_nulls("node"), on="node"),
                      frame.join(p.filter(pl.col("node").is_null()).drop("node"), how="cross")])


def planned_evidence(failures: pl.DataFrame, planned: pl.DataFrame | None,
                     window: timedelta = timedelta(minutes=30)) -> pl.DataFrame:
    """``event_id`` of the failure events (:func:`failure_events`) that are the maintenance's work, not failure
    evidence: logged while their node was in planned maintenance (``planned``, :func:`planned_maintenance`:
    from a period's start to its end, inclusive, of the periods that claim evidence), unless they continue a
    fault logged before it — a chain of the same node and component, gaps of at most ``window`` (the incident
    window), holding an earlier line outside any planned period: a fault found before the drain began is a
    failure, and its lines in the maintenance are still its lines. Lines from ``LINK_BEFORE`` (30 min) before
    a hardware drain that ends or follows the period (``fault_drain_ts``) are that drain's fault: a fault
    found during the maintenance keeps the node down for it. Lines after the period count again: a GPU still
    lost after the flash is a failure from its first line after it.

    >>> from datetime import datetime, timezone
    >>> t = lambda h, m=0: datetime(2026, 11, 25, h, m, tzinfo=timezone.utc)
    >>> ev = pl.DataFrame({"event_id": [1, 2, 3, 4], "node": ["n1", "n1", "n2", "n2"],
    ...                    "component": ["network", "network", "gpu", "gpu"], "ts": [t(7, 50), t(12, 5), t(5, 55), t(6, 10)]})
    >>> periods = pl.DataFrame({"node": ["n1", "n2"], "start_ts": [t(6), t(6)], "end_ts": [t(12), t(12)]})
    >>> planned_evidence(ev, periods)["event_id"].to_list()
    [1]
    """
    out = pl.DataFrame(schema={"event_id": pl.Int64})
    if planned is None or planned.is_empty() or failures.is_empty():
        return out
    ev = failures.select(pl.col("event_id").cast(pl.Int64), "node", "component",
                         pl.col("ts").cast(pl.Datetime("us", "UTC")))
    claimed_by_fault = pl.col("_pm_fault").is_not_null() & (pl.col("ts") >= pl.col("_pm_fault") - LINK_BEFORE)
    inside = (periods_of(ev.select("event_id", "node", "ts"), planned)
              .filter(pl.col("_pm_claims") & pl.col("ts").is_between(pl.col("_pm_start"), pl.col("_pm_end"))
                      & ~claimed_by_fault)
              .select("event_id").unique().with_columns(pl.lit(True).alias("_in")))
    if inside.is_empty():
        return out
    key = ["node", "component"]
    chained = (ev.join(inside, on="event_id", how="left").with_columns(pl.col("_in").fill_null(False))
               .sort(*key, "ts", "event_id", nulls_last=True)
               .with_columns(((pl.col("ts") - pl.col("ts").shift(1)).over(key) > window).fill_null(True)
                             .cum_sum().over(key).alias("_chain"))
               # lines outside maintenance so far in the chain: > 0 means the fault began before it
               .with_columns((~pl.col("_in")).cast(pl.Int64).cum_sum().over(*key, "_chain").alias("_before")))
    return chained.filter(pl.col("_in") & (pl.col("_before") == 0)).select("event_id").unique().sort("event_id")


def _recoveries(events: pl.DataFrame) -> pl.DataFrame | None:
    """``node``, ``component_class``, ``_up``: the recovery lines (a port back ``ACTIVE``, a Lustre
    client reconnected) among ``events``; None when the events carry no ``kind``."""
    return recovery_lines(events) if "kind" in events.columns else None


def merge_incidents(
    events: pl.DataFrame,
    *,
    window: timedelta = timedelta(minutes=30),
    topology: Mapping[str, Sequence[str] | str] | None = None,
    fabric_min_nodes: int | None = None,
    storage_min_nodes: int | None = None,
    racks: Mapping[str, Sequence[str] | str] | None = None,
    rack_min_nodes: int | None = None,
    nvlink_domains: Mapping[str, Sequence[str] | str] | None = None,
    operator: pl.DataFrame | None = None,
    episode_gap: timedelta = EPISODE_GAP,
    min_episode_runs: int = MIN_EPISODE_RUNS,
    outages: pl.DataFrame | None = None,
    planned: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Merge failure events into incidents (rules in the module docstring).

    Args:
        events: ``core.node_events`` (at least the :data:`EVENT_SCHEMA` columns); non-failure
            events are ignored (see :func:`failure_events`).
        window: the largest gap between consecutive events that still continues an incident.
        topology: leaf switch -> its nodes (list of names or a hostlist string, as in
            ``cluster.yaml`` ``leaf_switches``); without it no leaf-switch incidents are formed, and
            only a burst of link failures (``fabric_min_nodes`` nodes within seconds) is a ``fabric`` one.
        fabric_min_nodes: distinct nodes under one leaf with link failures in one chain that make
            a ``network_switch`` incident (and nodes under no leaf in one burst that make a ``fabric`` one).
        storage_min_nodes: distinct nodes with storage failures in one chain that make one
            cluster-wide ``storage`` incident.
        racks: rack -> its hosts (as ``cluster.yaml`` ``racks``; may name hosts outside the fleet); without it
            no power / cooling rack incidents are formed.
        rack_min_nodes: hosts of one rack (or NVLink domain) out at once with failures of one rack-wide class
            (power, thermal; NVLink for a domain) that make one ``rack`` incident (default :data:`RACK_MIN_NODES`).
        nvlink_domains: NVLink domain -> its hosts (as ``cluster.yaml`` ``nvlink_domains``; may name NVSwitch
            trays outside the fleet); without it NVLink faults are per node (HGX: the node is the domain).
        operator: operator incidents with the :data:`OPERATOR_SCHEMA` columns (``notes`` optional); a
            ``component`` of :data:`~gpusre.models.vocabulary.NOT_A_FAILURE` marks what it overlaps as not
            a failure (rule 6; :func:`~gpusre.models.sources.incidents.parse.catalog_component` maps the
            operator's words to it).
        episode_gap: the largest gap between failures of one health check that keeps its episode.
        min_episode_runs: failed runs that make a health-check episode with no other evidence a fault.
        outages: node outages from Slurm node states (``node``, ``outage_start_ts``, ``outage_end_ts``,
            as :func:`~gpusre.models.reliability.repair_times.node_outages` merges them), or None.
        planned: the nodes' planned-maintenance periods (:func:`planned_maintenance`); their failure
            evidence (:func:`planned_evidence`) is no incident (rule 0). None: no maintenance known.

    Returns:
        ``(incidents, membership)`` with :data:`INCIDENT_SCHEMA` and :data:`MEMBERSHIP_SCHEMA`,
        incidents sorted by ``start_ts``, ``incident_id``.
    """
    # failure_events keeps EVENT_SCHEMA's columns: the part each line names (a NIC's PCI address and port)
    # comes back by event id, for the recoveries to be matched per part (_first_recovery).
    ev = failure_events(events)
    # Rule 0: what a node logs while it is in planned maintenance is the maintenance's work.
    ev = ev.join(planned_evidence(ev, planned, window), on="event_id", how="anti")
    parts = with_parts(events).select(pl.col("event_id").cast(pl.Int64),
                                      *(c for c in PART_COLUMNS if c not in EVENT_SCHEMA))
    ev = ev.join(parts.unique("event_id"), on="event_id", how="left", maintain_order="left")
    messages = events.select("event_id", pl.col("message").cast(pl.String)) if "message" in events.columns else None
    items = (_evidence(ev, messages, episode_gap).join(_leaf_of(topology), on="node", how="left")
             .join(_group_of(racks, "_rack"), on="node", how="left")
             .join(_group_of(nvlink_domains, "_nvdomain"), on="node", how="left"))
    if items.is_empty():
        groups = _aggregate(items.with_columns(pl.lit(None, pl.String).alias("_group"), pl.lit(None, pl.String).alias("_scope"),
                                               pl.lit(None, pl.String).alias("_leaf"), pl.lit(None, pl.String).alias("_wcomp")))
        members = pl.DataFrame(schema={"_group": pl.String, "event_id": pl.Int64})
    else:
        recoveries = _recoveries(events)
        fabric = _fabric_edges(items, fabric_min_nodes, recoveries)
        storage = _wide_edges(items.with_columns(pl.lit("all").alias("_all")), "storage", "_all",
                              fabric.select("_item"), storage_min_nodes, recoveries)
        rack = _rack_edges(items, pl.concat([fabric, storage]).select("_item"), rack_min_nodes, recoveries)
        wide = pl.concat([fabric, storage, rack])
        labels = _components(items.height, [wide.select("_item", "_root"),
                                            _node_edges(items, window, outages, recoveries, wide.select("_item"))])
        items = (items.join(wide.select("_item", "_scope", "_leaf", "_wcomp"), on="_item", how="left", suffix="_w")
                 .drop("_leaf").rename({"_leaf_w": "_leaf"})
                 .with_columns(pl.Series("_group", labels[items["_item"].to_numpy()]).cast(pl.String)))
        # A group of health-check firings alone is an incident only when its check names a component
        # and failed on at least min_episode_runs runs: one failed run is not yet a fault.
        keep = items.group_by("_group").agg(
            (~pl.col("is_hc").all()
             | ((pl.col("n_events").sum() >= min_episode_runs) & (pl.col("component_class") != "other").any()))
            .alias("_keep"))
        items = items.join(keep.filter("_keep").select("_group"), on="_group", how="semi")
        groups = _aggregate(items)
        members = items.select("_group", pl.col("event_ids").alias("event_id")).explode("event_id")
        # Rule 4r: the driver's Xid 154 recovery action joins its GPU's incident.
        groups, members = _with_recovery_actions(groups, members, items, events, window)

    op = _operator_frame(operator) if operator is not None else None
    matched = _match_operator(groups, op) if op is not None else pl.DataFrame(schema={"_group": pl.String, "operator_id": pl.String})

    # Every event group gets the id its evidence gives, labelled or not: an operator label folding it
    # keeps that id (the one yesterday's report printed), see _operator_incidents.
    # Incidents are few (events are many): hashing row by row is cheap.
    groups = groups.with_columns(pl.Series(
        "incident_id", [incident_id(*r) for r in groups.select("component", "start_ts", "_first_node").rows()],
        dtype=pl.String))
    event_incidents = groups.join(matched, on="_group", how="anti")
    event_incidents = event_incidents.with_columns(
        pl.lit("events").alias("label_source"),
        pl.lit(None, dtype=pl.String).alias("operator_id"),
        pl.lit(None, dtype=pl.String).alias("notes"),
    )
    membership_parts = [members.join(event_incidents.select("_group", "incident_id"), on="_group").select("event_id", "incident_id")]
    frames = [event_incidents]

    if op is not None and not op.is_empty():
        folded = groups.join(matched, on="_group", how="inner")
        operator_incidents = _operator_incidents(op, folded)
        frames.append(operator_incidents)
        folding = operator_incidents.filter(pl.col("_group").is_null())
        membership_parts.append(
            members.join(matched, on="_group").join(folding.select("operator_id", "incident_id"), on="operator_id")
            .select("event_id", "incident_id")
        )
        # A "not a failure" row's incidents are each one group's (rule 6).
        membership_parts.append(members.join(operator_incidents.drop_nulls("_group").select("_group", "incident_id"),
                                             on="_group").select("event_id", "incident_id"))

    incidents = pl.concat(
        [f.select(pl.col(c).cast(t) for c, t in INCIDENT_SCHEMA.items()) for f in frames]
    ).sort("start_ts", "incident_id")
    membership = pl.concat(
        [m.select(pl.col(c).cast(t) for c, t in MEMBERSHIP_SCHEMA.items()) for m in membership_parts]
    ).sort("event_id")
    return incidents, membership
