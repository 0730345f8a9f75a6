"""The check every ingested source carries: per landing file, rows read = loaded + rejected, and both
counts match what the lake and ``raw.rejects`` hold."""

import dagster as dg

from gpusre.models.ingest.reconcile import mismatched_files
from gpusre.models.sources.registry import lake_table
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource


def rows_reconcile_check(asset: dg.AssetKey, source: str, name: str, description: str) -> dg.AssetChecksDefinition:
    """A blocking check on ``asset`` (the raw table of registry source ``source``) named ``name``."""

    @dg.asset_check(asset=asset, name=name, pool=WAREHOUSE_POOL, blocking=True, description=description)
    def rows_reconcile(warehouse: WarehouseResource) -> dg.AssetCheckResult:
        with warehouse.connect() as con:
            bad = mismatched_files(con, source, lake_table(source).name)
        return dg.AssetCheckResult(passed=not bad, metadata={"mismatched_files": len(bad), "examples": str(bad[:5])})

    return rows_reconcile
