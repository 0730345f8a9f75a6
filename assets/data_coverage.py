"""Marts: are the inputs complete? Freshness and gaps per source, and nodes silent in the node logs.

A report over missing data looks like a quiet night. The sources, their record times and which are
dense come from the source registry (gpusre.models.sources.registry). These marts say when a source ends early,
has days without records, or when nodes that ran jobs sent no log lines, so the nightly report can
warn instead of showing a calm that is not there.
"""

import dagster as dg

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.ingest_syslog import RAW_SYSLOG
from gpusre.assets.metadata import markdown_preview
from gpusre.models.accounting_span import accounting_span, node_history_end
from gpusre.models.alerts.clustering import meta_alert_pattern
from gpusre.models.day_coverage import build_day_coverage, loaded_file_days, mark_partial_days, refresh_partial_flags
from gpusre.models.sources.registry import record_sources
from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.warehouse import table_exists, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

DATA_FRESHNESS = dg.AssetKey(["marts", "data_freshness"])
LOG_COVERAGE_DAILY = dg.AssetKey(["marts", "log_coverage_daily"])
DAY_COVERAGE = dg.AssetKey(["marts", "day_coverage"])
FLEET_COVERAGE = dg.AssetKey(["marts", "fleet_coverage"])


@dg.multi_asset(
    specs=[
        dg.AssetSpec(DATA_FRESHNESS, deps=[dg.AssetKey(list(s.asset)) for s in record_sources()], group_name="marts",
                     kinds={"duckdb"},
                     description="Per input source: files, last ingestion, first / last record time and the UTC "
                     "days without a record (for sacct and node logs: missing dumps or log files)."),
        dg.AssetSpec(DAY_COVERAGE, deps=[*(dg.AssetKey(list(s.asset)) for s in record_sources() if s.dense), CORE_JOBS],
                     group_name="marts", kinds={"duckdb"},
                     description="Per UTC day of the data: the part Slurm accounting and the node logs both cover "
                     "and whether the day is partial (left out of means, minima and trends; every daily mart "
                     "carries the flag as column partial)."),
        dg.AssetSpec(LOG_COVERAGE_DAILY, deps=[RAW_SYSLOG, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="Per UTC day of the node logs: nodes that ran jobs, how many of them logged, and "
                     "the silent ones (broken log shipping: hardware faults there leave no event)."),
        dg.AssetSpec(FLEET_COVERAGE, deps=[CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="One row: the fleet behind capacity, utilization and goodput (cluster.yaml nodes "
                     "and gpus_per_node with node_gpus, or their 100 x 8 default) against the nodes and GPUs per "
                     "node the accounting shows; the reports warn when the accounting shows more."),
    ],
    pool=WAREHOUSE_POOL,
)
def data_coverage_marts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    with warehouse.connect() as con:
        with transaction(con):
            n_days = build_day_coverage(con)  # refreshes raw.record_days, which data_freshness reads too
            refresh_partial_flags(con)  # the daily marts written before it this run (or on earlier nights)
            acct_from, acct_to = accounting_span(con)
            # without accounting the node-state history's end is node_history_end's (node availability's too)
            states_to = node_history_end(con, config.timezone) if acct_to is None else None
            run_mart_sql(con, "data_freshness", {"acct_from": acct_from, "acct_to": acct_to, "states_to": states_to,
                                                 "meta_alerts": meta_alert_pattern()})
            # the node list, so hosts outside it (an address a relay printed) are named, not counted as nodes
            con.execute("SET VARIABLE gpusre_fleet = ?::VARCHAR[]", [config.node_names])
            run_mart_sql(con, "log_coverage_daily")
            mark_partial_days(con, "marts.log_coverage_daily")
            run_mart_sql(con, "fleet_coverage", {
                "fleet_source": config.fleet_source, "configured_nodes": config.node_count,
                "fleet": config.node_names, "gpus_per_node": config.gpus_per_node,
                "gpu_nodes": list(config.gpus_by_node), "gpu_counts": list(config.gpus_by_node.values()),
                "capacity_gpus": config.capacity_gpus,
                "leaf_switches": len(config.leaf_switches or {}), "timezone": config.timezone})
        partial = con.sql("SELECT day FROM marts.day_coverage WHERE partial ORDER BY day").fetchall()
        freshness = con.sql("SELECT source_kind, files, records, last_record_ts, n_empty_days "
                            "FROM marts.data_freshness").pl()
        days, silent_days = con.sql("SELECT count(*), count(*) FILTER (WHERE n_silent_nodes > 0) "
                                    "FROM marts.log_coverage_daily").fetchall()[0]
        fleet = con.sql("SELECT * EXCLUDE (outside_examples) FROM marts.fleet_coverage").pl()
    yield dg.MaterializeResult(asset_key=DATA_FRESHNESS, metadata={
        "dagster/row_count": freshness.height, "preview": markdown_preview(freshness, 4)})
    yield dg.MaterializeResult(asset_key=DAY_COVERAGE, metadata={
        "dagster/row_count": n_days, "partial_days": ", ".join(str(d) for (d,) in partial)})
    yield dg.MaterializeResult(asset_key=LOG_COVERAGE_DAILY, metadata={
        "dagster/row_count": days, "days_with_silent_nodes": silent_days})
    yield dg.MaterializeResult(asset_key=FLEET_COVERAGE, metadata={
        "dagster/row_count": fleet.height, "preview": markdown_preview(fleet, 1)})


@dg.asset_check(asset=DATA_FRESHNESS, pool=WAREHOUSE_POOL, description="Warns when Slurm accounting or the node logs have UTC days "
                "without a single record inside their span: a dump or log file is missing (re-land it; the "
                "ingest picks it up and the daily marts recompute those days).")
def dense_sources_have_no_empty_days(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.sql("SELECT source_kind, empty_days FROM marts.data_freshness "
                       "WHERE dense AND n_empty_days > 0 ORDER BY source_kind").fetchall()
        # A day a loaded file is named for was read and found empty (a maintenance day's dump), not missing:
        # the reports say "holds no jobs" for it, and the check agrees.
        missing = {kind: [d for d in days if d not in loaded_file_days(con, kind)] for kind, days in rows}
    missing = {kind: days for kind, days in missing.items() if days}
    return dg.AssetCheckResult(
        passed=not missing, severity=dg.AssetCheckSeverity.WARN,
        metadata={kind: f"{len(days)} day(s): " + ", ".join(d.isoformat() for d in days[:20])
                  for kind, days in missing.items()})


@dg.asset_check(asset=DATA_FRESHNESS, pool=WAREHOUSE_POOL, description="Warns when a landing file of any source is "
                "refused (unreadable, cut, in a format no parser reads): `gpusre run` exits 1 for it; a run Dagster "
                "launches succeeds with every other file loaded, and this check is what turns it yellow.")
def no_refused_files(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.sql("SELECT source_file, error FROM raw.ingested_files WHERE status = 'refused' "
                       "ORDER BY source_file").fetchall() if table_exists(con, "raw.ingested_files") else []
    return dg.AssetCheckResult(
        passed=not rows, severity=dg.AssetCheckSeverity.WARN,
        metadata={"refused_files": len(rows), **{f: (e or "")[:200] for f, e in rows[:20]}})


@dg.asset_check(asset=LOG_COVERAGE_DAILY, pool=WAREHOUSE_POOL, description="Warns when nodes ran jobs but sent no log line on the "
                "last complete day of the data (marts.day_coverage; the newest day may still be arriving): broken log shipping "
                "hides hardware faults from attribution.")
def no_silent_nodes(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        rows = con.sql("SELECT day, n_silent_nodes, silent_nodes FROM marts.log_coverage_daily "
                       "WHERE NOT partial ORDER BY day DESC LIMIT 1").fetchall()
    day, n, nodes = rows[0] if rows else (None, 0, [])
    return dg.AssetCheckResult(
        passed=n == 0, severity=dg.AssetCheckSeverity.WARN,
        metadata={"day": str(day), "silent_nodes": n, "nodes": ", ".join(nodes[:50])})
