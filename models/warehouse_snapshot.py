"""A read-only copy of the warehouse for ad hoc queries, published at the end of a run.

DuckDB lets one process open a database file for writing, and while it does, no other process can
open the file at all, not even read-only. A nightly run (or one the landing sensor starts) holding
the warehouse would lock out the SRE who opens it with the ``duckdb`` CLI in an SLO review. So each
run that builds the reports ends by publishing ``<warehouse>.snapshot.duckdb`` next to it: the same
schemas, tables and column names, as of the last complete run. Readers open the snapshot; the
pipeline never opens it.

Publishing is atomic: the warehouse is checkpointed (so the file holds every committed row and no
write-ahead log is needed), copied to a temporary name, flushed to disk, and renamed over the old
snapshot. A reader that has the old snapshot open keeps reading it (POSIX rename); a crash while
copying leaves the previous snapshot in place.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from gpusre.models.warehouse import connect

__all__ = ["publish_snapshot", "remove_stale_snapshot_tmp", "snapshot_path"]


def snapshot_path(warehouse: Path) -> Path:
    """Where the snapshot of ``warehouse`` goes: ``w.duckdb`` → ``w.snapshot.duckdb`` (same folder)."""
    warehouse = Path(warehouse)
    return warehouse.with_name(f"{warehouse.stem}.snapshot{warehouse.suffix or '.duckdb'}")


def _tmp_path(target: Path) -> Path:
    return target.with_name(target.name + ".tmp")


def remove_stale_snapshot_tmp(warehouse: Path) -> bool:
    """Delete the half-written copy a killed run left (``w.snapshot.duckdb.tmp``, unreadable);
    the caller holds the run lock, so no copy is in progress. True when there was one."""
    tmp = _tmp_path(snapshot_path(warehouse))
    if tmp.exists():
        tmp.unlink(missing_ok=True)
        return True
    return False


def publish_snapshot(warehouse: Path, target: Path | None = None) -> Path:
    """Checkpoint ``warehouse`` and atomically replace ``target`` (default :func:`snapshot_path`)
    with a copy of it; return the snapshot's path. The caller must be the warehouse's only writer
    (a Dagster asset in the warehouse pool, or the CLI after its run)."""
    warehouse = Path(warehouse)
    target = Path(target) if target is not None else snapshot_path(warehouse)
    con = connect(warehouse)
    try:
        con.execute("CHECKPOINT")
    finally:
        con.close()
    tmp = _tmp_path(target)
    try:
        shutil.copyfile(warehouse, tmp)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
