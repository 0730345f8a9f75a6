"""Maintenance: merge old days' small node-log lake files into one file per day.

Thin: call :func:`gpusre.models.ingest.lake_compaction.compact_lake_table` for every compactable lake
table. Not part of the nightly run (a day of 10 M per-node lines takes seconds to rewrite): the
``lake_compaction_job`` runs it, then refreshes the warehouse snapshot, whose raw views would
otherwise look for the merged files; ``gpusre compact`` runs that job.
"""

import dagster as dg

from gpusre.assets.ingest_syslog import RAW_SYSLOG
from gpusre.models.ingest.lake_compaction import KEEP_DAYS, MIN_FILES, compact_lake_table
from gpusre.models.sources.registry import lake_tables
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource

LAKE_COMPACTION = dg.AssetKey(["maintenance", "lake_compaction"])


class CompactionConfig(dg.Config):
    """When a day's files are merged (``gpusre compact --keep-days/--min-files``)."""

    keep_days: int = KEEP_DAYS
    min_files: int = MIN_FILES


@dg.asset(
    key=LAKE_COMPACTION,
    deps=[RAW_SYSLOG],
    group_name="maintenance",
    kinds={"parquet"},
    pool=WAREHOUSE_POOL,
    description="The node-log lake's old days merged into one Parquet file per day (manifest: "
    "raw.lake_compacted_versions). The newest days stay as written; a day is merged once it holds "
    "enough small files. Same rows in raw.syslog_lines before and after.",
)
def lake_compaction(config: CompactionConfig, warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        results = [compact_lake_table(con, spec, keep_days=config.keep_days, min_files=config.min_files)
                   for spec in lake_tables() if spec.compactable]
    return dg.MaterializeResult(metadata={
        "days_compacted": sum(r.days for r in results),
        "versions_merged": sum(r.versions for r in results),
        "files_merged": sum(r.files_merged for r in results),
        "rows_written": sum(r.rows for r in results),
        "files_deleted": sum(r.files_deleted for r in results),
    })
