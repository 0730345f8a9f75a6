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
       ``fabric_min_nodes`` distinct nodes is one ``network_switch`` incident (scope ``leaf_switch``).
    2. *Storage*: storage failure events of the whole cluster are chained the same way; a chain
       touching at least ``storage_min_nodes`` nodes is one ``storage`` incident (scope ``cluster``)
       — a Lustre/NFS server outage, not N client faults.
    3. Everything else chains per (node, component): a gap of at most ``window`` (inclusive) between
       consecutive events of the same node and component continues the incident, a longer gap
       starts a new one. GPUs are not part of the key: PCIe AER / pciehp lines carry the port's
       address, not the GPU's, and several GPUs of one node failing together are one node event
       for the SRE; the incident lists every GPU address seen (``gpus``).
    4. *Operator incidents* (``incidents.csv``) take precedence: every event incident that overlaps
       one in time and shares a node (an operator row without nodes covers all nodes) is folded
       into it; the operator's component and root cause label the result (``label_source`` =
       ``operator``). Operator incidents with no matching events are kept (``n_events`` = 0): a
       human saw an outage the logs do not show, and attribution should still see it.

Incident ids are stable across reruns: ``inc-`` + the first 12 hex digits of SHA-1 over component,
first timestamp (ISO-8601 UTC) and first node; operator incidents hash ``operator`` and their id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import polars as pl

from gpusre.models.event_catalog import (
    CAUSE_CLASSES,
    SEVERITY_RANK,
    load_log_patterns,
    load_xid_catalog,
)
from gpusre.models.hostlist import expand_hostlist

__all__ = [
    "EVENT_SCHEMA",
    "FABRIC_COMPONENT",
    "FAILURE_CLASSES",
    "INCIDENT_SCHEMA",
    "MEMBERSHIP_SCHEMA",
    "OPERATOR_SCHEMA",
    "failure_events",
    "incident_id",
    "merge_incidents",
    "operator_incident_id",
    "severity_rank",
]

#: Cause classes whose high-severity events are infrastructure failures (``system_software`` covers
#: file systems, kernel panics and Slurm daemons: infrastructure, though neither GPU nor driver).
FAILURE_CLASSES: tuple[str, ...] = ("hardware", "driver_firmware", "system_software")
assert set(FAILURE_CLASSES) <= CAUSE_CLASSES
#: Incident component of a leaf-switch-wide link loss (not a catalog component: no single log line
#: names the switch, the pattern across nodes does).
FABRIC_COMPONENT = "network_switch"
#: Trailing window over which repeats of an informational-unless-repeated Xid are counted
#: (``xid.csv`` documents ``repeat_threshold`` as "escalate above this count in 24 h").
REPEAT_WINDOW = timedelta(hours=24)

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
#: Output of :func:`merge_incidents` (first frame).
INCIDENT_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "component": pl.String(),
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
}
#: Output of :func:`merge_incidents` (second frame): which incident each failure event belongs to.
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

_MIN_SEVERITY = "high"
_UNKNOWN_RANK = len(SEVERITY_RANK)  # a severity the catalog does not know sorts below "info"


def severity_rank(expr: pl.Expr) -> pl.Expr:
    """Catalog severity rank of ``expr`` (0 = critical); unknown or null severities rank last."""
    return expr.replace_strict(SEVERITY_RANK, default=_UNKNOWN_RANK, return_dtype=pl.Int32)


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
    """Stable id of an operator incident (from its id in ``incidents.csv``)."""
    return _short_hash("operator", operator_id)


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
    repeats = (
        ev.filter(pl.col("kind").is_in(xid_kinds))
        .join(thresholds, on="code", how="inner")
        .sort([*keys, "ts", "event_id"], nulls_last=True)
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
        .select("event_id")
        .with_columns(pl.lit(True).alias("escalated"))
    )
    ev = ev.join(repeats, on="event_id", how="left").with_columns(pl.col("escalated").fill_null(False))
    ev = ev.with_columns(
        pl.when("escalated").then(pl.lit("hardware")).otherwise(pl.col("cause_class")).alias("cause_class"),
        pl.when("escalated").then(pl.lit(_MIN_SEVERITY)).otherwise(pl.col("severity")).alias("severity"),
    )
    relevant = pl.col("cause_class").is_in(list(classes)) & (
        severity_rank(pl.col("severity")) <= SEVERITY_RANK[min_severity]
    )
    return ev.filter(relevant).sort("ts", "event_id")


def _leaf_of(topology: Mapping[str, Sequence[str] | str] | None) -> pl.DataFrame:
    """node -> leaf switch, from leaf -> nodes (a list of names or a Slurm hostlist string)."""
    rows: dict[str, str] = {}
    for leaf, nodes in (topology or {}).items():
        names = expand_hostlist(nodes) if isinstance(nodes, str) else list(nodes)
        for node in names:
            rows.setdefault(node, leaf)  # a node listed under two leaves keeps the first
    return pl.DataFrame({"node": list(rows), "_leaf": list(rows.values())}, schema={"node": pl.String, "_leaf": pl.String})


