"""One run per warehouse for the whole run: the run lock, two concurrent `gpusre run`s, a stale lock,
and an ad hoc reader holding the warehouse file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusre.models.warehouse_snapshot import remove_stale_snapshot_tmp, snapshot_path
from gpusre.pipelines.run_lock import WarehouseBusy, lock_path, warehouse_lock
from lock_holder import hold_lock

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]


def _start_run(landing: Path, warehouse: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([*GPUSRE, "run", "--landing", str(landing), "--warehouse", str(warehouse)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny landing: a run over it takes a few seconds."""
    out = tmp_path_factory.mktemp("lock") / "landing"
    proc = subprocess.run([*GPUSRE, "simulate", "--out", str(out), "--nodes", "2", "--days", "2",
                           "--start", "2026-09-01"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def test_second_holder_is_refused_at_once_with_pid_and_time(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    holder = hold_lock(wh)
    try:
        t0 = time.monotonic()
        with pytest.raises(WarehouseBusy, match=rf"warehouse busy: run {holder.pid} since \d{{4}}-\d\d-\d\dT"):
            with warehouse_lock(wh):
                pass
        assert time.monotonic() - t0 < 1.0  # no waiting
    finally:
        holder.kill()
        holder.wait()
    # The holder died without releasing: its text is still there, the kernel freed the lock.
    assert lock_path(wh).read_text().startswith(f"{holder.pid} ")
    messages: list[str] = []
    with warehouse_lock(wh, messages.append):
        assert lock_path(wh).read_text().startswith(f"{os.getpid()} ")
    assert len(messages) == 1 and f"stale lock: run {holder.pid} since" in messages[0]
    assert lock_path(wh).read_text() == ""  # released cleanly


def test_stale_snapshot_tmp_is_removed(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    tmp = snapshot_path(wh).with_name(snapshot_path(wh).name + ".tmp")
    tmp.write_bytes(b"half a copy")
    assert remove_stale_snapshot_tmp(wh) and not tmp.exists()
    assert not remove_stale_snapshot_tmp(wh)


def _collect_in_finishing_order(runs: list[subprocess.Popen[str]]) -> list[tuple[subprocess.Popen[str], str, str, bool]]:
    """(process, stdout, stderr, another run still running when it ended) in the order they ended."""
    finished: list[tuple[subprocess.Popen[str], str, str, bool]] = []
    pending = list(runs)
    while pending:
        for proc in pending:
            if proc.poll() is not None:
                out, err = proc.communicate()
                finished.append((proc, out, err, any(p.poll() is None for p in pending if p is not proc)))
                pending.remove(proc)
                break
        else:
            time.sleep(0.1)
    return finished


def _assert_one_completed_one_refused(finished: list[tuple[subprocess.Popen[str], str, str, bool]]) -> None:
    (loser, out_l, err_l, other_running), (winner, out_w, err_w, _) = finished
    assert winner.returncode == 0, err_w
    assert "report:" in out_w and "Traceback" not in err_w
    assert loser.returncode == 1, (out_l, err_l)
    assert other_running  # refused at once, not after waiting for the winner
    assert err_l.strip().count("\n") == 0 and "Traceback" not in err_l
    assert f"warehouse busy: run {winner.pid} since" in err_l or "warehouse busy: another run (starting)" in err_l


def test_two_runs_started_together_one_completes_one_is_refused(landing: Path, tmp_path: Path) -> None:
    """Two runs started at the same moment race for the lock: either may win; the other exits 1 at
    once (while the winner still runs) with one line and no traceback."""
    wh = tmp_path / "w.duckdb"
    _assert_one_completed_one_refused(_collect_in_finishing_order([_start_run(landing, wh), _start_run(landing, wh)]))


def test_run_started_while_another_is_mid_run_is_refused(landing: Path, tmp_path: Path) -> None:
    """A second run started while the first holds the lock mid-run is refused at once, and the first
    completes. The first run is frozen (SIGSTOP) once it holds the lock, so that it cannot finish
    before the second run has even started up (a fixed delay raced with it on a fast machine)."""
    wh = tmp_path / "w.duckdb"
    first = _start_run(landing, wh)
    deadline = time.monotonic() + 300
    while not (lock_path(wh).exists() and lock_path(wh).read_text().startswith(f"{first.pid} ")):
        assert first.poll() is None and time.monotonic() < deadline, "the first run never took the lock"
        time.sleep(0.05)
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = _start_run(landing, wh)
        _, err = second.communicate(timeout=300)
        assert second.returncode == 1, err
        assert f"warehouse busy: run {first.pid} since" in err
        assert err.strip().count("\n") == 0 and "Traceback" not in err
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert "report:" in out and "Traceback" not in err
    assert lock_path(wh).read_text() == ""  # released cleanly


def test_reader_holding_the_file_is_pointed_at_the_snapshot(landing: Path, tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    done = _start_run(landing, wh)
    assert done.wait(timeout=300) == 0
    reader = subprocess.Popen([sys.executable, "-c",
                               "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
                               "print('ok', flush=True); time.sleep(60)", str(wh)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ok"
        proc = _start_run(landing, wh)
        _, err = proc.communicate(timeout=300)
    finally:
        reader.kill()
        reader.wait()
    assert proc.returncode == 1
    assert str(snapshot_path(wh)) in err and "not a gpusre run" in err and "Traceback" not in err
    assert err.strip().count("\n") == 0, err


def test_reports_during_a_run_read_the_snapshot_with_a_note(landing: Path, tmp_path: Path) -> None:
    """A report asked for while a run holds the warehouse reads the last complete run's snapshot and says
    so in one line; before any snapshot exists it is a one-line "busy" error, never a traceback."""
    wh, out = tmp_path / "w.duckdb", tmp_path / "out"
    done = _start_run(landing, wh)
    assert done.wait(timeout=300) == 0
    holder = hold_lock(wh)
    try:
        reports = {"nightly": ["nightly"], "slo": ["slo"], "dated nightly": ["nightly", "--date", "2026-09-01"]}
        for name, args in reports.items():
            proc = subprocess.run([*GPUSRE, "report", *args, "--warehouse", str(wh), "--out", str(out)],
                                  capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, (name, proc.stderr)
            notes = [line for line in proc.stderr.splitlines() if line.startswith("gpusre: note: the warehouse is busy")]
            assert len(notes) == 1, (name, proc.stderr)  # once, though nightly --date opens it twice
            assert f"run {holder.pid} since" in notes[0] and str(snapshot_path(wh)) in notes[0]
            html = Path(proc.stdout.splitlines()[0])
            assert html.is_file() and str(snapshot_path(wh)) in html.read_text()  # the label names what was read
        snapshot_path(wh).unlink()
        proc = subprocess.run([*GPUSRE, "report", "slo", "--warehouse", str(wh), "--out", str(out)],
                              capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert f"warehouse busy: run {holder.pid} since" in proc.stderr and "no snapshot" in proc.stderr


def _one_sacct_landing(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "a.psv").write_text("JobID|State\n1|COMPLETED\n")
    return landing


def test_dagster_runs_take_the_lock_too_and_give_up_with_one_line(tmp_path: Path) -> None:
    """A run the schedule or the sensor launches (not through the CLI) holds the same lock; when it
    is busy the run waits up to ``lock_wait_seconds`` and then fails with the one-line error."""
    import dagster as dg

    from gpusre.assets.ingest_sacct import raw_sacct
    from gpusre.pipelines.resources import WarehouseResource, default_resources

    wh = tmp_path / "w.duckdb"
    resources = {**default_resources(str(wh), str(_one_sacct_landing(tmp_path)), str(tmp_path / "reports")),
                 "warehouse": WarehouseResource(path=str(wh), lock_wait_seconds=1)}
    holder = hold_lock(wh)
    try:
        t0 = time.monotonic()
        with pytest.raises(dg.DagsterResourceFunctionError) as info:  # Dagster wraps a resource's error
            dg.materialize([raw_sacct], resources=resources)
        assert 1.0 <= time.monotonic() - t0 < 30
        assert isinstance(info.value.__cause__, WarehouseBusy)
        message = str(info.value.__cause__)
        assert f"warehouse busy: run {holder.pid} since" in message and "(waited 1 s)" in message
        assert "\n" not in message
    finally:
        holder.kill()
        holder.wait()
    assert dg.materialize([raw_sacct], resources=resources).success
    assert lock_path(wh).read_text() == ""  # released after the run


def test_dagster_run_waits_for_a_busy_warehouse(tmp_path: Path) -> None:
    """By default (2 h) a Dagster-launched run that meets a held lock waits and then runs, instead of
    failing at once (what lost the sensor's change set); the CLI still refuses at once (above)."""
    import threading

    import dagster as dg

    from gpusre.assets.ingest_sacct import raw_sacct
    from gpusre.pipelines.resources import LOCK_WAIT_SECONDS, default_resources

    wh = tmp_path / "w.duckdb"
    resources = default_resources(str(wh), str(_one_sacct_landing(tmp_path)), str(tmp_path / "reports"))
    assert resources["warehouse"].lock_wait_seconds == LOCK_WAIT_SECONDS == 7200
    holder = hold_lock(wh)
    release = threading.Timer(2.0, holder.kill)
    release.start()
    try:
        t0 = time.monotonic()
        instance = dg.DagsterInstance.ephemeral()
        result = dg.materialize([raw_sacct], resources=resources, instance=instance)
        waited = time.monotonic() - t0
    finally:
        release.cancel()
        holder.kill()
        holder.wait()
    assert result.success and waited >= 2.0
    warnings = [e.user_message for e in instance.all_logs(result.run_id) if "waiting up to 2 h" in e.user_message]
    assert warnings and f"warehouse busy: run {holder.pid} since" in warnings[0]
    assert lock_path(wh).read_text() == ""


def test_lock_wait_polls_then_gives_up(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    holder = hold_lock(wh)
    messages: list[str] = []
    try:
        t0 = time.monotonic()
        with pytest.raises(WarehouseBusy, match=r"warehouse busy: run \d+ since .*\(waited 1\.5 s\)$"):
            with warehouse_lock(wh, messages.append, wait_seconds=1.5, poll_seconds=0.2):
                pass
        assert 1.5 <= time.monotonic() - t0 < 10
        assert len(messages) == 1 and "waiting up to 1.5 s" in messages[0]
    finally:
        holder.kill()
        holder.wait()
    with warehouse_lock(wh, wait_seconds=1.5, poll_seconds=0.2):  # free again: taken at once
        pass
