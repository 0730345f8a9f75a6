"""Reports: the nightly and the SLO-review HTML + Markdown reports rendered from the marts, and the
warehouse snapshot ad hoc readers open while a run writes."""


import os
from pathlib import Path

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
from gpusre.assets.node_states import DRAIN_REASONS, NODE_AVAILABILITY_DAILY, NODE_STATES, REPAIR_TIMES
from gpusre.assets.reliability import KEYS as RELIABILITY_KEYS
from gpusre.assets.report_marts import REPORT_MART_KEYS
from gpusre.reports.nightly import render_nightly_report
from gpusre.reports.slo import render_slo_report
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import publish_snapshot
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import ReportsResource, WarehouseResource

NIGHTLY_REPORT = dg.AssetKey(["reports", "nightly"])
SLO_REPORT = dg.AssetKey(["reports", "slo"])
WAREHOUSE_SNAPSHOT = dg.AssetKey(["reports", "warehouse_snapshot"])
#: Set to 0 / off to skip publishing the snapshot.
SNAPSHOT_ENV = "GPUSRE_SNAPSHOT"


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


@dg.asset(
    key=WAREHOUSE_SNAPSHOT,
    # After both reports, whose inputs cover every mart: the last step of a run that builds them;
    # after the table comments (reports/warehouse_comments), so the copy carries them.
    # After a lake compaction (its job runs both): the copy's raw views must know the merged files.
    deps=[NIGHTLY_REPORT, SLO_REPORT, dg.AssetKey(["reports", "warehouse_comments"]),
          dg.AssetKey(["maintenance", "lake_compaction"])],
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
