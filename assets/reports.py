"""Reports: the nightly and the SLO-review HTML + Markdown reports rendered from the marts."""

import dagster as dg

from gpusre.assets.data_coverage import DATA_FRESHNESS, LOG_COVERAGE_DAILY
from gpusre.assets.failures import ATTRIBUTION, HW_INCIDENTS, SUSPECT_NODES, TAXONOMY
from gpusre.assets.job_trends import CLUSTER_COMPARISON, FINDINGS, ROLLUP_ASSETS, SIZE_SHARE_TREND
from gpusre.assets.alert_incidents import (
    ALERT_DAILY,
    ALERT_FLOODS,
    ALERT_INCIDENTS,
    ALERT_RULE_QUALITY,
    HW_WITHOUT_ALERT,
)
from gpusre.assets.ingest_node_states import NODE_STATES
from gpusre.assets.node_states import DRAIN_REASONS, NODE_AVAILABILITY_DAILY, REPAIR_TIMES
from gpusre.assets.reliability import KEYS as RELIABILITY_KEYS
from gpusre.assets.report_marts import REPORT_MART_KEYS
from gpusre.reports.nightly import render_nightly_report
from gpusre.reports.slo import render_slo_report
from gpusre.pipelines.resources import ReportsResource, WarehouseResource

NIGHTLY_REPORT = dg.AssetKey(["reports", "nightly"])
SLO_REPORT = dg.AssetKey(["reports", "slo"])


@dg.asset(
    key=NIGHTLY_REPORT,
    deps=[FINDINGS, SIZE_SHARE_TREND, *[a.key for a in ROLLUP_ASSETS], CLUSTER_COMPARISON, DATA_FRESHNESS, LOG_COVERAGE_DAILY,
          HW_INCIDENTS, ATTRIBUTION, TAXONOMY,
          SUSPECT_NODES, NODE_STATES, NODE_AVAILABILITY_DAILY, DRAIN_REASONS, REPAIR_TIMES, ALERT_DAILY, ALERT_FLOODS,
          ALERT_INCIDENTS, ALERT_RULE_QUALITY, HW_WITHOUT_ALERT, *REPORT_MART_KEYS.values()],
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


@dg.asset(
    key=SLO_REPORT,
    deps=[*RELIABILITY_KEYS.values(), HW_INCIDENTS, *REPORT_MART_KEYS.values()],
    group_name="reports",
    kinds={"html"},
    description="SLO review report over the last 30 complete days: SLO status and error budgets, MTBF with "
    "CIs and trend, failure rate vs published figures, job MTTF by size with projection, ETTR measured vs "
    "expected, goodput waterfall, top incidents. `gpusre report slo` renders any other window.",
)
def slo_report(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, reports: ReportsResource
) -> dg.MaterializeResult:
    reports.root.mkdir(parents=True, exist_ok=True)
    with warehouse.connect(read_only=False) as con:
        paths = render_slo_report(con, reports.root, warehouse_label=warehouse.path)
    context.log.info(f"SLO report: {paths.html}")
    return dg.MaterializeResult(
        metadata={
            "html": dg.MetadataValue.path(str(paths.html)),
            "markdown": dg.MetadataValue.path(str(paths.markdown)),
        }
    )
