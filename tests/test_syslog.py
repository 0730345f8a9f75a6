"""Tests for gpusre.models.sources.syslog.parse: real node-log samples, every line format, year inference,
time zones, compression, encodings and a timestamp round-trip property."""

from __future__ import annotations

import doctest
import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.sources.syslog import parse as syslog
from gpusre.models.sources.sacct.parse import REJECT_SCHEMA
from gpusre.models.sources.syslog.parse import (
    LINE_SCHEMA,
    UPTIME_WITHOUT_BOOT,
    SyslogParseResult,
    host_from_filename,
    parse_syslog_bytes,
    parse_syslog_file,
)

FIXTURES = Path(__file__).parent / "fixtures" / "syslog"
HINT_2025 = (datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 12, 31, tzinfo=UTC))
BOOT = datetime(2025, 2, 1, tzinfo=UTC)


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _check(r: SyslogParseResult) -> SyslogParseResult:
    """Invariants every parse must hold: schemas, reconciliation, disjoint line numbers."""
    assert r.lines.schema == pl.Schema(LINE_SCHEMA)
    assert r.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert r.rows_read == r.lines.height + r.rejects.height
    assert r.lines["ts"].null_count() == 0
    assert r.rejects["error"].null_count() == 0
    nos = pl.concat([r.lines["line_no"], r.rejects["line_no"]])
    assert nos.n_unique() == nos.len()
    assert r.lines["line_no"].is_sorted()
    return r


def _parse(text: str | bytes, **kw: object) -> SyslogParseResult:
    data = text.encode() if isinstance(text, str) else text
    return _check(parse_syslog_bytes(data, "t.log", **kw))  # type: ignore[arg-type]


def test_doctests() -> None:
    result = doctest.testmod(syslog)
    assert result.attempted >= 4 and result.failed == 0


# --- real samples ---------------------------------------------------------------------------


def test_gpud_dmesg_ctime_sample() -> None:
    r = _check(parse_syslog_file(FIXTURES / "gpud_dmesg-with-xid-119.log", "gpu017/dmesg.log"))
    assert r.rows_read == 43 and r.rejects.is_empty()
    assert set(r.lines["format"]) == {"dmesg_ctime"}
    assert set(r.lines["host"]) == {"gpu017"}  # from the directory name
    xid = r.lines.filter(pl.col("message").str.starts_with("NVRM: Xid"))
    assert xid["ts"].to_list() == [
        _utc(2025, 2, 23, 16, 24, 18), _utc(2025, 2, 23, 16, 24, 24), _utc(2025, 2, 23, 16, 24, 30),
        _utc(2025, 2, 23, 16, 27, 12), _utc(2025, 2, 23, 16, 30, 13),
    ]
    # Indentation of call-trace lines is kept (one space after "]" belongs to the header).
    assert " show_stack+0x52/0x5c" in r.lines["message"].to_list()


def test_gpud_dmesg_decode_iso_sample() -> None:
    r = _check(parse_syslog_file(FIXTURES / "gpud_memory_dmesg.decode.iso.log", "x.log"))
    assert r.rows_read == 24 and r.rejects.is_empty()
    assert set(r.lines["format"]) == {"dmesg_iso"} and set(r.lines["program"]) == {"kernel"}
    first = r.lines.row(0, named=True)
    assert first["ts"] == _utc(2025, 1, 21, 4, 41, 44, 283302)
    assert first["message"].startswith("NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>'")
    assert first["host"] is None  # no host in the line nor in "x.log"
    # The last line has no trailing newline and must still be read.
    assert r.lines["message"][-1] == "oom-kill:constraint=OTHER_CONSTRAINT"


def test_fabric_manager_sample_with_continuations() -> None:
    r = _check(parse_syslog_file(FIXTURES / "gpud_fabricmanager.log", "fm.log", timezone="UTC"))
    assert r.rejects.is_empty()
    counts = dict(r.lines.group_by("format").len().iter_rows())
    assert counts == {"fabricmanager": 54, "continuation": 23}
    first, payload = r.lines.head(2).iter_rows(named=True)
    assert first["ts"] == _utc(2025, 2, 25, 13, 59, 45) and first["program"] == "nv-fabricmanager"
    assert first["message"].startswith("[INFO] [tid 1803] Received an inband message:")
    assert payload["line_no"] == 2 and payload["ts"] == first["ts"]
    assert payload["message"].startswith("Message payload details:Team release request")


@pytest.mark.parametrize("name", ["gpud_kmsg.2.peermem.log", "gpud_pstore_dmesg-erst.txt"])
def test_uptime_samples_need_boot_time(name: str) -> None:
    without = _check(parse_syslog_file(FIXTURES / name, name))
    assert without.lines.is_empty() and without.rows_read > 0
    assert set(without.rejects["error"]) == {UPTIME_WITHOUT_BOOT}
    with_boot = _check(parse_syslog_file(FIXTURES / name, name, boot_time=BOOT))
    assert with_boot.rejects.is_empty() and with_boot.rows_read == without.rows_read
    assert set(with_boot.lines["program"]) == {"kernel"}


def test_kmsg_and_pstore_timestamps() -> None:
    kmsg = parse_syslog_file(FIXTURES / "gpud_kmsg.2.peermem.log", "k", boot_time=BOOT).lines
    assert kmsg["ts"][0] == BOOT + timedelta(microseconds=227_996_636)
    assert kmsg["message"][-1] == "test"
    pstore = parse_syslog_file(FIXTURES / "gpud_pstore_dmesg-erst.txt", "p", boot_time=BOOT).lines
    assert pstore["ts"][0] == BOOT + timedelta(seconds=201, microseconds=650_687)
    assert pstore["message"][0] == "sysrq: SysRq : Trigger a crash"


def test_quoted_kernel_and_slurm_lines() -> None:
    path = FIXTURES / "other_kernel_and_slurm_lines.txt"
    r = _check(parse_syslog_file(path, "q.txt", year_hint=HINT_2025))
    assert r.rows_read == 37
    by_error = r.rejects.group_by("error").agg("line_no")
    errors = {e: sorted(nos) for e, nos in by_error.iter_rows()}
    assert errors[UPTIME_WITHOUT_BOOT] == [8, 11, 12, 14, 15, 16]
    assert errors["continuation of line 8, which was rejected"] == [9, 10]
    # Provenance headers and srun/slurmstepd job-output lines carry no timestamp at all.
    no_ts = errors["no recognised log line format (no timestamp)"]
    assert len(no_ts) == 21 and all(
        line.startswith(("#", "srun:", "slurmstepd:"))
        for line in r.rejects.filter(pl.col("line_no").is_in(no_ts))["raw"]
    )
    mlx = r.lines.filter(pl.col("line_no") == 3).row(0, named=True)
    assert (mlx["ts"], mlx["host"], mlx["program"], mlx["message"]) == (
        _utc(2025, 2, 14, 5, 3, 41), "000-000-00000-1-gpu-1", "kernel",
        "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link INIT",
    )
    # The kernel's "[21584690.529862] " uptime prefix is stripped from syslog messages.
    edac = r.lines.filter(pl.col("line_no") == 18).row(0, named=True)
    assert edac["message"] == "mce: [Hardware Error]: Machine check events logged"
    slurm = r.lines.filter(pl.col("format") == "slurm").row(0, named=True)
    assert slurm["ts"] == _utc(2026, 4, 29, 23, 36, 37, 809000)
    assert slurm["message"].startswith("error: *** STEP 52222788.0 ON nid002888 CANCELLED")

    booted = _check(parse_syslog_file(path, "q.txt", year_hint=HINT_2025, boot_time=BOOT))
    assert booted.rejects.height == 21
    cont = booted.lines.filter(pl.col("format") == "continuation")
    assert cont["message"].to_list() == [
        "NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: fallen off the bus and is not responding to commands.",
    ]
    assert set(cont["ts"]) == {BOOT + timedelta(seconds=1843, microseconds=308145)}


