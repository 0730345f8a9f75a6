"""Jobs: what the CLI, the schedule and the sensor run."""

from __future__ import annotations

import dagster as dg

INGEST_GROUPS = ("ingest", "core")
#: The daily-partitioned marts (one multi-asset: a job selects all of them or none).
DAILY_MART_KEYS = (["marts", "job_usage_daily"], ["marts", "utilization_daily"], ["marts", "utilization_by_pool_daily"])
#: Imported once by the multiprocess executor's fork server (see build_ingest_job).
PRELOADED_MODULES = ("dagster", "duckdb", "pyarrow.parquet", "polars", "numpy", "scipy.stats", "pandas",
                     "statsmodels.api", "sklearn", "matplotlib.pyplot", "jinja2")



def build_ingest_job(workers: int = 1) -> dg.UnresolvedAssetJobDefinition:
    """raw.* and core.* (unpartitioned, incremental by file checksum and dirty-job queue); with
    ``workers`` > 1 on Dagster's multiprocess executor, so the parse steps of a source run side by
    side while the warehouse writers queue in the ``duckdb_warehouse`` pool (limit 1)."""
    return dg.define_asset_job(
        "ingest_job",
        selection=dg.AssetSelection.groups(*INGEST_GROUPS),
        description="Ingest new landing files into raw.* and upsert changed jobs into core.*.",
        # forkserver with the heavy libraries preloaded: a step process forks with them imported
        # instead of importing them anew (seconds per step). Not gpusre itself: module-level Polars
        # work would start Polars' thread pool in the server, and a fork of that deadlocks.
        executor_def=dg.multiprocess_executor.configured({
            "max_concurrent": workers,
            "start_method": {"forkserver": {"preload_modules": list(PRELOADED_MODULES)}},
        }) if workers > 1 else None,
    )


ingest_job = build_ingest_job()

#: The daily-partitioned marts only; run over a partition range for backfills (one run).
daily_marts_job = dg.define_asset_job(
    "daily_marts_job",
    selection=dg.AssetSelection.assets(*DAILY_MART_KEYS),
    description="Recompute the daily marts for a day or a range of days (single-run backfill).",
)

#: Roll-up marts and reports (unpartitioned).
rollup_job = dg.define_asset_job(
    "rollup_job",
    selection=dg.AssetSelection.groups("marts", "reports")
    - dg.AssetSelection.assets(*DAILY_MART_KEYS),
    description="Recompute roll-up marts, trend tests, findings and the nightly report.",
)

#: Everything but maintenance, for one day: what the nightly schedule and the landing sensor launch.
nightly_job = dg.define_asset_job(
    "nightly_job",
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("maintenance"),
    description="Ingest, core, the day's daily marts, roll-ups and the nightly report.",
)

#: Lake compaction, then a fresh snapshot (whose raw views must know the merged files): off the
#: nightly run, on its own schedule or ``gpusre compact``.
lake_compaction_job = dg.define_asset_job(
    "lake_compaction_job",
    selection=dg.AssetSelection.assets(["maintenance", "lake_compaction"], ["reports", "warehouse_snapshot"]),
    description="Merge old days' small node-log lake files into one file per day; refresh the snapshot.",
)
