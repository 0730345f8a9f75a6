"""Run a benchmark's measured part in a child process on a fresh warehouse, so peak RSS is the
measured work's own (not the input generator's) and every run starts from an empty file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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
