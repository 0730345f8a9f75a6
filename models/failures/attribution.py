"""Job failure attribution: did the infrastructure or the user's code end this job, and what did it cost?

An SRE sees a job end FAILED or NODE_FAIL and cannot look inside it; node events around its end
can. The default rules follow Meta's RSC study (Kokolis et al., HPCA 2025, reliability-facts §1.4),
evaluated in this order for every job (first match wins):

====  =================================================================  ===============  ==========================
rule  condition                                                          attribution      component
====  =================================================================  ===============  ==========================
1     state not a failure (COMPLETED, PREEMPTED, user CANCELLED, running  none             —
      …)
1a    TIMEOUT while a lasting fault (rule 2's) logged on one of its      infrastructure   the fault's
      nodes after its start, within the lookback and more than
      ``clock_skew`` before its end, was still open at the end (no
      recovery of it logged by then): the job hung on it until its
      limit (:data:`HUNG_RULE`)
1b    OUT_OF_MEMORY or TIMEOUT: the job reached its own limit, so a      user             ``host_memory`` /
      failure event near its end is a coincidence (Meta attributes only                   ``user_application``
      FAILED and NODE_FAIL)
1c    a user-application event (rule 5) on a node where the only          user             the event's
      infrastructure evidence (rule 2) is storage or network: a
      file-system or fabric fault does not make a GPU application fault
      (:data:`UNRELATED_TO_APP_ERRORS`)
2     a failure event (:func:`~gpusre.models.failures.hw_incidents.failure_events`  infrastructure   covering incident's, else
      : hardware / driver-firmware / system-software, severity ≥ high)                     the worst event's
      on one of the job's nodes within [end − ``before``, end +
      ``after``], or an incident whose span meets that window on one of
      its nodes; or a lasting fault still open at the end, logged after
      the job started and within :data:`OPEN_FAULT_LOOKBACK` (60 min, or
      the collective timeout if longer) before the end — a port ``Link
      DOWN`` with no ``Link ACTIVE`` before the end (grace below), or a
      GPU fault whose catalog action is a GPU reset or reboot (Xid 79,
      95, 48, 119/120, a fatal NVLink Xid 74 / 144-150, fatal SXids:
      the ``action:`` tokens of
      ``catalog/recovery_events.csv``) with no reboot (kernel boot
      banner or NVIDIA driver load) and no end of a node outage (back
      in service) before the end — and its incident; such a GPU fault
      logged before the job started counts too when no failing health
      check followed it before the start: the node was broken when the
      job got it (:func:`_broken_at_start`)
2b    Slurm took one of the job's nodes out of service for a hardware     infrastructure   the outage's (drain
      reason (:func:`node_state_evidence`: ``DOWN*``/``Not responding``                    reason's) component
      and the operator's ``PSU failure - replace PSU2`` are one outage)
      starting within [end − ``before``, end + ``after``] and not over by
      the job's start (a node given back in service)
2p    its end falls in planned maintenance of one of its nodes (from      planned          ``maintenance``
      ``before`` ahead of the period's start to its end:                                   (cause class
      :func:`~gpusre.models.failures.hw_incidents.planned_maintenance`,                    ``planned_maintenance``)
      the node states and cluster.yaml windows node availability and
      MTBF take out, and a cluster.yaml window's whole span on the
      nodes it names, down or not: a reservation's root cancel or
      requeue) and no infrastructure evidence of its own (rules
      2, 2b: an operator's not-a-failure incident is none) nor user
      evidence (rule 5) names a fault: the maintenance's reboot or
      root cancel ended it (:data:`PLANNED_RULE`). Not a failure: no
      job-success SLI failure, job MTTF, suspect-node or incident kill
2d    a component of a heterogeneous job (``het_job_id``) whose own rule   infrastructure   the sibling's (and its
      rests on no evidence (8, 9, 7, 7b, 7c) and that ended within                          incident, evidence)
      ``clock_skew`` of an infrastructure-attributed sibling: Slurm tore
      it down with the sibling (:data:`HET_SIBLING_RULE`)
3     NODE_FAIL or BOOT_FAIL without evidence                             infrastructure   ``unknown (suspected)``
4a    REQUEUED, and a node of the job logged no line on its end day      unknown          —
      (:data:`NO_LOGS_RULE`)
4     REQUEUED without evidence (a normal requeue: preemption, admin)    none             —
5     a user-application event (Xid 13/31/43, OOM killer…) in the window  user             the event's
7     CANCELLED by root/SlurmUser                                        unknown          —
7b    a node of the job logged no line on its end day                    unknown          —
      (:data:`NO_LOGS_RULE`)
7c    a non-zero exit, and an Xid/SXid code the catalog does not know     unknown          —
      (``cause_class`` ``unknown``) on one of its nodes in the window:
      it may be the GPU's or the code's (:data:`UNCATALOGUED_RULE`)
8     FAILED with a non-zero exit code or a signal (Meta's convention)   user             ``user_application``
9     anything else (FAILED 0:0)                                         unknown          —
====  =================================================================  ===============  ==========================

Absence of evidence counts only where evidence could have been seen (rules 4a, 7b). Rules 4 and 8 rest on
*no* infrastructure evidence, which says nothing when the node logs did not cover the job: without node
logs an Xid 79 that killed a job leaves no event, and the job's exit 1 would blame the user. So they
apply only to a job every one of whose nodes logged at least one line (any line, not only failure
events) on the UTC day of its end — every node, not one: evidence on any of its nodes would have
counted, so a silent node is where the cause may hide. The day is a coarse, set-based test
(``raw.record_days`` holds the nodes that logged per day); a log that stops mid-day still counts as
covering that day (``marts.log_coverage_daily.stopped_nodes`` names those). The other rules rest on
positive evidence — a job limit, a NODE_FAIL, an infrastructure or user-application event, a node
state — and hold with or without logs. Coverage unknown (``log_days`` not given to
:func:`prepare_evidence`, as in unit tests whose events are the whole log) counts every node as covered.

Causality: an event stamped more than ``clock_skew`` before the job started, or an incident over by then,
cannot have killed it (the scheduler gave the job a node back in service); nor can a fault its node
logged a recovery from (``catalog/recovery_events.csv``: a port back ``ACTIVE``, a Lustre client
reconnected) after its last evidence and before the job ended — a recovery of the same part: where
both lines name the NIC's or GPU's PCI address or the port (``core.node_events`` ``device_pci``,
``gpu_pci``, ``port``), they must agree, so one rail back ``ACTIVE`` does not clear another rail of the
node still down, while a line naming none (a reboot, a site's portless ``link down``) answers for every
part of its node — for a link (:data:`GRACE_CLASSES`),
only when the job kept running for :data:`RECOVERY_GRACE` (5 min) after the port came back, or for
the collective timeout (:data:`COLLECTIVE_TIMEOUT`, 30 min, cluster.yaml
``attribution.collective_timeout_min``) when it ran on more than one node: a link flap breaks NCCL's
connections though the port is back in seconds, and a multi-node job hangs on them until its
collective watchdog fires, so a job ending sooner was killed by it (the trade-off is at
:data:`COLLECTIVE_TIMEOUT`) — except a line saying the operations in flight already failed
(``log_patterns.csv`` ``fails_in_flight``: a Lustre eviction, a soft NFS mount's ``timed out``), which
a recovery after it does not clear inside the window: the reconnect ends the outage, it does not replay
the failed operations; an event stamped more than
``clock_skew`` (60 s) after the job ended cannot have killed it either,
so it counts only when it is a *detection* (health check, slurmd error: kinds in
:data:`DETECTION_KINDS`), which lag the failure; the same holds for an incident that started after
the end, unless it holds the job's evidence: a job is the incident of the events its attribution rests on
(on its node, in the incident's span), so a health check 4 min after the end links the job to the
incident of the GPU that fell off the bus 90 s after it, and the incident's kills, the taxonomy and the
attribution agree. The rest of Meta's 5-minute after-window is for those detections.

Node states (rule 2b) are a detection, like a health check: slurmctld marks a dead node ``DOWN*`` when
it stops answering, NHC drains a node after its check fails, so an outage may start up to ``after``
past the job's end. They name a component when the logs hold nothing (a PSU failure powers the node
off before anything is logged), and the outage's reason goes into ``evidence_node_state``. Such an outage that no
logged fault explains is a hardware incident of its own (:func:`~gpusre.models.failures.hw_incidents.node_state_incidents`,
``label_source`` ``node_state``): it meets a job as a detection does (starting up to ``after`` past its end), and
the job keeps this rule (:data:`NODE_STATE_RULE`) with that incident's ``incident_id``, so its lost GPU-hours are the
incident's and MTBF counts the failure that killed it.

Failure states are FAILED, NODE_FAIL, TIMEOUT, OUT_OF_MEMORY, BOOT_FAIL, REQUEUED (earlier instances
from ``core.job_instances``) and CANCELLED by a uid in ``slurm_user_uids``. Evidence is at node
level: Slurm accounting does not say which GPU PCI address a job held, so an Xid on any GPU of a
job's node counts (an over-attribution for jobs sharing a node, the usual case being whole-node
jobs).

The planned rule (2p) sits after the rules of a job's own limits (1a-1c) and before rule 2, but does not
apply when rule 2 or 2b has real evidence: a fault logged on the node (not the maintenance's own lines,
which :func:`prepare_evidence` leaves out: :func:`~gpusre.models.failures.hw_incidents.planned_evidence`)
or a failure incident covering the end still wins; an incident an operator marked not a failure (the
maintenance written in ``incidents.csv``) does not. It covers every interrupted state — NODE_FAIL,
CANCELLED by root/SlurmUser, REQUEUED, FAILED with a signal — but the limits: a TIMEOUT is still the user's.

Lost GPU-hours (infrastructure and planned, 0 otherwise) are what goodput and ETTR charge the interruption
(:func:`~gpusre.models.reliability.training_runs.interruption_losses`): GPUs × the expected work since
the last checkpoint — checkpoint phase unknown: ``t − t²/2Δ`` for ``t < Δ``, else ``Δ/2``, with t the
instance's elapsed time less its own start-up when it restarts its run
(:func:`~gpusre.models.reliability.training_runs.lost_work_expr`) — plus the GPUs × restart overhead
(min(u0, elapsed)) of the instance that restarted the run after it, once that has started (a job never
resubmitted, or whose resubmission is still pending, costs no restart). The runs are known only to
the training-run model, so :func:`attribute_failures_with` estimates each row as a run's first instance
with no restart after it (``n_gpus × E[lost work](elapsed)``), and :func:`with_run_losses` puts in
the run-aware figure where the instance's run is known (the ``failure_marts`` asset). Δ comes per job
from a ``checkpoint_interval_s`` column when the input has one (the site's per-account policy), else
from the argument; the default follows Meta (hourly checkpoints: 30 min lost on average, about
min(runtime, 30 min)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusre.models.vocabulary import (HEALTH_CHECK_KIND, INFRASTRUCTURE, INTERRUPTED_STATES, LOSS_ATTRIBUTIONS,
                                      NODE_FAILURE_STATES, PLANNED, PLANNED_CAUSE_CLASS, PLANNED_COMPONENT, class_of,
                                      is_failure_incident)
from gpusre.models.reliability.training_runs import lost_work_expr
from gpusre.models.failures.hw_incidents import (EVENT_SCHEMA, NODE_STATE_LABEL, as_planned, failure_events,
                                                 periods_of, planned_evidence, severity_rank)
from gpusre.models.logs.event_catalog import SEVERITY_RANK, fails_in_flight_kinds
from gpusre.models.span_islands import span_islands
from gpusre.models.reliability.repair_times import (ACTION_TOKEN, PART_COLUMNS, join_asof_same_part, load_fault_clears,
                                                    load_lasting_fault_actions, load_open_fault_kinds,
                                                    load_recovery_kinds, same_part, with_parts)

__all__ = [
    "ATTRIBUTION_SCHEMA",
    "LINK_RECOVERY_LOOKBACK",
    "minutes_since_link_recovery",
    "COLLECTIVE_TIMEOUT",
    "DETECTION_KINDS",
    "POST_MORTEM_KINDS",
    "HET_SIBLING_RULE",
    "HUNG_RULE",
    "UNCATALOGUED_RULE",
    "LOG_DAYS_SCHEMA",
    "NODE_STATE_EVIDENCE_SCHEMA",
    "GRACE_CLASSES",
    "NO_LOGS_RULE",
    "NOT_A_FAILURE_RULE",
    "NODE_STATE_RULE",
    "OPEN_FAULT_LOOKBACK",
    "PLANNED_RULE",
    "RECOVERY_GRACE",
    "SUSPECTED_COMPONENT",
    "AttributionEvidence",
    "attribute_failures",
    "attribute_failures_with",
    "failure_candidates",
    "node_state_evidence",
    "prepare_evidence",
    "with_run_losses",
]

#: States that are the job's own limits (memory, time): the user's unless hardware says otherwise.
#: Jobs ended by their own limits (vocabulary.LIMIT_STATES): memory, time, and --deadline on a started job.
_LIMIT_STATES = {"OUT_OF_MEMORY": "host_memory", "TIMEOUT": "user_application", "DEADLINE": "user_application"}
SUSPECTED_COMPONENT = "unknown (suspected)"
#: The rule of a job left ``unknown`` because a node of it logged nothing on its end day (rules 4a, 7b):
#: the absence of infrastructure evidence there is no evidence. Reports match it by value.
NO_LOGS_RULE = "no node logs from its nodes at its end"
#: The node-log coverage :func:`prepare_evidence` takes: one row per (node, UTC day) with >= 1 log line.
LOG_DAYS_SCHEMA: dict[str, pl.DataType] = {"node": pl.String(), "day": pl.Date()}
#: Event kinds that report a failure after the fact (so may be stamped after the job they killed ended).
DETECTION_KINDS: tuple[str, ...] = (HEALTH_CHECK_KIND, "slurmd_error")
#: Post-mortem records: the firmware's error records of the previous boot, which the kernel prints when the
#: node boots again (BERT, ``catalog/log_patterns.csv``). Stamped at the boot, they describe the fault that
#: brought the node down, so like a detection they may be later than the end of the job it killed (a node
#: crashes, Slurm marks the job NODE_FAIL, the node reboots and prints the record minutes later).
POST_MORTEM_KINDS: tuple[str, ...] = ("bert_memory_error", "bert_pcie_error", "bert_processor_error", "bert_error")
#: Component classes whose faults do not make a GPU application fault (Xid 13/31/43) or an OOM kill: a
#: job with such user evidence beside only this infrastructure evidence crashed on its own (a GPU,
#: NVLink or host fault can leave Xid 13/43 behind, so those classes keep the job).
UNRELATED_TO_APP_ERRORS: tuple[str, ...] = ("storage", "network")
#: How long a single-node job (multi-node: :data:`COLLECTIVE_TIMEOUT`) must have kept running after its
#: node logged a recovery of a *link* (a port back
#: ``ACTIVE``, a NIC link up) for the recovery to clear the fault: a job that dies within this of the
#: recovery died of the flap. A link drop breaks the job's NCCL/verbs connections even if the port is
#: back seconds later: a queue pair in flight retries ``NCCL_IB_RETRY_CNT`` (7) times at
#: 4.096 µs × 2^``NCCL_IB_TIMEOUT`` (default 20: 4.3 s, ~30 s in all; sites with large fabrics set
#: 22-23: 2-4 min) before NCCL aborts the communicator, and the launcher then tears the job down.
#: Five minutes covers that; a job that ran on for longer (or an hour) after the recovery survived
#: the flap. (Until 2026-12-05 any recovery before the end cleared it: an evaluator's job killed by a
#: 40-s IB flap, ending 20 s after the port came back, was blamed on the user.)
RECOVERY_GRACE = timedelta(minutes=5)
#: Recovery classes whose fault breaks the job's connections, so that :data:`RECOVERY_GRACE` applies.
#: The others' recoveries clear the fault from the moment they are logged: a Lustre client replays its
#: blocked requests on reconnect and an NFS hard mount resumes them, so an I/O fault kills a job when
#: its error reaches the application, before the reconnect; a deasserted thermal or power sensor
#: killed nothing it had not already. A line that says the operations in flight failed (an eviction, a
#: soft mount's timeout: ``fails_in_flight_kinds``) is no blocked I/O: no recovery clears it in the window. (A grace for storage blamed the file system for user crashes
#: of jobs that started just before the client reconnected: simulator scenario ``fabric_heavy``.)
GRACE_CLASSES: tuple[str, ...] = ("network",)
#: How long before a job's end a fault that reports a lasting state (a port ``Link DOWN``, an NFS server
#: ``not responding``, an asserted BMC sensor: the ``clears`` column of ``catalog/recovery_events.csv``)
#: still counts while its node logged no recovery from it before the end. A job hangs on a dead link
#: until its collective times out — PyTorch's NCCL watchdog after 10 min by default, 30 min and more
#: where sites raise it — so its end falls past the 10-min window though the port was down the whole
#: time. (Until 2026-12-05 only lines inside the window counted: an evaluator's job that died 11.5 min
#: into a 12-min leaf-switch outage was blamed on the user.)
OPEN_FAULT_LOOKBACK = timedelta(minutes=60)
#: How long a job on more than one node must have kept running after its node logged a link recovery for
#: the recovery to clear the fault (cluster.yaml ``attribution.collective_timeout_min``; single-node jobs
#: keep :data:`RECOVERY_GRACE`). A flap breaks the NCCL queue pairs between the nodes; NCCL aborts the
#: communicator only when its collective next times out, and the job's launcher tears it down then —
#: PyTorch's watchdog default is 10 min, sites raise it to 30 min and more for large checkpoints. A job
#: on one node has no inter-node collective to hang, so the short grace holds there. The trade-off: a
#: multi-node job that crashes on its own bug within this long after a flap on one of its nodes is
#: charged to the flap (an over-attribution bounded by the flaps' rate); a shorter setting hands the
#: hung jobs to the user. (Until 2026-12-05 :data:`RECOVERY_GRACE` applied to every job: an evaluator's
#: 4-node job whose port came back 40 s into a flap, dying 29 min later when its watchdog fired, was
#: the user's.)
COLLECTIVE_TIMEOUT = timedelta(minutes=30)
#: The rule of a TIMEOUT job whose node had a lasting fault still open at its end (a port down, a GPU off
#: the bus, with no recovery before the end): the job hung on it until its time limit (rule 1a).
HUNG_RULE = "time limit reached while hung on a lasting fault"
#: The rule of a job a hardware outage of its node in Slurm's node states ended (rule 2b), also when that outage
#: is an incident of its own (nothing logged it: hw_incidents rule 7, whose ``incident_id`` the row then carries).
NODE_STATE_RULE = "Slurm node state in window"
#: The rule of a job that planned maintenance of one of its nodes ended, with no fault of its own (rule 2p).
PLANNED_RULE = "planned maintenance on its node"
#: The rule of a heterogeneous-job component torn down with an infrastructure-killed sibling (rule 2d).
HET_SIBLING_RULE = "het-job sibling component killed by the infrastructure"
#: The rule of a job with a non-zero exit and an Xid/SXid code the catalog does not know on its nodes
#: (rule 7c): the code may be the GPU's fault or the application's; nothing says which.
UNCATALOGUED_RULE = "uncatalogued Xid/SXid code on its nodes"
#: Rules that rest on the absence of evidence on the component's own nodes: a het-job component with one
#: of them takes its infrastructure-killed sibling's attribution (rule 2d).
_NO_EVIDENCE_RULES = ("non-zero exit without infrastructure evidence", "no evidence", NO_LOGS_RULE,
                      "cancelled by system without evidence", UNCATALOGUED_RULE)

#: Output of :func:`attribute_failures` (``instance_no`` only when the input has it).
ATTRIBUTION_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "state": pl.String(),
    "end_ts": pl.Datetime("us", "UTC"),
    "n_gpus": pl.Int64(),
    "attribution": pl.String(),
    "rule": pl.String(),
    "component": pl.String(),
    "cause_class": pl.String(),
    "incident_id": pl.String(),
    "evidence_event_ids": pl.List(pl.Int64()),
    "evidence_node_state": pl.String(),
    "evidence_nodes": pl.List(pl.String()),
    "lost_gpu_hours": pl.Float64(),
}

#: The rule of every job that ended in no failure state (not a candidate: completed, a user's cancel, still
#: running): its row depends on the job alone.
NOT_A_FAILURE_RULE = "not a failure"

#: How far back :func:`minutes_since_link_recovery` looks for a link that came back before a job's end.
LINK_RECOVERY_LOOKBACK = timedelta(hours=2)

#: Output of :func:`node_state_evidence`: one row per node outage with a hardware reason.
NODE_STATE_EVIDENCE_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(),
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "component": pl.String(),
    "evidence": pl.String(),
}


def node_state_evidence(states: pl.DataFrame) -> pl.DataFrame:
    """Node outages that are evidence of a hardware failure, from ``core.node_states`` rows.

    An outage is a maximal run of one node's overlapping or touching states: slurmctld's ``DOWN*``
    ``Not responding`` and the reason an operator writes after triage (``PSU failure - replace
    PSU2``) are one outage, because slurmdbd closes the first event when it opens the second. Its
    component is that of its first state whose reason is classified ``hardware``
    (``drain_reasons.csv``); outages without one, or that begin as planned maintenance, are dropped.

    Args:
        states: ``node``, ``state``, ``start_ts``, ``end_ts`` (null = ongoing), ``reason``,
            ``reason_component``, ``availability_class``.

    Returns:
        :data:`NODE_STATE_EVIDENCE_SCHEMA`: the outage's node, start and end (null: ongoing; the node
        back in service), the component, and
        ``evidence`` = ``'<state> "<reason>" since <first state start>'`` of the naming state.
    """
    ongoing = pl.datetime(9999, 1, 1, time_zone="UTC")
    s = states.select(
        "node", "state", "reason", "reason_component", "availability_class",
        pl.col("start_ts").cast(pl.Datetime("us", "UTC")),
        pl.col("end_ts").cast(pl.Datetime("us", "UTC")).fill_null(ongoing),
    ).sort("node", "start_ts", "end_ts", "state", "reason", nulls_last=True)
    # A state opens a new outage unless it starts by the latest end of the node's earlier states.
    s = s.with_columns(span_islands(["node"], end="end_ts", start="start_ts").alias("_outage"))
    hardware = pl.col("availability_class") == "hardware"
    outages = s.group_by("node", "_outage").agg(
        pl.col("start_ts").first(),
        pl.col("end_ts").max(),
        pl.col("availability_class").first().alias("_first_class"),
        pl.col("reason_component").filter(hardware).first().alias("component"),
        pl.format('{} "{}" since {}', "state", pl.col("reason").fill_null(""),
                  pl.col("start_ts").dt.strftime("%Y-%m-%d %H:%M:%SZ")).filter(hardware).first().alias("evidence"),
    )
    return (
        outages.filter(pl.col("component").is_not_null() & (pl.col("_first_class") != "maintenance"))
        .with_columns(pl.when(pl.col("end_ts") < ongoing).then(pl.col("end_ts")).alias("end_ts"))
        .sort("node", "start_ts")
        .select(*NODE_STATE_EVIDENCE_SCHEMA)
        .cast(NODE_STATE_EVIDENCE_SCHEMA)  # type: ignore[arg-type]
    )


def _optional(jobs: pl.DataFrame, name: str, dtype: pl.DataType) -> pl.Expr:
    """Column ``name`` cast to ``dtype``, or nulls when the frame lacks it (e.g. core.job_instances)."""
    return pl.col(name).cast(dtype) if name in jobs.columns else pl.lit(None, dtype=dtype)


#: The event columns the attribution reads: :data:`EVENT_SCHEMA` and the part the line names (PART_COLUMNS).
_EVENT_COLUMNS: tuple[str, ...] = (*EVENT_SCHEMA, *(c for c in PART_COLUMNS if c not in EVENT_SCHEMA))


def _indexed(events: pl.DataFrame) -> pl.DataFrame:
    """``events`` (:data:`_EVENT_COLUMNS`; part columns it lacks are null) sorted by (node, ts, event_id) with
    their position ``_i``: each node's events are a contiguous index range (for :func:`_events_near`)."""
    return with_parts(events).select(*_EVENT_COLUMNS).sort("node", "ts", "event_id").with_row_index("_i")


