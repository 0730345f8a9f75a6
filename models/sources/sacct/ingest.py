"""Load sacct dumps from the landing directory into ``raw.*`` — incrementally and losslessly.

A file is the unit of ingestion: a file whose SHA-256 is unchanged since its last ingestion is
skipped, so a rerun over the same landing directory changes nothing. A changed file replaces all
of its earlier rows. Every record that cannot be parsed goes to ``raw.rejects`` with file, line and
reason; a file that is unusable as a whole (e.g. fixed-width ``sacct`` output) is recorded as
``refused``. Job ids whose records changed are queued in ``raw.sacct_dirty_jobs`` for core.jobs.

Three steps (:mod:`gpusre.models.ingest.staging`), so that parsing runs in several processes:
:func:`plan_sacct` (reads the ledger, splits the dumps into shards), :func:`parse_sacct_shard` (no
warehouse: writes each dump's records to the Parquet lake, invisible until published, and stages
its rejects) and :func:`publish_sacct` (one DuckDB transaction: rejects, ledger rows and the job ids
of new and replaced records queued in ``raw.sacct_dirty_jobs``); :func:`publish_sacct_rows` is the
publish inside a caller's transaction. :func:`ingest_sacct_files` runs the three in this process. In a parse step, lake files are written on a writer
thread while the next batch is parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.ingest.background_writer import BackgroundWriter
from gpusre.models.ingest.ledger import FileIngest, log_parse_crash
from gpusre.models.ingest.lake import remove_unlisted_files, version_files, write_file_sets
from gpusre.models.ingest.staging import (IngestPlan, StagedFile, clear_staged, plan_ingest, publish_files,
                                          write_staged)
from gpusre.models.ingest.landing_files import SourceScan, read_landing_file, scan_source, strip_compression
from gpusre.models.sources.sacct.parse import (
    REJECT_SCHEMA,
    SacctFormatError,
    SacctParseResult,
    SacctTextDump,
    SplitLayout,
    is_json_dump,
    parse_sacct_json_bytes,
    read_sacct_dumps,
    type_sacct_dumps,
)
from gpusre.models.ingest.slurm_values import check_timezone
from gpusre.models.sources.registry import lake_table
from gpusre.models.warehouse import transaction

__all__ = ["SACCT_SUFFIXES", "TYPE_BATCH_LINES", "discover_sacct_files", "ingest_sacct_files",
           "parse_sacct_shard", "plan_sacct", "publish_sacct", "publish_sacct_rows", "scan_sacct_files"]

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


def _queue_jobs(con: duckdb.DuckDBPyConnection, lake: Path, plan: IngestPlan, staged: list[StagedFile]) -> None:
    """Queue the job ids of every record the parse steps wrote (read back from their lake files),
    with their dump: core.jobs merges these new records; and of every record a re-read dump's old
    version held, without a dump: those jobs may have lost or changed records, and are rebuilt
    from all of them. The old lake files stay until the ledger commits the new version."""
    new = [(s.result.source_file, s.sha256) for s in staged if s.result.rows_loaded]
    old = [(s.result.source_file, plan.known[s.result.source_file]) for s in staged
           if s.result.status != "unchanged" and s.result.source_file in plan.known]
    # One listing of the lake table per kind (a listing per file cost one per dump).
    for versions, columns in ((new, "job_id, source_file"), (old, "job_id, NULL")):
        paths = [p.as_posix() for p in version_files(lake, SACCT_LAKE.name, versions)] if versions else []
        if paths:
            con.execute(f"INSERT INTO raw.sacct_dirty_jobs SELECT DISTINCT {columns} FROM read_parquet(?)", [paths])


def plan_sacct(con: duckdb.DuckDBPyConnection, landing: Path, *, shards: int = 1, timezone: str = "UTC",
               fields: Sequence[str] | None = None, delimiter: str | None = None,
               cluster: str | None = None) -> IngestPlan:
    """The plan of a sacct ingest (reads the ledger): dumps split into ``shards`` parse steps."""
    check_timezone(timezone)
    return plan_ingest(con, landing, "sacct", scan_sacct_files(landing), shards, {
        "timezone": timezone, "fields": tuple(fields) if fields else None, "delimiter": delimiter,
        "cluster": cluster})


def parse_sacct_shard(plan: IngestPlan, shard: int, progress: Callable[[str], None] | None = None) -> list[StagedFile]:
    """Parse the new or changed dumps of one shard into the lake (invisible until published) and
    stage their rejects; no warehouse connection. Safe in any process."""
    landing, lake = Path(plan.landing), Path(plan.lake)
    timezone, cluster = plan.settings["timezone"], plan.settings["cluster"]
    fields, delimiter = plan.settings["fields"], plan.settings["delimiter"]
    files = plan.shards[shard]
    versions: dict[str, str] = {}  # source_file -> sha256 of the dumps read in this run
    out: list[StagedFile] = []
    # Text dumps read but not yet split and typed, grouped by layout; (file, sha, size, fault) in order.
    pending: dict[SplitLayout, list[SacctTextDump]] = {}
    pending_files: list[tuple[str, str, int, str | None]] = []
    pending_lines = 0
    crashed: dict[str, str] = {}  # text dumps whose typing failed: the reason
    batch_no = 0

    with BackgroundWriter("sacct-writer") as writer:

        def submit(parsed: SacctParseResult) -> None:
            nonlocal batch_no
            writer.drain()  # at most one batch being written while the next one is parsed
            if parsed.records.height:
                writer.submit(write_file_sets, lake, SACCT_LAKE, parsed.records, dict(versions))
            write_staged(lake, "sacct", shard, batch_no, "rejects", parsed.rejects)
            batch_no += 1

        def finish(source_file: str, result: FileIngest, sha: str, size: int, index: int) -> None:
            out.append(StagedFile(result, sha, size))
            if progress:
                progress(f"sacct {index}/{len(files)} {source_file}: {result.status}, "
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
            results: list[SacctParseResult] = []
            for dump in group:
                try:
                    results.append(type_sacct_dumps([dump], timezone=timezone, cluster=cluster))
                except Exception as exc:  # noqa: BLE001
                    reason = log_parse_crash(dump.source_file, exc)
                    results.append(SacctParseResult(pl.DataFrame(), _file_reject(dump.source_file, reason), 0))
                    crashed[dump.source_file] = reason
            return results

        def type_pending(index: int) -> None:
            nonlocal pending_lines
            n_loaded: dict[str, int] = {}
            n_rejected: dict[str, int] = {}
            results: list[SacctParseResult] = []
            for group in pending.values():
                try:
                    typed = type_group(group)
                except Exception as exc:  # noqa: BLE001 - a single dump whose typing failed
                    source_file = group[0].source_file
                    crashed[source_file] = reason = log_parse_crash(source_file, exc)
                    typed = [SacctParseResult(pl.DataFrame(), _file_reject(source_file, reason), 0)]
                results.extend(typed)
            # One batch: a file whose dumps have different headers spans groups, and its records
            # are one file set in the lake. A file whose typing crashed keeps only its refusal.
            records = [r.records.filter(~pl.col("source_file").is_in(list(crashed))) for r in results
                       if r.records.width]
            rejects = [r.rejects.filter(~pl.col("source_file").is_in(list(crashed)) | (pl.col("line_no") == 0))
                       for r in results if r.rejects.width]
            batch = SacctParseResult(pl.concat(records) if records else pl.DataFrame(),
                                     pl.concat(rejects) if rejects else pl.DataFrame(schema=REJECT_SCHEMA), 0)
            for counts, frame in ((n_loaded, batch.records), (n_rejected, batch.rejects)):
                if frame.height:
                    for name, n in frame.filter(pl.col("line_no") > 0).group_by("source_file").len().iter_rows():
                        counts[name] = n
            if results:
                submit(batch)
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

        for index, source_file in enumerate(files, start=1):
            path = landing / source_file
            read = read_landing_file(path)
            sha, size = read.sha256, read.size
            if sha and plan.known.get(source_file) == sha:
                out.append(StagedFile(FileIngest(source_file, "unchanged"), sha, size))
                continue
            versions[source_file] = sha
            if read.fault and not read.data.strip():
                refuse(source_file, read.fault, sha, size, index)
                continue
            if not read.fault and not read.data.removeprefix(b"\xef\xbb\xbf").strip():
                # An empty file is no error of the night (exit 0), as an empty alert dump is: it
                # loads, with no rows; its ledger row (size_bytes 0, rows_read 0) shows it.
                loaded(source_file, 0, 0, None, sha, size, index)
                continue
            try:
                if is_json_dump(Path(strip_compression(path.name)), read.data):  # whole jobs[] documents
                    parsed = parse_sacct_json_bytes(read.data, source_file, cluster=cluster)
                    submit(parsed)
                    loaded(source_file, parsed.records.height, parsed.rejects.height, read.fault,
                           sha, size, index)
                    continue
                dumps = read_sacct_dumps(read.data, source_file, fields=fields, delimiter=delimiter)
            except SacctFormatError as exc:  # the read fault, if any, is the real reason (a cut JSON)
                refuse(source_file, read.fault or str(exc), sha, size, index)
                continue
            except Exception as exc:  # noqa: BLE001 - any parser failure refuses this file only
                refuse(source_file, read.fault or log_parse_crash(source_file, exc), sha, size, index)
                continue
            for dump in dumps:  # one per header: dumps with different --format concatenated
                pending.setdefault(dump.layout, []).append(dump)
                pending_lines += dump.lines.height
            pending_files.append((source_file, sha, size, read.fault))
            if pending_lines >= TYPE_BATCH_LINES:
                type_pending(index)
        type_pending(len(files))
        writer.drain()
    return out


def publish_sacct_rows(con: duckdb.DuckDBPyConnection, plan: IngestPlan, staged: list[StagedFile]) -> list[FileIngest]:
    """Inside the caller's transaction: queue the jobs of replaced and new records, write the
    staged rejects and the ledger rows (the switch that shows the new lake files)."""
    _queue_jobs(con, Path(plan.lake), plan, staged)
    return publish_files(con, plan, staged)


def publish_sacct(con: duckdb.DuckDBPyConnection, plan: IngestPlan, staged: list[StagedFile]) -> list[FileIngest]:
    """:func:`publish_sacct_rows` in one transaction, then superseded lake files and the staged
    files deleted. Call it outside a transaction."""
    with transaction(con):
        results = publish_sacct_rows(con, plan, staged)
    remove_unlisted_files(con, Path(plan.lake), SACCT_LAKE.name)
    clear_staged(Path(plan.lake), "sacct")
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
    """Ingest every new or changed dump under ``landing/sacct`` in this process (plan, one parse
    step, publish in one transaction): a crash or error leaves the warehouse as it was.

    Call it outside a transaction. A dump removed from the landing directory keeps its rows: the
    warehouse is the archive, and landing directories are often pruned after ingestion.
    """
    plan = plan_sacct(con, landing, timezone=timezone, fields=fields, delimiter=delimiter, cluster=cluster)
    return publish_sacct(con, plan, parse_sacct_shard(plan, 0, progress))
