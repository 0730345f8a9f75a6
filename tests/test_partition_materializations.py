"""What the Dagster instance records for the daily marts: one materialization per UTC day a run
(re)computed, each with that day's own figures (outside probe R, 2026-11: a sensor run for 11-18 that
also recomputed 11-16 and 11-17 recorded neither, so the UI showed 11-16 missing and 11-17 with the
0 rows of an earlier cut dump; a range run stamped the range's 33 rows / 873.67 GPU-h on every day)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct
from gpusre.assets.job_trends import JOB_USAGE_DAILY, UTILIZATION_DAILY, daily_job_marts
from gpusre.pipelines.resources import default_resources

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
CLUSTER = "cluster: parts\nnodes: gpu[01-02]\ngpus_per_node: 8\ntimezone: UTC\n"


def _job(job_id: int, node: str, start: str, end: str, hours: int) -> str:
    return (f"{job_id}|{job_id}|train|alice|llm|gpu|COMPLETED|0:0|{start}|{start}|{start}|{end}|{hours:02d}:00:00|1|"
            f"cpu=96,gres/gpu=8,node=1|{node}")


# Hand-computed, 8 GPUs per job: 11-10 one job of 10 h = 80 GPU-h; 11-11 one job of 5 h = 40 GPU-h;
# 11-12 jobs of 2 h and 4 h = 16 + 32 = 48 GPU-h. Every job starts and ends within its day.
JOB_1 = _job(1, "gpu01", "2026-11-10T00:00:00", "2026-11-10T10:00:00", 10)
JOB_2 = _job(2, "gpu01", "2026-11-11T00:00:00", "2026-11-11T05:00:00", 5)
JOB_3 = _job(3, "gpu01", "2026-11-12T00:00:00", "2026-11-12T02:00:00", 2)
JOB_4 = _job(4, "gpu02", "2026-11-12T00:00:00", "2026-11-12T04:00:00", 4)
FIGURES = {"2026-11-10": (1, 80.0), "2026-11-11": (1, 40.0), "2026-11-12": (2, 48.0)}


def _write(landing: Path, name: str, *jobs: str) -> None:
    path = landing / "sacct" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([HEADER, *jobs]) + "\n")


def _landing(root: Path) -> Path:
    landing = root / "landing"
    landing.mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER)
    return landing


def _materialize(root: Path, instance: dg.DagsterInstance, assets: list, **kwargs: object) -> dg.ExecuteInProcessResult:
    landing = root / "landing"
    result = dg.materialize(assets, instance=instance, **kwargs,
                            resources=default_resources(str(root / "wh.duckdb"), str(landing), str(root / "reports")))
    assert result.success
    return result


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey, day: str) -> dict[str, object]:
    """The metadata of the latest materialization of partition ``day`` of ``key``."""
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key, asset_partitions=[day]),
                                              limit=1).records
    assert records, f"no materialization of {key.to_user_string()} partition {day}"
    materialization = records[0].asset_materialization
    assert materialization is not None and materialization.partition == day
    return {k: v.value for k, v in materialization.metadata.items()}


def _assert_own_figures(instance: dg.DagsterInstance, days: dict[str, tuple[int, float]]) -> None:
    for day, (jobs, gpu_hours) in days.items():
        usage = _latest(instance, JOB_USAGE_DAILY, day)
        assert usage["day"] == day
        assert usage["jobs"] == jobs, day
        assert usage["gpu_hours"] == pytest.approx(gpu_hours), day
        assert usage["dagster/row_count"] == 1, day  # one (state, size bucket): COMPLETED, 8 GPUs
        util = _latest(instance, UTILIZATION_DAILY, day)
        assert util["day"] == day and util["dagster/row_count"] == 1
        assert util["allocated_gpu_hours"] == pytest.approx(gpu_hours), day


def test_one_partition_run_records_every_day_it_caught_up(tmp_path: Path) -> None:
    """The sensor's case: a run for partition D whose queue holds D-2 and D-1 records all three days."""
    landing = _landing(tmp_path)
    _write(landing, "sacct_2026-11-10.psv", JOB_1)
    _write(landing, "sacct_2026-11-11.psv", JOB_2)
    _write(landing, "sacct_2026-11-12.psv", JOB_3, JOB_4)
    with dg.instance_for_test() as instance:
        result = _materialize(tmp_path, instance, [raw_sacct, core_jobs, daily_job_marts], partition_key="2026-11-12")
        _assert_own_figures(instance, FIGURES)
        assert instance.get_materialized_partitions(JOB_USAGE_DAILY) == set(FIGURES)
        assert instance.get_materialized_partitions(UTILIZATION_DAILY) == set(FIGURES)
        # The run's own partition also says what the whole run did, under names that say so.
        own = _latest(instance, JOB_USAGE_DAILY, "2026-11-12")
        assert own["run_range"] == "2026-11-10 .. 2026-11-12"
        assert own["run_days"] == 3 and own["changed_days_caught_up"] == 2
        assert own["run_rows"] == 3 and own["run_gpu_hours"] == pytest.approx(80 + 40 + 48)
        caught_up = _latest(instance, JOB_USAGE_DAILY, "2026-11-10")
        assert caught_up["caught_up_by_partition"] == "2026-11-12"
        # Exactly one materialization per day and asset in this run.
        events = result.get_asset_materialization_events()
        for key in (JOB_USAGE_DAILY, UTILIZATION_DAILY):
            assert sorted(e.partition for e in events if e.asset_key == key) == sorted(FIGURES)


