"""A small simulated warehouse built by the whole pipeline, for tests that need every mart to have rows."""

from __future__ import annotations

from pathlib import Path

from gpusre.pipelines.runner import RunSummary, run_pipeline
from gpusre.simulate import SimulationConfig, simulate_cluster

#: Small (~1 min on 2 cores) with fault rates raised (as in test_report_slo) so that every mart has rows:
#: hardware incidents that kill jobs, alert incidents linked to them, repairs, suspect nodes, large runs.
RICH_CONFIG = SimulationConfig(nodes=40, days=45, seed=11, node_failures_per_1000_node_days=40,
                               fabric_faults_kill_jobs=True, syslog_layout="central", log_lines_per_node_day=20)


def build_warehouse(root: Path, config: SimulationConfig = RICH_CONFIG) -> tuple[Path, RunSummary]:
    """Simulate ``config`` into ``root/landing`` and run the pipeline into ``root/w.duckdb`` (reports in
    ``root/reports``); returns the warehouse path and the run's summary."""
    simulate_cluster(root / "landing", config)
    summary = run_pipeline(root / "landing", root / "w.duckdb", root / "reports")
    return root / "w.duckdb", summary
