"""How long Polars' allocator keeps freed memory for reuse: set before Polars first allocates.

Polars allocates with its own jemalloc, which it sets up to give freed pages back to the kernel
after 0.5 s (``dirty_decay_ms:500`` in ``polars/__init__.py``, so that idle processes shrink;
pola-rs/polars#18088); the next large frame then page-faults them in again, zero-filled. The
ingest builds and frees frames of a million lines over and over, so on the node-log benchmark
(10 M lines, 2-core VM, 2026-12-03) 12.4 of its 43 CPU-seconds were the kernel's. Measured there:
the default 0.5 s, 36.8 s and 2.4 GB peak RSS; 3 s, 31.1 s and 2.7 GB; 20 s, 29.8 s and 3.1 GB;
never, 30.4 s and 3.4 GB (over the ingest's 3 GB budget). With 10 s the kernel's share is 5-6 s;
on today's code the ingest peaks at 1.9-2.0 GB. Memory is still returned when the process idles,
so a long-lived process (a Dagster daemon, a notebook) does not keep its peak.

The setting is jemalloc's ``_RJEM_MALLOC_CONF`` environment variable, which Polars appends to
its own options when it is imported (later options win). :func:`keep_freed_memory` runs first
thing in each of gpusre's packages, so it takes effect in any process that imports gpusre before
Polars, and in every child process (Dagster's multiprocess executor, the benchmarks' children)
through the environment. A decay the user set is left alone.

A process whose parent imported Polars first inherits Polars' own options in that variable
(Polars writes them back into ``os.environ``). They are not the user's: left alone, they kept
the 0.5 s decay in every child of such a parent (the benchmarks' children ran 1.4-1.6 s slower on
10 M node-log lines, 2026-12-03), so options that are only Polars' own defaults are extended.
"""

from __future__ import annotations

import os

__all__ = ["POLARS_MALLOC_CONF", "keep_freed_memory"]

#: jemalloc options: freed pages stay reusable for 10 s, then go back to the kernel at once.
POLARS_MALLOC_CONF = "dirty_decay_ms:10000,muzzy_decay_ms:0"
#: The options Polars itself writes in front of any inherited value when it is imported
#: (``polars/__init__.py``; with ``POLARS_THP=1`` also the THP ones).
_POLARS_OWN = frozenset({"dirty_decay_ms:500", "muzzy_decay_ms:1000", "thp:always", "metadata_thp:always"})
_DECAY_KEYS = ("dirty_decay_ms:", "muzzy_decay_ms:")


def keep_freed_memory() -> None:
    """Set Polars' allocator options unless the environment already sets a decay of its own
    (options that are only Polars' defaults, inherited from a parent, are not the user's)."""
    current = os.environ.get("_RJEM_MALLOC_CONF", "")
    users = [opt for opt in current.split(",") if opt and opt not in _POLARS_OWN]
    if any(opt.startswith(_DECAY_KEYS) for opt in users):
        return
    os.environ["_RJEM_MALLOC_CONF"] = f"{current},{POLARS_MALLOC_CONF}" if current else POLARS_MALLOC_CONF
