"""Load sacct dumps from the landing directory into ``raw.*`` — incrementally and losslessly.

A file is the unit of ingestion: a file whose SHA-256 is unchanged since its last ingestion is
skipped, so a rerun over the same landing directory changes nothing. A changed file replaces all
of its earlier rows. Every record that cannot be parsed goes to ``raw.rejects`` with file, line and
reason; a file that is unusable as a whole (e.g. fixed-width ``sacct`` output) is recorded as
``refused``. Job ids whose records changed are queued in ``raw.sacct_dirty_jobs`` for core.jobs.

Two steps: :func:`stage_sacct_files` parses into staging — Parquet files in a temporary directory
and a TEMP table (bounded memory, warehouse untouched) — and :func:`publish_staged_sacct` moves
everything in one transaction; :func:`ingest_sacct_files` does both and removes the staging.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.ingest_ledger import FileIngest, known_files, record_file
from gpusre.models.sacct import (
    SacctFormatError,
    SacctTextFields,
    is_json_dump,
    parse_sacct_file,
    split_sacct_text,
    type_sacct_fields,
)
from gpusre.models.slurm_values import check_timezone
from gpusre.models.warehouse import transaction

__all__ = [
    "SACCT_SUFFIXES", "StagedSacct", "discover_sacct_files", "drop_staging", "ingest_sacct_files",
    "publish_staged_sacct", "stage_sacct_files",
]

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
    """Collects parsed records and rejects of many files and writes them out in large batches:
    records as Parquet files in a staging directory, rejects to a TEMP table.

    Staging outside the publishing transaction bounds memory: DuckDB keeps a transaction's
    appended rows in transaction-local storage (a year of dumps in one transaction peaked at
    4 GB RSS). Parquet staging costs less than a TEMP table: Polars writes it natively in
    parallel (no Arrow conversion), and a year of dumps no longer spills the TEMP table past
    ``memory_limit``; DuckDB then reads the files in parallel when publishing.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, staging_dir: Path, max_rows: int = 200_000) -> None:
        self._con = con
        self._dir = staging_dir
        self._max_rows = max_rows
        self._records: list[pl.DataFrame] = []
        self._rejects: list[pl.DataFrame] = []
        self._rows = 0
        self.parquet_files: list[Path] = []

    def add(self, records: pl.DataFrame, rejects: pl.DataFrame) -> None:
        if records.height:
            self._records.append(records)
        if rejects.height:
            self._rejects.append(rejects)
        self._rows += records.height + rejects.height
        if self._rows >= self._max_rows:
            self.flush()

    def flush(self) -> None:
        if self._records:
            path = self._dir / f"records-{len(self.parquet_files):05d}.parquet"
            # lz4: the files live for one run; speed matters more than size.
            pl.concat(self._records, how="vertical").write_parquet(path, compression="lz4", statistics=False)
            self.parquet_files.append(path)
        if self._rejects:
            batch = pl.concat(self._rejects, how="vertical").to_arrow(compat_level=pl.CompatLevel.oldest())
            self._con.register("_sacct_rejects_batch", batch)
            self._con.execute(
                f"""INSERT INTO {_STAGE_REJECTS} BY NAME
                    SELECT source_file, 'sacct' AS source_kind, line_no, raw, error, now() AS rejected_at
                    FROM _sacct_rejects_batch"""
            )
            self._con.unregister("_sacct_rejects_batch")
        self._records, self._rejects, self._rows = [], [], 0


_STAGE_REJECTS = "_stage_sacct_rejects"


@dataclass
class StagedSacct:
    """Files parsed and staged (records in Parquet files, rejects in a TEMP table), waiting for
    :func:`publish_staged_sacct`; :func:`drop_staging` frees both."""

    staging_dir: Path
    record_files: list[Path] = field(default_factory=list)
    results: list[FileIngest] = field(default_factory=list)
    ledger: list[tuple[FileIngest, str, int]] = field(default_factory=list)  # (result, sha256, size)
    replaced: list[str] = field(default_factory=list)  # files ingested before whose rows are replaced


#: Text dumps are typed together in batches of about this many lines (bounded memory; most of a
#: small nightly dump's parse cost is per Polars pass, not per line).
TYPE_BATCH_LINES = 250_000


