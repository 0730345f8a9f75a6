"""Compaction of the lake: an old day's many small files of a table merged into one file per day.

Why: the ingest writes one Parquet file per landing file version and day. Where every node ships
its own log file that is 2,000 files a day and ~730,000 a year; the nightly steps never scan them
all (they read their new files only), but an ad hoc query over a year of ``raw.syslog_lines``, the
snapshot's included, opens every file (~0.1 ms each, before reading a row), and a per-node file's
rows fill a row group of their own. Merged, a day is one file whose row groups still follow the
node order.

How, keeping the lake's rules (one atomic switch, reruns change nothing):

* Only versions whose every file lies in a day at least ``keep_days`` before the lake's newest day
  (or today, if earlier) are merged: late files still land on recent days. A day is merged when
  ``min_files`` such files lie in it; a version is merged whole (every day it touches) or not at all.
* Each merged day gets one new file under ``<lake>/_compacted/<table>/day=…/`` holding the merged
  versions' rows, the rows of the day's earlier compacted file whose version the ledger still holds,
  and per row the version it came from (``lake_version``). A merged day whose compacted rows are
  :data:`DEAD_SHARE` or more of versions the ledger no longer holds (landing files changed since)
  is merged again, which drops them. It is written under a temporary name,
  fsynced and renamed; the views ignore it until its manifest rows commit.
* One transaction then replaces the day's manifest rows (``raw.lake_compacted_versions``): from its
  commit the views read those versions from the compacted file only. After it, the versions' own
  files and the replaced compacted files are deleted (:func:`~gpusre.models.ingest.lake.remove_unlisted_files`).

A kill before the commit leaves the views as they were (an unlisted compacted file is deleted on the
next run); a kill after it leaves files that are no longer read, deleted on the next run. A landing
file that changes after its version was merged gets a new version, written as usual; the compacted
rows of the old version stop showing with the ledger's commit.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.ingest import compaction_policy
from gpusre.models.ingest.compaction_policy import DEAD_SHARE, KEEP_DAYS, MIN_FILES
from gpusre.models.ingest.lake import (
    COMPRESSION,
    COMPRESSION_LEVEL,
    MANIFEST,
    ROW_GROUP_ROWS,
    VERSION_COLUMN,
    LakeTable,
    compacted_root,
    delete_lake_files,
    lake_of,
    ledger_stems_sql,
    read_schema,
    reads_lake,
    remove_unlisted_files,
    unlisted_files,
    version_stem_sql,
)
from gpusre.models.warehouse import transaction

__all__ = ["KEEP_DAYS", "MIN_FILES", "CompactionBacklog", "CompactionResult", "compact_lake_table",
           "compaction_backlog"]


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction of one table did."""

    table: str
    days: int = 0  # day folders written anew
    versions: int = 0  # landing-file versions merged
    files_merged: int = 0  # files read: the versions' own files and the days' earlier compacted files
    rows: int = 0  # rows in the files written
    files_deleted: int = 0  # files removed after the commit (merged, replaced, left by killed runs)


def _own_files(con: duckdb.DuckDBPyConnection, listed: list[Path], spec: LakeTable) -> pl.DataFrame:
    """(source_file, stem, day, path) of every own file of a version the ledger holds that is not
    merged yet, out of ``listed`` (the table's live own files)."""
    files = [p for p in listed
             if p.suffix == ".parquet" and not p.name.startswith((".", "_")) and p.parent.name.startswith("day=")]
    if not files:
        return pl.DataFrame(schema={"source_file": pl.String, "stem": pl.String, "day": pl.Date, "path": pl.String})
    listed = pl.DataFrame({"stem": [p.stem for p in files], "day": [p.parent.name[4:] for p in files],
                           "path": [p.as_posix() for p in files]}).with_columns(pl.col("day").str.to_date())
    versions = con.sql(_unmerged_versions_sql(spec)).pl()
    return versions.join(listed, on="stem", how="inner")


def _unmerged_versions_sql(spec: LakeTable) -> str:
    """A query of (source_file, stem): the ledger's versions of ``spec``'s files no compaction merged."""
    stem = version_stem_sql("f")
    return (f"SELECT f.source_file, {stem} AS stem FROM raw.ingested_files AS f "
            f"WHERE f.source_kind = '{spec.source_kind}' AND {stem} NOT IN "
            f"(SELECT version_stem FROM {MANIFEST} WHERE lake_table = '{spec.name}')")


