"""Ingest: sacct dumps in the landing directory → raw.sacct_records, raw.rejects, raw.ingested_files."""


import dagster as dg

import duckdb

from gpusre.assets.parallel_parse import ParsedSource, parsed_source_asset
from gpusre.models.ingest.staging import IngestPlan
from gpusre.models.ingest.reconcile import mismatched_files
from gpusre.models.sources.registry import lake_table
from gpusre.models.sources.sacct.ingest import parse_sacct_shard, plan_sacct, publish_sacct
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_SACCT = dg.AssetKey(["raw", "sacct_records"])


def _plan(con: duckdb.DuckDBPyConnection, landing: LandingResource, shards: int) -> IngestPlan:
    config = landing.cluster_config()
    return plan_sacct(con, landing.root, shards=shards, timezone=config.timezone, fields=config.sacct.fields,
                      delimiter=config.sacct.delimiter, cluster=config.cluster)


raw_sacct = parsed_source_asset(
    ParsedSource("sacct", _plan, parse_sacct_shard, publish_sacct),
    key=RAW_SACCT,
    kinds={"parquet", "duckdb"},
    description=(
        "Every sacct record (allocation and step rows) of every dump under landing/sacct, typed, "
        "with source file and line. New or changed files only (SHA-256), parsed in parallel shards; "
        "bad records go to raw.rejects."
    ),
)


@dg.asset_check(asset=RAW_SACCT, pool=WAREHOUSE_POOL, blocking=True, description="For every ingested file: rows read = loaded + rejected.")
def sacct_rows_reconcile(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        bad = mismatched_files(con, "sacct", lake_table("sacct").name)
    return dg.AssetCheckResult(passed=not bad, metadata={"mismatched_files": len(bad), "examples": str(bad[:5])})
