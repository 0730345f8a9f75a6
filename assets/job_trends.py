"""Marts: job-trend analyses over core.jobs.

Daily marts (job usage by state and size, utilization) are partitioned by UTC day: a run recomputes
its partition's day(s) and every changed day queued in core.dirty_days; a backfill over a range runs as one transaction
(``BackfillPolicy.single_run()``). Roll-up marts (shares by period, runtime and queue-wait
quantiles, top consumers, trend tests, findings) are cheap aggregations recomputed from them.
"""


from datetime import date, timedelta

import dagster as dg
import duckdb

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.data_coverage import DAY_COVERAGE
from gpusre.assets.metadata import markdown_preview
from gpusre.models.job_mix import findings as findings_model
from gpusre.models.job_mix.cluster_comparison import write_cluster_comparison
from gpusre.models.job_mix import trends as trends_model
from gpusre.models.accounting_span import ACCOUNTING_SOURCE, accounting_span
from gpusre.models.day_coverage import mark_partial_days
from gpusre.models.ingest.record_days import refresh_record_days
from gpusre.models.marts_runner import (
    ROLLUP_MARTS,
    create_daily_mart_tables,
    queue_missing_days,
    run_daily_marts,
    run_mart_sql,
)
from gpusre.models.warehouse import transaction
from gpusre.pipelines.partitions import DAILY_PARTITIONS, WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

JOB_USAGE_DAILY = dg.AssetKey(["marts", "job_usage_daily"])
UTILIZATION_DAILY = dg.AssetKey(["marts", "utilization_daily"])
UTILIZATION_BY_POOL_DAILY = dg.AssetKey(["marts", "utilization_by_pool_daily"])
SIZE_SHARE_TREND = dg.AssetKey(["marts", "size_share_trend"])
FINDINGS = dg.AssetKey(["marts", "findings"])
CLUSTER_COMPARISON = dg.AssetKey(["marts", "cluster_comparison"])

_MART_DESCRIPTIONS: dict[str, str] = {
    "gpu_time_by_state": "Per period (all / month / ISO week) and final state: jobs, GPU-hours and their shares.",
    "size_buckets": "Per period and job size bucket (GPUs): share of job count vs share of GPU-hours.",
    "runtime_quantiles": "Per size bucket: runtime p50/p90/p99/max in hours — the long tail of large jobs.",
    "queue_wait_quantiles": "Per size bucket: queue wait p50/p90/p99/max in minutes.",
    "top_consumers": "Top 20 users and accounts by GPU-hours of finished GPU jobs.",
}


#: The daily marts read core.jobs and take their partial flags from marts.day_coverage.
_DAILY_DEPS = [CORE_JOBS, DAY_COVERAGE]


def _days(context: dg.AssetExecutionContext) -> list[date]:
    window = context.partition_time_window
    day = window.start.date()
    out: list[date] = []
    while day < window.end.date():
        out.append(day)
        day += timedelta(days=1)
    return out


