"""nightly_schedule: 02:30 in the cluster's time zone, requesting the last complete UTC day (not the
last partition, which lies about three years ahead)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest
from dagster._utils.schedules import schedule_execution_time_iterator  # the daemon's tick times


from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.partitions import DAILY_PARTITIONS
from gpusre.pipelines.schedules import build_nightly_schedule, nightly_partition_key

UTC = timezone.utc


def _landing(tmp_path: Path, zone: str | None) -> Path:
    landing = tmp_path / "landing"
    landing.mkdir(parents=True, exist_ok=True)
    if zone is not None:
        (landing / "cluster.yaml").write_text(f"cluster: t\ntimezone: {zone}\nnodes: 4\n")
    return landing


def _ticks(schedule: dg.ScheduleDefinition, after: datetime):
    return schedule_execution_time_iterator(after.timestamp(), schedule.cron_schedule, schedule.execution_timezone)


def _tick(defs: dg.Definitions, due: datetime) -> dg.RunRequest:
    """Evaluate the schedule of ``defs`` for the tick due at ``due`` as the daemon does."""
    repo = defs.get_repository_def()
    schedule = repo.get_schedule_def("nightly_schedule")
    with dg.build_schedule_context(scheduled_execution_time=due, repository_def=repo) as context:
        result = schedule.evaluate_tick(context)
    assert result.skip_message is None, result.skip_message
    assert result.run_requests is not None and len(result.run_requests) == 1
    return result.run_requests[0]


@pytest.mark.parametrize(("due", "expected"), [
    (datetime(2026, 12, 5, 2, 30, tzinfo=UTC), "2026-12-04"),     # the scheduled time
    (datetime(2026, 12, 5, 0, 0, 30, tzinfo=UTC), "2026-12-04"),  # just after midnight UTC
    (datetime(2026, 12, 4, 23, 59, tzinfo=UTC), "2026-12-03"),    # just before it
    (datetime(2027, 1, 1, 2, 30, tzinfo=UTC), "2026-12-31"),      # across a year
])
def test_utc_schedule_requests_yesterday(tmp_path: Path, due: datetime, expected: str) -> None:
    defs = build_definitions(str(tmp_path / "w.duckdb"), str(_landing(tmp_path, None)), str(tmp_path / "r"))
    schedule = defs.get_repository_def().get_schedule_def("nightly_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone, schedule.job_name) == ("30 2 * * *", "UTC", "nightly_job")
    request = _tick(defs, due)
    assert request.partition_key == expected
    assert request.run_key == expected  # one run per night, however often the tick is evaluated


def test_next_ticks_target_the_last_complete_day_not_the_last_partition(tmp_path: Path) -> None:
    """What the UI's future ticks showed: 2029-12-10 on 2026-12-05 (the last partition)."""
    defs = build_definitions(str(tmp_path / "w.duckdb"), str(_landing(tmp_path, None)), str(tmp_path / "r"))
    schedule = defs.get_repository_def().get_schedule_def("nightly_schedule")
    start = datetime(2026, 12, 5, 7, 0, tzinfo=UTC)
    ticks = _ticks(schedule, start)
    for _ in range(3):
        due = next(ticks)
        request = _tick(defs, due)
        assert due.astimezone(UTC).hour == 2 and due.minute == 30
        assert request.partition_key == (due.astimezone(UTC).date() - timedelta(days=1)).isoformat()
        assert request.partition_key != DAILY_PARTITIONS.get_last_partition_key()


@pytest.mark.parametrize(("zone", "local_due", "utc_due", "expected"), [
    # 02:30 in Chicago (CST, UTC-6) is 08:30 UTC the same day: the UTC day before.
    ("America/Chicago", datetime(2026, 12, 5, 2, 30), datetime(2026, 12, 5, 8, 30, tzinfo=UTC), "2026-12-04"),
    # Daylight saving time (CDT, UTC-5): 07:30 UTC.
    ("America/Chicago", datetime(2026, 7, 5, 2, 30), datetime(2026, 7, 5, 7, 30, tzinfo=UTC), "2026-07-04"),
    # 02:30 in Tokyo (UTC+9) is 17:30 UTC of the previous UTC day: the UTC day before that.
    ("Asia/Tokyo", datetime(2026, 12, 5, 2, 30), datetime(2026, 12, 4, 17, 30, tzinfo=UTC), "2026-12-03"),
])
def test_schedule_runs_at_0230_in_the_clusters_zone(tmp_path: Path, zone: str, local_due: datetime,
                                                     utc_due: datetime, expected: str) -> None:
    defs = build_definitions(str(tmp_path / "w.duckdb"), str(_landing(tmp_path, zone)), str(tmp_path / "r"))
    dg.Definitions.validate_loadable(defs)
    schedule = defs.get_repository_def().get_schedule_def("nightly_schedule")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("30 2 * * *", zone)
    due = local_due.replace(tzinfo=ZoneInfo(zone))
    assert due.astimezone(UTC) == utc_due
    assert _tick(defs, due).partition_key == expected
    # The daemon's own tick times are 02:30 local.
    first = next(_ticks(schedule, due - timedelta(minutes=1)))
    assert first.astimezone(UTC) == utc_due


def test_zone_from_gpusre_landing_and_utc_when_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dagster dev` loads the definitions with GPUSRE_LANDING only; a broken or missing cluster.yaml
    must not stop them loading (the schedule falls back to UTC)."""
    landing = _landing(tmp_path, "Asia/Tokyo")
    monkeypatch.setenv("GPUSRE_LANDING", str(landing))
    assert build_definitions().get_repository_def().get_schedule_def("nightly_schedule").execution_timezone == "Asia/Tokyo"
    (landing / "cluster.yaml").write_text("timezone: Mars/Olympus\n")
    defs = build_definitions()
    dg.Definitions.validate_loadable(defs)
    assert defs.get_repository_def().get_schedule_def("nightly_schedule").execution_timezone == "UTC"
    monkeypatch.setenv("GPUSRE_LANDING", str(tmp_path / "missing"))
    assert build_definitions().get_repository_def().get_schedule_def("nightly_schedule").execution_timezone == "UTC"


def test_days_before_the_first_partition_are_skipped() -> None:
    schedule = build_nightly_schedule("UTC")
    first = datetime.fromisoformat(DAILY_PARTITIONS.get_first_partition_key()).replace(tzinfo=UTC)
    with dg.build_schedule_context(scheduled_execution_time=first + timedelta(hours=2, minutes=30)) as context:
        result = schedule.evaluate_tick(context)
    assert not result.run_requests and "not a daily partition" in (result.skip_message or "")
    assert nightly_partition_key(first + timedelta(days=1, hours=2)) == first.date().isoformat()
