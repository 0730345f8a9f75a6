"""The nightly schedule: after the nightly sacct dump lands, process yesterday's partition."""

from __future__ import annotations

import dagster as dg

from gpusre.pipelines.jobs import lake_compaction_job, nightly_job

#: 02:30 UTC: sacct dumps are usually cut shortly after midnight.
nightly_schedule = dg.build_schedule_from_partitioned_job(
    nightly_job,
    name="nightly_schedule",
    hour_of_day=2,
    minute_of_hour=30,
    description="Every night: ingest new dumps, update core, compute yesterday's daily marts, roll-ups, report.",
)

#: 14:00 UTC, well after the nightly run: the compaction rewrites old days' node logs (seconds per
#: 10 M lines) and must not hold the warehouse while the night's data is processed.
lake_compaction_schedule = dg.ScheduleDefinition(
    name="lake_compaction_schedule",
    job=lake_compaction_job,
    cron_schedule="0 14 * * *",
    execution_timezone="UTC",
    description="Every day: merge old days' small node-log lake files into one file per day, refresh the snapshot.",
)