def test_loghub_linux_2k_all_parse_and_match_loghub_fields() -> None:
    hint = (datetime(2005, 1, 1), datetime(2005, 12, 31))
    r = _check(parse_syslog_file(FIXTURES / "Linux_2k.log", "Linux_2k.log", year_hint=hint))
    assert r.rows_read == 2000 and r.lines.height == 2000
    assert set(r.lines["format"]) == {"rfc3164"} and set(r.lines["host"]) == {"combo"}
    assert r.lines["ts"].min() == _utc(2005, 6, 14, 15, 16, 1)
    assert r.lines["ts"].max() == _utc(2005, 7, 27, 14, 42, 0)
    # Out-of-order lines exist (boot messages 5 s back) and must not be read as a year change.
    assert (r.lines["ts"].diff().drop_nulls() >= timedelta(seconds=-5)).all()
    oracle = pl.read_csv(FIXTURES / "Linux_2k.log_structured.csv", infer_schema=False)
    joined = r.lines.join(
        oracle.with_columns(pl.col("LineId").cast(pl.Int64)), left_on="line_no", right_on="LineId"
    )
    assert joined.height == 2000
    # loghub strips leading spaces of messages; we keep them (kernel indentation).
    differs = joined.filter(
        (pl.col("program") != pl.col("Component")).fill_null(True)
        | (pl.col("pid").cast(pl.String).fill_null("") != pl.col("PID").fill_null(""))
        | (pl.col("message").str.strip_chars() != pl.col("Content").str.strip_chars())
    )
    # Only "Jul  7 08:06:15 combo  -- root[2421]: ..." differs: its tag "-- root" is not a tag.
    assert differs["line_no"].to_list() == [899]
    assert joined.filter(pl.col("program") == "syslogd 1.4.1").height == 7


# --- hand-written lines, one per format -----------------------------------------------------


def test_rfc3164_variants() -> None:
    text = (
        "Jan 15 03:04:05 gpu017 kernel: [123.456] NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen\n"
        "<13>Jan  5 03:04:05 gpu018 sshd[42]: Accepted publickey\n"
        "Jan 15 03:04:05.123456 gpu019 slurmd[7]: error: high precision (journalctl -o short-precise)\n"
        "Jan 15 2024 03:04:05 gpu020 prog: with a year\n"
        "Jan 15 03:04:05 kernel: no host field\n"
        "Feb 30 03:04:05 gpu021 kernel: impossible date\n"
    )
    r = _parse(text, year_hint=HINT_2025, host_from_name="fallback01")
    rows = {row["line_no"]: row for row in r.lines.iter_rows(named=True)}
    assert rows[1]["message"] == "NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen"
    assert (rows[1]["host"], rows[1]["program"], rows[1]["pid"]) == ("gpu017", "kernel", None)
    assert (rows[2]["ts"], rows[2]["host"], rows[2]["pid"]) == (_utc(2025, 1, 5, 3, 4, 5), "gpu018", 42)
    assert rows[3]["ts"] == _utc(2025, 1, 15, 3, 4, 5, 123456)
    assert rows[4]["ts"] == _utc(2024, 1, 15, 3, 4, 5)
    assert (rows[5]["host"], rows[5]["program"]) == ("fallback01", "kernel")
    assert r.rejects.rows() == [
        ("t.log", 6, "Feb 30 03:04:05 gpu021 kernel: impossible date", "invalid date or time")
    ]


def test_rfc5424() -> None:
    text = (
        '<34>1 2025-01-15T03:04:05.123Z gpu017 slurmd 4242 ID47 [ex@32473 a="x\\]y" b="2"] '
        "\ufeffnode drained\n"
        "<165>1 2025-01-15T03:04:05.5+09:00 - - - - - no host, app or pid\n"
        "<34>1 - gpu017 app - - - no timestamp\n"
    )
    r = _parse(text, host_from_name="fallback01")
    a, b = r.lines.iter_rows(named=True)
    assert (a["ts"], a["host"], a["program"], a["pid"], a["message"]) == (
        _utc(2025, 1, 15, 3, 4, 5, 123000), "gpu017", "slurmd", 4242, "node drained"
    )
    assert (b["ts"], b["host"], b["program"], b["pid"]) == (
        _utc(2025, 1, 14, 18, 4, 5, 500000), "fallback01", None, None
    )
    assert b["message"] == "no host, app or pid" and set(r.lines["format"]) == {"rfc5424"}
    assert r.rejects.select("line_no", "error").rows() == [
        (3, "RFC 5424 line without a timestamp (NILVALUE)")
    ]


def test_iso8601_rsyslog_and_dmesg() -> None:
    text = (
        "2025-01-15T03:04:05.123456+09:00 gpu017 kernel: [  42.000001] mlx5_core: link down\n"
        "2025-01-15T03:04:05-0500 gpu017 systemd[1]: Started x (short-iso offset without colon)\n"
        "2025-01-15T03:04:05Z gpu017 nvidia-persistenced: Z offset\n"
        "2025-01-21T04:41:44,283575+00:00 NVRM: Xid 13 (dmesg --time-format iso)\n"
        "daemon:info  : 2025-01-21T04:41:44,283575+00:00 systemd[1]: decoded, not kernel\n"
    )
    r = _parse(text, host_from_name="gpu099")
    rows = list(r.lines.iter_rows(named=True))
    assert [x["format"] for x in rows] == ["iso8601"] * 3 + ["dmesg_iso"] * 2
    assert rows[0]["ts"] == _utc(2025, 1, 14, 18, 4, 5, 123456)
    assert rows[0]["message"] == "mlx5_core: link down"
    assert (rows[1]["ts"], rows[1]["program"], rows[1]["pid"]) == (
        _utc(2025, 1, 15, 8, 4, 5), "systemd", 1
    )
    assert rows[2]["ts"] == _utc(2025, 1, 15, 3, 4, 5)
    assert (rows[3]["host"], rows[3]["program"], rows[3]["message"]) == (
        "gpu099", "kernel", "NVRM: Xid 13 (dmesg --time-format iso)"
    )
    assert rows[4]["program"] is None


