"""Cluster goodput per UTC day: how much GPU capacity turned into useful work, and where the rest went.

``goodput = productive / capacity``, with the loss waterfall

    capacity − idle (not allocated; ``unavailable`` is the part of capacity on nodes drained, down
               or in maintenance per Slurm node states — a draining node may still finish jobs) = allocated
    allocated − lost_failure − lost_restart − lost_preemption − lost_maintenance = productive

``maintenance`` is the part of idle capacity that planned maintenance took — the same down time the
node_availability SLI leaves out of its denominator (node states with a maintenance reason or inside a
cluster.yaml window; without node states, the cluster.yaml windows). Goodput keeps its documented
definition (productive / capacity), so a maintenance day scores low; the column lets a reader tell such a
day from an incident without a second goodput definition. ``largest_loss`` names the largest part of the
day's non-productive capacity (:data:`LOSS_PARTS`), so a report calls a day "a maintenance day" only when
planned maintenance is what cost it the most, not whenever a node was drained for an hour.

Every interruption costs the run its work since the last checkpoint and the restart after it, whoever
caused it (:func:`interruption_cause`); the cause says which column it is charged to:

* ``lost_failure``: GPUs × the expected work since the last checkpoint
  (:func:`~gpusre.models.reliability.ettr_model.expected_lost_work_expr`) of instances the *infrastructure*
  ended (NODE_FAIL / BOOT_FAIL, or attributed to the infrastructure from node logs: FAILED or REQUEUED
  with failure events in its end window), on the UTC day the instance ended;
* ``lost_restart``: GPUs × the restart overhead of the instance that follows such an interruption in its
  run (the requeue of the same job or the next job of the run), on the UTC day that instance started —
  none while that restart is still pending;
* ``lost_preemption``: the same two losses (lost work on the end day, restart on the restart's day) of
  instances the scheduler preempted — goodput's loss (Kokolis et al.: preemption, fragmentation and
  failures are the main ones), but no failure of anything;
* ``lost_maintenance``: the same two losses of instances planned maintenance ended (attribution
  ``planned``: the maintenance reboot's NODE_FAIL, a root cancel as the drain began, a requeue at the
  drain) — the planned work's cost, not a failure's.

Per interruption the same two losses are the attribution marts' ``lost_gpu_hours``
(:func:`~gpusre.models.reliability.training_runs.interruption_losses`): over the infrastructure's
interruptions they sum to ``lost_failure`` + ``lost_restart``, over the planned ones to ``lost_maintenance``.

User failures, cancellations and timeouts are the user's: their GPU-hours count as delivered.
"""

from __future__ import annotations

from datetime import datetime, timezone

import polars as pl

from gpusre.models.accounting_span import capacity_hours_expr
from gpusre.models.vocabulary import INFRA_INTERRUPT_STATES, INFRASTRUCTURE, NODE_FAILURE_STATES, PLANNED

__all__ = ["GOODPUT_SCHEMA", "INTERRUPTION_CAUSES", "LOSS_PARTS", "PREEMPTION", "interruption_cause",
           "goodput_daily"]

#: ``interruption`` of an instance the scheduler preempted (no failure; goodput's ``lost_preemption``).
PREEMPTION = "preemption"
#: What can interrupt an instance (:func:`interruption_cause`): the infrastructure (``lost_failure`` +
#: ``lost_restart``), preemption (``lost_preemption``), planned maintenance (``lost_maintenance``).
INTERRUPTION_CAUSES: tuple[str, ...] = (INFRASTRUCTURE, PREEMPTION, PLANNED)
#: The states in which the scheduler, not a node, ended an instance (PREEMPTED): the vocabulary's
#: interrupt states that are no node failure.
_PREEMPTION_STATES: tuple[str, ...] = tuple(s for s in INFRA_INTERRUPT_STATES if s not in NODE_FAILURE_STATES)
#: The parts of a day's non-productive capacity (capacity − productive) ``largest_loss`` chooses from:
#: planned maintenance (its idle capacity and its interruptions' losses), other idle capacity, the
#: infrastructure's failures (lost work and restarts), preemption.
LOSS_PARTS: tuple[str, ...] = ("planned_maintenance", "idle", "failures", "preemption")

