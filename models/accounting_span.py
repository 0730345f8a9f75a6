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

**Capacity hours of a day** (:func:`capacity_hours_expr`), the one definition behind every capacity and
in-service figure — ``marts.utilization_daily``, ``marts.goodput_daily``, ``marts.node_availability_daily``'s
``observed_hours`` and the SLIs' totals: whole UTC days (24 h), except the day of the span's end when more
than :data:`MAX_GAP_MINUTES` of it lie after it (the minutes of the next day a dump cut at 00:05 reaches):
that day counts its hours up to the end, so "now" is not diluted by hours that have not happened. The first
day counts whole even when the data begins inside it (the quiet hours before the first job at 04:30 are
idle capacity, ``marts.day_coverage`` included): utilization_daily is written before the first record's
time is known for sure (raw.record_days is refreshed later in a run), and a cut there made complete days
look partial.

**The data's span** (:func:`data_span`): from the first day's midnight (:func:`day_start`) to the moment the
data counts up to (:func:`counted_end`: the next midnight when the last moment misses at most
:data:`MAX_GAP_MINUTES` of its day, else that moment). Open outages, drains and repairs are down until
that end, MTBF exposure and its failure window run over it, and no daily mart has a row after its last
day. Four ends once coexisted (the log's last line, the accounting's, midnight, a node-state dump's cut
at 00:05 the next day): one open drain showed three durations and the availability two values. Two marts once cut the same day
differently (goodput at the first job start and last job end, utilization at midnight): goodput came out
above utilization.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone

import duckdb

from gpusre.models.warehouse import table_exists

import polars as pl

__all__ = ["ACCOUNTING_RECORD_DAY_SQL", "ACCOUNTING_SOURCE", "ACCOUNTING_RECORD_TS_SQL", "ACCOUNTING_SPAN_SQL", "MAX_GAP_MINUTES", "accounting_span",
           "capacity_hours_expr", "counted_end", "data_span", "data_span_of", "day_start", "end_day_sql",
           "node_history_end"]

#: A day with more than this much of it outside the data span is partial (and counts only its covered
#: hours of capacity). An hour absorbs the quiet minutes before a complete day's first record and after its
#: last one (a dump cut at 23:55) while a day the data reaches for minutes only (00:07) stays partial.
#: ``sql/marts/utilization_daily.sql`` repeats it (its caller passes no parameter for it): keep them equal.
MAX_GAP_MINUTES = 60.0

#: Per record (``core.jobs``, ``core.job_instances``, ``raw.sacct_records``): the latest moment it speaks for.
ACCOUNTING_RECORD_TS_SQL = "greatest(COALESCE(end_ts, start_ts + to_seconds(COALESCE(elapsed_s, 0))), submit_ts)"


def end_day_sql(ts: str) -> str:
    """SQL: the UTC day of a moment that only *ends* an interval (a job's end, a running job's start +
    elapsed at a dump's cut): the day of the instant before it, so an end at exactly midnight belongs to the
    day it closes — :func:`counted_end`'s rule (an end at midnight is that midnight, nothing of the next
    day) and the span's first day's. ``ts`` is a TIMESTAMPTZ expression.

    >>> end_day_sql("end_ts")
    "CAST(timezone('UTC', (end_ts) - INTERVAL 1 MICROSECOND) AS DATE)"
    """
    return f"CAST(timezone('UTC', ({ts}) - INTERVAL 1 MICROSECOND) AS DATE)"


#: Per record (``raw.sacct_records``): the UTC day its record time (:data:`ACCOUNTING_RECORD_TS_SQL`) counts
#: on. That time ends the job's interval when it is later than the job's submit and start (its end, or a
#: running job's start + elapsed: the dump's cut), and then counts on the day it closes (:func:`end_day_sql`):
#: a dump cut at 2026-11-16 00:00 (``sacct -E``, ``--truncate``) lists a job running at the cut with start +
#: elapsed = midnight, and dating it 11-16 made an empty day "the last day with data". A submit (a job not
#: started) or a start with nothing after it is an instant: its own day.
ACCOUNTING_RECORD_DAY_SQL = (f"CASE WHEN {ACCOUNTING_RECORD_TS_SQL} > greatest(submit_ts, start_ts) "
                             f"THEN {end_day_sql(ACCOUNTING_RECORD_TS_SQL)} "
                             f"ELSE CAST(timezone('UTC', {ACCOUNTING_RECORD_TS_SQL}) AS DATE) END")
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
#: The record source (registry name) whose records the accounting's span reads.
ACCOUNTING_SOURCE = "sacct"
_RECORDED_SQL = f"(SELECT min(first_ts) FROM raw.record_days WHERE source_kind = '{ACCOUNTING_SOURCE}')"
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


def day_start(ts: datetime) -> datetime:
    """Midnight (UTC) of ``ts``'s UTC day: where the data's first day starts counting (the first day
    counts whole, :func:`capacity_hours_expr`).

    >>> day_start(datetime(2026, 11, 24, 4, 30, tzinfo=timezone.utc)).isoformat()
    '2026-11-24T00:00:00+00:00'
    """
    return datetime.combine(ts.astimezone(timezone.utc).date(), time(), tzinfo=timezone.utc)


