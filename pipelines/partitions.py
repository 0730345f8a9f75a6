"""Daily partitions (UTC days). A nightly run computes the daily marts of the new day only."""

from __future__ import annotations

import os

import dagster as dg

#: First partition; data before it is still ingested but its daily marts need an earlier start
#: (set GPUSRE_PARTITIONS_START=YYYY-MM-DD before loading the definitions).
PARTITIONS_START = os.environ.get("GPUSRE_PARTITIONS_START", "2020-01-01")

#: end_offset=1 makes today's (still filling) day a valid partition too.
DAILY_PARTITIONS = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, end_offset=1)

#: All warehouse writers run in this pool; size it 1 in dagster.yaml (one DuckDB writer).
WAREHOUSE_POOL = "duckdb_warehouse"
