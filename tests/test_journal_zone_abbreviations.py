"""``journalctl -o short-full`` prints each line's time in the host's zone with that zone's abbreviation
in force at the line's instant (``Sun 2026-11-01 01:30:00 CST``). An abbreviation of the cluster's own
zone (cluster.yaml ``timezone``) is therefore an offset, taken from zoneinfo for the line's year: in the
repeated hour of a fall-back it says which pass the line is from, and nothing is guessed. An abbreviation
that is not the zone's is read as the cluster's local time, as before.

An outside probe (2026-12-06, America/Chicago): gpu12's Xid 79 stamped ``01:30:00 CST`` was stored at
06:30Z (the first, CDT pass) instead of 07:30Z; job 7012 (end 07:31Z) read as the user's, the repair
1.75 h instead of 0.75 h. The same file with ``-0600`` gave every right value.
"""

from __future__ import annotations

from datetime import datetime, timezone

import polars as pl

from gpusre.models.sources.syslog.parse import SyslogInput, _zone_abbreviation_offsets, parse_syslog_batch

UTC = timezone.utc
XID = "gpu12 kernel: NVRM: Xid (PCI:0000:bb:00): 79, pid=41002, name=python3, GPU has fallen off the bus."
BOOT = "gpu12 kernel: Linux version 5.15.0-126-generic (buildd@lcy02-amd64-032) #136-Ubuntu SMP"
CRON = "gpu12 CRON[1305]: (root) CMD (/usr/lib/nagios/plugins/check_gpu_health.sh >/dev/null 2>&1)"


def _parse(lines: list[str], zone: str) -> tuple[list[datetime], int]:
    """The lines' times (file order) and the file's DST-guessed count."""
    out = parse_syslog_batch([SyslogInput(("\n".join(lines) + "\n").encode(), "syslog/gpu12/journal.log", "gpu12")],
                             timezone=zone)
    assert out.rejects.height == 0
    return out.lines.sort("line_no")["ts"].to_list(), out.files.item(0, "rows_dst_guessed")


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_the_probes_cst_line_is_the_second_pass() -> None:
    # America/Chicago falls back 2026-11-01 02:00 CDT (UTC-5) -> 01:00 CST (UTC-6): 01:30 happens twice.
    lines = [f"Sun 2026-11-01 00:30:00 CDT {CRON}", f"Sun 2026-11-01 01:30:00 CST {XID}",
             f"Sun 2026-11-01 02:15:00 CST {BOOT}"]
    ts, guessed = _parse(lines, "America/Chicago")
    # 00:30 CDT = 05:30Z; 01:30 CST = 07:30Z (not 06:30Z, the CDT pass); 02:15 CST = 08:15Z: 0.75 h Xid -> boot
    assert ts == [_utc(2026, 11, 1, 5, 30), _utc(2026, 11, 1, 7, 30), _utc(2026, 11, 1, 8, 15)]
    assert guessed == 0
    # The control: the same lines with numeric offsets give the same instants.
    numeric = [line.replace(" CDT ", " -0500 ").replace(" CST ", " -0600 ") for line in lines]
    assert _parse(numeric, "America/Chicago") == (ts, 0)


def test_cdt_in_the_repeated_hour_is_the_first_pass() -> None:
    ts, guessed = _parse([f"Sun 2026-11-01 01:30:00 CDT {XID}"], "America/Chicago")
    assert (ts, guessed) == ([_utc(2026, 11, 1, 6, 30)], 0)


def test_europe_berlin_cet_and_cest_at_its_fall_back() -> None:
    # Europe/Berlin falls back 2026-10-25 03:00 CEST (UTC+2) -> 02:00 CET (UTC+1): 02:xx happens twice.
    lines = [f"Sun 2026-10-25 02:40:00 CEST {CRON}", f"Sun 2026-10-25 02:20:00 CET {XID}"]
    ts, guessed = _parse(lines, "Europe/Berlin")
    assert ts == [_utc(2026, 10, 25, 0, 40), _utc(2026, 10, 25, 1, 20)]
    assert guessed == 0


def test_asia_tokyo_jst_at_new_year() -> None:
    ts, guessed = _parse([f"Fri 2027-01-01 00:30:00 JST {XID}"], "Asia/Tokyo")
    assert (ts, guessed) == ([_utc(2026, 12, 31, 15, 30)], 0)


def test_an_abbreviation_of_another_zone_stays_local_time() -> None:
    # EST is not America/Chicago's: the wall clock is read in Chicago, and in the repeated hour of a quiet
    # file that is the documented guess (the earlier, CDT instant), counted in rows_dst_guessed.
    ts, guessed = _parse([f"Sun 2026-11-01 01:30:00 EST {XID}"], "America/Chicago")
    assert (ts, guessed) == ([_utc(2026, 11, 1, 6, 30)], 1)
    # CST in a cluster set to Asia/Tokyo: local Tokyo time (UTC+9), not UTC-6.
    ts, _ = _parse([f"Sun 2026-11-01 01:30:00 CST {XID}"], "Asia/Tokyo")
    assert ts == [_utc(2026, 10, 31, 16, 30)]


def test_abbreviations_come_from_zoneinfo_for_the_lines_years() -> None:
    assert _zone_abbreviation_offsets("America/Chicago", [2026]) == {"CDT": "-0500", "CST": "-0600"}
    assert _zone_abbreviation_offsets("Europe/Berlin", [2026]) == {"CEST": "+0200", "CET": "+0100"}
    assert _zone_abbreviation_offsets("Asia/Kolkata", [2026]) == {"IST": "+0530"}
    # Europe/Moscow's MSK was UTC+4 until 2014-10-26, then UTC+3: in 2014 it names no one offset.
    assert _zone_abbreviation_offsets("Europe/Moscow", [2013]) == {"MSK": "+0400"}
    assert _zone_abbreviation_offsets("Europe/Moscow", [2014]) == {}
    # ... and such a line stays local time (Moscow's 2014 fall-back 02:00 MSK+4 -> 01:00 MSK+3).
    ts, guessed = _parse([f"Sun 2014-10-26 01:30:00 MSK {XID}"], "Europe/Moscow")
    assert (ts, guessed) == ([_utc(2014, 10, 25, 21, 30)], 1)


def test_utc_and_numeric_zones_are_unchanged() -> None:
    ts, _ = _parse([f"Sun 2026-11-01 07:30:00 UTC {XID}", f"Sun 2026-11-01 16:30:00 +0900 {XID}"],
                   "America/Chicago")
    assert ts == [_utc(2026, 11, 1, 7, 30), _utc(2026, 11, 1, 7, 30)]
    assert pl.Series(ts).is_sorted()
