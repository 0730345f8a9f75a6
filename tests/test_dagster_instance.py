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


def test_event_log_kept_open_and_readable_by_dagsters_default_storage(run_twice: tuple[Path, list[str]]) -> None:
    """The instance uses gpusre's event log storage (connections kept open); the files it wrote are
    Dagster's own: the default SQLite storage reads the same runs and materializations back."""
    from dagster._core.storage.event_log import SqliteEventLogStorage

    from gpusre.pipelines.dagster_event_log import KeptOpenSqliteEventLogStorage

    folder, _ = run_twice
    home = folder / "dagster_home"
    with _open(home) as instance:
        assert type(instance.event_log_storage) is KeptOpenSqliteEventLogStorage
        ours = instance.get_latest_materialization_event(dg.AssetKey(["core", "jobs"]))
        run_ids = [r.run_id for r in instance.get_runs()]
        ours_events = {rid: len(instance.all_logs(rid)) for rid in run_ids}
    default = SqliteEventLogStorage(str(home / "history" / "runs"))
    try:
        assert {rid: len(default.get_logs_for_run(rid)) for rid in run_ids} == ours_events
        assert all(n > 10 for n in ours_events.values())
        records = default.fetch_materializations(dg.AssetKey(["core", "jobs"]), limit=1).records
        assert records and records[0].event_log_entry.run_id == ours.run_id
    finally:
        default.dispose()


def test_dagster_yaml_follows_a_moved_instance_and_spares_the_users(tmp_path: Path) -> None:
    from gpusre.pipelines.runner import _instance

    home = tmp_path / "a" / "dagster_home"
    with _instance(home):
        pass
    text = (home / "dagster.yaml").read_text()
    assert f'base_dir: "{home.resolve() / "history" / "runs"}"' in text
    moved = tmp_path / "b" / "dagster_home"
    moved.parent.mkdir()
    home.rename(moved)
    with _instance(moved) as instance:
        assert instance.event_log_storage._base_dir == str(moved.resolve() / "history" / "runs")
    assert str(home) not in (moved / "dagster.yaml").read_text()
    user = "telemetry:\n  enabled: false\n"  # a dagster.yaml written by the user: left as it is
    (moved / "dagster.yaml").write_text(user)
    with _instance(moved):
        pass
    assert (moved / "dagster.yaml").read_text() == user