@dg.multi_asset(
    specs=[
        dg.AssetSpec(JOB_USAGE_DAILY, deps=_DAILY_DEPS, group_name="marts", kinds={"duckdb"},
                     description="Per UTC day, final state and size bucket: GPU jobs that ended that day and their "
                     "GPU-hours; partial = the data covers the day only in part."),
        dg.AssetSpec(UTILIZATION_DAILY, deps=_DAILY_DEPS, group_name="marts", kinds={"duckdb"},
                     description="Per UTC day: capacity vs allocated GPU-hours (overlap of each job with the day); "
                     "partial = the data covers the day only in part (left out of means and minima)."),
        dg.AssetSpec(UTILIZATION_BY_POOL_DAILY, deps=_DAILY_DEPS, group_name="marts", kinds={"duckdb"},
                     description="Per UTC day and pool (cluster.yaml pools: a GPU generation; 'all' without them): "
                     "capacity vs allocated GPU-hours, each job's GPUs split over its nodes; the pools sum to "
                     "utilization_daily."),
    ],
    partitions_def=DAILY_PARTITIONS,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=WAREHOUSE_POOL,
)
def daily_job_marts(context: dg.AssetExecutionContext, warehouse: WarehouseResource, landing: LandingResource):
    """Delete-then-insert, in one transaction, each day of the partition(s) and every day queued in
    core.dirty_days that is a partition, and drain the queue.

    Records one materialization per day recomputed, with that day's rows, jobs and GPU-hours (the
    run's own partitions, and the queued days outside them as materializations of their partitions)."""
    config = landing.cluster_config()
    capacity, pool_gpus, pool_by_node = config.capacity_gpus, config.pool_gpus, config.pool_by_node
    first = date.fromisoformat(DAILY_PARTITIONS.get_first_partition_key())
    last = date.fromisoformat(DAILY_PARTITIONS.get_last_partition_key())
    with warehouse.connect() as con:
        with transaction(con):
            # Not only the partition's day: every changed day the queue holds. A run's marts must not
            # lag its core — the nightly run or the sensor's run ingests dumps that touch several days
            # (a job ending after midnight, a late dump), and the roll-ups, findings and reports of the
            # same run read the daily marts. The queue is read, recomputed and drained in this one
            # transaction: a crash leaves marts and queue as they were, and the next run redoes it. So
            # a Dagster-launched run leaves the warehouse `gpusre run` leaves (whose range is exactly
            # the queued days), and a backfill also catches up whatever the queue holds.
            queue_missing_days(con)  # as `gpusre run` does: days nothing touched between two runs' ranges
            queued = [d for (d,) in con.sql("SELECT day FROM core.dirty_days ORDER BY day").fetchall()]
            outside = [d for d in queued if d < first or d > last]
            days = sorted(set(_days(context)) | {d for d in queued if first <= d <= last})
            # "Now" for running jobs is the dump time the data shows, not the wall clock: a rerun
            # over the same dumps must give the same numbers. The first moment starts utilization_daily on
            # the accounting's first day, as the reliability marts: it reads the dumps' record summary,
            # brought in step with this run's ingest first (the coverage roll-up refreshes it only later).
            refresh_record_days(con, sources=(ACCOUNTING_SOURCE,))
            acct_from, as_of = accounting_span(con)
            for day in days:
                run_daily_marts(con, day, capacity, as_of, pool_gpus, pool_by_node, acct_from=acct_from)
            # Days outside the partitions cannot be computed: dropped with a warning, as `gpusre run` does.
            con.execute("DELETE FROM core.dirty_days")
            # Every row, not only this partition's: yesterday's partial last day is complete once today's dump landed.
            mark_partial_days(con, "marts.job_usage_daily")
            mark_partial_days(con, "marts.utilization_daily")
            mark_partial_days(con, "marts.utilization_by_pool_daily")
        usage_by_day = _job_usage_by_day(con, days)
        util_by_day = _utilization_by_day(con, days)
        pool_by_day = _utilization_by_pool_by_day(con, days)
        util = con.execute(
            "SELECT avg(utilization) FROM marts.utilization_daily WHERE day BETWEEN ? AND ? AND NOT partial",
            [days[0], days[-1]]
        ).fetchall()[0][0]
    if outside:
        context.log.warning(f"{len(outside)} changed day(s) ({outside[0]} .. {outside[-1]}) are outside the daily "
                            f"partitions {first} .. {last}; set GPUSRE_PARTITIONS_START / "
                            "GPUSRE_PARTITIONS_AHEAD_DAYS to include them in daily marts")
    partition_days = _days(context)
    extra = [d for d in days if d not in set(partition_days)]
    span = f"{days[0]} .. {days[-1]}"
    context.log.info(f"daily marts: {len(days)} day(s) {span}"
                     + (f", {len(extra)} of them changed days outside the partition(s)" if extra else ""))
    # One materialization per day recomputed, each with that day's own figures: Dagster stamps a
    # MaterializeResult's metadata on every partition of a range run, so the day's figures go in as
    # partition-scoped metadata (which wins over the result's), and the changed days caught up
    # outside the run's partitions get their own materialization events. Otherwise the UI showed
    # a range's totals on each of its days, and a caught-up day as missing or as its stale last record.
    run_partitions = (f"{partition_days[0]} .. {partition_days[-1]}" if len(partition_days) > 1
                      else str(partition_days[0]))
    for day in extra:
        context.log_event(dg.AssetMaterialization(
            asset_key=JOB_USAGE_DAILY, partition=day.isoformat(),
            metadata={**usage_by_day[day], "caught_up_by_partition": run_partitions}))
        context.log_event(dg.AssetMaterialization(
            asset_key=UTILIZATION_DAILY, partition=day.isoformat(),
            metadata={**util_by_day[day], "caught_up_by_partition": run_partitions}))
        context.log_event(dg.AssetMaterialization(
            asset_key=UTILIZATION_BY_POOL_DAILY, partition=day.isoformat(),
            metadata={**pool_by_day[day], "caught_up_by_partition": run_partitions}))
    for day in partition_days:
        context.add_asset_metadata(usage_by_day[day], asset_key=JOB_USAGE_DAILY, partition_key=day.isoformat())
        context.add_asset_metadata(util_by_day[day], asset_key=UTILIZATION_DAILY, partition_key=day.isoformat())
        context.add_asset_metadata(pool_by_day[day], asset_key=UTILIZATION_BY_POOL_DAILY,
                                   partition_key=day.isoformat())
    # What the whole run did, named as such (every partition of the run carries it).
    run_meta = {"run_range": span, "run_days": len(days), "changed_days_caught_up": len(extra)}
    yield dg.MaterializeResult(asset_key=JOB_USAGE_DAILY, metadata={
        **run_meta,
        "run_rows": sum(int(usage_by_day[d]["dagster/row_count"]) for d in days),
        "run_gpu_hours": round(sum(float(usage_by_day[d]["gpu_hours"]) for d in days), 4)})
    yield dg.MaterializeResult(asset_key=UTILIZATION_DAILY, metadata={
        **run_meta, "run_mean_utilization_complete_days": float(util) if util is not None else None})
    yield dg.MaterializeResult(asset_key=UTILIZATION_BY_POOL_DAILY, metadata={**run_meta, "pools": len(pool_gpus)})


