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

``gpusre run`` refuses at once when the warehouse is busy. A run Dagster launches (schedule,
sensor, the UI) waits for the lock instead (``wait_seconds``, polling; the warehouse resource's
``lock_wait_seconds``, 2 h by default) and fails with the same one-line error only when it gives
up: the nightly run that meets a long ``gpusre run`` runs after it rather than being lost. The
landing sensor does not launch while the lock is held (:func:`busy_holder`, which only looks:
it never takes the lock, so it cannot make a starting ``gpusre run`` fail).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["INHERITED_LOCK", "WarehouseBusy", "busy_holder", "inherit_lock", "lock_path", "warehouse_lock"]

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


def _try_flock(fd: int, mode: int) -> bool:
    """Take ``mode`` (``LOCK_EX``/``LOCK_SH``) on ``fd`` without blocking: False when another process
    holds a conflicting lock; any other error is raised."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        return False
    return True


#: Seconds between two attempts while a run waits for the lock.
POLL_SECONDS = 5.0


def _take(fd: int, key: str, wait_seconds: float, poll_seconds: float,
          progress: Callable[[str], None], warehouse: Path, path: Path) -> bool:
    """Take the flock on ``fd``, waiting up to ``wait_seconds``; False when the holder is this
    process's parent run (inherited); raise :class:`WarehouseBusy` when it gives up."""
    deadline = time.monotonic() + max(0.0, wait_seconds)
    said = False
    while True:
        if _try_flock(fd, fcntl.LOCK_EX):
            return True
        if _inherited(key, fd):  # a step process of the run that holds it
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            waited = f" (waited {_duration(wait_seconds)})" if wait_seconds > 0 else ""
            raise WarehouseBusy(f"{warehouse}: warehouse busy: {_holder(fd)} (lock {path}){waited}")
        if not said:
            progress(f"warehouse busy: {_holder(fd)}; waiting up to {_duration(wait_seconds)} for the lock {path}")
            said = True
        time.sleep(min(poll_seconds, left))


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


@contextmanager
def warehouse_lock(warehouse: Path, progress: Callable[[str], None] = lambda _msg: None, *,
                   wait_seconds: float = 0.0, poll_seconds: float = POLL_SECONDS) -> Iterator[Path]:
    """Hold the run lock of ``warehouse`` for the ``with`` block. When another live process holds
    it: raise :class:`WarehouseBusy` at once (``wait_seconds`` 0, what ``gpusre run`` does), or try
    again every ``poll_seconds`` for up to ``wait_seconds`` and raise it then (Dagster-launched
    runs). Re-entrant within a process. Yields the lock file's path."""
    path = lock_path(warehouse)
    key = str(path.resolve())
    if key in _HELD:  # this process holds it already (the CLI takes it before importing Dagster)
        yield path
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _take(fd, key, wait_seconds, poll_seconds, progress, Path(warehouse), path):
            yield path  # a step process of the run that holds it
            return
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


def busy_holder(warehouse: Path) -> str | None:
    """'run <pid> since <time>' (or 'another run (starting)') when another process holds the run
    lock of ``warehouse``, else None. Only looks: on Linux it reads ``/proc/locks`` and never takes
    the lock, so a ``gpusre run`` starting at that moment is not refused because of the look;
    elsewhere it probes with a shared lock released at once."""
    path = lock_path(warehouse)
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if str(path.resolve()) in _HELD:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        held = _held_per_proc_locks(st)
        if held is None:
            held = not _try_flock(fd, fcntl.LOCK_SH)
            if not held:
                fcntl.flock(fd, fcntl.LOCK_UN)
        return _holder(fd) if held else None
    finally:
        os.close(fd)


def _held_per_proc_locks(st: os.stat_result) -> bool | None:
    """Whether ``/proc/locks`` lists a granted flock on the file ``st`` describes; None without it."""
    ident = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "5: FLOCK  ADVISORY  WRITE 11202 fe:00:2146373 0 EOF"; waiters carry "->" after the number
        if "->" in fields[1:2] or len(fields) < 6:
            continue
        if fields[1] == "FLOCK" and fields[5] == ident:
            return True
    return False


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
