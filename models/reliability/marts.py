"""Read the warehouse inputs of the reliability SLIs and compute every SLI mart (no Dagster).

One function reads (``read_reliability_inputs``: narrow SQL over core.* and the failure marts), one
computes (``compute_reliability_marts``: pure Polars over those frames), so tests and the benchmark
can time and check each half.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import duckdb
import polars as pl

from gpusre.models.accounting_span import accounting_span, counted_end, day_start, node_history_end
from gpusre.models.span_islands import span_islands
from gpusre.models.ordered_sums import ordered_sum
from gpusre.models.reliability.error_budget import exhausted_spans
from gpusre.models.reliability.goodput import goodput_daily, interruption_cause
from gpusre.models.reliability.job_reliability import (
    ettr_by_size,
    checkpoint_what_if_table,
    job_mttf_by_size,
    job_mttf_projection,
    job_survival,
    node_failure_rate,
)
from gpusre.models.reliability.mtbf import (
    MaintenanceSpan,
    exposure_from_availability,
    fleet_incidents,
    mtbf_around_maintenance,
    mtbf_table,
    maintenance_from_node_states,
    mtbf_trend,
    node_exposure,
    tbf_weibull,
    with_state_maintenance,
)
from gpusre.models.reliability.slo import SloTarget, slo_daily
from gpusre.models.reliability.training_runs import RunRules, assign_runs, charge_interruptions, ettr_runs, run_instances
from gpusre.models.reliability.ettr_model import ETTR_INCLUDES_QUEUE_WAIT
from gpusre.models.vocabulary import INFRASTRUCTURE, NODE_FAILURE_STATES, PLANNED, failure_incidents

#: No job instances (no accounting): :func:`node_failure_rate` gets its hw_incidents rows only.
_NO_INSTANCES = pl.DataFrame(schema={"n_gpus": pl.Int64, "infra_failure": pl.Boolean, "elapsed_eff_s": pl.Float64,
                                     "n_nodes": pl.Int64})

_OUTAGE_SCHEMA = {"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                  "reason": pl.String}

__all__ = ["RELIABILITY_MARTS", "ReliabilitySettings", "ReliabilityInputs", "read_reliability_inputs", "run_instances_sql",
           "run_jobs_sql",
           "compute_reliability_marts"]

#: Marts written by :func:`compute_reliability_marts`, in dependency order.
RELIABILITY_MARTS = ("mtbf", "mtbf_trend", "tbf_weibull", "node_failure_rate", "job_mttf_by_size",
                     "job_mttf_projection", "job_survival", "ettr_runs", "ettr_by_size", "checkpoint_what_if",
                     "goodput_daily", "slo_daily", "slo_exhausted_spans")


@dataclass(frozen=True)
class ReliabilitySettings:
    """What the SLIs assume about the cluster (from ``cluster.yaml``)."""

    node_names: Sequence[str] = ()
    node_count: int = 100
    gpus_per_node: int = 8
    #: node -> GPUs of every listed node (cluster.yaml ``node_gpus`` over ``gpus_per_node``:
    #: ClusterConfig.gpus_by_node); {} = every node has ``gpus_per_node``.
    node_gpus: Mapping[str, int] = field(default_factory=dict)
    maintenance: Sequence[MaintenanceSpan] = ()
    rules: RunRules = field(default_factory=RunRules)
    min_failures: int = 3
    rf_min_job_gpus: int = 128
    slo_targets: Sequence[SloTarget] = ()
    slo_window_days: int = 30
    ettr_min_run_gpus: int = 256
    ettr_includes_queue_wait: bool = ETTR_INCLUDES_QUEUE_WAIT


@dataclass
class ReliabilityInputs:
    """Frames read from the warehouse; ``t0``/``as_of`` bound the observed span (UTC): the first day's
    midnight and the accounting's last moment (jobs still running run until it; outages, exposure and
    the failure window run to :func:`~gpusre.models.accounting_span.counted_end` of it)."""

    jobs: pl.DataFrame
    instances: pl.DataFrame
    job_attribution: pl.DataFrame
    instance_attribution: pl.DataFrame
    incidents: pl.DataFrame
    utilization: pl.DataFrame
    observed_nodes: list[str]
    availability: pl.DataFrame
    t0: datetime | None
    as_of: datetime | None
    #: First and last node-log line (None without node logs): failures can only be seen inside it.
    log_span: tuple[datetime | None, datetime | None] = (None, None)
    #: First node-state event and the latest moment the node-state history speaks for (None without it).
    states_span: tuple[datetime | None, datetime | None] = (None, None)
    #: The operator's incident log (landing/incidents.csv) was ingested: failure evidence besides node logs.
    incident_log: bool = False
    #: Node states classed maintenance (``node``, ``start_ts``, ``end_ts``, ``reason``): maintenance windows
    #: that only Slurm recorded, for the before/after-maintenance MTBF comparison.
    maintenance_outages: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=_OUTAGE_SCHEMA))


def _table_exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    return bool(con.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                        params=[schema, table]).fetchall()[0][0])


def _read(con: duckdb.DuckDBPyConnection, schema: str, table: str, query: str,
          empty: dict[str, pl.DataType]) -> pl.DataFrame:
    return con.sql(query).pl() if _table_exists(con, schema, table) else pl.DataFrame(schema=empty)


def run_jobs_sql(only: str | None = None) -> str:
    """The jobs of the training-run model (:mod:`~gpusre.models.reliability.training_runs`): first submit
    and first eligible time of each job, its size only once it started. ``only``: a table or view of
    ``job_id`` to cut them to (the failure marts assemble only the runs of killed jobs)."""
    cut = f"\n          AND j.job_id IN (SELECT job_id FROM {only})" if only else ""
    return f"""
        SELECT j.job_id, j."user", j.account, j.name, j.comment, j.state,
               -- a job that never started has no allocation: its size is unknown, not 0; one pending again
               -- after a requeue (an instance ran) keeps the size its runs had (core.jobs.n_gpus)
               CASE WHEN j.start_ts IS NULL AND f.job_id IS NULL THEN NULL ELSE j.n_gpus END AS n_gpus,
               j.n_nodes, j.size_bucket,
               least(j.submit_ts, f.submit_ts) AS submit_ts,
               -- first eligible time (a requeue resets it): a run's available wall-clock starts there
               least(j.eligible_ts, f.eligible_ts) AS eligible_ts, j.start_ts, j.end_ts
        FROM core.jobs AS j
        LEFT JOIN (SELECT job_id, submit_ts, eligible_ts FROM core.job_instances WHERE instance_no = 1) AS f
            USING (job_id)
        -- pending jobs have no allocation yet (n_gpus NULL) but may continue a run
        WHERE (COALESCE(j.n_gpus, 0) > 0 OR (j.start_ts IS NULL AND j.end_ts IS NULL)){cut}
        ORDER BY j.job_id"""


def run_instances_sql(only: str | None = None) -> str:
    """The started instances of the training-run model's jobs (``only`` as :func:`run_jobs_sql`)."""
    cut = f"\n          AND i.job_id IN (SELECT job_id FROM {only})" if only else ""
    return f"""
        SELECT i.job_id, i.instance_no, i.is_latest, i.state, i.submit_ts, i.eligible_ts, i.start_ts, i.end_ts,
               i.elapsed_s, i.n_gpus, COALESCE(len(i.nodes), j.n_nodes) AS n_nodes
        FROM core.job_instances AS i JOIN core.jobs AS j USING (job_id)
        WHERE COALESCE(i.n_gpus, 0) > 0{cut}
        ORDER BY i.job_id, i.instance_no"""


