"""Marts over the Slurm node-state history (core.node_states, built by
:mod:`gpusre.assets.ingest_node_states`): marts.node_availability_daily, marts.drain_reasons, availability by
component and the repair times.

Thin: read, call the models, write in one transaction. The marts are rebuilt in full each run (node
events are thousands a year, not millions); the daily mart is not partitioned yet — a nightly rebuild of
a year of 2,000 nodes is ~730,000 small rows.
"""

from datetime import datetime, time, timedelta, timezone

import dagster as dg
import polars as pl

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.data_coverage import DAY_COVERAGE
from gpusre.assets.failures import HW_INCIDENTS
from gpusre.assets.ingest_node_states import NODE_STATES
from gpusre.assets.metadata import markdown_preview
from gpusre.models.accounting_span import accounting_span, counted_end, data_span_of, node_history_end
from gpusre.models.day_coverage import mark_partial_days
from gpusre.models.failures.drain_reasons import DRAIN_REASONS_MART_SCHEMA, top_drain_reasons
from gpusre.models.reliability.node_availability import (
    AVAILABILITY_BY_COMPONENT_SCHEMA,
    DAILY_SCHEMA,
    availability_by_component,
    down_segments,
    node_availability_daily,
    outage_causes,
    repair_states,
    with_down_from,
)
from gpusre.models.sources.slurm_events.ingest import history_start, node_states_end
from gpusre.models.vocabulary import class_of
from gpusre.models.reliability.repair_times import (
    INCIDENT_REPAIR_SCHEMA,
    first_evidence,
    health_check_ends,
    incident_outage_links,
    link_incidents,
    load_fault_clears,
    load_health_evidence_kinds,
    load_recovery_kinds,
    operator_label_evidence,
    recovery_ends,
    repair_times,
)
from gpusre.models.warehouse import replace_table, select_columns, table_exists, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.reliability_settings import maintenance_spans
from gpusre.pipelines.resources import LandingResource, WarehouseResource

NODE_AVAILABILITY_DAILY = dg.AssetKey(["marts", "node_availability_daily"])
DRAIN_REASONS = dg.AssetKey(["marts", "drain_reasons"])
AVAILABILITY_BY_COMPONENT = dg.AssetKey(["marts", "availability_by_component"])
REPAIR_TIMES_MONTHLY = dg.AssetKey(["marts", "repair_times_monthly"])
REPAIR_TIMES = dg.AssetKey(["marts", "repair_times"])
INCIDENT_REPAIRS = dg.AssetKey(["marts", "incident_repairs"])

#: How far back the daily availability mart reaches before as_of at most: a node drained since
#: years would otherwise stretch the table back to its drain day.
MAX_HISTORY_DAYS = 400


def _replace(con, table: str, frame: pl.DataFrame) -> None:  # noqa: ANN001 - DuckDB connection
    con.execute(f"DELETE FROM {table}")
    if frame.height:
        con.register("_mart_frame", frame.to_arrow())
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _mart_frame")
        con.unregister("_mart_frame")


def _midnight(ts: datetime) -> datetime:
    """The start of ``ts``'s UTC day."""
    return datetime.combine(ts.astimezone(timezone.utc).date(), time(), tzinfo=timezone.utc)


def _job_spans(con) -> pl.DataFrame | None:  # noqa: ANN001 - DuckDB connection
    """``nodes``, ``start_ts``, ``end_ts`` of every job that started (``core.jobs``): what a drain on a node still
    running jobs waits for (models/reliability/node_availability.py, with_down_from); None before accounting."""
    if not table_exists(con, "core.jobs"):
        return None
    return con.sql("SELECT nodes, start_ts, end_ts FROM core.jobs WHERE start_ts IS NOT NULL").pl()


def _first_log_line(con) -> datetime | None:  # noqa: ANN001 - DuckDB connection
    """The first node-log line's time (raw.record_days), None without node logs."""
    if not table_exists(con, "raw.record_days"):
        return None
    first = con.sql("SELECT min(first_ts) FROM raw.record_days WHERE source_kind = 'syslog'").fetchall()[0][0]
    return first.astimezone(timezone.utc) if first is not None else None


