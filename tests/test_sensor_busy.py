"""The landing sensor does not spend a change set on a run that cannot start: while the warehouse's
run lock is held it skips ("warehouse busy …; will retry") and keeps its cursor."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from gpusre.pipelines.definitions import build_definitions
from gpusre.pipelines.resources import LandingResource
from gpusre.pipelines.run_lock import busy_holder, lock_path, warehouse_lock
from lock_holder import hold_lock


def _flock(warehouse: Path) -> subprocess.Popen[str]:
    """`flock <warehouse>.lock sleep 60`, as the evaluator held it (an empty lock file), once held."""
    lock_path(warehouse).parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(["flock", str(lock_path(warehouse)), "sh", "-c", "echo held; sleep 60"],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    """Kill the holder (and, for flock, the shell that inherited its descriptor)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL) if os.getpgid(proc.pid) == proc.pid else proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.mark.skipif(shutil.which("flock") is None, reason="needs util-linux flock")
def test_sensor_keeps_its_cursor_while_the_warehouse_is_busy(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-12-01.psv").write_text("JobID|State\n1|COMPLETED\n")
    wh = tmp_path / "wh" / "warehouse.duckdb"
    defs = build_definitions(str(wh), str(landing), str(tmp_path / "reports"))
    sensor = defs.get_repository_def().get_sensor_def("landing_sensor")
    resources = {"landing": LandingResource(path=str(landing))}

    holder = _flock(wh)
    try:
        busy = sensor(dg.build_sensor_context(cursor=None, resources=resources))
        assert not busy.run_requests
        message = busy.skip_reason.skip_message if busy.skip_reason else ""
        assert message.startswith("warehouse busy: another run (starting)") and "will retry" in message
        assert busy.cursor is None  # not advanced: the next tick sees the same change set
        # The look never takes the lock: the holder still holds it, and so would a starting run.
        assert busy_holder(wh) == "another run (starting)"
    finally:
        _stop(holder)

    free = sensor(dg.build_sensor_context(cursor=None, resources=resources))
    assert [r.partition_key for r in free.run_requests] == ["2026-12-01"]
    assert free.cursor
    again = sensor(dg.build_sensor_context(cursor=free.cursor, resources=resources))
    assert not again.run_requests and "no new or changed files" in again.skip_reason.skip_message

    # A change while a `gpusre run` holds the lock waits for it, then is requested.
    (landing / "sacct" / "sacct_2026-12-02.psv").write_text("JobID|State\n2|FAILED\n")
    holder = hold_lock(wh)
    try:
        busy = sensor(dg.build_sensor_context(cursor=free.cursor, resources=resources))
        assert busy.cursor is None and not busy.run_requests
        assert f"warehouse busy: run {holder.pid} since" in busy.skip_reason.skip_message
    finally:
        _stop(holder)
    later = sensor(dg.build_sensor_context(cursor=free.cursor, resources=resources))
    assert [r.partition_key for r in later.run_requests] == ["2026-12-02"]


def test_busy_holder(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    assert busy_holder(wh) is None  # no lock file
    with warehouse_lock(wh):
        assert busy_holder(wh) is None  # this process's own lock is not "busy"
    assert lock_path(wh).exists() and busy_holder(wh) is None
    holder = hold_lock(wh)
    try:
        assert busy_holder(wh) == f"run {holder.pid} since {lock_path(wh).read_text().split()[1]}"
    finally:
        _stop(holder)
    assert busy_holder(wh) is None  # a dead holder's text is not a lock