def read_reliability_inputs(con: duckdb.DuckDBPyConnection, timezone_name: str = "UTC") -> ReliabilityInputs:
    """Narrow reads of core.jobs (first submit of each job), core.job_instances, attribution, incidents, utilization.
    ``timezone_name``: the cluster's, which dates the node-state dumps' file names."""
    jobs = con.sql(run_jobs_sql()).pl()
    instances = con.sql(run_instances_sql()).pl()
    attr_schema = {"job_id": pl.String, "attribution": pl.String, "state": pl.String}
    job_attr = _read(con, "marts", "job_failure_attribution",
                     "SELECT job_id, attribution, state FROM marts.job_failure_attribution ORDER BY job_id", attr_schema)
    inst_attr = _read(con, "marts", "instance_failure_attribution",
                      "SELECT job_id, instance_no, attribution FROM marts.instance_failure_attribution "
                      "ORDER BY job_id, instance_no",
                      {"job_id": pl.String, "instance_no": pl.Int32, "attribution": pl.String})
    # repaired_ts: when MTTR says the incident was repaired (node states, a logged recovery, the end
    # of its health checks, or the first completed job), so the availability estimate agrees with it.
    repaired = ("(SELECT repaired_ts FROM marts.incident_repairs AS r WHERE r.incident_id = i.incident_id)"
                if _table_exists(con, "marts", "incident_repairs") else "NULL::TIMESTAMPTZ")
    incidents = _read(con, "marts", "hw_incidents",
                      "SELECT incident_id, component, cause_class, severity, start_ts, end_ts, nodes, scope, recovered_ts, "
                      f"{repaired} AS repaired_ts FROM marts.hw_incidents AS i ORDER BY incident_id",
                      {"incident_id": pl.String, "component": pl.String, "cause_class": pl.String,
                       "severity": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                       "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String), "scope": pl.String,
                       "recovered_ts": pl.Datetime("us", "UTC"), "repaired_ts": pl.Datetime("us", "UTC")})
    utilization = _read(con, "marts", "utilization_daily",
                        "SELECT day, capacity_gpu_hours, allocated_gpu_hours FROM marts.utilization_daily ORDER BY day",
                        {"day": pl.Date, "capacity_gpu_hours": pl.Float64, "allocated_gpu_hours": pl.Float64})
    availability = _read(con, "marts", "node_availability_daily",
                         "SELECT day, node, observed_hours, in_service_hours, down_maintenance_hours, source "
                         "FROM marts.node_availability_daily ORDER BY day, node",
                         {"day": pl.Date, "node": pl.String, "observed_hours": pl.Float64,
                          "in_service_hours": pl.Float64, "down_maintenance_hours": pl.Float64, "source": pl.String})
    observed = [r[0] for r in con.sql(
        "SELECT DISTINCT unnest(nodes) AS n FROM core.job_instances ORDER BY n").fetchall() if r[0] is not None]
    # "Now" is the latest time the dumps show (a running job's start + elapsed), as for utilization;
    # the start is the first day's midnight: the first day counts whole, as its capacity does
    # (models/accounting_span.py, data_span), so MTBF exposure and the in-service hours agree.
    first, as_of = accounting_span(con)
    t0 = day_start(first) if first is not None else None
    log_span: tuple[datetime | None, datetime | None] = (None, None)
    if _table_exists(con, "raw", "record_days"):  # refreshed by marts.day_coverage, which these marts follow
        lo, hi = con.sql("SELECT min(first_ts), max(last_ts) FROM raw.record_days "
                         "WHERE source_kind = 'syslog'").fetchall()[0]
        log_span = (lo.astimezone(timezone.utc) if lo else None, hi.astimezone(timezone.utc) if hi else None)
    states_span: tuple[datetime | None, datetime | None] = (None, None)
    if _table_exists(con, "core", "node_states") and _table_exists(con, "raw", "slurm_events"):
        lo = con.sql("SELECT min(start_ts) FROM core.node_states").fetchall()[0][0]
        # the node-state history's end without accounting (with it, the accounting's span decides)
        hi = node_history_end(con, timezone_name) if lo is not None else None
        states_span = (lo.astimezone(timezone.utc) if lo else None, hi.astimezone(timezone.utc) if hi else None)
    incident_log = bool(_table_exists(con, "raw", "ingested_files") and con.sql(
        "SELECT count(*) FROM raw.ingested_files WHERE source_kind = 'incidents'").fetchall()[0][0])
    outages = pl.DataFrame(schema=_OUTAGE_SCHEMA)
    if _table_exists(con, "core", "node_states"):
        outages = con.sql("SELECT node, start_ts, end_ts, reason FROM core.node_states "
                          "WHERE availability_class = 'maintenance' ORDER BY start_ts, node").pl()
    return ReliabilityInputs(jobs, instances, job_attr, inst_attr, incidents, utilization, observed, availability,
                             t0, as_of, log_span, states_span, incident_log, outages)


