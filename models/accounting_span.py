"""The span Slurm accounting speaks for, defined once: from the first job start to the latest moment
the dumps show.

A dump lists a running job with its start and the time it has run so far, and a pending job with its
submit time, so the latest end, start + elapsed or submit is the last moment the accounting saw: "now"
for jobs still running. Utilization, goodput, ETTR, MTBF exposure, node availability and suspect nodes
all end there — never at the wall clock, so a rerun over the same dumps gives the same numbers, and
never at a source-specific end, so two marts do not disagree on where the data stops (node availability
once ended at the last node-state event, hours before the accounting did).
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from gpusre.models.warehouse import table_exists

__all__ = ["ACCOUNTING_AS_OF_SQL", "accounting_span"]

#: Aggregate over ``core.jobs`` (or ``core.job_instances``): the latest moment the dumps show.
ACCOUNTING_AS_OF_SQL = "max(greatest(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))), submit_ts))"


def accounting_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """``(first job start, latest moment the dumps show)`` in UTC; ``(None, None)`` without jobs."""
    if not table_exists(con, "core.jobs"):
        return None, None
    first, last = con.sql(f"SELECT min(start_ts), {ACCOUNTING_AS_OF_SQL} FROM core.jobs").fetchall()[0]
    return (first.astimezone(timezone.utc) if first else None, last.astimezone(timezone.utc) if last else None)
