"""Time to detect and time to repair hardware incidents, from Slurm node-state history.

A hardware incident (``marts.hw_incidents``: failure events on its nodes from the node logs) is
**linked** to a node's outage when that outage *starts* within ``before`` (30 min) before to
``window`` (24 h) after the incident's start. An outage is a maximal run of overlapping or touching
node states on one node (DRAIN -> DOWN -> DRAIN for a reboot is one outage); an outage already
running before ``incident start - before`` is not the incident's (the node was out already).

Both are measured from the incident's **first evidence** (``first_evidence_ts``: its first log line),
not from its ``start_ts``: an operator's label may say the incident began before anything was logged
(the humans' start stays the incident's start), but time to detect is the time from the first signal
to the drain. An incident without log evidence is measured from its start.

* **time to detect** = outage start - first evidence (0 when the drain came first, within ``before``);
* **time to repair** = back in service - first evidence: the moment every linked node
  of the incident is back (its merged DOWN/DRAIN outage ended), for every scope — switch and storage
  incidents included. Outages of a node with at most ``CHAIN_GAP`` (30 min) in service between them
  are one (:func:`outage_chains`: a ``DOWN*`` "Not responding" while the node panics, then the drain
  "replace DIMM" set once it rebooted): the node is back after the chain's last outage. An outage still
  open is ``ongoing`` (right-censored: left out of the quantiles, counted in ``ongoing``).
* **Without node states** for an incident (none ingested, or its nodes were never drained) the repair
  end falls back, in this order, to the moment every node logged a *recovery* of the incident's class
  after its own last evidence (a port back to ``Link ACTIVE``, a Lustre client's ``Connection restored``:
  ``catalog/recovery_events.csv``, :func:`recovery_ends`) — of each part the evidence names (the NIC's or
  GPU's PCI address, the port: :data:`PART_COLUMNS`; one rail back ``ACTIVE`` does not repair another) — for a lasting GPU fault (the cause's catalog
  action a GPU reset or a reboot: an Xid 79, :func:`load_lasting_fault_actions`), a reboot of the node
  (the kernel's boot banner or the NVIDIA driver's load line, the ``clears`` column) ends it too, as job
  failure attribution ends that fault, with ``repair_source`` ``reboot`` (a boot ends no link's or file
  system's outage); when health checks saw it, to the first
  evidence of health after each node's last failure (:func:`health_check_ends`: a passing run of the
  check, a reboot, else the check's next run — a failing check's last failure is the last moment the part
  was known broken, so the repair came after it); else, for an incident with nodes whose operator wrote
  its end in ``incidents.csv`` (:func:`operator_label_evidence`), to that end (``repair_source``
  ``operator``: logged lines time a repair to the second, a human to a rounded hour, but the human's
  word beats a guess from the next job); else — for one-node incidents only — to the first
  job on its node that completed afterwards (``recovered_ts`` of ``marts.hw_incidents``; across many
  nodes that waits for the slowest node's next job, which says nothing about the repair).
  ``repair_source`` says which (``node_states``, ``recovery_events``, ``health_check_pass``, ``reboot``,
  ``health_checks``, ``operator``, ``job_completed``), and the summaries count each.
* **A node-state history cut early** (a missing nightly dump: the dumps end before the other data does,
  ``history_end`` of :func:`link_incidents`): a chain still open at the cut is open only because the
  history ends there. Its repair falls back to the same log evidence, taken only at or after the cut
  (before it the node was still out), else it stays ``ongoing``.

**Operator labels.** An operator's label names the incident's cause, not the class of the lines it
folds: an Xid 79 relabelled ``PSU`` (class power) is still a GPU off the bus, drained "Xid 79 GPU
fallen off the bus" and back after its reboot. So for an operator-labelled incident the classes of the
evidence it folded (its members' components: ``evidence_classes``) count as its own, in addition to the
label's, when matching drains (the other-class rule above) and recovery lines (:func:`recovery_ends`).

Summaries per component class (the classes MTBF uses, and ``all``) of the incidents MTBF counts (the
fleet's, ``in_fleet``; an incident only on hosts outside cluster.yaml's node list keeps its row): p50/p90 of both, the mean time
to repair, and a distribution-free 95 % interval for the median time to repair from order statistics
(binomial method; needs at least 6 repaired incidents).

>>> from datetime import datetime, timezone
>>> t = lambda h: datetime(2026, 1, 1, h, tzinfo=timezone.utc)
>>> incidents = pl.DataFrame({"incident_id": ["i1"], "component": ["gpu"], "start_ts": [t(1)], "nodes": [["n1"]]})
>>> states = pl.DataFrame({"node": ["n1", "n1"], "start_ts": [t(2), t(5)], "end_ts": [t(6), t(9)],
...                        "reason_class": ["gpu_xid", "not_responding"]})
>>> link_incidents(incidents, states).select("repair_state", "hours_to_detect", "hours_to_repair").row(0)
('repaired', 1.0, 8.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources

import numpy as np
import polars as pl
from scipy.stats import binom

from gpusre.models.vocabulary import HEALTH_CHECK_KIND, NOT_A_FAILURE, class_of
from gpusre.models.reliability.mtbf import in_fleet
from gpusre.models.failures.drain_reasons import reason_class_components
from gpusre.models.span_islands import span_islands

__all__ = [
    "INCIDENT_REPAIR_SCHEMA",
    "PART_COLUMNS",
    "RECOVERY_END_SCHEMA",
    "REPAIR_TIMES_SCHEMA",
    "OPERATOR_EVIDENCE_SCHEMA",
    "CHAIN_FAULT_SCHEMA",
    "action_clearing_lines",
    "chain_faults",
    "chain_reason_states",
    "first_evidence",
    "health_check_ends",
    "incident_outage_links",
    "join_asof_same_part",
    "link_incidents",
    "median_ci",
    "node_outages",
    "operator_label_evidence",
    "outage_chains",
    "recovery_ends",
    "repair_times",
    "same_part",
    "with_parts",
]

_UTC = pl.Datetime("us", "UTC")
#: The end an ongoing state (null end) is taken to have when merging: after any other.
_ONGOING = datetime(9999, 1, 1, tzinfo=timezone.utc)

#: One row per node outage (merged overlapping/touching node states).
OUTAGE_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(), "outage_start_ts": _UTC, "outage_end_ts": _UTC, "first_reason_class": pl.String(),
    "first_reason": pl.String(), "events": pl.Int64(),
    "reason_classes": pl.List(pl.String()),  # every merged state's reason class, in start order
    "reasons": pl.List(pl.String()),         # every merged state's reason, in the same order
}

#: ``marts.incident_repairs``: one row per hardware incident.
INCIDENT_REPAIR_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(),
    "component": pl.String(),
    "component_class": pl.String(),
    "scope": pl.String(),
    "incident_start_ts": _UTC,
    "first_evidence_ts": _UTC,            # its first log line (null: none); detect and repair run from it
    "last_evidence_ts": _UTC,             # its last log line: with the first, the span of its log evidence
    "nodes": pl.List(pl.String()),
    "linked_nodes": pl.Int64(),
    "drain_start_ts": _UTC,
    "back_in_service_ts": _UTC,
    "hours_to_detect": pl.Float64(),
    "hours_to_repair": pl.Float64(),
    "repair_state": pl.String(),          # repaired | ongoing | not_drained | no_nodes
    "repair_source": pl.String(),         # node_states | recovery_events | health_check_pass | reboot
                                          # | health_checks (the check's next run) | operator (incidents.csv end)
                                          # | job_completed
    "repaired_ts": _UTC,                  # the repair end hours_to_repair runs to
    "drain_reason_class": pl.String(),    # first reason naming a part in the first linked outage's chain
    "drain_reason": pl.String(),          # (outage_chains), else the outage's first reason (Not responding)
    "in_fleet": pl.Boolean(),             # an incident of the fleet (mtbf.in_fleet): the summaries count only these
}

#: ``marts.repair_times``: one row per component class, plus ``all``.
REPAIR_TIMES_SCHEMA: dict[str, pl.DataType] = {
    "component_class": pl.String(),
    "incidents": pl.Int64(),
    "linked_incidents": pl.Int64(),       # with a drain/down in the window
    "repaired": pl.Int64(),
    "ongoing": pl.Int64(),
    "mttd_hours_p50": pl.Float64(),
    "mttd_hours_p90": pl.Float64(),
    "mttr_hours_p50": pl.Float64(),
    "mttr_hours_p90": pl.Float64(),
    "mttr_hours_mean": pl.Float64(),
    "ci_low": pl.Float64(),               # 95 % interval of the median time to repair
    "ci_high": pl.Float64(),
    "from_node_states": pl.Int64(),       # repairs timed by node states; the rest fell back (see repair_source)
    "note": pl.String(),
}


def node_outages(states: pl.DataFrame) -> pl.DataFrame:
    """Merge each node's overlapping or touching states into outages (:data:`OUTAGE_SCHEMA`).

    ``states``: ``node``, ``start_ts``, ``end_ts`` (null = ongoing), optionally ``reason_class``
    and ``reason``. An outage containing an ongoing state is ongoing (null end).
    """
    cols = {"reason_class": pl.String, "reason": pl.String}
    states = states.with_columns(pl.lit(None, t).alias(c) for c, t in cols.items() if c not in states.columns)
    # A state starting after every earlier state of its node ended (an ongoing one never ends) opens an outage.
    return (states.select("node", pl.col("start_ts").cast(_UTC), pl.col("end_ts").cast(_UTC), "reason_class", "reason")
            .sort("node", "start_ts", maintain_order=True)
            .with_columns(pl.col("end_ts").fill_null(_ONGOING).alias("_reach"))
            .with_columns(span_islands(["node"], end="_reach", start="start_ts").alias("_outage"))
            .group_by("node", "_outage", maintain_order=True)
            .agg(pl.col("start_ts").first().alias("outage_start_ts"),
                 pl.when(pl.col("end_ts").null_count() == 0).then(pl.col("end_ts").max()).alias("outage_end_ts"),
                 pl.col("reason_class").first().alias("first_reason_class"),
                 pl.col("reason").first().alias("first_reason"),
                 pl.len().cast(pl.Int64).alias("events"),
                 pl.col("reason_class").alias("reason_classes"), pl.col("reason").alias("reasons"))
            .select(list(OUTAGE_SCHEMA)).cast(OUTAGE_SCHEMA))


#: Outages of one node that follow each other within this gap are one outage for repair purposes
#: (:func:`outage_chains`). After a crash the node reboots, slurmd registers and Slurm returns it to
#: service; the admin (or NHC) drains it for the part it found minutes later: "back" for those minutes
#: was no repair. 30 min is the span within which log evidence is taken to be a drain's fault (the
#: ``before`` of :func:`link_incidents`) and the gap that chains an incident's evidence: a node back
#: for longer has run work again, and a later drain is a separate outage.
CHAIN_GAP = timedelta(minutes=30)


def outage_chains(outages: pl.DataFrame, gap: timedelta = CHAIN_GAP) -> pl.DataFrame:
    """``outages`` (:func:`node_outages`) with the chain each one is part of, for repair times.

    A node's outages that follow each other with at most ``gap`` back in service in between are one
    chain (a ``DOWN*`` "Not responding" while the node panics, then the ``DRAIN "replace DIMM"`` set
    when it is back), unless the next one's drain reasons name only component classes other than the
    chain's last outage whose reasons named any (a GPU drain, then the IB link's: two faults). Adds

    * ``chain_start_ts``: the start of the chain's first outage (with ``node``, the chain's key);
    * ``chain_end_ts``: when the node is back in service after the chain's last outage (null: open);
    * ``chain_reason_class``, ``chain_reason``: the first drain reason, from this outage on in its
      chain, that names a component (the catalog's, not a symptom any fault shows such as ``Not
      responding``); null when none does.
    """
    spec_cc = pl.col("reason_classes").list.eval(_reason_class_of(pl.element())).list.drop_nulls()
    o = outages.sort("node", "outage_start_ts").with_row_index("_oid").with_columns(spec_cc.alias("_ccs"))
    first_spec = (o.select("_oid", "reason_classes", "reasons").explode("reason_classes", "reasons")
                  .filter(_reason_class_of(pl.col("reason_classes")).is_not_null())
                  .group_by("_oid").agg(pl.struct(pl.col("reason_classes").alias("chain_reason_class"),
                                                  pl.col("reasons").alias("chain_reason")).first().alias("_spec")))
    prev_end = pl.col("outage_end_ts").shift().over("node")
    # An open outage absorbs every later state of its node, so a null previous end is the node's first.
    gap_break = prev_end.is_null() | (pl.col("outage_start_ts") - prev_end > gap)
    named = pl.col("_ccs").list.len() > 0
    last_named = pl.when(named).then(pl.col("_ccs")).shift().forward_fill().over("node", "_run")
    class_break = named & last_named.is_not_null() & (pl.col("_ccs").list.set_intersection(last_named).list.len() == 0)
    chain = ["node", "_chain"]
    return (o.join(first_spec, on="_oid", how="left", maintain_order="left")  # shift/fill run in start order
            .with_columns(gap_break.cum_sum().over("node").alias("_run"))
            .with_columns((gap_break | class_break).cum_sum().over("node").alias("_chain"))
            .with_columns(
                pl.col("outage_start_ts").min().over(chain).alias("chain_start_ts"),
                pl.when(pl.col("outage_end_ts").null_count().over(chain) == 0)
                .then(pl.col("outage_end_ts").max().over(chain)).alias("chain_end_ts"),
                pl.col("_spec").backward_fill().over(chain).alias("_spec"))
            .unnest("_spec")
            .drop("_oid", "_ccs", "_run", "_chain"))


#: The outage linking rule :func:`link_incidents` (``marts.incident_repairs``) and
#: :func:`incident_outage_links` (node availability) share, defined once so the two cannot drift: an
#: outage of the incident's own nodes starting this long before its first evidence …
LINK_BEFORE = timedelta(minutes=30)
#: … to this long after it …
LINK_WINDOW = timedelta(hours=24)
#: … or to this long after its last evidence.
LINK_AFTER_END = timedelta(hours=1)


def link_incidents(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    *,
    before: timedelta = LINK_BEFORE,
    window: timedelta = LINK_WINDOW,
    after_end: timedelta = LINK_AFTER_END,
    recoveries: pl.DataFrame | None = None,
    health_checks: pl.DataFrame | None = None,
    history_end: datetime | None = None,
    node_names: Sequence[str] = (),
) -> pl.DataFrame:
    """One row per incident (:data:`INCIDENT_REPAIR_SCHEMA`) with its detection and repair times.

    An outage is the incident's only on one of its own nodes, starting from ``before`` its first
    evidence to ``after_end`` after its last (at most ``window`` after its start), and not drained
    for another class of fault only: a drain whose reasons name only a different component class (a
    GPU Xid drain during a storage outage) belongs to another incident. An operator-labelled
    incident's classes are its label's and those of the evidence it folded (``evidence_classes``,
    module docstring). The node is back in service when the chain of its linked outage ends
    (:func:`outage_chains`).

    Repair end, first that applies: node states; a logged recovery (``recoveries``); health checks;
    the operator's end (``operator_end_ts``, incidents with nodes); the next completed job (one node).

    Args:
        incidents: ``incident_id``, ``component``, ``start_ts``, ``nodes`` (List; empty = no node);
            optionally ``first_evidence_ts`` (:func:`first_evidence`; detect and repair run from it when
            set), ``component_class``, ``scope``, ``end_ts``, ``n_health_check_episodes`` and
            ``recovered_ts`` for the fallbacks (module docstring), and :func:`operator_label_evidence`'s
            ``evidence_classes`` and ``operator_end_ts``.
        states: core.node_states (see :func:`node_outages`); may be empty.
        recoveries: :func:`recovery_ends` output (``incident_id``, ``recovered_ts``, ``repair_source``:
            ``recovery_events``, or ``reboot`` for a lasting GPU fault a boot cleared; when missing,
            ``recovery_events``), or None.
        health_checks: :func:`health_check_ends` output (``incident_id``, ``repaired_ts``,
            ``repair_source``), or None: an incident with health-check episodes but no row then ends at
            the check's next run after its evidence, at :data:`DEFAULT_CHECK_INTERVAL`.
        history_end: where the node-state history ends when its dumps were cut before the other data
            ends (a missing nightly dump; None: not cut). A chain still open then is open only because
            the history ends: nothing after it is known from node states, so its repair falls back to
            the log evidence after that moment (the fallbacks above, in the same order, each only when
            at or after ``history_end``; ``repair_source`` says which), else stays ``ongoing``.
        node_names: cluster.yaml's node list (empty: none). Every incident keeps its row, timed as any
            other — the repair of a spare outside the list is still a repair an SRE may look up —, and
            ``in_fleet`` (:func:`~gpusre.models.reliability.mtbf.in_fleet`, the population MTBF counts)
            says whether :func:`repair_times` and the reports count it.
    """
    outages = _linkable_outages(states)
    if recoveries is None:
        recoveries = pl.DataFrame(schema=RECOVERY_END_SCHEMA)
    if "repair_source" not in recoveries.columns:  # class recoveries only (an older caller)
        recoveries = recoveries.with_columns(pl.lit(_RECOVERY_SOURCE).alias("repair_source"))
    if health_checks is None:
        health_checks = pl.DataFrame(schema=HEALTH_CHECK_END_SCHEMA)
    inc = (_incident_frame(incidents)
           .join(recoveries.select("incident_id", pl.col("recovered_ts").cast(_UTC).alias("_logged_up"),
                                   pl.col("repair_source").cast(pl.String).alias("_logged_source")),
                 on="incident_id", how="left", maintain_order="left")
           .join(health_checks.select("incident_id", pl.col("repaired_ts").cast(_UTC).alias("_hc_end"),
                                      pl.col("repair_source").alias("_hc_source")),
                 on="incident_id", how="left", maintain_order="left"))
    pairs = _linked_pairs(inc, outages, before=before, window=window, after_end=after_end)
    per_incident = (
        pairs.sort("incident_id", "outage_start_ts")
        .group_by("incident_id", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("linked_nodes"),
            pl.col("outage_start_ts").min().alias("drain_start_ts"),
            # Back after the last outage of each node's chain (a drain minutes after the node came back
            # from its crash is the same repair); open while any is.
            pl.when(pl.col("chain_end_ts").null_count() == 0).then(pl.col("chain_end_ts").max())
            .alias("back_in_service_ts"),
            # The chain's part-naming reason ("replace DIMM"), not the "Not responding" of the crash.
            pl.coalesce("chain_reason_class", "first_reason_class").first().alias("drain_reason_class"),
            pl.when(pl.col("chain_reason_class").is_not_null()).then(pl.col("chain_reason"))
            .otherwise(pl.col("first_reason")).first().alias("drain_reason"),
        )
    )
    hours = lambda a, b: (pl.col(a) - pl.col(b)).dt.total_microseconds() / 3.6e9  # noqa: E731
    drained = pl.col("drain_start_ts").is_not_null()
    one_node = pl.col("nodes").list.len().fill_null(0) == 1
    # Health checks without the runs' details (no health_check_ends row): the check's next run after the
    # evidence, at the usual interval — its last failure is the last moment the part was known broken.
    checked = (pl.col("_hc") > 0) | pl.col("_hc_end").is_not_null()
    hc_end = pl.coalesce("_hc_end", pl.max_horizontal("_evidence_end", "_t0") + DEFAULT_CHECK_INTERVAL)
    # The end an operator wrote comes after every logged sign (they time the repair to the line, the
    # operator to a rounded hour) and before the next job (which times the queue, not the repair); it
    # speaks for every node the operator named, so it needs no one-node rule. An end before the
    # incident's first signal says nothing about its repair.
    has_nodes = pl.col("nodes").list.len().fill_null(0) > 0
    operator_end = has_nodes & (pl.col("_operator_end") >= pl.col("_t0")).fill_null(False)
    # The log-evidence fallbacks, in order: (applies, repair end, repair_source).
    fallbacks = [(pl.col("_logged_up").is_not_null(), pl.col("_logged_up"),
                  pl.coalesce("_logged_source", pl.lit(_RECOVERY_SOURCE))),
                 (checked, hc_end, pl.coalesce("_hc_source", pl.lit("health_checks"))),
                 (operator_end, pl.col("_operator_end"), pl.lit(OPERATOR_SOURCE)),
                 (one_node & pl.col("_recovered").is_not_null(), pl.col("_recovered"), pl.lit("job_completed"))]
    # A chain open at a cut history's end: the log evidence after the cut (before it, the node was still out).
    cut_open = drained & pl.col("back_in_service_ts").is_null()
    if history_end is not None:
        after_cut = [(cond & (end >= pl.lit(history_end).cast(_UTC)).fill_null(False), end, src)
                     for cond, end, src in fallbacks]
    else:
        after_cut = [(pl.lit(False), end, src) for _, end, src in fallbacks]
    source = pl.when(cut_open & after_cut[0][0]).then(after_cut[0][2])
    repaired_at = pl.when(cut_open & after_cut[0][0]).then(after_cut[0][1])
    for cond, end, src in after_cut[1:]:
        source, repaired_at = source.when(cut_open & cond).then(src), repaired_at.when(cut_open & cond).then(end)
    source = source.when(drained).then(pl.lit("node_states"))
    repaired_at = repaired_at.when(drained).then(pl.col("back_in_service_ts"))
    for cond, end, src in fallbacks:
        source, repaired_at = source.when(cond).then(src), repaired_at.when(cond).then(end)
    out = inc.join(per_incident, on="incident_id", how="left", maintain_order="left").with_columns(
        pl.col("linked_nodes").fill_null(0),
        hours("drain_start_ts", "_t0").clip(lower_bound=0.0).alias("hours_to_detect"),
        source.alias("repair_source"),
        repaired_at.alias("repaired_ts"),
    ).with_columns(
        hours("repaired_ts", "_t0").clip(lower_bound=0.0).alias("hours_to_repair"),
        pl.when(pl.col("nodes").list.len().fill_null(0) == 0).then(pl.lit("no_nodes"))
        .when(drained & pl.col("back_in_service_ts").is_null() & pl.col("repaired_ts").is_null())
        .then(pl.lit("ongoing"))
        .when(pl.col("repaired_ts").is_not_null()).then(pl.lit("repaired"))
        .otherwise(pl.lit("not_drained")).alias("repair_state"),
        in_fleet(node_names).alias("in_fleet"),
    )
    return out.select(list(INCIDENT_REPAIR_SCHEMA)).cast(INCIDENT_REPAIR_SCHEMA)  # type: ignore[arg-type]


def _incident_frame(incidents: pl.DataFrame) -> pl.DataFrame:
    """The incidents' columns :func:`link_incidents` reads, typed, with the link window's ``_t0``/``_open``."""
    def optional(name: str, dtype: pl.DataType) -> pl.Expr:
        return pl.col(name).cast(dtype) if name in incidents.columns else pl.lit(None, dtype)

    return (incidents.select(
        "incident_id", "component",
        pl.coalesce(optional("component_class", pl.String()), class_of(pl.col("component"))).alias("component_class"),
        optional("scope", pl.String()).alias("scope"),
        pl.col("start_ts").cast(_UTC).alias("incident_start_ts"),
        optional("first_evidence_ts", _UTC).alias("first_evidence_ts"),
        optional("last_evidence_ts", _UTC).alias("last_evidence_ts"), "nodes",
        optional("end_ts", _UTC).alias("_evidence_end"),
        optional("n_health_check_episodes", pl.Int64()).fill_null(0).alias("_hc"),
        optional("recovered_ts", _UTC).alias("_recovered"),
        optional("operator_end_ts", _UTC).alias("_operator_end"),
        optional("evidence_classes", pl.List(pl.String())).alias("_evidence_classes"))
        # Detect and repair run from the first signal (_t0); the link window opens at the earlier of it
        # and an operator's start (the humans may have seen it first).
        .with_columns(pl.coalesce("first_evidence_ts", "incident_start_ts").alias("_t0"),
                      # The classes whose drains are the incident's: its own, and an operator label's folded evidence's.
                      _incident_classes(pl.col("component_class"), pl.col("_evidence_classes")).alias("_classes"))
        .with_columns(pl.min_horizontal("_t0", "incident_start_ts").alias("_open")))


def _incident_classes(component_class: pl.Expr, evidence_classes: pl.Expr) -> pl.Expr:
    """The component classes whose drains and recovery lines are an incident's: its own class and the
    ``evidence_classes`` of an operator label's folded evidence (null: none), without nulls or repeats."""
    return (pl.concat_list(component_class, evidence_classes.fill_null(pl.lit([], pl.List(pl.String))))
            .list.drop_nulls().list.unique().list.sort())