def observation_span(inputs: ReliabilityInputs) -> tuple[datetime, datetime] | None:
    """The span the reliability marts speak for: the accounting's (first day's midnight .. latest moment
    the dumps show) when there is accounting, else the node logs' and node states' together (first line's
    or event's midnight .. last); None without any of them."""
    if inputs.t0 is not None and inputs.as_of is not None:
        return inputs.t0, inputs.as_of
    spans = [s for s in (inputs.log_span, inputs.states_span) if s[0] is not None and s[1] is not None]
    if not spans:
        return None
    lo, hi = day_start(min(s[0] for s in spans)), max(s[1] for s in spans)  # type: ignore[type-var]
    return (lo, hi) if lo < hi else None


def failure_window(t0: datetime, t1: datetime, log_span: tuple[datetime | None, datetime | None]) -> tuple[datetime, datetime]:
    """The span in which hardware failures could be observed: the data's span cut to the node logs'
    (incidents come from the logs; exposure outside them would count node-hours nobody watched), both
    by the one day rule (models/accounting_span.py): from their first day's midnight to
    :func:`~gpusre.models.accounting_span.counted_end` of their last moment — a log whose last line is at
    23:17 watched that day whole, as the capacity and the in-service hours count it.

    >>> from datetime import datetime, timezone
    >>> d = lambda h, m=0: datetime(2026, 8, 1, h, m, tzinfo=timezone.utc)
    >>> [t.strftime("%d %H:%M") for t in failure_window(d(0), d(23, 30), (d(5), d(23, 17)))]
    ['01 00:00', '02 00:00']
    >>> [t.strftime("%d %H:%M") for t in failure_window(d(0), d(23, 30), (d(5), d(15)))]
    ['01 00:00', '01 15:00']
    """
    t0, t1 = day_start(t0), counted_end(t1)
    lo, hi = log_span
    f0 = max(t0, day_start(lo)) if lo is not None else t0
    f1 = min(t1, counted_end(hi)) if hi is not None else t1
    return (f0, f1) if f0 < f1 else (t0, t1)


