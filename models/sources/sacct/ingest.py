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

from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.ingest.background_writer import BackgroundWriter
from gpusre.models.ingest.ledger import FileIngest, ignored_results, known_files, log_parse_crash, record_file
from gpusre.models.ingest.lake import file_set, lake_of, remove_unlisted_files, write_file_sets
from gpusre.models.ingest.landing_files import SourceScan, read_landing_file, scan_source, strip_compression
from gpusre.models.sources.sacct.parse import (
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
from gpusre.models.ingest.slurm_values import check_timezone
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import append_arrow, transaction

__all__ = ["SACCT_SUFFIXES", "TYPE_BATCH_LINES", "discover_sacct_files", "ingest_sacct_files", "load_sacct_files",
           "scan_sacct_files"]

#: File name endings accepted under ``landing/sacct/``.
SACCT_SUFFIXES: tuple[str, ...] = (".psv", ".txt", ".log", ".json", ".csv")
#: Text dumps are typed together in batches of about this many lines (bounded memory; most of a
#: small nightly dump's parse cost is per Polars pass, not per line).
TYPE_BATCH_LINES = 250_000
#: The lake table of sacct records (raw.sacct_records).
SACCT_LAKE = lake_table("sacct")


def _sacct_name(name: str) -> str | None:
    """None for a sacct dump name (compression suffix already stripped), else why it is ignored."""
    if name.endswith(SACCT_SUFFIXES):
        return None
    return f"not a sacct dump name (expected {', '.join('*' + s for s in SACCT_SUFFIXES)}; .gz/.bz2/.xz ok)"


def scan_sacct_files(landing: Path) -> SourceScan:
    """The dumps under ``landing/sacct`` (recursively, stable order; compressed ones too) and the
    files ignored there, with the reason."""
    return scan_source(landing, "sacct", _sacct_name)


def discover_sacct_files(landing: Path) -> list[Path]:
    """All sacct dumps under ``landing/sacct`` (recursively), in a stable order."""
    return scan_sacct_files(landing).files


def _replace_file_rows(con: duckdb.DuckDBPyConnection, lake: Path, source_file: str, old_sha: str) -> None:
    """Before a changed dump's new rows: queue every job its old version mentioned (those only it
    mentioned must be recomputed too) and drop its rejects; its old lake files stay visible until
    the ledger commits the new version, and are deleted after that."""
    old_files = file_set(lake, SACCT_LAKE.name, source_file, old_sha)
    if old_files:
        con.execute("INSERT INTO raw.sacct_dirty_jobs SELECT DISTINCT job_id FROM read_parquet(?)",
                    [[p.as_posix() for p in old_files]])
    con.execute("DELETE FROM raw.rejects WHERE source_file = ?", [source_file])


def _write_parsed(con: duckdb.DuckDBPyConnection, lake: Path, versions: dict[str, str],
                  parsed: SacctParseResult) -> None:
    """Write one parsed batch (whole dumps): each dump's records as its lake file set, their job
    ids to the dirty queue, rejects."""
    arrow = pl.CompatLevel.oldest()  # Arrow's classic string layout converts faster than views
    if parsed.records.height:
        write_file_sets(lake, SACCT_LAKE, parsed.records, versions)
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
    lake = lake_of(con)
    known = known_files(con, "sacct")
    versions: dict[str, str] = {}  # source_file -> sha256 of the dumps read in this run
    scan = scan_sacct_files(landing)
    paths = scan.files
    results: list[FileIngest] = []
    ledger: list[tuple[FileIngest, str, int]] = ignored_results(scan.ignored)
    results.extend(result for result, _, _ in ledger)
    # Text dumps read but not yet split and typed, grouped by layout; (file, sha, size, fault) in order.
    pending: dict[SplitLayout, list[SacctTextDump]] = {}
    pending_files: list[tuple[str, str, int, str | None]] = []
    pending_lines = 0
    crashed: dict[str, str] = {}  # text dumps whose typing failed: the reason

    # Inserts run on a writer thread while this thread parses the next batch (see
    # models/ingest/background_writer.py); leaving it waits for them, before the caller's rollback.
    with BackgroundWriter("sacct-writer") as writer:

        def submit(parsed: SacctParseResult) -> None:
            writer.drain()  # at most one batch being written while the next one is parsed
            writer.submit(_write_parsed, con, lake, versions, parsed)

        def finish(source_file: str, result: FileIngest, sha: str, size: int, index: int) -> None:
            ledger.append((result, sha, size))
            results.append(result)
            if progress:
                progress(f"sacct {index}/{len(paths)} {source_file}: {result.status}, "
                         f"{result.rows_loaded} loaded, {result.rows_rejected} rejected")

        def refuse(source_file: str, reason: str, sha: str, size: int, index: int) -> None:
            """The whole file is refused: one line-0 reject, no records."""
            submit(SacctParseResult(pl.DataFrame(), _file_reject(source_file, reason), 0))
            finish(source_file, FileIngest(source_file, "refused", error=reason), sha, size, index)

        def loaded(source_file: str, n_ok: int, n_bad: int,
                   fault: str | None, sha: str, size: int, index: int) -> None:
            """Records loaded; a file read only up to a fault is refused all the same (its line-0
            reject says why), though the complete records before the fault are kept."""
            if fault:
                submit(SacctParseResult(pl.DataFrame(), _file_reject(source_file, fault), 0))
            result = FileIngest(source_file, "refused" if fault else "loaded", n_ok + n_bad, n_ok, n_bad, fault)
            finish(source_file, result, sha, size, index)

        def type_group(group: list[SacctTextDump]) -> list[SacctParseResult]:
            """Type dumps together; when that fails, one by one, so only the bad dump is refused."""
            try:
                return [type_sacct_dumps(group, timezone=timezone, cluster=cluster)]
            except Exception:  # noqa: BLE001 - a parser bug on one file must not cost the others
                if len(group) == 1:
                    raise
            out: list[SacctParseResult] = []
            for dump in group:
                try:
                    out.append(type_sacct_dumps([dump], timezone=timezone, cluster=cluster))
                except Exception as exc:  # noqa: BLE001
                    reason = log_parse_crash(dump.source_file, exc)
                    out.append(SacctParseResult(pl.DataFrame(), _file_reject(dump.source_file, reason), 0))
                    crashed[dump.source_file] = reason
            return out

        def type_pending(index: int) -> None:
            nonlocal pending_lines
            n_loaded: dict[str, int] = {}
            n_rejected: dict[str, int] = {}
            for group in pending.values():
                try:
                    typed = type_group(group)
                except Exception as exc:  # noqa: BLE001 - a single dump whose typing failed
                    source_file = group[0].source_file
                    crashed[source_file] = reason = log_parse_crash(source_file, exc)
                    typed = [SacctParseResult(pl.DataFrame(), _file_reject(source_file, reason), 0)]
                for parsed in typed:
                    for counts, frame in ((n_loaded, parsed.records), (n_rejected, parsed.rejects)):
                        if frame.height:
                            for name, n in frame.filter(pl.col("line_no") > 0).group_by("source_file").len().iter_rows():
                                counts[name] = n
                    submit(parsed)
            for source_file, sha, size, fault in pending_files:
                if source_file in crashed:
                    finish(source_file, FileIngest(source_file, "refused", error=crashed.pop(source_file)),
                           sha, size, index)
                    continue
                loaded(source_file, n_loaded.get(source_file, 0), n_rejected.get(source_file, 0), fault,
                       sha, size, index)
            pending.clear()
            pending_files.clear()
            pending_lines = 0

        for index, path in enumerate(paths, start=1):
            source_file = path.relative_to(landing).as_posix()
            read = read_landing_file(path)
            sha, size = read.sha256, read.size
            if sha and known.get(source_file) == sha:
                results.append(FileIngest(source_file, "unchanged"))
                continue
            versions[source_file] = sha
            if source_file in known:
                # Queued before any of the file's new rows (those are still pending here).
                writer.submit(_replace_file_rows, con, lake, source_file, known[source_file])
            if read.fault and not read.data.strip():
                refuse(source_file, read.fault, sha, size, index)
                continue
            try:
                if is_json_dump(Path(strip_compression(path.name)), read.data):  # whole jobs[] documents
                    parsed = parse_sacct_json_bytes(read.data, source_file, cluster=cluster)
                    submit(parsed)
                    loaded(source_file, parsed.records.height, parsed.rejects.height, read.fault,
                           sha, size, index)
                    continue
                dump = read_sacct_text(read.data, source_file, fields=fields, delimiter=delimiter)
            except SacctFormatError as exc:  # the read fault, if any, is the real reason (a cut JSON)
                refuse(source_file, read.fault or str(exc), sha, size, index)
                continue
            except Exception as exc:  # noqa: BLE001 - any parser failure refuses this file only
                refuse(source_file, read.fault or log_parse_crash(source_file, exc), sha, size, index)
                continue
            pending.setdefault(dump.layout, []).append(dump)
            pending_files.append((source_file, sha, size, read.fault))
            pending_lines += dump.lines.height
            if pending_lines >= TYPE_BATCH_LINES:
                type_pending(index)
        type_pending(len(paths))
        writer.drain()
    for result, sha, size in ledger:
        record_file(con, "sacct", result, sha, size)
    return results


def _file_reject(source_file: str, reason: str) -> pl.DataFrame:
    """The line-0 reject of a file refused (whole, or past a fault)."""
    return pl.DataFrame({"source_file": [source_file], "line_no": [0], "raw": [None], "error": [reason]},
                        schema=REJECT_SCHEMA)


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
        results = load_sacct_files(con, landing, timezone=timezone, fields=fields, delimiter=delimiter,
                                   cluster=cluster, progress=progress)
    remove_unlisted_files(con, lake_of(con), SACCT_LAKE.name)
    return results
