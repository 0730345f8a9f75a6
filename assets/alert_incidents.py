"""Marts: alert incidents (clusters of core.alerts with a root-cause candidate and blast radius),
their members, daily compression, flood episodes, alert-rule hygiene, the hardware incidents
the alerts can judge with those no alert covered, and the gaps in which an alert rule was blind.

Thin: read core.alerts, marts.hw_incidents, marts.incident_repairs (how long an uncovered incident
lasted), core.jobs, marts.job_failure_attribution and the
cluster.yaml topology, call :func:`gpusre.models.alerts.clustering.alert_marts`, write every mart in
one transaction. Recomputed in full each run (alerts are few next to log lines: a month of a
2,000-node cluster is a few hundred thousand). A warehouse without alerts (or without the failure
marts yet) gets empty marts with the right columns.
"""

import dagster as dg
import polars as pl

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.data_coverage import DAY_COVERAGE
from gpusre.assets.failures import ATTRIBUTION, HW_INCIDENTS
from gpusre.assets.ingest_alerts import CORE_ALERTS
from gpusre.assets.ingest_node_states import NODE_STATES
from gpusre.assets.metadata import markdown_preview
from gpusre.assets.node_states import INCIDENT_REPAIRS
from gpusre.models.alerts.clustering import (
    MAINTENANCE_SCHEMA,
    NOTIFICATION_DAYS_SQL,
    AlertClusteringSettings,
    Topology,
    alert_data_span_sql,
    alert_marts,
    data_end,
)
from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.sources.alerts.ingest import SUPPRESSED_SQL, alert_settings
from gpusre.models.day_coverage import mark_partial_days
from gpusre.models.vocabulary import INTERRUPTED_STATES, RUN_KEY_SEP
from gpusre.models.warehouse import replace_table, table_exists, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.resources import LandingResource, WarehouseResource

ALERT_INCIDENTS = dg.AssetKey(["marts", "alert_incidents"])
ALERT_INCIDENT_MEMBERS = dg.AssetKey(["marts", "alert_incident_members"])
ALERT_DAILY = dg.AssetKey(["marts", "alert_daily"])
ALERT_FLOODS = dg.AssetKey(["marts", "alert_floods"])
ALERT_RULE_QUALITY = dg.AssetKey(["marts", "alert_rule_quality"])
HW_WITHOUT_ALERT = dg.AssetKey(["marts", "hw_incidents_without_alert"])
ALERT_COVERAGE = dg.AssetKey(["marts", "alert_coverage"])
ALERT_DATA_SPAN = dg.AssetKey(["marts", "alert_data_span"])
ALERT_MONITORING_GAPS = dg.AssetKey(["marts", "alert_monitoring_gaps"])

# NODE_STATES: maintenance periods (rule hygiene); INCIDENT_REPAIRS: the repair time of an uncovered incident.
_DEPS = [CORE_ALERTS, HW_INCIDENTS, ATTRIBUTION, CORE_JOBS, DAY_COVERAGE, NODE_STATES, INCIDENT_REPAIRS]
_ALERT_SQL = ("SELECT alert_id, fingerprint, alertname, status, severity, node, target, target_label, starts_at, "
              "ends_at, CAST(labels AS VARCHAR) AS labels, template_id, n_notifications, description FROM core.alerts")


def _clustering_settings(config) -> AlertClusteringSettings:  # noqa: ANN001 - ClusterConfig
    """cluster.yaml ``alerts.clustering`` once the config carries it, else the defaults."""
    settings = getattr(alert_settings(config), "clustering", None)
    return settings if isinstance(settings, AlertClusteringSettings) else AlertClusteringSettings()


def _read(con, table: str, sql: str) -> pl.DataFrame | None:  # noqa: ANN001 - DuckDB connection
    return con.sql(sql).pl() if table_exists(con, table) else None