def _job_usage_by_day(con: duckdb.DuckDBPyConnection, days: list[date]) -> dict[date, dict[str, object]]:
    """Per day of ``days``: the Dagster metadata of its marts.job_usage_daily partition (rows, jobs,
    runs, GPU-hours, partial); a day without rows has zeros."""
    rows = {r[0]: r[1:] for r in con.execute(
        """SELECT day, count(*), COALESCE(sum(jobs), 0), COALESCE(sum(runs), 0), COALESCE(sum(gpu_hours), 0),
                  bool_or(partial)
           FROM marts.job_usage_daily WHERE day = ANY(?::DATE[]) GROUP BY day""", [days]).fetchall()}
    out: dict[date, dict[str, object]] = {}
    for day in days:
        n, jobs, runs, gpu_hours, partial = rows.get(day, (0, 0, 0, 0.0, None))
        out[day] = {"day": day.isoformat(), "dagster/row_count": int(n), "jobs": int(jobs), "runs": int(runs),
                    "gpu_hours": round(float(gpu_hours), 4), "partial": partial}
    return out


#: The utilization columns shown per day when the mart has them (its definition may grow or shrink).
_UTILIZATION_FIELDS = ("capacity_gpu_hours", "allocated_gpu_hours", "utilization", "jobs_running", "partial")


def _utilization_by_day(con: duckdb.DuckDBPyConnection, days: list[date]) -> dict[date, dict[str, object]]:
    """Per day of ``days``: the Dagster metadata of its marts.utilization_daily row (capacity,
    allocated GPU-hours, utilization, jobs running, partial)."""
    cur = con.execute("SELECT * FROM marts.utilization_daily WHERE day = ANY(?::DATE[])", [days])
    names = [d[0] for d in cur.description]
    rows: dict[date, list[dict[str, object]]] = {}
    for row in cur.fetchall():
        record = dict(zip(names, row))
        rows.setdefault(record["day"], []).append(record)
    out: dict[date, dict[str, object]] = {}
    for day in days:
        found = rows.get(day, [])
        meta: dict[str, object] = {"day": day.isoformat(), "dagster/row_count": len(found)}
        if len(found) == 1:
            for field in _UTILIZATION_FIELDS:
                if field in found[0]:
                    value = found[0][field]
                    meta[field] = round(float(value), 4) if isinstance(value, float) else value
        out[day] = meta
    return out


def _utilization_by_pool_by_day(con: duckdb.DuckDBPyConnection, days: list[date]) -> dict[date, dict[str, object]]:
    """Per day of ``days``: the Dagster metadata of its marts.utilization_by_pool_daily rows (rows, and each
    pool's utilization)."""
    rows: dict[date, list[tuple[str, float | None]]] = {}
    for day, pool, utilization in con.execute(
            "SELECT day, pool, utilization FROM marts.utilization_by_pool_daily WHERE day = ANY(?::DATE[]) "
            "ORDER BY day, pool", [days]).fetchall():
        rows.setdefault(day, []).append((pool, utilization))
    out: dict[date, dict[str, object]] = {}
    for day in days:
        found = rows.get(day, [])
        meta: dict[str, object] = {"day": day.isoformat(), "dagster/row_count": len(found)}
        for pool, utilization in found:
            meta[f"utilization_{pool}"] = round(float(utilization), 4) if utilization is not None else None
        out[day] = meta
    return out


def _rollup_asset(name: str) -> dg.AssetsDefinition:
    key = dg.AssetKey(["marts", name])

    @dg.asset(key=key, deps=[JOB_USAGE_DAILY, UTILIZATION_DAILY, CORE_JOBS], group_name="marts",
              kinds={"duckdb"}, pool=WAREHOUSE_POOL, description=_MART_DESCRIPTIONS[name])
    def _mart(warehouse: WarehouseResource) -> dg.MaterializeResult:
        with warehouse.connect() as con:
            with transaction(con):
                create_daily_mart_tables(con)  # no-op once a day was built
                run_mart_sql(con, name)
            rows = con.sql(f"SELECT count(*) FROM marts.{name}").fetchall()[0][0]
            preview = con.sql(f"SELECT * FROM marts.{name} LIMIT 10").pl()
        return dg.MaterializeResult(metadata={"dagster/row_count": rows, "preview": markdown_preview(preview)})

    _mart.__name__ = f"mart_{name}"
    return _mart


