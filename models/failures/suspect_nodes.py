"""Suspect ("lemon") nodes: nodes whose failures stand far above the rest of the fleet.

Meta found 1.2 % of RSC-1's nodes involved in 13 % of daily job failures and detected them from
28-day signals (Xid counts, NODE_FAIL counts, failed jobs; reliability-facts §1.9). gpusre scores
four signals per node over ``[as_of − lookback, as_of)``:

* ``xid_episodes`` — episodes of Xid/SXid lines that are not the user's (``cause_class`` ≠
  ``user_application``) and not informational, whatever their kind (an Xid 64 is ``ecc_row_remap``
  and counts; an Xid 63 remap is informational and counts only past its catalog repeat threshold,
  when :func:`~gpusre.models.failures.hw_incidents.failure_events` escalates it to a failing HBM);
* ``hw_episodes`` — episodes of failure events (:func:`~gpusre.models.failures.hw_incidents.failure_events`);
* ``infra_failure_episodes`` — failure episodes of the jobs attributed to infrastructure whose fault
  was on the node, a run Slurm requeued included (``infra_failed_jobs`` counts those jobs, a job killed
  twice once);
* ``node_fail_episodes`` — failure episodes of the jobs with a NODE_FAIL run whose failing node it was
  (requeued runs included; ``node_fail_jobs`` counts the jobs), but those planned maintenance ended
  (attribution ``planned``: the maintenance reboot).

A failed job counts against the nodes its attribution's evidence is on (``evidence_nodes``: the node
that logged the fault, the node Slurm took down), not against every node it ran on: one node's fault
kills a 1,000-node job, and counting it on all of them made the fleet median of a large-job cluster
5 NODE_FAIL jobs in 28 days and flagged a tenth of a 2,000-node fleet (benchmark year, 2026-12-06:
194 suspects, 172 of them on NODE_FAIL counts alone). Meta's lemon signals split NODE_FAIL the same
way (``single_node_node_fails`` vs ``multi_node_node_fails``, reliability-facts §1.9): a failed job
without evidence counts on its node only when it ran on one node; which node of a multi-node job failed
without a trace cannot be told. A fault of a shared part — an incident wider than a node (a leaf switch,
the fabric, a rack's power or cooling, the storage) — is no failure of the nodes under it: neither its
events nor the jobs it killed count (the part, not the node, is the lemon).

None of them counts what a node logs in planned maintenance (``planned``: a firmware flash drops links and
loses GPUs on purpose) nor a job the maintenance ended.

Event signals count *episodes*, not lines: events of the node with gaps up to :data:`EPISODE_GAP`
(1 h) are one episode, because one fault logs a burst of lines (Xid 79 + PCIe AER + "fallen off the
bus") and NHC repeats its failing check every few minutes until the node is fixed — a node with one
bad morning must not outrank a node that failed on five different days. (Clock hours counted an NHC
check failing every 5 min through a 7-h repair as 7.) Failed jobs likewise: a node's failed runs ending
at most 1 h apart, or blamed on one incident, are one episode — one Xid 79 that kills eight one-GPU jobs
is one failure, not eight. Raw counts are reported beside them (``xid_events``, ``hw_events``,
``infra_failed_jobs``, ``node_fail_jobs``).

Threshold (robust z-score per signal, against the whole fleet, quiet nodes included):
``z_s = (x − median) / max(1.4826 · MAD, 1)``. The MAD is the robust spread of the fleet; the floor
of one count keeps a fleet of mostly zeros (median 0, MAD 0) from flagging every node with a
single event — with the default ``z = 3`` a node needs at least 3 episodes above the fleet
median. ``score`` is the largest ``z_s``; a node is suspect when ``score ≥ z``.

Recommended action: the catalog action of the node's worst failure event in the lookback (most
severe, then most recent), mapped to what an SRE does (:data:`RECOMMENDED_ACTIONS`); ``drain``
when there is none (flagged on job failures alone: take it out and run diagnostics). A lemon
recovers between its failures by definition, so running a job since its last failure says nothing
on its own. Only stale evidence earns :data:`WATCH_ACTION`: the node has been quiet — no failure
event, Xid episode, or job failed by infrastructure or NODE_FAIL — for at least
:data:`QUIET_FACTOR` times its own mean time between failures over the lookback (lookback ÷ its
largest signal count) *and* completed a job in that quiet time (it was in service, not drained).
A node failing as a Poisson process would stay that quiet by chance with probability e^-3 ≈ 5 %;
events and NODE_FAIL jobs are judged by the same rule. E.g. 8 episodes in 28 days: watch after
10.5 quiet days; 3 in 28 days: never within the lookback.

A repeat offender whose worst event asks only for a soft fix (reboot, GPU reset: the catalog's
``RESTART_*`` / ``RESET_*`` actions) escalates to replacement: with at least :data:`RMA_EPISODES`
failure episodes in the lookback the soft fix has already failed to hold, so the advice is
``drain, RMA (4 hardware failures in 6 days)`` — the days from its first to its last failure, rounded
up. Advice that is already a hardware check (cable, NVLink, cooling, storage) or an RMA stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import lru_cache

import polars as pl

from gpusre.models.logs.event_catalog import ACTIONS, load_log_patterns
from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events, planned_evidence, severity_rank
from gpusre.models.vocabulary import PLANNED, is_failure_incident, run_key_job

__all__ = ["EPISODE_GAP", "LOOKBACK", "MAD_SCALE", "QUIET_FACTOR", "RECOMMENDED_ACTIONS", "RMA_EPISODES", "SIGNALS",
           "SOFT_FIXES", "SUSPECT_SCHEMA", "WATCH_ACTION", "rma_action", "suspect_nodes"]

#: Scores are computed on these columns, in this order (ties in ``score`` name the first). The job
#: signals count failure episodes, not jobs: one fault killing eight small jobs is one failure.
SIGNALS: tuple[str, ...] = ("hw_episodes", "xid_episodes", "infra_failure_episodes", "node_fail_episodes")
#: Columns from Slurm accounting (null without it).
_JOB_COUNTS = ("infra_failed_jobs", "node_fail_jobs", "infra_failure_episodes", "node_fail_episodes")
#: MAD × 1.4826 estimates the standard deviation of a normal distribution.
MAD_SCALE = 1.4826
#: Catalog action -> what to do with a lemon node. A node flagged as a repeat offender is drained
#: first in every case; the phrase says what the repair ticket asks for.
RECOMMENDED_ACTIONS: dict[str, str] = {
    "RESET_GPU": "drain, reset GPU",
    "RESTART_APP": "drain, reset GPU",
    "RESTART_BM": "drain, reboot",
    "RESTART_VM": "drain, reboot",
    "RESTART_FM": "drain, reboot",
    "RESET_FABRIC": "drain, reboot",
    "UPDATE_SWFW": "drain, update driver/firmware",
    "CONTACT_SUPPORT": "drain, RMA",
    "WORKFLOW_XID_48": "drain, RMA",
    "CHECK_MECHANICALS": "drain, RMA",
    "WORKFLOW_NVLINK_ERR": "drain, check NVLink",
    "WORKFLOW_NVLINK5_ERR": "drain, check NVLink",
    "CHECK_LINK": "drain, check cable/transceiver",
    "CHECK_STORAGE": "drain, check storage mounts",
    "CHECK_THERMALS": "drain, check cooling",
    "DRAIN_NODE": "drain",
    "CHECK_BMC": "drain, check the BMC event log",
}
assert set(RECOMMENDED_ACTIONS) <= ACTIONS
_DEFAULT_ACTION = "drain"
#: A suspect node quiet for this many times its mean time between failures (with a completed job in
#: that time) gets :data:`WATCH_ACTION`: its evidence is stale, not merely between two failures.
QUIET_FACTOR = 3.0
#: The action of a suspect node whose failures stopped (see :data:`QUIET_FACTOR`).
WATCH_ACTION = "watch: quiet for 3x its usual time between failures, jobs completed since"
#: Events of one node with gaps up to this are one episode.
EPISODE_GAP = timedelta(hours=1)
#: Default lookback of the signals (Meta's 28 days); the nightly names the part the data covers.
LOOKBACK = timedelta(days=28)
#: Failure episodes in the lookback from which a soft fix (:data:`SOFT_FIXES`) escalates to an RMA.
RMA_EPISODES = 3
#: Recommended actions that only restart or reset: they do not hold on a node that keeps failing.
SOFT_FIXES = frozenset({"drain, reboot", "drain, reset GPU"})


def rma_action(failures: int, days: int) -> str:
    """The escalated advice of a repeat offender: 'drain, RMA (4 hardware failures in 6 days)'."""
    return (f"drain, RMA ({failures} hardware failure{'s' if failures != 1 else ''} in "
            f"{days} day{'s' if days != 1 else ''})")

#: Output of :func:`suspect_nodes`.
SUSPECT_SCHEMA: dict[str, pl.DataType] = {
    "node": pl.String(),
    "xid_events": pl.Int64(),
    "hw_events": pl.Int64(),
    "xid_episodes": pl.Int64(),
    "hw_episodes": pl.Int64(),
    "infra_failed_jobs": pl.Int64(),
    "node_fail_jobs": pl.Int64(),
    "infra_failure_episodes": pl.Int64(),
    "node_fail_episodes": pl.Int64(),
    "score": pl.Float64(),
    "reason": pl.String(),
    "worst_event": pl.String(),
    "action": pl.String(),
    "recommended_action": pl.String(),
}

#: Pattern catalogs whose lines carry an Xid / SXid code (kinds ``xid``, ``sxid``, ``ecc_row_remap``...).
_CODE_CATALOGS = ("xid", "sxid")


@lru_cache(maxsize=1)
def _xid_kinds() -> tuple[str, ...]:
    """Event kinds of the patterns that extract an Xid/SXid code (``log_patterns.csv`` ``catalog``)."""
    patterns = load_log_patterns()
    return tuple(sorted(set(patterns.filter(pl.col("catalog").is_in(_CODE_CATALOGS))["kind"].to_list())))


def _episodes(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` with ``_ep``: the node's episode number (a new one after a gap > :data:`EPISODE_GAP`)."""
    gap = pl.col("ts").diff().over("node")
    return (ev.sort("node", "ts").with_columns((gap.is_null() | (gap > EPISODE_GAP)).cast(pl.Int64)
                                               .cum_sum().over("node").alias("_ep")))