def _instance_attribution(inputs: ReliabilityInputs) -> pl.DataFrame:
    """Attribution per (job_id, instance_no): an instance's own (earlier instances, and the last
    started one of a job pending again), else — for the latest instance — its job's."""
    latest = (inputs.instances.filter("is_latest").select("job_id", "instance_no")
              .join(inputs.job_attribution.select("job_id", "attribution"), on="job_id"))
    own = inputs.instance_attribution.select("job_id", pl.col("instance_no").cast(pl.Int32), "attribution")
    return (pl.concat([own, latest.with_columns(pl.col("instance_no").cast(pl.Int32))], how="vertical")
            .unique(["job_id", "instance_no"], keep="first", maintain_order=True))


def compute_reliability_marts(inputs: ReliabilityInputs, settings: ReliabilitySettings) -> dict[str, pl.DataFrame]:
    """Every mart of :data:`RELIABILITY_MARTS` from the inputs (empty frames when there is no data)."""
    span = observation_span(inputs)
    if span is None:
        return {name: pl.DataFrame() for name in RELIABILITY_MARTS}
    t0, t1 = span
    # Outages open at the end, planned windows and the SLIs' days run to the data's one end (the next
    # midnight when t1 misses at most an hour of its day); running jobs stop at t1, the last moment seen.
    end = counted_end(t1)
    # Which sources speak: jobs (accounting) for goodput, ETTR, job MTTF and the job SLIs; failure
    # evidence (node logs, or the operator's incident log) for MTBF and r_f — without it zero
    # failures would read as a lower bound on MTBF, when nothing could have been seen.
    has_jobs = inputs.t0 is not None and inputs.as_of is not None
    has_logs = inputs.log_span[0] is not None
    has_evidence = has_logs or inputs.incident_log
    rules = settings.rules
    # Without a node list in cluster.yaml, the fleet is the nodes seen in accounting (at least the
    # configured count: idle nodes never appear in sacct but are exposed all the same).
    nodes = list(settings.node_names) or list(inputs.observed_nodes)
    nodes += [f"(unseen-{i})" for i in range(max(0, settings.node_count - len(nodes)) if not settings.node_names else 0)]
    has_states = bool(inputs.availability.height) and (inputs.availability.get_column("source") == "node_states").any()
    f0, f1 = failure_window(t0, t1, inputs.log_span)
    if has_states:
        exposure = exposure_from_availability(inputs.availability, nodes, f0, f1, settings.maintenance)
        source = "node states (sacctmgr events): in-service hours (planned maintenance out where a node was down in it)"
    else:
        exposure = node_exposure(nodes, f0, f1, settings.maintenance)
        source = "cluster.yaml nodes minus planned maintenance (no node-state history)"
    # An incident the operator marked not a failure (a cable test's link flap) is no failure and no
    # unplanned outage: MTBF, r_f, the TBF fit and the estimated down hours all leave it out.
    incidents = failure_incidents(inputs.incidents).filter((pl.col("start_ts") >= f0) & (pl.col("start_ts") < f1))
    # Exposure is the listed fleet's: an incident only on hosts outside it is no failure of the fleet
    # (fleet_incidents: the one definition, which time to repair counts too).
    incidents = fleet_incidents(incidents, settings.node_names)
    mtbf = mtbf_table(incidents, exposure, settings.gpus_per_node, f0, f1, settings.min_failures, source,
                      node_gpus=settings.node_gpus)
    if not has_evidence:
        mtbf = mtbf.clear()
    # Before/after maintenance: cluster.yaml's windows and those only Slurm recorded (a fleet drained for
    # planned maintenance), the same one once. Only the comparison: exposure and the SLIs already take
    # node-state maintenance out through the node states themselves.
    windows = with_state_maintenance(settings.maintenance, maintenance_from_node_states(
        inputs.maintenance_outages.filter(pl.col("node").is_in(nodes)), len(nodes)))
    down_spans = _down_spans(incidents, end)
    if settings.node_names:  # a host outside the fleet (a rack's switch tray) has no node-hours to lose
        down_spans = down_spans.filter(pl.col("node").is_in(list(settings.node_names)))
    down = _down_node_hours_daily(incidents, end, down_spans)
    slo_args = dict(
        targets=[t for t in settings.slo_targets if has_jobs or t.sli == "node_availability"],
        window_days=settings.slo_window_days,
        maintenance_node_hours=_maintenance_daily(nodes, settings.maintenance, t0, end), down=down,
        node_count=len(nodes), ettr_min_run_gpus=settings.ettr_min_run_gpus, t0=t0, t1=end,
        ettr_includes_queue_wait=settings.ettr_includes_queue_wait,
        availability=inputs.availability if has_states else None, estimate_availability=has_logs,
        down_spans=down_spans)
    if not has_jobs:  # node logs / node states only: the failure and availability marts, no job SLIs
        empty_jobs = {name: pl.DataFrame() for name in RELIABILITY_MARTS}
        slo = slo_daily(jobs=pl.DataFrame(), job_attribution=pl.DataFrame(), runs=pl.DataFrame(),
                        goodput=pl.DataFrame(), job_slis=False, **slo_args)
        rf = node_failure_rate(mtbf, _NO_INSTANCES, settings.rf_min_job_gpus, settings.min_failures).filter(
            pl.col("variant") == "hw_incidents")
        return {**empty_jobs, **({
            "mtbf": mtbf,
            "mtbf_trend": pl.concat([mtbf_trend(mtbf), mtbf_around_maintenance(
                incidents, nodes, f0, f1, windows, settings.min_failures,
                availability=inputs.availability if has_states else None)], how="vertical"),
            "tbf_weibull": tbf_weibull(incidents, nodes, f0, f1),
            "node_failure_rate": rf} if has_evidence else {}),
            "slo_daily": slo, "slo_exhausted_spans": exhausted_spans(slo)}

    runs = assign_runs(inputs.jobs, rules)
    inst = run_instances(inputs.instances, inputs.jobs, runs, rules, t1)
    attr = _instance_attribution(inputs)
    inst = inst.with_columns(pl.col("instance_no").cast(pl.Int32))
    inst = charge_interruptions(inst.with_columns(interruption_cause(inst, attr)))
    # A NODE_FAIL is the infrastructure's unless planned maintenance of its node ended it.
    infra_fail = (inst.join(attr.select("job_id", "instance_no", pl.col("attribution").alias("_attribution")),
                            on=["job_id", "instance_no"], how="left")
        .select(((pl.col("state").is_in(NODE_FAILURE_STATES) & pl.col("_attribution").ne_missing(PLANNED))
                 | (pl.col("_attribution") == INFRASTRUCTURE).fill_null(False))
                .alias("infra_failure")).to_series())
    inst = inst.with_columns(infra_fail)

    runs_mart = ettr_runs(inst, inputs.jobs, runs, t1, rules.min_gpus)
    rf = node_failure_rate(mtbf, inst, settings.rf_min_job_gpus, settings.min_failures)
    gpus_frame = _node_gpus_frame(settings)
    goodput = goodput_daily(inst, inputs.utilization, t1, inputs.availability if has_states else None,
                            settings.gpus_per_node, since=t0,
                            maintenance=_maintenance_daily(nodes, settings.maintenance, t0, end,
                                                           settings.node_gpus if gpus_frame is not None else None,
                                                           settings.gpus_per_node),
                            node_gpus=gpus_frame)
    r_f = _cluster_rf(rf)
    by_size = ettr_by_size(runs_mart, r_f)
    largest_nodes = int(runs_mart.get_column("n_nodes").max() or 0) if runs_mart.height else 0
    # The what-if answers for the runs the ETTR SLO counts, with the SLO's definition (queue wait in or out).
    # With none, its measured ETTR stays empty: a ratio over every small run read as the SLO's "same runs".
    slo_runs = runs_mart.filter(~pl.col("ongoing") & (pl.col("n_gpus") >= settings.ettr_min_run_gpus))
    what_if = checkpoint_what_if_table(largest_nodes, r_f, rules.checkpoint, target=_ettr_target(settings),
                                       includes_queue_wait=settings.ettr_includes_queue_wait, measured=slo_runs)
    # Every run counts in job_infra_success: the earlier runs Slurm requeued with their own attribution.
    earlier = inputs.instances.filter(~pl.col("is_latest")).select("job_id", "instance_no", "start_ts", "end_ts")
    slo = slo_daily(jobs=inputs.jobs, job_attribution=inputs.job_attribution, runs=runs_mart, goodput=goodput,
                    earlier_runs=earlier, earlier_attribution=inputs.instance_attribution, **slo_args)
    return {
        "mtbf": mtbf,
        "mtbf_trend": pl.concat([mtbf_trend(mtbf), mtbf_around_maintenance(
            incidents, nodes, f0, f1, windows, settings.min_failures,
            availability=inputs.availability if has_states else None)], how="vertical")
        if has_evidence else pl.DataFrame(),
        "tbf_weibull": tbf_weibull(incidents, nodes, f0, f1) if has_evidence else pl.DataFrame(),
        "node_failure_rate": rf,
        "job_mttf_by_size": job_mttf_by_size(inst, settings.min_failures),
        "job_mttf_projection": _with_fit_failures(job_mttf_projection(inst), inst, settings.min_failures),
        "job_survival": job_survival(inst),
        "ettr_runs": runs_mart,
        "ettr_by_size": by_size,
        "checkpoint_what_if": what_if,
        "goodput_daily": goodput,
        "slo_daily": slo,
        "slo_exhausted_spans": exhausted_spans(slo),
    }