GOODPUT_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(), "capacity_gpu_hours": pl.Float64(), "allocated_gpu_hours": pl.Float64(),
    "productive_gpu_hours": pl.Float64(), "lost_failure_gpu_hours": pl.Float64(),
    "lost_restart_gpu_hours": pl.Float64(), "idle_gpu_hours": pl.Float64(), "goodput": pl.Float64(),
    "infra_interruptions": pl.Int64(), "in_service_gpu_hours": pl.Float64(), "unavailable_gpu_hours": pl.Float64(),
    "goodput_in_service": pl.Float64(), "capacity_source": pl.String(),
    # part of idle_gpu_hours (with node states: of unavailable_gpu_hours) taken by planned maintenance
    "maintenance_gpu_hours": pl.Float64(),
    # lost work + restarts of preempted instances / of instances planned maintenance ended
    "lost_preemption_gpu_hours": pl.Float64(), "lost_maintenance_gpu_hours": pl.Float64(),
    "preemptions": pl.Int64(), "planned_interruptions": pl.Int64(),
    # the largest part (LOSS_PARTS) of capacity − productive
    "largest_loss": pl.String(),
}



def interruption_cause(inst: pl.DataFrame, attribution: pl.DataFrame) -> pl.Series:
    """What interrupted each row of ``inst`` (a String Series ``interruption``, one of
    :data:`INTERRUPTION_CAUSES`, null when nothing did).

    ``attribution`` has ``job_id``, ``instance_no``, ``attribution`` for attributed instances. In order:
    attributed to the infrastructure → ``infrastructure``; attributed to planned maintenance (``planned``:
    the maintenance reboot's NODE_FAIL, a root cancel or requeue as the drain began) → ``planned``; else a
    node failure state (NODE_FAIL, BOOT_FAIL) → ``infrastructure``; PREEMPTED → ``preemption``. A user's
    own failure or cancellation is no interruption (null): its GPU-hours count as delivered.
    """
    attr = attribution.select("job_id", "instance_no", "attribution").unique(["job_id", "instance_no"], keep="first")
    flagged = inst.select("job_id", "instance_no", "state").join(
        attr, on=["job_id", "instance_no"], how="left", maintain_order="left")
    a, state = pl.col("attribution"), pl.col("state")
    return flagged.select(
        pl.when(a.eq_missing(INFRASTRUCTURE)).then(pl.lit(INFRASTRUCTURE))
        .when(a.eq_missing(PLANNED)).then(pl.lit(PLANNED))
        .when(state.is_in(NODE_FAILURE_STATES)).then(pl.lit(INFRASTRUCTURE))
        .when(state.is_in(_PREEMPTION_STATES)).then(pl.lit(PREEMPTION))
        .otherwise(pl.lit(None, pl.String)).alias("interruption")).to_series()


def _cause(column: str, frame: pl.DataFrame) -> pl.Expr:
    """The interruption cause column ``column`` of ``frame``; a hand-made frame without it (only
    ``interrupted``) counts every interruption as the infrastructure's, as before causes existed."""
    return pl.col(column) if column in frame.columns else pl.lit(INFRASTRUCTURE)


