"""Node logs that logrotate renames and compresses between runs, and a log cut mid-line.

Hand-computed: a central rsyslog file (RFC 5424, UTC) with three lines per rotation period; every
line's content is written below, so each expected count is the number of distinct lines the
landing folder ever held, each loaded once (ledger status, raw.syslog_lines, core.node_events).
"""

from __future__ import annotations

import doctest
import gzip
import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.ingest_syslog import core_node_events, raw_syslog
from gpusre.models.ingest import ledger
from gpusre.models.ingest.ledger import same_content
from gpusre.models.ingest.reconcile import mismatched_files
from gpusre.models.sources.syslog import ingest as si
from gpusre.models.sources.syslog.parse import CUT_LAST_LINE
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources
from gpusre.models.logs.node_event_copies import node_events_once_sql

# Day 1: the NVLink Xid 74 of gpu09 and noise; day 2: Xid 31 of gpu10 and noise; day 3: noise.
DAY1 = ("<4>1 2026-11-10T14:05:10.512Z gpu09.cluster.local kernel - - - NVRM: Xid (PCI:0000:18:00): 74, pid=1, "
        "name=python, NVLink: fatal error detected on link 3\n"
        "<30>1 2026-11-10T14:06:00Z gpu09.cluster.local systemd 1 - - Started Session 12 of user root.\n"
        "<30>1 2026-11-10T22:10:00Z gpu10.cluster.local systemd 1 - - Starting Cleanup of Temporary Directories...\n")
DAY2 = ("<4>1 2026-11-11T20:00:00.221Z gpu10.cluster.local kernel - - - NVRM: Xid (PCI:0000:9b:00): 31, pid=2, "
        "name=python, Ch 00000010, intr 10000000. MMU Fault\n"
        "<30>1 2026-11-11T20:01:00Z gpu10.cluster.local systemd 1 - - Started Session 13 of user root.\n")
DAY3 = "<30>1 2026-11-12T01:00:00Z gpu11.cluster.local systemd 1 - - Started Session 14 of user root.\n"
CENTRAL = "syslog/central"


def _landing(tmp_path: Path) -> Path:
    (tmp_path / "landing" / "syslog" / "central").mkdir(parents=True)
    return tmp_path / "landing"


def _write(landing: Path, name: str, text: str, *, compress: bool = False) -> None:
    path = landing / CENTRAL / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    os.utime(path, (1_700_000_000 + len(name), 1_700_000_000 + len(name)))  # old: trusted by the quick check


def _rotate(landing: Path, old: str, new: str) -> None:
    (landing / CENTRAL / old).rename(landing / CENTRAL / new)


def _compress(landing: Path, name: str) -> None:
    """gzip <name>: <name>.gz replaces <name> (logrotate's compress step)."""
    path = landing / CENTRAL / name
    _write(landing, name + ".gz", path.read_text(), compress=True)
    path.unlink()


def _ingest(landing: Path, wh: Path) -> dict[str, tuple[str, str | None]]:
    con = connect(wh)
    try:
        return {r.source_file.removeprefix(CENTRAL + "/"): (r.status, r.error) for r in si.ingest_syslog_files(con, landing)}
    finally:
        con.close()


def _state(wh: Path) -> tuple[dict[str, tuple], list[tuple], list[tuple]]:
    """(ledger of the central files, the loaded lines (ts, host, message) sorted, reconcile mismatches)."""
    con = connect(wh, read_only=True)
    try:
        ledger = {f.removeprefix(CENTRAL + "/"): (status, rows, error) for f, status, rows, error in con.sql(
            "SELECT source_file, status, rows_loaded, error FROM raw.ingested_files ORDER BY ALL").fetchall()}
        lines = con.sql("SELECT ts, host, message FROM raw.syslog_lines ORDER BY ALL").fetchall()
        return ledger, lines, mismatched_files(con, "syslog", "syslog_lines")
    finally:
        con.close()


def _distinct_lines(*texts: str) -> int:
    return len({line for text in texts for line in text.splitlines()})


