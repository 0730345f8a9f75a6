"""Ingest: sacct dumps in the landing directory → raw.sacct_records, raw.rejects, raw.ingested_files."""


import dagster as dg

import duckdb

from gpusre.assets.parallel_parse import ParsedSource, parsed_source_asset
from gpusre.assets.rows_reconcile import rows_reconcile_check
from gpusre.models.ingest.staging import IngestPlan
from gpusre.models.sources.sacct.ingest import parse_sacct_shard, plan_sacct, publish_sacct
from gpusre.pipelines.resources import LandingResource

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


sacct_rows_reconcile = rows_reconcile_check(RAW_SACCT, "sacct", "sacct_rows_reconcile",
                                            "For every ingested file: rows read = loaded + rejected.")