#: ``repair_source`` of a repair ended at the end an operator wrote in ``incidents.csv``.
OPERATOR_SOURCE = "operator"
#: ``marts.hw_incidents.label_source`` of an incident an operator labelled.
_OPERATOR_LABEL = "operator"

#: :func:`operator_label_evidence` output.
OPERATOR_EVIDENCE_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "evidence_classes": pl.List(pl.String()), "operator_end_ts": _UTC}


def operator_label_evidence(incidents: pl.DataFrame, members: pl.DataFrame) -> pl.DataFrame:
    """:data:`OPERATOR_EVIDENCE_SCHEMA`, one row per operator-labelled incident (``label_source`` =
    ``operator``; none without the column):

    * ``evidence_classes``: the component classes of the evidence the label folded (its members'
      components, sorted; empty without evidence) — still the incident's own for drains and recoveries;
    * ``operator_end_ts``: the end the operator wrote, when it is one: ``end_ts`` later than the last
      evidence line, or any ``end_ts`` of an incident without evidence. A labelled incident's end is the
      later of the operator's and its evidence's (``marts.hw_incidents``), so an end no later than the last
      line may be the logs' own and is no operator's statement (null).

    Args:
        incidents: ``incident_id``, ``end_ts``, optionally ``label_source``.
        members: the incidents' events: ``incident_id``, ``ts``, optionally ``component`` (without it no
            classes).
    """
    if "label_source" not in incidents.columns:
        return pl.DataFrame(schema=OPERATOR_EVIDENCE_SCHEMA)
    component = pl.col("component").cast(pl.String) if "component" in members.columns else pl.lit(None, pl.String)
    evidence = (members.select("incident_id", pl.col("ts").cast(_UTC),
                               pl.when(component.is_not_null()).then(class_of(component)).alias("_class"))
                .group_by("incident_id")
                .agg(pl.col("_class").drop_nulls().unique().sort().alias("evidence_classes"),
                     pl.col("ts").max().alias("_last")))
    end = pl.col("end_ts")
    return (incidents.filter(pl.col("label_source") == _OPERATOR_LABEL)
            .select("incident_id", end.cast(_UTC))
            .join(evidence, on="incident_id", how="left")
            .select("incident_id", pl.col("evidence_classes").fill_null(pl.lit([], pl.List(pl.String))),
                    pl.when(pl.col("_last").is_null() | (end > pl.col("_last"))).then(end).alias("operator_end_ts"))
            .sort("incident_id").cast(OPERATOR_EVIDENCE_SCHEMA))  # type: ignore[arg-type]