def test_iso8601_with_a_space_for_the_t_parses_like_the_t() -> None:
    # Custom rsyslog/syslog-ng templates and exports print "YYYY-MM-DD HH:MM:SS"; Python logging's
    # comma decimal ("..., 747 - INFO") is not a syslog header and stays a reject.
    spaced = ("2026-12-03 10:00:01 gpu-a002 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
              "2026-12-03 10:00:02.250+01:00 gpu-a002 nhc[77]: ERROR:  nhc:  Health check failed\n")
    r = _parse(spaced, timezone="Europe/Berlin")
    t = _parse(spaced.replace("2026-12-03 ", "2026-12-03T"), timezone="Europe/Berlin")
    assert r.rejects.height == 0
    assert r.lines.drop("source_file").equals(t.lines.drop("source_file"))
    assert r.lines.select("ts", "host", "program", "pid", "format").rows() == [
        (_utc(2026, 12, 3, 9, 0, 1), "gpu-a002", "kernel", None, "iso8601"),  # local time, CET
        (_utc(2026, 12, 3, 9, 0, 2, 250000), "gpu-a002", "nhc", 77, "iso8601"),
    ]
    python_logging = _parse("2015-07-29 17:41:44,747 - INFO  [QuorumPeer[myid=1]/0:0:0:0:0:0:0:0:2181:"
                            "FastLeaderElection@774] - Notification time out: 3200\n")
    assert python_logging.lines.height == 0 and python_logging.rejects.height == 1


def test_journalctl_short_full_and_short_unix() -> None:
    # journalctl -o short-full prints its own zone: UTC/GMT and numeric zones are offsets, another
    # abbreviation is the cluster's local time. -o short-unix prints seconds since the epoch.
    epoch = int(datetime(2026, 12, 3, 10, 0, 4, tzinfo=UTC).timestamp())
    text = ("Thu 2026-12-03 10:00:04 UTC gpu-a005 kernel: NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception\n"
            "Thu 2026-12-03 11:00:04.250 CET gpu-a005 systemd[1]: Started x\n"
            "Thu 2026-12-03 19:00:04 +0900 gpu-a005 sshd[22]: Accepted\n"
            f"{epoch}.123456 gpu-a006 kernel: [   12.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
            f"{epoch}.5 nhc[9]: ERROR:  nhc:  Health check failed\n")
    r = _parse(text, timezone="Europe/Berlin", host_from_name="gpu-a007")
    assert r.rejects.height == 0
    assert r.lines.select("ts", "host", "program", "pid", "message", "format").rows() == [
        (_utc(2026, 12, 3, 10, 0, 4), "gpu-a005", "kernel", None, "NVRM: Xid (PCI:0000:3b:00): 13, Graphics Exception",
         "journal_full"),
        (_utc(2026, 12, 3, 10, 0, 4, 250000), "gpu-a005", "systemd", 1, "Started x", "journal_full"),
        (_utc(2026, 12, 3, 10, 0, 4), "gpu-a005", "sshd", 22, "Accepted", "journal_full"),
        (_utc(2026, 12, 3, 10, 0, 4, 123456), "gpu-a006", "kernel", None,
         "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", "journal_unix"),
        (_utc(2026, 12, 3, 10, 0, 4, 500000), "gpu-a007", "nhc", 9, "ERROR:  nhc:  Health check failed",
         "journal_unix"),
    ]


def test_dmesg_uptime_decode_and_local_ctime() -> None:
    text = (
        "kern  :err   : [  123.456789] NVRM: Xid 79\n"
        "[Sun Jul  6 10:00:00 2025] dmesg -T in local time\n"
    )
    r = _parse(text, boot_time=datetime(2025, 7, 6, 12, 0), timezone="America/Chicago")
    up, ctime = r.lines.iter_rows(named=True)
    assert up["ts"] == _utc(2025, 7, 6, 12, 2, 3, 456789) and up["message"] == "NVRM: Xid 79"
    assert ctime["ts"] == _utc(2025, 7, 6, 15, 0, 0)  # CDT = UTC-5


def test_journald_json() -> None:
    entries = [
        {"__REALTIME_TIMESTAMP": "1737430904283575", "_HOSTNAME": "gpu017", "MESSAGE": "NVRM: Xid 79",
         "SYSLOG_IDENTIFIER": "kernel", "_PID": "0"},
        {"__REALTIME_TIMESTAMP": "1737430905000000", "_HOSTNAME": "gpu017",
         "MESSAGE": list("caf\u00e9 \xff".encode("latin-1")), "_COMM": "app", "_PID": "12"},
        {"_HOSTNAME": "gpu017", "MESSAGE": "no realtime timestamp"},
    ]
    text = "\n".join(json.dumps(e) for e in entries) + "\n{not json\n"
    r = _parse(text)
    a, b = r.lines.iter_rows(named=True)
    assert (a["ts"], a["host"], a["program"], a["pid"], a["message"]) == (
        _utc(2025, 1, 21, 3, 41, 44, 283575), "gpu017", "kernel", 0, "NVRM: Xid 79"
    )
    # Byte-array MESSAGE: decoded as UTF-8 with replacement of the invalid bytes.
    assert (b["program"], b["pid"], b["message"]) == ("app", 12, "caf\ufffd \ufffd")
    assert r.rejects["line_no"].to_list() == [3, 4]
    assert set(r.lines["format"]) == {"journald_json"}


def test_unknown_lines_indented_orphans_and_blank_lines() -> None:
    text = "\n   \n  indented first line\nhello world\nJan 15 03:04:05 h1 k: ok\n\tcontinued\n"
    r = _parse(text, year_hint=HINT_2025)
    assert r.rows_read == 4  # the blank and whitespace-only lines are not records
    assert r.rejects.select("line_no", "error").rows() == [
        (3, "no recognised log line format (no timestamp)"),
        (4, "no recognised log line format (no timestamp)"),
    ]
    cont = r.lines.filter(pl.col("format") == "continuation").row(0, named=True)
    assert (cont["line_no"], cont["host"], cont["message"]) == (6, "h1", "continued")


# --- year inference -------------------------------------------------------------------------


def test_year_rollover_december_to_january() -> None:
    text = "Dec 31 23:59:58 h k: a\nJan  1 00:00:01 h k: b\nDec 31 23:59:59 h k: late\nJan  2 00:00:00 h k: c\n"
    hint = (datetime(2024, 12, 1), datetime(2025, 1, 31))
    ts = _parse(text, year_hint=hint).lines["ts"].to_list()
    assert ts == [
        _utc(2024, 12, 31, 23, 59, 58), _utc(2025, 1, 1, 0, 0, 1),
        _utc(2024, 12, 31, 23, 59, 59),  # New-Year jitter on a central server goes back a year
        _utc(2025, 1, 2),
    ]