def stage_sacct_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> StagedSacct:
    """Parse every new or changed sacct dump into staging (a temporary directory of Parquet files
    and a TEMP table); the warehouse is untouched. Free it with :func:`drop_staging`.

    Must run outside a transaction (the staging appends commit as they go, into TEMP tables only).
    """
    check_timezone(timezone)
    known = known_files(con, "sacct")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_REJECTS} AS SELECT * FROM raw.rejects LIMIT 0")
    staged = StagedSacct(Path(tempfile.mkdtemp(prefix="gpusre-sacct-staging-")))
    writer = _BatchWriter(con, staged.staging_dir)
    paths = discover_sacct_files(landing)
    # Text dumps split but not yet typed, grouped by their field set; (file, sha, size) in order.
    pending: dict[frozenset[str], list[SacctTextFields]] = {}
    pending_files: list[tuple[str, str, int]] = []
    pending_lines = 0

    def finish(source_file: str, result: FileIngest, sha: str, size: int, index: int) -> None:
        staged.ledger.append((result, sha, size))
        staged.results.append(result)
        if progress:
            progress(f"sacct {index}/{len(paths)} {source_file}: {result.status}, "
                     f"{result.rows_loaded} loaded, {result.rows_rejected} rejected")

    def type_pending(index: int) -> None:
        nonlocal pending_lines
        loaded: dict[str, int] = {}
        rejected: dict[str, int] = {}
        for group in pending.values():
            parsed = type_sacct_fields(group, timezone=timezone, cluster=cluster)
            writer.add(parsed.records, parsed.rejects)
            for counts, frame in ((loaded, parsed.records), (rejected, parsed.rejects)):
                for name, n in frame.group_by("source_file").len().iter_rows():
                    counts[name] = n
        for source_file, sha, size in pending_files:
            n_ok, n_bad = loaded.get(source_file, 0), rejected.get(source_file, 0)
            finish(source_file, FileIngest(source_file, "loaded", n_ok + n_bad, n_ok, n_bad), sha, size, index)
        pending.clear()
        pending_files.clear()
        pending_lines = 0

    for index, path in enumerate(paths, start=1):
        source_file = path.relative_to(landing).as_posix()
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        if known.get(source_file) == sha:
            staged.results.append(FileIngest(source_file, "unchanged"))
            continue
        if source_file in known:
            staged.replaced.append(source_file)
        is_json = is_json_dump(path, data)
        try:
            if is_json:  # whole jobs[] documents: parsed on their own
                parsed = parse_sacct_file(path, source_file, timezone=timezone, cluster=cluster)
            else:
                split = split_sacct_text(data, source_file, fields=fields, delimiter=delimiter)
        except SacctFormatError as exc:
            con.execute(f"INSERT INTO {_STAGE_REJECTS} VALUES (?, 'sacct', 0, NULL, ?, now())",
                        [source_file, str(exc)])
            finish(source_file, FileIngest(source_file, "refused", error=str(exc)), sha, len(data), index)
            continue
        if is_json:
            writer.add(parsed.records, parsed.rejects)
            finish(source_file, FileIngest(source_file, "loaded", parsed.rows_read, parsed.records.height,
                                           parsed.rejects.height), sha, len(data), index)
            continue
        pending.setdefault(split.present, []).append(split)
        pending_files.append((source_file, sha, len(data)))
        pending_lines += split.fields.height + split.count_rejects.height
        if pending_lines >= TYPE_BATCH_LINES:
            type_pending(index)
    type_pending(len(paths))
    writer.flush()
    staged.record_files = writer.parquet_files
    return staged


def publish_staged_sacct(con: duckdb.DuckDBPyConnection, staged: StagedSacct) -> None:
    """Move staged rows into raw.*, replace re-ingested files' rows, queue changed jobs, write the
    ledger — inside the caller's transaction, so a crash leaves the warehouse as it was."""
    for source_file in staged.replaced:
        _replace_file_rows(con, source_file)
    if staged.record_files:
        quoted = (p.as_posix().replace("'", "''") for p in staged.record_files)
        files = "[" + ", ".join(f"'{q}'" for q in quoted) + "]"
        con.execute(f"INSERT INTO raw.sacct_records BY NAME SELECT * FROM read_parquet({files})")
        con.execute(f"INSERT INTO raw.sacct_dirty_jobs SELECT DISTINCT job_id FROM read_parquet({files})")
    con.execute(f"INSERT INTO raw.rejects SELECT * FROM {_STAGE_REJECTS}")
    for result, sha, size in staged.ledger:
        record_file(con, "sacct", result, sha, size)


def drop_staging(con: duckdb.DuckDBPyConnection, staged: StagedSacct) -> None:
    """Free the staging directory and TEMP table (the table also vanishes with the connection)."""
    con.execute(f"DROP TABLE IF EXISTS {_STAGE_REJECTS}")
    shutil.rmtree(staged.staging_dir, ignore_errors=True)


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
    """Stage, then publish in one transaction, every new or changed dump under ``landing/sacct``.

    Call it outside a transaction. A dump removed from the landing directory keeps its rows: the
    warehouse is the archive, and landing directories are often pruned after ingestion.
    """
    staged = stage_sacct_files(con, landing, timezone=timezone, fields=fields, delimiter=delimiter,
                               cluster=cluster, progress=progress)
    try:
        with transaction(con):
            publish_staged_sacct(con, staged)
    finally:
        drop_staging(con, staged)
    return staged.results
