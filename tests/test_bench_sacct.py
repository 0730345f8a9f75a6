"""The sacct benchmark runs from a clean checkout, and ``--scaling`` measures the pipeline's own parse
step and projects it from the measured 1-core run (the numbers themselves are measured on demand,
not here)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_sacct.py"


def test_scaling_parses_every_record_and_projects_from_the_measured_1_core_run(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--nodes", "20", "--days", "4", "--scaling", "--workdir", str(tmp_path)],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    loaded = re.search(r"input: 4 dumps, .* MiB, ([0-9,]+) allocation rows \+ ([0-9,]+) step rows", out)
    assert loaded, out
    records = sum(int(g.replace(",", "")) for g in loaded.groups())
    # The parse step alone reads what the ingest loaded: the same dumps, the same records.
    assert re.search(rf"parse step, 1 process: {records:,} records in [0-9.]+ s", out), out
    pinned = re.search(r"parse step pinned to 1 core: ([0-9.]+) s wall \(([0-9.]+) s parsing, ([0-9.]+) s process", out)
    assert pinned, out
    rows = re.findall(r"^\s+(\d+) workers:\s+([0-9.]+) s =\s+([0-9,]+) records/s =\s+([0-9.]+)x$", out, re.M)
    assert [int(r[0]) for r in rows] == [1, 2, 4, 8, 16, 32], out
    seconds = [float(r[1]) for r in rows]
    assert float(rows[0][3]) == 1.0 and abs(seconds[0] - float(pinned.group(1))) <= 0.05
    # More workers never take longer; 4 daily dumps cannot use more than 4 of them.
    assert seconds == sorted(seconds, reverse=True) and seconds[2:] == [seconds[2]] * 4
    if len(os.sched_getaffinity(0)) >= 2:
        assert re.search(r"2 processes on a core each: [0-9.]+ s wall = [0-9.]+x the 1-core process \(projected", out)
