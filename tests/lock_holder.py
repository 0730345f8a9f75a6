"""A process that holds a warehouse's run lock, as `gpusre run` holds it (pid and time in the lock file):
shared by the run-lock and sensor tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def hold_lock(warehouse: Path) -> subprocess.Popen[str]:
    """Another process in ``warehouse_lock(warehouse)`` (returns once it holds it; it sleeps 60 s)."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "from gpusre.pipelines.run_lock import warehouse_lock\n"
                               "with warehouse_lock(sys.argv[1]):\n"
                               "    print('held', flush=True); time.sleep(60)\n", str(warehouse)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder
