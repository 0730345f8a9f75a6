"""Ingest: node logs in landing/syslog → raw.syslog_lines (templated, events recognized), and
core: core.node_events (recognized events) and core.log_templates."""

import dagster as dg

from gpusre.assets.metadata import file_ingest_metadata, latest_rejects, markdown_preview
from gpusre.assets.progress import progress_reporter
from gpusre.models.sources.alerts.ingest import alert_settings
from gpusre.models.alerts.nodes import HostMapping
from gpusre.models.sources.syslog.ingest import load_miner, ingest_syslog_files
from gpusre.models.warehouse import read_sql, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_SYSLOG = dg.AssetKey(["raw", "syslog_lines"])
NODE_EVENTS = dg.AssetKey(["core", "node_events"])
LOG_TEMPLATES = dg.AssetKey(["core", "log_templates"])


@dg.asset(
    key=RAW_SYSLOG,
    group_name="ingest",
    kinds={"parquet", "duckdb", "drain3"},
    pool=WAREHOUSE_POOL,
    # Year inference for RFC 3164 lines uses the jobs' time span when a file name has no date.
    deps=[dg.AssetKey(["core", "jobs"])],
    description="Every node-log line under landing/syslog (syslog, dmesg, journald; .gz ok) with UTC time, "
    "node, a stable Drain3 template id and, for recognized lines, the event catalog's kind/code/component. "
    "New or changed files only; unparseable lines go to raw.rejects.",
)
def raw_syslog(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, landing: LandingResource
) -> dg.MaterializeResult:
    config = landing.cluster_config()
    with warehouse.connect() as con:
        # Stages outside, then publishes inside one transaction (see models/sources/syslog/ingest.py).
        results = ingest_syslog_files(con, landing.root, timezone=config.timezone,
                                      hosts=HostMapping(alert_settings(config).nodes, tuple(config.node_names)),
                                      progress=progress_reporter(context))
        total = con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall()[0][0]
        rejects = latest_rejects(con, "syslog")
    return dg.MaterializeResult(metadata=file_ingest_metadata(context, results, total, rejects))


@dg.multi_asset(
    specs=[
        dg.AssetSpec(NODE_EVENTS, deps=[RAW_SYSLOG], group_name="core", kinds={"duckdb"},
                     description="One row per recognized node event (Xid, SXid, ECC, NVLink, IB, PCIe, storage, "
                     "OOM, panic, slurmd …) with component, cause class, severity and recommended action."),
        dg.AssetSpec(LOG_TEMPLATES, deps=[RAW_SYSLOG], group_name="core", kinds={"duckdb"},
                     description="One row per node-log template: text, lines, nodes, first/last seen."),
    ],
    pool=WAREHOUSE_POOL,
)
def core_node_events(warehouse: WarehouseResource):
    with warehouse.connect() as con:
        templates = load_miner(con).templates().select("template_id", "template")
        with transaction(con):
            con.register("_miner_templates", templates.to_arrow())
            con.execute(read_sql("core/node_events.sql"))
            con.unregister("_miner_templates")
        events = con.sql("SELECT count(*) FROM core.node_events").fetchall()[0][0]
        n_templates = con.sql("SELECT count(*) FROM core.log_templates").fetchall()[0][0]
        by_kind = con.sql(
            "SELECT kind, component, count(*) AS events, count(DISTINCT node) AS nodes FROM core.node_events "
            "GROUP BY ALL ORDER BY events DESC LIMIT 15").pl()
    yield dg.MaterializeResult(asset_key=NODE_EVENTS, metadata={"dagster/row_count": events,
                                                               "by_kind": markdown_preview(by_kind, 15)})
    yield dg.MaterializeResult(asset_key=LOG_TEMPLATES, metadata={"dagster/row_count": n_templates})
