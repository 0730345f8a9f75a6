"""Marts: the counts the reports quote, built once so every section shows the same value.

One multi-asset over ``sql/marts/<name>.sql`` (see :mod:`gpusre.models.report_marts`): GPU job
totals and the failed share of GPU time (one failure-state set), per-day job states, failure
attribution totals, alert-incident scopes, alert-rule verdicts, ingestion totals, and the
hardware-incidents-by-component table macro the SLO review calls with its window.
"""

import dagster as dg

from gpusre.assets.alert_incidents import ALERT_INCIDENTS, ALERT_RULE_QUALITY
from gpusre.assets.failures import ATTRIBUTION, HW_INCIDENTS
from gpusre.assets.ingest_alerts import RAW_ALERTS
from gpusre.assets.ingest_sacct import RAW_SACCT
from gpusre.assets.ingest_syslog import NODE_EVENTS, RAW_SYSLOG
from gpusre.assets.job_trends import JOB_USAGE_DAILY, UTILIZATION_BY_POOL_DAILY
from gpusre.assets.ingest_node_states import RAW_SLURM_EVENTS
from gpusre.assets.reliability import KEYS as RELIABILITY_KEYS
from gpusre.models.report_marts import WINDOW_MACROS, build_report_marts
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import WarehouseResource

ETTR_RUNS = RELIABILITY_KEYS["ettr_runs"]
_DEPS: dict[str, list[dg.AssetKey]] = {
    "job_totals": [JOB_USAGE_DAILY],
    "job_states_daily": [JOB_USAGE_DAILY],
    "failure_attribution_summary": [ATTRIBUTION],
    "alert_incident_scopes": [ALERT_INCIDENTS],
    "alert_rule_verdicts": [ALERT_RULE_QUALITY],
    # raw.ingested_files is the ledger every ingest asset writes (incidents.csv: the failure marts)
    "ingestion_by_source": [RAW_SACCT, RAW_SYSLOG, RAW_ALERTS, RAW_SLURM_EVENTS, HW_INCIDENTS],
    "hw_incidents_by_component": [HW_INCIDENTS],
    "ettr_window_by_size": [ETTR_RUNS],
    "ettr_window_policies": [ETTR_RUNS],
    "utilization_by_pool": [UTILIZATION_BY_POOL_DAILY],
    "uncatalogued_codes": [NODE_EVENTS],
}
_DESCRIPTIONS: dict[str, str] = {
    "job_totals": "Per scope (whole record / UTC end day): GPU jobs, GPU-hours, failed jobs and their share of "
                  "GPU-hours — the one count and failed share every report section quotes.",
    "job_states_daily": "Per UTC end day and final state: GPU jobs and GPU-hours, and whether the state is a failure.",
    "failure_attribution_summary": "Per scope, attribution and state (with '(all)' totals): failed jobs and lost "
                                   "GPU-hours.",
    "alert_incident_scopes": "Per UTC day and scope: alert incidents, alerts, floods, hardware links, jobs killed.",
    "alert_rule_verdicts": "Per alert-rule verdict (with an '(all)' row): rules and firings.",
    "ingestion_by_source": "Per source kind (with an '(all)' row): files, rows read/loaded/rejected, reject rate.",
    "hw_incidents_by_component": "Table macro marts.hw_incidents_by_component(date_from, date_to): hardware "
                                 "incidents and lost GPU-hours per component in a window.",
    "ettr_window_by_size": "Table macro marts.ettr_window_by_size(date_from, date_to): per size bucket, runs that "
                           "ended in a window, ETTR mean / p10 / p50 / p90 and where their wall-clock went.",
    "ettr_window_policies": "Table macro marts.ettr_window_policies(date_from, date_to): runs per checkpoint policy.",
    "utilization_by_pool": "Table macro marts.utilization_by_pool(date_from, date_to): per pool (cluster.yaml pools), "
                           "capacity, allocated GPU-hours and utilization over a window.",
    "uncatalogued_codes": "Per UTC day, catalog and code: Xid / SXid codes the event catalog does not list (events, "
                          "nodes, first/last time, example line), to extend models/catalog/xid.csv / sxid.csv.",
}
REPORT_MART_KEYS: dict[str, dg.AssetKey] = {name: dg.AssetKey(["marts", name]) for name in _DEPS}


@dg.multi_asset(
    specs=[dg.AssetSpec(key, deps=_DEPS[name], group_name="marts", kinds={"duckdb"}, description=_DESCRIPTIONS[name],
                        skippable=True)
           for name, key in REPORT_MART_KEYS.items()],
    can_subset=False,
    pool=WAREHOUSE_POOL,
)
def report_marts(context: dg.AssetExecutionContext, warehouse: WarehouseResource):
    """Rebuild the report marts, each in its own transaction; a mart whose input is missing or malformed is
    reported as not built (its report section says so) instead of stopping the night."""
    with warehouse.connect() as con:
        status = build_report_marts(con)  # one transaction per mart
        for name, key in REPORT_MART_KEYS.items():
            meta: dict[str, object] = {"built": status[name] is None}
            if status[name] is not None:
                context.log.warning(f"marts.{name} not built: {status[name]}")
                meta["not_built_because"] = status[name]
            elif name not in WINDOW_MACROS:
                meta["dagster/row_count"] = con.sql(f"SELECT count(*) FROM marts.{name}").fetchall()[0][0]
            yield dg.MaterializeResult(asset_key=key, metadata=meta)