def _chain(keys: list[str], window: timedelta) -> pl.Expr:
    """Chain number per ``keys``: a new chain starts when the gap to the previous event exceeds ``window``.

    The frame must be sorted by ``keys``, ``ts``, ``event_id``.
    """
    gap = pl.col("ts") - pl.col("ts").shift(1).over(keys)
    return (gap.is_null() | (gap > window)).cast(pl.Int64).cum_sum().over(keys)


def _wide_chains(
    ev: pl.DataFrame, scope_col: str, window: timedelta, min_nodes: int, scope: str, component: str
) -> pl.DataFrame:
    """Event ids of chains (per ``scope_col``) touching >= ``min_nodes`` nodes, with their group key."""
    if ev.is_empty():
        return pl.DataFrame(schema={"event_id": pl.Int64, "_group": pl.String, "_scope": pl.String,
                                    "_component": pl.String, "_leaf_out": pl.String})
    ev = ev.sort(scope_col, "ts", "event_id").with_columns(_chain([scope_col], window).alias("_c"))
    wide = ev.with_columns(pl.col("node").n_unique().over(scope_col, "_c").alias("_n")).filter(pl.col("_n") >= min_nodes)
    return wide.select(
        "event_id",
        pl.concat_str(pl.lit(scope), pl.col(scope_col), pl.col("_c").cast(pl.String), separator="|").alias("_group"),
        pl.lit(scope).alias("_scope"),
        pl.lit(component).alias("_component"),
        (pl.col(scope_col) if scope == "leaf_switch" else pl.lit(None, dtype=pl.String)).alias("_leaf_out"),
    )