def test_year_hint_chooses_the_year_with_most_rows_inside() -> None:
    text = "Mar  1 00:00:00 h k: a\nMar  2 00:00:00 h k: b\n"
    ts = _parse(text, year_hint=(datetime(2023, 2, 1), datetime(2023, 4, 1))).lines["ts"]
    assert ts.dt.year().to_list() == [2023, 2023]
    # A hint ending before the data still picks the closest year (the data starts after it).
    ts = _parse(text, year_hint=(datetime(2022, 6, 1), datetime(2023, 1, 1))).lines["ts"]
    assert ts.dt.year().to_list() == [2023, 2023]
    # Feb 29 exists only in the leap year the hint points at.
    leap = _parse("Feb 29 12:00:00 h k: x\n", year_hint=(datetime(2024, 1, 1), datetime(2024, 12, 31)))
    assert leap.lines["ts"].to_list() == [_utc(2024, 2, 29, 12)]


@pytest.mark.parametrize("days_ago", [0, 1, 2])
def test_without_a_hint_recent_lines_are_this_year_not_a_year_back(days_ago: int) -> None:
    # The default hint is the year before now: a line of the last days also fits its tolerance a year
    # earlier, and a nightly run's files are the newest days (the earlier year used to win the tie).
    when = (datetime.now(UTC) - timedelta(days=days_ago, hours=1)).replace(microsecond=0)
    line = f"{when:%b} {when.day:2d} {when:%H:%M:%S} gpu017 kernel: NVRM: Xid 79\n"
    assert _parse(line).lines["ts"].to_list() == [when]


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(min_value=-2 * 86_400, max_value=2 * 86_400))
def test_a_year_long_hint_puts_lines_near_both_of_its_ends_in_the_nearer_years(offset: int) -> None:
    # A year of accounting as the hint (2025-03-10 .. 2026-03-10): lines within two days of its end
    # are 2026 (the tie goes to the later year), lines a week inside its start are 2025.
    hint = (datetime(2025, 3, 10, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC))
    near_end = hint[1] + timedelta(seconds=offset)
    near_start = hint[0] + timedelta(days=7, seconds=offset)
    text = "".join(f"{t:%b} {t.day:2d} {t:%H:%M:%S} h k: x\n" for t in (near_end,))
    assert _parse(text, year_hint=hint).lines["ts"].to_list() == [near_end]
    text = f"{near_start:%b} {near_start.day:2d} {near_start:%H:%M:%S} h k: x\n"
    assert _parse(text, year_hint=hint).lines["ts"].to_list() == [near_start]


_STAMP = st.tuples(st.integers(1, 12), st.integers(1, 31), st.integers(0, 23), st.integers(0, 59),
                   st.integers(0, 59), st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(files=st.lists(st.tuples(st.lists(_STAMP, min_size=1, max_size=25),
                                 st.dates(datetime(2019, 1, 1).date(), datetime(2027, 12, 31).date()),
                                 st.integers(0, 800)), min_size=1, max_size=4),
       interleave=st.booleans())
def test_years_counted_per_group_equal_the_row_by_row_definition(
        files: list[tuple[list[tuple[int, ...]], object, int]], interleave: bool) -> None:
    # _infer_years counts the rows inside a candidate year's hint from each (file, year offset, after
    # February) group's earliest and latest time of year, and counts row by row only the files with a
    # group across a bound: the same years as counting every row. Random times cross New Year both ways,
    # hints a day to two years long start anywhere, rows stand for 1-3 lines, and interleaved files take
    # the per-file window path.
    rows = [(f, i + 1, w, mon, d, h, m, sec) for f, (stamps, _, _) in enumerate(files)
            for i, (mon, d, h, m, sec, w) in enumerate(stamps)]
    if interleave:
        rows.sort(key=lambda r: (r[1], r[0]))
    df = pl.DataFrame(rows, schema={"_file": pl.UInt32, "line_no": pl.Int64, "_w": pl.Int64, "_mon": pl.Int64,
                                    "d": pl.Int64, "H": pl.Int64, "M": pl.Int64, "S": pl.Int64}, orient="row")
    hints = syslog._year_hints([(datetime(start.year, start.month, start.day, tzinfo=UTC),
                                 datetime(start.year, start.month, start.day, tzinfo=UTC) + timedelta(days=days))
                                for _, start, days in files])
    grouped = syslog._infer_years(df, hints)
    assert grouped.equals(syslog._infer_years(df, hints, by_row=True))
    assert grouped.columns == [*df.columns[:2], *df.columns[3:], "_year"]


@settings(max_examples=200, deadline=None)
@given(day=st.dates(datetime(1900, 1, 1).date(), datetime(2200, 12, 31).date()))
def test_epoch_days_are_the_calendars(day: object) -> None:
    # The parser places a line by calendar arithmetic on integers: the same day count as Python's
    # proleptic Gregorian calendar over the whole range it accepts (1900-2200, leap centuries too).
    got = pl.select(syslog._epoch_days(pl.lit(day.year), pl.lit(day.month), pl.lit(day.day))).item()
    assert got == day.toordinal() - datetime(1970, 1, 1).date().toordinal()


def test_a_file_across_the_hints_start_is_counted_row_by_row() -> None:
    # Hand-computed: a hint 2025-03-10 .. 2025-03-20 (3 days' tolerance each side: 03-07 .. 03-23). File 0's
    # rows Mar 5, 6, 8, 9 straddle its start in 2025: 2 rows inside (Mar 8, 9), and no other candidate
    # year has any: 2025. File 1 (Mar 21, 22 and Nov 1) has 2 rows inside in 2025 and none in any
    # other year: 2025, though a group's range (Mar 21 .. Nov 1) crosses the bound.
    df = pl.DataFrame({"_file": [0, 0, 0, 0, 1, 1, 1], "line_no": [1, 2, 3, 4, 1, 2, 3], "_w": [1] * 7,
                       "_mon": [3, 3, 3, 3, 3, 3, 11], "d": [5, 6, 8, 9, 21, 22, 1], "H": [0] * 7, "M": [0] * 7,
                       "S": [0] * 7}, schema_overrides={"_file": pl.UInt32})
    hint = (datetime(2025, 3, 10, tzinfo=UTC), datetime(2025, 3, 20, tzinfo=UTC))
    out = syslog._infer_years(df, syslog._year_hints([hint, hint]))
    assert out["_year"].to_list() == [2025] * 7


# --- time zones -----------------------------------------------------------------------------


def test_america_chicago_dst() -> None:
    text = (
        "Mar  9 01:59:59 h k: before spring forward (CST)\n"
        "Mar  9 02:30:00 h k: does not exist\n"
        "Mar  9 03:00:00 h k: after (CDT)\n"
        "Nov  2 01:30:00 h k: first pass (CDT)\n"
        "Nov  2 01:59:00 h k: first pass (CDT)\n"
        "Nov  2 01:10:00 h k: second pass (CST)\n"
        "Nov  2 01:40:00 h k: second pass (CST)\n"
        "Nov  2 02:00:00 h k: after (CST)\n"
    )
    r = _parse(text, timezone="America/Chicago", year_hint=HINT_2025)
    assert r.lines["ts"].to_list() == [
        _utc(2025, 3, 9, 7, 59, 59), _utc(2025, 3, 9, 8),
        _utc(2025, 11, 2, 6, 30), _utc(2025, 11, 2, 6, 59),
        _utc(2025, 11, 2, 7, 10), _utc(2025, 11, 2, 7, 40), _utc(2025, 11, 2, 8),
    ]
    assert r.rejects.select("line_no", "error").rows() == [
        (2, "local time does not exist in America/Chicago (DST gap)")
    ]


def test_unknown_timezone_raises() -> None:
    with pytest.raises(ValueError, match="unknown IANA timezone"):
        parse_syslog_bytes(b"x\n", "t.log", timezone="Mars/Olympus")


# --- files, encodings, host names -----------------------------------------------------------


def test_gzip_rotated_file_and_host_from_name(tmp_path: Path) -> None:
    raw = (FIXTURES / "gpud_memory_dmesg.decode.iso.log").read_bytes()
    path = tmp_path / "gpu017.log.1.gz"
    path.write_bytes(gzip.compress(raw))
    r = _check(parse_syslog_file(path, "syslog/gpu017.log.1.gz"))
    plain = parse_syslog_bytes(raw, "syslog/gpu017.log.1.gz", host_from_name="gpu017")
    assert r.lines.equals(plain.lines) and set(r.lines["host"]) == {"gpu017"}
    explicit = parse_syslog_file(path, "gpu017.log.1.gz", host_from_name="node-a1")
    assert set(explicit.lines["host"]) == {"node-a1"}


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("gpu017.log.1.gz", "gpu017"),
        ("gpu017.log", "gpu017"),
        ("syslog/2026-09-01/gpu017/kern.log", "gpu017"),
        ("remote/gpu-a-017.cluster.local/messages-20250101.gz", "gpu-a-017.cluster.local"),
        ("node-1.log.2", "node-1"),
        ("gpu017_dmesg.log", "gpu017"),
        ("syslog/messages", None),
        ("syslog/kern.log.1", None),
        ("gpud_fabricmanager.log", None),  # no digit: not a node name
        ("archive/2026/01/syslog.gz", None),
    ],
)
def test_host_from_filename(name: str, host: str | None) -> None:
    assert host_from_filename(name) == host


