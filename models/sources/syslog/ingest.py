"""Load node logs from ``landing/syslog`` into ``raw.syslog_lines`` — incrementally and losslessly.

Per new or changed file (SHA-256, like sacct dumps): parse the lines (:mod:`gpusre.models.sources.syslog.parse`),
recognize events (:mod:`gpusre.models.logs.event_catalog`), give every line a Drain3 template id
(:mod:`gpusre.models.logs.templates`, miner state kept in ``raw.template_miners`` so ids are stable
across nights), and replace the file's rows. Unparseable lines go to ``raw.rejects``.

Rows go to the Parquet lake (:mod:`gpusre.models.ingest.lake`), one file set per landing file
version, written on a writer thread in batches of about :data:`BATCH_LINES` while this thread
parses and templates the next batch; ``raw.syslog_lines`` is the view over it. The rejects, the
ledger rows and the miner state are written in one DuckDB transaction, and the ledger is what makes
a file set visible: a crash or error leaves the views exactly as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.alerts.nodes import HostMapping, node_names
from gpusre.models.ingest.background_writer import BackgroundWriter
from gpusre.models.logs.event_catalog import classify_messages
from gpusre.models.ingest.ledger import FileIngest, ignored_results, known_files, log_parse_crash, record_file
from gpusre.models.ingest.landing_files import SourceScan, read_landing_file, scan_source
from gpusre.models.sources.syslog.parse import LINE_SCHEMA, REJECT_SCHEMA, SyslogParseResult, host_from_filename, parse_syslog_bytes
from gpusre.models.logs.templates import TemplateMiner
from gpusre.models.warehouse import append_arrow, transaction
from gpusre.models.ingest.lake import lake_of, remove_unlisted_files, write_file_sets
from gpusre.models.sources.registry import lake_table

__all__ = ["SYSLOG_MINER", "discover_syslog_files", "scan_syslog_files", "ingest_syslog_files", "load_miner", "save_miner"]

SYSLOG_MINER = "syslog"
#: The lake table of node-log lines (raw.syslog_lines).
SYSLOG_LAKE = lake_table("syslog")
_DATE_IN_PATH = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def scan_syslog_files(landing: Path) -> SourceScan:
    """Every node log under ``landing/syslog`` (recursively, any name; README and hidden files
    ignored), in a stable order, and the ignored files with the reason."""
    return scan_source(landing, "syslog", lambda _name: None)


def discover_syslog_files(landing: Path) -> list[Path]:
    """Every file under ``landing/syslog`` (recursively; README files excluded), in a stable order."""
    return scan_syslog_files(landing).files


def load_miner(con: duckdb.DuckDBPyConnection, miner: str = SYSLOG_MINER) -> TemplateMiner:
    """The persisted miner, or a new one on the first night."""
    rows = con.execute("SELECT state FROM raw.template_miners WHERE miner = ?", [miner]).fetchall()
    return TemplateMiner.from_state(bytes(rows[0][0])) if rows else TemplateMiner.new()


def save_miner(con: duckdb.DuckDBPyConnection, template_miner: TemplateMiner, miner: str = SYSLOG_MINER) -> None:
    """Replace the persisted state of ``miner`` (inside the caller's transaction)."""
    con.execute("DELETE FROM raw.template_miners WHERE miner = ?", [miner])
    con.execute(
        "INSERT INTO raw.template_miners VALUES (?, ?, ?, now())",
        [miner, template_miner.state(), template_miner.templates().height],
    )


def _jobs_span(con: duckdb.DuckDBPyConnection) -> tuple[datetime, datetime] | None:
    """The time span of the accounting data, or None before any job is known."""
    lo, hi = con.sql("SELECT min(submit_ts), max(COALESCE(end_ts, start_ts)) FROM core.jobs").fetchall()[0]
    return (lo, hi) if lo is not None and hi is not None else None


def _year_hint(source_file: str, jobs_span: tuple[datetime, datetime] | None) -> tuple[datetime, datetime] | None:
    """Where RFC 3164 lines (no year) most likely fall: the day in the path, else the jobs' span."""
    m = _DATE_IN_PATH.search(source_file)
    if m:
        day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=dt_timezone.utc)
        return day - timedelta(days=2), day + timedelta(days=2)
    return jobs_span


def _lines_frame(lines: pl.DataFrame, miner: TemplateMiner, hosts: HostMapping) -> pl.DataFrame:
    # Patterns such as 'slurmd: error:' include the program tag, so classify 'program: message'.
    tagged = (
        lines.select(
            pl.when(pl.col("program").is_not_null())
            .then(pl.concat_str([pl.col("program"), pl.lit(": "), pl.col("message")]))
            .otherwise(pl.col("message"))
            .alias("text")
        ).to_series()
    )
    events = classify_messages(tagged).drop("gpu_index")
    template_id = miner.assign_message_ids(lines["message"].fill_null(""))
    # The same host -> node rule as alerts, with cluster.yaml's alerts.nodes settings (lower case,
    # no DNS suffix or port, rewrites such as gpu001-bmc -> gpu001, the node list's spelling); a
    # host it will not call a node (an address, a server outside the node list) keeps its first label.
    node = node_names(lines["host"], hosts.mapping, hosts.known_nodes or None).fill_null(
        lines["host"].str.to_lowercase().str.split(".").list.first())
    return pl.concat(
        [lines.with_columns(node=node, template_id=template_id), events], how="horizontal"
    )


