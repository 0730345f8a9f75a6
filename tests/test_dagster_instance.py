"""`gpusre run` records its runs in a persistent Dagster instance next to the warehouse, so the UI
(`make dev` after `make demo`) shows the runs, materializations and asset-check results."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from gpusre.pipelines.cli import main
from gpusre.pipelines.run_lock import lock_path
from gpusre.simulate import SimulationConfig, simulate_cluster

CONFIG = SimulationConfig(nodes=8, days=4, seed=5, syslog_layout="central", log_lines_per_node_day=10)
JOBS = ("ingest_job", "daily_marts_job", "rollup_job")


@pytest.fixture(scope="module")
def run_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Two `gpusre run`s over the same landing (the second has nothing new), DAGSTER_HOME unset."""
    root = tmp_path_factory.mktemp("instance")
    simulate_cluster(root / "landing", CONFIG)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("DAGSTER_HOME", raising=False)
        codes = [main(["run", "--landing", str(root / "landing"), "--warehouse", str(root / "wh" / "w.duckdb")])
                 for _ in range(2)]
    assert codes == [0, 0]
    return root / "wh", JOBS


def _open(home: Path) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(home))


def test_runs_recorded_next_to_the_warehouse(run_twice: tuple[Path, list[str]]) -> None:
    folder, jobs = run_twice
    home = folder / "dagster_home"
    assert (home / "dagster.yaml").is_file()
    with _open(home) as instance:
        runs = instance.get_runs()
        by_job = {name: [r for r in runs if r.job_name == name] for name in jobs}
        # The first run changed days (daily marts ran); the second had no changed day: 3 + 2 runs.
        assert [len(by_job[name]) for name in jobs] == [2, 1, 2], {k: len(v) for k, v in by_job.items()}
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
        daily = by_job["daily_marts_job"][0]
        assert daily.tags["dagster/asset_partition_range_start"] <= daily.tags["dagster/asset_partition_range_end"]


def test_materializations_and_checks_recorded(run_twice: tuple[Path, list[str]]) -> None:
    folder, _ = run_twice
    with _open(folder / "dagster_home") as instance:
        for key in (["raw", "sacct_records"], ["core", "jobs"], ["marts", "slo_daily"], ["reports", "nightly"]):
            event = instance.get_latest_materialization_event(dg.AssetKey(key))
            assert event is not None, f"no materialization of {'/'.join(key)}"
        jobs = instance.get_latest_materialization_event(dg.AssetKey(["core", "jobs"]))
        assert jobs.asset_materialization.metadata["dagster/row_count"].value > 0
        daily = instance.get_latest_materialization_event(dg.AssetKey(["marts", "utilization_daily"]))
        assert daily is not None and daily.asset_materialization.partition is not None
        check = instance.get_latest_asset_check_evaluation_record(
            dg.AssetCheckKey(dg.AssetKey(["core", "jobs"]), "unique_job_id"))
        assert check is not None and check.event is not None


def test_lock_released_and_dagster_home_env_wins(run_twice: tuple[Path, list[str]], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from gpusre.pipelines.runner import dagster_home

    folder, _ = run_twice
    assert lock_path(folder / "w.duckdb").read_text() == ""  # the run lock was released and emptied
    assert dagster_home(folder / "w.duckdb") == (folder / "dagster_home").resolve()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "elsewhere"))
    assert dagster_home(folder / "w.duckdb") == tmp_path / "elsewhere"
