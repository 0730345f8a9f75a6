"""Tables kept per landing-file version, so a nightly step reads the new files, not the history.

Why: a table rebuilt from every raw record each night (node events, template statistics, the
per-day record counts of the coverage marts) costs time in proportion to the history — a year of
node logs is billions of lines. Each such table is instead a union of per-version parts: the rows
one version of one landing file contributes. A refresh (inside the caller's transaction) compares
the versions the ledger (``raw.ingested_files``) holds with those the table was built from
(``raw.summarized_versions``): the parts of versions no longer in the ledger are deleted (a
re-ingested or removed landing file), and the parts of versions not yet summarized are inserted,
read from their own lake files only (:func:`~gpusre.models.ingest.lake.version_files`). A table with
no bookkeeping yet (a warehouse from before) is emptied and rebuilt once. The result equals a full
rebuild over the ``raw.*`` views (``tests/test_version_summaries.py``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import duckdb

from gpusre.models.ingest.lake import (
    LakeTable,
    compacted_relation_sql,
    compacted_version_files,
    files_relation_sql,
    lake_of,
    reads_lake,
    version_files,
    version_stem,
)

__all__ = ["VersionSummary", "refresh_version_summary", "version_changes"]

#: Landing files read per INSERT: bounds the memory of the first build over a long history.
FILES_PER_BATCH = 2000


@dataclass(frozen=True)
class VersionSummary:
    """A table maintained per landing-file version of one source.

    ``table``: the target table (it has a ``source_file`` column; created by the DDL);
    ``source``: the ``source_kind`` whose ledger versions feed it; ``lake``: that source's lake
    table; ``select``: a query producing the target's columns, in order, from the relation
    ``rows`` (the columns of the ``raw.<lake table>`` view, restricted to the new versions' files);
    ``scope``: the SQL condition on the target's rows that came from this source (a table fed by
    several sources tells them apart)."""

    table: str
    source: str
    lake: LakeTable
    select: str
    scope: str = "TRUE"

    @property
    def key(self) -> str:
        """Its name in ``raw.summarized_versions``: ``<table>:<source>:<definition>`` (one table may hold
        several sources; ``<definition>`` fingerprints ``select`` and ``scope``, so parts built by an older
        definition — an upgrade that changed what a record's time is — are rebuilt, not kept)."""
        digest = hashlib.sha1(f"{self.select}\n{self.scope}".encode()).hexdigest()[:12]
        return f"{self.table}:{self.source}:{digest}"


def _has_bookkeeping(con: duckdb.DuckDBPyConnection, summary: VersionSummary) -> bool:
    """Whether ``raw.summarized_versions`` records any version as summarized by this definition."""
    return bool(con.execute("SELECT count(*) FROM raw.summarized_versions WHERE summary = ?",
                            [summary.key]).fetchall()[0][0])


def _stale_files(con: duckdb.DuckDBPyConnection, summary: VersionSummary) -> list[str]:
    """The landing files whose part in ``summary.table`` is of a version the ledger no longer holds."""
    return [r[0] for r in con.execute(
        """SELECT s.source_file FROM raw.summarized_versions AS s
           WHERE s.summary = ? AND NOT EXISTS (SELECT 1 FROM raw.ingested_files AS f
                 WHERE f.source_file = s.source_file AND f.sha256 = s.sha256 AND f.source_kind = ?)""",
        [summary.key, summary.source]).fetchall()]


def _pending_versions(con: duckdb.DuckDBPyConnection, summary: VersionSummary) -> list[tuple[str, str]]:
    """``(source_file, sha256)`` of the ledger's versions ``summary.table`` has no part of yet."""
    return [(f, sha) for f, sha in con.execute(
        """SELECT f.source_file, f.sha256 FROM raw.ingested_files AS f
           WHERE f.source_kind = ? AND NOT EXISTS (SELECT 1 FROM raw.summarized_versions AS s
                 WHERE s.summary = ? AND s.source_file = f.source_file)
           ORDER BY f.source_file""", [summary.source, summary.key]).fetchall()]


def version_changes(con: duckdb.DuckDBPyConnection, summary: VersionSummary) -> tuple[list[str], list[str]] | None:
    """What :func:`refresh_version_summary` is about to change in ``summary.table``: the landing files whose
    rows it will remove (their version left the ledger) and those whose rows it will insert; None when it
    will rebuild the table's rows of this source whole (no bookkeeping of this definition, or no lake)."""
    if not reads_lake(con, summary.lake.name) or not _has_bookkeeping(con, summary):
        return None
    return _stale_files(con, summary), [f for f, _ in _pending_versions(con, summary)]


def refresh_version_summary(con: duckdb.DuckDBPyConnection, summary: VersionSummary) -> tuple[int, int]:
    """Bring ``summary.table`` in step with the ledger; return (versions removed, versions added).
    Call it inside a transaction (a kill leaves the table and its bookkeeping as they were)."""
    key = summary.key
    if not reads_lake(con, summary.lake.name):
        # Bare DDL (rows inserted into lake.<table> by hand, no ledger): nothing to go by but a full rebuild.
        con.execute(f"DELETE FROM {summary.table} WHERE {summary.scope}")
        con.execute(f"INSERT INTO {summary.table} WITH rows AS (SELECT * FROM raw.{summary.lake.name}) {summary.select}")
        return 0, 0
    if not _has_bookkeeping(con, summary):
        # Built before the bookkeeping existed, by another definition, or never: this source's rows are
        # rebuilt once, and the bookkeeping of older definitions goes.
        con.execute(f"DELETE FROM {summary.table} WHERE {summary.scope}")
        con.execute("DELETE FROM raw.summarized_versions WHERE split_part(summary, ':', 1) = ? "
                    "AND split_part(summary, ':', 2) = ?", [summary.table, summary.source])
    stale = _stale_files(con, summary)
    if stale:
        con.execute(f"DELETE FROM {summary.table} WHERE source_file IN (SELECT unnest(?))", [stale])
        con.execute("DELETE FROM raw.summarized_versions WHERE summary = ? AND source_file IN (SELECT unnest(?))",
                    [key, stale])
    pending = _pending_versions(con, summary)
    if not pending:
        return len(stale), 0
    # A version a compaction merged is read from its compacted files (a summary built anew
    # after the compaction: a new table, or one emptied above).
    compacted, stems = compacted_version_files(con, summary.lake.name, pending)
    merged = set(stems)
    own = [v for v in pending if version_stem(*v) not in merged]
    files = [p.as_posix() for p in version_files(lake_of(con), summary.lake.name, own)]
    rows = files_relation_sql(con, summary.lake, "$files")
    for start in range(0, len(files), FILES_PER_BATCH):
        con.execute(f"INSERT INTO {summary.table} WITH rows AS ({rows}) {summary.select}",
                    {"files": files[start:start + FILES_PER_BATCH]})
    if compacted:
        rows = compacted_relation_sql(con, summary.lake, "$files", "$stems")
        for start in range(0, len(compacted), FILES_PER_BATCH):
            con.execute(f"INSERT INTO {summary.table} WITH rows AS ({rows}) {summary.select}",
                        {"files": compacted[start:start + FILES_PER_BATCH], "stems": stems})
    con.execute("INSERT INTO raw.summarized_versions SELECT ?, unnest(?), unnest(?)",
                [key, [f for f, _ in pending], [sha for _, sha in pending]])
    return len(stale), len(pending)