def _linkable_outages(states: pl.DataFrame) -> pl.DataFrame:
    """:func:`outage_chains` of ``states`` with the component classes their reasons name."""
    return outage_chains(node_outages(states)).with_columns(
        _reason_class_of(pl.col("first_reason_class")).alias("_reason_cc"),
        pl.col("reason_classes").list.eval(_reason_class_of(pl.element())).alias("_reason_ccs"))


def _linked_pairs(inc: pl.DataFrame, outages: pl.DataFrame, *, before: timedelta, window: timedelta,
                  after_end: timedelta, any_class: bool = False) -> pl.DataFrame:
    """One row per incident and node: the node's first outage linked to the incident (see :func:`link_incidents`).
    ``any_class``: leave out the other-class rule (every outage in the window is the incident's)."""
    return (
        inc.explode("nodes").rename({"nodes": "node"}).filter(pl.col("node").is_not_null())
        .join(outages, on="node", how="inner")
        .filter((pl.col("outage_start_ts") >= pl.col("_open") - before)
                & (pl.col("outage_start_ts") <= pl.min_horizontal(
                    pl.col("_t0") + window,
                    pl.max_horizontal("_evidence_end", "_t0") + after_end))
                # Another class's drain is another incident's, unless the outage's drains (merged when
                # they overlap: a GPU ECC drain, then the IB link's) name one of this incident's classes too.
                & (pl.lit(any_class) | pl.col("_reason_cc").is_null()
                   | pl.col("_classes").list.contains(pl.col("_reason_cc"))
                   | (pl.col("_reason_ccs").list.set_intersection(pl.col("_classes")).list.len() > 0)))
        .sort("incident_id", "node", "outage_start_ts")
        .unique(["incident_id", "node"], keep="first", maintain_order=True)  # the node's first outage
    )


