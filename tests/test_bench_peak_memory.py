"""A benchmark child reports its own peak memory, not the memory of the process that started it
(on Linux ``ru_maxrss`` carries the parent's high-water mark across ``exec``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from isolated_run import run_child  # noqa: E402 - the benchmarks are scripts, not a package
from peak_memory import peak_rss_mb  # noqa: E402

CHILD = r"""
import json
from peak_memory import peak_rss_mb
block = bytearray(64 * 2**20)  # touched: 64 MiB resident
print(json.dumps({"peak_rss_mb": peak_rss_mb()}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_child_started_from_a_large_process_reports_its_own_peak() -> None:
    ballast = bytearray(600 * 2**20)  # the parent's resident memory rises by 600 MiB
    assert peak_rss_mb() >= 600
    child = run_child(CHILD)
    del ballast
    assert child is not None
    # Its own 64 MiB block and an interpreter, far below the parent's 600 MiB and more.
    assert 64 <= child["peak_rss_mb"] < 300, child
