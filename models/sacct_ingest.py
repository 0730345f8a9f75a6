"""Load sacct dumps from the landing directory into ``raw.*`` — incrementally and losslessly.

A file is the unit of ingestion: a file whose SHA-256 is unchanged since its last ingestion is
skipped, so a rerun over the same landing directory changes nothing. A changed file replaces all
of its earlier rows. Every record that cannot be parsed goes to ``raw.rejects`` with file, line and
reason; a file that is unusable as a whole (e.g. fixed-width ``sacct`` output) is recorded as
``refused``. Job ids whose records changed are queued in ``raw.sacct_dirty_jobs`` for core.jobs.

The caller owns the transaction (see :func:`gpusre.models.warehouse.transaction`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.ingest_ledger import FileIngest, file_sha256, known_files, record_file
from gpusre.models.sacct import SacctFormatError, parse_sacct_file

__all__ = ["SACCT_SUFFIXES", "discover_sacct_files", "ingest_sacct_files"]

#: File name endings accepted under ``landing/sacct/``.
SACCT_SUFFIXES: tuple[str, ...] = (".psv", ".txt", ".log", ".json", ".csv")


def discover_sacct_files(landing: Path) -> list[Path]:
    """All sacct dumps under ``landing/sacct`` (recursively), in a stable order."""
    root = landing / "sacct"
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(SACCT_SUFFIXES))


def _queue_dirty_jobs_of(con: duckdb.DuckDBPyConnection, source_file: str) -> None:
    con.execute(
        """INSERT INTO raw.sacct_dirty_jobs
           SELECT DISTINCT job_id FROM raw.sacct_records WHERE source_file = ?""",
        [source_file],
    )


def _replace_file_rows(con: duckdb.DuckDBPyConnection, source_file: str) -> None:
    # Jobs that only the old version of this file mentioned must be recomputed too.
    _queue_dirty_jobs_of(con, source_file)
    con.execute("DELETE FROM raw.sacct_records WHERE source_file = ?", [source_file])
    con.execute("DELETE FROM raw.rejects WHERE source_file = ?", [source_file])


class _BatchWriter:
    """Collects parsed records and rejects of many files and inserts them in large batches.

    One INSERT per file costs a fixed overhead (Arrow hand-over, DuckDB planning, compression
    of a small row group) that dominates for nightly files of a few thousand lines.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, max_rows: int = 200_000) -> None:
        self._con = con
        self._max_rows = max_rows
        self._records: list[pl.DataFrame] = []
        self._rejects: list[pl.DataFrame] = []
        self._rows = 0

    def add(self, records: pl.DataFrame, rejects: pl.DataFrame) -> None:
        if records.height:
            self._records.append(records)
        if rejects.height:
            self._rejects.append(rejects)
        self._rows += records.height + rejects.height
        if self._rows >= self._max_rows:
            self.flush()

    def flush(self) -> None:
        con = self._con
        if self._records:
            # Arrow's classic string layout converts faster into DuckDB than string views.
            batch = pl.concat(self._records, how="vertical").to_arrow(compat_level=pl.CompatLevel.oldest())
            con.register("_sacct_records_batch", batch)
            con.execute("INSERT INTO raw.sacct_records BY NAME SELECT * FROM _sacct_records_batch")
            con.execute(
                "INSERT INTO raw.sacct_dirty_jobs SELECT DISTINCT job_id FROM _sacct_records_batch"
            )
            con.unregister("_sacct_records_batch")
        if self._rejects:
            batch = pl.concat(self._rejects, how="vertical").to_arrow(compat_level=pl.CompatLevel.oldest())
            con.register("_sacct_rejects_batch", batch)
            con.execute(
                """INSERT INTO raw.rejects BY NAME
                   SELECT source_file, 'sacct' AS source_kind, line_no, raw, error, now() AS rejected_at
                   FROM _sacct_rejects_batch"""
            )
            con.unregister("_sacct_rejects_batch")
        self._records, self._rejects, self._rows = [], [], 0


def _ingest_one(
    con: duckdb.DuckDBPyConnection,
    writer: _BatchWriter,
    path: Path,
    source_file: str,
    *,
    seen_before: bool,
    timezone: str,
    fields: Sequence[str] | None,
    delimiter: str | None,
    cluster: str | None,
) -> FileIngest:
    try:
        parsed = parse_sacct_file(
            path, source_file, timezone=timezone, fields=fields, delimiter=delimiter, cluster=cluster
        )
    except SacctFormatError as exc:
        if seen_before:
            _replace_file_rows(con, source_file)
        con.execute(
            "INSERT INTO raw.rejects VALUES (?, 'sacct', 0, NULL, ?, now())", [source_file, str(exc)]
        )
        return FileIngest(source_file, "refused", error=str(exc))

    if seen_before:
        _replace_file_rows(con, source_file)
    writer.add(parsed.records, parsed.rejects)
    return FileIngest(source_file, "loaded", parsed.rows_read, parsed.records.height, parsed.rejects.height)


def ingest_sacct_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Ingest every new or changed sacct dump under ``landing/sacct`` (caller holds a transaction)."""
    known = known_files(con, "sacct")
    results: list[FileIngest] = []
    writer = _BatchWriter(con)
    paths = discover_sacct_files(landing)
    for index, path in enumerate(paths, start=1):
        source_file = path.relative_to(landing).as_posix()
        sha = file_sha256(path)
        if known.get(source_file) == sha:
            results.append(FileIngest(source_file, "unchanged"))
            continue
        result = _ingest_one(
            con, writer, path, source_file, seen_before=source_file in known,
            timezone=timezone, fields=fields, delimiter=delimiter, cluster=cluster,
        )
        record_file(con, "sacct", result, sha, path.stat().st_size)
        results.append(result)
        if progress:
            progress(f"sacct {index}/{len(paths)} {source_file}: {result.status}, "
                     f"{result.rows_loaded} loaded, {result.rows_rejected} rejected")
    writer.flush()
    # A dump removed from the landing directory keeps its rows: the warehouse is the archive and
    # landing directories are often pruned after ingestion.
    return results