def test_a_later_run_replaces_a_days_stale_record(tmp_path: Path) -> None:
    """11-11's dump was cut when partition 11-11 ran (0 rows); the next run (partition 11-12) recomputes
    11-11 from the completed dump, and 11-11's latest materialization says so."""
    landing = _landing(tmp_path)
    _write(landing, "sacct_2026-11-10.psv", JOB_1)
    _write(landing, "sacct_2026-11-11.psv")  # cut: the header only
    with dg.instance_for_test() as instance:
        _materialize(tmp_path, instance, [raw_sacct, core_jobs, daily_job_marts], partition_key="2026-11-11")
        stale = _latest(instance, JOB_USAGE_DAILY, "2026-11-11")
        assert stale["dagster/row_count"] == 0 and stale["gpu_hours"] == 0.0
        _write(landing, "sacct_2026-11-11.psv", JOB_2)  # completed
        _write(landing, "sacct_2026-11-12.psv", JOB_3, JOB_4)
        _materialize(tmp_path, instance, [raw_sacct, core_jobs, daily_job_marts], partition_key="2026-11-12")
        _assert_own_figures(instance, FIGURES)


def test_range_run_records_each_days_own_figures(tmp_path: Path) -> None:
    """A single-run backfill over 11-10 .. 11-12 (what `gpusre run` launches): every partition carries
    its own day's figures, not the range's totals."""
    landing = _landing(tmp_path)
    _write(landing, "sacct_2026-11-10.psv", JOB_1)
    _write(landing, "sacct_2026-11-11.psv", JOB_2)
    _write(landing, "sacct_2026-11-12.psv", JOB_3, JOB_4)
    with dg.instance_for_test() as instance:
        _materialize(tmp_path, instance, [raw_sacct, core_jobs])
        result = _materialize(tmp_path, instance, [daily_job_marts], tags={
            "dagster/asset_partition_range_start": "2026-11-10", "dagster/asset_partition_range_end": "2026-11-12"})
        _assert_own_figures(instance, FIGURES)
        for day in FIGURES:
            usage = _latest(instance, JOB_USAGE_DAILY, day)
            assert usage["run_range"] == "2026-11-10 .. 2026-11-12" and usage["changed_days_caught_up"] == 0
            assert "caught_up_by_partition" not in usage
        events = [e for e in result.get_asset_materialization_events() if e.asset_key == JOB_USAGE_DAILY]
        assert sorted(e.partition for e in events) == sorted(FIGURES)


def test_sensor_partition_for_an_undated_file_is_the_datas_last_named_day(tmp_path: Path) -> None:
    """A changed file with no date in its name (cluster.yaml here) is the partition of the latest date
    in the landing's file names, not the wall clock's yesterday: a partition past the end of the data
    made the daily marts compute empty days up to it (probe R: 11-20 .. 12-03, utilization 0)."""
    from gpusre.pipelines.resources import LandingResource
    from gpusre.pipelines.sensors import landing_sensor, partition_for

    landing = _landing(tmp_path)
    _write(landing, "sacct_2026-11-10.psv", JOB_1)
    _write(landing, "sacct_2026-11-12.psv", JOB_3, JOB_4)
    resources = {"landing": LandingResource(path=str(landing))}
    first = landing_sensor(dg.build_sensor_context(cursor=None, resources=resources))
    assert [r.partition_key for r in first.run_requests] == ["2026-11-12"]
    (landing / "cluster.yaml").write_text(CLUSTER + "# edited\n")
    again = landing_sensor(dg.build_sensor_context(cursor=first.cursor, resources=resources))
    assert [r.partition_key for r in again.run_requests] == ["2026-11-12"]

    today = date(2026, 12, 5)
    assert partition_for(["cluster.yaml"], today) == "2026-12-04"  # nothing dated anywhere: yesterday
    assert partition_for(["cluster.yaml"], today, ["cluster.yaml", "syslog/20261117/g01.log"]) == "2026-11-17"
    # A date inside a longer number is not a date.
    assert partition_for(["sacct/dump_1202611170.psv"], today) == "2026-12-04"
