"""Load node logs from ``landing/syslog`` into ``raw.syslog_lines`` — incrementally and losslessly.

Per new or changed file (SHA-256, like sacct dumps): parse the lines (:mod:`gpusre.models.syslog`),
recognize events (:mod:`gpusre.models.event_catalog`), give every line a Drain3 template id
(:mod:`gpusre.models.templates`, miner state kept in ``raw.template_miners`` so ids are stable
across nights), and replace the file's rows. Unparseable lines go to ``raw.rejects``. Staged in TEMP tables, then
published in one transaction (a crash leaves the warehouse as it was).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta, timezone as dt_timezone
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.alert_nodes import NodeMapping, node_names
from gpusre.models.event_catalog import classify_messages
from gpusre.models.ingest_ledger import FileIngest, file_sha256, known_files, record_file
from gpusre.models.syslog import parse_syslog_file
from gpusre.models.templates import TemplateMiner
from gpusre.models.warehouse import transaction

__all__ = ["SYSLOG_MINER", "discover_syslog_files", "ingest_syslog_files", "load_miner", "save_miner"]

SYSLOG_MINER = "syslog"
_DATE_IN_PATH = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def discover_syslog_files(landing: Path) -> list[Path]:
    """Every file under ``landing/syslog`` (recursively; README files excluded), in a stable order."""
    root = landing / "syslog"
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.lower().startswith("readme"))


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


def _lines_frame(lines: pl.DataFrame, miner: TemplateMiner) -> pl.DataFrame:
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
    templates = miner.assign_messages(lines["message"].fill_null(""))
    # The same host -> node rule as alerts (lower case, no DNS suffix or port, BMC names like
    # gpu001-bmc -> gpu001); an address it will not call a node keeps its first label.
    node = node_names(lines["host"], NodeMapping()).fill_null(
        lines["host"].str.to_lowercase().str.split(".").list.first())
    return pl.concat(
        [lines.with_columns(node=node), templates.select("template_id"), events], how="horizontal"
    )


#: Lines classified and templated per batch: per-call overheads dominate for the thousands of small
#: per-node daily files a cluster produces, so files are processed together.
BATCH_LINES = 1_000_000
_STAGE_LINES = "_stage_syslog_lines"
_STAGE_REJECTS = "_stage_syslog_rejects"


def _flush(con: duckdb.DuckDBPyConnection, pending: list[pl.DataFrame], miner: TemplateMiner) -> None:
    if not pending:
        return
    frame = _lines_frame(pl.concat(pending, how="vertical"), miner).to_arrow(compat_level=pl.CompatLevel.oldest())
    con.register("_syslog_lines_df", frame)
    con.execute(f"INSERT INTO {_STAGE_LINES} BY NAME SELECT * FROM _syslog_lines_df")
    con.unregister("_syslog_lines_df")
    pending.clear()


def ingest_syslog_files(
    con: duckdb.DuckDBPyConnection,
    landing: Path,
    *,
    timezone: str = "UTC",
    progress: Callable[[str], None] | None = None,
) -> list[FileIngest]:
    """Ingest every new or changed node log under ``landing/syslog``; call it outside a transaction.

    Like the sacct ingest, lines are staged in TEMP tables (buffer-managed: memory stays bounded)
    and published, with the ledger rows and the miner state, in one transaction.
    """
    known = known_files(con, "syslog")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_LINES} AS SELECT * FROM raw.syslog_lines LIMIT 0")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_STAGE_REJECTS} AS SELECT * FROM raw.rejects LIMIT 0")
    paths = discover_syslog_files(landing)
    jobs_span = _jobs_span(con)
    results: list[FileIngest] = []
    ledger: list[tuple[FileIngest, str, int]] = []
    replaced: list[str] = []
    miner: TemplateMiner | None = None
    pending: list[pl.DataFrame] = []
    pending_rows = 0
    try:
        for index, path in enumerate(paths, start=1):
            source_file = path.relative_to(landing).as_posix()
            sha = file_sha256(path)
            if known.get(source_file) == sha:
                results.append(FileIngest(source_file, "unchanged"))
                continue
            miner = miner or load_miner(con)
            if source_file in known:
                replaced.append(source_file)
            parsed = parse_syslog_file(path, source_file, timezone=timezone,
                                       year_hint=_year_hint(source_file, jobs_span))
            if parsed.lines.height:
                pending.append(parsed.lines)
                pending_rows += parsed.lines.height
            if parsed.rejects.height:
                con.register("_syslog_rejects_df", parsed.rejects.to_arrow(compat_level=pl.CompatLevel.oldest()))
                con.execute(
                    f"""INSERT INTO {_STAGE_REJECTS} BY NAME
                        SELECT source_file, 'syslog' AS source_kind, line_no, raw, error, now() AS rejected_at
                        FROM _syslog_rejects_df"""
                )
                con.unregister("_syslog_rejects_df")
            result = FileIngest(source_file, "loaded", parsed.rows_read, parsed.lines.height,
                                parsed.rejects.height)
            ledger.append((result, sha, path.stat().st_size))
            results.append(result)
            if pending_rows >= BATCH_LINES:
                _flush(con, pending, miner)
                pending_rows = 0
            if progress:
                progress(f"syslog {index}/{len(paths)} {source_file}: {result.rows_loaded} lines, "
                         f"{result.rows_rejected} rejected")
        if miner is not None:
            _flush(con, pending, miner)
            with transaction(con):
                for source_file in replaced:
                    con.execute("DELETE FROM raw.syslog_lines WHERE source_file = ?", [source_file])
                    con.execute("DELETE FROM raw.rejects WHERE source_file = ?", [source_file])
                con.execute(f"INSERT INTO raw.syslog_lines SELECT * FROM {_STAGE_LINES}")
                con.execute(f"INSERT INTO raw.rejects SELECT * FROM {_STAGE_REJECTS}")
                for result, sha, size in ledger:
                    record_file(con, "syslog", result, sha, size)
                save_miner(con, miner)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {_STAGE_LINES}")
        con.execute(f"DROP TABLE IF EXISTS {_STAGE_REJECTS}")
    return results