def counted_end(end: datetime, max_gap_minutes: float = MAX_GAP_MINUTES) -> datetime:
    """The moment the data counts up to, given its last moment ``end``: the next midnight when ``end``
    misses at most ``max_gap_minutes`` of its day (the last day then counts whole, as its capacity
    does), else ``end`` itself. Open outages, drains and repairs are counted to it, so a day's down
    hours and its capacity hours end at the same moment.

    >>> d = lambda h, m=0: datetime(2026, 11, 28, h, m, tzinfo=timezone.utc)
    >>> [counted_end(t).isoformat() for t in (d(23, 30), d(22, 30), d(0))]
    ['2026-11-29T00:00:00+00:00', '2026-11-28T22:30:00+00:00', '2026-11-28T00:00:00+00:00']
    """
    end = end.astimezone(timezone.utc)
    midnight = day_start(end) + timedelta(days=1)
    # end exactly at a midnight is that midnight (day_start(end) == end): nothing left of a day to fill
    return midnight if day_start(end) != end and midnight - end <= timedelta(minutes=max_gap_minutes) else end


def data_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime | None, datetime | None]:
    """``(start, end)`` of the data by the one day rule: midnight of the accounting's first day, and the
    moment it counts up to (:func:`counted_end` of the accounting's last moment) — the span every mart's
    days, capacity, exposure and open outages share. ``(None, None)`` without jobs (callers fall back to
    the other sources' spans, through the same two functions)."""
    return data_span_of(*accounting_span(con))


def data_span_of(first: datetime | None, last: datetime | None) -> tuple[datetime | None, datetime | None]:
    """:func:`data_span` of an accounting span ``(first, last)`` already read (:func:`accounting_span`)."""
    return (day_start(first) if first is not None else None, counted_end(last) if last is not None else None)


def capacity_hours_expr(day: pl.Expr, until: datetime | None,
                        max_gap_minutes: float = MAX_GAP_MINUTES) -> pl.Expr:
    """Hours of each UTC ``day`` (a Date expression) that count as capacity: the day's hours up to
    ``until`` (None: 24), or 24 when at most ``max_gap_minutes`` of the day lie after it (the module
    docstring's rule; ``sql/marts/utilization_daily.sql`` applies the same one in SQL); 0 after ``until``.

    >>> from datetime import date
    >>> days = pl.DataFrame({"day": [date(2026, 1, 1), date(2026, 1, 2), date(2026, 1, 3)]})
    >>> days.select(capacity_hours_expr(pl.col("day"), datetime(2026, 1, 3, 0, 5, tzinfo=timezone.utc))
    ...             .round(3)).to_series().to_list()
    [24.0, 24.0, 0.083]
    """
    utc = pl.Datetime("us", "UTC")
    d0 = day.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    d1 = d0 + pl.duration(days=1)
    hi = pl.min_horizontal(d1, pl.lit(until.astimezone(timezone.utc), utc)) if until is not None else d1
    covered = ((hi - d0).dt.total_microseconds() / 3.6e9).clip(lower_bound=0.0)
    return pl.when(covered >= 24.0 - max_gap_minutes / 60.0).then(pl.lit(24.0)).otherwise(covered)


def node_history_end(con: duckdb.DuckDBPyConnection, timezone_name: str = "UTC") -> datetime | None:
    """Where the node-state history ends when no accounting says where the data ends: the latest moment
    its events show (``events_as_of``: a start, an end, a dump's cut), or the end of the last
    ``sacctmgr show event`` dump's day when later — a dump named for its day (``events_2026-11-11.txt``,
    ``dump_day_start``) lists every event of that day, so a day it shows no event open at its end was in
    service to midnight, as an alert webhook file covers its named day. Never past the end of the UTC day
    of the newest record of any source (``raw.record_days``, the events): a file named for a later day
    (a typo, a dump cut early) does not stretch the history over days nothing was seen on. None before
    any node-state event or dump was loaded.

    With accounting, the accounting's end decides (``node_states_end``); this is its no-accounting case,
    one rule for the node-availability mart's last day and the reliability marts' span."""
    # imported here: the node-state ingest imports models that import this module
    from gpusre.models.sources.slurm_events.ingest import SLURM_EVENTS_KIND, events_as_of
    from gpusre.models.sources.slurm_events.parse import dump_day_start

    if not table_exists(con, "raw.slurm_events"):
        return None
    shown = events_as_of(con)
    named = [dump_day_start(f, timezone_name) for (f,) in con.sql(
        "SELECT source_file FROM raw.ingested_files WHERE source_kind = ? AND status = 'loaded'",
        params=[SLURM_EVENTS_KIND]).fetchall()] if table_exists(con, "raw.ingested_files") else []
    named_ends = [d + timedelta(days=1) for d in named if d is not None]
    newest = [t for t in (shown, *((con.sql("SELECT max(last_ts) FROM raw.record_days").fetchall()[0][0],)
                                   if table_exists(con, "raw.record_days") else ())) if t is not None]
    if not named_ends or not newest:
        return shown.astimezone(timezone.utc) if shown is not None else None
    cap = day_start(max(newest)) + timedelta(days=1)
    ends = [t for t in (shown, min(max(named_ends), cap)) if t is not None]
    return max(ends).astimezone(timezone.utc)

