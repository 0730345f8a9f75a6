"""A landing file as a unit of failure (models/ingest/landing_files.py), and the crash inputs the fuzz
found, kept as fixed cases."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
from pathlib import Path

import pytest

from gpusre.models.sources.alerts.parse import parse_alert_file
from gpusre.models.ingest.landing_files import read_landing_file, scan_source
from gpusre.models.sources.incidents.parse import read_operator_incidents
from gpusre.models.sources.sacct.parse import parse_sacct_json
from gpusre.models.sources.syslog.parse import parse_syslog_bytes

LINES = b"".join(f"2026-09-01T10:00:{i:02d}+00:00 gpu001 kernel: line {i}\n".encode() for i in range(50))


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_truncated_stream_keeps_complete_lines(tmp_path: Path, compress) -> None:  # noqa: ANN001
    blob = compress(LINES)
    path = tmp_path / "x.log.gz"
    path.write_bytes(blob[: len(blob) // 2])
    read = read_landing_file(path)
    assert read.fault is not None and read.fault.startswith("truncated ")
    assert LINES.startswith(read.data) and (read.data.endswith(b"\n") or read.data == b"")
    if compress is gzip.compress:  # bzip2 and xz decode whole blocks: half a small file may give nothing
        assert read.data
    n_lines = read.data.count(b"\n")
    assert read.fault.endswith(f"after {n_lines} complete line{'s' if n_lines != 1 else ''}")
    assert read.sha256 and read.size == len(blob) // 2


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_content_hash_is_of_the_decompressed_content(tmp_path: Path, compress) -> None:  # noqa: ANN001
    """A log and its compressed rotation have one content hash; a part of a content (a truncated
    stream) is no content: it keeps the hash of its bytes."""
    import hashlib

    plain, packed, cut = tmp_path / "messages-20261111", tmp_path / "messages-20261111.gz", tmp_path / "cut.gz"
    plain.write_bytes(LINES)
    packed.write_bytes(compress(LINES))
    cut.write_bytes(compress(LINES)[:-8])
    expected = hashlib.sha256(LINES).hexdigest()
    assert read_landing_file(plain).content_sha256 == read_landing_file(plain).sha256 == expected
    read = read_landing_file(packed)
    assert read.content_sha256 == expected and read.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
    partial = read_landing_file(cut)
    assert partial.fault and partial.content_sha256 == partial.sha256 != expected


def test_multi_member_gzip_and_garbage(tmp_path: Path) -> None:
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(LINES[:100]) + gzip.compress(LINES[100:]))
    assert read_landing_file(path).data == LINES and read_landing_file(path).fault is None
    path.write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    read = read_landing_file(path)
    assert read.data == b"" and read.fault.startswith("corrupt gzip stream")


def test_utf16_is_named(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    for data in ("JobID|State\n1|COMPLETED\n".encode("utf-16"), "JobID|State\n".encode("utf-16-le")):
        path.write_bytes(data)
        assert read_landing_file(path).fault == "UTF-16 encoded: convert to UTF-8"
    path.write_bytes(gzip.compress("a\nb\n".encode("utf-16")))
    assert read_landing_file(path).fault == "UTF-16 encoded: convert to UTF-8"


def test_systemd_journal_formats_that_are_not_lines_are_named(tmp_path: Path) -> None:
    # A binary journal copied from /var/log/journal, `journalctl -o export` and `-o json-pretty`: refused
    # whole with what to run; `-o json` (one entry per line) and text logs read as they are.
    path = tmp_path / "x.journal"
    cases = {b"LPKSHHRH\x00\x00\x00\x00\x01\x00": "a binary systemd journal file: export it as text (journalctl -o short-iso, or -o json)",
             b"__CURSOR=s=ab;i=1\n__REALTIME_TIMESTAMP=1764500000000000\nMESSAGE=x\n\n":
                 "journalctl -o export format: export with -o json (one entry per line) or -o short-iso",
             b'{\n\t"__CURSOR" : "s=ab;i=1",\n\t"MESSAGE" : "x"\n}\n':
                 "journalctl -o json-pretty format: export with -o json (one entry per line)",
             b'{"__CURSOR":"s=ab;i=1","__REALTIME_TIMESTAMP":"1764500000000000","MESSAGE":"x"}\n': None,
             b"Nov 30 09:00:00 gpu001 kernel: x\n": None}
    for data, fault in cases.items():
        path.write_bytes(data)
        read = read_landing_file(path)
        assert (read.fault, read.data == b"") == (fault, fault is not None)


def test_unfollowable_and_unreadable(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("missing")
    assert read_landing_file(tmp_path / "loop").fault == "symlink loop: cannot be followed"
    assert read_landing_file(tmp_path / "dangling").fault.startswith("dangling symlink to missing")
    (tmp_path / "d").mkdir()
    assert read_landing_file(tmp_path / "d").fault == "is a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="runs as root: chmod 000 stays readable, permission denied cannot happen")
def test_permission_denied(tmp_path: Path) -> None:
    path = tmp_path / "secret.log"
    path.write_bytes(LINES)
    path.chmod(0)
    read = read_landing_file(path)
    assert read.fault == "permission denied" and read.sha256 == ""


def test_scan_lists_ignored_files_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "sacct"
    (root / "sub").mkdir(parents=True)
    for name in ("a.psv", "sub/b.psv.gz", "README.md", ".a.psv.swp", "notes.md"):
        (root / name).write_text("x")
    (root / "linkdir").symlink_to(root / "sub")
    (root / "loop.psv").symlink_to("loop.psv")
    os.mkfifo(root / "pipe.psv")
    scan = scan_source(tmp_path, "sacct", lambda name: None if name.endswith(".psv") else "wrong name")
    assert [p.relative_to(tmp_path).as_posix() for p in scan.files] == ["sacct/a.psv", "sacct/loop.psv", "sacct/sub/b.psv.gz"]
    assert {f.source_file: f.reason for f in scan.ignored} == {
        "sacct/.a.psv.swp": "hidden file (editor or partial transfer)",
        "sacct/README.md": "README file",
        "sacct/linkdir": "symlink to a directory (not followed)",
        "sacct/notes.md": "wrong name",
        "sacct/pipe.psv": "not a regular file",
    }


def test_sacct_json_wrong_types_are_job_rejects() -> None:
    """Found by the structure fuzz: a string restart_cnt failed the whole file's DataFrame; a
    millisecond start time overflowed."""
    doc = {"jobs": [{"job_id": 1, "state": {"current": ["COMPLETED"]}, "restart_cnt": "2"},
                    {"job_id": 2, "state": {"current": ["COMPLETED"]}, "time": {"start": 1788220800000}},
                    {"job_id": 3, "state": {"current": ["COMPLETED"]}, "name": 42},
                    {"job_id": 4, "state": {"current": ["COMPLETED"]}, "time": {"limit": 2**62}},
                    {"job_id": 5, "state": {"current": ["COMPLETED"]}}]}
    parsed = parse_sacct_json(json.dumps(doc), "s.json")
    assert parsed.records["job_id"].to_list() == ["5"]
    errors = dict(zip(parsed.rejects["line_no"].to_list(), parsed.rejects["error"].to_list(), strict=True))
    assert errors[1] == "restart_cnt: expected an integer, got str '2'"
    assert errors[2].startswith("start_ts: 1788220800000 is not a time in epoch seconds")
    assert errors[3].startswith("name: expected a string")
    assert errors[4].startswith("timelimit_s:") and "out of range" in errors[4]


def test_impossible_utc_offset_is_rejected() -> None:
    parsed = parse_syslog_bytes(b"2026-09-01T10:00:00+99:00 gpu001 kernel: a\n2026-09-01T10:00:00+14:00 gpu001 kernel: b\n"
                                b"2026-09-01T10:00:00-05:61 gpu001 kernel: c\n", "x.log")
    assert parsed.lines["message"].to_list() == ["b"]
    assert parsed.rejects["error"].to_list() == ["impossible UTC offset +99:00", "impossible UTC offset -05:61"]


@pytest.mark.parametrize(("text", "reason"), [
    # found by the fuzz: more fields than the header (a ragged row is a reject of its own now; this
    # header lacks required columns, which refuses the file)
    ("id,start\n1,2,3,4\n", "missing column(s): end, component, root_cause, nodes"),
    ("id,start,end,component,root_cause,nodes,notes,notes\n", "not a readable CSV: column(s) notes named twice"),
    ("id,start\n1,2026-01-01\n", "missing column(s): end, component, root_cause, nodes"),
])
def test_incidents_csv_unreadable_is_one_reject(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "incidents.csv"
    path.write_text(text)
    incidents, rejects = read_operator_incidents(path)
    assert incidents.height == 0 and rejects["line_no"].to_list() == [0]
    assert rejects["error"][0].startswith(reason)


def test_alert_with_impossible_utc_offset_is_rejected(tmp_path: Path) -> None:
    alert = {"status": "firing", "labels": {"alertname": "A"}, "annotations": {}, "endsAt": "0001-01-01T00:00:00Z"}
    payload = {"receiver": "r", "status": "firing", "alerts": [
        {**alert, "startsAt": "2026-09-01T10:00:00+99:00"}, {**alert, "startsAt": "2026-09-01T10:00:00-05:30"}]}
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(payload) + "\n")
    parsed = parse_alert_file(path, "alerts/a.jsonl")
    assert [str(t) for t in parsed.notifications["starts_at"].to_list()] == ["2026-09-01 15:30:00+00:00"]
    assert parsed.rejects["error"].to_list() == ['alert 1: startsAt "2026-09-01T10:00:00+99:00" has an impossible UTC offset']


def test_truncated_sacct_json_names_the_truncation(tmp_path: Path) -> None:
    from gpusre.models.sources.sacct.ingest import ingest_sacct_files
    from gpusre.models.warehouse import connect

    jobs = {"jobs": [{"job_id": i, "state": {"current": ["COMPLETED"]}, "name": "x" * 200} for i in range(50)]}
    blob = gzip.compress(json.dumps(jobs).encode())
    (tmp_path / "sacct").mkdir()
    (tmp_path / "sacct" / "jobs.json.gz").write_bytes(blob[: len(blob) // 2])
    con = connect(tmp_path / "w.duckdb")
    try:
        (result,) = ingest_sacct_files(con, tmp_path)
        rejects = con.sql("SELECT line_no, error FROM raw.rejects").fetchall()
    finally:
        con.close()
    assert result.status == "refused" and result.error.startswith("truncated gzip stream after")
    assert rejects == [(0, result.error)]
