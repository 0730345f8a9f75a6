"""Parsing in parallel steps on Dagster's multiprocess executor (`gpusre run --workers N`): a worker
killed mid-run leaves nothing visible, and the rerun gives the same warehouse and byte-identical lake
files as one worker."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusre.models.ingest.lake import lake_root
from gpusre.models.ingest.staging import shard_files
from gpusre.models.warehouse import connect
from gpusre.pipelines.step_threads import step_process_threads, threads_per_worker
from test_lake import GPUSRE, _contents  # the same comparison as the lake's kill test


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Per-node node logs (many files to shard), two sacct dumps, alerts, node states; plus a bad
    sacct line and a UTF-16 node log, so rejects and a refused file go through the shards too."""
    out = tmp_path_factory.mktemp("parallel") / "landing"
    proc = subprocess.run([*GPUSRE, "simulate", "--out", str(out), "--nodes", "4", "--days", "2",
                           "--start", "2026-09-01", "--syslog-layout", "per-node"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    dump = sorted((out / "sacct").iterdir())[0]
    dump.write_text(dump.read_text() + "this|is|not|a|sacct|record\n")
    (out / "syslog" / "windows-export.log").write_bytes("Sep  1 00:00:00 gpu001 kernel: hi\n".encode("utf-16"))
    return out


def _run(landing: Path, warehouse: Path, workers: int) -> subprocess.CompletedProcess[str]:
    """A complete run: exit status 1 and one line for the refused UTF-16 file, no other error."""
    proc = subprocess.run([*GPUSRE, "run", "--landing", str(landing), "--warehouse", str(warehouse),
                           "--workers", str(workers)], capture_output=True, text=True, timeout=1200)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gpusre: error:")]
    assert proc.returncode == 1 and errors == ["gpusre: error: syslog/windows-export.log: UTF-16 encoded: "
                                               "convert to UTF-8"], proc.stderr
    return proc


def _lake_bytes(warehouse: Path) -> dict[str, str]:
    """SHA-256 of every lake file, by path inside the lake."""
    lake = lake_root(warehouse)
    return {p.relative_to(lake).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(lake.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def one_worker(landing: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    warehouse = tmp_path_factory.mktemp("w1") / "w.duckdb"
    proc = _run(landing, warehouse, 1)
    assert "parse workers" not in proc.stderr  # one worker: every step in the CLI's process
    return warehouse


def test_shards_balance_bytes_deterministically() -> None:
    sizes = [("a", 10), ("b", 7), ("c", 5), ("d", 5), ("e", 1)]
    # largest first onto the lightest: a->0, b->1, c->1 (7<10), d->0 (10<12), e->1 (12<15)
    assert shard_files(sizes, 2) == [["a", "d"], ["b", "c", "e"]]  # 15 vs 13 bytes, landing order kept
    assert shard_files(sizes, 1) == [["a", "b", "c", "d", "e"]]
    assert shard_files([], 3) == [[], [], []]


def _step_processes(root: int) -> list[int]:
    """Dagster step processes of the run ``root``: children of its fork server."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    servers = {pid for pid, parent in parents.items() if parent == root}
    return sorted(pid for pid, parent in parents.items() if parent in servers)


def test_a_killed_parse_worker_leaves_nothing_visible_and_the_rerun_gives_what_one_worker_gives(
        landing: Path, one_worker: Path, tmp_path: Path) -> None:
    """One test for both (each multiprocess run costs a minute here): a run with 2 workers whose parse
    step is SIGKILLed, then a rerun with 2 workers, equal to 1 worker in every table and lake byte.
    Every row of the final warehouse was parsed by 2-worker steps (the killed run's or the rerun's)."""
    warehouse = tmp_path / "w.duckdb"
    proc = subprocess.Popen([*GPUSRE, "run", "--landing", str(landing), "--warehouse", str(warehouse),
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed, environ = None, None
    deadline = time.monotonic() + 900
    while proc.poll() is None and killed is None and time.monotonic() < deadline:
        steps = _step_processes(proc.pid)
        if len(steps) >= 2:  # only the parse shards run beside another step (pool: one writer)
            killed = steps[-1]
            try:  # what the step process was started with (its fork server's environment)
                environ = dict(v.split("=", 1) for v in Path(f"/proc/{killed}/environ").read_text().split("\0") if "=" in v)
            except OSError:
                environ = None  # already gone: look at the next one
                killed = None
                continue
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.01)
    _out, err = proc.communicate(timeout=900)
    assert killed is not None, err
    threads = threads_per_worker(len(os.sched_getaffinity(0)), 2)
    assert environ is not None and environ.get("POLARS_MAX_THREADS") == str(threads)
    assert f"2 parse workers ({threads} Polars thread(s) each)" in err
    assert proc.returncode == 1, err
    errors = [line for line in err.splitlines() if line.startswith("gpusre: error:")]
    assert errors and "ingest_job failed" in errors[0] and "Traceback" not in err
    con = connect(warehouse, read_only=True)
    try:  # every row a view shows belongs to a file version the ledger committed; none of a half-run
        for view, kind in (("sacct_records", "sacct"), ("syslog_lines", "syslog")):
            shown, committed = con.sql(f"""SELECT (SELECT count(*) FROM raw.{view}),
                (SELECT COALESCE(sum(rows_loaded), 0) FROM raw.ingested_files WHERE source_kind = '{kind}')""").fetchall()[0]
            assert shown == committed, view
    finally:
        con.close()
    proc = _run(landing, warehouse, 2)
    assert "2 parse workers" in proc.stderr
    assert "Traceback" not in proc.stderr and "DEBUG" not in proc.stderr  # the CLI's own lines only
    expected, got = _contents(one_worker), _contents(warehouse)
    assert got.keys() == expected.keys()
    for table in expected:
        assert got[table] == expected[table], table
    assert _lake_bytes(warehouse) == _lake_bytes(one_worker)
    con = connect(warehouse, read_only=True)
    try:
        rejects = con.sql("SELECT count(*) FROM raw.rejects WHERE source_kind = 'sacct' AND line_no > 0").fetchall()
        templates = con.sql("SELECT count(*) FROM raw.syslog_lines WHERE template_id IS NULL").fetchall()
    finally:
        con.close()
    assert rejects == [(1,)] and templates == [(0,)]


@pytest.mark.parametrize(("new_bytes", "cores", "expected"), [
    (0, 16, 1),                 # nothing new: in process
    ((256 << 20) - 1, 16, 1),   # just below the size where step start-up pays
    (256 << 20, 16, 16),        # enough input, enough cores: every core
    (1 << 30, 4, 4),
    (1 << 30, 3, 1),            # fewer than 4 cores: one parse process keeps ~1.2 busy already
    (1 << 30, 2, 1),            # measured: 2 workers 95.2 s vs 1 worker 83.0 s on a year's night
])
def test_auto_workers_parse_in_process_unless_the_input_and_the_machine_are_large(
        new_bytes: int, cores: int, expected: int) -> None:
    from gpusre.pipelines.runner import auto_workers

    assert auto_workers(new_bytes, cores) == expected