#: :func:`incident_outage_links` output.
OUTAGE_LINK_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "component": pl.String(), "component_class": pl.String(),
    "incident_start_ts": _UTC, "node": pl.String(), "outage_start_ts": _UTC, "chain_start_ts": _UTC,
}


def incident_outage_links(
    incidents: pl.DataFrame,
    states: pl.DataFrame,
    *,
    before: timedelta = LINK_BEFORE,
    window: timedelta = LINK_WINDOW,
    after_end: timedelta = LINK_AFTER_END,
    any_class: bool = False,
) -> pl.DataFrame:
    """:data:`OUTAGE_LINK_SCHEMA`: each node outage :func:`link_incidents` links to an incident (one row per
    incident and linked node), the same rule ``marts.incident_repairs`` uses, with the outage's chain
    (:func:`outage_chains`: ``node`` + ``chain_start_ts``) so readers can follow the repair past it.

    Args: as :func:`link_incidents` (``incidents`` needs ``incident_id``, ``component``, ``start_ts``,
    ``nodes``; ``first_evidence_ts``, ``end_ts``, ``component_class`` are used when present).
    ``any_class``: also the outages whose drains name only another component class (the node's outages in
    the incident's window, whatever their reasons say: :func:`chain_faults`' readers ask whether any
    logged fault explains an outage).
    """
    pairs = _linked_pairs(_incident_frame(incidents), _linkable_outages(states),
                          before=before, window=window, after_end=after_end, any_class=any_class)
    return pairs.select(list(OUTAGE_LINK_SCHEMA)).cast(OUTAGE_LINK_SCHEMA)  # type: ignore[arg-type]


#: Reason components any fault shows (a dead node is "Not responding" whatever broke): a drain reason with one
#: of these names no part. Node availability's generic states use the same set.
GENERIC_COMPONENTS = frozenset({"os", "slurm", "other"})


def chain_reason_states(anchors: pl.DataFrame, states: pl.DataFrame, *, anchor: str) -> pl.DataFrame:
    """Each row of ``anchors`` whose chain has a part-naming reason, joined to the state carrying it: the first
    state of its node with the chain's ``chain_reason_class`` and ``chain_reason`` that starts at or after the
    ``anchor`` column (the chain's start, or one outage's start within it) and before ``chain_end_ts``. The one
    definition of "the state that named the part" node availability (rule 1) and :func:`chain_faults` share.

    Args:
        anchors: ``node``, ``anchor``, ``chain_end_ts``, ``chain_reason_class``, ``chain_reason``
            (:func:`outage_chains` rows, one per outage or per chain).
        states: ``node``, ``start_ts``, ``reason_class``, ``reason`` and any columns wanted of the state; its
            ``start_ts`` comes back as ``named_ts``.
    """
    return (anchors.filter(pl.col("chain_reason_class").is_not_null())
            .join(states.rename({"start_ts": "named_ts", "reason_class": "chain_reason_class",
                                 "reason": "chain_reason"}),
                  on=["node", "chain_reason_class", "chain_reason"], nulls_equal=True)
            .filter((pl.col("named_ts") >= pl.col(anchor))
                    & (pl.col("chain_end_ts").is_null() | (pl.col("named_ts") < pl.col("chain_end_ts"))))
            .sort("node", anchor, "named_ts").unique(["node", anchor], keep="first"))