def _aggregate(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per ``_group``: span, nodes, GPUs, counts and the worst event's classes."""
    worst = [pl.col("_rank"), pl.col("ts"), pl.col("event_id")]
    first = [pl.col("ts"), pl.col("event_id")]
    return (
        ev.with_columns(severity_rank(pl.col("severity")).alias("_rank"))
        .group_by("_group")
        .agg(
            pl.col("_component").first().alias("component"),
            pl.col("cause_class").sort_by(worst).first(),
            pl.col("severity").sort_by(worst).first(),
            pl.col("action").sort_by(worst).first(),
            pl.col("ts").min().alias("start_ts"),
            pl.col("ts").max().alias("end_ts"),
            pl.col("node").drop_nulls().unique().sort().alias("nodes"),
            pl.col("gpu_pci").drop_nulls().unique().sort().alias("gpus"),
            pl.len().cast(pl.Int64).alias("n_events"),
            pl.col("event_id").sort_by(first).first().alias("first_event_id"),
            pl.col("node").sort_by(first).first().alias("_first_node"),
            pl.col("_scope").first().alias("scope"),
            pl.col("_leaf_out").first().alias("leaf_switch"),
            # The catalog's name for what happened, with the code when it has one ("xid 79").
            pl.when(pl.col("code").is_null())
            .then(pl.col("kind"))
            .otherwise(pl.concat_str(pl.col("kind"), pl.col("code").cast(pl.String), separator=" "))
            .sort_by(worst)
            .first()
            .alias("root_cause"),
        )
    )


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


def merge_incidents(
    events: pl.DataFrame,
    *,
    window: timedelta = timedelta(minutes=30),
    topology: Mapping[str, Sequence[str] | str] | None = None,
    fabric_min_nodes: int = 3,
    storage_min_nodes: int = 3,
    operator: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Merge failure events into incidents (rules in the module docstring).

    Args:
        events: ``core.node_events`` (at least the :data:`EVENT_SCHEMA` columns); non-failure
            events are ignored (see :func:`failure_events`).
        window: the largest gap between consecutive events that still continues an incident.
        topology: leaf switch -> its nodes (list of names or a hostlist string, as in
            ``cluster.yaml`` ``leaf_switches``); without it no fabric incidents are formed.
        fabric_min_nodes: distinct nodes under one leaf with link failures in one chain that make
            a ``network_switch`` incident.
        storage_min_nodes: distinct nodes with storage failures in one chain that make one
            cluster-wide ``storage`` incident.
        operator: operator incidents with the :data:`OPERATOR_SCHEMA` columns (``notes`` optional).

    Returns:
        ``(incidents, membership)`` with :data:`INCIDENT_SCHEMA` and :data:`MEMBERSHIP_SCHEMA`,
        incidents sorted by ``start_ts``, ``incident_id``.
    """
    ev = failure_events(events).join(_leaf_of(topology), on="node", how="left")

    fabric = _wide_chains(ev.filter((pl.col("component") == "network") & pl.col("_leaf").is_not_null()),
                          "_leaf", window, fabric_min_nodes, "leaf_switch", FABRIC_COMPONENT)
    rest = ev.join(fabric, on="event_id", how="anti")
    storage = _wide_chains(rest.filter(pl.col("component") == "storage").with_columns(pl.lit("all").alias("_all")),
                           "_all", window, storage_min_nodes, "cluster", "storage")
    wide = pl.concat([fabric, storage])
    rest = ev.join(wide, on="event_id", how="anti").sort("node", "component", "ts", "event_id")
    local = rest.select(
        "event_id",
        # (events whose log named no host share the node-less group of their component)
        pl.concat_str(pl.lit("node"), pl.col("node").fill_null(""), "component",
                      _chain(["node", "component"], window).cast(pl.String), separator="|").alias("_group"),
        pl.lit("node").alias("_scope"),
        pl.col("component").alias("_component"),
        pl.lit(None, dtype=pl.String).alias("_leaf_out"),
    )
    ev = ev.join(pl.concat([wide, local]), on="event_id", how="inner")
    groups = _aggregate(ev)

    op = _operator_frame(operator) if operator is not None else None
    matched = _match_operator(groups, op) if op is not None else pl.DataFrame(schema={"_group": pl.String, "operator_id": pl.String})

    event_incidents = groups.join(matched, on="_group", how="anti")
    event_incidents = event_incidents.with_columns(
        # Incidents are few (events are many): hashing row by row is cheap.
        pl.Series("incident_id", [incident_id(*r) for r in event_incidents.select("component", "start_ts", "_first_node").rows()],
                  dtype=pl.String),
        pl.lit("events").alias("label_source"),
        pl.lit(None, dtype=pl.String).alias("operator_id"),
        pl.lit(None, dtype=pl.String).alias("notes"),
    )
    membership_parts = [ev.join(event_incidents.select("_group", "incident_id"), on="_group").select("event_id", "incident_id")]
    frames = [event_incidents]

    if op is not None and not op.is_empty():
        op = op.with_columns(pl.col("operator_id").map_elements(operator_incident_id, return_dtype=pl.String).alias("incident_id"))
        folded = groups.join(matched, on="_group", how="inner").with_columns(severity_rank(pl.col("severity")).alias("_rank"))
        worst = [pl.col("_rank"), pl.col("start_ts")]
        by_op = folded.group_by("operator_id").agg(
            pl.col("cause_class").sort_by(worst).first(),
            pl.col("severity").sort_by(worst).first(),
            pl.col("action").sort_by(worst).first(),
            pl.col("start_ts").min().alias("_ev_start"),
            pl.col("end_ts").max().alias("_ev_end"),
            pl.col("nodes").list.explode(keep_nulls=False, empty_as_null=False).alias("_ev_nodes"),
            pl.col("gpus").list.explode(keep_nulls=False, empty_as_null=False).unique().sort().alias("gpus"),
            pl.col("n_events").sum(),
            pl.col("first_event_id").sort_by("start_ts").first(),
            pl.col("leaf_switch").drop_nulls().first(),
        )
        operator_incidents = op.join(by_op, on="operator_id", how="left").select(
            "incident_id",
            pl.col("_op_component").alias("component"),
            # Humans give no cause class; the worst folded event's is the best evidence we have.
            pl.col("cause_class").fill_null("unknown"),
            "severity",
            "action",
            pl.min_horizontal("_op_start", "_ev_start").alias("start_ts"),
            pl.max_horizontal("_op_end", "_ev_end").alias("end_ts"),
            pl.concat_list(pl.col("_op_nodes"), pl.col("_ev_nodes").fill_null(pl.lit([], dtype=pl.List(pl.String))))
            .list.unique().list.sort().alias("nodes"),
            pl.col("gpus").fill_null(pl.lit([], dtype=pl.List(pl.String))),
            pl.col("n_events").fill_null(0),
            "first_event_id",
            pl.lit("operator").alias("scope"),
            "leaf_switch",
            pl.lit("operator").alias("label_source"),
            pl.col("_op_root_cause").alias("root_cause"),
            "operator_id",
            "notes",
        )
        frames.append(operator_incidents)
        membership_parts.append(
            ev.join(matched, on="_group").join(op.select("operator_id", "incident_id"), on="operator_id")
            .select("event_id", "incident_id")
        )

    incidents = pl.concat(
        [f.select(pl.col(c).cast(t) for c, t in INCIDENT_SCHEMA.items()) for f in frames]
    ).sort("start_ts", "incident_id")
    membership = pl.concat(
        [m.select(pl.col(c).cast(t) for c, t in MEMBERSHIP_SCHEMA.items()) for m in membership_parts]
    ).sort("event_id")
    return incidents, membership
