"""The landing sensor, the nightly schedule and the Dagster-native nightly job for one partition."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.models.warehouse import connect
from gpusre.pipelines.definitions import ASSETS, CHECKS, build_definitions
from gpusre.pipelines.resources import LandingResource, default_resources
from gpusre.pipelines.runner import run_pipeline
from gpusre.pipelines.sensors import landing_sensor


def test_sensor_requests_one_run_per_change_set(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-09-01.psv").write_text("JobID|State\n1|COMPLETED\n")
    resources = {"landing": LandingResource(path=str(landing))}

    first = landing_sensor(dg.build_sensor_context(cursor=None, resources=resources))
    assert len(first.run_requests) == 1
    request = first.run_requests[0]
    assert request.partition_key == "2026-09-01"
    assert request.run_key

    again = landing_sensor(dg.build_sensor_context(cursor=first.cursor, resources=resources))
    assert not again.run_requests and "no new or changed files" in (again.skip_reason.skip_message if again.skip_reason else "")

    (landing / "sacct" / "sacct_2026-09-02.psv").write_text("JobID|State\n2|FAILED\n")
    third = landing_sensor(dg.build_sensor_context(cursor=first.cursor, resources=resources))
    assert [r.partition_key for r in third.run_requests] == ["2026-09-02"]
    assert third.run_requests[0].run_key != request.run_key


def test_sensor_skips_missing_landing(tmp_path: Path) -> None:
    result = landing_sensor(dg.build_sensor_context(resources={"landing": LandingResource(path=str(tmp_path / "x"))}))
    assert not result.run_requests and "does not exist" in (result.skip_reason.skip_message if result.skip_reason else "")


def test_nightly_schedule_targets_yesterdays_partition() -> None:
    repo = build_definitions().get_repository_def()
    schedule = repo.get_schedule_def("nightly_schedule")
    assert schedule.cron_schedule == "30 2 * * *"
    assert schedule.job_name == "nightly_job"


def _table(wh: Path, table: str) -> list[tuple]:
    con = connect(wh, read_only=True)
    try:
        return con.sql(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
    finally:
        con.close()


#: The marts whose rows the evaluator saw differ between a sensor run and `gpusre run`, and the queue.
COMPARED = ("marts.job_usage_daily", "marts.utilization_daily", "marts.gpu_time_by_state", "marts.size_buckets",
            "marts.runtime_quantiles", "marts.findings", "core.jobs", "core.dirty_days")


def test_nightly_job_for_one_partition_equals_gpusre_run(tmp_path: Path) -> None:
    """What the schedule and the sensor launch: everything, with the daily marts of the partition's
    day *and* every changed day queued in core.dirty_days — the same warehouse `gpusre run` builds.
    (It used to compute the partition's day only and leave the other days dirty.)"""
    landing = tmp_path / "landing"
    simulate_cluster(landing, SimulationConfig(nodes=4, days=3, seed=2))
    dumps = sorted(p.name for p in (landing / "sacct").iterdir())
    assert len(dumps) >= 2  # dumps of several days; jobs cross midnight

    reference = tmp_path / "ref.duckdb"
    run_pipeline(landing, reference, tmp_path / "ref_reports")

    wh = tmp_path / "w.duckdb"
    con = connect(reference, read_only=True)
    days = [r[0].isoformat() for r in con.sql("SELECT DISTINCT day FROM marts.utilization_daily ORDER BY 1").fetchall()]
    con.close()
    assert len(days) >= 2
    partition = days[-1]
    # The nightly job's assets (all but maintenance) for one partition, as the schedule requests them.
    result = dg.materialize([*ASSETS, *CHECKS], selection=dg.AssetSelection.all() - dg.AssetSelection.groups("maintenance"),
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "reports")),
                            partition_key=partition, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    daily = {e.partition: e.materialization for e in result.get_asset_materialization_events()
             if e.asset_key == dg.AssetKey(["marts", "job_usage_daily"])}
    # One materialization per day the run recomputed (the caught-up days too), each with its own day's figures.
    assert sorted(daily) == days
    assert daily[partition].metadata["run_days"].value == len(days)
    assert daily[partition].metadata["changed_days_caught_up"].value == len(days) - 1
    con = connect(wh, read_only=True)
    per_day = dict(con.sql("SELECT day::VARCHAR, sum(gpu_hours) FROM marts.job_usage_daily GROUP BY 1").fetchall())
    con.close()
    for day, materialization in daily.items():
        assert materialization.metadata["gpu_hours"].value == pytest.approx(per_day.get(day, 0.0), abs=1e-3), day

    for table in COMPARED:
        assert _table(wh, table) == _table(reference, table), table
    con = connect(wh, read_only=True)
    assert [r[0].isoformat() for r in con.sql("SELECT DISTINCT day FROM marts.utilization_daily ORDER BY 1").fetchall()] == days
    con.close()
    assert _table(wh, "core.dirty_days") == []
    # The warning check that used to fire after every such run (nothing repaired it) passes.
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["no_unprocessed_days"] is True
    assert list((tmp_path / "reports").glob("nightly-*.html"))