#: :func:`chain_faults` output: one row per outage chain whose reasons name a part.
CHAIN_FAULT_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(), "chain_start_ts": _UTC, "chain_end_ts": _UTC,
    "named_ts": _UTC,                      # start of the state whose reason names the part
    "reason": pl.String(), "reason_class": pl.String(), "reason_component": pl.String(),
    "availability_class": pl.String(),     # that state's (core.node_states: MAINT/REBOOT states are maintenance)
}


def chain_faults(states: pl.DataFrame) -> pl.DataFrame:
    """:data:`CHAIN_FAULT_SCHEMA`: each node outage chain (:func:`outage_chains`, ≤ :data:`CHAIN_GAP` in service
    between) whose reasons name a part, with the first state naming it (the chain's ``chain_reason``: not a
    symptom any fault shows, such as ``Not responding``, an empty reason, ``Kill task failed`` or a reboot
    request) — the state node availability takes a generic state's class from
    (:func:`~gpusre.models.reliability.node_availability.outage_causes`, rule 1).

    Args:
        states: ``core.node_states``: ``node``, ``start_ts``, ``end_ts``, ``reason_class``, ``reason``,
            ``reason_component``, ``availability_class``.
    """
    if states.is_empty():
        return pl.DataFrame(schema=CHAIN_FAULT_SCHEMA)
    st = states.select("node", pl.col("start_ts").cast(_UTC), pl.col("end_ts").cast(_UTC),
                       pl.col("reason_class").cast(pl.String), pl.col("reason").cast(pl.String),
                       pl.col("reason_component").cast(pl.String), pl.col("availability_class").cast(pl.String))
    chains = (outage_chains(node_outages(st)).sort("node", "outage_start_ts")
              .group_by("node", "chain_start_ts", maintain_order=True)
              .agg(pl.col("chain_end_ts").first(), pl.col("chain_reason_class").first(),
                   pl.col("chain_reason").first())
              .filter(pl.col("chain_reason_class").is_not_null()))
    return (chain_reason_states(chains, st.drop("end_ts"), anchor="chain_start_ts")
            .select("node", "chain_start_ts", "chain_end_ts", "named_ts", pl.col("chain_reason").alias("reason"),
                    pl.col("chain_reason_class").alias("reason_class"), "reason_component", "availability_class")
            .cast(CHAIN_FAULT_SCHEMA))  # type: ignore[arg-type]


def _reason_class_of(reason_class: pl.Expr) -> pl.Expr:
    """Component class a drain reason class names (drain-reason catalog); null when the reason names
    none or only a symptom any fault has (Not responding, a reboot, a Slurm error)."""
    mapping = {cls: None if c in GENERIC_COMPONENTS else c for cls, c in reason_class_components().items()}
    component = reason_class.replace_strict(mapping, default=None, return_dtype=pl.String)
    return pl.when(component.is_not_null()).then(class_of(component))


#: How long after a node's last evidence a recovery line still counts as that fault's repair.
RECOVERY_HORIZON = timedelta(days=7)


@lru_cache(maxsize=1)
def _recovery_catalog() -> pl.DataFrame:
    text = resources.files("gpusre.models.catalog").joinpath("recovery_events.csv").read_bytes()
    return pl.read_csv(text, schema_overrides={"component_class": pl.String, "clears": pl.String})


def load_recovery_kinds() -> pl.DataFrame:
    """``kind``, ``component_class``: event kinds that say a node recovered from a fault of that class
    (the ``recovery`` rows of ``catalog/recovery_events.csv``)."""
    return _recovery_catalog().filter(pl.col("evidence") == "recovery").select("kind", "component_class")


#: Prefix of a ``clears`` token naming a failure by its catalog action (xid.csv / sxid.csv) rather than its kind.
ACTION_TOKEN = "action:"


def load_fault_clears() -> pl.DataFrame:
    """``kind``, ``fault``: which recovery line clears which lasting fault (the ``clears`` column of
    ``catalog/recovery_events.csv``, one row per token). ``fault`` is a failure kind (``ib_link_down``)
    or ``action:<ACTION>`` for every failure event whose catalog action is that (``action:RESTART_BM``:
    an Xid 79 until the node reboots)."""
    cat = _recovery_catalog().select("kind", pl.col("clears").str.split(";").alias("fault")).explode("fault")
    return (cat.with_columns(pl.col("fault").str.strip_chars()).filter(pl.col("fault").str.len_chars() > 0)
            .unique(maintain_order=True))


def load_open_fault_kinds() -> list[str]:
    """Failure kinds that report a lasting state, open until the node logs the recovery that clears it
    (the kind tokens of the ``clears`` column of ``catalog/recovery_events.csv``: a port ``Link DOWN``
    until ``Link ACTIVE``, an NFS server ``not responding`` until ``OK``, an asserted BMC sensor until
    deasserted)."""
    faults = load_fault_clears().get_column("fault")
    return sorted(f for f in set(faults.to_list()) if not f.startswith(ACTION_TOKEN))


def load_lasting_fault_actions() -> list[str]:
    """Catalog actions (xid.csv / sxid.csv) of failures that last until the node logs the recovery that
    clears them (the ``action:`` tokens of the ``clears`` column: a GPU reset or a reboot)."""
    faults = load_fault_clears().get_column("fault")
    return sorted(f.removeprefix(ACTION_TOKEN) for f in set(faults.to_list()) if f.startswith(ACTION_TOKEN))


def load_health_evidence_kinds() -> pl.DataFrame:
    """``kind``, ``evidence``: event kinds that say a node is healthy again whatever the class of its
    failing health check — ``check_pass`` (its health check ran and passed) or ``reboot`` (the node, or
    its GPU driver, started again): the other rows of ``catalog/recovery_events.csv``."""
    health = pl.col("evidence").is_in(list(_HEALTH_EVIDENCE_SOURCE))
    return _recovery_catalog().filter(health).select("kind", "evidence")


#: NHC's usual run interval (Slurm ``HealthCheckInterval``; LBNL NHC's documented cron example is every
#: 5 min): the cadence of a check seen failing only once.
DEFAULT_CHECK_INTERVAL = timedelta(seconds=300)
#: Failure lines of one node this close together are one run of the check (nhc and slurmd both log the
#: same failing run; a run can fail several checks).
SAME_RUN = timedelta(seconds=60)
#: A reboot this long after a node's last failing check is its repair (the same 24 h a drain may follow
#: an incident); later, the node may have run healthy in between and the check's next run is the estimate.
REBOOT_HORIZON = timedelta(hours=24)
#: ``evidence`` of the health rows of recovery_events.csv -> repair_source, strongest first.
_HEALTH_EVIDENCE_SOURCE = {"check_pass": "health_check_pass", "reboot": "reboot"}
_NEXT_RUN_SOURCE = "health_checks"
_SOURCE_RANK = {"health_check_pass": 0, "reboot": 1, _NEXT_RUN_SOURCE: 2}

#: :func:`health_check_ends` output.
HEALTH_CHECK_END_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "repaired_ts": _UTC, "repair_source": pl.String()}


def first_evidence(members: pl.DataFrame) -> pl.DataFrame:
    """``incident_id``, ``first_evidence_ts``, ``last_evidence_ts``: each incident's first and last log line
    (an operator's window from incidents.csv is never log evidence).

    Args:
        members: the incidents' events (``marts.hw_incident_members`` joined to ``core.node_events``):
            ``incident_id``, ``ts``.
    """
    return (members.group_by("incident_id").agg(pl.col("ts").cast(_UTC).min().alias("first_evidence_ts"),
                                                 pl.col("ts").cast(_UTC).max().alias("last_evidence_ts"))
            .sort("incident_id"))