def _ready(own: pl.DataFrame, *, through: date, min_files: int, also: list[date] | None = None) -> pl.DataFrame:
    """The rows of ``own`` to merge: whole versions, all of whose days are on or before ``through``
    and hold at least ``min_files`` merge-ready files or are among the days ``also`` (merged again
    anyway)."""
    candidates = own.filter(pl.col("day").max().over("stem") <= through)
    busy_days = candidates.group_by("day").len().filter(pl.col("len") >= min_files).get_column("day").to_list()
    merged_days = sorted(set(busy_days) | {d for d in also or () if d <= through})
    in_merged_day = pl.col("day").is_in(pl.Series(merged_days, dtype=pl.Date).implode())
    return candidates.filter(in_merged_day.all().over("stem"))


def _compacted_versions(con: duckdb.DuckDBPyConnection, spec: LakeTable) -> pl.DataFrame:
    """The manifest rows of ``spec``, each with ``live``: whether the ledger still holds its version."""
    return con.sql(
        f"""SELECT m.day, m.compacted_file, m.source_file, m.version_stem, m.rows,
                   m.version_stem IN ({ledger_stems_sql(spec.source_kind)}) AS live
            FROM {MANIFEST} AS m WHERE m.lake_table = ?""", params=[spec.name]).pl()


def _dead_days(compacted: pl.DataFrame, *, through: date) -> list[date]:
    """Days on or before ``through`` whose compacted rows are at least :data:`DEAD_SHARE` dead."""
    shares = compacted.group_by("day").agg(
        (pl.col("rows").filter(~pl.col("live")).sum() / pl.col("rows").sum()).alias("dead"))
    return shares.filter((pl.col("dead") >= DEAD_SHARE) & (pl.col("day") <= through)).get_column("day").to_list()


def _compacted_name(day: date, stems: list[str]) -> str:
    """A compacted file's stem: a hash of its day and member versions (a rerun after a kill writes
    the same name)."""
    digest = hashlib.sha256("\n".join([day.isoformat(), *sorted(stems)]).encode()).hexdigest()
    return f"c-{digest[:24]}"