def _with_fit_failures(projection: pl.DataFrame, inst: pl.DataFrame, min_failures: int) -> pl.DataFrame:
    """The projection mart with the infrastructure failures its 1/N fit rests on (``failures``: those of the
    instances it fits, with runtime) and whether they reach ``min_failures`` (``sufficient``, the threshold
    the MTBF and job-MTTF marts use): a fit through one failure projects noise (an exponent CI of ±50,000)."""
    n = int(inst.filter(pl.col("elapsed_eff_s") > 0).get_column("infra_failure").sum() or 0) if inst.height else 0
    return projection.with_columns(pl.lit(n, pl.Int64).alias("failures"),
                                   pl.lit(n >= min_failures).alias("sufficient"))


def _ettr_target(settings: ReliabilitySettings) -> float:
    for t in settings.slo_targets:
        if t.sli == "ettr_large_runs":
            return t.objective
    return 0.9


def _cluster_rf(rf: pl.DataFrame) -> float | None:
    """Measured failures per node-day (not per 1,000) for the expected-ETTR formula: all incidents, all time."""
    row = rf.filter((pl.col("period") == "all") & (pl.col("variant") == "hw_incidents"))
    if not row.height or row.item(0, "rate_per_1000_node_days") is None:
        return None
    return float(row.item(0, "rate_per_1000_node_days")) / 1000.0


