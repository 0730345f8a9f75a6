"""The span Slurm accounting speaks for, defined once: from the first job start on the day its first
record falls on to the latest moment the dumps show.

A dump lists a running job with its start and the time it has run so far, and a pending job with its
submit time, so the latest end, start + elapsed or submit is the last moment the accounting saw: "now"
for jobs still running. Its first moment is not the first record's time (a day's first job *end*, hours
after jobs started at midnight) nor the first start (a job that started days before the first dump's
window is listed because it ran inside it): it is the earliest start on the first record's UTC day. Utilization, goodput, ETTR, MTBF exposure, node availability and suspect nodes
all end there — never at the wall clock, so a rerun over the same dumps gives the same numbers, and
never at a source-specific end, so two marts do not disagree on where the data stops (node availability
once ended at the last node-state event, hours before the accounting did).
"""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb

from gpusre.models.warehouse import table_exists

__all__ = ["ACCOUNTING_RECORD_TS_SQL", "ACCOUNTING_SPAN_SQL", "accounting_span"]

#: Per record (``core.jobs``, ``core.job_instances``, ``raw.sacct_records``): the latest moment it speaks for.
ACCOUNTING_RECORD_TS_SQL = "greatest(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))), submit_ts)"
#: One row ``(first_ts, last_ts)`` over ``core.jobs`` (NULLs without jobs): the accounting's span.
ACCOUNTING_SPAN_SQL = f"""
WITH r AS (SELECT start_ts, {ACCOUNTING_RECORD_TS_SQL} AS t FROM core.jobs),
     b AS (SELECT min(t) AS first_record, max(t) AS last_ts FROM r)
SELECT least(b.first_record, (SELECT min(r.start_ts) FROM r
                              WHERE r.start_ts >= timezone('UTC', timezone('UTC', b.first_record)::DATE::TIMESTAMP))) AS first_ts,
       b.last_ts
FROM b"""


def accounting_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """``(first moment, latest moment the dumps show)`` in UTC (:data:`ACCOUNTING_SPAN_SQL`);
    ``(None, None)`` without jobs."""
    if not table_exists(con, "core.jobs"):
        return None, None
    first, last = con.sql(ACCOUNTING_SPAN_SQL).fetchall()[0]
    return (first.astimezone(timezone.utc) if first else None, last.astimezone(timezone.utc) if last else None)
