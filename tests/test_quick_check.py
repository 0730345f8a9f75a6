"""A landing file whose size and modification time match the ledger is skipped unread (rsync's
quick check), for every source: a year of landing files was read and hashed again every night.

Each case ingests one real-format file, then shows that the next run does not read it (its bytes
are replaced by others of the same size and its mtime put back: still ``unchanged``, rows as
before), that a touched file with the same bytes is hashed, found unchanged and its new mtime
recorded, that a changed file is read, and that a file modified just before the run keeps NULL.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from gpusre.models.ingest.ledger import RACY_NS, FileIngest
from gpusre.models.sources.alerts.ingest import ingest_alert_files
from gpusre.models.sources.sacct.ingest import ingest_sacct_files
from gpusre.models.sources.slurm_events.ingest import ingest_slurm_event_files
from gpusre.models.sources.syslog.ingest import ingest_syslog_files
from gpusre.models.warehouse import connect

FIXTURES = Path(__file__).parent / "fixtures"
SACCT = ("JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|"
         "Timelimit|NNodes|NCPUS|AllocTRES|NodeList\n"
         "101|101|eval|bob|ml|batch|COMPLETED|0:0|2026-09-01T10:00:00|2026-09-01T10:00:00|2026-09-01T10:05:00|"
         "2026-09-01T11:05:00|01:00:00|04:00:00|1|8|cpu=8,gres/gpu=1,node=1|gpu003\n")

#: source -> (ingest function, landing-relative file, its bytes, the raw table it loads)
CASES: dict[str, tuple[Callable[[duckdb.DuckDBPyConnection, Path], list[FileIngest]], str, bytes, str]] = {
    "sacct": (ingest_sacct_files, "sacct/sacct_2026-09-01.psv", SACCT.encode(), "raw.sacct_records"),
    "syslog": (ingest_syslog_files, "syslog/2025-02-23/gpu001.log",
               (FIXTURES / "syslog" / "gpud_dmesg-with-xid-119.log").read_bytes(), "raw.syslog_lines"),
    "alerts": (ingest_alert_files, "alerts/prometheus-msteams_prom_post_request.json",
               (FIXTURES / "alerts" / "prometheus-msteams_prom_post_request.json").read_bytes(),
               "raw.alert_notifications"),
    "slurm_events": (ingest_slurm_event_files, "slurm_events/events_2026-11-01.txt",
                     (FIXTURES / "slurm_events" / "events_2026-11-01.txt").read_bytes(), "raw.slurm_events"),
}


def _ledger(con: duckdb.DuckDBPyConnection, name: str) -> tuple:
    return con.execute("SELECT sha256, size_bytes, mtime_ns FROM raw.ingested_files WHERE source_file = ?",
                       [name]).fetchall()[0]


def _status(results: list[FileIngest], name: str) -> str:
    return next(r.status for r in results if r.source_file == name)


@pytest.mark.parametrize("source", sorted(CASES))
def test_a_file_with_its_recorded_size_and_mtime_is_not_read(source: str, tmp_path: Path) -> None:
    ingest, name, data, table = CASES[source]
    landing = tmp_path / "landing"
    path = landing / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    old = time.time_ns() - 3600 * 10**9  # written an hour ago: older than the racy margin
    os.utime(path, ns=(old, old))
    con = connect(tmp_path / "w.duckdb")
    try:
        assert _status(ingest(con, landing), name) == "loaded"
        sha, size, mtime = _ledger(con, name)
        assert (size, mtime) == (len(data), old)
        rows = con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        assert rows > 0

        # Other bytes of the same size, mtime put back: the quick check does not read them.
        path.write_bytes(bytes(b if b in b"\r\n" else ord("x") for b in data))
        os.utime(path, ns=(old, old))
        assert _status(ingest(con, landing), name) == "unchanged"
        assert con.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0] == rows

        # The same bytes, touched: hashed, unchanged, and the new mtime is recorded.
        path.write_bytes(data)
        touched = old + 60 * 10**9
        os.utime(path, ns=(touched, touched))
        assert _status(ingest(con, landing), name) == "unchanged"
        assert _ledger(con, name) == (sha, size, touched)

        # Changed bytes (a longer file) and just modified: read; its mtime is too recent to trust.
        path.write_bytes(data + data[: data.index(b"\n") + 1] if source != "alerts" else data + b"\n")
        assert _status(ingest(con, landing), name) in ("loaded", "refused")
        new_sha, new_size, new_mtime = _ledger(con, name)
        assert new_sha != sha and new_size == path.stat().st_size and new_mtime is None
        # So the next run hashes it again (same bytes: unchanged) and, once old enough, records it.
        assert path.stat().st_mtime_ns < time.time_ns() + RACY_NS
        later = time.time_ns() - 3600 * 10**9 + 120 * 10**9
        os.utime(path, ns=(later, later))
        assert _status(ingest(con, landing), name) == "unchanged"
        assert _ledger(con, name) == (new_sha, new_size, later)
    finally:
        con.close()


def test_a_ledger_without_mtimes_hashes_once_then_skips(tmp_path: Path) -> None:
    """A warehouse written before the column existed (mtime_ns NULL) hashes each file once more."""
    landing = tmp_path / "landing"
    shutil.copytree(FIXTURES / "slurm_events", landing / "slurm_events")
    old = time.time_ns() - 3600 * 10**9
    for path in (landing / "slurm_events").iterdir():
        os.utime(path, ns=(old, old))
    con = connect(tmp_path / "w.duckdb")
    try:
        ingest_slurm_event_files(con, landing)
        con.execute("UPDATE raw.ingested_files SET mtime_ns = NULL")
        results = ingest_slurm_event_files(con, landing)
        assert {r.status for r in results} == {"unchanged"}
        assert con.execute("SELECT count(*) FROM raw.ingested_files WHERE mtime_ns = ?", [old]).fetchall()[0][0] == len(
            results)
    finally:
        con.close()