def _node_gpus_frame(settings: ReliabilitySettings) -> pl.DataFrame | None:
    """``node``, ``gpus`` of a mixed fleet; None when every node has ``gpus_per_node`` (then the models keep
    their single-value arithmetic, so such configs give bit-identical marts)."""
    if not any(g != settings.gpus_per_node for g in settings.node_gpus.values()):
        return None
    return pl.DataFrame({"node": list(settings.node_gpus), "gpus": list(settings.node_gpus.values())},
                        schema={"node": pl.String, "gpus": pl.Int64})


def _maintenance_daily(nodes: Sequence[str], maintenance: Sequence[MaintenanceSpan], t0: datetime,
                       t1: datetime, node_gpus: Mapping[str, int] | None = None,
                       gpus_per_node: int = 8) -> pl.DataFrame:
    """Planned-maintenance node-hours per UTC day; with ``node_gpus`` (a mixed fleet) also
    ``maintenance_gpu_hours``: the same hours × each node's GPUs (``gpus_per_node`` for a node it does
    not name)."""
    rows: dict[object, float] = {}
    gpu_rows: dict[object, float] = {}
    for w in maintenance:
        inside = list(nodes) if w.nodes is None else [x for x in nodes if x in w.nodes]
        n = len(inside)
        g = sum(node_gpus.get(x, gpus_per_node) for x in inside) if node_gpus is not None else 0
        lo, hi = max(w.start, t0), min(w.end, t1)
        day = lo.replace(hour=0, minute=0, second=0, microsecond=0)
        while day < hi:
            nxt = day + timedelta(days=1)
            h = max(0.0, (min(hi, nxt) - max(lo, day)).total_seconds() / 3600)
            rows[day.date()] = rows.get(day.date(), 0.0) + h * n
            gpu_rows[day.date()] = gpu_rows.get(day.date(), 0.0) + h * g
            day = nxt
    frame = pl.DataFrame({"day": list(rows), "maintenance_node_hours": list(rows.values())},
                         schema={"day": pl.Date, "maintenance_node_hours": pl.Float64})
    if node_gpus is not None:
        frame = frame.with_columns(pl.Series("maintenance_gpu_hours", [gpu_rows[d] for d in rows], pl.Float64))
    return frame


