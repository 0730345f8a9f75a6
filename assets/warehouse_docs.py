"""The warehouse documents itself: ``COMMENT ON`` every raw, core and marts table and column from the
contract ``sql/contract/*.yaml`` (see :mod:`gpusre.pipelines.warehouse_docs`), as the last write of a
run: marts rebuilt with ``CREATE OR REPLACE`` lose their comments, so they are applied again each run,
before the snapshot copies the file."""

import dagster as dg

from gpusre.assets.reports import NIGHTLY_REPORT, SLO_REPORT
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource
from gpusre.pipelines.warehouse_docs import apply_comments, undocumented

WAREHOUSE_COMMENTS = dg.AssetKey(["reports", "warehouse_comments"])


@dg.asset(
    key=WAREHOUSE_COMMENTS,
    # After both reports, whose inputs cover every mart: every table exists in its final shape.
    deps=[NIGHTLY_REPORT, SLO_REPORT],
    group_name="reports",
    kinds={"duckdb"},
    pool=WAREHOUSE_POOL,
    description="COMMENT ON every raw/core/marts table and column from the contract sql/contract/*.yaml "
    "(what one row is, each column's meaning and unit); columns the contract lacks are listed in the metadata.",
)
def warehouse_comments(context: dg.AssetExecutionContext, warehouse: WarehouseResource) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        tables, columns = apply_comments(con)
        missing = undocumented(con)
    if missing:  # a new table or column without a contract entry: say which, the run goes on
        context.log.warning(f"{len(missing)} table(s)/column(s) without a contract entry: {', '.join(missing[:20])}")
    return dg.MaterializeResult(metadata={"tables_commented": tables, "columns_commented": columns,
                                          "undocumented": len(missing),
                                          "undocumented_list": dg.MetadataValue.json(missing[:200])})
