"""The span Slurm accounting speaks for, defined once: from the first job start on the day its first
record falls on to the latest moment the dumps show.

``raw.record_days`` is refreshed by the day-coverage roll-up; callers before it this run (the daily
marts) use only the span's end, which ``core.jobs`` gives alone.

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
#: ``{recorded}``: the earliest record time of the dumps themselves (``raw.record_days``), which knows
#: records ``core.jobs`` merged away — a job RUNNING all of the first dump's day, COMPLETED the next.
#: The first record's day is the day of the instant before it: a dump cut at 00:00 shows a job that
#: ran all day with start + elapsed = midnight.
_SPAN_SQL = f"""
WITH r AS (SELECT start_ts, {ACCOUNTING_RECORD_TS_SQL} AS t FROM core.jobs),
     b AS (SELECT least(min(t), {{recorded}}) AS first_record, max(t) AS last_ts FROM r),
     d AS (SELECT timezone('UTC', timezone('UTC', first_record - INTERVAL 1 MICROSECOND)::DATE::TIMESTAMP) AS day0 FROM b)
SELECT least(b.first_record, (SELECT min(r.start_ts) FROM r, d WHERE r.start_ts >= d.day0)) AS first_ts, b.last_ts
FROM b"""
_RECORDED_SQL = "(SELECT min(first_ts) FROM raw.record_days WHERE source_kind = 'sacct')"
#: The span over ``core.jobs`` and the dumps' record summary (``raw.record_days``).
ACCOUNTING_SPAN_SQL = _SPAN_SQL.format(recorded=_RECORDED_SQL)


def accounting_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """``(first moment, latest moment the dumps show)`` in UTC (:data:`ACCOUNTING_SPAN_SQL`);
    ``(None, None)`` without jobs."""
    if not table_exists(con, "core.jobs"):
        return None, None
    sql = ACCOUNTING_SPAN_SQL if table_exists(con, "raw.record_days") else _SPAN_SQL.format(recorded="NULL")
    first, last = con.sql(sql).fetchall()[0]
    return (first.astimezone(timezone.utc) if first else None, last.astimezone(timezone.utc) if last else None)
