"""Ingest: node logs in landing/syslog → raw.syslog_lines (templated, events recognized), and
core: core.node_events (recognized events) and core.log_templates."""

import dagster as dg

import duckdb

from gpusre.assets.ingest_sacct import RAW_SACCT
from gpusre.assets.metadata import markdown_preview
from gpusre.assets.parallel_parse import ParsedSource, parsed_source_asset
from gpusre.models.alerts.nodes import HostMapping
from gpusre.models.ingest.staging import IngestPlan
from gpusre.models.logs.node_event_tables import refresh_node_event_tables
from gpusre.models.sources.alerts.ingest import alert_settings
from gpusre.models.sources.syslog.ingest import load_miner, parse_syslog_shard, plan_syslog, publish_syslog
from gpusre.models.warehouse import transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_SYSLOG = dg.AssetKey(["raw", "syslog_lines"])
NODE_EVENTS = dg.AssetKey(["core", "node_events"])
LOG_TEMPLATES = dg.AssetKey(["core", "log_templates"])


def _plan(con: duckdb.DuckDBPyConnection, landing: LandingResource, shards: int) -> IngestPlan:
    config = landing.cluster_config()
    return plan_syslog(con, landing.root, shards=shards, timezone=config.timezone,
                       hosts=HostMapping(alert_settings(config).nodes, tuple(config.node_names)))


raw_syslog = parsed_source_asset(
    ParsedSource("syslog", _plan, parse_syslog_shard, publish_syslog),
    key=RAW_SYSLOG,
    kinds={"parquet", "duckdb", "drain3"},
    # Year inference for RFC 3164 lines uses the accounting's time span when a file name has no date.
    after=RAW_SACCT,
    description="Every node-log line under landing/syslog (syslog, dmesg, journald; .gz ok) with UTC time, "
    "node, a stable Drain3 template id and, for recognized lines, the event catalog's kind/code/component. "
    "New or changed files only, parsed in parallel shards; unparseable lines go to raw.rejects.",
)


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
            refresh_node_event_tables(con, templates)
        events = con.sql("SELECT count(*) FROM core.node_events").fetchall()[0][0]
        n_templates = con.sql("SELECT count(*) FROM core.log_templates").fetchall()[0][0]
        by_kind = con.sql(
            "SELECT kind, component, count(*) AS events, count(DISTINCT node) AS nodes FROM core.node_events "
            "GROUP BY ALL ORDER BY events DESC LIMIT 15").pl()
    yield dg.MaterializeResult(asset_key=NODE_EVENTS, metadata={"dagster/row_count": events,
                                                               "by_kind": markdown_preview(by_kind, 15)})
    yield dg.MaterializeResult(asset_key=LOG_TEMPLATES, metadata={"dagster/row_count": n_templates})