def _maintenance(con, config) -> pl.DataFrame:  # noqa: ANN001 - DuckDB connection, ClusterConfig
    """Maintenance periods (node NULL = every node): cluster.yaml's planned windows and the node
    states Slurm's history classes as maintenance."""
    rows: list[dict] = []
    for w in getattr(config, "maintenance", None) or []:
        for node in (expand_hostlist(w.nodes) if w.nodes else [None]):
            rows.append({"node": node, "start_ts": w.start, "end_ts": w.end})
    frame = pl.DataFrame(rows, schema=MAINTENANCE_SCHEMA)
    if table_exists(con, "core.node_states"):
        states = con.sql("SELECT node, start_ts, end_ts FROM core.node_states "
                         "WHERE availability_class = 'maintenance'").pl()
        frame = pl.concat([frame, states.select([pl.col(c).cast(t) for c, t in MAINTENANCE_SCHEMA.items()])])
    return frame


def _preview(frame: pl.DataFrame, limit: int = 10) -> dg.MetadataValue:
    """:func:`markdown_preview` without wrapping long cells (root-cause reasons) across lines."""
    with pl.Config(tbl_width_chars=4000):
        return markdown_preview(frame, limit)



@dg.multi_asset(
    specs=[
        dg.AssetSpec(ALERT_INCIDENTS, deps=_DEPS, group_name="marts", kinds={"duckdb", "polars"},
                     description="One row per alert incident: alerts in one session (starts <= 10 min apart) linked "
                     "by node, rack/leaf switch, storage target, shared hardware incident or template co-occurrence "
                     "(connected components). Root-cause candidate (hardware incident, else the earliest alert at the "
                     "most upstream level: fabric > storage > rack > node > GPU) with its reason, scope, flood flag, jobs "
                     "killed (requeued runs among them) and lost GPU-hours."),
        dg.AssetSpec(ALERT_INCIDENT_MEMBERS, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per alert: its incident, whether it is the root, its level and hardware incident."),
        dg.AssetSpec(ALERT_DAILY, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per UTC day: notifications and webhook deliveries received that day, "
                     "alerts and incidents that started that day, compression ratio (alerts / incidents), flood "
                     "episodes; partial = the data covers the day only in part."),
        dg.AssetSpec(ALERT_FLOODS, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per alert-flood episode (arrivals above a robust 24 h baseline) with the "
                     "incidents its alerts belong to."),
        dg.AssetSpec(ALERT_RULE_QUALITY, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per alertname: fired, precision (share of its alerts in incidents with a "
                     "hardware incident or killed jobs), median duration, flapping, incidents in maintenance, "
                     "verdict (judged once it fired in 3 incidents outside maintenance)."),
        dg.AssetSpec(ALERT_COVERAGE, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per hardware incident the alert data can judge (started within its span: "
                     "first to last webhook delivery, resolves and repeats included; or matched by an alert): whether an alert covered it and how many alerts were about it."),
        dg.AssetSpec(ALERT_DATA_SPAN, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row: the span of the alert data alert coverage is judged in (first to last "
                     "webhook delivery, resolves and repeats included; without notifications, the alerts' own times)."),
        dg.AssetSpec(ALERT_MONITORING_GAPS, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="One row per gap of one alert rule: a Grafana DatasourceNoData / DatasourceError "
                     "meta-alert said the rule (its rulename) could not be evaluated from start to end."),
        dg.AssetSpec(HW_WITHOUT_ALERT, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                     description="Hardware incidents (within the span of the alert data) with no alert on their "
                     "nodes in their window: missing alert coverage; with the repair time where known and how long "
                     "each lasted (to its repair, else to its last evidence)."),
    ],
    pool=WAREHOUSE_POOL,
)
def alert_incident_marts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    settings = _clustering_settings(config)
    with warehouse.connect() as con:
        alerts = _read(con, "core.alerts", _ALERT_SQL)
        if alerts is not None and table_exists(con, "raw.alert_notifications"):
            # Whether Alertmanager inhibited or silenced each alert (its /api/v2/alerts snapshots say so).
            held = con.sql(SUPPRESSED_SQL).pl()
            alerts = alerts.join(held, on="alert_id", how="left")
        hw = _read(con, "marts.hw_incidents", "SELECT * FROM marts.hw_incidents")
        repairs = _read(con, "marts.incident_repairs", "SELECT incident_id, repaired_ts FROM marts.incident_repairs")
        # Pre-filter on the configured killed_states (cluster.yaml alerts.clustering.killed_states), the
        # same set the model counts, so a site that adds TIMEOUT gets its TIMEOUT jobs counted.
        # Without Slurm accounting (no job at all) the jobs an incident killed are unknown: None.
        accounting = table_exists(con, "core.jobs") and con.sql("SELECT count(*) FROM core.jobs").fetchall()[0][0] > 0
        # Every killed run counts: a job's final run and the earlier runs Slurm requeued (a NODE_FAIL that
        # killed a 64-GPU run of a job that later completed is a killed run), each under its own key
        # `job_id#instance_no` (RUN_KEY_SEP); the model counts a job killed twice once. The interrupted
        # runs come too (INTERRUPTED_STATES: REQUEUED, TIMEOUT, ...): the model counts those attribution
        # gives to a hardware incident, as that incident does.
        states = sorted({*settings.killed_states, *INTERRUPTED_STATES})
        jobs = (con.sql("SELECT job_id, state, end_ts, nodes FROM core.jobs "
                        "WHERE list_contains($states, state) AND end_ts IS NOT NULL "
                        "UNION ALL SELECT job_id || $sep || instance_no::VARCHAR, state, end_ts, nodes "
                        "FROM core.instances_outside_jobs WHERE list_contains($states, state) AND end_ts IS NOT NULL",
                        params={"states": states, "sep": RUN_KEY_SEP}).pl()
                if accounting else None)
        attribution = _read(con, "marts.job_failure_attribution",
                            "SELECT job_id, attribution, lost_gpu_hours, incident_id FROM marts.job_failure_attribution")
        if attribution is not None and table_exists(con, "marts.instance_failure_attribution"):
            attribution = pl.concat([attribution, con.sql(
                "SELECT job_id || $sep || instance_no::VARCHAR AS job_id, attribution, lost_gpu_hours, incident_id "
                "FROM marts.instance_failure_attribution", params={"sep": RUN_KEY_SEP}).pl()], how="vertical_relaxed")
        # Notifications by the day they were received, and the span of the alert data: the first to
        # the last webhook delivery (resolves and repeats included; a file named for a day covers that
        # day, up to the data's end). Coverage is judged inside it, and an incident whose alert still
        # fires is ongoing until its end.
        raw = table_exists(con, "raw.alert_notifications")
        notifications = con.sql(NOTIFICATION_DAYS_SQL).pl() if raw else None
        span = (tuple(con.sql(alert_data_span_sql("$data_end"), params={"data_end": data_end(con)}).fetchall()[0])
                if raw else None)
        as_of = span[1] if span else None
        marts = alert_marts(
            alerts if alerts is not None else pl.DataFrame(),
            topology=Topology.from_config(config), hw_incidents=hw, jobs=jobs, attribution=attribution,
            settings=settings, flood_settings=alert_settings(config).floods, notifications=notifications,
            maintenance=_maintenance(con, config), node_labels=alert_settings(config).nodes.node_labels,
            host_local_labels=tuple(alert_settings(config).nodes.host_local_labels),
            as_of=as_of, data_span=span, repairs=repairs,
        )
        with transaction(con):
            replace_table(con, "marts.alert_incidents", marts.incidents)
            replace_table(con, "marts.alert_incident_members", marts.members)
            replace_table(con, "marts.alert_daily", marts.daily)
            mark_partial_days(con, "marts.alert_daily")
            replace_table(con, "marts.alert_floods", marts.floods)
            replace_table(con, "marts.alert_rule_quality", marts.rule_quality)
            replace_table(con, "marts.alert_coverage", marts.coverage)
            replace_table(con, "marts.hw_incidents_without_alert", marts.hw_without_alert)
            replace_table(con, "marts.alert_data_span", marts.data_span)
            replace_table(con, "marts.alert_monitoring_gaps", marts.monitoring_gaps)
    inc = marts.incidents
    n_alerts = marts.members.height
    ratio = round(n_alerts / inc.height, 2) if inc.height else None
    top = inc.sort(["n_alerts", "start_ts"], descending=[True, False]).select(
        "incident_id", "start_ts", "n_alerts", "n_nodes", "scope", "root_cause_candidate", "root_cause_reason",
        "n_jobs_killed", "lost_gpu_hours")
    verdicts = marts.rule_quality.group_by("verdict").agg(pl.len().alias("rules")).sort("rules", descending=True)
    yield dg.MaterializeResult(asset_key=ALERT_INCIDENTS, metadata={
        "dagster/row_count": inc.height,
        "alerts": n_alerts,
        "compression_ratio": dg.MetadataValue.float(float(ratio)) if ratio is not None else dg.MetadataValue.null(),
        "with_hw_incident": inc.filter(pl.col("hw_incident_id").is_not_null()).height,
        "in_flood": inc.filter(pl.col("in_flood")).height,
        "jobs_killed": (int(inc["n_jobs_killed"].sum() or 0) if accounting else dg.MetadataValue.null()),
        "requeued_runs_killed": (int(inc["n_runs_requeued"].sum() or 0) if accounting else dg.MetadataValue.null()),
        "lost_gpu_hours": (float(inc["lost_gpu_hours"].sum() or 0.0) if accounting else dg.MetadataValue.null()),
        "top_incidents": _preview(top),
    })
    yield dg.MaterializeResult(asset_key=ALERT_INCIDENT_MEMBERS, metadata={"dagster/row_count": n_alerts})
    yield dg.MaterializeResult(asset_key=ALERT_DAILY, metadata={
        "dagster/row_count": marts.daily.height, "latest_days": markdown_preview(marts.daily.tail(7))})
    yield dg.MaterializeResult(asset_key=ALERT_FLOODS, metadata={
        "dagster/row_count": marts.floods.height, "preview": _preview(marts.floods.select(
            "flood_id", "start_ts", "end_ts", "n_alerts", "peak_per_bucket", "incidents"))})
    yield dg.MaterializeResult(asset_key=ALERT_RULE_QUALITY, metadata={
        "dagster/row_count": marts.rule_quality.height, "verdicts": markdown_preview(verdicts),
        "preview": _preview(marts.rule_quality.select("alertname", "fired", "precision", "flapping", "verdict"))})
    yield dg.MaterializeResult(asset_key=ALERT_COVERAGE, metadata={
        "dagster/row_count": marts.coverage.height,
        "covered": marts.coverage.filter(pl.col("covered")).height})
    span_row = marts.data_span.row(0, named=True) if marts.data_span.height else None
    yield dg.MaterializeResult(asset_key=ALERT_DATA_SPAN, metadata={
        "dagster/row_count": marts.data_span.height,
        "span": (f"{span_row['first_ts']} .. {span_row['last_ts']} ({span_row['span_source']})" if span_row
                 else dg.MetadataValue.null())})
    yield dg.MaterializeResult(asset_key=ALERT_MONITORING_GAPS, metadata={
        "dagster/row_count": marts.monitoring_gaps.height,
        "preview": _preview(marts.monitoring_gaps.select("rule_name", "gap_kind", "start_ts", "end_ts", "ongoing"))})
    yield dg.MaterializeResult(asset_key=HW_WITHOUT_ALERT, metadata={
        "dagster/row_count": marts.hw_without_alert.height,
        "preview": _preview(marts.hw_without_alert.select("incident_id", "component", "start_ts", "nodes"))})
