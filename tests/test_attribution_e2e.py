"""Job failure attribution end to end against the simulator's ground truth: simulated faults
write node logs and kill jobs; the pipeline must find them from sacct + logs alone."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.models.warehouse import connect
from gpusre.pipelines.runner import run_pipeline

# Fault rates raised far above the real 2-7 per 1,000 node-days so a small, fast cluster still has
# dozens of infrastructure-killed jobs to score; fabric/storage faults kill jobs as they would.
CONFIG = SimulationConfig(nodes=32, days=30, seed=21, node_failures_per_1000_node_days=500,
                          fabric_faults_kill_jobs=True, syslog_layout="central")


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    root = tmp_path_factory.mktemp("attr")
    simulate_cluster(root / "landing", CONFIG)
    run_pipeline(root / "landing", root / "w.duckdb", root / "reports")
    truth = pl.read_csv(root / "landing" / "truth" / "job_attribution.csv", infer_schema=False)
    con = connect(root / "w.duckdb", read_only=True)
    predicted = con.sql("SELECT job_id, attribution AS predicted FROM marts.job_failure_attribution").pl()
    con.close()
    return (truth.join(predicted, on="job_id", how="left")
            .with_columns(pl.col("predicted").fill_null("none")))


def _precision_recall(scored: pl.DataFrame, label: str) -> tuple[float, float, int]:
    tp = scored.filter((pl.col("attribution") == label) & (pl.col("predicted") == label)).height
    fp = scored.filter((pl.col("attribution") != label) & (pl.col("predicted") == label)).height
    fn = scored.filter((pl.col("attribution") == label) & (pl.col("predicted") != label)).height
    return tp / max(tp + fp, 1), tp / max(tp + fn, 1), tp + fn


def test_infrastructure_attribution_precision_and_recall(scored: pl.DataFrame) -> None:
    precision, recall, support = _precision_recall(scored, "infrastructure")
    print(f"infrastructure: precision {precision:.3f}, recall {recall:.3f}, support {support}")
    assert support >= 20, "the simulated cluster must kill enough jobs to score"
    assert recall >= 0.95, f"recall {recall:.3f}"
    assert precision >= 0.95, f"precision {precision:.3f}"


def test_user_attribution_precision_and_recall(scored: pl.DataFrame) -> None:
    precision, recall, support = _precision_recall(scored, "user")
    print(f"user: precision {precision:.3f}, recall {recall:.3f}, support {support}")
    assert support >= 100
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
