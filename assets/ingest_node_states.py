"""Ingest: Slurm node-state history in landing/slurm_events (``sacctmgr show event -P`` dumps, ``sinfo -R``
snapshots) → raw.slurm_events, and core: core.node_states (+ core.node_state_reasons, core.cluster_events).
The core tables are rebuilt in full each run (node events are thousands a year, not millions). The marts over
them (availability, drain reasons, repair times) are in :mod:`gpusre.assets.node_states`."""

import dagster as dg

from gpusre.assets.metadata import file_ingest_metadata, latest_rejects, markdown_preview
from gpusre.assets.progress import progress_reporter
from gpusre.assets.rows_reconcile import rows_reconcile_check
from gpusre.models.ingest.ledger import loaded_rows
from gpusre.models.sources.slurm_events.ingest import SLURM_EVENTS_KIND, build_node_states, ingest_slurm_event_files
from gpusre.models.warehouse import transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

RAW_SLURM_EVENTS = dg.AssetKey(["raw", "slurm_events"])
NODE_STATES = dg.AssetKey(["core", "node_states"])
NODE_STATE_REASONS = dg.AssetKey(["core", "node_state_reasons"])
CLUSTER_EVENTS = dg.AssetKey(["core", "cluster_events"])


@dg.asset(
    key=RAW_SLURM_EVENTS,
    group_name="ingest",
    kinds={"parquet", "duckdb"},
    pool=WAREHOUSE_POOL,
    description=(
        "Every node and cluster event line of landing/slurm_events (sacctmgr show event -P dumps, "
        "sinfo -R snapshots), typed, UTC, with source file and line. New or changed files only (SHA-256); "
        "bad lines go to raw.rejects."
    ),
)
def raw_slurm_events(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, landing: LandingResource
) -> dg.MaterializeResult:
    config = landing.cluster_config()
    with warehouse.connect() as con:
        # Stages outside, then publishes inside one transaction (see models/sources/slurm_events/ingest.py).
        results = ingest_slurm_event_files(con, landing.root, timezone=config.timezone, cluster=config.cluster,
                                           fields=config.slurm_events.fields, progress=progress_reporter(context))
        total = loaded_rows(con, SLURM_EVENTS_KIND)
        rejects = latest_rejects(con, SLURM_EVENTS_KIND)
    return dg.MaterializeResult(metadata=file_ingest_metadata(context, results, total, rejects))


slurm_events_rows_reconcile = rows_reconcile_check(
    RAW_SLURM_EVENTS, SLURM_EVENTS_KIND, "slurm_events_rows_reconcile",
    "For every ingested slurm_events file: rows read = loaded + rejected, and both match the tables.")


@dg.multi_asset(
    specs=[
        dg.AssetSpec(NODE_STATES, deps=[RAW_SLURM_EVENTS], group_name="core", kinds={"duckdb", "drain3"},
                     description="One row per node event (node x start), its latest version across overlapping dumps: "
                     "state, start/end (NULL = ongoing), reason with Drain3 template and class "
                     "(catalog/drain_reasons.csv: reason_class, component, availability_class)."),
        dg.AssetSpec(NODE_STATE_REASONS, deps=[RAW_SLURM_EVENTS], group_name="core", kinds={"duckdb"},
                     description="One row per drain/down reason template: example, class, events, nodes, node-hours."),
        dg.AssetSpec(CLUSTER_EVENTS, deps=[RAW_SLURM_EVENTS], group_name="core", kinds={"duckdb"},
                     description="One row per cluster event (registered-TRES periods, controller down); "
                     "not node outages, so never expanded into core.node_states."),
    ],
    pool=WAREHOUSE_POOL,
)
def core_node_states(warehouse: WarehouseResource, landing: LandingResource):
    # The fleet's node names are host names, not component evidence, in drain reasons (`gpu017 PSU fail`).
    node_names = landing.cluster_config().node_names or None
    with warehouse.connect() as con:
        with transaction(con):
            summary = build_node_states(con, node_names=node_names)
        by_class = con.sql(
            "SELECT availability_class, reason_class, count(*) AS events, count(DISTINCT node) AS nodes "
            "FROM core.node_states GROUP BY ALL ORDER BY events DESC LIMIT 15").pl()
    yield dg.MaterializeResult(asset_key=NODE_STATES, metadata={
        "dagster/row_count": summary.node_states, "ongoing": summary.ongoing,
        "not_outages": summary.not_outages,
        "as_of": str(summary.as_of), "by_class": markdown_preview(by_class, 15)})
    yield dg.MaterializeResult(asset_key=NODE_STATE_REASONS, metadata={"dagster/row_count": summary.templates})
    yield dg.MaterializeResult(asset_key=CLUSTER_EVENTS, metadata={"dagster/row_count": summary.cluster_events})


@dg.asset_check(asset=NODE_STATES, pool=WAREHOUSE_POOL, blocking=True, description="No duplicate (node, start_ts) in core.node_states.")
def node_states_unique(warehouse: WarehouseResource) -> dg.AssetCheckResult:
    with warehouse.connect() as con:
        dup = con.sql("SELECT node, start_ts, count(*) FROM core.node_states GROUP BY ALL HAVING count(*) > 1").fetchall()
    return dg.AssetCheckResult(passed=not dup, metadata={"duplicates": len(dup), "examples": str(dup[:5])})
