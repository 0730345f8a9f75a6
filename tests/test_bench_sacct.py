"""The sacct benchmark runs from a clean checkout, and ``--scaling`` measures the pipeline's own parse
step and projects it from the measured 1-core run (the numbers themselves are measured on demand,
not here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench_projection_output import check_projection

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
    check_projection(out, "records", useful_workers=4)  # 4 files cannot use more than 4 workers
    verdict = next(line for line in out.splitlines() if line.startswith("issue 2's target"))
    assert verdict.endswith("(issue 15's, >= 0.6x DuckDB's read_csv, is printed with --floor)"), verdict
