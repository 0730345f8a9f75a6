"""Fault injection end to end: `gpusre run` over a landing with every kind of bad file.

Each bad file is its own unit of failure: the run writes its reports, exits 1, prints one
`gpusre: error: <file>: <problem>` line per refused file and no traceback, loads the complete
records before a fault, and loads every good record of every other file exactly as a clean run does.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpusre.models.warehouse import connect

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]


def _gpusre(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GPUSRE, *args], capture_output=True, text=True, timeout=600)


def _run(landing: Path, warehouse: Path) -> subprocess.CompletedProcess[str]:
    return _gpusre("run", "--landing", str(landing), "--warehouse", str(warehouse),
                   "--reports", str(warehouse.parent / "reports"))


def _ledger(warehouse: Path) -> dict[str, tuple[str, int, int, str | None]]:
    con = connect(warehouse, read_only=True)
    try:
        rows = con.sql("SELECT source_file, status, rows_loaded, rows_rejected, error FROM raw.ingested_files").fetchall()
    finally:
        con.close()
    return {f: (status, loaded, rejected, error) for f, status, loaded, rejected, error in rows}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[str, int, int, str | None]]]:
    """A tiny simulated landing and the ledger of a clean run over it (the baseline)."""
    root = tmp_path_factory.mktemp("faults")
    landing = root / "landing"
    proc = _gpusre("simulate", "--out", str(landing), "--nodes", "4", "--days", "3",
                   "--start", "2026-09-01")
    assert proc.returncode == 0, proc.stderr
    wh = root / "clean" / "w.duckdb"
    proc = _run(landing, wh)
    assert proc.returncode == 0, proc.stderr
    return landing, _ledger(wh)


def _inject_faults(landing: Path) -> dict[str, str]:
    """Damage a copy of the landing; returns {source_file: expected start of its refusal reason}."""
    expected: dict[str, str] = {}
    # A node log rotated mid-write: a truncated .gz (the complete lines before the cut must load).
    log = landing / "syslog" / "2026-09-02" / "central.log"
    body = gzip.compress(log.read_bytes())
    (log.parent / "central.log.gz").write_bytes(body[: len(body) * 2 // 3])
    log.unlink()
    expected["syslog/2026-09-02/central.log.gz"] = "truncated gzip stream after"
    # Garbage after the gzip magic, in alerts.
    (landing / "alerts" / "2026-09-02.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(300))
    expected["alerts/2026-09-02.jsonl.gz"] = "corrupt gzip stream"
    # A node-state dump saved as UTF-16.
    events = landing / "slurm_events" / "events_2026-09-03.txt"
    events.write_bytes(events.read_text().encode("utf-16"))
    expected["slurm_events/events_2026-09-03.txt"] = "UTF-16 encoded: convert to UTF-8"
    # A symlink loop and a dangling symlink.
    (landing / "syslog" / "loop.log").symlink_to("loop.log")
    expected["syslog/loop.log"] = "symlink loop"
    (landing / "alerts" / "gone.jsonl").symlink_to("/nonexistent/alerts.jsonl")
    expected["alerts/gone.jsonl"] = "dangling symlink"
    # A file without read permission (root reads it anyway: then it is an ordinary good file).
    if os.geteuid() != 0:
        secret = landing / "syslog" / "secret.log"
        secret.write_text("2026-09-02T10:00:00+00:00 gpu001 kernel: hello\n")
        secret.chmod(0)
        expected["syslog/secret.log"] = "permission denied"
    return expected


def test_every_bad_file_is_refused_alone(clean: tuple[Path, dict], tmp_path: Path) -> None:
    landing0, baseline = clean
    landing = tmp_path / "landing"
    shutil.copytree(landing0, landing, symlinks=True)
    expected = _inject_faults(landing)
    # sacct --json with wrongly typed fields: those jobs are rejects, the good job loads.
    jobs = {"jobs": [
        {"job_id": 900001, "state": {"current": ["COMPLETED"]}, "restart_cnt": "2"},
        {"job_id": 900002, "state": {"current": ["COMPLETED"]}, "time": {"start": 1788220800000}},
        {"job_id": 900003, "state": {"current": ["COMPLETED"]}, "time": {"start": 1788220800, "end": 1788224400}},
    ]}
    (landing / "sacct" / "extra.json").write_text(json.dumps(jobs))
    # A gzipped sacct dump is read like any other; a stray file is listed as ignored.
    dump = landing / "sacct" / "sacct_2026-09-03.psv"
    (dump.parent / "sacct_2026-09-03.psv.gz").write_bytes(gzip.compress(dump.read_bytes()))
    dump.unlink()
    (landing / "sacct" / "notes.md").write_text("nothing to see")

    wh = tmp_path / "w.duckdb"
    proc = _run(landing, wh)

    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gpusre: error: ")]
    assert sorted(line.split(": ")[2] for line in errors) == sorted(expected), proc.stderr
    for line in errors:
        source_file = line.split(": ")[2]
        assert line.split(": ", 3)[3].startswith(expected[source_file]), line
        assert line.count(f"{source_file}: ") == 1, line  # the file named once, not again by the parser's reason
    assert list((tmp_path / "reports").glob("nightly-*.html")) and list((tmp_path / "reports").glob("slo-*.html"))

    ledger = _ledger(wh)
    for source_file in expected:
        assert ledger[source_file][0] == "refused"
    assert ledger["sacct/notes.md"][0] == "ignored" and "not a sacct dump name" in ledger["sacct/notes.md"][3]
    assert ledger["sacct/sacct_2026-09-03.psv.gz"][:3] == baseline["sacct/sacct_2026-09-03.psv"][:3]
    assert ledger["sacct/extra.json"][:3] == ("loaded", 1, 2)
    # Complete lines before the cut were loaded.
    truncated = ledger["syslog/2026-09-02/central.log.gz"]
    assert 0 < truncated[1] < baseline["syslog/2026-09-02/central.log"][1]
    # Every other file loaded exactly what it loads in a clean run.
    untouched = set(baseline) & set(ledger) - set(expected)
    assert untouched and all(ledger[f] == baseline[f] for f in untouched)
    # The summary counts every source; rejects are line 0 for refused files.
    assert re.search(r"alerts: \d+ new/changed file\(s\), 2 refused", proc.stderr), proc.stderr
    assert re.search(r"sacct: \d+ new/changed file\(s\), 0 refused, 1 ignored", proc.stderr), proc.stderr
    con = connect(wh, read_only=True)
    try:
        zero = {f for (f,) in con.sql("SELECT source_file FROM raw.rejects WHERE line_no = 0").fetchall()}
    finally:
        con.close()
    assert zero == set(expected)

    # The truncated log reappears whole: it loads on the next run, like in the clean run.
    (landing / "syslog" / "2026-09-02" / "central.log.gz").write_bytes(
        gzip.compress((landing0 / "syslog" / "2026-09-02" / "central.log").read_bytes()))
    for name in ("syslog/loop.log", "alerts/gone.jsonl", "syslog/secret.log"):
        (landing / name).unlink(missing_ok=True)
    proc = _run(landing, wh)
    assert proc.returncode == 0, proc.stderr  # files still refused but unchanged are not refused again
    fixed = _ledger(wh)["syslog/2026-09-02/central.log.gz"]
    assert fixed[:3] == ("loaded",) + baseline["syslog/2026-09-02/central.log"][1:3]


def test_landing_without_sacct_and_with_only_refused_sacct(clean: tuple[Path, dict], tmp_path: Path) -> None:
    """No sacct at all: the run completes, the report warns. Only a refused dump: the same, exit 1."""
    landing0, _ = clean
    landing = tmp_path / "landing"
    shutil.copytree(landing0, landing, symlinks=True, ignore=shutil.ignore_patterns("sacct"))
    proc = _run(landing, tmp_path / "a" / "w.duckdb")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = next((tmp_path / "a" / "reports").glob("nightly-*.md")).read_text()
    assert "No Slurm accounting (sacct) records were loaded" in report

    (landing / "sacct").mkdir()
    (landing / "sacct" / "fixed.txt").write_text(
        "       JobID    JobName      State\n------------ ---------- ----------\n1                  a  COMPLETED\n")
    proc = _run(landing, tmp_path / "b" / "w.duckdb")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gpusre: error: ")]
    assert len(errors) == 1 and errors[0].startswith("gpusre: error: sacct/fixed.txt: ")
    report = next((tmp_path / "b" / "reports").glob("nightly-*.md")).read_text()
    assert "1 landing file refused" in report