def _next_runs(per_node: pl.DataFrame) -> pl.DataFrame:
    """``incident_id``, ``node``, ``_next_run``: each node's first expected check run after its
    ``last_ts``: the last failing run plus whole cadences, the cadence measured from the episode (the
    lower median gap between its runs: a skipped or unlogged run doubles a gap, never halves one),
    :data:`DEFAULT_CHECK_INTERVAL` when it failed only once. Failure lines within :data:`SAME_RUN` of
    the previous one are one run."""
    key = ["incident_id", "node"]
    us = pl.Int64
    runs = (per_node.select(*key, "last_ts", pl.col("_fails").alias("_t")).explode("_t").drop_nulls("_t")
            .sort(*key, "_t")
            .filter((pl.col("_t").diff().over(key) > SAME_RUN).fill_null(True)))
    gap = pl.col("_t").diff().dt.total_microseconds()
    return (runs.group_by(key)
            .agg(pl.col("last_ts").first(), pl.col("_t").max().alias("_last_run"),
                 gap.drop_nulls().quantile(0.5, interpolation="lower").cast(us).alias("_cadence"))
            .with_columns(pl.col("_cadence").fill_null(int(DEFAULT_CHECK_INTERVAL.total_seconds() * 1e6)))
            .select(*key, (pl.col("_last_run") + pl.duration(microseconds=(
                ((pl.col("last_ts") - pl.col("_last_run")).dt.total_microseconds() // pl.col("_cadence") + 1)
                * pl.col("_cadence")))).alias("_next_run")))


def health_check_ends(evidence: pl.DataFrame, events: pl.DataFrame,
                      kinds: pl.DataFrame | None = None) -> pl.DataFrame:
    """:data:`HEALTH_CHECK_END_SCHEMA`: when each incident that health checks saw fail was repaired.

    A failing check's last failure is the last moment the part was known broken: the repair came
    after it. For each node with a failing check, after its last evidence of the incident (any kind),
    the repair is the first of: a passing run of its health check (``check_pass`` lines, within
    :data:`RECOVERY_HORIZON`); a reboot (``reboot`` lines, within :data:`REBOOT_HORIZON`); else the
    check's next expected run (:func:`_next_runs`). Every line counted is after the node's last
    failure, so no failure followed it. The incident is repaired when its last node is; its
    ``repair_source`` is that node's (``health_check_pass``, ``reboot`` or ``health_checks``). Nodes
    of the incident without a failing check count at their last evidence.

    Args:
        evidence: the incidents' events: ``incident_id``, ``node``, ``ts``, ``kind`` (``health_check``
            = a failing run). Incidents without a failing run are left out.
        events: node events with ``node``, ``ts``, ``kind`` (the health lines among them are used).
        kinds: ``kind``, ``evidence`` (:func:`load_health_evidence_kinds`, the default).
    """
    kinds = load_health_evidence_kinds() if kinds is None else kinds
    ev = evidence.select("incident_id", "node", pl.col("ts").cast(_UTC), "kind").drop_nulls(["node", "ts"])
    checked = ev.filter(pl.col("kind") == HEALTH_CHECK_KIND)["incident_id"].unique()
    ev = ev.filter(pl.col("incident_id").is_in(checked.implode()))
    if ev.is_empty():
        return pl.DataFrame(schema=HEALTH_CHECK_END_SCHEMA)
    per_node = (ev.sort("ts").group_by("incident_id", "node", maintain_order=True)
                .agg(pl.col("ts").max().alias("last_ts"),
                     pl.col("ts").filter(pl.col("kind") == HEALTH_CHECK_KIND).alias("_fails")))
    health = (events.select("node", pl.col("ts").cast(_UTC).alias("_at"), "kind")
              .join(kinds.select("kind", "evidence"), on="kind").sort("_at"))
    per_node = per_node.sort("last_ts")
    for evidence_kind, horizon in (("check_pass", RECOVERY_HORIZON), ("reboot", REBOOT_HORIZON)):
        lines = health.filter(pl.col("evidence") == evidence_kind).select("node", pl.col("_at").alias(evidence_kind))
        per_node = per_node.join_asof(lines, left_on="last_ts", right_on=evidence_kind, by="node",
                                      strategy="forward", tolerance=horizon, allow_exact_matches=False,
                                      check_sortedness=False)
    per_node = per_node.join(_next_runs(per_node), on=["incident_id", "node"], how="left")
    # First sign of health: a passing run, else a reboot, else the check's next run; a node no check
    # watched counts at its last evidence (nothing later is known).
    source = (pl.when(pl.col("check_pass").is_not_null()).then(pl.lit(_HEALTH_EVIDENCE_SOURCE["check_pass"]))
              .when(pl.col("reboot").is_not_null()).then(pl.lit(_HEALTH_EVIDENCE_SOURCE["reboot"]))
              .otherwise(pl.lit(_NEXT_RUN_SOURCE)))
    nodes = per_node.select(
        "incident_id", pl.coalesce("check_pass", "reboot", "_next_run", "last_ts").cast(_UTC).alias("repaired_ts"),
        source.alias("repair_source"),
        source.replace_strict(_SOURCE_RANK, return_dtype=pl.Int64).alias("_rank"))
    # The incident is repaired with its last node; on a tie, the weaker evidence names the source.
    return (nodes.sort("incident_id", "repaired_ts", "_rank").group_by("incident_id", maintain_order=True).last()
            .select(list(HEALTH_CHECK_END_SCHEMA)).cast(HEALTH_CHECK_END_SCHEMA))  # type: ignore[arg-type]


#: The ``core.node_events`` columns that name the part a line is about: the device's PCI address (a NIC's),
#: the GPU's, and the port. An 8-rail node logs a ``Link DOWN`` per NIC: one NIC's ``Link ACTIVE`` is no
#: recovery of another's, nor a GPU's reset of another GPU (:func:`same_part`). A line naming a NIC by its
#: interface only (networkd's ``ibp26s0: Lost carrier``) carries the address the node's kernel lines link
#: that interface to, set at ingest (:mod:`~gpusre.models.sources.syslog.nic_identity`).
PART_COLUMNS: tuple[str, ...] = ("device_pci", "gpu_pci", "port")


def with_parts(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with every :data:`PART_COLUMNS` column as String; one it lacks is null (hand-built events,
    a site whose lines name no part), so that its lines match any part."""
    return frame.with_columns(pl.col(c).cast(pl.String) if c in frame.columns else pl.lit(None, pl.String).alias(c)
                              for c in PART_COLUMNS)


def _port_number(suffix: str = "") -> pl.Expr:
    """The port is a device's port number (``Port: 1`` of an HCA at a PCI address), not a name."""
    return pl.col("device_pci" + suffix).is_not_null() & pl.col("port" + suffix).str.contains(r"^\d+$").fill_null(False)


def same_part(suffix: str) -> pl.Expr:
    """True where a row and the other side of a join (its :data:`PART_COLUMNS` suffixed ``suffix``) name the
    same part: the GPU addresses agree where both carry one, the device addresses too, and the ports where
    both carry one of the same kind — both a device's port number (``Port: 1`` of an HCA), or both a name
    (an interface, ``ibp59s0``; a Lustre target) unless both lines carry a device address, which then says
    which NIC (its ``mlx5_0`` and ``ibp59s0`` are one). The kernel's ``mlx5_0: Port: 1`` and networkd's
    ``ibp59s0`` may be one port: a number and a name are not compared. A column either lacks says
    nothing, so a line that names no part (a reboot, a site's portless ``link down``) matches every part
    of its node. But a line naming its part by a name alone, no address (an interface nothing tied to its
    NIC at ingest, :mod:`~gpusre.models.sources.syslog.nic_identity`: ``ib0`` with no rename line; a
    Lustre target), is the same part as a line carrying an address only where that line names it by the
    same name: which NIC ``ib0`` is, is unknown, and the kernel that printed a part's ``Link DOWN`` with
    its address prints its ``Link ACTIVE`` with it too, so that part needs no guess to be cleared. (Not
    "the node's only NIC down": another NIC may be down without a line of its own, and which parts are
    down is no property of a pair of lines.)"""
    def agree(c: str) -> pl.Expr:
        return pl.col(c).is_null() | pl.col(c + suffix).is_null() | (pl.col(c) == pl.col(c + suffix))
    number, other_number = _port_number(), _port_number(suffix)
    both_devices = pl.col("device_pci").is_not_null() & pl.col("device_pci" + suffix).is_not_null()
    compared = (number & other_number) | (~number & ~other_number & ~both_devices)
    placed, other_placed = _addressed(), _addressed(suffix)
    unplaced = ~placed & pl.col("port").is_not_null()
    other_unplaced = ~other_placed & pl.col("port" + suffix).is_not_null()
    same_name = (~number & ~other_number & (pl.col("port") == pl.col("port" + suffix))).fill_null(False)
    blind = (unplaced & other_placed) | (other_unplaced & placed)
    return agree("device_pci") & agree("gpu_pci") & (~compared | agree("port")) & (~blind | same_name)


def _addressed(suffix: str = "") -> pl.Expr:
    """The line carries a PCI address (a NIC's or a GPU's): it identifies its part by address."""
    return pl.col("device_pci" + suffix).is_not_null() | pl.col("gpu_pci" + suffix).is_not_null()


def join_asof_same_part(left: pl.DataFrame, right: pl.DataFrame, *, left_on: str, right_on: str, by: list[str],
                        strategy: str, **options: object) -> pl.DataFrame:
    """``left.join_asof(right, ...)`` by ``by`` where the matched ``right`` row names the same part as the
    ``left`` row (:func:`same_part`): each row's nearest line about its own part, or one naming no part.

    Both frames carry the :data:`PART_COLUMNS` (:func:`with_parts`); ``right``'s are not returned. As-of
    joins need equal keys, so the rows are grouped by which part columns they carry and whether the port
    is a device's number (a handful of shapes: a NIC line carries its PCI address and port, a reboot none)
    and each pair of shapes is joined by the columns :func:`same_part` compares for it; a left row keeps
    its nearest match over the pairs.
    ``options``: ``join_asof``'s (``tolerance``, ``allow_exact_matches``).
    """
    device, gpu, port = (1 << i for i in range(len(PART_COLUMNS)))
    number = 1 << len(PART_COLUMNS)
    shape = (pl.sum_horizontal(pl.col(c).is_not_null().cast(pl.Int32) * (1 << i) for i, c in enumerate(PART_COLUMNS))
             + _port_number().cast(pl.Int32) * number)
    brought = [c for c in right.columns if c not in (*by, *PART_COLUMNS)]
    lft = left.with_row_index("_lrow").with_columns(shape.alias("_shape"))
    rgt = right.with_columns(shape.alias("_shape"))
    matches = [right.clear().select(pl.lit(0, pl.UInt32).alias("_lrow"), *brought)]
    for (lshape,), lpart in lft.partition_by("_shape", as_dict=True).items():
        for (rshape,), rpart in rgt.partition_by("_shape", as_dict=True).items():
            both = lshape & rshape
            if _blind(lshape, rshape, port, device | gpu) and (not both & port or (lshape | rshape) & number):
                continue  # a name alone and an addressed line naming it otherwise (or not at all): never one part
            if (lshape & number) != (rshape & number) or (not lshape & number and both & device):
                both &= ~port  # a port number is no name; two names of device-addressed lines: the address decides
            shared = [c for c, bit in zip(PART_COLUMNS, (device, gpu, port), strict=True) if both & bit]
            matches.append(
                lpart.select("_lrow", *by, *shared, left_on).sort(left_on)
                .join_asof(rpart.select(*by, *shared, *brought).sort(right_on), left_on=left_on, right_on=right_on,
                           by=[*by, *shared], strategy=strategy, check_sortedness=False, **options)  # type: ignore[arg-type]
                .select("_lrow", *brought))
    best = (pl.concat(matches).drop_nulls(right_on)
            .sort(right_on, descending=strategy == "backward").unique("_lrow", keep="first"))
    return lft.drop("_shape").join(best, on="_lrow", how="left", maintain_order="left").drop("_lrow")


def _blind(lshape: int, rshape: int, port: int, address: int) -> bool:
    """One shape names its part by a name alone (a port, no address) and the other carries an address
    (:func:`same_part`: they are one part only where both name it by the same name)."""
    def unplaced(shape: int) -> bool:
        return bool(shape & port) and not shape & address
    return (unplaced(lshape) and bool(rshape & address)) or (unplaced(rshape) and bool(lshape & address))


def recovery_lines(events: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``component_class``, ``_up`` and the :data:`PART_COLUMNS`: the recovery lines among node
    events (a port back ``ACTIVE``, a Lustre client reconnected: ``catalog/recovery_events.csv``).

    Args:
        events: node events with ``node``, ``ts``, ``kind``, optionally the part columns (others are ignored).
    """
    return (with_parts(events).select("node", pl.col("ts").cast(_UTC).alias("_up"), "kind", *PART_COLUMNS)
            .join(load_recovery_kinds(), on="kind").select("node", "component_class", "_up", *PART_COLUMNS))


#: :func:`recovery_ends` output.
RECOVERY_END_SCHEMA: dict[str, pl.DataType] = {
    "incident_id": pl.String(), "recovered_ts": _UTC, "repair_source": pl.String()}
#: ``repair_source`` of a repair ended by a class recovery line, and by a reboot clearing a lasting fault
#: (the value :func:`health_check_ends` gives a reboot after a failing check).
_RECOVERY_SOURCE = "recovery_events"
_REBOOT_SOURCE = _HEALTH_EVIDENCE_SOURCE["reboot"]


def action_clearing_lines(events: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``_fault``, ``_boot`` and the :data:`PART_COLUMNS`: the lines among node events that clear a
    lasting fault named by its catalog action (``_fault`` = ``action:<ACTION>``: a ``kernel_boot`` or
    ``driver_loaded`` line clears an Xid 79's ``action:RESTART_BM``), one row per line and action it clears
    (:func:`load_fault_clears`). A line naming no GPU (a boot) clears every GPU of its node.

    Args:
        events: node events with ``node``, ``ts``, ``kind``, optionally the part columns (others are ignored).
    """
    clears = load_fault_clears().filter(pl.col("fault").str.starts_with(ACTION_TOKEN)).rename({"fault": "_fault"})
    return (with_parts(events).select("node", pl.col("ts").cast(_UTC).alias("_boot"), "kind", *PART_COLUMNS)
            .join(clears, on="kind").select("node", "_fault", "_boot", *PART_COLUMNS))


def recovery_ends(evidence: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """:data:`RECOVERY_END_SCHEMA`: when every node of an incident had logged its recovery after its own
    last evidence, within :data:`RECOVERY_HORIZON`; incidents with a node that logged none are left out.

    A node's recovery is its first line after its last evidence that is either a recovery of the
    incident's class (a port back ``ACTIVE``, a Lustre client reconnected: the ``recovery`` rows of
    ``catalog/recovery_events.csv``), or — for an incident whose cause's catalog action is a lasting-fault
    action (:func:`load_lasting_fault_actions`: a GPU reset or a reboot, an Xid 79) — a line that clears
    that action (a ``kernel_boot`` banner, the NVIDIA driver's ``driver_loaded``: the ``clears`` column),
    as job failure attribution ends such a fault. A reboot ends no other incident, nor one of a class with
    recovery lines of its own (network, storage, thermal, power: a port's ``Link DOWN`` stays down through a
    boot). ``repair_source`` is that of the incident's last node (``recovery_events``
    or ``reboot``; on a tie, ``reboot``).

    An operator-labelled incident's evidence rows may carry ``evidence_classes`` (:func:`operator_label_evidence`):
    a recovery of any of those classes ends the row too, as of its ``component_class`` (the label's), and a
    reboot clears its lasting fault unless every one of its classes has recovery lines of its own (an Xid 79
    relabelled ``PSU`` is still a GPU off the bus, cleared by a boot).

    A recovery or clearing line counts for the part it names (:data:`PART_COLUMNS`, :func:`same_part`): when
    the evidence carries the part columns, give one row per incident, node and part with that part's last
    evidence — a node with two NICs down is back when both are; a line or evidence row naming no part
    matches any part of its node (a site whose lines carry no port, a reboot clearing every GPU).

    Args:
        evidence: one row per incident and node (or node and part): ``incident_id``, ``component_class``,
            ``node``, ``last_ts``; optionally ``action`` (``marts.hw_incidents.action``; without it no reboot
            counts), the :data:`PART_COLUMNS` (without them, any recovery of the node's class counts) and
            ``evidence_classes`` (List; null or missing: the row's ``component_class`` only).
        events: node events with ``node``, ``ts``, ``kind``, optionally the part columns (others are ignored).
    """
    rec = recovery_lines(events).sort("_up")
    boots = action_clearing_lines(events).sort("_boot")
    if evidence.is_empty() or (rec.is_empty() and boots.is_empty()):
        return pl.DataFrame(schema=RECOVERY_END_SCHEMA)
    action = pl.col("action").cast(pl.String) if "action" in evidence.columns else pl.lit(None, pl.String)
    # A class with recovery lines of its own (a port's ACTIVE, a file system reconnected) is ended by those only:
    # a boot does not bring a link back, even when the incident's cause names a reset (an operator's class).
    classes_with_recoveries = pl.lit(sorted(load_recovery_kinds()["component_class"].unique().to_list()),
                                     pl.List(pl.String))
    extra = (pl.col("evidence_classes").cast(pl.List(pl.String)) if "evidence_classes" in evidence.columns
             else pl.lit(None, pl.List(pl.String)))
    classes = _incident_classes(pl.col("component_class").cast(pl.String), extra)
    own_recovery = (classes.list.len() > 0) & (classes.list.set_difference(classes_with_recoveries).list.len() == 0)
    lasting = action.is_in(load_lasting_fault_actions()) & ~own_recovery
    # One row per evidence row (_row) and class whose recovery may end it (an operator label's folded classes).
    per_node = (with_parts(evidence).select(
        "incident_id", classes.alias("component_class"), "node", pl.col("last_ts").cast(_UTC),
        pl.when(lasting).then(pl.lit(ACTION_TOKEN) + action).alias("_fault"), *PART_COLUMNS).drop_nulls("node")
        .with_row_index("_row").explode("component_class"))
    # Each part's own recovery: one NIC back ACTIVE is no repair of another NIC still down.
    per_node = join_asof_same_part(per_node, rec, left_on="last_ts", right_on="_up", by=["node", "component_class"],
                                   strategy="forward", tolerance=RECOVERY_HORIZON)
    # Only an incident with a lasting-fault action has a _fault: the others match no reboot.
    per_node = (join_asof_same_part(per_node, boots, left_on="last_ts", right_on="_boot", by=["node", "_fault"],
                                    strategy="forward", tolerance=RECOVERY_HORIZON, allow_exact_matches=False)
                # The node's first recovery; a class recovery at the same moment as the boot names it.
                .with_columns(pl.min_horizontal("_up", "_boot").alias("_end"),
                              pl.when(pl.col("_up").is_not_null() & ~(pl.col("_boot") < pl.col("_up")).fill_null(False))
                              .then(pl.lit(_RECOVERY_SOURCE)).when(pl.col("_boot").is_not_null())
                              .then(pl.lit(_REBOOT_SOURCE)).alias("repair_source"))
                .with_columns((pl.col("repair_source") == _RECOVERY_SOURCE).cast(pl.Int64).alias("_rank"))
                # A row's classes are alternatives: its first recovery of any (a class recovery on a tie).
                .sort("_row", "_end", "_rank", descending=[False, False, True], nulls_last=True)
                .unique("_row", keep="first", maintain_order=True))
    # The incident is repaired with its last node; on a tie, the weaker evidence (the reboot) names the source.
    return (per_node.sort("incident_id", "_end", "_rank", descending=[False, False, True], nulls_last=False)
            .group_by("incident_id", maintain_order=True)
            .agg(pl.col("_end").null_count().alias("_missing"), pl.col("_end").max().alias("recovered_ts"),
                 pl.col("repair_source").last())
            .filter(pl.col("_missing") == 0).select(list(RECOVERY_END_SCHEMA)).sort("incident_id")
            .cast(RECOVERY_END_SCHEMA))  # type: ignore[arg-type]


def median_ci(values: np.ndarray | list[float], level: float = 0.95) -> tuple[float | None, float | None]:
    """Distribution-free interval for the median from order statistics: ``(x_(l), x_(n-l+1))`` with
    the largest ``l`` such that P(Binomial(n, 1/2) < l) <= (1 - level) / 2. (None, None) when n is
    too small for the level (n < 6 at 95 %).

    >>> median_ci([1, 2, 3, 4, 5, 6])
    (1.0, 6.0)
    >>> median_ci([1, 2, 3])
    (None, None)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        return None, None
    alpha = (1 - level) / 2
    # The largest l with P(B <= l - 1) <= alpha: how many of P(B <= k), k = 0 .. n - 1 (rising), are <= alpha
    # (one vectorized call: a loop of scalar cdf calls cost 0.7 s a night over a year's repairs).
    l = int(np.searchsorted(binom.cdf(np.arange(n), n, 0.5), alpha, side="right"))
    if l < 1:
        return None, None
    return float(x[l - 1]), float(x[n - l])


def _summary(component_class: str, part: pl.DataFrame) -> dict[str, object]:
    linked = part.filter(pl.col("drain_start_ts").is_not_null())
    repaired = part.filter(pl.col("repair_state") == "repaired")
    ttr = repaired["hours_to_repair"].to_numpy()
    ttd = linked["hours_to_detect"].to_numpy()
    low, high = median_ci(ttr)
    q = lambda a, p: float(np.quantile(a, p)) if a.size else None  # noqa: E731
    note = None
    if ttr.size == 0:
        note = "no repaired incident"
    elif low is None:
        note = f"{ttr.size} repaired incidents: too few for a 95% interval of the median"
    return {
        "component_class": component_class,
        "incidents": part.height,
        "linked_incidents": linked.height,
        "repaired": repaired.height,
        "ongoing": int((part["repair_state"] == "ongoing").sum()),
        "mttd_hours_p50": q(ttd, 0.5),
        "mttd_hours_p90": q(ttd, 0.9),
        "mttr_hours_p50": q(ttr, 0.5),
        "mttr_hours_p90": q(ttr, 0.9),
        "mttr_hours_mean": float(ttr.mean()) if ttr.size else None,
        "ci_low": low,
        "ci_high": high,
        "from_node_states": int((repaired["repair_source"] == "node_states").sum()),
        "note": note,
    }


def repair_times(linked: pl.DataFrame) -> pl.DataFrame:
    """:data:`REPAIR_TIMES_SCHEMA`: ``all`` first, then one row per component class (by incidents, descending).
    Incidents the operator marked not a failure (incidents.csv) keep their ``marts.incident_repairs`` row but no
    repair time: nothing failed, nothing was repaired. Likewise incidents outside the fleet (``in_fleet``
    false: only on hosts cluster.yaml does not list): MTTR counts the failures MTBF counts."""
    linked = linked.filter(pl.col("component_class").ne_missing(NOT_A_FAILURE))
    if "in_fleet" in linked.columns:
        linked = linked.filter(pl.col("in_fleet").fill_null(True))
    if linked.height == 0:
        return pl.DataFrame(schema=REPAIR_TIMES_SCHEMA)
    linked = linked.with_columns(pl.col("component_class").fill_null("other"))
    rows = [_summary("all", linked)]
    counts = linked.group_by("component_class").len().sort(["len", "component_class"], descending=[True, False])
    for klass in counts["component_class"].to_list():
        rows.append(_summary(klass, linked.filter(pl.col("component_class") == klass)))
    return pl.DataFrame(rows, schema=REPAIR_TIMES_SCHEMA)
