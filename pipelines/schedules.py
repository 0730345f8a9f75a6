"""The nightly schedule: after the nightly sacct dump lands, process yesterday's partition."""

from __future__ import annotations

import dagster as dg

from gpusre.pipelines.jobs import nightly_job

#: 02:30 UTC: sacct dumps are usually cut shortly after midnight.
nightly_schedule = dg.build_schedule_from_partitioned_job(
    nightly_job,
    name="nightly_schedule",
    hour_of_day=2,
    minute_of_hour=30,
    description="Every night: ingest new dumps, update core, compute yesterday's daily marts, roll-ups, report.",
)