def test_crlf_invalid_utf8_nul_and_long_lines() -> None:
    long_msg = "x" * 1_000_000
    data = (
        b"Jan 15 03:04:05 h1 k: crlf\r\n"
        b"Jan 15 03:04:06 h1 k: bad \xff\xfe bytes\r\n"
        b"\x00\x00\x00Jan 15 03:04:07 h1 k: after NULs left by a crash\n"
        + b"Jan 15 03:04:08 h1 k: " + long_msg.encode() + b"\n"
        + b"garbage \xff\r\n"
    )
    r = _parse(data, year_hint=HINT_2025)
    assert r.lines["message"].to_list() == [
        "crlf", "bad \ufffd\ufffd bytes", "after NULs left by a crash", long_msg
    ]
    assert r.rejects.select("line_no", "raw").rows() == [(5, "garbage \ufffd")]


def test_empty_input() -> None:
    r = _parse(b"")
    assert r.rows_read == 0 and r.lines.is_empty() and r.rejects.is_empty()


# --- round-trip property --------------------------------------------------------------------

_instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2037, 12, 31)
).map(lambda d: d.replace(tzinfo=UTC))


@settings(max_examples=60, deadline=None)
@given(instant=_instants, zone=st.sampled_from(["UTC", "America/Chicago", "Asia/Tokyo"]))
def test_roundtrip_rfc3164_and_iso(instant: datetime, zone: str) -> None:
    local = instant.astimezone(ZoneInfo(zone))
    hint = (instant - timedelta(days=30), instant + timedelta(days=30))
    rfc = f"{local:%b} {local.day:2d} {local:%H:%M:%S}.{local.microsecond:06d} h1 k: m\n"
    iso = f"{local.isoformat(timespec='microseconds')} h1 k: m\n"
    dmesg = f"{local:%Y-%m-%dT%H:%M:%S},{local.microsecond:06d}{local:%z} m\n"
    r = _parse(rfc + iso + dmesg, timezone=zone, year_hint=hint)
    ts = r.lines["ts"].to_list()
    assert ts[1:] == [instant, instant]
    # RFC 3164 has no offset: a lone line in the repeated autumn hour takes the earlier instant
    # (fold=0); everywhere else fold=0 is the only instant.
    assert ts[0] == local.replace(fold=0).astimezone(UTC)


# ---------------------------------------------------------------------------------------------
# Fast path for the common RFC 3164 / ISO header shapes: identical to the general regex path.


def _generated_fast_path_lines() -> list[str]:
    stamps = [
        "Jan 15 03:04:05", "Sep  1 00:00:00", "Sep 1 00:00:00", "Feb 29 12:00:00", "Feb 30 12:00:00",
        "Dec 31 23:59:60", "Mar 10 25:61:00", "Jan 15 2025 03:04:05", "Jan 15 03:04:05.123456",
        "<13>Jan 15 03:04:05", "Jan 15 ٠٣:04:05",
        "2026-09-01T03:04:05.123456+00:00", "2026-09-01T03:04:05Z", "2026-09-01T03:04:05+0900",
        "2026-09-01T03:04:05.5-05:30", "2026-09-01T03:04:05", "2026-09-01T03:04:05.123456789Z",
        "2026-09-01T03:04:05.1234567890Z", "2026-09-01T03:04:05.123+09", "2026-02-30T03:04:05Z",
        "2026-09-01T03:04:05.123456", "<34>2026-09-01T03:04:05Z", "2026-09-01T03:04:05,123+00:00",
    ]
    heads = [
        "gpu017 kernel: ", "gpu017 kernel:", "gpu017 sshd[1234]: ", "gpu017 sshd(pam_unix)[19939]: ",
        "gpu017 su(pam_unix)[1]:  two spaces", "combo syslogd 1.4.1: ", "syslogd 1.4.1: ",
        "sshd[1]: ", "kernel: ", "gpu017 prog[]: ", "gpu017 prog[12a]: ", "gpu017 a[1][2]: ",
        "gpu017 prog:msg ", "gpu017 prog[12]:x ", "gpu017  kernel: ", "gpu017\tkernel: ",
        "gpu-0.example.com app-x.y_z@1[99]: ", "gpu017 prog[١٢]: ", "gpu017 prög[7]: ",
        "hôst prog: ", "gpu017 [kernel]: ", "gpu017 ke:rnel: ", "gpu017 kernel ", "gpu017",
        "gpu017 ", "just words here ", ": ", "gpu017 kernel: [  123.456] ", "gpu017 kernel: [12.5]",
        "gpu017 ＰＲＯＧ: ", "gpu017\u00a0kernel: ", "gpu017 kernel:\u00a0",
    ]
    messages = ["NVRM: Xid 79, pid=1", "", "  indented  ", "a [1.5] b: c[2]: d   "]
    out = [f"{s} {h}{m}" for s in stamps for h in heads for m in messages]
    return out + [s for s in stamps] + [s + " " for s in stamps]


