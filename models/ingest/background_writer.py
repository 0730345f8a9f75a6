"""Warehouse writes on one background thread, in submission order, while the caller prepares the
next batch.

Why: DuckDB's insert into a compressed table runs on about one core (about 2.5 s per million
node-log lines), so an ingest that parses on one thread and inserts on another keeps both cores
busy. A DuckDB connection must not be used by two threads at once: the writer thread uses it while
writes are queued, the caller only after :meth:`BackgroundWriter.drain`. Leaving the ``with`` block
waits for every queued write, so when the caller's transaction is entered *before* the writer (``with
transaction(con), BackgroundWriter(...)``), an error rolls back only after the writes have stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any

__all__ = ["BackgroundWriter"]


class BackgroundWriter:
    """One writer thread; ``submit`` queues a call, ``drain`` waits for all and re-raises the first failure."""

    def __init__(self, thread_name: str) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        self._writes: list[Future[Any]] = []

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Wait for every queued write (their failures are not raised here) and stop the thread."""
        self._pool.shutdown(wait=True)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> None:
        """Queue ``fn(*args, **kwargs)`` after every write submitted before it."""
        self._writes.append(self._pool.submit(fn, *args, **kwargs))

    def drain(self) -> None:
        """Wait for every queued write; re-raise the first failure. The caller may then use the
        connection itself."""
        writes, self._writes = self._writes, []
        for write in writes:
            write.result()