def _events_near(job_nodes: pl.DataFrame, ev: pl.DataFrame, before: timedelta, after: timedelta) -> pl.DataFrame:
    """Every (job row, event) pair with the event on the job's node within [end - before, end + after].
    ``ev``: events as :func:`_indexed` returns them.

    A join on node followed by a time filter materializes jobs × events per node; instead the events
    are sorted by (node, ts) so each node's events are a contiguous index range, two as-of joins find
    each job-node's first and last index inside its window, and only those ranges are expanded —
    work proportional to the output, no Python loop.
    """
    # The as-of joins match by node: as a Categorical they compare integer codes, not strings.
    idx = ev.select("_i", pl.col("node").cast(pl.Categorical), "ts")
    # Both window edges rise with the end: one sort by the end orders both (a no-op when the caller sorted).
    jn = job_nodes.sort("end_ts").select(
        "_j",
        pl.col("node").cast(pl.Categorical),
        (pl.col("end_ts") - before).alias("_lo_ts"),
        (pl.col("end_ts") + after).alias("_hi_ts"),
    )
    lo = jn.join_asof(
        idx.rename({"_i": "_lo"}), left_on="_lo_ts", right_on="ts", by="node", strategy="forward",
        # Sorted by ts within each node is what as-of needs. Forward takes the first of tied
        # timestamps and backward the last, so events tied at a window edge stay inside.
        check_sortedness=False,
    ).get_column("_lo")
    hi = jn.join_asof(
        idx.rename({"_i": "_hi"}), left_on="_hi_ts", right_on="ts", by="node", strategy="backward",
        check_sortedness=False,
    ).get_column("_hi")
    # An as-of join keeps the left frame's rows in order: both edges line up with jn's rows, no join needed.
    ranges = jn.select("_j", lo, hi).filter(pl.col("_lo") <= pl.col("_hi"))
    pairs = ranges.select("_j", pl.int_ranges("_lo", pl.col("_hi") + 1, dtype=pl.UInt32).alias("_i")).explode("_i")
    return pairs.join(ev, on="_i").drop("_i")


