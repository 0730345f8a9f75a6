"""The warehouse snapshot: readable while another process holds the warehouse, replaced
atomically, and left as it was when publishing fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from gpusre.models import warehouse_snapshot
from gpusre.models.warehouse import connect
from gpusre.models.warehouse_snapshot import publish_snapshot, snapshot_path


def _warehouse(path: Path, rows: int) -> Path:
    con = connect(path)
    con.execute("CREATE OR REPLACE TABLE marts.example AS SELECT range AS i FROM range(?)", [rows])
    con.close()
    return path


def _rows(path: Path) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.sql("SELECT count(*) FROM marts.example").fetchall()[0][0]
    finally:
        con.close()


def test_snapshot_path_sits_next_to_the_warehouse(tmp_path: Path) -> None:
    assert snapshot_path(tmp_path / "w.duckdb") == tmp_path / "w.snapshot.duckdb"
    assert snapshot_path(tmp_path / "warehouse") == tmp_path / "warehouse.snapshot.duckdb"


def test_readers_query_the_snapshot_while_a_writer_holds_the_warehouse(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb", 10)
    snap = publish_snapshot(wh)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from gpusre.models.warehouse import connect; "
         "c = connect(sys.argv[1]); print('holding', flush=True); time.sleep(120)", str(wh)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        # Why the snapshot exists: the warehouse itself cannot be opened, not even read-only.
        with pytest.raises(duckdb.IOException):
            duckdb.connect(str(wh), read_only=True)
        assert _rows(snap) == 10
    finally:
        holder.kill()
        holder.wait()


def test_republishing_replaces_the_snapshot_and_open_readers_keep_theirs(tmp_path: Path) -> None:
    wh = _warehouse(tmp_path / "w.duckdb", 10)
    snap = publish_snapshot(wh)
    reader = duckdb.connect(str(snap), read_only=True)
    try:
        _warehouse(wh, 25)
        assert publish_snapshot(wh) == snap
        assert reader.sql("SELECT count(*) FROM marts.example").fetchall()[0][0] == 10  # its own copy
        # A new reader (another process: this one's DuckDB caches the open database by path) sees
        # the new snapshot.
        fresh = subprocess.run(
            [sys.executable, "-c", "import sys, duckdb; print(duckdb.connect(sys.argv[1], read_only=True)"
             ".sql('SELECT count(*) FROM marts.example').fetchall()[0][0])", str(snap)],
            capture_output=True, text=True, check=True)
        assert fresh.stdout.strip() == "25"
    finally:
        reader.close()
    assert not list(tmp_path.glob("*.tmp"))


def test_a_failed_copy_leaves_the_previous_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = _warehouse(tmp_path / "w.duckdb", 10)
    snap = publish_snapshot(wh)
    before = snap.read_bytes()
    _warehouse(wh, 25)

    def copy_half_then_fail(src: Path, dst: Path) -> None:
        data = Path(src).read_bytes()
        Path(dst).write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(warehouse_snapshot.shutil, "copyfile", copy_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        publish_snapshot(wh)
    assert snap.read_bytes() == before and _rows(snap) == 10
    assert not list(tmp_path.glob("*.tmp"))


def test_the_asset_publishes_and_can_be_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dagster as dg

    from gpusre.assets.warehouse_snapshot import warehouse_snapshot
    from gpusre.pipelines.resources import default_resources

    wh = _warehouse(tmp_path / "w.duckdb", 10)
    resources = default_resources(str(wh), str(tmp_path / "landing"), str(tmp_path / "reports"))
    def metadata(result: dg.ExecuteInProcessResult) -> dict:
        [event] = result.get_asset_materialization_events()
        return {k: v.value for k, v in event.materialization.metadata.items()}

    meta = metadata(dg.materialize([warehouse_snapshot], resources=resources))
    assert meta["path"] == str(snapshot_path(wh)) and _rows(snapshot_path(wh)) == 10

    _warehouse(wh, 25)
    monkeypatch.setenv("GPUSRE_SNAPSHOT", "0")
    assert metadata(dg.materialize([warehouse_snapshot], resources=resources))["skipped"] == "GPUSRE_SNAPSHOT=0"
    assert _rows(snapshot_path(wh)) == 10  # left as it was