def _down_spans(incidents: pl.DataFrame, t1: datetime) -> pl.DataFrame:
    """Unplanned down spans per node (``node``, ``start_ts``, ``end_ts``), estimated from node and rack incidents:
    each node of an incident is down from its start until it was repaired as MTTR sees it (``repaired_ts``
    of marts.incident_repairs: a link back up two minutes later is two minutes down), else until it ran a
    job that completed again (``recovered_ts``), or ``t1`` while neither. A node's overlapping incidents
    count once (their union)."""
    utc = pl.Datetime("us", "UTC")
    repaired = pl.col("repaired_ts") if "repaired_ts" in incidents.columns else pl.lit(None, utc)
    # A rack's power or cooling loss takes its nodes down like their own faults; a switch's outage
    # (leaf_switch, fabric) leaves them up but unreachable, and storage's leaves them running.
    node_inc = (incidents.filter(pl.col("scope").is_in(["node", "rack"]))
                .select(pl.col("nodes").alias("node"), "start_ts",
                        pl.min_horizontal(pl.coalesce(repaired, "recovered_ts", pl.lit(t1).cast(utc)),
                                          pl.lit(t1).cast(utc)).alias("up_ts"))
                .explode("node").drop_nulls("node").filter(pl.col("up_ts") > pl.col("start_ts")))
    # union per node: a new down span begins where a start lies after every earlier end
    return (node_inc.sort("node", "start_ts", "up_ts")
            .with_columns(span_islands(["node"], timedelta(0), end="up_ts", start="start_ts").alias("_span"))
            .group_by("node", "_span").agg(pl.col("start_ts").min(), pl.col("up_ts").max().alias("end_ts"))
            .sort("node", "start_ts").select("node", "start_ts", "end_ts"))


