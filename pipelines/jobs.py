"""Jobs: what the CLI, the schedule and the sensor run."""

from __future__ import annotations

import dagster as dg

INGEST_GROUPS = ("ingest", "core")

#: raw.* and core.* (unpartitioned, incremental by file checksum and dirty-job queue).
ingest_job = dg.define_asset_job(
    "ingest_job",
    selection=dg.AssetSelection.groups(*INGEST_GROUPS),
    description="Ingest new landing files into raw.* and upsert changed jobs into core.*.",
)

#: The daily-partitioned marts only; run over a partition range for backfills (one run).
daily_marts_job = dg.define_asset_job(
    "daily_marts_job",
    selection=dg.AssetSelection.assets(["marts", "job_usage_daily"], ["marts", "utilization_daily"]),
    description="Recompute the daily marts for a day or a range of days (single-run backfill).",
)

#: Roll-up marts and reports (unpartitioned).
rollup_job = dg.define_asset_job(
    "rollup_job",
    selection=dg.AssetSelection.groups("marts", "reports")
    - dg.AssetSelection.assets(["marts", "job_usage_daily"], ["marts", "utilization_daily"]),
    description="Recompute roll-up marts, trend tests, findings and the nightly report.",
)

#: Everything, for one day: what the nightly schedule and the landing sensor launch.
nightly_job = dg.define_asset_job(
    "nightly_job",
    selection=dg.AssetSelection.all(),
    description="Ingest, core, the day's daily marts, roll-ups and the nightly report.",
)
