"""Daily partitions (UTC days).

A run of the daily marts computes its partition's day(s) and every changed day queued in
core.dirty_days (``assets/job_trends.py``). The last partition lies about three years ahead (below):
never schedule "the last partition" — ``nightly_schedule`` names the last complete UTC day itself.
"""

from __future__ import annotations

import os

import dagster as dg

#: First partition; data before it is still ingested but its daily marts need an earlier start
#: (set GPUSRE_PARTITIONS_START=YYYY-MM-DD before loading the definitions).
PARTITIONS_START = os.environ.get("GPUSRE_PARTITIONS_START", "2020-01-01")

#: Days after today are partitions too, up to about three years ahead: data is dated by the clusters
#: that wrote it, not by this machine's clock (a trace from another site's 2027, a machine whose clock
#: is behind), and its daily marts must still be built. Override with GPUSRE_PARTITIONS_AHEAD_DAYS.
PARTITIONS_AHEAD_DAYS = int(os.environ.get("GPUSRE_PARTITIONS_AHEAD_DAYS", "1100"))

#: end_offset counts the days after today (and today, still filling) that are valid partitions.
DAILY_PARTITIONS = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, end_offset=1 + PARTITIONS_AHEAD_DAYS)

#: All warehouse writers run in this pool; size it 1 in dagster.yaml (one DuckDB writer).
WAREHOUSE_POOL = "duckdb_warehouse"
