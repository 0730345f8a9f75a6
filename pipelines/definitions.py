"""The one Dagster ``Definitions`` of gpusre (loaded by workspace.yaml and the CLI)."""

from __future__ import annotations

import dagster as dg

from gpusre.assets.alert_incidents import alert_incident_marts
from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.data_coverage import (data_coverage_marts, dense_sources_have_no_empty_days, no_refused_files,
                                         no_silent_nodes)
from gpusre.assets.ingest_sacct import raw_sacct, sacct_rows_reconcile
from gpusre.assets.failures import failure_marts
from gpusre.assets.reliability import reliability_marts
from gpusre.assets.ingest_alerts import alert_rows_reconcile, core_alerts, raw_alert_notifications
from gpusre.assets.ingest_syslog import core_node_events, raw_syslog
from gpusre.assets.lake_compaction import lake_compaction
from gpusre.assets.job_trends import (
    MART_CHECKS,
    ROLLUP_ASSETS,
    cluster_comparison,
    daily_job_marts,
    findings,
    no_unprocessed_days,
    size_share_trend,
)
from gpusre.assets.ingest_node_states import core_node_states, node_states_unique, raw_slurm_events, slurm_events_rows_reconcile
from gpusre.assets.node_states import node_state_marts, repair_time_marts
from gpusre.assets.report_marts import report_marts
from gpusre.assets.reports import nightly_report, slo_report
from gpusre.assets.warehouse_docs import warehouse_comments
from gpusre.assets.warehouse_snapshot import warehouse_snapshot
from gpusre.pipelines.jobs import (
    build_ingest_job,
    daily_marts_job,
    ingest_job,
    lake_compaction_job,
    nightly_job,
    rollup_job,
)
from gpusre.pipelines.resources import default_resources, warehouse_path
from gpusre.pipelines.schedules import build_nightly_schedule, cluster_timezone, lake_compaction_schedule
from gpusre.pipelines.sensors import build_landing_sensor

ASSETS = [raw_sacct, core_jobs, raw_syslog, core_node_events, failure_marts, reliability_marts, raw_slurm_events,
          core_node_states, node_state_marts, repair_time_marts, raw_alert_notifications, core_alerts,
          alert_incident_marts, daily_job_marts, *ROLLUP_ASSETS, size_share_trend, findings,
          cluster_comparison, data_coverage_marts, report_marts, nightly_report, slo_report, warehouse_comments,
          warehouse_snapshot, lake_compaction]
CHECKS = [sacct_rows_reconcile, slurm_events_rows_reconcile, alert_rows_reconcile, node_states_unique, no_unprocessed_days, *MART_CHECKS,
          dense_sources_have_no_empty_days, no_silent_nodes, no_refused_files]


def build_definitions(
    warehouse: str | None = None, landing: str | None = None, reports: str | None = None, workers: int = 1,
    executor: dg.ExecutorDefinition = dg.in_process_executor,
) -> dg.Definitions:
    """Definitions bound to a warehouse file, landing and reports directory.

    The in-process executor is the default because DuckDB allows one writing process per file.
    With ``workers`` > 1 the ingest job runs on the multiprocess executor with that many parse
    shards per source; the ``duckdb_warehouse`` pool must then be limited to 1 in dagster.yaml
    (``gpusre run`` writes that instance config).

    ``executor``: the jobs' executor (the run config's ``execution:`` section is validated against
    it); a deployment that spreads steps over processes or pods builds its code location with
    another one — ``docs/scale-out.md``.

    ``nightly_schedule`` runs at 02:30 in the time zone of the landing's cluster.yaml (UTC when it
    cannot be read); ``landing_sensor`` watches the run lock of this warehouse.
    """
    return dg.Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        jobs=[build_ingest_job(workers) if workers > 1 else ingest_job, daily_marts_job, rollup_job, nightly_job,
              lake_compaction_job],
        schedules=[build_nightly_schedule(cluster_timezone(landing)), lake_compaction_schedule],
        sensors=[build_landing_sensor(warehouse_path(warehouse))],
        resources=default_resources(warehouse, landing, reports, workers if workers > 1 else None),
        executor=executor,
    )


defs = build_definitions()
