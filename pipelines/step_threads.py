"""Polars threads per step process when parse steps run side by side (``gpusre run --workers N``).

Why: Polars sizes its thread pool to every core the process may use. N parse processes on a
K-core machine would run N x K threads, and the more processes, the more they get in each other's
way (context switches, evicted caches). joblib's process workers cap the
OpenMP/BLAS pools the same way (cores // workers; joblib/joblib#1548 asks it for Polars too). With
a core's worth of threads per worker the step has the shape ``benchmarks/parse_projection.py``
projects: one worker per core. Measured on 2 cores (2026-12-03/04), 2 parse processes over half
the files each, a pool of 2 threads each against 1, three interleaved pairs: sacct's year (4.3 M
records) 9.9-12.2 s against 9.0-9.6 s; 10 M node-log lines in ten central files 15.1-18.8 s against
14.9-15.8 s, in 2,000 per-node files 14.4-14.6 s against 14.1-14.5 s. The steps that run alone in
the ingest job (upserts, publishes) took the same time either way: their work is DuckDB's, whose
threads this does not limit.

How: Polars reads ``POLARS_MAX_THREADS`` when it is imported, and the multiprocess executor forks its
step processes from a fork server that imports Polars when it starts (``PRELOADED_MODULES``), with
the environment it started with. So the variable is set for the run, before the executor starts
its fork server: in a process that runs several parallel jobs, the first one's value holds for all
(``gpusre run`` runs one). A value the user set is left alone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["POLARS_THREADS_VARIABLE", "step_process_threads", "threads_per_worker"]

POLARS_THREADS_VARIABLE = "POLARS_MAX_THREADS"


def threads_per_worker(cores: int, workers: int) -> int:
    """Polars threads for each of ``workers`` step processes on ``cores`` cores: an equal share, at
    least one.

    >>> threads_per_worker(64, 16), threads_per_worker(2, 2), threads_per_worker(2, 8), threads_per_worker(6, 4)
    (4, 1, 1, 1)
    """
    return max(1, cores // max(1, workers))


@contextmanager
def step_process_threads(workers: int, cores: int) -> Iterator[int]:
    """Within the block, step processes started from here get ``threads_per_worker(cores, workers)``
    Polars threads (unless ``POLARS_MAX_THREADS`` is set already: then that); yields the number they
    get. The environment is as before afterwards."""
    user = os.environ.get(POLARS_THREADS_VARIABLE)
    if user:
        yield int(user) if user.isdigit() else cores
        return
    os.environ[POLARS_THREADS_VARIABLE] = str(threads_per_worker(cores, workers))
    try:
        yield int(os.environ[POLARS_THREADS_VARIABLE])
    finally:
        os.environ.pop(POLARS_THREADS_VARIABLE, None)