@dg.multi_asset(
    specs=[
        # marts.day_coverage by key: assets.data_coverage imports this module, so importing its key here would cycle.
        # HW_INCIDENTS: a generic "Not responding" takes the class of the hardware incident linked to its
        # outage (models/reliability/node_availability.py, outage_causes).
        dg.AssetSpec(NODE_AVAILABILITY_DAILY, deps=[NODE_STATES, HW_INCIDENTS, CORE_JOBS,
                                                    DAY_COVERAGE],
                     group_name="marts", kinds={"duckdb"},
                     description="One row per node x UTC day: in-service and down hours, down hours by cause "
                     "(hardware, maintenance, health check, other). Overlapping states merged (attributed to the "
                     "earliest open event), over the observed span: from the accounting's first moment (not before the "
                     "first loaded dump's day, as its file name gives it, or else the first event's day) to the data's end (the accounting's last moment, or the last observation "
                     "when later; an ongoing event is down until then) — or to the last dump's cut when the dumps end "
                     "earlier (a missing dump: nothing after it is measured); without accounting, to the last "
                     "observation or the end of the last dump's named day when later (not past the newest "
                     "record's day), "
                     "a drain on a node the state shows still running jobs (MIXED+DRAIN, ALLOCATED+DRAIN, DRAINING) "
                     "is in service until the jobs running at its start end; "
                     "cluster.yaml maintenance windows count as maintenance; a state with a generic reason (Not "
                     "responding) takes the cause of its outage: the part its repair chain's drain names, else the "
                     "hardware incident linked to it (as marts.incident_repairs links them); a planned-looking reason "
                     "(a change ticket, Reboot ASAP) that continues a hardware outage of its chain, or a reboot request "
                     "on an outage linked to a hardware incident, is that fault's repair; partial = the data covers the day "
                     "only in part. Full rebuild (not partitioned)."),
        dg.AssetSpec(DRAIN_REASONS, deps=[NODE_STATES], group_name="marts", kinds={"duckdb"},
                     description="Drain/down reasons ranked by node-hours lost: reason class x Drain3 template, "
                     "events, nodes, node-hours (counted once where events overlap)."),
        dg.AssetSpec(AVAILABILITY_BY_COMPONENT, deps=[NODE_STATES, HW_INCIDENTS], group_name="marts", kinds={"duckdb"},
                     description="Availability per component class and period (all, month): 1 - unplanned down "
                     "node-hours of that class / scheduled node-hours; 'all' is the cluster."),
    ],
    pool=WAREHOUSE_POOL,
)
def node_state_marts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    maintenance = maintenance_spans(config)
    with warehouse.connect() as con:
        # The history ends at the data's one end (models/accounting_span.py, data_span: the accounting's
        # last moment, to midnight when it misses at most an hour of its day): no event after the last
        # one means in service (an open event: down) until then, not until that event nor a node-state
        # dump's cut at 00:05 the next day — unless the dumps say they were cut earlier (a missing
        # nightly dump): then nothing after the cut is measured (slurm_events.ingest.node_states_end).
        accounting_first, accounting_last = accounting_span(con)
        accounting_from, accounting_end = data_span_of(accounting_first, accounting_last)
        as_of, cut_early = node_states_end(con, accounting_last)
        if accounting_last is None and as_of is not None:
            # No accounting: the history runs to the end of the last name-dated dump's day (a full day's
            # dump with nothing open at its end), not to its last event (models/accounting_span.py).
            as_of = node_history_end(con, config.timezone) or as_of
        if as_of is not None and not cut_early:
            as_of = accounting_end if accounting_end is not None else counted_end(as_of)
        as_of = as_of.astimezone(timezone.utc) if as_of is not None else None
        states = con.sql("SELECT * FROM core.node_states").pl()
        if config.node_names:
            # sacctmgr lists every node Slurm runs (login, CPU, service nodes): the availability of the
            # fleet cluster.yaml lists — the one MTBF exposes and capacity counts — leaves them out.
            states = states.filter(pl.col("node").is_in(list(config.node_names)))
        # A drain on a node still running jobs is in service until they end (rule 0 of node_availability).
        states = with_down_from(states, _job_spans(con))
        if as_of is None:
            daily = pl.DataFrame(schema=DAILY_SCHEMA)
            reasons = pl.DataFrame(schema=DRAIN_REASONS_MART_SCHEMA)
            by_component = pl.DataFrame(schema=AVAILABILITY_BY_COMPONENT_SCHEMA)
        else:
            seen = con.sql(
                "SELECT DISTINCT node FROM core.node_states UNION "
                "SELECT DISTINCT unnest(nodes) FROM core.cluster_events WHERE nodes IS NOT NULL").pl()
            nodes = config.node_names or sorted(seen.get_column("node").to_list())
            first = states.get_column("start_ts").min() if states.height else None
            # The history starts where the dumps start observing: the first loaded dump's day (its file
            # name) or observation — a dump with no node line is a night without outages, not a missing
            # one —, else (undated dumps) the first event's day, as before dump dates were read.
            dumps_from = history_start(con, config.timezone)
            starts = [t for t in (_midnight(first) if first is not None else None, dumps_from) if t is not None]
            history_from = min(starts).astimezone(timezone.utc) if starts else as_of
            # Observed days only, the ones the node_availability SLI reads (models/reliability/slo.py):
            # with accounting, from its first day (a drain open since weeks before the first dump
            # says nothing about the other nodes then: no row claims them in service); without it,
            # from the first day any source speaks for (the first node-log line, event or dump). The
            # first day counts whole from its midnight (data_span's rule), the last up to as_of.
            if accounting_from is not None:
                observed_from = accounting_from.astimezone(timezone.utc)
            else:
                observed_from = _midnight(min(t for t in (first, dumps_from, _first_log_line(con), as_of)
                                              if t is not None))
            observed_from = max(observed_from, _midnight(history_from),
                                _midnight(as_of - timedelta(days=MAX_HISTORY_DAYS)))
            start_day = observed_from.date()
            # A generic reason ("Not responding") takes its outage's cause: the part its chain's drain
            # names, else the hardware incident linked to it — the linkage of marts.incident_repairs,
            # computed here from the same inputs (that mart is built by repair_time_marts).
            incidents, _ = _incidents_with_evidence(con)
            links = incident_outage_links(incidents, states) if incidents is not None else None
            caused = outage_causes(states, links)
            # as_of at a midnight ends the day before it: no row for a day the data does not reach
            last_day = (as_of - timedelta(microseconds=1)).date()
            daily = node_availability_daily(caused, nodes, start_day, last_day, as_of=as_of,
                                            maintenance=maintenance, observed_from=observed_from)
            # The same clipped, attributed down time as the daily mart, so node-hours add up.
            segments = down_segments(caused, as_of, maintenance, since=observed_from)
            reasons = top_drain_reasons(states, segments)  # by each reason's own class
            by_component = availability_by_component(daily, segments, caused)
        with transaction(con):
            _replace(con, "marts.node_availability_daily", daily)
            mark_partial_days(con, "marts.node_availability_daily")
            _replace(con, "marts.drain_reasons", reasons)
            _replace(con, "marts.availability_by_component", by_component)
    totals = daily.select(pl.col("observed_hours", "in_service_hours", "down_hours").sum()) if daily.height else None
    availability = (totals.item(0, "in_service_hours") / totals.item(0, "observed_hours")
                    if totals is not None and totals.item(0, "observed_hours") else None)
    yield dg.MaterializeResult(asset_key=NODE_AVAILABILITY_DAILY, metadata={
        "dagster/row_count": daily.height, "as_of": str(as_of),
        "availability": availability if availability is not None else dg.MetadataValue.null()})
    yield dg.MaterializeResult(asset_key=AVAILABILITY_BY_COMPONENT, metadata={"dagster/row_count": by_component.height})
    yield dg.MaterializeResult(asset_key=DRAIN_REASONS, metadata={
        "dagster/row_count": reasons.height,
        "top_reasons": markdown_preview(reasons.select("rank", "reason_class", "template", "events", "nodes",
                                                       "node_hours_lost"))})


