"""Core: raw sacct records → core.jobs (one row per job, latest instance) and core.job_steps."""


import dagster as dg

from gpusre.assets.ingest_sacct import RAW_SACCT
from gpusre.assets.metadata import markdown_preview
from gpusre.models.warehouse import read_sql, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource

CORE_JOBS = dg.AssetKey(["core", "jobs"])
CORE_JOB_STEPS = dg.AssetKey(["core", "job_steps"])


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            CORE_JOBS,
            deps=[RAW_SACCT],
            group_name="core",
            kinds={"duckdb"},
            description="One row per Slurm job allocation (array task, het component): the latest "
            "instance across all dumps, states normalized, times in UTC, nodes expanded, GPU-hours.",
        ),
        dg.AssetSpec(
            CORE_JOB_STEPS,
            deps=[RAW_SACCT],
            group_name="core",
            kinds={"duckdb"},
            description="One row per job step (batch, extern, 0, 1, ...) of the latest job instance.",
        ),
    ],
    pool=WAREHOUSE_POOL,
    check_specs=[
        dg.AssetCheckSpec("unique_job_id", asset=CORE_JOBS, blocking=True,
                          description="No job id appears twice in core.jobs (and no instance twice in core.job_instances)."),
        dg.AssetCheckSpec("unique_step", asset=CORE_JOB_STEPS, blocking=True,
                          description="No (job_id, step_id) appears twice in core.job_steps."),
    ],
)
def core_jobs(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Upsert only the jobs whose raw records changed (raw.sacct_dirty_jobs), in one transaction."""
    with warehouse.connect() as con:
        with transaction(con):
            dirty = con.sql("SELECT count(DISTINCT job_id) FROM raw.sacct_dirty_jobs").fetchall()[0][0]
            con.execute(read_sql("core/jobs_upsert.sql"))
        jobs, steps = con.sql("SELECT (SELECT count(*) FROM core.jobs), (SELECT count(*) FROM core.job_steps)").fetchall()[0]
        dup = con.sql(
            "SELECT (SELECT count(*) - count(DISTINCT job_id) FROM core.jobs)"
            " + (SELECT count(*) - count(DISTINCT (job_id, instance_no)) FROM core.job_instances)"
        ).fetchall()[0][0]
        dup_steps = con.sql(
            "SELECT count(*) - count(DISTINCT (job_id, step_id)) FROM core.job_steps"
        ).fetchall()[0][0]
        by_state = con.sql(
            "SELECT state, count(*) AS jobs, round(sum(gpu_hours), 1) AS gpu_hours "
            "FROM core.jobs GROUP BY state ORDER BY gpu_hours DESC"
        ).pl()
        dirty_days = con.sql("SELECT count(*), min(day), max(day) FROM core.dirty_days").fetchall()[0]
    context.log.info(f"core.jobs: {dirty} job ids updated; {jobs} jobs total")
    yield dg.MaterializeResult(
        asset_key=CORE_JOBS,
        metadata={
            "dagster/row_count": jobs,
            "jobs_updated": dirty,
            "dirty_days": dirty_days[0],
            "dirty_days_range": f"{dirty_days[1]} .. {dirty_days[2]}" if dirty_days[0] else "none",
            "by_state": markdown_preview(by_state, limit=20),
        },
    )
    yield dg.MaterializeResult(asset_key=CORE_JOB_STEPS, metadata={"dagster/row_count": steps})
    yield dg.AssetCheckResult(check_name="unique_job_id", asset_key=CORE_JOBS, passed=dup == 0,
                              metadata={"duplicate_rows": dup})
    yield dg.AssetCheckResult(check_name="unique_step", asset_key=CORE_JOB_STEPS, passed=dup_steps == 0,
                              metadata={"duplicate_rows": dup_steps})
