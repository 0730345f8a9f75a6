"""One ``gpusre run`` per warehouse at a time, for the whole run.

DuckDB allows one writing process per file, but a run opens and closes the file in every step, so
without a lock of its own a second run slips in between two steps of the first and one of them
fails half way. A run therefore holds an exclusive ``flock`` on ``<warehouse>.lock`` (next to the
warehouse) from its first step to its last, snapshot included; the file says which process holds it
and since when, so a second run refuses at once with "warehouse busy: run <pid> since <time>".

The kernel releases a ``flock`` when its process dies, however it dies: a lock left by a killed run
is never an obstacle. A run that exits normally empties the file, so text still in it when the lock
is taken is the trace of a dead run: it is reported (stale) and taken over. ``flock`` is not
reliable on every network file system: keep the warehouse on a local disk.

Steps on Dagster's multiprocess executor run in child processes of the run that holds the lock;
the holder passes it down in the environment (:data:`INHERITED_LOCK`, set by
:func:`inherit_lock`), and a child whose lock file names that holder treats the lock as its own.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["INHERITED_LOCK", "WarehouseBusy", "inherit_lock", "lock_path", "warehouse_lock"]

#: Environment variable ``<lock file>:<pid>`` through which a run passes its lock to its step processes.
INHERITED_LOCK = "GPUSRE_RUN_LOCK"


#: Lock files this process holds: taking one again (nested) is a no-op, not a self-deadlock.
_HELD: set[str] = set()


class WarehouseBusy(RuntimeError):
    """Another run holds the warehouse; the message is one line."""


def lock_path(warehouse: Path) -> Path:
    """``w.duckdb`` → ``w.duckdb.lock`` (same folder)."""
    warehouse = Path(warehouse)
    return warehouse.with_name(warehouse.name + ".lock")


def _holder(fd: int) -> str:
    """'run <pid> since <time>' from the lock file's text, or a placeholder while it is being written."""
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 256).decode("utf-8", errors="replace").split()
    return f"run {text[0]} since {text[1]}" if len(text) >= 2 else "another run (starting)"


@contextmanager
def warehouse_lock(warehouse: Path, progress: Callable[[str], None] = lambda _msg: None) -> Iterator[Path]:
    """Hold the run lock of ``warehouse`` for the ``with`` block; raise :class:`WarehouseBusy` at
    once (no waiting) when another live process holds it. Re-entrant within a process. Yields the
    lock file's path."""
    path = lock_path(warehouse)
    key = str(path.resolve())
    if key in _HELD:  # this process holds it already (the CLI takes it before importing Dagster)
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            if _inherited(key, fd):  # a step process of the run that holds it
                yield path
                return
            raise WarehouseBusy(f"{warehouse}: warehouse busy: {_holder(fd)} (lock {path})") from None
        previous = _holder(fd)
        if previous != "another run (starting)":
            progress(f"      taking over a stale lock: {previous} ended without releasing it")
        started = datetime.now(UTC).replace(microsecond=0).isoformat()
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {started}\n".encode(), 0)
        os.fsync(fd)
        _HELD.add(key)
        try:
            yield path
        finally:
            _HELD.discard(key)
            os.ftruncate(fd, 0)  # released cleanly: no stale text for the next run
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _inherited(key: str, fd: int) -> bool:
    """True when this process's environment names the lock's current holder (see :func:`inherit_lock`)."""
    os.lseek(fd, 0, os.SEEK_SET)
    holder = os.read(fd, 256).decode("utf-8", errors="replace").split()
    return bool(holder) and os.environ.get(INHERITED_LOCK) == f"{key}:{holder[0]}"


@contextmanager
def inherit_lock(warehouse: Path) -> Iterator[None]:
    """While held by this process, let child processes (Dagster step processes) use the lock of
    ``warehouse`` as their own."""
    key = str(lock_path(warehouse).resolve())
    if key not in _HELD:
        raise RuntimeError(f"{warehouse}: the run lock is not held by this process")
    previous = os.environ.get(INHERITED_LOCK)
    os.environ[INHERITED_LOCK] = f"{key}:{os.getpid()}"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(INHERITED_LOCK, None)
        else:
            os.environ[INHERITED_LOCK] = previous