def _incidents_with_evidence(con) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:  # noqa: ANN001
    """``marts.hw_incidents`` with each incident's ``first_evidence_ts`` and, for an operator-labelled one, the
    classes of its folded evidence and the end the operator wrote (``operator_label_evidence``; when the members
    are there), and the member events (:func:`_member_events`); ``(None, None)`` before the node-log marts ran."""
    if not table_exists(con, "marts.hw_incidents"):
        return None, None
    wanted = ("incident_id", "component", "component_class", "scope", "start_ts", "end_ts", "nodes",
              "n_health_check_episodes", "recovered_ts", "action", "label_source")
    incidents = con.sql(f"SELECT {select_columns(con, 'marts.hw_incidents', wanted)} FROM marts.hw_incidents").pl()
    members = _member_events(con)
    if members is not None:
        incidents = (incidents.join(first_evidence(members), on="incident_id", how="left", maintain_order="left")
                     .join(operator_label_evidence(incidents, members), on="incident_id", how="left",
                           maintain_order="left"))
    return incidents, members


def _recoveries(con, incidents: pl.DataFrame) -> pl.DataFrame | None:  # noqa: ANN001 - DuckDB connection
    """When every node of each incident logged its recovery — a class recovery, or a reboot clearing a lasting GPU
    fault (see ``recovery_ends``); None without the tables."""
    if not (table_exists(con, "marts.hw_incident_members") and table_exists(con, "core.node_events")):
        return None
    # Class recoveries (a port back ACTIVE), and the reboot lines that clear a lasting GPU fault (an Xid 79).
    kinds = sorted(set(load_recovery_kinds()["kind"].to_list()) | set(load_fault_clears()["kind"].to_list()))
    # Per node and part (the NIC's or GPU's address, the port): each part is back with its own recovery line.
    evidence = con.sql("""SELECT m.incident_id, e.node, e.device_pci, e.gpu_pci, e.port, max(e.ts) AS last_ts
                          FROM marts.hw_incident_members AS m JOIN core.node_events AS e USING (event_id)
                          GROUP BY ALL""").pl()
    action = pl.col("action") if "action" in incidents.columns else pl.lit(None, pl.String)
    # An operator label's folded evidence keeps its classes' recovery lines (operator_label_evidence).
    folded = (pl.col("evidence_classes") if "evidence_classes" in incidents.columns
              else pl.lit(None, pl.List(pl.String)))
    evidence = evidence.join(incidents.select("incident_id", pl.coalesce("component_class", class_of(pl.col("component")))
                                              .alias("component_class"), action.cast(pl.String).alias("action"),
                                              folded.alias("evidence_classes")),
                             on="incident_id")
    events = con.sql("SELECT node, ts, kind, device_pci, gpu_pci, port FROM core.node_events "
                     "WHERE list_contains(?, kind)", params=[kinds]).pl()
    return recovery_ends(evidence, events)