def _write_day(con: duckdb.DuckDBPyConnection, spec: LakeTable, columns: list[str], target: Path,
               own: list[str], earlier: list[str], live: list[str]) -> pl.DataFrame:
    """Write ``own`` files (tagged with their version) and the rows of live versions in the
    ``earlier`` compacted files to ``target`` (atomic); return (version_stem, rows) of what it holds."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}.{os.getpid()}.parquet.tmp")
    select = ", ".join(f'"{c}"' for c in columns)
    parts, params = [], {}
    if own:
        parts.append(f"SELECT {select}, parse_filename(__f, true) AS {VERSION_COLUMN} "
                     "FROM read_parquet($own, filename = '__f')")
        params["own"] = own
    if earlier and live:
        parts.append(f"SELECT {select}, {VERSION_COLUMN} FROM read_parquet($earlier) "
                     f"WHERE {VERSION_COLUMN} IN (SELECT unnest($live))")
        params |= {"earlier": earlier, "live": live}
    try:
        # Rows keep the order of the files (sorted by landing file): per-node files keep each
        # node's rows together, so row-group statistics still skip by node. One thread: an
        # ordered COPY on more threads holds batches back for the writer, and under the
        # warehouse's 1 GB memory limit that made it slower, not faster (a day of 2,000 per-node
        # files, 2 cores: 1.38 s on 2 threads, 0.99 s on 1; unordered on 2 threads 0.69 s, but its
        # row groups then mix the nodes of two streams).
        con.execute("SET threads = 1")
        con.execute(f"COPY ({' UNION ALL '.join(parts)}) TO '{tmp.as_posix()}' (FORMAT parquet, "
                    f"COMPRESSION {COMPRESSION}, COMPRESSION_LEVEL {COMPRESSION_LEVEL}, "
                    f"ROW_GROUP_SIZE {ROW_GROUP_ROWS})", params)
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        # What the file holds, per version, for the manifest (one dictionary-encoded column).
        counts = con.sql(f"SELECT {VERSION_COLUMN} AS version_stem, count(*) AS rows "
                         f"FROM read_parquet('{tmp.as_posix()}') GROUP BY ALL").pl()
        os.replace(tmp, target)
    finally:
        con.execute("RESET threads")
        tmp.unlink(missing_ok=True)
    return counts


def compact_lake_table(con: duckdb.DuckDBPyConnection, spec: LakeTable, *, keep_days: int = KEEP_DAYS,
                       min_files: int = MIN_FILES, today: date | None = None) -> CompactionResult:
    """Merge the old days' small files of ``spec`` (a ``compactable`` lake table) into one file per
    day; see the module docstring. Holds no transaction of its own except the manifest switch; call
    it with the warehouse's run lock held (no other writer)."""
    if not spec.compactable or not reads_lake(con, spec.name):
        return CompactionResult(spec.name)
    lake = lake_of(con)
    # Files a killed compaction or ingest left first; the same listing gives the live files.
    stale, live = unlisted_files(con, lake, spec.name)
    deleted = delete_lake_files(stale)
    own = _own_files(con, live, spec)
    compacted = _compacted_versions(con, spec)
    if not own.height and not compacted.height:
        return CompactionResult(spec.name, files_deleted=deleted)
    today = today or datetime.now(timezone.utc).date()
    newest = max(frame.get_column("day").max() for frame in (own, compacted) if frame.height)
    through = min(newest, today) - timedelta(days=keep_days)  # type: ignore[operator]
    dead_days = _dead_days(compacted, through=through)
    ready = _ready(own, through=through, min_files=min_files, also=dead_days).sort("day", "source_file", "path")
    days = sorted(set(ready.get_column("day").to_list()) | set(dead_days))
    if not days:
        return CompactionResult(spec.name, files_deleted=deleted)
    columns = read_schema(lake, spec.name).names
    earlier = compacted.filter(pl.col("day").is_in(pl.Series(days, dtype=pl.Date).implode()))
    root = compacted_root(lake, spec.name)
    manifest: list[pl.DataFrame] = []
    files_merged = 0
    for day in days:
        mine = ready.filter(pl.col("day") == day)
        before = earlier.filter(pl.col("day") == day)
        kept = before.filter(pl.col("live"))
        members = pl.concat([mine.select("source_file", pl.col("stem").alias("version_stem")),
                             kept.select("source_file", "version_stem")]).unique()
        earlier_files = sorted({(root / f"day={day.isoformat()}" / f"{f}.parquet").as_posix()
                                for f in before.get_column("compacted_file").to_list()})
        files_merged += mine.height + len(earlier_files)
        if not members.height:  # every compacted row of the day is dead: its manifest rows go
            continue
        name = _compacted_name(day, members.get_column("version_stem").to_list())
        counts = _write_day(con, spec, columns, root / f"day={day.isoformat()}" / f"{name}.parquet",
                            mine.get_column("path").to_list(), earlier_files,
                            kept.get_column("version_stem").to_list())
        manifest.append(members.join(counts, on="version_stem", how="inner").with_columns(
            pl.lit(day).alias("day"), pl.lit(name).alias("compacted_file")))
    rows = (pl.concat(manifest) if manifest else pl.DataFrame(
        schema={"source_file": pl.String, "version_stem": pl.String, "rows": pl.Int64, "day": pl.Date,
                "compacted_file": pl.String})).with_columns(pl.lit(spec.name).alias("lake_table"))
    with transaction(con):
        con.execute(f"DELETE FROM {MANIFEST} WHERE lake_table = ? AND day IN (SELECT unnest(?))", [spec.name, days])
        con.register("_compacted_manifest", rows.to_arrow())
        con.execute(f"""INSERT INTO {MANIFEST} BY NAME
                        SELECT lake_table, day, compacted_file, source_file, version_stem, rows, now() AS compacted_at
                        FROM _compacted_manifest""")
        con.unregister("_compacted_manifest")
    # What the commit superseded lies in the merged days only: the merged versions' own files (a
    # version is merged whole, every day it touches) and the days' replaced compacted files.
    deleted += remove_unlisted_files(con, lake, spec.name, days)
    return CompactionResult(spec.name, days=len(days), versions=ready.get_column("stem").n_unique(),
                            files_merged=files_merged, rows=int(rows.get_column("rows").sum()),
                            files_deleted=deleted)



@dataclass(frozen=True)
class CompactionBacklog:
    """What a compaction with the default policy would merge now."""

    files: int = 0
    days: int = 0


def compaction_backlog(con: duckdb.DuckDBPyConnection, spec: LakeTable, *, today: date | None = None) -> CompactionBacklog:
    """The files and days a compaction of ``spec`` with :mod:`~gpusre.models.ingest.compaction_policy`'s
    settings would merge now, without listing the lake: ``raw.record_days`` holds one row per
    landing-file version and day, as the lake holds one file (rows without a time aside). What
    ``gpusre run`` reports, so that a site running it from cron learns of ``gpusre compact``."""
    if not spec.compactable:
        return CompactionBacklog()
    own = con.sql(f"""SELECT v.source_file, v.stem, r.day FROM ({_unmerged_versions_sql(spec)}) AS v
                      JOIN raw.record_days AS r ON r.source_file = v.source_file AND r.source_kind = ?""",
                  params=[spec.source_kind]).pl()
    if not own.height:
        return CompactionBacklog()
    today = today or datetime.now(timezone.utc).date()
    through = min(own.get_column("day").max(), today) - timedelta(days=compaction_policy.KEEP_DAYS)  # type: ignore[operator]
    ready = _ready(own, through=through, min_files=compaction_policy.MIN_FILES)
    return CompactionBacklog(files=ready.height, days=ready.get_column("day").n_unique())
