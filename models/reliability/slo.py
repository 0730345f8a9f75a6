"""Daily SLIs, error budgets and burn rates for the cluster's service-level objectives.

Every SLI is a ratio of good to total events per UTC day, so budgets add up over any window:

==================  ========================================================  =======================================
SLI                 good                                                      total
==================  ========================================================  =======================================
node_availability   scheduled node-hours − unplanned down node-hours           node-hours − planned maintenance
job_infra_success   GPU job runs that ended that day not killed by the infra   GPU job runs that ended that day
ettr_large_runs     productive seconds of runs ≥ N GPUs that ended that day    their wall-clock seconds
goodput             productive GPU-hours                                       capacity − planned maintenance GPU-h
==================  ========================================================  =======================================

Node availability comes from Slurm node states (``marts.node_availability_daily``) on the days they
cover; elsewhere down node-hours are estimated from node incidents (start until the node again ran a
job that completed) — after the history's end too on the day it ends inside, so that day is a whole
day of node-hours (its measured part plus the estimated rest), not the minutes before a missing dump. The SLIs have daily resolution, so the SRE
Workbook's 1 h/5 min and 6 h/30 min page windows cannot be evaluated; the burn rates are over the
last 1 day (short) and 3 days (long, the Workbook's ticket window), budgets over the rolling window
(default 30 days). Status rules: :func:`gpusre.models.reliability.error_budget.slo_status`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.accounting_span import capacity_hours_expr
from gpusre.models.reliability.error_budget import rolling_burn_rates, slo_status
from gpusre.models.reliability.ettr_model import ETTR_INCLUDES_QUEUE_WAIT, ettr_definition
from gpusre.models.vocabulary import INFRASTRUCTURE, UNKNOWN, run_key

__all__ = ["SloTarget", "SLO_DAILY_SCHEMA", "daily_sli_counts", "slo_daily"]

SLO_DAILY_SCHEMA: dict[str, pl.DataType] = {
    "day": pl.Date(), "sli": pl.String(), "value": pl.Float64(), "objective": pl.Float64(), "good": pl.Float64(),
    "total": pl.Float64(), "budget_remaining": pl.Float64(), "burn_rate_short": pl.Float64(),
    "burn_rate_long": pl.Float64(), "status": pl.String(), "ettr": pl.Float64(), "ettr_excl_queue": pl.Float64(),
    "definition": pl.String(), "source": pl.String(), "window_days": pl.Int32(), "window_days_covered": pl.Int32(),
    # job_infra_success only (NULL on the other SLIs): failed runs of unknown cause, counted good — the
    # value is an upper bound while it is > 0 (no node-log evidence either way)
    "unknown_failures": pl.Int64(),
}
#: What each SLI measures, for the ``definition`` column (ETTR's depends on settings: :func:`ettr_definition`).
SLI_DEFINITIONS: dict[str, str] = {
    "node_availability": ("Scheduled node-hours minus unplanned down node-hours, over node-hours minus planned "
                          "maintenance; down time from Slurm node states, and on days without them (and after "
                          "their end on the day they end inside) estimated from node incidents (from the incident "
                          "until its repair, as time to repair measures it)."),
    "job_infra_success": ("GPU job runs that ended that day and were not killed by the infrastructure, over all GPU "
                          "job runs that ended that day (a job's final run and the earlier runs Slurm requeued: a run "
                          "a node failure killed counts as killed even when the job completed after its requeue; a run planned "
                          "maintenance on its node ended, with no fault, is not killed by the infrastructure)."),
    "goodput": ("Productive GPU-hours over capacity GPU-hours minus planned maintenance (the SLO's budget is not "
                "spent by planned maintenance, as node availability's is not; marts.goodput_daily.goodput keeps "
                "maintenance in its capacity)."),
}


@dataclass(frozen=True)
class SloTarget:
    """One objective: ``sli`` must be at least ``objective`` over the window."""

    sli: str
    objective: float


def _day_hours(t0: datetime, t1: datetime) -> pl.DataFrame:
    """Hours of each UTC day of [t0, t1): the one capacity rule
    (:func:`~gpusre.models.accounting_span.capacity_hours_expr`), 24 unless the day is partial."""
    if t1 <= t0:
        return pl.DataFrame(schema={"day": pl.Date, "hours": pl.Float64})
    days = pl.date_range(t0.astimezone(timezone.utc).date(),
                         (t1.astimezone(timezone.utc) - timedelta(microseconds=1)).date(), "1d", eager=True)
    return (pl.DataFrame({"day": days}, schema={"day": pl.Date})
            .with_columns(capacity_hours_expr(pl.col("day"), t1).alias("hours"))
            .filter(pl.col("hours") > 0))


def daily_sli_counts(*, node_count: int, maintenance_node_hours: pl.DataFrame, down: pl.DataFrame,
                     jobs: pl.DataFrame, job_attribution: pl.DataFrame, runs: pl.DataFrame,
                     goodput: pl.DataFrame, ettr_min_run_gpus: int, t0: datetime, t1: datetime,
                     availability: pl.DataFrame | None = None,
                     ettr_includes_queue_wait: bool = ETTR_INCLUDES_QUEUE_WAIT,
                     estimate_availability: bool = True, job_slis: bool = True,
                     earlier_runs: pl.DataFrame | None = None,
                     earlier_attribution: pl.DataFrame | None = None,
                     down_spans: pl.DataFrame | None = None) -> pl.DataFrame:
    """Long frame ``day``, ``sli``, ``good``, ``total`` for every day of [t0, t1) and every SLI.

    ETTR rows also carry ``ettr`` (productive / wall-clock) and ``ettr_excl_queue`` (productive /
    (wall-clock − queue wait)); ``good``/``total`` follow ``ettr_includes_queue_wait``
    (:data:`~gpusre.models.reliability.ettr_model.ETTR_INCLUDES_QUEUE_WAIT` says why it defaults to False).

    With ``availability`` (``marts.node_availability_daily`` from Slurm node states), node
    availability on the days it covers is in-service hours over observed hours less planned
    maintenance; other days keep the estimate from incidents. ``source`` says which:
    ``node_states`` or ``incidents`` (estimated from hardware incidents) on node-availability rows,
    ``sacct`` on the job SLIs. Without node logs (``estimate_availability`` False) there is no
    incident to estimate from: those days have no node-availability row (unknown, not 100 %).
    Without accounting (``job_slis`` False) the job SLIs have no rows. ``earlier_runs`` (``job_id``,
    ``instance_no``, ``start_ts``, ``end_ts``: the started instances ``core.jobs`` does not show) and
    ``earlier_attribution`` (``job_id``, ``instance_no``, ``attribution``) add a requeued job's earlier
    runs to ``job_infra_success``: every run counts, as in the job marts.

    Every day's hours follow the one capacity rule (:func:`~gpusre.models.accounting_span.capacity_hours_expr`)
    over the days of ``[t0, t1)`` (the observation span: the accounting's first to last moment): 24, the hours up
    to ``t1`` on a last day it ends more than an hour before midnight — the hours of
    ``marts.utilization_daily``'s and ``marts.goodput_daily``'s capacity and of the node states' observed hours.

    A day the node-state history covers only in part — its dumps end inside the day (a missing
    nightly ``sacctmgr show event`` dump) while the observation span goes on — is not a day of the
    covered minutes: the rest of it, up to the day's end or ``t1``, is estimated from incidents as a
    day without node states is, and added to the measured part (``source`` =
    ``node_states+incidents``), so the day's total is the whole day's scheduled node-hours. The
    estimated down time of that rest is the incident down time inside it: exact with ``down_spans``
    (``node``, ``start_ts``, ``end_ts``: the incidents' down spans ``down`` sums per day), else the
    day's ``down`` pro rata of its hours.
    """
    days = _day_hours(t0, t1)
    avail = (days.join(maintenance_node_hours, on="day", how="left").join(down, on="day", how="left")
             .with_columns((pl.col("hours") * node_count - pl.col("maintenance_node_hours").fill_null(0))
                           .clip(lower_bound=0).alias("total"))
             .select("day", pl.lit("node_availability").alias("sli"),
                     (pl.col("total") - pl.col("down_node_hours").fill_null(0)).clip(lower_bound=0).alias("good"),
                     "total", pl.lit("incidents").alias("source")))
    if availability is not None and availability.height:
        measured = (availability.sort("day", "node").group_by(pl.col("day").cast(pl.Date))
                    .agg(pl.col("in_service_hours").sum().alias("good"),
                         (pl.col("observed_hours") - pl.col("down_maintenance_hours")).sum().alias("total")))
        avail = (avail.join(measured, on="day", how="left", suffix="_m")
                 .select("day", "sli", pl.coalesce("good_m", "good").alias("good"),
                         pl.coalesce("total_m", "total").alias("total"),
                         pl.when(pl.col("total_m").is_not_null()).then(pl.lit("node_states"))
                         .otherwise(pl.col("source")).alias("source")))
        if estimate_availability:
            avail = _estimate_after_history_end(avail, availability, days, node_count=node_count,
                                                maintenance_node_hours=maintenance_node_hours, down=down,
                                                down_spans=down_spans, t0=t0, t1=t1)
    if not estimate_availability:
        avail = avail.filter(pl.col("source") != "incidents")
    if not job_slis:
        return avail.with_columns(pl.min_horizontal("good", "total").clip(lower_bound=0).alias("good"))
    # Per run: killed by the infrastructure (bad), or failed of unknown cause (good by the SLI's definition —
    # not attributed to the infrastructure — but counted, so the value can be read as the upper bound it is).
    flags = [(pl.col("attribution") == INFRASTRUCTURE).cast(pl.Int64).alias("_bad"),
             (pl.col("attribution") == UNKNOWN).cast(pl.Int64).alias("_unknown")]
    attributed = job_attribution.select("job_id", *flags)
    all_runs = jobs.select("job_id", "start_ts", "end_ts")
    if earlier_runs is not None and earlier_runs.height:
        all_runs = pl.concat([all_runs.with_columns(pl.col("job_id").cast(pl.String)),
                              earlier_runs.select(run_key(), "start_ts", "end_ts")], how="vertical_relaxed")
        if earlier_attribution is not None and earlier_attribution.height:
            attributed = pl.concat([attributed.with_columns(pl.col("job_id").cast(pl.String)),
                                    earlier_attribution.select(run_key(), *flags)], how="vertical_relaxed")
    attributed = attributed.filter((pl.col("_bad") + pl.col("_unknown")) > 0).unique("job_id", keep="first")
    ended = (all_runs.filter(pl.col("end_ts").is_not_null() & pl.col("start_ts").is_not_null())
             .join(attributed, on="job_id", how="left")
             .group_by(pl.col("end_ts").dt.date().alias("day"))
             .agg(pl.len().cast(pl.Float64).alias("total"), pl.col("_bad").fill_null(0).sum().cast(pl.Float64).alias("bad"),
                  pl.col("_unknown").fill_null(0).sum().cast(pl.Int64).alias("unknown_failures")))
    jobs_sli = days.select("day").join(ended, on="day", how="left").select(
        "day", pl.lit("job_infra_success").alias("sli"),
        (pl.col("total").fill_null(0) - pl.col("bad").fill_null(0)).alias("good"), pl.col("total").fill_null(0),
        pl.col("unknown_failures").fill_null(0))
    big = (runs.filter(~pl.col("ongoing") & (pl.col("n_gpus") >= ettr_min_run_gpus))
           # fixed order for the float sums (rows equal in these columns add the same terms)
           .sort("last_end_ts", "productive_s", "wallclock_s", "n_gpus")
           .group_by(pl.col("last_end_ts").dt.date().alias("day"))
           .agg(pl.col("productive_s").sum().cast(pl.Float64).alias("good"),
                pl.col("wallclock_s").sum().cast(pl.Float64).alias("wall"),
                (pl.col("wallclock_s") - pl.col("queue_s")).clip(lower_bound=0).sum().cast(pl.Float64).alias("held")))
    ettr_sli = days.select("day").join(big, on="day", how="left").select(
        "day", pl.lit("ettr_large_runs").alias("sli"), pl.col("good").fill_null(0),
        pl.col("wall" if ettr_includes_queue_wait else "held").fill_null(0).alias("total"),
        pl.when(pl.col("wall") > 0).then(pl.col("good") / pl.col("wall")).alias("ettr"),
        pl.when(pl.col("held") > 0).then(pl.col("good") / pl.col("held")).alias("ettr_excl_queue"))
    # The goodput SLO's budget, like node availability's, is not spent by planned maintenance: its total is
    # capacity minus the maintenance GPU-hours (marts.goodput_daily.goodput keeps them in, by definition).
    maint = (pl.col("maintenance_gpu_hours").fill_null(0) if "maintenance_gpu_hours" in goodput.columns
             else pl.lit(0.0))
    gp = days.select("day").join(goodput.select("day", "productive_gpu_hours", "capacity_gpu_hours",
                                                maint.alias("_maint")),
                                 on="day", how="left").select(
        "day", pl.lit("goodput").alias("sli"), pl.col("productive_gpu_hours").fill_null(0).alias("good"),
        (pl.col("capacity_gpu_hours").fill_null(0) - pl.col("_maint").fill_null(0)).clip(lower_bound=0)
        .alias("total"))
    # good <= total by construction; the clip only absorbs rounding and runs whose jobs overlapped
    # (a shared run key on concurrent jobs can make productive time exceed wall-clock).
    return pl.concat([avail, *(f.with_columns(pl.lit("sacct").alias("source")) for f in (jobs_sli, ettr_sli, gp))],
                     how="diagonal_relaxed").with_columns(
        pl.min_horizontal("good", "total").clip(lower_bound=0).alias("good"))



def _history_end(availability: pl.DataFrame, t0: datetime) -> datetime:
    """Where the node-state history ends: the last day of ``marts.node_availability_daily`` counts
    ``observed_hours`` from its midnight up to it."""
    last = availability.get_column("day").cast(pl.Date).max()
    hours = availability.filter(pl.col("day").cast(pl.Date) == last).get_column("observed_hours").max()
    midnight = datetime.combine(last, datetime.min.time(), tzinfo=t0.tzinfo)  # type: ignore[arg-type]
    # observed hours run from the day's midnight, the first day's too (the one capacity rule)
    return midnight + timedelta(hours=float(hours or 0.0))


#: A history that ends this close to a day's end covers the day (float hours in the mart are rounded).
_HISTORY_END_SLACK = timedelta(seconds=1)


def _estimate_after_history_end(avail: pl.DataFrame, availability: pl.DataFrame, days: pl.DataFrame, *,
                                node_count: int, maintenance_node_hours: pl.DataFrame, down: pl.DataFrame,
                                down_spans: pl.DataFrame | None, t0: datetime, t1: datetime) -> pl.DataFrame:
    """The node-availability rows with the day the node-state history ends inside completed by the
    incident estimate for its uncovered rest (:func:`daily_sli_counts` says why)."""
    end = _history_end(availability, t0)
    day = end.date()
    day_h = days.filter(pl.col("day") == day).get_column("hours")
    if not day_h.len() or not day_h[0]:
        return avail
    midnight = datetime.combine(day, datetime.min.time(), tzinfo=end.tzinfo) + timedelta(days=1)
    # a whole day (the capacity rule) runs to midnight even when t1 stops short of it
    day_end = midnight if day_h[0] >= 24.0 else min(midnight, t1)
    rest_h = (day_end - end).total_seconds() / 3600
    if end <= t0 or rest_h * 3600 <= _HISTORY_END_SLACK.total_seconds():
        return avail
    share = rest_h / day_h[0]  # the rest's share of the day's hours inside [t0, t1)
    maint = maintenance_node_hours.filter(pl.col("day") == day).get_column("maintenance_node_hours").sum()
    # Planned maintenance comes per day only: the rest gets its share of the day's.
    rest_total = max(0.0, rest_h * node_count - float(maint or 0.0) * share)
    if down_spans is not None:
        lo, hi = pl.lit(end).cast(pl.Datetime("us", "UTC")), pl.lit(day_end).cast(pl.Datetime("us", "UTC"))
        rest_down = float(down_spans.select(
            ((pl.min_horizontal("end_ts", hi) - pl.max_horizontal("start_ts", lo)).dt.total_microseconds()
             .clip(lower_bound=0) / 3.6e9).sum()).item() or 0.0)
    else:
        rest_down = float(down.filter(pl.col("day") == day).get_column("down_node_hours").sum() or 0.0) * share
    rest_good = max(0.0, rest_total - min(rest_down, rest_total))
    covered = pl.col("day") == day
    measured = covered & (pl.col("source") == "node_states")
    return avail.with_columns(
        pl.when(measured).then(pl.col("good") + rest_good).otherwise(pl.col("good")).alias("good"),
        pl.when(measured).then(pl.col("total") + rest_total).otherwise(pl.col("total")).alias("total"),
        pl.when(measured).then(pl.lit("node_states+incidents")).otherwise(pl.col("source")).alias("source"))


def slo_daily(*, targets: Sequence[SloTarget], window_days: int, t0: datetime, t1: datetime,
              **counts: object) -> pl.DataFrame:
    """:data:`SLO_DAILY_SCHEMA` rows: per day and configured SLI, value, budget left, burn rates and status.

    ``counts`` are the keyword arguments of :func:`daily_sli_counts`. ``definition`` states what each SLI
    divides by (for ETTR: with or without queue wait, and why); ``ettr`` and ``ettr_excl_queue`` give both
    ETTR variants side by side on the ``ettr_large_runs`` rows.
    """
    long = daily_sli_counts(t0=t0, t1=t1, **counts)  # type: ignore[arg-type]
    definitions = {**SLI_DEFINITIONS, "ettr_large_runs": ettr_definition(
        bool(counts.get("ettr_includes_queue_wait", ETTR_INCLUDES_QUEUE_WAIT)), int(counts["ettr_min_run_gpus"]))}
    frames = []
    for target in targets:
        series = long.filter(pl.col("sli") == target.sli).sort("day")
        if not series.height:
            continue
        rated = rolling_burn_rates(series, "day", "good", "total", target.objective, short_days=1, long_days=3,
                                   window_days=window_days)
        statuses = [slo_status(b, s, lg) for b, s, lg in
                    rated.select("budget_remaining", "burn_rate_short", "burn_rate_long").rows()]
        frames.append(rated.with_columns(
            pl.lit(target.sli).alias("sli"),
            pl.lit(target.objective).alias("objective"),
            pl.when(pl.col("total") > 0).then(pl.col("good") / pl.col("total")).alias("value"),
            pl.Series("status", statuses, dtype=pl.String),
            pl.lit(definitions[target.sli]).alias("definition"),
            # the budget period budget_remaining covers: a review of a longer window must not pool it away
            pl.lit(window_days, dtype=pl.Int32).alias("window_days"),
        ).join(series.select("day", *(c for c in ("ettr", "ettr_excl_queue", "source", "unknown_failures")
                                      if c in series.columns)),
               on="day", how="left"))
    if not frames:
        return pl.DataFrame(schema=SLO_DAILY_SCHEMA)
    cols = set().union(*(f.columns for f in frames))
    return (pl.concat(frames, how="diagonal_relaxed")
            .select([(pl.col(c) if c in cols else pl.lit(None)).cast(t).alias(c) for c, t in SLO_DAILY_SCHEMA.items()])
            .sort("sli", "day"))