def _blame(attribution: pl.DataFrame) -> pl.DataFrame:
    """Per failed job (``job_id``): ``attribution``, ``evidence_nodes`` (null when the attribution has no
    such column: every node of the job is blamed) and ``incident_id``."""
    cols = set(attribution.columns)
    return attribution.select(
        pl.col("job_id").cast(pl.String), "attribution",
        (pl.col("evidence_nodes") if "evidence_nodes" in cols else pl.lit(None, pl.List(pl.String))).alias("_ev_nodes"),
        (pl.col("incident_id").cast(pl.String) if "incident_id" in cols else pl.lit(None, pl.String)).alias("_incident"),
    ).unique("job_id", keep="first")


def _job_episodes(failed: pl.DataFrame, name: str) -> pl.DataFrame:
    """Per node, ``name``: its failed runs' *episodes* — runs ending at most :data:`EPISODE_GAP` after the
    node's previous failed run, or blamed on an incident an earlier run of the node was, are one failure.
    One fault kills every job on the node at once (eight one-GPU jobs under one Xid 79): that is one
    failure of the node, as its events are one episode (benchmark year, 2026-12-06: 3 of 9 suspects were
    nodes whose one or two faults killed 4-6 small jobs each)."""
    if failed.is_empty():
        return pl.DataFrame(schema={"node": pl.String, name: pl.Int64})
    gap = pl.col("end_ts").diff().over("node")
    ep = (failed.select("node", "end_ts", "_incident").sort("node", "end_ts")
          .with_columns((gap.is_null() | (gap > EPISODE_GAP)).cast(pl.Int64).cum_sum().over("node").alias("_ep")))
    # the runs of one incident on the node: one failure, however far apart they ended (a hung job's TIMEOUT)
    ep = ep.with_columns(pl.when(pl.col("_incident").is_not_null())
                         .then(pl.col("_ep").min().over("node", "_incident")).otherwise(pl.col("_ep")).alias("_ep"))
    return ep.group_by("node").agg(pl.col("_ep").n_unique().cast(pl.Int64).alias(name))


