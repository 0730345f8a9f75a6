"""Which UTC days the data covers fully: ``marts.day_coverage`` and the ``partial`` column of every daily mart.

A day at the end of the data (the last dump ending at 00:07, a log that stops at noon) is *partial*: its
counts are real but cover only part of the day, so a mean, a minimum or a trend over days that includes it
is wrong (the demo's last day showed as "lowest utilization 0.8 %"). Coverage is defined once, in
``sql/marts/day_coverage.sql``: the intersection of the spans of the dense sources, Slurm accounting (its
span: :mod:`gpusre.models.accounting_span`) and node logs, by the one day rule of that module — each span
from its first day's midnight (the first day counts whole, as its capacity does), the covered span to
:func:`~gpusre.models.accounting_span.counted_end` of its end; a day is complete when at most
:data:`MAX_GAP_MINUTES` of it lie outside that span.

Every daily mart carries ``partial`` (:func:`mark_partial_days`, refreshed for all rows each time the
mart is written, since a partial day becomes complete when the next dump arrives); analytics over days
use :func:`complete_days` or ``WHERE NOT partial``. A day outside the coverage table (no dense data at
all) is partial.

An empty day of a dense source is missing data unless a file for that day was loaded and simply held no
record of it (:func:`loaded_file_days`: a closed cluster's accounting dump on a maintenance day).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import PurePosixPath

import duckdb

from gpusre.models.accounting_span import MAX_GAP_MINUTES, accounting_span
from gpusre.models.ingest.record_days import refresh_record_days
from gpusre.models.marts_runner import run_mart_sql
from gpusre.models.warehouse import table_exists

__all__ = ["MAX_GAP_MINUTES", "build_day_coverage", "mark_partial_days", "refresh_partial_flags", "complete_days",
           "loaded_file_days", "named_day"]

# MAX_GAP_MINUTES (defined with the accounting span, whose capacity hours use the same threshold): a day with
# more than this much of it outside the data span is partial.


def build_day_coverage(con: duckdb.DuckDBPyConnection, max_gap_minutes: float = MAX_GAP_MINUTES) -> int:
    """(Re)build ``marts.day_coverage`` from ``raw.record_days`` (refreshed first); return its row count."""
    refresh_record_days(con)
    acct_from, acct_to = accounting_span(con)
    run_mart_sql(con, "day_coverage", {"max_gap_minutes": max_gap_minutes, "acct_from": acct_from, "acct_to": acct_to})
    return con.sql("SELECT count(*) FROM marts.day_coverage").fetchall()[0][0]


def mark_partial_days(con: duckdb.DuckDBPyConnection, table: str, day_column: str = "day") -> None:
    """Add (if missing) and set column ``partial`` of a daily mart ``table`` from ``marts.day_coverage``.

    Builds the coverage table first when it does not exist yet (a mart written before it in a test or
    a partial run). Every row is refreshed, not only the ones just written.
    """
    if not table_exists(con, "marts.day_coverage"):
        build_day_coverage(con)
    con.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS partial BOOLEAN")
    con.execute(f"""UPDATE {table} AS t SET partial = coalesce(
                        (SELECT c.partial FROM marts.day_coverage AS c WHERE c.day = t.{day_column}), TRUE)""")


def refresh_partial_flags(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Set ``partial`` of every daily mart that has the column from ``marts.day_coverage``; return their names.

    The daily marts are written per dirty day before the roll-up rebuilds the coverage, and a night
    with no changed day writes none of them: without this, yesterday's partial last day stayed
    partial in them after today's dump completed it (an incremental run's means differed from a
    one-shot run's).
    """
    tables = [f"marts.{t}" for (t,) in con.sql(
        "SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema = 'marts' AND column_name = 'partial' "
        "AND table_name <> 'day_coverage' AND table_name IN (SELECT table_name FROM information_schema.columns "
        "WHERE table_schema = 'marts' AND column_name = 'day') ORDER BY table_name").fetchall()]
    for table in tables:
        mark_partial_days(con, table)
    return tables


def complete_days(con: duckdb.DuckDBPyConnection) -> tuple[date | None, date | None]:
    """First and last complete day of the data (``None, None`` when no day is complete)."""
    if not table_exists(con, "marts.day_coverage"):
        build_day_coverage(con)
    first, last = con.sql("SELECT min(day), max(day) FROM marts.day_coverage WHERE NOT partial").fetchall()[0]
    return first, last


#: A calendar date in a landing path: ``2026-10-01`` or ``20261001``, not part of a longer number.
_PATH_DAY = re.compile(r"(?<!\d)(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


def named_day(source_file: str) -> date | None:
    """The day a landing file is for, as its path names it: the first valid date in the file name
    (``sacct/sacct_2026-10-01.psv``, the recommended nightly cut), else in its nearest folder that has one
    (``syslog/2026-10-01/gpu001.log``); None when no part of the path gives a date.

    >>> named_day("sacct/sacct_2026-10-01.psv"), named_day("syslog/20261001/gpu001.log"), named_day("sacct/all.psv")
    (datetime.date(2026, 10, 1), datetime.date(2026, 10, 1), None)
    """
    for part in reversed(PurePosixPath(source_file).parts):
        for found in _PATH_DAY.finditer(part):
            try:
                return date(*(int(g) for g in found.groups()))
            except ValueError:  # not a date (2026-13-40, a job id): try the next one
                continue
    return None


def loaded_file_days(con: duckdb.DuckDBPyConnection, source_kind: str) -> frozenset[date]:
    """The days that a *loaded* file of ``source_kind`` is named for (:func:`named_day`), whether or not it
    held records: a day among them without a record was read and found empty (an accounting dump of a
    maintenance day), not missing. The name's date is the dump's day as its site cut it (the cluster's
    local day for ``sacct -S yesterday``), compared with UTC days: an approximation east or west of UTC."""
    if not table_exists(con, "raw.ingested_files"):
        return frozenset()
    files = con.sql("SELECT source_file FROM raw.ingested_files WHERE source_kind = ? AND status = 'loaded'",
                    params=[source_kind]).fetchall()
    return frozenset(d for (f,) in files if (d := named_day(f)) is not None)