ROLLUP_ASSETS: list[dg.AssetsDefinition] = [_rollup_asset(name) for name in ROLLUP_MARTS]


@dg.asset(key=SIZE_SHARE_TREND, deps=[dg.AssetKey(["marts", "size_buckets"])], group_name="marts",
          kinds={"duckdb", "statsmodels"}, pool=WAREHOUSE_POOL,
          description="Per granularity (month/week) and size bucket: OLS (HAC errors) and Kendall tau trend "
                      "of the GPU-hour share — is usage shifting between size classes?")
def size_share_trend(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        with transaction(con):
            rows = trends_model.write_size_share_trend(con)
        preview = con.sql("SELECT * FROM marts.size_share_trend ORDER BY granularity, bucket_order").pl()
    return dg.MaterializeResult(metadata={"dagster/row_count": rows, "preview": markdown_preview(preview, 14)})


@dg.asset(key=FINDINGS,
          deps=[dg.AssetKey(["marts", n]) for n in ("gpu_time_by_state", "size_buckets", "runtime_quantiles")]
          + [SIZE_SHARE_TREND],
          group_name="marts", kinds={"duckdb"}, pool=WAREHOUSE_POOL,
          description="The four operator findings (cancellations vs failures, small vs large jobs, runtime "
                      "tail, usage shift) stated as sentences computed from the marts.")
def findings(warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        with transaction(con):
            rows = findings_model.write_findings(con)
        statements = [r[0] for r in con.sql("SELECT statement FROM marts.findings ORDER BY finding_id").fetchall()]
    return dg.MaterializeResult(metadata={"dagster/row_count": rows,
                                          "statements": dg.MetadataValue.md("\n".join(f"- {s}" for s in statements))})


@dg.asset(key=CLUSTER_COMPARISON, deps=[CORE_JOBS], group_name="marts", kinds={"duckdb"}, pool=WAREHOUSE_POOL,
          description="This cluster's job mix (GPU jobs, runtime, queue wait, GPUs per job, completed / cancelled / "
                      "failed shares by count and GPU time) next to the published traces AcmeTrace summarises "
                      "(Seren, Kalos, Philly, Helios, PAI).")
def cluster_comparison(warehouse: WarehouseResource, landing: LandingResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        with transaction(con):
            rows = write_cluster_comparison(con, landing.cluster_config().cluster)
        preview = con.sql("SELECT cluster, gpu_jobs, med_run_time_s, cancelled_share_gpu_time, failed_share_gpu_time "
                          "FROM marts.cluster_comparison").pl()
    return dg.MaterializeResult(metadata={"dagster/row_count": rows, "preview": markdown_preview(preview, 10)})


def _shares_check(table: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=dg.AssetKey(["marts", table]), pool=WAREHOUSE_POOL, name="shares_sum_to_one", blocking=True,
                    description=f"In marts.{table}, job and GPU-hour shares sum to 1 within every period.")
    def _check(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        with warehouse.connect(read_only=False) as con:
            bad = con.sql(
                f"""SELECT period_type, period, sum(share_jobs) AS sj, sum(share_gpu_hours) AS sg
                    FROM marts.{table} GROUP BY ALL
                    HAVING abs(sum(share_jobs) - 1) > 1e-6
                        OR (sum(gpu_hours) > 0 AND abs(sum(share_gpu_hours) - 1) > 1e-6)"""
            ).fetchall()
        return dg.AssetCheckResult(passed=not bad, metadata={"bad_periods": len(bad), "examples": str(bad[:5])})

    _check.__name__ = f"{table}_shares_sum_to_one"
    return _check


MART_CHECKS = [_shares_check("gpu_time_by_state"), _shares_check("size_buckets")]


@dg.asset_check(asset=dg.AssetKey(["marts", "gpu_time_by_state"]), pool=WAREHOUSE_POOL,
                description="Warns when days changed in core.jobs have not been recomputed by a daily "
                "partition run yet, so roll-ups miss them (backfill those partitions).")
def no_unprocessed_days(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        n, lo, hi = con.sql("SELECT count(*), min(day), max(day) FROM core.dirty_days").fetchall()[0]
    return dg.AssetCheckResult(passed=n == 0, severity=dg.AssetCheckSeverity.WARN,
                               metadata={"unprocessed_days": n, "range": f"{lo} .. {hi}" if n else "none"})