def test_dateext_delaycompress_loads_every_line_once(tmp_path: Path) -> None:
    """logrotate dateext + delaycompress: messages -> messages-20261111, a new messages; the next
    night messages-20261111 -> messages-20261111.gz (the plain name gone), messages -> messages-20261112."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    _write(landing, "messages", DAY1)
    assert _ingest(landing, wh) == {"messages": ("loaded", None)}
    _rotate(landing, "messages", "messages-20261111")
    _write(landing, "messages", DAY2)
    assert _ingest(landing, wh) == {"messages": ("loaded", None), "messages-20261111": ("loaded", None)}
    _compress(landing, "messages-20261111")
    _rotate(landing, "messages", "messages-20261112")
    _write(landing, "messages", DAY3)
    assert _ingest(landing, wh) == {
        "messages": ("loaded", None),
        "messages-20261111.gz": ("ignored", "same content as syslog/central/messages-20261111"),
        "messages-20261112": ("loaded", None)}
    ledger, lines, mismatched = _state(wh)
    # messages-20261111 is gone from the landing folder: its 3 rows stay, and nothing reloads them.
    assert ledger == {"messages": ("loaded", 1, None), "messages-20261111": ("loaded", 3, None),
                      "messages-20261111.gz": ("ignored", 0, "same content as syslog/central/messages-20261111"),
                      "messages-20261112": ("loaded", 2, None)}
    assert len(lines) == _distinct_lines(DAY1, DAY2, DAY3) == 6 and len(set(lines)) == 6
    assert mismatched == []
    # A rerun reads nothing again and changes nothing.
    assert set(_ingest(landing, wh).values()) == {("unchanged", None)}
    assert _state(wh) == (ledger, lines, mismatched)


def test_numbered_rotation_with_delaycompress_loads_every_line_once(tmp_path: Path) -> None:
    """messages -> messages.1 -> messages.2.gz: each night every name holds other lines, and each
    content loads once, from the name that holds it now."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    _write(landing, "messages", DAY1)
    _ingest(landing, wh)
    _rotate(landing, "messages", "messages.1")
    _write(landing, "messages", DAY2)
    assert _ingest(landing, wh) == {"messages": ("loaded", None), "messages.1": ("loaded", None)}
    # delaycompress: messages.1 -> messages.2.gz, messages -> messages.1, a new messages.
    _write(landing, "messages.2.gz", (landing / CENTRAL / "messages.1").read_text(), compress=True)
    (landing / CENTRAL / "messages.1").unlink()
    _rotate(landing, "messages", "messages.1")
    _write(landing, "messages", DAY3)
    assert _ingest(landing, wh) == {"messages": ("loaded", None), "messages.1": ("loaded", None),
                                    "messages.2.gz": ("loaded", None)}
    ledger, lines, mismatched = _state(wh)
    assert ledger == {"messages": ("loaded", 1, None), "messages.1": ("loaded", 2, None),
                      "messages.2.gz": ("loaded", 3, None)}
    assert len(lines) == len(set(lines)) == 6 and mismatched == []


def test_a_plain_file_and_its_compressed_copy_in_one_run_load_once(tmp_path: Path) -> None:
    """Both names in the landing folder at the first run (the rsync ran between gzip's write and
    its unlink): the first by name loads, the other is ignored."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    _write(landing, "messages-20261111", DAY1)
    _write(landing, "messages-20261111.gz", DAY1, compress=True)
    assert _ingest(landing, wh) == {
        "messages-20261111": ("loaded", None),
        "messages-20261111.gz": ("ignored", "same content as syslog/central/messages-20261111")}
    ledger, lines, mismatched = _state(wh)
    assert len(lines) == 3 and mismatched == []
    # The compressed copy's rejects and rows are not there either: one ledger row loaded.
    assert [s for s, *_ in ledger.values()] == ["loaded", "ignored"]


def test_copytruncate_race_reads_the_copy_again_once_the_original_changes(tmp_path: Path) -> None:
    """logrotate copytruncate: a run between the copy (messages.1 = messages) and the truncate
    ignores messages.1; once messages changes, messages.1 holds the only copy and loads."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    _write(landing, "messages", DAY1)
    _ingest(landing, wh)
    shutil.copy2(landing / CENTRAL / "messages", landing / CENTRAL / "messages.1")
    assert _ingest(landing, wh) == {"messages": ("unchanged", None),
                                    "messages.1": ("ignored", "same content as syslog/central/messages")}
    _write(landing, "messages", DAY2)  # truncated, then written again
    assert _ingest(landing, wh) == {"messages": ("loaded", None), "messages.1": ("loaded", None)}
    ledger, lines, mismatched = _state(wh)
    assert ledger == {"messages": ("loaded", 2, None), "messages.1": ("loaded", 3, None)}
    assert len(lines) == len(set(lines)) == 5 and mismatched == []


