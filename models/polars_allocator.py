"""How long Polars' allocator keeps freed memory for reuse: set before Polars first allocates.

Polars allocates with its own jemalloc, which it sets up to give freed pages back to the kernel
after 0.5 s (``dirty_decay_ms:500`` in ``polars/__init__.py``, so that idle processes shrink;
pola-rs/polars#18088); the next large frame then page-faults them in again, zero-filled. The
ingest builds and frees frames of a million lines over and over, so on the node-log benchmark
(10 M lines, 2-core VM, 2026-12-03) 12.4 of its 43 CPU-seconds were the kernel's. Keeping freed
pages for 10 s took the kernel's share to 5-6 s and the ingest from 36.8 to 25.5-30.0 s (this
VM is noisy), for 2.4-2.5 instead of 2.4 GB peak RSS; 3 s kept 10 s of kernel time, and never
returning them peaked at 3.4 GB, over the ingest's 3 GB budget. Memory is still returned when the process idles, so a
long-lived process (a Dagster daemon, a notebook) does not keep its peak.

The setting is jemalloc's ``_RJEM_MALLOC_CONF`` environment variable, which Polars appends to
its own options when it is imported (later options win). :func:`keep_freed_memory` runs first
thing in each of gpusre's packages, so it takes effect in any process that imports gpusre before
Polars, and in every child process (Dagster's multiprocess executor, the benchmarks' children)
through the environment. A value the user set is left alone.
"""

from __future__ import annotations

import os

__all__ = ["POLARS_MALLOC_CONF", "keep_freed_memory"]

#: jemalloc options: freed pages stay reusable for 10 s, then go back to the kernel at once.
POLARS_MALLOC_CONF = "dirty_decay_ms:10000,muzzy_decay_ms:0"


def keep_freed_memory() -> None:
    """Set Polars' allocator options unless the environment already has some."""
    os.environ.setdefault("_RJEM_MALLOC_CONF", POLARS_MALLOC_CONF)
