"""Load sacct dumps from the landing directory into ``raw.*`` — incrementally and losslessly.

A file is the unit of ingestion: a file whose SHA-256 is unchanged since its last ingestion is
skipped, so a rerun over the same landing directory changes nothing. A changed file replaces all
of its earlier rows. Every record that cannot be parsed goes to ``raw.rejects`` with file, line and
reason; a file that is unusable as a whole (e.g. fixed-width ``sacct`` output) is recorded as
``refused``. Job ids whose records changed are queued in ``raw.sacct_dirty_jobs`` for core.jobs.

:func:`load_sacct_files` writes inside the caller's transaction (so a crash leaves the warehouse as
it was); :func:`ingest_sacct_files` wraps it in one. Rows are appended straight to
``raw.sacct_records`` in batches, on a writer thread while the next batch is parsed: DuckDB writes a
large transaction's appended row groups to the database file as it goes, so memory stays bounded
(a simulated year, 4.5 M records in one transaction: see README, Benchmarks), and there is no
staging copy (a staged year cost a second full write of every record).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.background_writer import BackgroundWriter
from gpusre.models.ingest_ledger import FileIngest, known_files, record_file
from gpusre.models.sacct import (
    REJECT_SCHEMA,
    SacctFormatError,
    SacctParseResult,
    SacctTextDump,
    SplitLayout,
    is_json_dump,
    parse_sacct_json_bytes,
    read_sacct_text,
    type_sacct_dumps,
)
from gpusre.models.slurm_values import check_timezone
from gpusre.models.warehouse import append_arrow, transaction

__all__ = ["SACCT_SUFFIXES", "TYPE_BATCH_LINES", "discover_sacct_files", "ingest_sacct_files", "load_sacct_files"]

#: File name endings accepted under ``landing/sacct/``.
SACCT_SUFFIXES: tuple[str, ...] = (".psv", ".txt", ".log", ".json", ".csv")
#: Text dumps are typed together in batches of about this many lines (bounded memory; most of a
#: small nightly dump's parse cost is per Polars pass, not per line).
TYPE_BATCH_LINES = 250_000


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


def _write_parsed(con: duckdb.DuckDBPyConnection, parsed: SacctParseResult) -> None:
    """Append one parsed batch: records, their job ids to the dirty queue, rejects."""
    arrow = pl.CompatLevel.oldest()  # Arrow's classic string layout converts faster than views
    if parsed.records.height:
        append_arrow(con, "raw.sacct_records", parsed.records.to_arrow(compat_level=arrow))
        append_arrow(con, "raw.sacct_dirty_jobs", parsed.records.select(pl.col("job_id").unique()).to_arrow())
    if parsed.rejects.height:
        append_arrow(con, "raw.rejects", parsed.rejects.to_arrow(compat_level=arrow),
                     "source_file, 'sacct' AS source_kind, line_no, raw, error, now() AS rejected_at")


def load_sacct_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    fields: Sequence[str] | None = None,
    delimiter: str | None = None,
    cluster: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Load every new or changed dump under ``landing/sacct`` into raw.*, inside the caller's
    transaction: replaced files' old rows deleted (their jobs queued), records, rejects, dirty job
    ids and ledger rows written. Returns one :class:`FileIngest` per file found.
    """
    check_timezone(timezone)
    known = known_files(con, "sacct")
    paths = discover_sacct_files(landing)
    results: list[FileIngest] = []
    ledger: list[tuple[FileIngest, str, int]] = []
    # Text dumps read but not yet split and typed, grouped by layout; (file, sha, size) in order.
    pending: dict[SplitLayout, list[SacctTextDump]] = {}
    pending_files: list[tuple[str, str, int]] = []
    pending_lines = 0

    # Inserts run on a writer thread while this thread parses the next batch (see
    # models/background_writer.py); leaving it waits for them, before the caller's rollback.
    with BackgroundWriter("sacct-writer") as writer:

        def submit(parsed: SacctParseResult) -> None:
            writer.drain()  # at most one batch being written while the next one is parsed
            writer.submit(_write_parsed, con, parsed)

        def finish(source_file: str, result: FileIngest, sha: str, size: int, index: int) -> None:
            ledger.append((result, sha, size))
            results.append(result)
            if progress:
                progress(f"sacct {index}/{len(paths)} {source_file}: {result.status}, "
                         f"{result.rows_loaded} loaded, {result.rows_rejected} rejected")

        def type_pending(index: int) -> None:
            nonlocal pending_lines
            loaded: dict[str, int] = {}
            rejected: dict[str, int] = {}
            for group in pending.values():
                parsed = type_sacct_dumps(group, timezone=timezone, cluster=cluster)
                for counts, frame in ((loaded, parsed.records), (rejected, parsed.rejects)):
                    for name, n in frame.group_by("source_file").len().iter_rows():
                        counts[name] = n
                submit(parsed)
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
                results.append(FileIngest(source_file, "unchanged"))
                continue
            if source_file in known:
                # Queued before any of the file's new rows (those are still pending here).
                writer.submit(_replace_file_rows, con, source_file)
            is_json = is_json_dump(path, data)
            try:
                if is_json:  # whole jobs[] documents: parsed on their own
                    parsed = parse_sacct_json_bytes(data, source_file, cluster=cluster)
                else:
                    dump = read_sacct_text(data, source_file, fields=fields, delimiter=delimiter)
            except SacctFormatError as exc:
                refused = pl.DataFrame({"source_file": [source_file], "line_no": [0], "raw": [None],
                                        "error": [str(exc)]}, schema=REJECT_SCHEMA)
                submit(SacctParseResult(pl.DataFrame(), refused, 0))
                finish(source_file, FileIngest(source_file, "refused", error=str(exc)), sha, len(data), index)
                continue
            if is_json:
                submit(parsed)
                finish(source_file, FileIngest(source_file, "loaded", parsed.rows_read, parsed.records.height,
                                               parsed.rejects.height), sha, len(data), index)
                continue
            pending.setdefault(dump.layout, []).append(dump)
            pending_files.append((source_file, sha, len(data)))
            pending_lines += dump.lines.height
            if pending_lines >= TYPE_BATCH_LINES:
                type_pending(index)
        type_pending(len(paths))
        writer.drain()
    for result, sha, size in ledger:
        record_file(con, "sacct", result, sha, size)
    return results


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
    """:func:`load_sacct_files` in one transaction: a crash or error leaves the warehouse as it was.

    Call it outside a transaction. A dump removed from the landing directory keeps its rows: the
    warehouse is the archive, and landing directories are often pruned after ingestion.
    """
    with transaction(con):
        return load_sacct_files(con, landing, timezone=timezone, fields=fields, delimiter=delimiter,
                                cluster=cluster, progress=progress)
