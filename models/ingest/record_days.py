"""``raw.record_days``: per landing file and UTC day, the records of every record source (registry:
``record_ts``, ``record_node``), kept per landing-file version
(:mod:`gpusre.models.ingest.version_summaries`). The coverage marts (data freshness, day coverage,
nodes silent in the logs) read it instead of every raw record, so their nightly cost does not grow
with the history."""

from __future__ import annotations

from collections.abc import Collection

import duckdb

from gpusre.models.accounting_span import ACCOUNTING_RECORD_DAY_SQL, ACCOUNTING_RECORD_TS_SQL
from gpusre.models.ingest.version_summaries import VersionSummary, refresh_version_summary
from gpusre.models.sources.registry import Source, record_sources

__all__ = ["record_day_summaries", "refresh_record_days"]

#: A record's UTC day by its record-time expression, where that time only ends an interval: Slurm
#: accounting's (a job's end, or a running job's start + elapsed at the dump's cut) counts on the day it
#: closes — a dump cut at exactly midnight is the end of the day before, not a record of the next
#: (:data:`~gpusre.models.accounting_span.ACCOUNTING_RECORD_DAY_SQL`, the rule of ``counted_end``). Every
#: other record time is an instant (a log line, a delivery, an event's start): its own UTC day.
_RECORD_DAY_SQL = {ACCOUNTING_RECORD_TS_SQL: ACCOUNTING_RECORD_DAY_SQL}


def _summary(source: Source) -> VersionSummary:
    assert source.lake is not None and source.record_ts is not None
    node = source.record_node or "NULL"
    # An instant's day is taken from its time; an end's is computed beside it (the other sources' query
    # stays as it was, so their summaries are not rebuilt over the whole history on upgrade).
    end_day = _RECORD_DAY_SQL.get(source.record_ts)
    records = (f"SELECT source_file, {'day' if end_day else 'CAST(ts AS DATE)'} AS day, node, count(*) AS records, "
               f"min(ts) AS first_ts, max(ts) AS last_ts FROM (SELECT source_file, {source.record_ts} AS ts"
               f"{f', {end_day} AS day' if end_day else ''}, {node} AS node FROM rows) "
               "WHERE ts IS NOT NULL GROUP BY ALL")
    # Per node first, then per file and day: a plain list of the first level's nodes instead of a
    # list(DISTINCT) per group (10 M node-log lines: 1.13-1.16 -> 0.82-0.83 s).
    nodes = ("list_sort(coalesce(list(node) FILTER (WHERE node IS NOT NULL), []))" if source.record_node
             else "NULL::VARCHAR[]")
    select = (f"SELECT '{source.name}', source_file, day, sum(records)::BIGINT, min(first_ts), max(last_ts), {nodes} "
              f"FROM ({records}) GROUP BY source_file, day")
    return VersionSummary("raw.record_days", source.name, source.lake, select, scope=f"source_kind = '{source.name}'")


def record_day_summaries() -> tuple[VersionSummary, ...]:
    """One per record source with a record time."""
    return tuple(_summary(s) for s in record_sources() if s.record_ts is not None)


def refresh_record_days(con: duckdb.DuckDBPyConnection, sources: Collection[str] | None = None) -> None:
    """Bring ``raw.record_days`` in step with the ledger (inside the caller's transaction); ``sources``:
    only those record sources' rows (registry names; None: every one) — the daily marts need only the
    accounting's, and the night's 10 M node-log lines are summarized once, by the coverage roll-up."""
    for summary in record_day_summaries():
        if sources is None or summary.source in sources:
            refresh_version_summary(con, summary)