def _recoveries(events: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``_rec_ts``, ``_class`` and the :data:`PART_COLUMNS`: events saying a node recovered from a
    fault of that class, on the part they name."""
    kinds = load_recovery_kinds()
    return (with_parts(events).select("node", pl.col("ts").cast(pl.Datetime("us", "UTC")).alias("_rec_ts"), "kind",
                                      *PART_COLUMNS)
            .join(kinds.rename({"component_class": "_class"}), on="kind").drop("kind").drop_nulls("node")
            .sort("_rec_ts"))


def _clearings(events: pl.DataFrame, outages: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``_clr_ts``, ``_fault`` and the :data:`PART_COLUMNS`: the moments a node logged a recovery
    that clears lasting faults of ``_fault`` (a kind, or ``action:<ACTION>``:
    :func:`~gpusre.models.reliability.repair_times.load_fault_clears`) on the part it names (none: every
    part, as a reboot), and the ends of its hardware outages (:func:`node_state_evidence`: the node back
    in service), which clear its lasting GPU faults (the ``action:`` ones) as a reboot does."""
    clears = load_fault_clears()
    logged = (with_parts(events).select("node", pl.col("ts").cast(pl.Datetime("us", "UTC")).alias("_clr_ts"), "kind",
                                        *PART_COLUMNS)
              .join(clears, on="kind").select("node", "_clr_ts", pl.col("fault").alias("_fault"), *PART_COLUMNS))
    actions = pl.DataFrame({"_fault": [ACTION_TOKEN + a for a in load_lasting_fault_actions()]}, schema={"_fault": pl.String})
    back = (with_parts(outages.select("node", pl.col("end_ts").cast(pl.Datetime("us", "UTC")).alias("_clr_ts"))
                       .drop_nulls().join(actions, how="cross"))
            if "end_ts" in outages.columns else logged.clear())
    return pl.concat([logged, back]).drop_nulls("node")


def _recovered(pairs: pl.DataFrame, clearings: pl.DataFrame, *, by_kind: bool = True) -> pl.DataFrame:
    """The (``_j``, ``event_id``) of ``pairs`` (job-event pairs with ``node``, ``ts``, ``kind``, ``action``,
    ``end_ts``, the :data:`PART_COLUMNS`) whose node logged a recovery clearing that event
    (:func:`_clearings`) on the same part (:func:`~gpusre.models.reliability.repair_times.same_part`: a
    reset of one GPU clears no other GPU's fault; a reboot, naming none, clears them all) after it and by
    the job's end. ``by_kind=False``: only the clearings by catalog action (the lasting GPU faults), for
    the links whose recovery :func:`_cleared` weighs with a grace."""
    tokens = [pl.concat_str(pl.lit(ACTION_TOKEN), pl.col("action"))] + ([pl.col("kind")] if by_kind else [])
    return (pairs.select("_j", "node", "event_id", "ts", "end_ts", pl.concat_list(tokens).alias("_fault"), *PART_COLUMNS)
            .explode("_fault").drop_nulls("_fault")
            .join(clearings, on=["node", "_fault"], suffix="_clr")
            .filter((pl.col("_clr_ts") > pl.col("ts")) & (pl.col("_clr_ts") <= pl.col("end_ts")) & same_part("_clr"))
            .select("_j", "event_id").unique())


def _broken_at_start(pairs: pl.DataFrame, job_nodes: pl.DataFrame, checks: pl.DataFrame, clearings: pl.DataFrame,
                     clock_skew: timedelta, lookback: timedelta) -> pl.DataFrame:
    """``_j``, ``node``, ``ts``, ``event_id`` of ``pairs`` (job-event pairs with ``start_ts``, ``end_ts``)
    that are lasting GPU faults (a catalog action of a GPU reset or a reboot: Xid 79, a Fabric Manager
    abort, fatal SXids) logged before the job started, and that nothing said was over by its start:
    no reboot or return to service (:func:`_clearings`) by its end, and no failing health check on the
    node after the fault and before the start (``checks``: :data:`DETECTION_KINDS` events, :func:`_indexed`,
    looked up within ``lookback`` before the end on the (job, node) pairs of ``job_nodes`` that hold such a
    fault only: most jobs hold none).

    Why: the node was broken when the scheduler gave it to the job — with Fabric Manager aborted or a
    GPU off the bus, CUDA cannot start — so the job's failure is the fault's, though logged before it
    began. A health check repeats every run while its condition lasts; one that failed after the fault
    and then stopped before the job began saw the node come back (its passing runs are not logged), and
    the evidence before the start stays none. The caller's window bounds how long before the end."""
    gpu_lasting = pl.col("action").is_in(load_lasting_fault_actions()) & ~pl.col("kind").is_in(DETECTION_KINDS)
    before_start = pairs.filter(gpu_lasting & pl.col("start_ts").is_not_null()
                                & (pl.col("ts") < pl.col("start_ts") - clock_skew))
    near_checks = _events_near(job_nodes.join(before_start.select("_j", "node"), on=["_j", "node"], how="semi"),
                               checks, lookback, timedelta(0))
    seen_after = (before_start.select("_j", "node", "event_id", "ts", "start_ts")
                  .join(near_checks.select("_j", "node", pl.col("ts").alias("_check_ts")), on=["_j", "node"])
                  .filter((pl.col("_check_ts") > pl.col("ts")) & (pl.col("_check_ts") < pl.col("start_ts") - clock_skew))
                  .select("_j", "event_id"))
    return (before_start.join(_recovered(before_start, clearings, by_kind=False), on=["_j", "event_id"], how="anti")
            .join(seen_after, on=["_j", "event_id"], how="anti")
            .select("_j", "node", "ts", "event_id").unique(maintain_order=True))


def _failure_times(failures: pl.DataFrame) -> pl.DataFrame:
    """``node``, ``_last``, ``_class`` and the :data:`PART_COLUMNS` of failure events, sorted by time (for
    :func:`_cleared`)."""
    return (with_parts(failures).select("node", pl.col("ts").cast(pl.Datetime("us", "UTC")).alias("_last"),
                                        class_of(pl.col("component")).alias("_class"), *PART_COLUMNS)
            .drop_nulls("node").sort("_last"))


def _cleared(pairs: pl.DataFrame, last: pl.DataFrame, recoveries: pl.DataFrame, after: timedelta,
             grace: timedelta = RECOVERY_GRACE) -> pl.DataFrame:
    """The (``_j``, ``node``, ``_class``, :data:`PART_COLUMNS`) of ``pairs`` (with ``end_ts`` and the part
    columns: null where the part is unknown) whose node logged a recovery of that class on that part after
    its last failure evidence of the class on that part in the window (to ``end_ts + after``: evidence
    logged just after the end is the fault that killed it) and before the job's end — at least the grace
    before it for the classes of :data:`GRACE_CLASSES` (a job dying just after a link came back died of
    the link): the pair's ``_grace`` column when it has one (:data:`COLLECTIVE_TIMEOUT` for multi-node
    jobs), else ``grace`` (:data:`RECOVERY_GRACE`). ``last``: :func:`_failure_times` of the failure events.
    The same part is :func:`~gpusre.models.reliability.repair_times.same_part`'s: one rail's ``Link
    ACTIVE`` does not clear another rail still down; a line naming no part answers for every part."""
    schema = {"_j": pl.UInt32, "node": pl.String, "_class": pl.String, **{c: pl.String for c in PART_COLUMNS}}
    if pairs.is_empty() or recoveries.is_empty():
        return pl.DataFrame(schema=schema)
    p = join_asof_same_part(with_parts(pairs).with_columns((pl.col("end_ts") + after).alias("_hi")), last,
                            left_on="_hi", right_on="_last", by=["node", "_class"], strategy="backward")
    p = join_asof_same_part(p.filter(pl.col("_last").is_not_null()), recoveries,
                            left_on="_last", right_on="_rec_ts", by=["node", "_class"], strategy="forward")
    job_grace = pl.col("_grace") if "_grace" in pairs.columns else pl.lit(grace)
    wait = pl.when(pl.col("_class").is_in(list(GRACE_CLASSES))).then(job_grace).otherwise(pl.lit(timedelta(0)))
    return p.filter(pl.col("_rec_ts").is_not_null() & (pl.col("_rec_ts") + wait <= pl.col("end_ts"))).select(
        pl.col("_j").cast(pl.UInt32), "node", "_class", *PART_COLUMNS)


def _post_mortem_only(incidents: pl.DataFrame) -> pl.Expr:
    """An incident all of whose evidence is post-mortem records (:data:`POST_MORTEM_KINDS`): it starts at the
    boot after the fault, so it meets a job that ended up to ``after`` before it, as a detection does."""
    if "evidence_kinds" not in incidents.columns:
        return pl.lit(False)
    kinds = pl.col("evidence_kinds")
    return (kinds.list.len().fill_null(0) > 0) & kinds.list.eval(pl.element().is_in(POST_MORTEM_KINDS)).list.all()


def _node_state_only(incidents: pl.DataFrame) -> pl.Expr:
    """An incident made of Slurm node states alone (``label_source`` ``node_state``: a hardware outage nothing
    logged, :func:`~gpusre.models.failures.hw_incidents.node_state_incidents`)."""
    if "label_source" not in incidents.columns:
        return pl.lit(False)
    return (pl.col("label_source") == NODE_STATE_LABEL).fill_null(False)


def _by_day(frame: pl.DataFrame, start: str, end: str, lead: timedelta, lag: timedelta,
            ends: tuple[datetime | None, datetime | None]) -> pl.DataFrame:
    """``frame`` once per UTC day (``_day``) of [``start`` - ``lead``, ``end`` + ``lag``] that a job
    end of ``ends`` (first, last) can fall on: the days on which a job can end and still have its
    window meet the row (an incident's span, an outage's start).

    Joined with the job-nodes on (node, day of the job's end) instead of node alone, the rows before
    the window filter are the job-nodes near the evidence, not every job-node times all the evidence
    of its node, which grows with the square of the history. Cut to the jobs' span, an incident
    with a far end (an operator's typo, a year-long drain) adds no more days than the jobs have.
    """
    if ends[0] is None:  # no job ends: no day to meet
        return frame.clear().with_columns(pl.lit(None, dtype=pl.Date).alias("_day"))
    first, last = (pl.lit(t, dtype=pl.Datetime("us", "UTC")) for t in ends)
    return frame.with_columns(
        pl.date_ranges(pl.max_horizontal(pl.col(start) - lead, first).dt.date(),
                       pl.min_horizontal(pl.col(end) + lag, last).dt.date()).alias("_day")
    ).explode("_day")


@dataclass(frozen=True)
class AttributionEvidence:
    """What :func:`attribute_failures_with` weighs against any set of jobs, prepared once by
    :func:`prepare_evidence`: a year's node events are a million rows, and the latest instances and
    the earlier ones of the same night are attributed against the same evidence."""

    #: Failure events (:func:`~gpusre.models.failures.hw_incidents.failure_events`), :func:`_indexed`.
    failures: pl.DataFrame
    #: Failure events of a lasting state (:func:`~gpusre.models.reliability.repair_times.load_open_fault_kinds`,
    #: and the actions of :func:`~gpusre.models.reliability.repair_times.load_lasting_fault_actions`),
    #: :func:`_indexed`.
    open_failures: pl.DataFrame
    #: User-application events, :func:`_indexed`.
    user: pl.DataFrame
    #: Failing health checks and slurmd errors (:data:`DETECTION_KINDS`), :func:`_indexed`.
    checks: pl.DataFrame
    #: :func:`_recoveries` of the events.
    recoveries: pl.DataFrame
    #: :func:`_failure_times` of the failure events.
    failure_times: pl.DataFrame
    #: One row per (incident, node): the incidents' ranking columns.
    incident_nodes: pl.DataFrame
    #: :func:`node_state_evidence` rows (empty without node states).
    outages: pl.DataFrame
    #: :func:`_clearings`: what clears a lasting fault on a node, and when.
    clearings: pl.DataFrame
    #: Xid/SXid events of a code the catalog does not know (``cause_class`` ``unknown``), :func:`_indexed`.
    uncatalogued: pl.DataFrame
    #: :data:`LOG_DAYS_SCHEMA`: the (node, UTC day) pairs the node logs cover; None = unknown (all covered).
    log_days: pl.DataFrame | None = None
    #: :data:`~gpusre.models.failures.hw_incidents.PLANNED_SCHEMA`: the nodes' planned-maintenance periods
    #: (rule 2p); None = none known.
    planned: pl.DataFrame | None = None


def prepare_evidence(
    events: pl.DataFrame,
    incidents: pl.DataFrame,
    node_states: pl.DataFrame | None = None,
    log_days: pl.DataFrame | None = None,
    planned: pl.DataFrame | None = None,
) -> AttributionEvidence:
    """The evidence of :func:`attribute_failures_with` (arguments as :func:`attribute_failures`'s).

    ``planned``: the nodes' planned-maintenance periods
    (:func:`~gpusre.models.failures.hw_incidents.planned_maintenance`): the failure lines logged in them
    (:func:`~gpusre.models.failures.hw_incidents.planned_evidence`) are no evidence, and a job ending in one
    is the maintenance's (rule 2p).

    ``log_days``: :data:`LOG_DAYS_SCHEMA` rows, the (node, UTC day) pairs with at least one node-log
    line (``raw.record_days``; an empty frame when no node log was loaded); the nodes' event days are
    added (a node that logged an event logged a line). ``None``: coverage unknown, every node covered."""
    # failure_events keeps EVENT_SCHEMA's columns: the part each line names comes back by event id.
    parts = with_parts(events).select("event_id", *(c for c in PART_COLUMNS if c not in EVENT_SCHEMA))
    infra = failure_events(events)
    # The maintenance's own lines (a link dropped by the flash on a drained node) are no fault's evidence.
    infra = (infra.join(planned_evidence(infra, planned), on="event_id", how="anti")
             .join(parts.unique("event_id"), on="event_id", how="left", maintain_order="left"))
    if log_days is not None:
        # A node that logged an event that day logged a line (hand-built event tables have no record days).
        log_days = pl.concat([
            log_days.select(pl.col("node").cast(pl.String), pl.col("day").cast(pl.Date)),
            events.select(pl.col("node").cast(pl.String),
                          pl.col("ts").cast(pl.Datetime("us", "UTC")).dt.date().alias("day")),
        ]).drop_nulls().unique()
    outages = node_states if node_states is not None else pl.DataFrame(schema=NODE_STATE_EVIDENCE_SCHEMA)
    # A port down until it is back ACTIVE; a GPU off the bus (an action saying reset or reboot) until the
    # node reboots or is back in service.
    lasting = pl.col("kind").is_in(load_open_fault_kinds()) | pl.col("action").is_in(load_lasting_fault_actions())
    uncatalogued = events.filter((pl.col("cause_class") == "unknown") & pl.col("kind").is_in(["xid", "sxid"]))
    return AttributionEvidence(
        failures=_indexed(infra),
        open_failures=_indexed(infra.filter(lasting)),
        checks=_indexed(infra.filter(pl.col("kind").is_in(DETECTION_KINDS))),
        # The application's own faults (Xid 13/31, OOM kills: severity medium); not Xid 43 "GPU stopped
        # processing" and the like (low: NVIDIA says ignore; a process killed for a network or node
        # fault leaves it behind), which must not outweigh the fault beside it.
        user=_indexed(events.filter(
            (pl.col("cause_class") == "user_application")
            & (severity_rank(pl.col("severity")) <= SEVERITY_RANK["medium"]))),
        recoveries=_recoveries(events),
        failure_times=_failure_times(infra),
        incident_nodes=incidents.select(
            "incident_id", "component", "cause_class", "start_ts", "end_ts", "nodes",
            severity_rank(pl.col("severity")).alias("_rank"),
            (pl.col("label_source") == "operator").alias("_op"),
            # An incident of Slurm node states alone (hw_incidents rule 7) is a detection, as rule 2b's outage:
            # slurmctld marks a dead node DOWN* up to ``after`` past the end of the job it killed.
            (_post_mortem_only(incidents) | _node_state_only(incidents)).alias("_post_mortem"),
            _node_state_only(incidents).alias("_node_state"),
        ).explode("nodes").rename({"nodes": "node", "start_ts": "_inc_start", "end_ts": "_inc_end"}),
        outages=outages,
        clearings=_clearings(events, outages),
        uncatalogued=_indexed(uncatalogued.join(planned_evidence(uncatalogued, planned), on="event_id", how="anti")),
        log_days=log_days,
        planned=as_planned(planned) if planned is not None else None,
    )


def attribute_failures(
    jobs: pl.DataFrame,
    events: pl.DataFrame,
    incidents: pl.DataFrame,
    node_states: pl.DataFrame | None = None,
    log_days: pl.DataFrame | None = None,
    planned: pl.DataFrame | None = None,
    **rules: Any,
) -> pl.DataFrame:
    """Attribute every job's end to infrastructure, planned maintenance, the user, unknown or none (rules in the
    module docstring).

    Args:
        jobs: as :func:`attribute_failures_with`.
        events: ``core.node_events`` (:data:`~gpusre.models.failures.hw_incidents.EVENT_SCHEMA` columns).
        incidents: first output of :func:`~gpusre.models.failures.hw_incidents.merge_incidents`
            (``incident_id``, ``component``, ``cause_class``, ``severity``, ``start_ts``, ``end_ts``,
            ``nodes``, ``label_source``).
        node_states: optional output of :func:`node_state_evidence` (rule 2b); ``None`` when the
            site ingests no Slurm node-state history.
        log_days: the node logs' coverage (:func:`prepare_evidence`; rules 4a, 7b); ``None``: unknown,
            every node counts as covered.
        planned: the nodes' planned-maintenance periods (:func:`prepare_evidence`; rule 2p); ``None``: none.
        rules: the keyword arguments of :func:`attribute_failures_with`.

    Returns:
        As :func:`attribute_failures_with`.
    """
    return attribute_failures_with(jobs, prepare_evidence(events, incidents, node_states, log_days, planned), **rules)


def attribute_failures_with(
    jobs: pl.DataFrame,
    evidence: AttributionEvidence,
    *,
    before: timedelta = timedelta(minutes=10),
    after: timedelta = timedelta(minutes=5),
    slurm_user_uids: Sequence[int] = (0,),
    checkpoint_interval: timedelta = timedelta(minutes=60),
    clock_skew: timedelta = timedelta(seconds=60),
    collective_timeout: timedelta = COLLECTIVE_TIMEOUT,
) -> pl.DataFrame:
    """:func:`attribute_failures` against evidence prepared once (:func:`prepare_evidence`).

    Args:
        jobs: ``core.jobs`` (``job_id``, ``state``, ``nodes`` List[String], ``end_ts``, ``start_ts``,
            ``elapsed_s``, ``n_gpus``; optional ``cancelled_by``, ``exit_code``, ``exit_signal``,
            ``het_job_id``, ``instance_no``) — or ``core.job_instances``, whose rows are keyed by
            ``(job_id, instance_no)``.
        evidence: :func:`prepare_evidence` of the node events, incidents and node states.
        before, after: the evidence window around the job's end.
        slurm_user_uids: uids whose cancellations are the system's (root, SlurmUser).
        checkpoint_interval: Δ, when the input has no ``checkpoint_interval_s`` column.
        clock_skew: how far after the job's end a fault event (not a detection) may be stamped and
            still count, for clocks of the Slurm controller and the node that disagree.
        collective_timeout: how long a multi-node job must have run on after a link recovery for it to
            clear the link's fault (:data:`COLLECTIVE_TIMEOUT`; cluster.yaml
            ``attribution.collective_timeout_min``).

    Returns:
        One row per input job: :data:`ATTRIBUTION_SCHEMA` (plus ``instance_no`` after ``job_id``
        when the input has it); ``evidence_event_ids`` sorted, empty when none; ``lost_gpu_hours``
        of an infrastructure or planned row as if it were its run's first instance with no restart after it
        (:func:`with_run_losses` knows the runs).
    """
    keys = ["job_id", "instance_no"] if "instance_no" in jobs.columns else ["job_id"]
    j = jobs.with_row_index("_j").select(
        "_j",
        *keys,
        pl.col("state").cast(pl.String),
        pl.col("end_ts").cast(pl.Datetime("us", "UTC")),
        pl.col("start_ts").cast(pl.Datetime("us", "UTC")),
        pl.col("n_gpus").cast(pl.Int64).fill_null(0),
        _optional(jobs, "elapsed_s", pl.Int64).alias("elapsed_s"),
        pl.col("nodes").cast(pl.List(pl.String)),
        _optional(jobs, "cancelled_by", pl.Int64).alias("cancelled_by"),
        _optional(jobs, "exit_code", pl.Int64).alias("exit_code"),
        _optional(jobs, "exit_signal", pl.Int64).alias("exit_signal"),
        _optional(jobs, "het_job_id", pl.Int64).alias("_het"),
        _optional(jobs, "checkpoint_interval_s", pl.Float64).fill_null(checkpoint_interval.total_seconds())
        .alias("_interval_s"),
    )
    state = pl.col("state")
    candidate = _candidate(slurm_user_uids)
    # Only candidates can be anything but "none": the evidence joins and the rule chain run over them,
    # the rest (most of a year's jobs: completed) take the "not a failure" row at the end.
    not_candidates = j.filter(~candidate)
    # The link grace (rule 2, :data:`COLLECTIVE_TIMEOUT`): a multi-node job hangs on broken queue pairs
    # until its collective times out; a single-node one has no inter-node collective.
    multi_node = pl.col("nodes").list.drop_nulls().list.n_unique() > 1
    j = j.filter(candidate).with_columns(
        pl.when(multi_node).then(pl.lit(collective_timeout)).otherwise(pl.lit(RECOVERY_GRACE)).alias("_grace"))
    # A lasting fault counts until its recovery, but no further back than this (a job that ran on for
    # longer survived it); never shorter than the collective timeout a multi-node job hangs for.
    lookback = max(OPEN_FAULT_LOOKBACK, collective_timeout)
    job_nodes = (
        j.select("_j", "end_ts", "nodes").explode("nodes").rename({"nodes": "node"})
        .filter(pl.col("node").is_not_null())
        .unique(["_j", "node"])
        .sort("end_ts")  # once, for every _events_near below
    )

    # Infrastructure evidence: failure events in the window.
    near_infra = _events_near(job_nodes, evidence.failures, before, after)
    # A lasting fault (a port DOWN) logged before the window still counts when its node logged no
    # recovery from it before the end (rule 2c; :data:`OPEN_FAULT_LOOKBACK`): the clearing below drops it
    # otherwise, exactly as it drops a recovered fault inside the window.
    open_near = _events_near(job_nodes, evidence.open_failures, lookback, -before)
    # A lasting GPU fault (Xid 79 until a reboot) is over once its node rebooted or came back in service.
    open_near = open_near.join(
        _recovered(open_near.join(j.select("_j", "end_ts"), on="_j"), evidence.clearings, by_kind=False),
        on=["_j", "event_id"], how="anti")
    near_infra = pl.concat([near_infra, open_near]).unique(["_j", "node", "event_id"], maintain_order=True)
    recoveries, failure_times = evidence.recoveries, evidence.failure_times
    # Evidence its node recovered from while the job ran on (a Lustre client reconnected before the end,
    # a port back ACTIVE RECOVERY_GRACE before it) did not kill it: the job survived the fault.
    # Per part: one NIC back ACTIVE does not clear another NIC of the node still down (PART_COLUMNS).
    part_pairs = near_infra.join(j.select("_j", "end_ts", "_grace"), on="_j").select(
        "_j", "node", class_of(pl.col("component")).alias("_class"), "end_ts", "_grace", *PART_COLUMNS).unique()
    cleared = _cleared(part_pairs, failure_times, recoveries, after)
    near_infra = near_infra.with_columns(class_of(pl.col("component")).alias("_class"))
    # A line saying the operations in flight failed (a Lustre eviction, a soft NFS mount's timeout: the
    # catalog's fails_in_flight kinds) stays evidence in the window though its part recovered before the
    # end: the reconnect ended the outage, not the damage — the failed operations are not replayed.
    in_flight = (near_infra.join(j.select("_j", "end_ts"), on="_j")
                 .filter(pl.col("kind").is_in(fails_in_flight_kinds()) & (pl.col("ts") >= pl.col("end_ts") - before))
                 .drop("end_ts"))
    near_infra = (pl.concat([near_infra.join(cleared, on=["_j", "node", "_class", *PART_COLUMNS], how="anti",
                                             nulls_equal=True), in_flight])
                  .unique(["_j", "node", "event_id"], maintain_order=True).drop("_class"))
    # Evidence logged before the job started cannot have killed it: a node the scheduler gave the job
    # was back in service (a fault whose last health check failed minutes before a new job began) —
    # unless it is a lasting GPU fault nothing cleared by the end (:func:`_broken_at_start`).
    near_infra = near_infra.join(j.select("_j", "end_ts", "start_ts"), on="_j")
    broken = _broken_at_start(near_infra, job_nodes, evidence.checks, evidence.clearings, clock_skew, lookback)
    started = (pl.col("start_ts").is_null() | (pl.col("ts") >= pl.col("start_ts") - clock_skew)
               | pl.col("_broken").fill_null(False))
    # The job's evidence: the events that say what killed it.
    infra_ev = (
        near_infra.join(broken.select("_j", "event_id", pl.lit(True).alias("_broken")), on=["_j", "event_id"],
                        how="left")
        .filter(((pl.col("ts") <= pl.col("end_ts") + clock_skew)
                 | pl.col("kind").is_in(DETECTION_KINDS + POST_MORTEM_KINDS)) & started)
    )
    infra_by_job = (
        infra_ev
        .with_columns(
            severity_rank(pl.col("severity")).alias("_rank"),
            (pl.col("ts") - pl.col("end_ts")).abs().alias("_dist"),
        )
        .group_by("_j")
        .agg(
            pl.col("event_id").unique().sort().alias("_infra_ids"),
            # The most severe event, then the one nearest the end, names the component.
            pl.col("component").sort_by("_rank", "_dist", "event_id").first().alias("_ev_component"),
            pl.col("cause_class").sort_by("_rank", "_dist", "event_id").first().alias("_ev_class"),
            pl.col("node").unique().alias("_infra_nodes"),
        )
    )

    ends = j.select(pl.col("end_ts").min().alias("_first"), pl.col("end_ts").max().alias("_last")).row(0)
    job_days = job_nodes.with_columns(pl.col("end_ts").dt.date().alias("_day"))
    # Incidents whose span meets the job's window on one of its nodes (covers operator incidents and
    # long incidents with no event inside the window). Operator labels first, then severity.
    meeting = (
        job_days.join(j.select("_j", pl.col("start_ts").alias("_job_start")), on="_j")
        .join(_by_day(evidence.incident_nodes, "_inc_start", "_inc_end", lead=max(after, clock_skew), lag=before,
                      ends=ends), on=["node", "_day"])
        .drop("_day")
        .filter(
            # An event incident must have started by the end (plus clock skew) to have caused it, and
            # still be going when the job started; an operator's incident is taken at its word over the
            # whole window.
            (pl.col("_inc_start") <= pl.col("end_ts")
             + pl.when(pl.col("_op") | pl.col("_post_mortem")).then(after).otherwise(clock_skew))
            & (pl.col("_inc_end") >= pl.col("end_ts") - before)
            & (pl.col("_op") | pl.col("_job_start").is_null() | (pl.col("_inc_end") >= pl.col("_job_start") - clock_skew))
        )
    )
    # The incidents of the lasting faults still open at the end (rule 2c): the incident that holds the
    # open line on that node, though its span ended before the window (a leaf switch's port-down burst).
    # And the incident of a lasting GPU fault the job's node was left with when it started (:func:`_broken_at_start`).
    open_incidents = (
        pl.concat([open_near.select("_j", "node", "ts", "event_id")
                   .join(j.select("_j", pl.col("start_ts").alias("_job_start")), on="_j")
                   .filter(pl.col("_job_start").is_null() | (pl.col("ts") >= pl.col("_job_start") - clock_skew))
                   .drop("_job_start"),
                   broken.select("_j", "node", "ts", "event_id")])
        .unique(["_j", "node", "event_id"], maintain_order=True).drop("event_id")
        .join(j.select("_j", "end_ts", pl.col("start_ts").alias("_job_start")), on="_j")
        .join(evidence.incident_nodes, on="node")
        .filter(pl.col("ts").is_between(pl.col("_inc_start"), pl.col("_inc_end")))
        .drop("ts")
    )
    # The incidents the job's own evidence belongs to (on its node, within the incident's span): one fault is
    # one incident with one set of kills, so a job killed on a health check logged minutes after its end is
    # the incident that check is a member of, though that incident started after the end — the start rule
    # above keeps only incidents that supplied none of the job's evidence from claiming it. Nor does a
    # recovery of its node drop such an incident (below): the evidence it holds survived that recovery.
    own_incidents = (
        infra_ev.select("_j", "node", "ts")
        .join(j.select("_j", "end_ts", pl.col("start_ts").alias("_job_start")), on="_j")
        .join(evidence.incident_nodes, on="node")
        .filter(pl.col("ts").is_between(pl.col("_inc_start"), pl.col("_inc_end")))
        .drop("ts")
    )
    meeting = (
        pl.concat([meeting.with_columns(pl.lit(False).alias("_own")),
                   open_incidents.select(meeting.columns).with_columns(pl.lit(False).alias("_own")),
                   own_incidents.select(meeting.columns).with_columns(pl.lit(True).alias("_own"))])
        .with_columns(pl.col("_own").any().over("_j", "incident_id"))
        .unique(["_j", "incident_id", "node"], maintain_order=True)
        .with_columns(
            pl.min_horizontal(
                (pl.col("_inc_start") - pl.col("end_ts")).abs(), (pl.col("_inc_end") - pl.col("end_ts")).abs()
            ).alias("_dist")
        )
        .with_columns(class_of(pl.col("component")).alias("_class"))
    )
    # Recovery only matters for the (job, node, class) of incidents that meet the job's window: the node is
    # over it when every part its evidence near the job names recovered (no such evidence: any part).
    inc_pairs = (meeting.select("_j", "node", "_class", "end_ts").unique()
                 .join(part_pairs.drop("end_ts", "_grace"), on=["_j", "node", "_class"], how="left")
                 .join(j.select("_j", "_grace"), on="_j"))
    inc_cleared = (
        inc_pairs.join(_cleared(inc_pairs, failure_times, recoveries, after).with_columns(pl.lit(True).alias("_clr")),
                       on=["_j", "node", "_class", *PART_COLUMNS], how="left", nulls_equal=True)
        .group_by("_j", "node", "_class").agg(pl.col("_clr").fill_null(False).all())
        .filter("_clr"))
    covering = (
        meeting.join(inc_cleared, on=["_j", "node", "_class"], how="left")
        # an incident every one of whose nodes under the job recovered while the job ran on is over, unless
        # it holds evidence of the job's that survived the recovery (an eviction before the reconnect)
        .filter(~(pl.col("_clr").fill_null(False) & ~pl.col("_own")).all().over("_j", "incident_id"))
        .with_columns(pl.col("node").unique().over("_j", "incident_id", mapping_strategy="join").alias("_inc_nodes"))
        .sort("_j", pl.col("_op"), "_rank", "_dist", "incident_id", descending=[False, True, False, False, False])
        .unique("_j", keep="first", maintain_order=True)
        .select(
            "_j",
            "incident_id",
            pl.col("component").alias("_inc_component"),
            pl.col("cause_class").alias("_inc_class"),
            pl.col("_node_state").alias("_inc_node_state"),
            "_inc_nodes",
        )
    )

    # User evidence: user-application events (Xid 13/31/43, OOM killer) in the same window.
    near_user = _events_near(job_nodes, evidence.user, before, after)
    user_by_job = near_user.group_by("_j").agg(
        pl.col("event_id").unique().sort().alias("_user_ids"),
        pl.col("component").sort_by("ts", "event_id").first().alias("_user_component"),
        pl.col("node").unique().alias("_user_nodes"),
    )

    job_span = j.select("_j", "end_ts", pl.col("start_ts").alias("_job_start"))
    since_start = pl.col("_job_start").is_null() | (pl.col("ts") >= pl.col("_job_start") - clock_skew)
    # (rule 1a) A lasting fault logged after the start, before the end (by more than the clock skew: a
    # fault as the limit struck hung nothing), and still open at the end: no recovery of it before then.
    hung_near = (_events_near(job_nodes, evidence.open_failures, lookback, -clock_skew)
                 .join(job_span, on="_j").filter(since_start))
    hung_by_job = (
        hung_near.join(_recovered(hung_near, evidence.clearings), on=["_j", "event_id"], how="anti")
        .with_columns(severity_rank(pl.col("severity")).alias("_rank"), (pl.col("end_ts") - pl.col("ts")).alias("_dist"))
        .group_by("_j").agg(
            pl.col("event_id").unique().sort().alias("_hung_ids"),
            pl.col("node").unique().alias("_hung_nodes"),
            pl.col("component").sort_by("_rank", "_dist", "event_id").first().alias("_hung_component"),
            pl.col("cause_class").sort_by("_rank", "_dist", "event_id").first().alias("_hung_class"),
        )
    )
    # (rule 7c) Xid/SXid codes the catalog does not know, in the window on the job's nodes.
    uncatalogued_by_job = (
        _events_near(job_nodes, evidence.uncatalogued, before, after).join(job_span, on="_j")
        .filter(since_start & (pl.col("ts") <= pl.col("end_ts") + clock_skew))
        .group_by("_j").agg(pl.col("event_id").unique().sort().alias("_unk_ids"))
    )

    # Node-state evidence: a hardware outage of one of the job's nodes starting in the window; the
    # one starting nearest the end names the component.
    outages = evidence.outages.select("node", pl.col("start_ts").alias("_out_start"),
                                      _optional(evidence.outages, "end_ts", pl.Datetime("us", "UTC")).alias("_out_end"),
                                      "component", "evidence")
    outage_by_job = (
        job_days.join(_by_day(outages, "_out_start", "_out_start", lead=after, lag=before, ends=ends), on=["node", "_day"])
        .drop("_day")
        .join(j.select("_j", pl.col("start_ts").alias("_job_start")), on="_j")
        # An outage over by the job's start cannot have killed it: the scheduler gave the job the node
        # back in service (node states and job starts are both the controller's clock: no skew).
        .filter(pl.col("_out_start").is_between(pl.col("end_ts") - before, pl.col("end_ts") + after)
                & (pl.col("_out_end").is_null() | pl.col("_job_start").is_null()
                   | (pl.col("_out_end") > pl.col("_job_start"))))
        .sort("_j", (pl.col("_out_start") - pl.col("end_ts")).abs(), "node")
        .unique("_j", keep="first", maintain_order=True)
        .select("_j", pl.col("component").alias("_state_component"), pl.col("evidence").alias("_state_evidence"),
                pl.col("node").alias("_state_node"))
    )

    # (rule 2p) Jobs that ended in planned maintenance of one of their nodes, from ``before`` ahead of its
    # start (the root cancel as the drain begins, a NODE_FAIL as the reboot's kill is accounted) to its end —
    # every period, also a cluster.yaml window's whole span on a node that stayed up in part of it (a root
    # cancel as the reservation begins ends the job for the maintenance, before the node goes down, if ever).
    if evidence.planned is None or evidence.planned.is_empty():
        planned_jobs = pl.DataFrame(schema={"_j": pl.UInt32})
    else:
        planned_jobs = (periods_of(job_nodes, evidence.planned)
                        .filter((pl.col("end_ts") >= pl.col("_pm_start") - before)
                                & (pl.col("_pm_end").is_null() | (pl.col("end_ts") <= pl.col("_pm_end"))))
                        .select("_j").unique())

    # Jobs a node of which logged no line on the end day: no evidence there is no evidence (rules 4a, 7b).
    if evidence.log_days is None:
        unlogged_jobs = pl.DataFrame(schema={"_j": pl.UInt32})
    else:
        unlogged_jobs = (job_days.select("_j", "node", pl.col("_day").alias("day"))
                         .join(evidence.log_days, on=["node", "day"], how="anti").select("_j").unique())
    j = (j.join(infra_by_job, on="_j", how="left").join(covering, on="_j", how="left")
         .join(user_by_job, on="_j", how="left").join(outage_by_job, on="_j", how="left")
         .join(hung_by_job, on="_j", how="left").join(uncatalogued_by_job, on="_j", how="left")
         .join(unlogged_jobs.with_columns(pl.lit(True).alias("_unlogged")), on="_j", how="left")
         .join(planned_jobs.with_columns(pl.lit(True).alias("_planned")), on="_j", how="left"))
    unlogged = pl.col("_unlogged").fill_null(False)
    has_infra = pl.col("_infra_ids").is_not_null() | pl.col("incident_id").is_not_null()
    has_user = pl.col("_user_ids").is_not_null()
    # Evidence of a fault, not an operator's "not a failure" (the maintenance written in incidents.csv).
    has_fault = pl.col("_infra_ids").is_not_null() | (
        pl.col("incident_id").is_not_null() & is_failure_incident(pl.col("_inc_class")))
    # (rule 2p) A NODE_FAIL in maintenance is its reboot, whatever the application logged before it died.
    in_planned = (pl.col("_planned").fill_null(False) & ~has_fault & pl.col("_state_component").is_null()
                  & (~has_user | state.is_in(NODE_FAILURE_STATES)))
    infra_class = class_of(pl.coalesce("_inc_component", "_ev_component"))
    # (rule 1c) the user's crash on a node the storage/network fault also touched
    user_beside_infra = (
        pl.concat_list(pl.col("_infra_nodes").fill_null(pl.lit([], pl.List(pl.String))),
                       pl.col("_inc_nodes").fill_null(pl.lit([], pl.List(pl.String))))
        .list.set_intersection(pl.col("_user_nodes").fill_null(pl.lit([], pl.List(pl.String)))).list.len() > 0)
    nonzero_exit = (pl.col("exit_code").fill_null(0) != 0) | (pl.col("exit_signal").fill_null(0) != 0)
    limit_component = state.replace_strict(_LIMIT_STATES, default=None, return_dtype=pl.String)

    def decide(attribution: str, rule: pl.Expr | str, component: pl.Expr | str | None, cause: pl.Expr | str | None) -> list[pl.Expr]:
        """The four output expressions of one rule."""
        def lit(v: pl.Expr | str | None) -> pl.Expr:
            return v if isinstance(v, pl.Expr) else pl.lit(v, dtype=pl.String)
        return [pl.lit(attribution), lit(rule), lit(component), lit(cause)]

    rules: list[tuple[pl.Expr, list[pl.Expr]]] = [
        ((state == "TIMEOUT") & pl.col("_hung_ids").is_not_null(),
         decide("infrastructure", HUNG_RULE, pl.col("_hung_component"), pl.col("_hung_class"))),
        (limit_component.is_not_null(), decide("user", "job limit (memory/time)", limit_component, "user_application")),
        (has_infra & has_user & infra_class.is_in(list(UNRELATED_TO_APP_ERRORS)) & user_beside_infra,
         decide("user", "user-application event; the storage/network fault beside it cannot cause it",
                pl.col("_user_component"), "user_application")),
        (in_planned, decide(PLANNED, PLANNED_RULE, PLANNED_COMPONENT, PLANNED_CAUSE_CLASS)),
        (has_infra, decide(INFRASTRUCTURE,
                           pl.when(pl.col("_infra_ids").is_not_null()).then(pl.lit("failure event in window"))
                           # the incident is the node state's (rule 2b's evidence, made an incident)
                           .when(pl.col("_inc_node_state").fill_null(False)).then(pl.lit(NODE_STATE_RULE))
                           .otherwise(pl.lit("incident covers job end")),
                           pl.coalesce("_inc_component", "_ev_component"), pl.coalesce("_inc_class", "_ev_class"))),
        (pl.col("_state_component").is_not_null(),
         decide("infrastructure", NODE_STATE_RULE, pl.col("_state_component"), "hardware")),
        (state.is_in(NODE_FAILURE_STATES), decide("infrastructure", "node failure without evidence", SUSPECTED_COMPONENT, "unknown")),
        (unlogged & (state == "REQUEUED"), decide("unknown", NO_LOGS_RULE, None, None)),
        (state == "REQUEUED", decide("none", "requeued without evidence", None, None)),
        (has_user, decide("user", "user-application event in window", pl.col("_user_component"), "user_application")),
        (state == "CANCELLED", decide("unknown", "cancelled by system without evidence", None, None)),
        (unlogged, decide("unknown", NO_LOGS_RULE, None, None)),
        (nonzero_exit & pl.col("_unk_ids").is_not_null(), decide("unknown", UNCATALOGUED_RULE, None, None)),
        (nonzero_exit, decide("user", "non-zero exit without infrastructure evidence", "user_application", "user_application")),
    ]
    fallback = decide("unknown", "no evidence", None, None)
    names = ["attribution", "rule", "component", "cause_class"]
    # Each rule's condition is evaluated once, as a column: the four outputs' chains read it (inline, the
    # list conditions ran four times over a year's ~300k failed jobs).
    j = j.with_columns(cond.alias(f"_rule{i}") for i, (cond, _) in enumerate(rules))
    outputs = []
    for k, name in enumerate(names):
        expr: pl.Expr | None = None
        for i, (_, values) in enumerate(rules):
            cond = pl.col(f"_rule{i}")
            expr = pl.when(cond).then(values[k]) if expr is None else expr.when(cond).then(values[k])
        outputs.append(expr.otherwise(fallback[k]).alias(name))  # type: ignore[union-attr]
    j = j.with_columns(outputs).drop(f"_rule{i}" for i in range(len(rules)))
    # The evidence lists below are read for infrastructure rows only (a het-job component torn down with an
    # infrastructure-attributed sibling takes the sibling's): built for those rows alone.
    infra_now = pl.col("attribution") == INFRASTRUCTURE
    rest = j.filter(~infra_now).with_columns(pl.lit([], pl.List(pl.String)).alias("_ev_nodes"))
    j = j.filter(infra_now).with_columns(
        # a hung job's fault may lie before the window: its evidence is the open fault's too
        pl.when(pl.col("rule") == HUNG_RULE)
        .then(pl.concat_list(pl.col("_infra_ids").fill_null(pl.lit([], pl.List(pl.Int64))), "_hung_ids")
              .list.unique().list.sort())
        .otherwise(pl.col("_infra_ids")).alias("_infra_ids"),
        # The job's nodes the infrastructure evidence is on: where its fault was (suspect nodes count it there).
        pl.concat_list(*(pl.col(c).fill_null(pl.lit([], pl.List(pl.String)))
                         for c in ("_infra_nodes", "_inc_nodes")),
                       pl.when(pl.col("rule") == HUNG_RULE).then(pl.col("_hung_nodes"))
                       .otherwise(pl.lit([], pl.List(pl.String))).fill_null(pl.lit([], pl.List(pl.String))),
                       pl.concat_list("_state_node").list.drop_nulls())
        .list.unique().list.sort().alias("_ev_nodes"))
    j = _with_het_siblings(pl.concat([j, rest], how="vertical"), keys, clock_skew)

    infra_rows = pl.col("attribution") == INFRASTRUCTURE
    # Planned maintenance loses work too: charged as its own class, never as a failure.
    loss_rows = pl.col("attribution").is_in(list(LOSS_ATTRIBUTIONS))
    elapsed = pl.coalesce(
        pl.col("elapsed_s"), (pl.col("end_ts") - pl.col("start_ts")).dt.total_seconds(), pl.lit(0)
    ).cast(pl.Float64)
    # A run's first instance (no start-up of its own) with no restart after it: the run-aware figure
    # comes from with_run_losses.
    lost_s = lost_work_expr(elapsed, pl.lit(0.0), pl.col("_interval_s"))
    evidence = (
        pl.when(infra_rows).then(pl.col("_infra_ids"))
        .when(pl.col("attribution") == "user").then(pl.col("_user_ids"))
        .when(pl.col("rule") == UNCATALOGUED_RULE).then(pl.col("_unk_ids"))
        .otherwise(None)
        .fill_null(pl.lit([], dtype=pl.List(pl.Int64)))
    )
    out = j.select(
        "_j",
        *keys,
        pl.col("state"),
        pl.col("end_ts"),
        pl.col("n_gpus"),
        pl.col("attribution"),
        pl.col("rule"),
        pl.col("component"),
        pl.col("cause_class"),
        pl.when(infra_rows).then(pl.col("incident_id")).alias("incident_id"),
        evidence.alias("evidence_event_ids"),
        pl.when(infra_rows).then(pl.col("_state_evidence")).alias("evidence_node_state"),
        pl.when(infra_rows).then(pl.col("_ev_nodes")).otherwise(pl.lit([], pl.List(pl.String))).alias("evidence_nodes"),
        pl.when(loss_rows).then(pl.col("n_gpus") * lost_s / 3600.0).otherwise(0.0).alias("lost_gpu_hours"),
    )
    none_rows = not_candidates.select(
        "_j", *keys, "state", "end_ts", "n_gpus",
        *(e.alias(n) for e, n in zip(decide("none", NOT_A_FAILURE_RULE, None, None), names)),
        pl.lit(None, dtype=pl.String).alias("incident_id"),
        pl.lit([], dtype=pl.List(pl.Int64)).alias("evidence_event_ids"),
        pl.lit(None, dtype=pl.String).alias("evidence_node_state"),
        pl.lit([], dtype=pl.List(pl.String)).alias("evidence_nodes"),
        pl.lit(0.0).alias("lost_gpu_hours"),
    )
    out = pl.concat([out.cast(none_rows.schema), none_rows], how="vertical").sort("_j").drop("_j")
    return out.with_columns(pl.col(c).cast(t) for c, t in ATTRIBUTION_SCHEMA.items())


def _candidate(slurm_user_uids: Sequence[int]) -> pl.Expr:
    """A job that can be anything but "none" (over ``state``, ``start_ts``, ``end_ts``, ``cancelled_by``)."""
    state = pl.col("state").cast(pl.String)
    started = pl.col("start_ts").is_not_null()
    return pl.col("end_ts").is_not_null() & (
        # the vocabulary's interrupted states; CANCELLED only when root/SlurmUser cancelled a job
        # that ran (cancelling a pending job killed nothing, as a DEADLINE before the start)
        (state.is_in(INTERRUPTED_STATES) & ((state != "DEADLINE") | started))
        | ((state == "CANCELLED") & pl.col("cancelled_by").cast(pl.Int64).is_in(list(slurm_user_uids)) & started)
    ).fill_null(False)  # a cancel by an unknown uid is no candidate (null would drop the job from both frames)


def failure_candidates(jobs: pl.DataFrame, slurm_user_uids: Sequence[int] = (0,)) -> pl.Series:
    """Per row of ``jobs`` (as :func:`attribute_failures_with` takes them), whether its attribution rests on
    evidence: it ended in an interrupted state, or root/SlurmUser cancelled it after it started. Every other
    job's row is "not a failure" (:data:`NOT_A_FAILURE_RULE`), from the job alone."""
    cancelled_by = _optional(jobs, "cancelled_by", pl.Int64).alias("cancelled_by")
    return jobs.select("state", "start_ts", "end_ts", cancelled_by).select(
        _candidate(slurm_user_uids).alias("candidate")).to_series()


def _with_het_siblings(j: pl.DataFrame, keys: list[str], clock_skew: timedelta) -> pl.DataFrame:
    """``j`` (attributed candidate rows with ``_het``, ``_j`` and the evidence columns) with every
    component of a heterogeneous job that ended within ``clock_skew`` of an infrastructure-attributed
    sibling, and whose own rule rests on no evidence (:data:`_NO_EVIDENCE_RULES`), attributed as that
    sibling (rule 2d): Slurm tears every component down when one dies, so the component's exit code is
    the teardown's, not its code's. Evidence on the component's own nodes (a job limit, a user-application
    event, its own infrastructure) keeps its own attribution."""
    group = ["_het", *(["instance_no"] if "instance_no" in keys else [])]
    infra = pl.col("attribution") == "infrastructure"
    sibling_cols = {"component": "_s_component", "cause_class": "_s_class", "incident_id": "_s_incident",
                    "_infra_ids": "_s_ids", "_state_evidence": "_s_state", "_ev_nodes": "_s_nodes"}
    siblings = j.filter(infra & pl.col("_het").is_not_null()).select(
        *group, pl.col("_j").alias("_s_j"), pl.col("end_ts").alias("_s_end"),
        *(pl.col(c).alias(a) for c, a in sibling_cols.items()))
    torn = (
        j.filter(~infra & pl.col("_het").is_not_null() & pl.col("rule").is_in(list(_NO_EVIDENCE_RULES)))
        .select("_j", "end_ts", *group).join(siblings, on=group)
        .filter((pl.col("end_ts") - pl.col("_s_end")).abs() <= clock_skew)
        .sort("_j", (pl.col("end_ts") - pl.col("_s_end")).abs(), "_s_j").unique("_j", keep="first", maintain_order=True)
        .drop("end_ts", *group, "_s_end", "_s_j")
    )
    if torn.is_empty():
        return j
    j = j.join(torn.with_columns(pl.lit(True).alias("_torn")), on="_j", how="left")
    taken = pl.col("_torn").fill_null(False)
    return j.with_columns(
        pl.when(taken).then(pl.lit("infrastructure")).otherwise(pl.col("attribution")).alias("attribution"),
        pl.when(taken).then(pl.lit(HET_SIBLING_RULE)).otherwise(pl.col("rule")).alias("rule"),
        *(pl.when(taken).then(pl.col(a)).otherwise(pl.col(c)).alias(c) for c, a in sibling_cols.items()),
    ).drop(*sibling_cols.values(), "_torn")


def with_run_losses(attribution: pl.DataFrame, losses: pl.DataFrame) -> pl.DataFrame:
    """``attribution`` (:func:`attribute_failures_with` output) with the ``lost_gpu_hours`` of its
    infrastructure and planned rows (the vocabulary's ``LOSS_ATTRIBUTIONS``) taken from ``losses``: what
    goodput and ETTR charge the interruption, knowing its run, restart overhead included
    (:func:`~gpusre.models.reliability.training_runs.attributed_interruption_losses`).

    Rows with ``instance_no`` match on (``job_id``, ``instance_no``); job rows (no ``instance_no``: the
    job's final record) match the job's latest instance (``losses.is_latest``). Such a row whose
    instance has no loss row (no GPUs, no instance record, or ``losses`` priced only the
    infrastructure's) keeps its own estimate; other rows keep 0.
    """
    keys = ["job_id", "instance_no"] if "instance_no" in attribution.columns else ["job_id"]
    run = losses.filter(pl.col("is_latest")) if keys == ["job_id"] else losses
    run = run.select(pl.col("job_id").cast(pl.String),
                     *([pl.col("instance_no").cast(attribution.schema["instance_no"])] if len(keys) == 2 else []),
                     pl.col("lost_gpu_hours").alias("_run_lost")).unique(keys, keep="first")
    return (attribution.join(run, on=keys, how="left", maintain_order="left")
            .with_columns(pl.when(pl.col("attribution").is_in(list(LOSS_ATTRIBUTIONS)))
                          .then(pl.coalesce("_run_lost", "lost_gpu_hours"))
                          .otherwise(pl.col("lost_gpu_hours")).alias("lost_gpu_hours"))
            .drop("_run_lost"))


def minutes_since_link_recovery(jobs: pl.DataFrame, evidence: AttributionEvidence, *,
                                lookback: timedelta = LINK_RECOVERY_LOOKBACK) -> pl.DataFrame:
    """``job_id``, ``minutes_since_link_recovery``: for each multi-node job of ``jobs`` (``job_id``, ``nodes``,
    ``end_ts``), the minutes from the last network recovery (a link back up: ``recovery_events.csv`` class
    ``network``) any of its nodes logged within ``lookback`` before its end, to its end; null for a job on one node
    or without such a recovery.

    Why: a multi-node job hangs on its broken connections until its collective times out, so one that died an
    hour after a link came back is blamed on its user when the site's NCCL/PyTorch timeout is longer than
    ``attribution.collective_timeout_min``: the column lets the nightly say so and name the setting.
    """
    schema = {"job_id": pl.String, "minutes_since_link_recovery": pl.Float64}
    links = evidence.recoveries.filter(pl.col("_class") == "network").select("node", "_rec_ts").sort("_rec_ts")
    if jobs.is_empty() or links.is_empty():
        return jobs.select(pl.col("job_id").cast(pl.String), pl.lit(None, pl.Float64).alias("minutes_since_link_recovery"))
    multi = pl.col("nodes").list.drop_nulls().list.unique().list.len() > 1
    job_nodes = (jobs.filter(multi & pl.col("end_ts").is_not_null())
                 .select(pl.col("job_id").cast(pl.String), pl.col("end_ts").cast(pl.Datetime("us", "UTC")),
                         pl.col("nodes").cast(pl.List(pl.String)))
                 .explode("nodes").rename({"nodes": "node"}).drop_nulls("node").sort("end_ts"))
    last = (job_nodes.join_asof(links, left_on="end_ts", right_on="_rec_ts", by="node", strategy="backward",
                                check_sortedness=False)
            .filter(pl.col("_rec_ts").is_not_null() & (pl.col("end_ts") - pl.col("_rec_ts") <= lookback))
            .group_by("job_id")
            .agg(((pl.col("end_ts") - pl.col("_rec_ts")).min().dt.total_seconds() / 60).alias(
                "minutes_since_link_recovery")))
    return (jobs.select(pl.col("job_id").cast(pl.String)).join(last, on="job_id", how="left")
            .select(*schema).cast(schema))  # type: ignore[arg-type]