#: Lines classified and templated per batch: per-call overheads dominate for the thousands of small
#: per-node daily files a cluster produces, so files are processed together.
BATCH_LINES = 1_000_000


def _lines_batch(pending: list[pl.DataFrame], miner: TemplateMiner, hosts: HostMapping) -> pl.DataFrame:
    """Classify and template the pending lines (whole files): the rows for the lake's ``syslog_lines``."""
    batch = _lines_frame(pl.concat(pending, how="vertical"), miner, hosts)
    pending.clear()
    return batch


def ingest_syslog_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    hosts: HostMapping | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Ingest every new or changed node log under ``landing/syslog``; call it outside a transaction.

    ``hosts``: how log host names become Slurm node names (cluster.yaml's ``alerts.nodes`` and node
    list); applied when a file is ingested, so a changed mapping reaches files ingested later.

    One transaction covers the whole run: a changed file's old rows are deleted, the new lines
    appended in batches, then the ledger rows and the miner state written; a crash or error
    leaves the warehouse as it was.
    """
    hosts = hosts or HostMapping()
    lake = lake_of(con)
    known = known_files(con, "syslog")
    versions: dict[str, str] = {}  # source_file -> sha256 of the files read in this run
    scan = scan_syslog_files(landing)
    paths = scan.files
    jobs_span = _jobs_span(con)
    ledger: list[tuple[FileIngest, str, int]] = ignored_results(scan.ignored)
    results: list[FileIngest] = [result for result, _, _ in ledger]
    miner: TemplateMiner | None = None
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    # Inserts run on a writer thread while this thread parses and templates the next batch (see
    # models/ingest/background_writer.py); leaving it waits for them, before the transaction's rollback.
    with transaction(con), BackgroundWriter("syslog-writer") as writer:
        for index, path in enumerate(paths, start=1):
            source_file = path.relative_to(landing).as_posix()
            read = read_landing_file(path)
            sha = read.sha256
            if sha and known.get(source_file) == sha:
                results.append(FileIngest(source_file, "unchanged"))
                continue
            if miner is None:
                writer.drain()
                miner = load_miner(con)
            if source_file in known:
                # Queued before any of the file's new rejects; its old lake files stay visible until
                # the ledger commits the new version (models/ingest/lake.py).
                writer.submit(con.execute, "DELETE FROM raw.rejects WHERE source_file = ?", [source_file])
            versions[source_file] = sha
            fault = read.fault
            try:
                parsed = parse_syslog_bytes(read.data, source_file, timezone=timezone,
                                            year_hint=_year_hint(source_file, jobs_span),
                                            host_from_name=host_from_filename(source_file))
            except Exception as exc:  # noqa: BLE001 - a parser failure refuses this file only
                fault = log_parse_crash(source_file, exc)
                parsed = SyslogParseResult(pl.DataFrame(schema=LINE_SCHEMA), pl.DataFrame(schema=REJECT_SCHEMA), 0)
            if parsed.lines.height:
                pending.append(parsed.lines)
                pending_rows += parsed.lines.height
            rejects = parsed.rejects
            if fault:  # the line-0 reject of a file refused whole or past a fault
                rejects = pl.concat([rejects, pl.DataFrame(
                    {"source_file": [source_file], "line_no": [0], "raw": [None], "error": [fault]},
                    schema=rejects.schema)])
            if rejects.height:
                writer.submit(
                    append_arrow, con, "raw.rejects", rejects.to_arrow(compat_level=pl.CompatLevel.oldest()),
                    "source_file, 'syslog' AS source_kind, line_no, raw, error, now() AS rejected_at")
            result = FileIngest(source_file, "refused" if fault else "loaded", parsed.rows_read,
                                parsed.lines.height, parsed.rejects.height, fault)
            ledger.append((result, sha, read.size))
            results.append(result)
            if pending_rows >= BATCH_LINES:
                batch = _lines_batch(pending, miner, hosts)
                writer.drain()  # at most one batch being written while the next one is built
                writer.submit(write_file_sets, lake, SYSLOG_LAKE, batch, versions)
                del batch
                pending_rows = 0
            if progress:
                progress(f"syslog {index}/{len(paths)} {source_file}: {result.rows_loaded} lines, "
                         f"{result.rows_rejected} rejected")
        if pending:
            batch = _lines_batch(pending, miner, hosts)  # type: ignore[arg-type]  # pending implies a miner
            writer.submit(write_file_sets, lake, SYSLOG_LAKE, batch, versions)
            del batch
        writer.drain()
        for result, sha, size in ledger:
            record_file(con, "syslog", result, sha, size)
        if miner is not None:
            save_miner(con, miner)
    remove_unlisted_files(con, lake, SYSLOG_LAKE.name)
    return results
