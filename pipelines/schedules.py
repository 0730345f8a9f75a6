"""The schedules: the nightly run (yesterday's partition) and the lake compaction.

``nightly_schedule`` runs at 02:30 in the cluster's time zone (``timezone`` of the landing's
cluster.yaml, read when the definitions load; UTC when it cannot be read): the recommended cut,
``sacct -S yesterday -E today``, runs at local midnight, so on an America/Chicago cluster the dump
lands after 06:00 UTC and a 02:30 UTC run would come before it. Its partition is the last complete
*UTC* day at the moment the run is due (the partitions are UTC days): 02:30 in Chicago (08:30 UTC)
→ the UTC day before; 02:30 in Tokyo (17:30 UTC the day before) → the UTC day before that.

It is written out rather than built with ``build_schedule_from_partitioned_job``, which requests the
*last* partition: the daily partitions reach about three years ahead (``partitions.py``), so that
schedule targeted a day three years away. The run's daily-marts step also recomputes every day
queued in ``core.dirty_days`` (``assets/job_trends.py``), so a nightly run leaves the warehouse as
``gpusre run`` does.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg

from gpusre.pipelines.config import ClusterConfigError, load_cluster_config
from gpusre.pipelines.jobs import lake_compaction_job, nightly_job
from gpusre.pipelines.partitions import DAILY_PARTITIONS
from gpusre.pipelines.resources import landing_path

#: 02:30 local time: sacct dumps are usually cut shortly after local midnight.
NIGHTLY_CRON = "30 2 * * *"


def cluster_timezone(landing: str | Path | None = None) -> str:
    """``timezone`` of ``<landing>/cluster.yaml`` (landing: the argument, else GPUSRE_LANDING, else
    the demo's); UTC when the file is absent or unreadable (the definitions must still load)."""
    try:
        return load_cluster_config(Path(landing_path(str(landing) if landing is not None else None))).timezone
    except (ClusterConfigError, ValueError, OSError):
        return "UTC"


def nightly_partition_key(due: datetime) -> str:
    """The last complete UTC day at ``due`` (aware, any zone): the UTC day before ``due``'s UTC day."""
    if due.tzinfo is None:
        due = due.replace(tzinfo=timezone.utc)
    return (due.astimezone(timezone.utc).date() - timedelta(days=1)).isoformat()


def build_nightly_schedule(execution_timezone: str = "UTC") -> dg.ScheduleDefinition:
    """``nightly_schedule`` at 02:30 in ``execution_timezone``, requesting yesterday's UTC partition."""

    @dg.schedule(name="nightly_schedule", job=nightly_job, cron_schedule=NIGHTLY_CRON,
                 execution_timezone=execution_timezone,
                 description=f"Every night at 02:30 {execution_timezone}: ingest new dumps, update core, compute "
                             "the last complete UTC day's daily marts (and every changed day), roll-ups, report.")
    def nightly_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
        due = context.scheduled_execution_time or datetime.now(timezone.utc)
        key = nightly_partition_key(due)
        if not DAILY_PARTITIONS.has_partition_key(key):
            return dg.SkipReason(f"{key} is not a daily partition (partitions start "
                                 f"{DAILY_PARTITIONS.get_first_partition_key()})")
        # run_key: one run per partition, however often the tick is evaluated (daemon restarts).
        return dg.RunRequest(run_key=key, partition_key=key)

    return nightly_schedule


#: Bound to the cluster's time zone as the landing's cluster.yaml gives it when this module loads.
nightly_schedule = build_nightly_schedule(cluster_timezone())

#: 14:00 UTC, well after the nightly run: the compaction rewrites old days' node logs (seconds per
#: 10 M lines) and must not hold the warehouse while the night's data is processed.
lake_compaction_schedule = dg.ScheduleDefinition(
    name="lake_compaction_schedule",
    job=lake_compaction_job,
    cron_schedule="0 14 * * *",
    execution_timezone="UTC",
    description="Every day: merge old days' small node-log lake files into one file per day, refresh the snapshot.",
)
