"""The landing sensor, the nightly schedule and the Dagster-native nightly job for one partition."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from gpusre.simulate import SimulationConfig, simulate_cluster
from gpusre.models.warehouse import connect
from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.resources import LandingResource
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


def test_nightly_job_for_one_partition(tmp_path: Path) -> None:
    """What the schedule launches: everything, with the daily marts of one day."""
    landing = tmp_path / "landing"
    simulate_cluster(landing, SimulationConfig(nodes=8, days=5, seed=2))
    wh = tmp_path / "w.duckdb"
    defs = build_definitions(str(wh), str(landing), str(tmp_path / "reports"))
    result = defs.resolve_job_def("nightly_job").execute_in_process(
        partition_key="2026-08-03", instance=dg.DagsterInstance.ephemeral())
    assert result.success
    con = connect(wh, read_only=True)
    days = [r[0].isoformat() for r in con.sql("SELECT DISTINCT day FROM marts.utilization_daily").fetchall()]
    still_dirty = con.sql("SELECT count(*) FROM core.dirty_days").fetchall()[0][0]
    con.close()
    assert days == ["2026-08-03"]
    assert still_dirty > 0  # the other changed days wait for a backfill; the warning check says so
    assert list((tmp_path / "reports").glob("nightly-*.html"))