def _both_paths(
    data: bytes, monkeypatch: pytest.MonkeyPatch, **kw: object
) -> tuple[SyslogParseResult, SyslogParseResult]:
    monkeypatch.setattr(syslog, "_FAST_PATH", True)
    fast = parse_syslog_bytes(data, "t.log", **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(syslog, "_FAST_PATH", False)
    slow = parse_syslog_bytes(data, "t.log", **kw)  # type: ignore[arg-type]
    return fast, slow


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.suffix != ".csv"))
def test_fast_path_identical_on_fixtures(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = (FIXTURES / name).read_bytes()
    fast, slow = _both_paths(data, monkeypatch, year_hint=HINT_2025, boot_time=BOOT)
    assert fast.lines.equals(slow.lines) and fast.rejects.equals(slow.rejects)
    assert fast.rows_read == slow.rows_read


@pytest.mark.parametrize("zone", ["UTC", "America/Chicago"])
def test_fast_path_identical_on_generated_lines(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _generated_fast_path_lines()
    fast, slow = _both_paths("\n".join(lines).encode(), monkeypatch, year_hint=HINT_2025, timezone=zone)
    _check(fast)
    assert fast.lines.equals(slow.lines) and fast.rejects.equals(slow.rejects)
    # Both shapes really take the fast path (and some lines fall back to the regex).
    assert fast.lines.height > 1000


@pytest.mark.parametrize("fmt", ["rfc3164", "iso8601"])
def test_fast_header_groups_identical_to_regex(fmt: str) -> None:
    lines = pl.DataFrame({"line": _generated_fast_path_lines()}).with_row_index("line_no")
    sub = lines.filter(pl.col("line").str.contains(syslog.FORMATS[fmt])).with_columns(pl.lit(0, dtype=pl.UInt32).alias("_file"))
    fast = syslog._header_groups(sub, fmt, fast=True)
    slow = syslog._header_groups_regex(sub, fmt)
    assert fast.height == slow.height == sub.height
    assert fast.select(slow.columns).equals(slow)
    # The route really splits the rows: many fast, some through the regex.
    routed = sub.filter(pl.col("line").str.contains(syslog._FAST_ROUTE[fmt]))
    assert routed.height > sub.height // 2


_LINE_BYTES = st.lists(
    st.sampled_from([b"a", b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x00", b"\xc3\xa9", b"\xc3", b"\xa9", b"\xff",
                     b"\xef\xbb\xbf", b"\xe2\x82", b"Jan 15 03:04:05 gpu017 kernel: x"]),
    max_size=40,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(data=_LINE_BYTES)
def test_split_lines_matches_python_text_split(data: bytes) -> None:
    # The Polars fast path must split exactly like decoding with replacement, dropping NULs and
    # CRLF -> LF on the text, then str.split("\n") (line numbers count blank lines too).
    expected = syslog._split_text(data)
    expected_rows = [(i, line) for i, line in enumerate(expected.to_list(), start=1) if line.strip() != ""]
    got = syslog._split_lines(data)
    assert got.schema == {"line_no": pl.Int64, "line": pl.String}
    assert got.rows() == expected_rows


@settings(max_examples=200, deadline=None)
@given(datas=st.lists(_LINE_BYTES, max_size=6))
def test_split_batch_splits_each_file_as_on_its_own(datas: list[bytes]) -> None:
    # Files of a batch share one buffer: a file's last line must not run into the next file, and a
    # file that is valid only joined to its neighbour (b"\xe2\x82" then b"\xac...") is still
    # invalid on its own and decoded with replacement.
    expected = [(index, line_no, line) for index, data in enumerate(datas)
                for line_no, line in enumerate(syslog._split_text(data).to_list(), start=1) if line.strip() != ""]
    got = syslog._split_batch(datas)
    assert got.schema == {"_file": pl.UInt32, "line_no": pl.Int64, "line": pl.String}
    assert got.rows() == expected


@settings(max_examples=100, deadline=None)
@given(datas=st.lists(_LINE_BYTES, max_size=6), cap=st.integers(min_value=1, max_value=64))
def test_split_batch_with_a_small_buffer_cap_splits_each_file_as_on_its_own(datas: list[bytes], cap: int) -> None:
    # Runs of valid files are cut where their bytes together would reach _MAX_SINGLE_STRING (1 GiB:
    # lowered here so the cut happens); the lines must not depend on where the cuts fall.
    expected = syslog._split_batch(datas).rows()
    original = syslog._MAX_SINGLE_STRING
    syslog._MAX_SINGLE_STRING = cap
    try:
        got = syslog._split_batch(datas)
    finally:
        syslog._MAX_SINGLE_STRING = original
    assert got.rows() == expected


def test_split_batch_keeps_a_file_valid_only_joined_to_its_neighbour_apart() -> None:
    got = syslog._split_batch([b"ok\n", b"a\xe2\x82", b"\xacb\n", b"\n\nlast"])
    assert got.rows() == [(0, 1, "ok"), (1, 1, "a\ufffd"), (2, 1, "\ufffdb"), (3, 3, "last")]


# --- a batch of files parses exactly like each file on its own ---------------------------------

# Files whose per-file state could leak into a neighbour in a batch: a New Year wrap, a DST
# fall-back hour, continuations at the start and end, another year hint, invalid UTF-8, NUL bytes,
# CRLF, a BOM, nothing at all.
_BATCH_POOL: list[tuple[str, bytes, tuple[datetime, datetime] | None, str | None]] = [
    ("wrap.log", b"Dec 31 23:59:58 h k: a\nJan  1 00:00:01 h k: b\nDec 31 23:59:59 h k: late\n",
     (datetime(2024, 12, 1), datetime(2025, 1, 31)), None),
    ("march.log", b"Mar  1 00:00:00 h k: a\nMar  2 00:00:00 h k: b\n", (datetime(2023, 2, 1), datetime(2023, 4, 1)), None),
    ("leap.log", b"Feb 29 12:00:00 h k: x\n", (datetime(2024, 1, 1), datetime(2024, 12, 31)), None),
    ("fallback.log", b"Nov  2 01:30:00 h k: one\nNov  2 01:59:00 h k: two\nNov  2 01:10:00 h k: three\n"
     b"Nov  2 02:00:00 h k: four\n", HINT_2025, "gpu001"),
    ("fallback2.log", b"Nov  2 01:20:00 h k: fresh file, first pass\nMar  9 02:30:00 h k: gap\n", HINT_2025, None),
    ("cont.log", b"   orphan continuation\nJan 15 03:04:05 k: no host\n\tcontinued\nFeb 30 03:04:05 h k: bad\n"
     b"  continues a reject\n", None, "gpu002"),
    ("fm.log", b"[Feb 25 2025 13:59:45] [INFO] [tid 1803] start\nsecond line of it\n", None, "gpu003"),
    ("utf8.log", b"Jan 15 03:04:05 h k: caf\xc3\xa9 \xff\xfe\r\nJan 15 03:04:06 h k: b\r\n", HINT_2025, None),
    ("nul.log", b"\x00\x00Jan 15 03:04:05 h k: after NULs\n\x00", HINT_2025, None),
    ("bom.log", b"\xef\xbb\xbf2025-01-15T03:04:05Z h k: bom\n", None, None),
    ("empty.log", b"", None, "gpu004"),
    ("blank.log", b"\n  \n\t\n", None, None),
    ("journal.json", b'{"__REALTIME_TIMESTAMP": "1737430904283575", "MESSAGE": [99, 255]}\n{"MESSAGE": "x"}\n',
     None, "gpu005"),
]


def _batch_pool() -> list[syslog.SyslogInput]:
    fixtures = [
        syslog.SyslogInput(syslog._decompress(p.read_bytes()), f"fixtures/{p.name}", host_from_filename(p.name), HINT_2025)
        for p in sorted(FIXTURES.iterdir()) if p.suffix not in (".csv", ".md")
    ]
    return fixtures + [syslog.SyslogInput(data, name, host, hint) for name, data, hint, host in _BATCH_POOL]


def _assert_batch_equals_single_files(files: list[syslog.SyslogInput], zone: str) -> None:
    batch = syslog.parse_syslog_batch(files, timezone=zone, boot_time=BOOT)
    singles = [
        _check(parse_syslog_bytes(f.data, f.source_file, timezone=zone, year_hint=f.year_hint,
                                  host_from_name=f.host_from_name, boot_time=BOOT))
        for f in files
    ]
    assert batch.lines.equals(pl.concat([s.lines for s in singles]))
    assert batch.rejects.equals(pl.concat([s.rejects for s in singles]))
    assert batch.files.select("source_file", "rows_read", "rows_loaded", "rows_rejected").rows() == [
        (f.source_file, s.rows_read, s.lines.height, s.rejects.height) for f, s in zip(files, singles, strict=True)
    ]
    # Lines of a repeated DST hour placed by a guess are counted per file as each file alone counts them.
    assert batch.files["rows_dst_guessed"].to_list() == [
        syslog.parse_syslog_batch([f], timezone=zone, boot_time=BOOT).files.item(0, "rows_dst_guessed") for f in files]


@pytest.mark.parametrize("zone", ["UTC", "America/Chicago"])
def test_batch_parses_like_each_file_alone(zone: str) -> None:
    files = _batch_pool()
    _assert_batch_equals_single_files(files, zone)
    # The pool really exercises the per-file state: years, continuations, rejects and decoding.
    batch = syslog.parse_syslog_batch(files, timezone=zone, boot_time=BOOT)
    years = batch.lines.group_by("source_file").agg(pl.col("ts").dt.year().min()).rows()
    assert ("march.log", 2023) in years and ("leap.log", 2024) in years
    assert zone != "UTC" or ("wrap.log", 2024) in years
    assert {"continuation"} <= set(batch.lines["format"])
    assert batch.files.filter(pl.col("source_file") == "empty.log").row(0)[1:] == (0, 0, 0, 0)


@settings(max_examples=25, deadline=None)
@given(order=st.lists(st.integers(0, len(_BATCH_POOL) - 1), min_size=1, max_size=8))
def test_batch_of_any_files_in_any_order_parses_like_each_alone(order: list[int]) -> None:
    pool = [syslog.SyslogInput(data, name, host, hint) for name, data, hint, host in _BATCH_POOL]
    _assert_batch_equals_single_files([pool[i] for i in order], "America/Chicago")


# ---------------------------------------------------------------------------------------------
# Timestamps computed once per run of equal stamps (a central server's file): same as per line.

_RUN_STAMPS = [
    "Dec 31 23:59:59", "Jan  1 00:00:00", "Jan  1 00:00:01", "Jun 15 12:00:00", "Nov  2 01:10:00",
    "Nov  2 01:30:00", "Nov  2 01:59:59", "Mar  9 02:30:00", "Feb 30 12:00:00", "Feb 29 12:00:00",
    "Jan 15 2025 03:04:05", "Jan 15 03:04:05.5", "2025-11-02T01:30:00", "2025-01-15T03:04:05+09:00",
    "2025-01-15T03:04:05+99:00", "2025-03-09T02:30:00.25",
]
_RUN_FILES = st.lists(
    st.lists(st.tuples(st.sampled_from(_RUN_STAMPS), st.integers(1, 5), st.booleans()), min_size=1, max_size=12),
    min_size=1, max_size=3,
)


def _run_file(runs: list[tuple[str, int, bool]]) -> bytes:
    """Each (stamp, repeat, continued): the stamp on ``repeat`` consecutive lines, from two hosts,
    and an indented continuation line after the run when ``continued``."""
    out = []
    for stamp, repeat, continued in runs:
        out += [f"{stamp} gpu{k % 2:03d} kernel: line {k}" for k in range(repeat)]
        out += ["    continued"] if continued else []
    return "\n".join(out).encode()


@settings(max_examples=40, deadline=None)
@given(files=_RUN_FILES, zone=st.sampled_from(["UTC", "America/Chicago"]))
def test_timestamps_per_run_of_equal_stamps_equal_per_line(files: list[list[tuple[str, int, bool]]], zone: str,
                                                           ) -> None:
    inputs = [syslog.SyslogInput(_run_file(runs), f"f{i}.log", None, HINT_2025) for i, runs in enumerate(files)]
    results = []
    for mean_run in (0, 10**9):  # always collapse runs, never
        syslog._MIN_MEAN_RUN = mean_run
        try:
            results.append(syslog.parse_syslog_batch(inputs, timezone=zone))
        finally:
            syslog._MIN_MEAN_RUN = 2
    per_run, per_line = results
    assert per_run.lines.equals(per_line.lines)
    assert per_run.rejects.equals(per_line.rejects)
    assert per_run.files.equals(per_line.files)


def test_stamp_runs_collapse_a_central_servers_lines_and_leave_per_node_lines() -> None:
    central = "\n".join(f"Jan 15 03:04:{s // 10:02d} gpu{s % 10:03d} kernel: x" for s in range(500)).encode()
    per_node = "\n".join(f"Jan 15 03:{s // 60:02d}:{s % 60:02d} gpu001 kernel: x" for s in range(500)).encode()

    def stamps(data: bytes) -> pl.DataFrame:
        groups = syslog._header_groups(syslog._split_batch([data]), "rfc3164", fast=True)
        return groups.select("_file", "line_no", "b", "d", "Y", "H", "M", "S", "frac")

    runs = syslog._stamp_runs(stamps(central))
    assert runs is not None
    first_rows, run_of_row = runs
    assert first_rows.height == 50 and first_rows["_w"].to_list() == [10] * 50
    assert run_of_row.to_list() == [s // 10 for s in range(500)]
    assert syslog._stamp_runs(stamps(per_node)) is None


def test_journalctl_marker_lines_are_not_records() -> None:
    data = (b"-- Journal begins at Mon 2026-11-30 00:00:01 UTC, ends at Mon 2026-11-30 23:59:59 UTC. --\n"
            b"Nov 30 10:00:00 gpu001 kernel: hello\n-- Boot 3f2c0a1b2c3d4e5f --\n-- Reboot --\n"
            b"Nov 30 10:00:01 gpu001 kernel: again\n-- No entries --\n-- anything else --\n")
    parsed = parse_syslog_bytes(data, "gpu001.journal")
    assert parsed.lines["line_no"].to_list() == [2, 5]
    assert parsed.rejects["line_no"].to_list() == [7]   # not a marker journalctl prints: still a reject


def test_a_slurmd_log_is_slurmd_s() -> None:
    data = (b"[2026-11-30T10:00:28.123] error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
            b"check_fs_mount:  /lustre not mounted\n")
    parsed = parse_syslog_bytes(data, "syslog/2026-11-30/gpu002/slurmd.log", host_from_name="gpu002")
    assert parsed.lines.select("host", "program", "format").row(0) == ("gpu002", "slurmd", "slurm")


def test_gpfs_daemon_log_lines() -> None:
    # IBM Storage Scale's mmfs.log (5.x): ISO date, '_', time, fraction, numeric offset; no host or tag.
    data = (b"2026-11-30_13:59:00.123+0000: [E] Unable to mount file system gpfs01\n"
            b"2026-11-30_14:00:00.000-0500: [X] The disk is down\n")
    parsed = parse_syslog_bytes(data, "syslog/2026-11-30/gpu001/mmfs.log.latest", host_from_name="gpu001")
    assert parsed.rejects.height == 0
    assert parsed.lines.select("ts", "host", "program", "format").rows() == [
        (datetime(2026, 11, 30, 13, 59, 0, 123000, tzinfo=UTC), "gpu001", "mmfs", "gpfs"),
        (datetime(2026, 11, 30, 19, 0, tzinfo=UTC), "gpu001", "mmfs", "gpfs")]


def test_sysklogd_last_message_repeated_becomes_rsyslogs_fold_of_the_hosts_previous_line() -> None:
    # sysklogd / busybox write "last message repeated N times" (no program tag, no text of its own):
    # it stands for N more copies of the same host's previous line in the file, here interleaved with
    # another host's lines in a central file.
    xid = "NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping"
    data = (f"Nov 30 09:00:00 gpu006 kernel: {xid}\n"
            "Nov 30 09:00:10 gpu007 kernel: eth0: link up\n"
            "Nov 30 09:00:40 gpu006 last message repeated 9 times\n"
            "Nov 30 09:01:40 gpu007 last message repeated 1 time\n"
            "Nov 30 09:02:00 gpu008 last message repeated 3 times\n").encode()
    lines = syslog.parse_syslog_batch([syslog.SyslogInput(data=data, source_file="central.log")]).lines
    assert lines.sort("line_no")["message"].to_list() == [
        xid, "eth0: link up", f"message repeated 9 times: [ {xid}]", "message repeated 1 times: [ eth0: link up]",
        "last message repeated 3 times"]  # gpu008 has no earlier line here: left as it is


# --- a last line without a line break -----------------------------------------------------------


def test_a_cut_last_line_is_rejected_and_a_whole_unterminated_record_loads() -> None:
    """Log writers end each record with a line break; a last line without one that is not a whole
    record of the file's shape was cut while written (hand cases: the probe's ``CRON[3``, a journald
    JSON entry cut in its timestamp), while a whole record lacking only the break loads (downloaded
    samples such as loghub's Linux_2k.log end that way)."""
    head = "2026-11-11T22:10:00+00:00 gpu13 systemd[1]: Starting Cleanup of Temporary Directories...\n"
    cut = _parse(head + "2026-11-11T23:59:01+00:00 gpu13 CRON[3")
    assert cut.lines["line_no"].to_list() == [1] and cut.lines["ts"].max() == _utc(2026, 11, 11, 22, 10)
    assert cut.rejects.select("line_no", "raw", "error").rows() == [
        (2, "2026-11-11T23:59:01+00:00 gpu13 CRON[3", syslog.CUT_LAST_LINE)]
    # The same line with its line break is a line as written (no tag recognised): not this rule's call.
    assert _parse(head + "2026-11-11T23:59:01+00:00 gpu13 CRON[3\n").rejects.is_empty()
    whole = _parse(head + "2026-11-11T23:59:01+00:00 gpu13 CRON[3712]: (root) CMD (run-parts)")
    assert whole.rejects.is_empty() and whole.lines["message"][-1] == "(root) CMD (run-parts)"
    # A journald JSON entry: cut inside it, or whole without the final line break.
    entry = '{"__REALTIME_TIMESTAMP":"1762902600000000","_HOSTNAME":"gpu05","MESSAGE":"x","SYSLOG_IDENTIFIER":"k"}'
    assert _parse(entry + "\n" + entry[:40]).rejects["error"].to_list() == [syslog.CUT_LAST_LINE]
    assert _parse(entry + "\n" + entry).rejects.is_empty()
    # A single cut line: no line before to compare, but no message (cut after the tag) or no format.
    assert _parse("2026-11-11T23:59:01+00:00 gpu13 CRON[3712]:").rejects["error"].to_list() == [syslog.CUT_LAST_LINE]
    assert _parse("2026-11-1").rejects["error"].to_list() == [syslog.CUT_LAST_LINE]
    # Another format than the line before: a cut RFC 3164 stamp read as something else.
    assert _parse(head + "Nov 11 23:59:01 gpu13 CRON[3712]: x").rejects["error"].to_list() == [syslog.CUT_LAST_LINE]
    # An indented continuation carries no header to check. NUL padding after the break is no record cut
    # while written but the hole a crash left: rejected as NUL bytes (README: its NUL lines are rejected).
    assert _parse(head + "    continued").rejects.is_empty()
    assert _parse(head.encode() + b"\x00" * 16).rejects.select("line_no", "error").rows() == [
        (2, syslog.NUL_ONLY_LINE.format(16))]


@pytest.mark.parametrize("name", ["Linux_2k.log", "gpud_memory_dmesg.decode.iso.log", "gpud_kmsg.2.peermem.log",
                                  "gpud_pstore_dmesg-erst.txt"])
def test_downloaded_samples_ending_without_a_line_break_keep_their_last_record(name: str) -> None:
    """These real samples end on a whole record without a line break: it is not called cut (the
    uptime ones are rejected for their own reason, without a boot time)."""
    r = _check(parse_syslog_file(FIXTURES / name, name))
    assert syslog.CUT_LAST_LINE not in set(r.rejects["error"])
    assert r.rows_read == (FIXTURES / name).read_bytes().count(b"\n") + 1
