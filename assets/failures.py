"""Marts: hardware incidents, job failure attribution, failure taxonomy, suspect nodes.

Thin: read core.node_events, core.jobs, cluster.yaml topology and the operator's incidents.csv,
call the pure models, write the marts in one transaction. Recomputed in full each run (events are
a small share of log lines, about 2 %), except attribution: a job keeps last night's row unless its
record or the evidence within reach of its end changed (core.attribution_memo,
models/failures/attribution_memo.py).
"""

from collections.abc import Callable
from datetime import datetime, timedelta

import dagster as dg
import duckdb
import polars as pl

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.ingest_node_states import NODE_STATES
from gpusre.assets.ingest_syslog import NODE_EVENTS
from gpusre.assets.metadata import markdown_preview
from gpusre.models.accounting_span import accounting_span
from gpusre.models.failures.attribution import (minutes_since_link_recovery, node_state_evidence, prepare_evidence,
                                                with_run_losses)
from gpusre.models.failures.attribution_memo import (attribute_reusing, dirty_days, evidence_signature,
                                                     rules_fingerprint)
from gpusre.models.failures.taxonomy import failure_taxonomy, incident_impact
from gpusre.models.failures.health_checks import health_check_quality, missed_detections
from gpusre.models.ingest.record_days import refresh_record_days
from gpusre.models.logs.node_event_copies import node_events_once_sql
from gpusre.models.failures.hw_incidents import (merge_incidents, node_state_incidents, not_a_failure_events,
                                                 planned_maintenance, shared_part_events)
from gpusre.models.sources.alerts.ingest import alert_settings
from gpusre.models.sources.incidents.ingest import publish_incidents, read_incidents
from gpusre.models.reliability.repair_times import node_outages
from gpusre.models.reliability.marts import run_instances_sql, run_jobs_sql
from gpusre.models.reliability.training_runs import (RunRules, assign_runs, attributed_interruption_losses,
                                                     charged_run_jobs, run_mates)
from gpusre.models.failures.suspect_nodes import SUSPECT_SCHEMA, suspect_nodes
from gpusre.models.vocabulary import LOSS_ATTRIBUTIONS, run_key
from gpusre.models.warehouse import append_arrow, replace_table, table_exists, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.reliability_settings import maintenance_spans, reliability_settings
from gpusre.pipelines.resources import LandingResource, WarehouseResource

HW_INCIDENTS = dg.AssetKey(["marts", "hw_incidents"])
ATTRIBUTION = dg.AssetKey(["marts", "job_failure_attribution"])
TAXONOMY = dg.AssetKey(["marts", "failure_taxonomy"])
SUSPECT_NODES = dg.AssetKey(["marts", "suspect_nodes"])
INSTANCE_ATTRIBUTION = dg.AssetKey(["marts", "instance_failure_attribution"])
HEALTH_CHECK_QUALITY = dg.AssetKey(["marts", "health_check_quality"])
HEALTH_CHECK_MISSES = dg.AssetKey(["marts", "health_check_misses"])

#: The core.jobs columns attribution, incident impact and suspect nodes read.
_JOB_COLUMNS = ("job_id", "state", "nodes", "start_ts", "end_ts", "elapsed_s", "n_gpus",
                "cancelled_by", "exit_code", "exit_signal", "account", "het_job_id")

