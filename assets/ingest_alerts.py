"""Ingest: alert payloads in landing/alerts → raw.alert_notifications (every notification), and
core: core.alerts (deduplicated alerts with node and status) and core.alert_templates."""

import dagster as dg

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.ingest_node_states import NODE_STATES
from gpusre.assets.metadata import file_ingest_metadata, latest_rejects, markdown_preview
from gpusre.assets.progress import progress_reporter
from gpusre.assets.rows_reconcile import rows_reconcile_check
from gpusre.models.ingest.ledger import loaded_rows
from gpusre.models.alerts.nodes import slurm_node_names
from gpusre.models.sources.alerts.ingest import SOURCE_KIND, alert_settings, build_core_alerts, ingest_alert_files
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_ALERTS = dg.AssetKey(["raw", "alert_notifications"])
CORE_ALERTS = dg.AssetKey(["core", "alerts"])
ALERT_TEMPLATES = dg.AssetKey(["core", "alert_templates"])


@dg.asset(
    key=RAW_ALERTS,
    group_name="ingest",
    kinds={"parquet", "duckdb", "drain3"},
    pool=WAREHOUSE_POOL,
    description="Every alert notification under landing/alerts (Alertmanager and Grafana webhook payloads, "
    "Prometheus /api/v1/alerts dumps; .json, .jsonl, .log; .gz ok) with labels, annotations, times, "
    "fingerprint (Alertmanager's label hash when absent) and a Drain3 template id. New or changed files "
    "only; malformed payloads and alerts go to raw.rejects.",
)
def raw_alert_notifications(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, landing: LandingResource
) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        # Stages outside, then publishes inside one transaction (see models/sources/alerts/ingest.py).
        results = ingest_alert_files(con, landing.root, progress=progress_reporter(context),
                                     timezone=landing.cluster_config().timezone)
        total = loaded_rows(con, SOURCE_KIND)
        by_format = con.sql(
            "SELECT format, status, count(*) AS notifications FROM raw.alert_notifications "
            "GROUP BY ALL ORDER BY notifications DESC").pl()
        rejects = latest_rejects(con, SOURCE_KIND)
    metadata = file_ingest_metadata(context, results, total, rejects)
    metadata["by_format"] = markdown_preview(by_format, 20)
    return dg.MaterializeResult(metadata=metadata)


alert_rows_reconcile = rows_reconcile_check(RAW_ALERTS, SOURCE_KIND, "alert_rows_reconcile",
                                            "For every ingested alert file: notifications read = loaded + rejected.")


@dg.multi_asset(
    specs=[
        dg.AssetSpec(CORE_ALERTS, deps=[RAW_ALERTS, CORE_JOBS, NODE_STATES], group_name="core", kinds={"duckdb"},
                     description="One row per alert (fingerprint + startsAt to the millisecond) from all its notifications: status "
                     "(resolved if any notification resolved it), ends_at, Slurm node and target from the labels, "
                     "summary, template, n_notifications."),
        dg.AssetSpec(ALERT_TEMPLATES, deps=[RAW_ALERTS], group_name="core", kinds={"duckdb"},
                     description="One row per Drain3 template of alert texts: text, example, alerts, first/last seen."),
    ],
    pool=WAREHOUSE_POOL,
)
def core_alerts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    with warehouse.connect() as con:
        n_alerts, n_templates = build_core_alerts(con, alert_settings(config), config.node_names or slurm_node_names(con))
        summary = con.sql(
            "SELECT status, count(*) AS alerts, count(node) AS with_node, count(target) AS with_target, "
            "sum(n_notifications) AS notifications FROM core.alerts GROUP BY ALL ORDER BY status").pl()
        top = con.sql(
            "SELECT alertname, count(*) AS alerts, count(DISTINCT node) AS nodes FROM core.alerts "
            "GROUP BY ALL ORDER BY alerts DESC, alertname LIMIT 15").pl()
    yield dg.MaterializeResult(asset_key=CORE_ALERTS, metadata={
        "dagster/row_count": n_alerts,
        "by_status": markdown_preview(summary),
        "top_alertnames": markdown_preview(top, 15),
    })
    yield dg.MaterializeResult(asset_key=ALERT_TEMPLATES, metadata={"dagster/row_count": n_templates})
