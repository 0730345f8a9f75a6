"""What a benchmark's ``--scaling`` output must show of its per-core runs and projection
(``benchmarks/isolated_run.run_per_core``), checked the same way for every source."""

from __future__ import annotations

import os
import re


def check_projection(out: str, unit: str, useful_workers: int) -> None:
    """The 1-core run is printed; the projection starts at it (1 worker = 1.00x), never takes longer
    with more workers, and stops gaining past ``useful_workers`` (the files cannot be split further);
    the 2-core run is printed where this process may use 2 cores."""
    pinned = re.search(r"parse step pinned to 1 core: ([0-9.]+) s wall \(([0-9.]+) s parsing, ([0-9.]+) s process", out)
    assert pinned, out
    assert float(pinned.group(2)) > 0 and float(pinned.group(3)) > 0
    rows = re.findall(rf"^\s+(\d+) workers:\s+([0-9.]+) s =\s+([0-9,]+) {unit}/s =\s+([0-9.]+)x$", out, re.M)
    workers = [int(r[0]) for r in rows]
    assert workers == [1, 2, 4, 8, 16, 32], out
    seconds = [float(r[1]) for r in rows]
    assert float(rows[0][3]) == 1.0 and abs(seconds[0] - float(pinned.group(1))) <= 0.05
    assert seconds == sorted(seconds, reverse=True)
    first_full = workers.index(useful_workers)
    assert seconds[first_full:] == [seconds[first_full]] * (len(seconds) - first_full)
    if len(os.sched_getaffinity(0)) >= 2:
        assert re.search(r"2 processes on a core each: [0-9.]+ s wall = [0-9.]+x the 1-core process \(projected", out)
