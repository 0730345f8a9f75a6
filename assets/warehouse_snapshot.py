"""The warehouse snapshot ad hoc readers open while a run writes: the last step of a run that builds the
reports."""

import os
from pathlib import Path

import dagster as dg

from gpusre.assets.lake_compaction import LAKE_COMPACTION
from gpusre.assets.reports import NIGHTLY_REPORT, SLO_REPORT
from gpusre.assets.warehouse_docs import WAREHOUSE_COMMENTS
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import publish_snapshot
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource

WAREHOUSE_SNAPSHOT = dg.AssetKey(["reports", "warehouse_snapshot"])
#: Set to 0 / off to skip publishing the snapshot.
SNAPSHOT_ENV = "GPUSRE_SNAPSHOT"


@dg.asset(
    key=WAREHOUSE_SNAPSHOT,
    # After both reports, whose inputs cover every mart: the last step of a run that builds them;
    # after the table comments (reports/warehouse_comments), so the copy carries them.
    # After a lake compaction (its job runs both): the copy's raw views must know the merged files.
    deps=[NIGHTLY_REPORT, SLO_REPORT, WAREHOUSE_COMMENTS, LAKE_COMPACTION],
    group_name="reports",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    description="A read-only copy of the warehouse, <warehouse>.snapshot.duckdb, for ad hoc queries while a "
    "run holds the warehouse (DuckDB lets no other process open a file a writer holds). Same tables; as of "
    "the last run that built the reports; replaced atomically.",
)
def warehouse_snapshot(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    # A full copy each run: on a very large warehouse a site may rather snapshot on its own schedule.
    if os.environ.get(SNAPSHOT_ENV, "1").strip().lower() in {"0", "off", "false", "no"}:
        context.log.info(f"warehouse snapshot skipped ({SNAPSHOT_ENV}={os.environ[SNAPSHOT_ENV]})")
        return dg.MaterializeResult(metadata={"skipped": f"{SNAPSHOT_ENV}={os.environ[SNAPSHOT_ENV]}"})
    path = publish_snapshot(Path(warehouse.path))
    con = connect(path, read_only=True)
    try:
        tables = con.sql("SELECT count(*) FROM information_schema.tables "
                         "WHERE table_schema IN ('raw', 'core', 'marts')").fetchall()[0][0]
        jobs = con.sql("SELECT count(*) FROM core.jobs").fetchall()[0][0]
    finally:
        con.close()
    context.log.info(f"warehouse snapshot for ad hoc queries: {path}")
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(path)),
        "size_mb": round(path.stat().st_size / 2**20, 1),
        "tables": tables,
        "core_jobs": jobs,
    })
