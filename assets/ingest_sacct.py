"""Ingest: sacct dumps in the landing directory → raw.sacct_records, raw.rejects, raw.ingested_files."""


import dagster as dg

from gpusre.assets.metadata import file_ingest_metadata, latest_rejects
from gpusre.assets.progress import progress_reporter
from gpusre.models.sources.sacct.ingest import ingest_sacct_files
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_SACCT = dg.AssetKey(["raw", "sacct_records"])


@dg.asset(
    key=RAW_SACCT,
    group_name="ingest",
    kinds={"parquet", "duckdb"},
    pool=WAREHOUSE_POOL,
    description=(
        "Every sacct record (allocation and step rows) of every dump under landing/sacct, typed, "
        "with source file and line. New or changed files only (SHA-256); bad records go to raw.rejects."
    ),
)
def raw_sacct(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, landing: LandingResource
) -> dg.MaterializeResult:
    config = landing.cluster_config()
    with warehouse.connect() as con:
        # Stages outside, then publishes inside one transaction (see models/sources/sacct/ingest.py).
        results = ingest_sacct_files(
            con,
            landing.root,
            timezone=config.timezone,
            fields=config.sacct.fields,
            delimiter=config.sacct.delimiter,
            cluster=config.cluster,
            progress=progress_reporter(context),
        )
        total_rows = con.sql("SELECT count(*) FROM raw.sacct_records").fetchall()[0][0]
        rejects = latest_rejects(con, "sacct")
    return dg.MaterializeResult(metadata=file_ingest_metadata(context, results, total_rows, rejects))


@dg.asset_check(asset=RAW_SACCT, blocking=True, description="For every ingested file: rows read = loaded + rejected.")
def sacct_rows_reconcile(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        bad = con.sql(
            """
            SELECT f.source_file, f.rows_read, f.rows_loaded, f.rows_rejected,
                   (SELECT count(*) FROM raw.sacct_records r WHERE r.source_file = f.source_file) AS in_raw,
                   (SELECT count(*) FROM raw.rejects j WHERE j.source_file = f.source_file AND j.line_no > 0) AS in_rejects
            FROM raw.ingested_files f
            WHERE f.source_kind = 'sacct'
              AND (f.rows_read <> f.rows_loaded + f.rows_rejected
                   OR f.rows_loaded <> (SELECT count(*) FROM raw.sacct_records r WHERE r.source_file = f.source_file)
                   OR f.rows_rejected <> (SELECT count(*) FROM raw.rejects j WHERE j.source_file = f.source_file AND j.line_no > 0))
            """
        ).fetchall()
    return dg.AssetCheckResult(passed=not bad, metadata={"mismatched_files": len(bad), "examples": str(bad[:5])})