def log_days(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The (node, UTC day) pairs with at least one node-log line (``raw.record_days``, brought in step
    with the ledger first: the coverage marts that also refresh it may run after this asset): where
    the absence of infrastructure evidence means something to attribution."""
    with transaction(con):
        refresh_record_days(con)
    return con.sql("SELECT DISTINCT unnest(nodes) AS node, day FROM raw.record_days "
                   "WHERE source_kind = 'syslog'").pl()


def run_losses(con: duckdb.DuckDBPyConnection, attribution: pl.DataFrame, instance_attr: pl.DataFrame,
               rules: RunRules, as_of: datetime | None) -> pl.DataFrame:
    """What goodput and ETTR charge each instance the infrastructure or planned maintenance ended
    (:func:`~gpusre.models.reliability.training_runs.attributed_interruption_losses`), assembling only the
    runs that hold one: the jobs that can share a run with such a job
    (:func:`~gpusre.models.reliability.training_runs.run_mates`), not the year's million."""
    priced = pl.col("attribution").is_in(list(LOSS_ATTRIBUTIONS))
    killed = pl.concat([attribution.filter(priced).select("job_id"), instance_attr.filter(priced).select("job_id")])
    if killed.is_empty() or as_of is None:
        return pl.DataFrame(schema={"job_id": pl.String, "instance_no": pl.Int64, "is_latest": pl.Boolean,
                                    "lost_gpu_hours": pl.Float64})
    keys = con.sql('SELECT job_id, "user", account, name, comment FROM core.jobs').pl()
    job_attr = attribution.select("job_id", "attribution")
    inst_attr = instance_attr.select("job_id", "instance_no", "attribution")

    def read(sql_for: Callable[[str], str], job_ids: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``sql_for`` (run_jobs_sql, run_instances_sql) cut to ``job_ids``."""
        con.register("_run_jobs", job_ids.to_arrow())
        try:
            return con.sql(sql_for("_run_jobs")).pl()
        finally:
            con.unregister("_run_jobs")

    jobs = read(run_jobs_sql, run_mates(keys, rules, killed.get_column("job_id")).to_frame())
    runs = assign_runs(jobs, rules)
    # The instances of the runs that hold a killed job only (the mates' runs are ~20x as many).
    instances = read(run_instances_sql, charged_run_jobs(runs, job_attr, inst_attr))
    return attributed_interruption_losses(jobs, instances, job_attr, inst_attr, rules, as_of, runs=runs)


def _read_memo(con: duckdb.DuckDBPyConnection) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
    """``core.attribution_memo`` and its basis as the last build left them (None before the tables exist:
    a warehouse written by an older gpusre attributes every job once)."""
    if not table_exists(con, "core.attribution_memo_basis"):
        return None, None
    return con.sql("SELECT * FROM core.attribution_memo").pl(), con.sql("SELECT * FROM core.attribution_memo_basis").pl()


@dg.multi_asset(
    specs=[
        dg.AssetSpec(HW_INCIDENTS, deps=[NODE_EVENTS, CORE_JOBS, NODE_STATES], group_name="marts", kinds={"duckdb"},
                     description="One row per hardware incident: repeated failure events on a node/component "
                     "merged within 30 min; link failures on >= 3 nodes of one leaf switch = one switch incident, leaves "
                     "(or >= 3 nodes) losing links within 60 s of each other = one fabric incident; power or "
                     "thermal failures on >= 3 nodes of one rack (NVLink failures on >= 3 hosts of one cluster.yaml "
                     "NVLink domain) within 60 s = one rack incident; "
                     "storage errors on >= 3 nodes = one storage incident; operator incidents.csv labels win "
                     "(component none / false_positive / not_a_failure: kept, cause_class not_a_failure, no failure). "
                     "With impact: affected jobs, GPUs, lost GPU-hours, hours until the nodes ran a job again."),
        dg.AssetSpec(ATTRIBUTION, deps=[NODE_EVENTS, CORE_JOBS, NODE_STATES], group_name="marts", kinds={"duckdb"},
                     description="One row per job that ended in a failure state (or was cancelled by root): "
                     "infrastructure / planned (maintenance on its node, no fault) / user / unknown, component, evidence events and lost GPU-hours "
                     "(after Meta, HPCA 2025: events 10 min before to 5 min after the end on the job's nodes; "
                     "Slurm node states with a hardware reason when core.node_states is ingested)."),
        dg.AssetSpec(INSTANCE_ATTRIBUTION, deps=[NODE_EVENTS, CORE_JOBS, NODE_STATES], group_name="marts", kinds={"duckdb"},
                     description="One row per earlier (requeued) instance of a job that ended in a failure state "
                     "(including the last started one of a job pending again after a requeue): "
                     "the same rules as job_failure_attribution, so goodput and ETTR see infrastructure "
                     "interruptions that Slurm requeued."),
        dg.AssetSpec(HEALTH_CHECK_QUALITY, deps=[NODE_EVENTS, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="Per health check (NHC check name): firings, how many preceded a job failure on "
                     "the node (5 min before to 10 min after), precision."),
        dg.AssetSpec(HEALTH_CHECK_MISSES, deps=[NODE_EVENTS, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="Infrastructure-attributed jobs whose nodes ran no failing health check from 10 min "
                     "before to 30 min after their end: missed detections."),
        dg.AssetSpec(TAXONOMY, deps=[NODE_EVENTS, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="Per period × component × cause class: incidents, events, affected jobs, lost GPU-hours."),
        dg.AssetSpec(SUSPECT_NODES, deps=[NODE_EVENTS, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="Nodes far above the fleet (robust z >= 3 over 28 days) in failure events, "
                     "non-user Xids, infrastructure-failed or NODE_FAIL jobs, with the recommended action."),
    ],
    pool=WAREHOUSE_POOL,
)
def failure_marts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    with warehouse.connect() as con:
        # incidents.csv is recorded in the ledger like every landing file; a deleted one labels nothing.
        operator_file = read_incidents(con, landing.root, cluster_nodes=config.node_names or None)
        operator = operator_file.incidents
        events = con.sql(node_events_once_sql(con)).pl()
        jobs = con.sql(f"SELECT {', '.join(_JOB_COLUMNS)} FROM core.jobs").pl()
        # Without Slurm accounting the job impact (jobs killed, lost GPU-hours, nodes running jobs again,
        # health-check precision) is unknown: NULL in the marts, never 0. Everything from the node logs
        # alone (incidents, members, firings) is the same as with accounting.
        accounting = jobs.height > 0
        # The accounting's last moment, else the node logs' (a landing without sacct still has
        # suspect nodes by their events).
        accounting_end = accounting_span(con)[1]
        as_of = accounting_end or con.sql("SELECT max(ts) FROM core.node_events").fetchall()[0][0]
        states = con.sql("SELECT * FROM core.node_states").pl() if table_exists(con, "core.node_states") else None
        outages = node_outages(states.select("node", "start_ts", "end_ts")) if states is not None else None
        # Planned maintenance as node availability and MTBF exposure take it out (ongoing: to the last event):
        # what a node logs in it is no failure evidence, and a job it ended no failure.
        last_event = con.sql("SELECT max(ts) FROM core.node_events").fetchall()[0][0]
        planned = planned_maintenance(states, maintenance_spans(config),
                                      max((t for t in (as_of, last_event) if t is not None), default=None),
                                      config.node_names or None, jobs=jobs)
        incidents, members = merge_incidents(events, topology=config.leaf_switches or None,
                                             racks=config.racks or None, nvlink_domains=config.nvlink_domains or None,
                                             operator=operator, outages=outages, planned=planned)
        # A hardware outage nothing logged (a tray that lost power) is an incident of its node too (rule 7).
        unlogged = node_state_incidents(incidents, states, planned, racks=config.racks or None)
        incidents = pl.concat([incidents, unlogged]).sort("start_ts", "incident_id")
        # Lost work per the site's checkpoint policy (per account), as goodput estimates it.
        rules = reliability_settings(config).rules
        policy = rules.policy_frame(jobs.get_column("account").drop_nulls().unique().to_list()).select(
            "account", pl.col("interval_s").alias("checkpoint_interval_s"))

        def with_policy(frame: pl.DataFrame) -> pl.DataFrame:
            """The account's checkpoint interval, else the cluster default."""
            return frame.join(policy, on="account", how="left").with_columns(
                pl.col("checkpoint_interval_s").fill_null(rules.checkpoint.interval_s))

        jobs = with_policy(jobs)
        hw_outages = node_state_evidence(states) if states is not None else None
        # The latest instances and the earlier ones are weighed against the same evidence, prepared once.
        evidence = prepare_evidence(events, incidents, hw_outages, log_days(con), planned)
        # A multi-node job hangs on a link flap until its collective times out (cluster.yaml).
        collective = timedelta(minutes=config.attribution.collective_timeout_min)
        # Only the jobs whose row or evidence changed since the last build are attributed again
        # (models/failures/attribution_memo.py): the rest keep last night's rows.
        signature = evidence_signature(evidence, rules_fingerprint(collective_timeout=collective))
        memo, basis = _read_memo(con)
        dirty = dirty_days(basis, signature)
        attribution, job_memo = attribute_reusing(jobs, evidence, kind="job", memo=memo, dirty=dirty,
                                                  collective_timeout=collective)
        # Every instance core.jobs does not describe: earlier ones, and the last started one of a
        # job requeued and pending again (core.jobs shows the pending record).
        earlier = con.sql("SELECT * FROM core.instances_outside_jobs").pl()
        earlier = with_policy(earlier)
        instance_attr, instance_memo = attribute_reusing(earlier, evidence, kind="instance", memo=memo, dirty=dirty,
                                                         collective_timeout=collective)
        instance_attr = instance_attr.filter(pl.col("attribution") != "none")
        # Lost GPU-hours as goodput and ETTR charge the interruption: the work lost (less the instance's
        # own start-up when it restarted its run) and the restart that followed, once it started.
        losses = run_losses(con, attribution, instance_attr, rules, accounting_end)
        attribution, instance_attr = with_run_losses(attribution, losses), with_run_losses(instance_attr, losses)
        failed = attribution.filter(pl.col("attribution") != "none")
        # How long after a link came back each multi-node failure ended (the nightly's collective-timeout hint).
        failed = failed.join(minutes_since_link_recovery(
            jobs.filter(pl.col("job_id").is_in(failed.get_column("job_id").implode())), evidence),
            on="job_id", how="left")
        # An incident's kills include the instances Slurm requeued (the job itself may later complete).
        kills = [a.select("job_id", "attribution", "incident_id", "n_gpus", "lost_gpu_hours")
                 for a in (attribution, instance_attr)]
        impact = incident_impact(incidents, pl.concat(kills, how="vertical_relaxed"), jobs, accounting=accounting)
        all_instances = pl.concat([jobs.select("state", "end_ts", "nodes"), earlier.select("state", "end_ts", "nodes")],
                                  how="vertical_relaxed")
        check_quality = health_check_quality(
            events, all_instances if accounting else None,
            killed_states=alert_settings(config).clustering.killed_states)
        check_misses = missed_detections(failed, jobs, events)
        # The taxonomy counts the same kills as the incidents' impact: requeued instances too.
        killed = pl.concat([attribution, instance_attr], how="diagonal_relaxed")
        taxonomy = pl.concat([failure_taxonomy(incidents, killed, p, accounting=accounting) for p in ("all", "month")],
                             how="vertical")
        # Every run counts: a NODE_FAIL that killed a run Slurm requeued is a failure of the node.
        suspect_runs = pl.concat([jobs.select("job_id", "state", "end_ts", "nodes"),
                                  earlier.select(run_key(), "state", "end_ts", "nodes")], how="vertical_relaxed")
        # An incident the operator marked not a failure (and a job only it killed) is no lemon signal; a
        # failed job counts on the nodes its evidence is on, a shared part's incident on none.
        blame = ("attribution", "cause_class", "evidence_nodes", "incident_id")
        suspect_attr = pl.concat([attribution.select("job_id", *blame), instance_attr.select(run_key(), *blame)],
                                 how="vertical_relaxed")
        suspects = (suspect_nodes(events, suspect_attr, suspect_runs, as_of=as_of, fleet=config.node_names or None,
                                  accounting=accounting, not_failure_events=not_a_failure_events(incidents, members),
                                  planned=planned, shared=shared_part_events(incidents, members))
                    if as_of is not None else pl.DataFrame(schema=SUSPECT_SCHEMA))
        with transaction(con):
            replace_table(con, "marts.hw_incidents", incidents.join(impact, on="incident_id", how="left"))
            replace_table(con, "marts.hw_incident_members", members)
            replace_table(con, "marts.job_failure_attribution", failed)
            replace_table(con, "marts.instance_failure_attribution", instance_attr)
            replace_table(con, "marts.health_check_quality", check_quality)
            replace_table(con, "marts.health_check_misses", check_misses)
            replace_table(con, "marts.failure_taxonomy", taxonomy)
            replace_table(con, "marts.suspect_nodes", suspects)
            publish_incidents(con, operator_file)
            con.execute("DELETE FROM core.attribution_memo; DELETE FROM core.attribution_memo_basis")
            append_arrow(con, "core.attribution_memo", pl.concat([job_memo, instance_memo]).to_arrow())
            append_arrow(con, "core.attribution_memo_basis", signature.to_arrow())
    summary = (failed.group_by("attribution").agg(pl.len().alias("jobs"), pl.col("lost_gpu_hours").sum())
               .sort("jobs", descending=True))
    op = operator_file.result
    yield dg.MaterializeResult(asset_key=HW_INCIDENTS, metadata={
        "dagster/row_count": incidents.height, "preview": markdown_preview(incidents.select(
            "incident_id", "component", "start_ts", "n_events")),
        # What the run summary says of incidents.csv (gpusre.pipelines.runner).
        "incidents_file": op.source_file, "incidents_status": op.status, "incidents_loaded": op.rows_loaded,
        "incidents_rejected": op.rows_rejected, "incidents_error": op.error or ""})
    yield dg.MaterializeResult(asset_key=ATTRIBUTION, metadata={
        "dagster/row_count": failed.height, "by_attribution": markdown_preview(summary)})
    yield dg.MaterializeResult(asset_key=INSTANCE_ATTRIBUTION, metadata={"dagster/row_count": instance_attr.height})
    yield dg.MaterializeResult(asset_key=HEALTH_CHECK_QUALITY, metadata={
        "dagster/row_count": check_quality.height,
        "preview": markdown_preview(check_quality) if check_quality.height else dg.MetadataValue.md("_(none)_")})
    yield dg.MaterializeResult(asset_key=HEALTH_CHECK_MISSES, metadata={"dagster/row_count": check_misses.height})
    yield dg.MaterializeResult(asset_key=TAXONOMY, metadata={"dagster/row_count": taxonomy.height})
    yield dg.MaterializeResult(asset_key=SUSPECT_NODES, metadata={
        "dagster/row_count": suspects.height,
        "preview": markdown_preview(suspects) if suspects.height else dg.MetadataValue.md("_(none)_")})