def test_same_bytes_under_two_nodes_names_are_two_nodes_lines(tmp_path: Path) -> None:
    """dmesg-style lines name no host: the file's name gives the node, so equal bytes under two
    nodes' names are not copies (and a rotated copy keeps its node: kern.log -> kern.log.1)."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    day = landing / "syslog" / "2026-11-10"
    day.mkdir(parents=True)
    text = "[Tue Nov 10 07:00:00 2026] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.\n"
    for name in ("gpu01.log", "gpu02.log", "gpu01.log.1"):
        (day / name).write_text(text)
    con = connect(wh)
    try:
        results = {r.source_file: (r.status, r.error) for r in si.ingest_syslog_files(con, landing)}
        nodes = con.sql("SELECT node FROM raw.syslog_lines ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert results == {"syslog/2026-11-10/gpu01.log": ("loaded", None),
                       "syslog/2026-11-10/gpu01.log.1": ("ignored", "same content as syslog/2026-11-10/gpu01.log"),
                       "syslog/2026-11-10/gpu02.log": ("loaded", None)}
    assert nodes == [("gpu01",), ("gpu02",)]


def test_same_content_rule() -> None:
    """Hand cases of the pure rule: ledger holders, first by landing order, a re-read holder."""
    kept = [("a", "x")]
    assert same_content(kept, [("b", "x", "loaded")]) == {"b": "a"}
    assert same_content(kept, [("b", "x", "refused")]) == {}   # a partial read is no copy
    assert same_content([], [("b", "y", "loaded"), ("c", "y", "loaded"), ("d", "y", "loaded")]) == {"c": "b", "d": "b"}
    assert same_content(kept, [("b", "x", "loaded")], alike=lambda name: name) == {}
    assert doctest.testmod(ledger).failed == 0


def _materialize(landing: Path, wh: Path) -> None:
    assert dg.materialize([raw_syslog, core_node_events],
                          resources=default_resources(str(wh), str(landing), str(wh.parent / "r"))).success


def test_a_renamed_log_with_more_lines_keeps_the_old_rows_and_events_count_once(tmp_path: Path) -> None:
    """What content comparison cannot catch: the run read messages with DAY1; then more lines were
    appended and logrotate renamed it to messages-20261111 with no new messages in the landing
    folder yet. The old version's rows stay (its name is gone, nothing replaces them), the renamed
    file loads DAY1+DAY2: the DAY1 lines are twice in raw.syslog_lines and core.node_events, once in
    core.node_events_once (same node, message and time), which the failure marts read."""
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    _write(landing, "messages", DAY1)
    _materialize(landing, wh)
    _write(landing, "messages-20261111", DAY1 + DAY2)
    (landing / CENTRAL / "messages").unlink()
    _materialize(landing, wh)
    con = connect(wh, read_only=True)
    try:
        lines = con.sql("SELECT count(*) FROM raw.syslog_lines").fetchall()[0][0]
        xids = con.sql("SELECT code, count(*) FROM core.node_events WHERE kind = 'xid' GROUP BY ALL ORDER BY ALL").fetchall()
        once = con.sql(f"SELECT code, count(*) FROM ({node_events_once_sql(con)}) "
                       "WHERE kind = 'xid' GROUP BY ALL ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert lines == 3 + 5
    assert xids == [(31, 1), (74, 2)]
    assert once == [(31, 1), (74, 1)]


@pytest.mark.parametrize(("tail", "loaded", "rejected"), [
    # Cut inside the program tag (the probe's gpu13 line): no tag where the lines before have one.
    ("2026-11-11T23:59:01+00:00 gpu13 CRON[3", 2, 1),
    ("2026-11-11T23:5", 2, 1),                                      # inside the timestamp
    ("2026-11-11T23:59:01+00:00 gpu13 CRON[3712]:", 2, 1),          # no message
    ("2026-11-11T23:59:01+00:00 gpu13 CRON[3712]: (root) CMD (true)", 3, 0),   # a whole record
    ("", 2, 0),                                                     # ends with its line break
])
def test_an_unterminated_last_line_is_rejected_unless_a_whole_record(tmp_path: Path, tail: str, loaded: int,
                                                                     rejected: int) -> None:
    landing, wh = _landing(tmp_path), tmp_path / "w.duckdb"
    folder = landing / "syslog" / "short-iso"
    folder.mkdir()
    head = ("2026-11-11T18:00:01+00:00 gpu13 nhc[50018]: Node Health Check completed successfully (1s).\n"
            "2026-11-11T22:10:00+00:00 gpu13 systemd[1]: Starting Cleanup of Temporary Directories...\n")
    (folder / "gpu13-2026-11-11.txt").write_text(head + tail)
    con = connect(wh)
    try:
        results = si.ingest_syslog_files(con, landing)
        last = con.sql("SELECT max(ts)::VARCHAR FROM raw.syslog_lines").fetchall()[0][0]
        rejects = con.sql("SELECT line_no, raw, error FROM raw.rejects").fetchall()
        assert mismatched_files(con, "syslog", "syslog_lines") == []
        # The writer finishes the line: the changed file is read again whole.
        (folder / "gpu13-2026-11-11.txt").write_text(head + "2026-11-11T23:59:01+00:00 gpu13 CRON[3712]: (root) CMD (true)\n")
        again = si.ingest_syslog_files(con, landing)
        after = con.sql("SELECT count(*), max(ts)::VARCHAR FROM raw.syslog_lines").fetchall()[0]
        rejects_after = con.sql("SELECT count(*) FROM raw.rejects").fetchall()[0][0]
    finally:
        con.close()
    assert [(r.status, r.rows_loaded, r.rows_rejected) for r in results] == [("loaded", loaded, rejected)]
    assert rejects == ([(3, tail, CUT_LAST_LINE)] if rejected else [])
    assert last == ("2026-11-11 23:59:01+00" if loaded == 3 else "2026-11-11 22:10:00+00")
    assert [r.status for r in again] == ["loaded"]
    assert after == (3, "2026-11-11 23:59:01+00") and rejects_after == 0