def goodput_daily(inst: pl.DataFrame, utilization: pl.DataFrame, as_of: datetime | None = None,
                  in_service: pl.DataFrame | None = None, gpus_per_node: int = 8,
                  since: datetime | None = None, maintenance: pl.DataFrame | None = None,
                  node_gpus: pl.DataFrame | None = None) -> pl.DataFrame:
    """:data:`GOODPUT_SCHEMA` rows for every day of ``utilization``.

    Args:
        inst: :func:`~gpusre.models.reliability.training_runs.run_instances` output with the losses of
            :func:`~gpusre.models.reliability.training_runs.charge_interruptions` (lost work of each
            interrupted instance, even the last of its run: the work was lost whether or not the user
            resubmitted; restart overhead of the instance after it), each charged by its cause
            (``interruption``, ``restart_after``; a frame without them: the infrastructure's).
        utilization: ``marts.utilization_daily`` (``day``, ``capacity_gpu_hours``, ``allocated_gpu_hours``).
        as_of: end of the observed data (days after it are left out). Capacity is ``utilization``'s
            (``marts.utilization_daily``: the one capacity rule of
            :func:`~gpusre.models.accounting_span.capacity_hours_expr`, which cuts a partial last day, so
            the latest day's goodput is not diluted by hours that have not happened yet).
        since: start of the observed data (the accounting's first moment,
            :func:`~gpusre.models.accounting_span.accounting_span`); days before it are left out. With
            ``as_of`` it gives each day's capacity hours (24 unless partial), which bound the in-service hours.
        in_service: ``marts.node_availability_daily`` (``day``, ``in_service_hours``, ``observed_hours``)
            from Slurm node states: splits idle time into *unavailable* (nodes drained, down or in
            maintenance) and idle in service, and gives ``goodput_in_service`` = productive / in-service
            GPU-hours. In-service hours past the day's capacity hours (``observed_hours`` beyond them:
            states that run to a later dump) are not counted, so down time is never hidden.
            Without it in-service = capacity and ``capacity_source`` says so. With its
            ``down_maintenance_hours`` (maintenance reasons, and any down time inside a cluster.yaml
            window) a day's ``maintenance_gpu_hours`` = those node-hours × the node's GPUs, at most the
            day's unavailable GPU-hours.
        maintenance: ``day``, ``maintenance_node_hours``: the cluster.yaml maintenance windows' node-hours
            per UTC day, × ``gpus_per_node``; or, when it has a ``maintenance_gpu_hours`` column (a mixed
            fleet: node-hours already × each node's GPUs), that. Used only for days without node states
            (the windows then say which idle capacity was planned down time), capped at the day's idle
            GPU-hours; without it and without node states a day's ``maintenance_gpu_hours`` is 0.
        gpus_per_node: GPUs of a node ``node_gpus`` does not name (cluster.yaml ``gpus_per_node``).
        node_gpus: ``node``, ``gpus``: each node's GPUs (cluster.yaml ``node_gpus`` in a mixed fleet), so
            a down 4-GPU node costs 4 GPU-hours an hour, not ``gpus_per_node``; None: every node has
            ``gpus_per_node``.
    """
    gpus = pl.col("n_gpus").fill_null(0).cast(pl.Float64)
    # Sorted before every float sum: a sum's last bits depend on the order of its terms, and reruns
    # must give bit-identical marts.
    inst = inst.sort("job_id", "instance_no")
    # Each interruption's two losses, by its cause: the lost work on the day the instance ended, the
    # restart overhead (of the instance restarting the run after it) on the day that restart started.
    work = inst.filter("interrupted").select(
        pl.col("end_ts").dt.date().alias("day"), _cause("interruption", inst).alias("_cause"),
        (gpus * pl.col("lost_work_s") / 3600.0).alias("_lost"), pl.lit(1, pl.Int64).alias("_n"))
    restart = inst.filter(pl.col("charged_overhead_s") > 0).select(
        pl.col("start_ts").dt.date().alias("day"), _cause("restart_after", inst).alias("_cause"),
        (gpus * pl.col("charged_overhead_s") / 3600.0).alias("_lost"), pl.lit(0, pl.Int64).alias("_n"))
    by = pl.col("_cause")
    losses = (
        pl.concat([work.with_columns(pl.lit(False).alias("_restart")),
                   restart.with_columns(pl.lit(True).alias("_restart"))])
        .group_by("day")
        .agg(pl.col("_lost").filter((by == INFRASTRUCTURE) & ~pl.col("_restart")).sum().alias("lost_failure_gpu_hours"),
             pl.col("_lost").filter((by == INFRASTRUCTURE) & pl.col("_restart")).sum().alias("lost_restart_gpu_hours"),
             pl.col("_lost").filter(by == PREEMPTION).sum().alias("lost_preemption_gpu_hours"),
             pl.col("_lost").filter(by == PLANNED).sum().alias("lost_maintenance_gpu_hours"),
             pl.col("_n").filter(by == INFRASTRUCTURE).sum().alias("infra_interruptions"),
             pl.col("_n").filter(by == PREEMPTION).sum().alias("preemptions"),
             pl.col("_n").filter(by == PLANNED).sum().alias("planned_interruptions"))
    )
    loss_columns = ("lost_failure_gpu_hours", "lost_restart_gpu_hours", "lost_preemption_gpu_hours",
                    "lost_maintenance_gpu_hours")
    util = utilization.select("day", "capacity_gpu_hours", "allocated_gpu_hours").with_columns(pl.col("day").cast(pl.Date))
    if as_of is not None or since is not None:
        # The capacity is marts.utilization_daily's, as is: the one rule (models/accounting_span.py) already
        # cut its partial days, so goodput (≤ allocated) never exceeds utilization. The same rule's hours
        # bound the in-service hours below.
        hours = capacity_hours_expr(pl.col("day"), as_of)
        if as_of is not None:
            util = util.filter(pl.col("day") <= as_of.astimezone(timezone.utc).date())
        if since is not None:
            util = util.filter(pl.col("day") >= since.astimezone(timezone.utc).date())
        util = util.with_columns(hours.alias("_cap_h"))
    else:
        util = util.with_columns(pl.lit(24.0).alias("_cap_h"))
    out = (
        util
        .join(losses, on="day", how="left")
        .with_columns(
            pl.col(*loss_columns).fill_null(0.0),
            pl.col("infra_interruptions", "preemptions", "planned_interruptions").fill_null(0).cast(pl.Int64),
        )
        .with_columns(
            (pl.col("allocated_gpu_hours") - pl.sum_horizontal(*loss_columns)).alias("productive_gpu_hours"),
            (pl.col("capacity_gpu_hours") - pl.col("allocated_gpu_hours")).clip(lower_bound=0).alias("idle_gpu_hours"),
        )
        .with_columns(
            pl.when(pl.col("capacity_gpu_hours") > 0)
            .then(pl.col("productive_gpu_hours") / pl.col("capacity_gpu_hours")).alias("goodput"),
        )
    )
    if in_service is not None and in_service.height:
        has_maint = "down_maintenance_hours" in in_service.columns
        if "observed_hours" not in in_service.columns:  # a frame of whole days (hand-made inputs)
            in_service = in_service.with_columns(pl.lit(24.0).alias("observed_hours"))
        # In service inside the capacity's hours: node states that run past them (to the 00:05 dump on a
        # day whose capacity the accounting cuts earlier) add in-service hours the capacity does not
        # have; taken off the in-service hours, so no down hour hides (the old min(in-service, capacity)
        # hid a whole day's down time).
        in_service = (in_service.with_columns(pl.col("day").cast(pl.Date))
                      .join(util.select("day", "_cap_h"), on="day", how="left")
                      .with_columns((pl.col("in_service_hours")
                                     - (pl.col("observed_hours") - pl.col("_cap_h").fill_null(24.0)).clip(lower_bound=0.0))
                                    .clip(lower_bound=0.0).alias("_in_cap")))
        if node_gpus is not None and node_gpus.height:
            # Mixed fleet: each node-hour weighs the node's own GPUs (unknown nodes: gpus_per_node).
            g = pl.col("_gpus")
            svc_in = in_service.join(node_gpus.select("node", pl.col("gpus").cast(pl.Float64).alias("_gpus")),
                                     on="node", how="left").with_columns(g.fill_null(float(gpus_per_node)))
            svc_gpu_h = (pl.col("_in_cap") * g).sum()
            maint_gpu_h = (pl.col("down_maintenance_hours").fill_null(0.0) * g).sum()
        else:  # one GPU count: the sum × it, bit-identical to the single-value results
            svc_in = in_service
            svc_gpu_h = pl.col("_in_cap").sum() * gpus_per_node
            maint_gpu_h = pl.col("down_maintenance_hours").fill_null(0.0).sum() * gpus_per_node
        svc = (svc_in.sort("day", "node").group_by(pl.col("day").cast(pl.Date))
               .agg(svc_gpu_h.alias("_svc"),
                    (maint_gpu_h if has_maint else pl.lit(None, pl.Float64)).alias("_maint_states")))
        out = out.join(svc, on="day", how="left").with_columns(
            pl.when(pl.col("_svc").is_not_null()).then(pl.lit("node states (in-service GPU-hours)"))
            .otherwise(pl.lit("cluster.yaml GPUs (no node-state history for the day)")).alias("capacity_source"),
            pl.min_horizontal(pl.col("_svc").fill_null(pl.col("capacity_gpu_hours")), "capacity_gpu_hours")
            .alias("in_service_gpu_hours"))
    else:
        out = out.with_columns(pl.lit("cluster.yaml GPUs (no node-state history)").alias("capacity_source"),
                               pl.col("capacity_gpu_hours").alias("in_service_gpu_hours"),
                               pl.lit(None, pl.Float64).alias("_svc"), pl.lit(None, pl.Float64).alias("_maint_states"))
    if maintenance is not None and maintenance.height:
        maint_gpu = (pl.col("maintenance_gpu_hours").cast(pl.Float64).sum()
                     if "maintenance_gpu_hours" in maintenance.columns
                     else pl.col("maintenance_node_hours").cast(pl.Float64).sum() * gpus_per_node)
        windows = (maintenance.with_columns(pl.col("day").cast(pl.Date))
                   .sort("day").group_by("day").agg(maint_gpu.alias("_maint_windows")))
        out = out.join(windows, on="day", how="left")
    else:
        out = out.with_columns(pl.lit(None, pl.Float64).alias("_maint_windows"))
    out = out.with_columns(
        (pl.col("capacity_gpu_hours") - pl.col("in_service_gpu_hours")).clip(lower_bound=0).alias("unavailable_gpu_hours"),
        pl.when(pl.col("in_service_gpu_hours") > 0)
        .then(pl.col("productive_gpu_hours") / pl.col("in_service_gpu_hours")).alias("goodput_in_service"),
    ).with_columns(
        # Node states say which nodes really went down for maintenance (a window nobody drained for costs
        # nothing); the cluster.yaml windows stand in only on days without them. Capped so the part
        # never exceeds the whole it belongs to (a partial first/last day's capacity is cut).
        pl.when(pl.col("_svc").is_not_null() & pl.col("_maint_states").is_not_null())
        .then(pl.min_horizontal("_maint_states", "unavailable_gpu_hours"))
        .otherwise(pl.min_horizontal(pl.col("_maint_windows").fill_null(0.0), "idle_gpu_hours"))
        .clip(lower_bound=0.0).alias("maintenance_gpu_hours"),
    ).with_columns(_largest_loss())
    return out.select([pl.col(c).cast(t) for c, t in GOODPUT_SCHEMA.items()]).sort("day")


def _largest_loss() -> pl.Expr:
    """``largest_loss``: the largest of the :data:`LOSS_PARTS` of the day's non-productive capacity, in
    GPU-hours (ties: the earlier part), null when nothing was lost. Planned maintenance is its idle
    capacity plus what its interruptions cost; idle is the rest of the idle capacity (unplanned down
    nodes included); failures are the infrastructure's lost work and restarts."""
    parts = {
        "planned_maintenance": pl.col("maintenance_gpu_hours") + pl.col("lost_maintenance_gpu_hours"),
        "idle": (pl.col("idle_gpu_hours") - pl.col("maintenance_gpu_hours")).clip(lower_bound=0.0),
        "failures": pl.col("lost_failure_gpu_hours") + pl.col("lost_restart_gpu_hours"),
        "preemption": pl.col("lost_preemption_gpu_hours"),
    }
    top = pl.max_horizontal(*parts.values())
    out = pl.when(top.fill_null(0.0) <= 0).then(pl.lit(None, pl.String))
    for name, part in parts.items():
        out = out.when(part == top).then(pl.lit(name))
    return out.otherwise(pl.lit(None, pl.String)).alias("largest_loss")
