"""The ingests' writer thread: calls run in submission order, drain() re-raises the first failure."""

from __future__ import annotations

import threading

import pytest

from gpusre.models.ingest.background_writer import BackgroundWriter


def test_calls_run_in_order_on_one_other_thread_and_drain_waits() -> None:
    seen: list[tuple[int, str]] = []

    def record(k: int, *, note: str) -> None:
        seen.append((k, threading.current_thread().name))

    with BackgroundWriter("t-writer") as writer:
        for i in range(50):
            writer.submit(record, i, note="keyword arguments pass through")
        writer.drain()
        assert [k for k, _ in seen] == list(range(50))
    assert {name for _, name in seen} == {"t-writer_0"}


def test_drain_reraises_the_first_failure_and_close_does_not() -> None:
    def fail(msg: str) -> None:
        raise OSError(msg)

    writer = BackgroundWriter("t-writer")
    writer.submit(fail, "first")
    writer.submit(fail, "second")
    with pytest.raises(OSError, match="first"):
        writer.drain()
    writer.drain()  # the queue was emptied: nothing left to raise
    writer.submit(fail, "during shutdown")
    writer.close()  # waits for it, without raising (the caller is failing already)
