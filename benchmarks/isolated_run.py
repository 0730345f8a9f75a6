"""Run a benchmark's measured part in a child process on a fresh warehouse, so peak RSS is the
measured work's own (not the input generator's) and every run starts from an empty file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def fresh_warehouse(workdir: Path) -> Path:
    """``workdir/bench.duckdb`` with any earlier file, its WAL and its lake removed."""
    warehouse = workdir / "bench.duckdb"
    warehouse.unlink(missing_ok=True)
    Path(str(warehouse) + ".wal").unlink(missing_ok=True)
    shutil.rmtree(workdir / "bench.lake", ignore_errors=True)  # its Parquet lake (raw.* rows)
    return warehouse


def run_child(code: str, *args: str) -> dict[str, float] | None:
    """Run ``python -c code args``; its last stdout line is a JSON object of measurements.

    Returns None (after printing the child's stderr) when the child failed.
    """
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_scaling(code: str, landing: Path) -> tuple[dict[str, float], float, list[dict[str, float]]] | None:
    """The parse step's scaling: ``code`` (args: landing, shard, shards) once over every file, then
    as 2 concurrent processes over half the files each. Returns (one process's measurements, the
    2 processes' wall seconds including their start-up, their measurements), or None on a failure."""
    one = run_child(code, str(landing), "0", "1")
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        halves = list(pool.map(lambda k: run_child(code, str(landing), str(k), "2"), (0, 1)))
    wall = time.perf_counter() - t0
    if one is None or any(h is None for h in halves):
        return None
    return one, wall, [h for h in halves if h is not None]
