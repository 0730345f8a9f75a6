"""A line of NUL bytes in a node log (an outside probe's finding, 2026-12-06): what a node that crashed
while its logger wrote leaves — the file system had allocated the block, the data never landed. It is a
reject with its file, line number and a reason naming it (README, "Bad input never stops the night": its
NUL lines are rejected and the rest loads), never a blank line skipped without a trace; NULs inside a
record are dropped and the record loads; every later line keeps its number. The same for every node-log
format (syslog, journald JSON, dmesg), and the nightly's Data quality lists the reject.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hand_landing import query_rows, run_hand_landing

from gpusre.models.sources.syslog import parse as syslog
from gpusre.models.sources.syslog.parse import NUL_ONLY_LINE, parse_syslog_bytes

HINT_2026 = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC))
NO_FORMAT = "no recognised log line format (no timestamp)"

#: The probe's syslog/2026-11-11/gpu07-extra.log, byte for byte: line 3 has a NUL inside its text,
#: line 4 is binary garbage (an ELF header), line 5 is 200 NULs, lines 2 and 6 are Latin-1.
PROBE_GPU07 = (
    b"Nov 11 15:00:00 gpu07 probe-bin[79]: good line before garbage\n"
    b"Nov 11 15:01:00 n\xe9ud07 probe-bin[79]: latin-1 host caf\xe9\n"
    b"Nov 11 15:02:00 gpu07 kernel: NVRM: Xid (PCI:0000:18:00): 13,\x00 pid=1, name=python, Graphics Exception\n"
    b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\x89\x90\xa0\xb0garbage\n"
    + b"\x00" * 200 + b"\n"
    b"Nov 11 15:03:00 gpu07 probe-bin[79]: r\xe9sum\xe9 latin-1 message\n"
    b"Nov 11 15:04:00 gpu07 probe-bin[79]: good line after garbage\n"
)


def _parse(data: bytes, name: str = "x.log") -> syslog.SyslogParseResult:
    r = parse_syslog_bytes(data, name, year_hint=HINT_2026, host_from_name="gpu07")
    # every non-blank line is read, and is loaded or rejected, once
    assert r.rows_read == r.lines.height + r.rejects.height
    assert not set(r.lines["line_no"]) & set(r.rejects["line_no"])
    return r


def test_the_probes_nul_line_is_a_reject_and_the_rest_keeps_its_line_numbers() -> None:
    r = _parse(PROBE_GPU07)
    assert r.rows_read == 7
    assert r.lines["line_no"].to_list() == [1, 2, 3, 6, 7]
    # the NUL inside line 3's text is dropped, the Xid record loads
    assert r.lines.filter(line_no=3)["message"].item() == \
        "NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python, Graphics Exception"
    assert r.rejects.select("line_no", "raw", "error").rows() == [
        (4, "\x7fELF\x02\x01\x01" + "\ufffd" * 6 + "garbage", NO_FORMAT),
        (5, "", "NUL bytes only (200): the file was cut while written — a crash?"),
    ]
    assert NUL_ONLY_LINE.format(200) == r.rejects["error"][1]


def test_nuls_with_blanks_and_a_nul_run_ending_the_file_are_rejects_too() -> None:
    head = b"2026-11-11T15:00:00.123456+00:00 gpu07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
    # NULs with blanks around them (rsyslog's padding is not always whole): 3 NULs, the blanks kept as raw.
    # An indented line would be a continuation: this one is not, it is no text at all.
    r = _parse(head + b"  \x00\x00\t\x00\n" + head)
    assert r.lines["line_no"].to_list() == [1, 3]
    assert r.rejects.select("line_no", "raw", "error").rows() == [(2, "  \t", NUL_ONLY_LINE.format(3))]
    # The crash as a preallocating file system leaves it: the NUL run is the end of the file, with no line
    # break after it. The hole is named as such, not as a record cut while written.
    r = _parse(head + b"\x00" * 4096)
    assert r.lines["line_no"].to_list() == [1]
    assert r.rejects.select("line_no", "raw", "error").rows() == [(2, "", NUL_ONLY_LINE.format(4096))]
    # CRLF line ends do not change a NUL line's verdict or count
    r = _parse(head.replace(b"\n", b"\r\n") + b"\x00\x00\r\n" + head.replace(b"\n", b"\r\n"))
    assert r.rejects.select("line_no", "error").rows() == [(2, NUL_ONLY_LINE.format(2))]


def test_a_nul_run_before_the_first_record_after_the_reboot_loads_that_record() -> None:
    # No line break between the hole and the next boot's first record: one physical line of text, NULs dropped.
    r = _parse(b"Nov 11 15:00:00 gpu07 kernel: a\n" + b"\x00" * 64 + b"Nov 11 15:09:00 gpu07 kernel: Linux version 6.8.0\n")
    assert r.rejects.is_empty()
    assert r.lines.select("line_no", "message").rows() == [(1, "a"), (2, "Linux version 6.8.0")]


def test_journald_json_and_dmesg_files_reject_their_nul_lines_alike() -> None:
    entry = ('{"__REALTIME_TIMESTAMP":"1762873200000000","_HOSTNAME":"gpu07","SYSLOG_IDENTIFIER":"kernel",'
             '"MESSAGE":"NVRM: Xid (PCI:0000:18:00): 48, An uncorrectable double bit error"}')
    r = _parse((entry + "\n").encode() + b"\x00" * 512 + b"\n" + (entry + "\n").encode(), "gpu07.json")
    assert r.lines.select("line_no", "format").rows() == [(1, "journald_json"), (3, "journald_json")]
    assert r.rejects.select("line_no", "error").rows() == [(2, NUL_ONLY_LINE.format(512))]
    # dmesg --time-format iso, then a hole, then dmesg -T (ctime stamps)
    dmesg = (b"2026-11-11T15:00:00,123456+00:00 NVRM: Xid (PCI:0000:18:00): 94, Contained ECC error\n"
             + b"\x00" * 10 + b"\n"
             b"[Wed Nov 11 15:05:00 2026] NVRM: Xid (PCI:0000:18:00): 95, Uncontained ECC error\n")
    r = _parse(dmesg, "dmesg-gpu07.log")
    assert r.lines.select("line_no", "format").rows() == [(1, "dmesg_iso"), (3, "dmesg_ctime")]
    assert r.rejects.select("line_no", "error").rows() == [(2, NUL_ONLY_LINE.format(10))]


def test_a_batch_rejects_each_files_nul_lines_as_each_file_alone() -> None:
    files = [syslog.SyslogInput(PROBE_GPU07, "a.log", "gpu07", HINT_2026),
             syslog.SyslogInput(b"Nov 11 16:00:00 gpu08 kernel: x\n", "b.log", "gpu08", HINT_2026),
             syslog.SyslogInput(b"\x00\x00\nNov 11 16:00:00 gpu09 kernel: y\n", "c.log", "gpu09", HINT_2026)]
    batch = syslog.parse_syslog_batch(files)
    assert batch.rejects.filter(error=NUL_ONLY_LINE.format(200))[["source_file", "line_no"]].rows() == [("a.log", 5)]
    assert batch.rejects.filter(error=NUL_ONLY_LINE.format(2))[["source_file", "line_no"]].rows() == [("c.log", 1)]
    assert batch.files.select("source_file", "rows_read", "rows_loaded", "rows_rejected").rows() == [
        ("a.log", 7, 5, 2), ("b.log", 1, 1, 0), ("c.log", 2, 1, 1)]


def test_the_nightly_data_quality_lists_the_nul_reject(tmp_path: Path) -> None:
    good = "Nov 11 15:00:00 gpu07 CRON[1305]: (root) CMD (run-parts /etc/cron.hourly)\n"
    wh = run_hand_landing(tmp_path, {
        "cluster.yaml": 'nodes: "gpu[01-08]"\ngpus_per_node: 8\n',
        "syslog/2026-11-11/gpu07.log": good + "\x00" * 200 + "\n" + good.replace("15:00", "15:10"),
    })
    assert query_rows(wh, "SELECT rows_read, rows_loaded, rows_rejected FROM raw.ingested_files "
                          "WHERE source_file = 'syslog/2026-11-11/gpu07.log'") == [(3, 2, 1)]
    assert query_rows(wh, "SELECT line_no, raw, error FROM raw.rejects "
                          "WHERE source_file = 'syslog/2026-11-11/gpu07.log'") == [(2, "", NUL_ONLY_LINE.format(200))]
    assert query_rows(wh, "SELECT line_no FROM raw.syslog_lines ORDER BY line_no") == [(1,), (3,)]
    [nightly] = (tmp_path / "reports").glob("nightly-*.md")
    quality = nightly.read_text().split("## Data quality", 1)[1]
    assert f"syslog/2026-11-11/gpu07.log:2 | {NUL_ONLY_LINE.format(200)}" in quality