def _member_events(con) -> pl.DataFrame | None:  # noqa: ANN001 - DuckDB connection
    """``incident_id``, ``node``, ``ts``, ``kind``, ``component`` of every incident's events; None without the
    tables."""
    if not (table_exists(con, "marts.hw_incident_members") and table_exists(con, "core.node_events")):
        return None
    return con.sql("""SELECT m.incident_id, e.node, e.ts, e.kind, e.component
                      FROM marts.hw_incident_members AS m JOIN core.node_events AS e USING (event_id)""").pl()


def _health_lines(con, members: pl.DataFrame) -> pl.DataFrame:  # noqa: ANN001 - DuckDB connection
    """The passing-check and reboot lines (``catalog/recovery_events.csv``) of the incidents' nodes."""
    kinds = load_health_evidence_kinds()["kind"].to_list()
    nodes = members["node"].drop_nulls().unique().to_list()
    return con.sql("SELECT node, ts, kind FROM core.node_events WHERE list_contains(?, kind) "
                   "AND list_contains(?, node)", params=[kinds, nodes]).pl()


@dg.multi_asset(
    specs=[
        dg.AssetSpec(INCIDENT_REPAIRS, deps=[NODE_STATES, HW_INCIDENTS, CORE_JOBS], group_name="marts", kinds={"duckdb"},
                     description="One row per hardware incident with the node outage it caused (the first merged "
                     "drain/down period of its own nodes starting 30 min before to 24 h after it, and the outages chained to it, "
                     "<= 30 min in service between): hours to detect, "
                     "hours to repair (first evidence until the last node is back in service; without node states "
                     "a logged recovery (for a lasting GPU fault, an Xid 79, also a reboot), "
                     "also for an outage still open where a cut node-state history ends (a missing dump: the "
                     "evidence after the cut), "
                     "the first sign of health after its last failing health check (a passing "
                     "run, a reboot, else the check's next run) or the first completed job, as repair_source says)."),
        dg.AssetSpec(REPAIR_TIMES_MONTHLY, deps=[NODE_STATES, HW_INCIDENTS], group_name="marts", kinds={"duckdb"},
                     description="MTTR trend: the repair_times summary per month of the incidents' start."),
        dg.AssetSpec(REPAIR_TIMES, deps=[NODE_STATES, HW_INCIDENTS], group_name="marts", kinds={"duckdb"},
                     description="Time to detect and time to repair per component class (the classes MTBF uses; and all): p50/p90, mean, "
                     "95 % order-statistic interval of the median; ongoing repairs counted, not averaged."),
    ],
    pool=WAREHOUSE_POOL,
)
def repair_time_marts(warehouse: WarehouseResource, landing: LandingResource):
    # The fleet cluster.yaml lists: an incident only on hosts outside it keeps its repair row, but MTTR
    # counts the fleet's incidents, the population MTBF counts (models/reliability/mtbf.py in_fleet).
    node_names = landing.cluster_config().node_names
    with warehouse.connect() as con:
        states = con.sql("SELECT node, state, state_text, not_responding, start_ts, end_ts, reason, reason_class, "
                         "availability_class FROM core.node_states").pl()
        # The outages as the nodes were out of service: a drain waits for the jobs still running on it, and a
        # hardware drain replacing a maintenance one starts the fault's outage (node_availability.repair_states).
        states = repair_states(with_down_from(states, _job_spans(con)))
        incidents, members = _incidents_with_evidence(con)
        if incidents is not None:
            checks = health_check_ends(members, _health_lines(con, members)) if members is not None else None
            # A history cut before the accounting ends (a missing dump): an outage open at the cut is timed
            # by the log evidence after it, not left ongoing (models/reliability/repair_times.py).
            cut, cut_early = (node_states_end(con, accounting_span(con)[1]) if table_exists(con, "raw.slurm_events")
                              else (None, False))
            linked = link_incidents(incidents, states, recoveries=_recoveries(con, incidents), health_checks=checks,
                                    history_end=cut if cut_early else None, node_names=node_names)
        else:  # the node-log marts have not run yet
            linked = pl.DataFrame(schema=INCIDENT_REPAIR_SCHEMA)
        summary = repair_times(linked)
        # MTTR trend: the same summary per month of the incidents' start
        months = linked.with_columns(pl.col("incident_start_ts").dt.strftime("%Y-%m").alias("_m")).partition_by(
            "_m", as_dict=True, maintain_order=True)
        monthly_parts = [repair_times(part.drop("_m")).with_columns(pl.lit(key[0]).alias("period"))
                         for key, part in sorted(months.items(), key=lambda kv: str(kv[0][0]))]
        monthly = (pl.concat(monthly_parts, how="vertical").select("period", pl.exclude("period"))
                   if monthly_parts else repair_times(linked.clear()).with_columns(pl.lit(None, pl.String).alias("period")))
        with transaction(con):
            # Rebuilt in full, with the columns of this version (an older warehouse gets them too).
            replace_table(con, "marts.incident_repairs", linked)
            replace_table(con, "marts.repair_times", summary)
            replace_table(con, "marts.repair_times_monthly", monthly)
    yield dg.MaterializeResult(asset_key=INCIDENT_REPAIRS, metadata={
        "dagster/row_count": linked.height,
        "by_state": markdown_preview(linked.group_by("repair_state").len().sort("len", descending=True))})
    yield dg.MaterializeResult(asset_key=REPAIR_TIMES_MONTHLY, metadata={"dagster/row_count": monthly.height})
    yield dg.MaterializeResult(asset_key=REPAIR_TIMES, metadata={
        "dagster/row_count": summary.height,
        "preview": markdown_preview(summary.select("component_class", "incidents", "repaired", "mttd_hours_p50",
                                                   "mttr_hours_p50", "ci_low", "ci_high"))})
