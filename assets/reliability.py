"""Marts: reliability SLIs — MTBF, failure rates, job MTTF by size, ETTR per run, goodput, SLOs.

Thin: read core.jobs, core.job_instances, the failure marts and the utilization mart, call the pure
models (``gpusre.models.reliability.mtbf``, ``job_reliability``, ``training_runs``, ``goodput``, ``slo``), write
every mart in one transaction. Recomputed in full each run: run grouping crosses days, and a year of
a 2,000-node cluster rebuilds in well under a minute (``benchmarks/bench_slis.py``).
"""



import dagster as dg
import polars as pl

from gpusre.assets.core_jobs import CORE_JOBS
from gpusre.assets.failures import ATTRIBUTION, HW_INCIDENTS
from gpusre.assets.job_trends import UTILIZATION_DAILY
from gpusre.assets.metadata import markdown_preview
from gpusre.assets.node_states import INCIDENT_REPAIRS, NODE_AVAILABILITY_DAILY
from gpusre.assets.data_coverage import DAY_COVERAGE
from gpusre.models.accounting_span import counted_end
from gpusre.models.day_coverage import mark_partial_days
from gpusre.models.failures.node_loss import write_node_hardware_loss
from gpusre.models.reliability.marts import RELIABILITY_MARTS, compute_reliability_marts, read_reliability_inputs
from gpusre.models.warehouse import replace_table, table_exists, transaction
from gpusre.pipelines.partitions import WAREHOUSE_POOL
from gpusre.pipelines.reliability_settings import reliability_settings
from gpusre.pipelines.resources import LandingResource, WarehouseResource

_DESCRIPTIONS: dict[str, str] = {
    "mtbf": "Per period (all / month) and scope (cluster, component class, component, node): hardware incidents, "
            "node-hours in service (planned maintenance subtracted), MTBF with exact Poisson (Garwood) 95 % limits; "
            "'insufficient data' instead of a point estimate below the configured failure count.",
    "mtbf_trend": "Last month vs the month before per cluster and component class: rate ratio and exact "
                  "conditional test.",
    "tbf_weibull": "Per component class: Weibull fit of time between node failures (censored), shape with CI.",
    "node_failure_rate": "Failures per 1,000 node-days (Meta's r_f): all hardware incidents over in-service "
                         "node-days, and Meta's variant over jobs with more than N GPUs.",
    "job_mttf_by_size": "Per job size bucket: infrastructure failures over job runtime, MTTF with Garwood limits.",
    "job_mttf_projection": "MTTF by job size from the 1/N fit, projected to 1,024 ... 131,072 GPUs.",
    "job_survival": "Kaplan-Meier survival of job instances' time to infrastructure failure, per size bucket.",
    "ettr_runs": "One row per training run: jobs, interruptions (by the infrastructure, preemption or planned "
                 "maintenance), wall-clock, queue, productive time and ETTR "
                 "(checkpoint interval and restart overhead from cluster.yaml).",
    "ettr_by_size": "Per run size bucket: measured ETTR (mean, quantiles) next to Meta's expected ETTR.",
    "checkpoint_what_if": "Expected ETTR vs checkpoint interval for the largest run size.",
    "goodput_daily": "Per UTC day: capacity, allocated, productive GPU-hours, losses to the infrastructure's "
                     "failures and restarts, to preemption and to planned maintenance (each the work since the last "
                     "checkpoint + the restart), idle (planned maintenance's part named), goodput, the largest loss; "
                     "partial = the data covers the day only in part (marts.day_coverage).",
    "slo_daily": "Per UTC day and SLI: value, objective, error budget left over the rolling window, burn rates, status; "
                 "partial = the data covers the day only in part (quote the status of the last complete day).",
    "slo_exhausted_spans": "Per SLI: each run of consecutive days on which marts.slo_daily's rolling error budget "
                           "(window_days) was exhausted, with its lowest budget — so a review of a longer window "
                           "(a quarter) shows the breaches that pooling its days hides.",
}


KEYS = {name: dg.AssetKey(["marts", name]) for name in RELIABILITY_MARTS}
NODE_HARDWARE_LOSS = dg.AssetKey(["marts", "node_hardware_loss"])
_DEPS = [CORE_JOBS, HW_INCIDENTS, ATTRIBUTION, UTILIZATION_DAILY, NODE_AVAILABILITY_DAILY, INCIDENT_REPAIRS,
         DAY_COVERAGE]


@dg.multi_asset(
    specs=[*(dg.AssetSpec(KEYS[name], deps=_DEPS, group_name="marts", kinds={"duckdb"},
                          description=_DESCRIPTIONS[name]) for name in RELIABILITY_MARTS),
           dg.AssetSpec(NODE_HARDWARE_LOSS, deps=_DEPS, group_name="marts", kinds={"duckdb"},
                        description="Per node and calendar month: GPU-hours lost to hardware by both definitions side "
                        "by side — node down time with a hardware reason x GPUs, and job work lost to hardware "
                        "incidents on the node — with incidents, jobs killed and whether the month is complete.")],
    pool=WAREHOUSE_POOL,
)
def reliability_marts(warehouse: WarehouseResource, landing: LandingResource):
    config = landing.cluster_config()
    with warehouse.connect() as con:
        inputs = read_reliability_inputs(con, config.timezone)
        marts = compute_reliability_marts(inputs, reliability_settings(config))
        with transaction(con):
            for name, frame in marts.items():
                if frame.width:
                    replace_table(con, f"marts.{name}", frame)
                elif table_exists(con, f"marts.{name}"):  # no accounting data (yet): empty, same columns
                    con.execute(f"DELETE FROM marts.{name}")
            for name in ("goodput_daily", "slo_daily"):
                if table_exists(con, f"marts.{name}"):
                    mark_partial_days(con, f"marts.{name}")
            # An incident still open is down until the data's one end (models/accounting_span.py), as in
            # marts.node_availability_daily, not the accounting's last record.
            loss_end = counted_end(inputs.as_of) if inputs.as_of is not None else None
            n_loss_rows = write_node_hardware_loss(con, config.gpus_per_node, loss_end, config.gpus_by_node)
        top_loss = (con.sql("SELECT period, node, down_gpu_hours, job_lost_gpu_hours FROM marts.node_hardware_loss "
                            "ORDER BY month DESC, down_gpu_hours + job_lost_gpu_hours DESC LIMIT 10").pl()
                    if table_exists(con, "marts.node_hardware_loss") else pl.DataFrame())
    for name in RELIABILITY_MARTS:
        frame = marts[name]
        metadata: dict[str, object] = {"dagster/row_count": frame.height}
        if name in ("job_mttf_by_size", "ettr_by_size", "mtbf_trend") and frame.height:
            metadata["preview"] = markdown_preview(frame.head(12))
        if name == "goodput_daily" and frame.height:
            total = frame.select(pl.col("productive_gpu_hours").sum() / pl.col("capacity_gpu_hours").sum()).item()
            metadata["goodput_overall"] = float(total) if total is not None else None
        yield dg.MaterializeResult(asset_key=KEYS[name], metadata=metadata)
    yield dg.MaterializeResult(asset_key=NODE_HARDWARE_LOSS, metadata={
        "dagster/row_count": n_loss_rows, "latest_month_top_nodes": markdown_preview(top_loss)})


