"""cluster.yaml's reliability and SLO sections as the models' settings objects."""

from __future__ import annotations

from gpusre.models.ingest.hostlist import expand_hostlist
from gpusre.models.reliability.mtbf import MaintenanceSpan
from gpusre.models.reliability.marts import ReliabilitySettings
from gpusre.models.reliability.slo import SloTarget
from gpusre.models.reliability.training_runs import CheckpointAssumption, RunRules
from gpusre.pipelines.config import ClusterConfig

__all__ = ["maintenance_spans", "reliability_settings"]


def maintenance_spans(config: ClusterConfig) -> list[MaintenanceSpan]:
    """cluster.yaml's planned maintenance windows with their node sets expanded (None = whole cluster)."""
    return [MaintenanceSpan(w.start, w.end, frozenset(expand_hostlist(w.nodes)) if w.nodes else None, w.reason)
            for w in config.maintenance]


def reliability_settings(config: ClusterConfig) -> ReliabilitySettings:
    """The models' view of cluster.yaml's nodes, maintenance, run grouping, checkpoint policy and SLOs."""
    rel = config.reliability
    site = CheckpointAssumption(rel.checkpoint.interval_s, rel.checkpoint.restart_overhead_s, rel.checkpoint.write_s)
    overrides = {
        acct: CheckpointAssumption(
            o.interval_s if o.interval_s is not None else site.interval_s,
            o.restart_overhead_s if o.restart_overhead_s is not None else site.restart_overhead_s,
            o.write_s if o.write_s is not None else site.write_s)
        for acct, o in rel.checkpoint_overrides.items()
    }
    rules = RunRules(resubmit_gap_s=rel.runs.resubmit_gap_s, comment_run_key=rel.runs.comment_run_key,
                     name_run_key=rel.runs.name_run_key, min_gpus=rel.runs.min_gpus,
                     resubmit_after_states=tuple(rel.runs.resubmit_after_states), checkpoint=site, overrides=overrides)
    maintenance = maintenance_spans(config)
    return ReliabilitySettings(
        node_names=config.node_names, node_count=config.node_count, gpus_per_node=config.gpus_per_node,
        node_gpus=config.gpus_by_node,
        maintenance=maintenance, rules=rules, min_failures=rel.min_failures, rf_min_job_gpus=rel.rf_min_job_gpus,
        slo_targets=[SloTarget(o.sli, o.objective) for o in config.slo.objectives],
        slo_window_days=config.slo.window_days, ettr_min_run_gpus=config.slo.ettr_min_run_gpus,
        ettr_includes_queue_wait=config.slo.ettr_includes_queue_wait)