def _down_node_hours_daily(incidents: pl.DataFrame, t1: datetime, spans: pl.DataFrame | None = None) -> pl.DataFrame:
    """Unplanned down node-hours per UTC day of the incidents' :func:`_down_spans` (``spans`` when given)."""
    spans = _down_spans(incidents, t1) if spans is None else spans
    if not spans.height:
        return pl.DataFrame(schema={"day": pl.Date, "down_node_hours": pl.Float64})
    merged = spans.rename({"end_ts": "up_ts"}).with_row_index("_span")
    # an end at midnight closes the day before it (no empty row for a day the data does not reach)
    last = (pl.col("up_ts") - pl.duration(microseconds=1)).dt.date()
    spans = (merged.with_columns(pl.date_ranges(pl.col("start_ts").dt.date(), last).alias("day"))
             .explode("day")
             .with_columns(pl.col("day").cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias("_d0"))
             .with_columns((pl.col("_d0") + pl.duration(days=1)).alias("_d1"))
             .with_columns(((pl.min_horizontal("up_ts", "_d1") - pl.max_horizontal("start_ts", "_d0"))
                            .dt.total_seconds().clip(lower_bound=0) / 3600).alias("h")))
    return spans.group_by("day").agg(ordered_sum("h").alias("down_node_hours")).sort("day")
