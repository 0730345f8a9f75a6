"""Job-level reliability: MTTF by job size with its 1/N projection, survival curves, Meta's r_f, ETTR by size.

All functions take the instance frame built by :func:`gpusre.models.reliability.training_runs.run_instances`
with an ``infra_failure`` flag (NODE_FAIL/BOOT_FAIL, or attributed to the infrastructure from node
logs). Runtime is every started instance's elapsed time: a requeued job is exposed once per instance.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from gpusre.models.reliability.ettr_model import (ETTR_INCLUDES_QUEUE_WAIT, checkpoint_what_if, expected_ettr,
                                                  interval_for_target)
from gpusre.models.reliability.failure_rates import add_mtbf_columns, garwood_interval
from gpusre.models.reliability.job_size_scaling import fit_inverse_scaling, kaplan_meier_by_group, project_mttf
from gpusre.models.reliability.training_runs import CheckpointAssumption
from gpusre.models.vocabulary import SIZE_BUCKET_LABELS, size_bucket_expr

__all__ = ["job_mttf_by_size", "job_mttf_projection", "job_survival",
           "node_failure_rate", "ettr_by_size", "checkpoint_what_if_table", "PROJECTION_GPUS",
           "ETTR_QUANTILE_INTERPOLATION", "ettr_quantile"]

PROJECTION_GPUS = (1024, 4096, 16384, 131072)
#: How every ETTR percentile is taken: linear interpolation between the two nearest runs, which is
#: DuckDB's ``quantile_cont`` in ``sql/marts/ettr_window_by_size.sql`` (the SLO review's source), so
#: ``marts.ettr_by_size`` and the report quote one value for one quantity (Polars' default, the
#: nearest run, gave p10 0.39 where the report said 0.51).
ETTR_QUANTILE_INTERPOLATION = "linear"
#: Survival curves keep at most this many points per bucket: enough for a chart, small for a mart.
_MAX_CURVE_POINTS = 200


def ettr_quantile(expr: pl.Expr, q: float) -> pl.Expr:
    """The ``q`` quantile of ETTR values, by :data:`ETTR_QUANTILE_INTERPOLATION` (= DuckDB ``quantile_cont``)."""
    return expr.quantile(q, interpolation=ETTR_QUANTILE_INTERPOLATION)


def _bucket_order() -> pl.Expr:
    return pl.col("gpus_bucket").replace_strict({b: i for i, b in enumerate(SIZE_BUCKET_LABELS)}, default=0,
                                                return_dtype=pl.Int32)


def job_mttf_by_size(inst: pl.DataFrame, min_failures: int = 3) -> pl.DataFrame:
    """Per size bucket: ``gpus_bucket``, ``bucket_order``, ``jobs``, ``instances``, ``infra_failures``,
    ``runtime_hours``, ``gpu_hours``, ``mttf_hours``, ``ci_low``, ``ci_high``, ``sufficient``, ``note``."""
    agg = (inst.with_columns(size_bucket_expr().alias("gpus_bucket"))
           .group_by("gpus_bucket")
           .agg(pl.col("job_id").n_unique().cast(pl.Int64).alias("jobs"), pl.len().cast(pl.Int64).alias("instances"),
                pl.col("infra_failure").sum().cast(pl.Int64).alias("infra_failures"),
                (pl.col("elapsed_eff_s").sum() / 3600).alias("runtime_hours"),
                (pl.col("elapsed_eff_s") * pl.col("n_gpus")).sum().truediv(3600).alias("gpu_hours"))
           .with_columns(_bucket_order().alias("bucket_order"))
           .sort("bucket_order"))
    out = add_mtbf_columns(agg, failures_col="infra_failures", exposure_col="runtime_hours",
                           min_failures=min_failures)
    return out.rename({"mtbf_hours": "mttf_hours"}).drop("rate_per_1000_node_days").select(
        "gpus_bucket", "bucket_order", "jobs", "instances", "infra_failures", "runtime_hours", "gpu_hours",
        "mttf_hours", "ci_low", "ci_high", "sufficient", "note")


def job_mttf_projection(inst: pl.DataFrame, targets: tuple[int, ...] = PROJECTION_GPUS) -> pl.DataFrame:
    """MTTF vs job size from the 1/N fit (rate per GPU-hour of runtime), measured buckets and projections.

    Rows: ``kind`` (``measured``/``projected``), ``n_gpus`` (median GPUs of a bucket, or the target),
    ``mttf_hours``, ``ci_low``, ``ci_high``, and the fit's ``r_gpu_per_hour``, ``exponent`` (free
    exponent of a Poisson GLM; 1 means MTTF ∝ 1/N holds) with its CI.
    """
    schema = {"kind": pl.String, "gpus_bucket": pl.String, "n_gpus": pl.Int64, "mttf_hours": pl.Float64,
              "ci_low": pl.Float64, "ci_high": pl.Float64, "r_gpu_per_hour": pl.Float64, "exponent": pl.Float64,
              "exponent_ci_low": pl.Float64, "exponent_ci_high": pl.Float64}
    per = (inst.filter(pl.col("elapsed_eff_s") > 0)
           .group_by("n_gpus").agg(pl.col("infra_failure").sum().alias("f"),
                                   (pl.col("elapsed_eff_s").sum() / 3600).alias("h"))
           .sort("n_gpus"))  # the GLM's float results depend on row order; reruns must be identical
    if not per.height or per.get_column("f").sum() == 0:
        return pl.DataFrame(schema=schema)
    fit = fit_inverse_scaling(per.get_column("n_gpus").to_numpy(), per.get_column("f").to_numpy(),
                              per.get_column("h").to_numpy())
    proj = project_mttf(fit, targets)
    measured = (inst.with_columns(size_bucket_expr().alias("gpus_bucket"))
                .group_by("gpus_bucket").agg(pl.col("n_gpus").median().round(0).cast(pl.Int64).alias("n_gpus")))
    measured = project_mttf(fit, tuple(int(x) for x in measured.get_column("n_gpus").to_list())).join(
        measured, on="n_gpus", how="left")
    common = {"r_gpu_per_hour": fit.r_gpu_per_hour, "exponent": fit.exponent,
              "exponent_ci_low": fit.exponent_ci_low, "exponent_ci_high": fit.exponent_ci_high}
    rows = pl.concat([
        measured.with_columns(pl.lit("fit at bucket median").alias("kind")),
        proj.with_columns(pl.lit("projected").alias("kind"), pl.lit(None, dtype=pl.String).alias("gpus_bucket")),
    ], how="diagonal_relaxed").with_columns(*[pl.lit(v, dtype=pl.Float64).alias(k) for k, v in common.items()])
    return rows.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("n_gpus", "kind")


def job_survival(inst: pl.DataFrame) -> pl.DataFrame:
    """Kaplan–Meier survival of instances' time to infrastructure failure per size bucket (others censored).

    ``gpus_bucket``, ``time_h``, ``survival``, ``ci_low``, ``ci_high``, ``at_risk``; thinned to at most
    200 points per bucket (every event time is kept when there are fewer).
    """
    data = (inst.filter(pl.col("elapsed_eff_s") > 0)
            .select("job_id", "instance_no", "elapsed_eff_s", "infra_failure", size_bucket_expr().alias("gpus_bucket"))
            .sort("job_id", "instance_no"))
    schema = {"gpus_bucket": pl.String, "time_h": pl.Float64, "survival": pl.Float64, "ci_low": pl.Float64,
              "ci_high": pl.Float64, "at_risk": pl.Int64}
    if not data.height:
        return pl.DataFrame(schema=schema)
    km = kaplan_meier_by_group((data.get_column("elapsed_eff_s") / 3600).to_numpy(),
                               data.get_column("infra_failure").to_numpy().astype(bool),
                               data.get_column("gpus_bucket").to_numpy())
    km = km.rename({"group": "gpus_bucket"}) if "group" in km.columns else km
    thinned = (km.with_columns(pl.int_range(pl.len()).over("gpus_bucket").alias("_i"),
                               pl.len().over("gpus_bucket").alias("_n"))
               .filter((pl.col("_n") <= _MAX_CURVE_POINTS)
                       | (pl.col("_i") % (pl.col("_n") // _MAX_CURVE_POINTS + 1) == 0)
                       | (pl.col("_i") == pl.col("_n") - 1)))
    # Every curve starts at (0 h, 100 %) with everyone at risk, so charts and readers need no special case.
    starts = data.group_by("gpus_bucket").agg(pl.len().alias("at_risk")).with_columns(
        pl.lit(0.0).alias("time_h"), pl.lit(1.0).alias("survival"), pl.lit(1.0).alias("ci_low"),
        pl.lit(1.0).alias("ci_high"))
    out = pl.concat([starts.select(list(schema)).cast(schema), thinned.select([pl.col(c).cast(t) for c, t in schema.items()])])
    return out.sort("gpus_bucket", "time_h", maintain_order=True)


def node_failure_rate(mtbf: pl.DataFrame, inst: pl.DataFrame, min_job_gpus: int = 128,
                      min_failures: int = 3) -> pl.DataFrame:
    """Failures per 1,000 node-days, comparable with published figures (RSC-1 6.50, RSC-2 2.34, Llama 3 ≈ 3.8).

    Variants: ``hw_incidents`` (every hardware incident over in-service node-days, from the cluster
    rows of ``mtbf``), and ``jobs_gt_<N>_gpus`` (Meta's: infrastructure failures of jobs with more
    than N GPUs over those jobs' node-days of runtime).
    """
    rows = mtbf.filter(pl.col("scope") == "cluster").select(
        "period_type", "period", pl.lit("hw_incidents").alias("variant"), "failures",
        (pl.col("exposure_hours") / 24).alias("node_days"))
    big = inst.filter(pl.col("n_gpus") > min_job_gpus)
    f = int(big.get_column("infra_failure").sum()) if big.height else 0
    nd = float((big.get_column("elapsed_eff_s") * big.get_column("n_nodes").fill_null(1)).sum() / 86400) if big.height else 0.0
    meta = pl.DataFrame({"period_type": ["all"], "period": ["all"], "variant": [f"jobs_gt_{min_job_gpus}_gpus"],
                         "failures": [f], "node_days": [nd]})
    out = pl.concat([rows, meta.cast(rows.schema)], how="vertical")
    k = out.get_column("failures").to_numpy()
    d = out.get_column("node_days").to_numpy()
    lo = np.full(k.size, np.nan)
    hi = np.full(k.size, np.nan)
    for i in range(k.size):  # a handful of rows (periods × 2): scalar Garwood is clearer than vectorising
        if d[i] > 0:
            lo[i], hi[i] = garwood_interval(int(k[i]), float(d[i]) / 1000.0)
    return out.with_columns(
        pl.when(pl.col("node_days") > 0).then(pl.col("failures") / pl.col("node_days") * 1000)
        .alias("rate_per_1000_node_days"),
        pl.Series("ci_low", lo).fill_nan(None), pl.Series("ci_high", hi).fill_nan(None),
        (pl.col("failures") >= min_failures).alias("sufficient"),
    )


def ettr_by_size(runs: pl.DataFrame, r_f_per_node_day: float | None) -> pl.DataFrame:
    """Per run size bucket: runs, measured ETTR (mean, p10, p50, p90 by :func:`ettr_quantile`, as
    ``marts.ettr_window_by_size``) and Meta's expected ETTR.

    The expectation uses the bucket's median node count, the measured cluster r_f, and the median
    checkpoint interval / restart overhead of its runs (queue term 0, the published form). Measured
    ETTR also pays the queue wait (from the first eligible time), which the formula leaves out:
    ``queue_share_mean`` (mean of queue / wall-clock) shows how much of the gap that is, and
    ``ettr_excl_queue_mean`` (productive / (wall-clock − queue)) is the like-for-like comparison.
    """
    schema = {"gpus_bucket": pl.String, "bucket_order": pl.Int32, "runs": pl.Int64, "n_nodes_median": pl.Float64,
              "ettr_mean": pl.Float64, "ettr_p10": pl.Float64, "ettr_p50": pl.Float64, "ettr_p90": pl.Float64,
              "interruptions_per_run": pl.Float64, "queue_share_mean": pl.Float64,
              "ettr_excl_queue_mean": pl.Float64, "expected_ettr": pl.Float64,
              "r_f_per_1000_node_days": pl.Float64}
    done = runs.filter(~pl.col("ongoing") & pl.col("ettr").is_not_null())
    if not done.height:
        return pl.DataFrame(schema=schema)
    agg = (done.with_columns(size_bucket_expr().alias("gpus_bucket"))
           .group_by("gpus_bucket")
           .agg(pl.len().alias("runs"), pl.col("n_nodes").median().alias("n_nodes_median"),
                pl.col("ettr").mean().alias("ettr_mean"),
                *(ettr_quantile(pl.col("ettr"), q).alias(f"ettr_p{round(q * 100)}") for q in (0.1, 0.5, 0.9)),
                pl.col("interruptions").mean().alias("interruptions_per_run"),
                (pl.col("queue_s") / pl.col("wallclock_s")).mean().alias("queue_share_mean"),
                # what the closed form (queue term 0) predicts: productive over the time the run held GPUs or
                # waited between its jobs, queue wait left out
                pl.col("ettr_excl_queue").clip(upper_bound=1).mean().alias("ettr_excl_queue_mean"),
                pl.col("checkpoint_interval_s").median().alias("_dt"),
                pl.col("restart_overhead_cfg_s").median().alias("_u0"))
           .with_columns(_bucket_order().alias("bucket_order")))
    # A bucket whose runs' node counts are unknown (a dump without NNodes and no node list) has no
    # expectation: the closed form needs the run's node count.
    expected = [expected_ettr(n, r_f_per_node_day, dt, u0) if r_f_per_node_day is not None and n is not None else None
                for n, dt, u0 in agg.select("n_nodes_median", "_dt", "_u0").rows()]
    out = agg.with_columns(pl.Series("expected_ettr", expected, dtype=pl.Float64),
                           pl.lit(None if r_f_per_node_day is None else r_f_per_node_day * 1000,
                                  dtype=pl.Float64).alias("r_f_per_1000_node_days"))
    return out.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("bucket_order")


def checkpoint_what_if_table(n_nodes: int, r_f_per_node_day: float | None, checkpoint: CheckpointAssumption,
                             target: float = 0.9, *, includes_queue_wait: bool = ETTR_INCLUDES_QUEUE_WAIT,
                             measured: pl.DataFrame | None = None) -> pl.DataFrame:
    """Expected ETTR vs checkpoint interval for a run of ``n_nodes`` nodes, and the interval reaching ``target``,
    in the ETTR SLO's definition, so the what-if and the SLO status cannot contradict each other.

    ``checkpoint`` is the site policy (its restart overhead and write time); ``measured`` the finished runs the
    SLO counts (``ettr_runs`` rows: ``productive_s``, ``wallclock_s``, ``queue_s``). The closed form
    (:func:`expected_ettr`) has no queue wait: it is ``expected_ettr_excl_queue``. With queue wait in the
    definition, ``expected_ettr`` = that × (1 − ``queue_share``), where ``queue_share`` = Σ queue / Σ wall-clock
    of ``measured``: for sums, Σp/Σw = Σp/Σ(w − q) · Σ(w − q)/Σw exactly, and a checkpoint interval does not
    change how long runs wait in the queue. ``measured_ettr`` is the SLO's ratio over ``measured`` (all time),
    to set the expectation against. With no ``measured`` run (no run the SLO counts has finished) both are None,
    never a figure over other runs, and ``expected_ettr`` is the closed form alone (queue wait unknown). Rows: ``n_nodes``, ``interval_s``, ``expected_ettr``, ``reaches_target``,
    ``target``, ``max_interval_for_target_s`` (None: no interval reaches it), ``expected_ettr_excl_queue``,
    ``queue_share``, ``measured_ettr``, ``includes_queue_wait``.
    """
    schema = {"n_nodes": pl.Int64, "interval_s": pl.Int64, "expected_ettr": pl.Float64, "reaches_target": pl.Boolean,
              "target": pl.Float64, "max_interval_for_target_s": pl.Float64, "expected_ettr_excl_queue": pl.Float64,
              "queue_share": pl.Float64, "measured_ettr": pl.Float64, "includes_queue_wait": pl.Boolean}
    if n_nodes <= 0 or not r_f_per_node_day:
        return pl.DataFrame(schema=schema)
    queue_share: float | None = None
    measured_ettr: float | None = None
    if measured is not None and measured.height:
        wall, queue, productive = (float(measured[c].cast(pl.Float64).sum()) for c in ("wallclock_s", "queue_s",
                                                                                         "productive_s"))
        queue_share = queue / wall if wall > 0 else 0.0
        denominator = wall if includes_queue_wait else wall - queue
        measured_ettr = min(productive / denominator, 1.0) if denominator > 0 else None
    keep = (1.0 - queue_share) if includes_queue_wait and queue_share is not None else 1.0
    u0 = float(checkpoint.restart_overhead_s)
    w = float(checkpoint.write_s)
    table = checkpoint_what_if(n_nodes, r_f_per_node_day, u0, w).rename({"expected_ettr": "expected_ettr_excl_queue"})
    # the target in closed-form terms: what ETTR without queue wait must reach for the SLO's ETTR to reach target
    closed_target = target / keep if keep > 0 else math.inf
    best = interval_for_target(n_nodes, r_f_per_node_day, u0, w, closed_target) if closed_target < 1 else None
    best_hi = best[1] if isinstance(best, tuple) else best
    return table.with_columns(
        pl.lit(n_nodes).alias("n_nodes"), (pl.col("expected_ettr_excl_queue") * keep).alias("expected_ettr"),
        pl.lit(target).alias("target"), pl.lit(best_hi, dtype=pl.Float64).alias("max_interval_for_target_s"),
        pl.lit(queue_share, dtype=pl.Float64).alias("queue_share"), pl.lit(measured_ettr, dtype=pl.Float64).alias("measured_ettr"),
        pl.lit(includes_queue_wait).alias("includes_queue_wait"),
    ).with_columns((pl.col("expected_ettr") >= target).alias("reaches_target")
    ).select([pl.col(c).cast(t) for c, t in schema.items()])
