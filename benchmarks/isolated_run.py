"""Run a benchmark's measured part in a child process on a fresh warehouse, so peak RSS is the
measured work's own (not the input generator's) and every run starts from an empty file."""

from __future__ import annotations

import json
import os
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


def child_env() -> dict[str, str]:
    """The environment of a benchmark child: this one, with ``benchmarks/`` on ``PYTHONPATH`` so
    that the child's code can import the sibling modules (``peak_memory``)."""
    here = str(Path(__file__).resolve().parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{here}{os.pathsep}{path}" if path else here}


def run_child(code: str, *args: str) -> dict[str, float] | None:
    """Run ``python -c code args``; its last stdout line is a JSON object of measurements.

    Returns None (after printing the child's stderr) when the child failed.
    """
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False,
                          env=child_env())
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


def run_per_core(code: str, landing: Path, sizes: list[tuple[str, int]], unit: str,
                 workers: tuple[int, ...] = (1, 2, 4, 8, 16, 32)) -> None:
    """The parse step with one core per worker process: ``code`` (args: landing, shard, shards, core;
    prints ``seconds`` and ``unit`` in its JSON) pinned to one core over every file, then 2 such
    processes on a core each side by side; from the 1-core run's cost (fixed per process, per input
    byte) a projection to ``workers`` processes with a core each over the pipeline's shard plan of
    ``sizes`` (landing-relative file, bytes). Prints all three; the projection is stated as one."""
    from parse_projection import ShardCost, project_parse  # sibling module (run as a script)

    from gpusre.models.ingest.staging import shard_files

    cores = sorted(os.sched_getaffinity(0))
    t0 = time.perf_counter()
    one = run_child(code, str(landing), "0", "1", str(cores[0]))
    one_wall = time.perf_counter() - t0
    if one is None:
        return
    cost = ShardCost(fixed_s=one_wall - one["seconds"], per_byte_s=one["seconds"] / max(1, sum(b for _, b in sizes)))
    print(f"parse step pinned to 1 core: {one_wall:.1f} s wall ({one['seconds']:.1f} s parsing, "
          f"{cost.fixed_s:.1f} s process start, imports and plan) = {one[unit] / one_wall:,.0f} {unit}/s")
    size_of = dict(sizes)
    projected = {n: project_parse(cost, [sum(size_of[f] for f in shard) for shard in shard_files(sizes, n)])
                 for n in workers}
    if len(cores) >= 2:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            halves = list(pool.map(lambda k: run_child(code, str(landing), str(k), "2", str(cores[k])), (0, 1)))
        wall = time.perf_counter() - t0
        if all(h is not None for h in halves):
            slowest = max(h["seconds"] for h in halves if h is not None)
            print(f"parse step, 2 processes on a core each: {wall:.1f} s wall = {one_wall / wall:.2f}x the "
                  f"1-core process (projected {projected[2]:.1f} s = {one_wall / projected[2]:.2f}x); slowest "
                  f"process parsing {slowest:.1f} s against {one['seconds'] / 2:.1f} s, half the 1-core parse")
    else:
        print("parse step, 2 processes on a core each: not measured (this process may use 1 core)")
    print("projection, N worker processes with a core each (not measured beyond 2: the 1-core cost, the "
          "pipeline's own shard plan over these files, no contention for disk or memory bandwidth; "
          "Dagster starts each step process in 3-6 s more, see docs/scale-out.md):")
    for n, seconds in projected.items():
        print(f"  {n:>2} workers: {seconds:6.1f} s = {one[unit] / seconds:>12,.0f} {unit}/s "
              f"= {one_wall / seconds:5.2f}x")
