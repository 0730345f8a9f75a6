"""Reports: the nightly HTML + Markdown report rendered from the marts."""


import dagster as dg

from gpusre.assets.failures import ATTRIBUTION, HW_INCIDENTS, SUSPECT_NODES, TAXONOMY
from gpusre.assets.job_trends import FINDINGS, ROLLUP_ASSETS, SIZE_SHARE_TREND
from gpusre.models.report.nightly import render_nightly_report
from gpusre.pipelines.resources import ReportsResource, WarehouseResource

NIGHTLY_REPORT = dg.AssetKey(["reports", "nightly"])


@dg.asset(
    key=NIGHTLY_REPORT,
    deps=[FINDINGS, SIZE_SHARE_TREND, *[a.key for a in ROLLUP_ASSETS], HW_INCIDENTS, ATTRIBUTION, TAXONOMY,
          SUSPECT_NODES],
    group_name="reports",
    kinds={"html"},
    description="Self-contained nightly HTML report (inline SVG charts, opens offline) and a Markdown "
    "summary for chat/wiki, for the latest day in the warehouse.",
)
def nightly_report(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, reports: ReportsResource
) -> dg.MaterializeResult:
    reports.root.mkdir(parents=True, exist_ok=True)
    with warehouse.connect(read_only=False) as con:
        paths = render_nightly_report(con, reports.root, warehouse_label=warehouse.path)
    context.log.info(f"nightly report: {paths.html}")
    return dg.MaterializeResult(
        metadata={
            "html": dg.MetadataValue.path(str(paths.html)),
            "markdown": dg.MetadataValue.path(str(paths.markdown)),
            "summary": dg.MetadataValue.md(paths.markdown.read_text(encoding="utf-8")[:4000]),
        }
    )