def _count_text(x: pl.Expr) -> pl.Expr:
    """A median of counts in words: ``0``, ``2``, ``2.5`` (not ``0.0``)."""
    return (pl.when(x == x.floor()).then(x.cast(pl.Int64).cast(pl.String))
            .otherwise(x.round(1).cast(pl.String)))


def _failed_on_node(shared_incidents: list[str]) -> pl.Expr:
    """Whether a (job, node) row's failure counts against the node (module docstring): the node holds
    the job's evidence, or the job has none and ran on this node alone; never under a shared part's
    incident. Without evidence columns (``_ev_nodes`` null) every node of the job counts."""
    ev_nodes = pl.col("_ev_nodes")
    on_node = (pl.when(ev_nodes.is_null()).then(pl.lit(True))
               .when(ev_nodes.list.len() > 0).then(ev_nodes.list.contains(pl.col("node")))
               .otherwise(pl.col("_n_nodes") == 1))
    return on_node & ~pl.col("_incident").is_in(shared_incidents).fill_null(False)


def suspect_nodes(
    events: pl.DataFrame,
    attribution: pl.DataFrame,
    jobs: pl.DataFrame,
    *,
    as_of: datetime,
    lookback: timedelta = LOOKBACK,
    z: float = 3.0,
    fleet: Sequence[str] | None = None,
    accounting: bool = True,
    not_failure_events: pl.DataFrame | None = None,
    planned: pl.DataFrame | None = None,
    shared: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Nodes whose failure signals over the lookback are ``z`` robust deviations above the fleet.

    Args:
        events: ``core.node_events`` (:data:`~gpusre.models.failures.hw_incidents.EVENT_SCHEMA` columns).
        attribution: from :func:`~gpusre.models.failures.attribution.attribute_failures` (``job_id``,
            ``attribution``, optionally ``cause_class``: a job attributed to an incident the operator marked
            not a failure, :func:`~gpusre.models.vocabulary.is_failure_incident`, is no failure of its nodes;
            optionally ``evidence_nodes`` and ``incident_id``: without ``evidence_nodes`` a failed job counts
            on every node it ran on).
        jobs: ``core.jobs`` (``job_id``, ``state``, ``end_ts``, ``nodes``), and the earlier runs of
            requeued jobs keyed ``<job_id>#<instance_no>`` (:data:`~gpusre.models.vocabulary.RUN_KEY_SEP`);
            a run counts when its ``end_ts`` falls in the lookback.
        as_of: end of the lookback (exclusive), timezone-aware.
        lookback: length of the lookback (Meta: 28 days).
        z: robust z-score at which a node is suspect.
        fleet: every node of the cluster (e.g. ``cluster.yaml``); default: the nodes seen in
            ``events`` and ``jobs``. Quiet nodes must be in the fleet, or the median is biased up.
        accounting: false without Slurm accounting (``core.jobs`` empty): the job signals
            (``infra_failed_jobs``, ``node_fail_jobs`` and their episodes) are then unknown, null rather than 0, and the
            score rests on the event signals alone (as it does when every node has 0 of them).
        not_failure_events: ``event_id`` of the events merged into incidents the operator marked not a
            failure (:func:`~gpusre.models.failures.hw_incidents.not_a_failure_events`): a cable test's
            link flap is no episode of its node. None: every event counts.
        planned: the nodes' planned-maintenance periods
            (:func:`~gpusre.models.failures.hw_incidents.planned_maintenance`): the failure lines a node logs in
            them (:func:`~gpusre.models.failures.hw_incidents.planned_evidence`) are no episode, and a job ended by
            the maintenance (attribution ``planned``, a NODE_FAIL of its reboot) no failed job. None: none known.
        shared: ``event_id``, ``incident_id`` of the events merged into incidents wider than a node
            (:func:`~gpusre.models.failures.hw_incidents.shared_part_events`): their events are no episode of
            a node, and a job such an incident killed no failed job of its nodes. None: none.

    Returns:
        Suspect nodes only, :data:`SUSPECT_SCHEMA`, by ``score`` descending then node. ``reason``
        names the driving signal, e.g. ``hw_episodes 6 vs fleet median 0 (z 6.0)``.
    """
    start = as_of - lookback
    in_window = (pl.col("ts") >= start) & (pl.col("ts") < as_of)
    ev = events.select(*EVENT_SCHEMA).filter(in_window)
    if not_failure_events is not None:
        # An operator's "not a failure" is no episode, as it is no incident in the counts.
        ev = ev.join(not_failure_events.select(pl.col("event_id").cast(pl.Int64)), on="event_id", how="anti")
    shared_incidents: list[str] = []
    if shared is not None and shared.height:
        # A shared part's failure (a switch, a rack's PDU) is the part's, not the nodes' under it.
        ev = ev.join(shared.select(pl.col("event_id").cast(pl.Int64)).drop_nulls(), on="event_id", how="anti")
        shared_incidents = shared.get_column("incident_id").cast(pl.String).unique().to_list()
    if "cause_class" in attribution.columns:
        attribution = attribution.filter(is_failure_incident())

    failures = failure_events(ev)
    # The maintenance's own lines (a flash that drops a link on a drained node) are no failure of the node.
    in_maintenance = planned_evidence(failures, planned)
    if in_maintenance.height:
        failures = failures.join(in_maintenance, on="event_id", how="anti")
        ev = ev.join(in_maintenance, on="event_id", how="anti")
    # Xid/SXid lines of any kind (an Xid 64 is ecc_row_remap); informational ones only when escalated.
    escalated = failures.filter("escalated").select("event_id")
    xid = _episodes(ev.filter(
        pl.col("kind").is_in(_xid_kinds()) & pl.col("code").is_not_null()
        & (~pl.col("cause_class").is_in(["user_application", "informational"])
           | pl.col("event_id").is_in(escalated["event_id"].implode()))
    )).group_by("node").agg(
        pl.len().cast(pl.Int64).alias("xid_events"), pl.col("_ep").n_unique().cast(pl.Int64).alias("xid_episodes"),
        pl.col("ts").max().alias("_last_xid"),
    )
    hw_ev = _episodes(failures)
    hw = hw_ev.group_by("node").agg(
        pl.len().cast(pl.Int64).alias("hw_events"),
        pl.col("_ep").n_unique().cast(pl.Int64).alias("hw_episodes"),
        pl.col("ts").max().alias("_last_failure"),
        pl.col("ts").min().alias("_first_failure"),
        # Worst event: most severe, then most recent (the node's current state).
        pl.concat_str(
            pl.col("kind"), pl.col("code").cast(pl.String), separator=" ", ignore_nulls=True
        ).sort_by(severity_rank(pl.col("severity")), -pl.col("ts").dt.epoch("us")).first().alias("worst_event"),
        pl.col("action").sort_by(severity_rank(pl.col("severity")), -pl.col("ts").dt.epoch("us")).first(),
    )

    job_nodes = (
        jobs.filter((pl.col("end_ts") >= start) & (pl.col("end_ts") < as_of))
        .select(pl.col("job_id").cast(pl.String), "state", "nodes", pl.col("end_ts").cast(pl.Datetime("us", "UTC")))
        .join(_blame(attribution), on="job_id", how="left")
        # a NODE_FAIL of the maintenance's reboot is no failure of the node
        .filter(pl.col("attribution").ne_missing(PLANNED))
        .with_columns(pl.col("nodes").list.drop_nulls().list.n_unique().alias("_n_nodes"))
        .explode("nodes")
        .rename({"nodes": "node"})
        .drop_nulls("node")
        .unique(["job_id", "node"])
        .with_columns(_failed_on_node(shared_incidents).alias("_blamed"))
    )
    # A job killed twice (a requeued run, then the job) counts once.
    job = run_key_job(pl.col("job_id"))
    blamed = job_nodes.filter("_blamed")
    infra, node_fail = pl.col("attribution") == "infrastructure", pl.col("state") == "NODE_FAIL"
    per_job = blamed.group_by("node").agg(
        job.filter(infra).n_unique().cast(pl.Int64).alias("infra_failed_jobs"),
        job.filter(node_fail).n_unique().cast(pl.Int64).alias("node_fail_jobs"),
        pl.col("end_ts").filter(infra | node_fail).max().alias("_last_failed_job"),
    ).join(_job_episodes(blamed.filter(infra), "infra_failure_episodes"), on="node", how="left").join(
        _job_episodes(blamed.filter(node_fail), "node_fail_episodes"), on="node", how="left")
    completed = (jobs.filter((pl.col("state") == "COMPLETED") & (pl.col("end_ts") < as_of))
                 .select(pl.col("nodes").alias("node"), "end_ts").explode("node").drop_nulls("node")
                 .group_by("node").agg(pl.col("end_ts").max().alias("_last_completed")))

    if fleet is None:
        names = pl.concat([ev.select("node"), jobs.select(pl.col("nodes").explode().alias("node"))]).drop_nulls().unique()
    else:
        names = pl.DataFrame({"node": list(fleet)}, schema={"node": pl.String})
    table = (
        names.join(xid, on="node", how="left")
        .join(hw, on="node", how="left")
        .join(per_job, on="node", how="left")
        .join(completed, on="node", how="left")
        .with_columns(pl.col("xid_events", "xid_episodes", "hw_events", "hw_episodes", *_JOB_COUNTS).fill_null(0))
    )
    if table.is_empty():
        return pl.DataFrame(schema=SUSPECT_SCHEMA)
    if not accounting:
        table = table.with_columns(pl.lit(None, pl.Int64).alias(c) for c in _JOB_COUNTS)

    # Robust z per signal against the fleet; the floor of 1 keeps sparse counts from exploding.
    zs = []
    for s in SIGNALS:
        med = pl.col(s).median()
        scale = pl.max_horizontal(MAD_SCALE * (pl.col(s) - med).abs().median(), pl.lit(1.0))
        zs.append(((pl.col(s) - med) / scale).alias(f"_z_{s}"))
        zs.append(med.alias(f"_med_{s}"))
    table = table.with_columns(zs)
    z_cols = [f"_z_{s}" for s in SIGNALS]
    table = table.with_columns(pl.max_horizontal(z_cols).alias("score"))
    # The driving signal: the first whose z equals the score.
    driver = pl.coalesce(
        [pl.when(pl.col(f"_z_{s}") == pl.col("score")).then(
            pl.format("{} {} vs fleet median {} (z {})", pl.lit(s), pl.col(s), _count_text(pl.col(f"_med_{s}")),
                      pl.col("score").round(1)))
         for s in SIGNALS]
    )
    # Stale evidence (module docstring): quiet for QUIET_FACTOR x the node's mean time between failures
    # (lookback / its largest signal; a null job signal without accounting is left out), with a job
    # completed in that quiet time. Every kind of failure ends the quiet: events and failed jobs alike.
    last = pl.max_horizontal(*(pl.col(c).cast(pl.Datetime("us", "UTC")) for c in ("_last_xid", "_last_failure",
                                                                                 "_last_failed_job")))
    n_failures = pl.max_horizontal(*SIGNALS).cast(pl.Float64)
    quiet_us = (pl.lit(as_of).cast(pl.Datetime("us", "UTC")) - last).dt.total_microseconds()
    needed_us = QUIET_FACTOR * (lookback / timedelta(microseconds=1)) / n_failures
    ran_since = pl.col("_last_completed").cast(pl.Datetime("us", "UTC")) > last
    stale = last.is_not_null() & (quiet_us >= needed_us) & ran_since
    catalog_action = (pl.col("action").replace_strict(RECOMMENDED_ACTIONS, default=_DEFAULT_ACTION,
                                                      return_dtype=pl.String).fill_null(_DEFAULT_ACTION))
    # A soft fix that keeps failing (module docstring): RMA, with the count and the days it took.
    span_days = ((pl.col("_last_failure") - pl.col("_first_failure")).dt.total_seconds() / 86400).ceil().cast(pl.Int64)
    days = pl.max_horizontal(span_days, pl.lit(1, pl.Int64))
    rma = pl.format("drain, RMA ({} hardware failures in {} {})", pl.col("hw_episodes"), days,
                    pl.when(days == 1).then(pl.lit("day")).otherwise(pl.lit("days")))
    flagged = table.filter(pl.col("score") >= z).with_columns(
        driver.alias("reason"),
        pl.when(stale).then(pl.lit(WATCH_ACTION))
        .when(catalog_action.is_in(list(SOFT_FIXES)) & (pl.col("hw_episodes") >= RMA_EPISODES)).then(rma)
        .otherwise(catalog_action).alias("recommended_action"),
    )
    return flagged.select(pl.col(c).cast(t) for c, t in SUSPECT_SCHEMA.items()).sort(
        ["score", "node"], descending=[True, False]
    )
