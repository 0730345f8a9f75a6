"""Peak resident memory of this process, measured so that a parent's memory does not count.

Why not ``resource.getrusage(RUSAGE_SELF).ru_maxrss``: on Linux a process started by another
inherits, at ``exec``, the high-water mark of the memory it was started from (the parent's, when
Python starts children with ``vfork``), so a benchmark child started after the benchmark simulated
its input in process reported the simulator's peak: 1,958 MB for a sacct parse that peaks at
829 MB (2026-12-04, the sacct year). ``VmHWM`` in ``/proc/self/status`` is the high-water mark of
this process's own memory, all threads included.
"""

from __future__ import annotations

import resource
import sys


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (``VmHWM``; ``ru_maxrss`` where ``/proc`` is
    missing, which on Linux may include the parent's memory at start, see the module docstring)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss / 2**20 if sys.platform == "darwin" else maxrss / 1024  # bytes on macOS, kB on Linux
