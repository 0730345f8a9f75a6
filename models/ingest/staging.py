"""Parsed, not yet published: what parallel parse steps hand to a source's one publish step.

Why: parsing landing files is most of an ingest's CPU and needs no warehouse, while DuckDB allows
one writing process per file. So an ingest is three steps (:mod:`gpusre.pipelines` runs them on
Dagster's executors): a **plan** (reads the ledger, splits the landing files into shards), one
**parse** per shard (any process: writes the lake file sets, invisible until the ledger names
them, and *staged* files here) and a **publish** (the one writer: rejects, ledger rows and the
source's own tables in one DuckDB transaction, which is what makes the file sets visible).

Staged files live under ``<lake>/_staged/<source>/`` (outside every table folder, so no view
reads them): ``<shard>-<batch>.<kind>.parquet``, written atomically. The plan clears the folder
first, so a run never publishes what a killed run staged; the publish clears it after its commit.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from gpusre.models.ingest.lake import lake_of, write_atomic
from gpusre.models.ingest.landing_files import IgnoredFile, SourceScan
from gpusre.models.ingest.ledger import (FileIngest, LandingStats, ignored_results, known_files, record_files,
                                        record_mtimes, stat_landing, unchanged_by_stat)

__all__ = ["IngestPlan", "StagedFile", "clear_staged", "plan_ingest", "publish_files", "read_staged",
           "shard_files", "staged_dir", "write_staged"]

STAGED_DIR = "_staged"


@dataclass(frozen=True)
class StagedFile:
    """What a parse step did with one landing file: its ledger result, SHA-256 and size."""

    result: FileIngest
    sha256: str
    size: int


def staged_dir(lake: Path, source: str) -> Path:
    """``<lake>/_staged/<source>``."""
    return Path(lake) / STAGED_DIR / source


def clear_staged(lake: Path, source: str) -> None:
    """Remove everything staged for ``source`` (a killed run's leftovers, or a published run's)."""
    shutil.rmtree(staged_dir(lake, source), ignore_errors=True)


def write_staged(lake: Path, source: str, shard: int, batch: int, kind: str, frame: pl.DataFrame) -> Path | None:
    """Write one staged batch of ``kind`` (``rejects``, ``messages`` …) atomically; nothing for no rows."""
    if not frame.height:
        return None
    target = staged_dir(lake, source) / f"{shard:04d}-{batch:06d}.{kind}.parquet"
    write_atomic(frame, target, sync=False)  # Polars' own writer: no copy into Arrow's layout
    return target


def read_staged(lake: Path, source: str, kind: str) -> list[Path]:
    """The staged files of ``kind``, in shard and batch order."""
    folder = staged_dir(lake, source)
    return sorted(folder.glob(f"*.{kind}.parquet")) if folder.is_dir() else []


def shard_files(sizes: list[tuple[str, int]], shards: int) -> list[list[str]]:
    """Split landing files into ``shards`` lists of about equal bytes (largest first onto the
    lightest shard; ties by name), each list in the input's order. Deterministic."""
    shards = max(1, shards)
    load = [0] * shards
    owner: dict[str, int] = {}
    for name, size in sorted(sizes, key=lambda item: (-item[1], item[0])):
        lightest = min(range(shards), key=lambda i: (load[i], i))
        owner[name] = lightest
        load[lightest] += max(size, 1)
    out: list[list[str]] = [[] for _ in range(shards)]
    for name, _size in sizes:
        out[owner[name]].append(name)
    return out


@dataclass(frozen=True)
class IngestPlan:
    """What one source's ingest will read, made by the plan step for the parse steps (picklable:
    Dagster hands it to other processes)."""

    source: str
    landing: str
    lake: str
    files: tuple[str, ...]  # landing-relative paths of the source's files, in landing order
    shards: tuple[tuple[str, ...], ...]  # those to read (not ``unchanged``) split into one tuple per parse step
    known: dict[str, str]  # source_file -> SHA-256 the ledger holds
    ignored: tuple[IgnoredFile, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)  # the source's own (time zone, year hint …)
    stats: LandingStats = field(default_factory=lambda: LandingStats(0))  # taken before any read
    unchanged: frozenset[str] = frozenset()  # size and mtime as the ledger recorded: not read

    @property
    def order(self) -> dict[str, int]:
        """Landing order of every file to read (the order a single process would read them in)."""
        return {name: i for i, name in enumerate(self.files)}

    def order_frame(self) -> pl.DataFrame:
        """:attr:`order` as a frame (``source_file``, ``file_order``), to sort staged rows by."""
        return pl.DataFrame({"source_file": list(self.files), "file_order": range(len(self.files))},
                            schema={"source_file": pl.String, "file_order": pl.Int64})


def plan_ingest(con: duckdb.DuckDBPyConnection, landing: Path, source: str, scan: SourceScan, shards: int,
                settings: dict[str, Any] | None = None) -> IngestPlan:
    """Split the files of ``scan`` into ``shards`` parse steps by size and clear what a killed run
    staged; reads the ledger (hence the warehouse connection)."""
    lake = lake_of(con)
    clear_staged(lake, source)
    stats = stat_landing(landing, scan.files)
    unchanged = unchanged_by_stat(con, source, stats)
    names = [path.relative_to(landing).as_posix() for path in scan.files]
    # A file that cannot be stat'ed weighs 0: its parse step says why.
    sizes = [(name, stats.files.get(name, (0, 0))[0]) for name in names if name not in unchanged]
    return IngestPlan(source, str(landing), str(lake), tuple(names),
                      tuple(tuple(s) for s in shard_files(sizes, shards)),
                      known_files(con, source), tuple(scan.ignored), settings or {}, stats, unchanged)


def publish_files(con: duckdb.DuckDBPyConnection, plan: IngestPlan, staged: list[StagedFile]) -> list[FileIngest]:
    """The ledger side of a publish, inside the caller's transaction: a re-read file's old rejects
    go, the staged rejects and every ledger row (ignored files too) are written. Returns the
    results in landing order, ignored files first."""
    lake = Path(plan.lake)
    order = plan.order
    skipped = [StagedFile(FileIngest(name, "unchanged"), plan.known.get(name, ""), plan.stats.files[name][0])
               for name in plan.unchanged]
    staged = sorted([*staged, *skipped], key=lambda s: order.get(s.result.source_file, -1))
    replaced = [s.result.source_file for s in staged if s.result.status != "unchanged"
                and s.result.source_file in plan.known]
    if replaced:
        con.execute("DELETE FROM raw.rejects WHERE source_file IN (SELECT unnest(?))", [replaced])
    files = [p.as_posix() for p in read_staged(lake, plan.source, "rejects")]
    if files:
        con.execute(f"""INSERT INTO raw.rejects (source_file, source_kind, line_no, raw, error, rejected_at)
                        SELECT source_file, '{plan.source}', line_no, raw, error, now() FROM read_parquet(?)""",
                    [files])
    ignored = ignored_results(list(plan.ignored))
    record_files(con, plan.source,
                 ignored + [(s.result, s.sha256, s.size) for s in staged if s.result.status != "unchanged"])
    # Files read (or hashed and found unchanged) in this run get the mtime the plan saw.
    record_mtimes(con, plan.stats, [s.result.source_file for s in staged if s.result.source_file not in plan.unchanged])
    return [result for result, _, _ in ignored] + [s.result for s in staged]
