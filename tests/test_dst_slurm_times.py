"""Slurm times across the DST fall-back of 2026-11-01 in America/Chicago, hand-computed.

That night 02:00 CDT (UTC-5) becomes 01:00 CST (UTC-6): local 01:00-01:59 happens twice, first as CDT
(the "earliest" reading, local + 5 h) then as CST (the "latest" reading, local + 6 h).

* sacct stamps with a UTC offset (``SLURM_TIME_FORMAT="%FT%T%z"``) are exact instants;
* an ambiguous Submit/Eligible takes the latest reading not after the resolved Start;
* an ambiguous start of an open ``sacctmgr show event`` line is placed by the dump's cut (start + Duration).
"""

from __future__ import annotations

import doctest
from datetime import datetime, timezone

import polars as pl
import pytest

from gpusre.models.ingest import slurm_values
from gpusre.models.sources.sacct.parse import (
    REJECT_SCHEMA,
    SACCT_RECORD_SCHEMA,
    SacctParseResult,
    parse_sacct_text,
)
from gpusre.models.sources.slurm_events.parse import SLURM_EVENT_SCHEMA, parse_slurm_events_text

TZ = "America/Chicago"
COLS = ("submit_ts", "eligible_ts", "start_ts", "end_ts")


def _utc(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def _check(r: SacctParseResult) -> None:
    assert r.records.schema == pl.Schema(SACCT_RECORD_SCHEMA)
    assert r.rejects.schema == pl.Schema(REJECT_SCHEMA)
    assert r.rows_read == len(r.records) + len(r.rejects)


def _times(r: SacctParseResult) -> dict[str, tuple[datetime | None, ...]]:
    return {row["job_id"]: tuple(row[k] for k in COLS) for row in r.records.iter_rows(named=True)}


def test_slurm_values_doctests() -> None:
    assert doctest.testmod(slurm_values).failed == 0


# ------------------------------------------------------------------ 1. sacct stamps with a UTC offset

OFFSET_DUMP = (
    "JobID|State|Submit|Eligible|Start|End|Elapsed\n"
    # 01:45-0600 = 07:45Z, 01:50-0600 = 07:50Z, 02:20-0600 = 08:20Z.
    "1|COMPLETED|2026-11-01T01:45:00-0600|2026-11-01T01:45:00-0600|2026-11-01T01:50:00-0600"
    "|2026-11-01T02:20:00-0600|00:30:00\n"
    # ISO offsets: 01:45-05:00 = 06:45Z, 01:50-05:00 = 06:50Z, 01:10-06:00 = 07:10Z (20 min later).
    "2|COMPLETED|2026-11-01T01:45:00-05:00|2026-11-01T01:45:00-05:00|2026-11-01T01:50:00-05:00"
    "|2026-11-01T01:10:00-06:00|00:20:00\n"
    # Z: 06:45Z as printed; a pending job.
    "3|PENDING|2026-11-01T06:45:00Z|2026-11-01T06:45:00Z|Unknown|Unknown|00:00:00\n"
    # Exact stamps win over Elapsed: 01:30-0500 = 06:30Z, 01:40-0500 = 06:40Z even though Elapsed 01:10:00
    # would fit the local pair 01:30 CDT -> 01:40 CST (06:30Z -> 07:40Z).
    "4|COMPLETED|2026-11-01T01:30:00-0500|2026-11-01T01:30:00-0500|2026-11-01T01:30:00-0500"
    "|2026-11-01T01:40:00-0500|01:10:00\n"
    # Exact Submit 01:45-0500 = 06:45Z stays put even though its CST reading (07:45Z) is not after
    # Start 01:50-0600 = 07:50Z: a real 65-min wait. End 02:50-0600 = 08:50Z.
    "5|COMPLETED|2026-11-01T01:45:00-0500|2026-11-01T01:45:00-0500|2026-11-01T01:50:00-0600"
    "|2026-11-01T02:50:00-0600|01:00:00\n"
)
OFFSET_EXPECTED = {
    "1": ("2026-11-01T07:45:00", "2026-11-01T07:45:00", "2026-11-01T07:50:00", "2026-11-01T08:20:00"),
    "2": ("2026-11-01T06:45:00", "2026-11-01T06:45:00", "2026-11-01T06:50:00", "2026-11-01T07:10:00"),
    "3": ("2026-11-01T06:45:00", "2026-11-01T06:45:00", None, None),
    "4": ("2026-11-01T06:30:00", "2026-11-01T06:30:00", "2026-11-01T06:30:00", "2026-11-01T06:40:00"),
    "5": ("2026-11-01T06:45:00", "2026-11-01T06:45:00", "2026-11-01T07:50:00", "2026-11-01T08:50:00"),
}


@pytest.mark.parametrize("zone", [TZ, "UTC", "Asia/Tokyo"])
def test_stamps_with_an_offset_are_exact_in_any_zone(zone: str) -> None:
    r = parse_sacct_text(OFFSET_DUMP, "o.psv", timezone=zone)
    _check(r)
    assert r.rejects.is_empty()
    assert _times(r) == {j: tuple(_utc(t) for t in ts) for j, ts in OFFSET_EXPECTED.items()}


def test_space_separated_stamps_with_an_offset() -> None:
    # SLURM_TIME_FORMAT="%F %T%z": the same instants as job 1 above.
    text = "JobID|State|Submit|Start|End|Elapsed\n1|COMPLETED|2026-11-01 01:45:00-0600|2026-11-01 01:50:00-0600" \
           "|2026-11-01 02:20:00-0600|00:30:00\n"
    r = parse_sacct_text(text, "s.psv", timezone=TZ)
    assert r.rejects.is_empty()
    assert r.records.select("submit_ts", "start_ts", "end_ts").row(0) == (
        _utc("2026-11-01T07:45:00"), _utc("2026-11-01T07:50:00"), _utc("2026-11-01T08:20:00"))


def test_mixed_dump_local_and_offset_stamps() -> None:
    text = (
        "JobID|State|Submit|Eligible|Start|End|Elapsed\n"
        # Submit 23:00 CDT (Oct 31, unambiguous) = 04:00Z; Start exact 01:30-0600 = 07:30Z;
        # End local 02:30 (after the fall-back: CST only) = 08:30Z; 1 h = Elapsed.
        "1|COMPLETED|2026-10-31T23:00:00|2026-10-31T23:00:00|2026-11-01T01:30:00-0600|2026-11-01T02:30:00|01:00:00\n"
        # All local, the pre-existing Elapsed rule: Start 01:30 CST = 07:30Z, End 02:30 CST = 08:30Z.
        "2|COMPLETED|2026-11-01T00:30:00|2026-11-01T00:30:00|2026-11-01T01:30:00|2026-11-01T02:30:00|01:00:00\n"
        # Unknown/None keep meaning "no time"; Submit 09:00 CST on Nov 2 = 15:00Z.
        "3|PENDING|2026-11-02T09:00:00|None|Unknown|Unknown|00:00:00\n"
        # 150 local rows: the offset below is past any head-of-file sample.
        + "".join(f"{100 + i}|PENDING|2026-11-02T09:00:00|None|Unknown|Unknown|00:00:00\n" for i in range(150))
        # Submit 2026-11-02T10:00-0600 = 16:00Z.
        + "4|PENDING|2026-11-02T10:00:00-0600|Unknown|Unknown|Unknown|00:00:00\n"
    )
    r = parse_sacct_text(text, "m.psv", timezone=TZ)
    _check(r)
    assert r.rejects.is_empty()
    assert {k: v for k, v in _times(r).items() if len(k) == 1} == {
        "1": (_utc("2026-11-01T04:00:00"), _utc("2026-11-01T04:00:00"), _utc("2026-11-01T07:30:00"),
              _utc("2026-11-01T08:30:00")),
        # Submit/Eligible 00:30 CDT = 05:30Z (not ambiguous).
        "2": (_utc("2026-11-01T05:30:00"), _utc("2026-11-01T05:30:00"), _utc("2026-11-01T07:30:00"),
              _utc("2026-11-01T08:30:00")),
        "3": (_utc("2026-11-02T15:00:00"), None, None, None),
        "4": (_utc("2026-11-02T16:00:00"), None, None, None),
    }


def test_malformed_offsets_are_still_rejected() -> None:
    text = (
        "JobID|State|Submit\n"
        "1|PENDING|2026-11-01T01:45:00-06\n"      # hours only: not what %z prints
        "2|PENDING|2026-11-01T01:45:00+2500\n"    # no such offset
        "3|PENDING|2026-11-01T01:45:00-0600x\n"   # trailing text
        "4|PENDING|2026-11-01T01:45:00z\n"        # lower-case z
        "5|PENDING|2026-02-30T01:45:00-0600\n"    # no such date
        "6|PENDING|2026-11-01T01:45:00-0600\n"    # fine: 07:45Z
    )
    r = parse_sacct_text(text, "b.psv", timezone=TZ)
    _check(r)
    assert r.rejects["line_no"].to_list() == [2, 3, 4, 5, 6]
    assert r.rejects["error"].str.starts_with("malformed Submit timestamp").all()
    assert r.records.select("job_id", "submit_ts").row(0) == ("6", _utc("2026-11-01T07:45:00"))


# ------------------------------------------------------------ 2. ambiguous Submit/Eligible vs Start


def test_ambiguous_submit_and_eligible_take_the_latest_reading_not_after_start() -> None:
    text = (
        "JobID|State|Submit|Eligible|Start|End|Elapsed\n"
        # The evaluator's job: Start 01:40 is CST (07:40Z) because End 02:10 (CST only, 08:10Z) - 30 min
        # Elapsed; Submit/Eligible 01:35 -> CST 07:35Z <= 07:40Z. Wait 300 s (earliest gave 06:35Z: 3900 s).
        "1|COMPLETED|2026-11-01T01:35:00|2026-11-01T01:35:00|2026-11-01T01:40:00|2026-11-01T02:10:00|00:30:00\n"
        # Both CDT: Start 01:40 -> 01:50, 10 min: earliest pair, 06:40Z. Submit CST 07:35Z is after it:
        # the earliest, 06:35Z. Wait 300 s.
        "2|COMPLETED|2026-11-01T01:35:00|2026-11-01T01:35:00|2026-11-01T01:40:00|2026-11-01T01:50:00|00:10:00\n"
        # Submit 01:50 CDT, Start 01:10 CST: End 02:10 CST = 08:10Z - 1 h = 07:10Z. Submit CST 07:50Z is after
        # Start: earliest, 06:50Z. Wait 1200 s.
        "3|COMPLETED|2026-11-01T01:50:00|2026-11-01T01:50:00|2026-11-01T01:10:00|2026-11-01T02:10:00|01:00:00\n"
        # Pending, no Start: the earliest, 01:35 CDT = 06:35Z.
        "4|PENDING|2026-11-01T01:35:00|2026-11-01T01:35:00|Unknown|Unknown|00:00:00\n"
        # Submit 00:50 CDT = 05:50Z (not ambiguous); Eligible 01:20 (a --begin): Start 01:30 CST = 07:30Z
        # (End 02:00 CST = 08:00Z - 30 min), so Eligible 01:20 CST = 07:20Z. Wait from Eligible 600 s.
        "5|COMPLETED|2026-11-01T00:50:00|2026-11-01T01:20:00|2026-11-01T01:30:00|2026-11-01T02:00:00|00:30:00\n"
    )
    r = parse_sacct_text(text, "q.psv", timezone=TZ)
    _check(r)
    assert r.rejects.is_empty()
    expected = {
        "1": ("2026-11-01T07:35:00", "2026-11-01T07:35:00", "2026-11-01T07:40:00", "2026-11-01T08:10:00"),
        "2": ("2026-11-01T06:35:00", "2026-11-01T06:35:00", "2026-11-01T06:40:00", "2026-11-01T06:50:00"),
        "3": ("2026-11-01T06:50:00", "2026-11-01T06:50:00", "2026-11-01T07:10:00", "2026-11-01T08:10:00"),
        "4": ("2026-11-01T06:35:00", "2026-11-01T06:35:00", None, None),
        "5": ("2026-11-01T05:50:00", "2026-11-01T07:20:00", "2026-11-01T07:30:00", "2026-11-01T08:00:00"),
    }
    assert _times(r) == {j: tuple(_utc(t) for t in ts) for j, ts in expected.items()}
    # queue_wait_s as core.jobs computes it: start - COALESCE(eligible, submit).
    waits = r.records.select(
        "job_id", (pl.col("start_ts") - pl.coalesce("eligible_ts", "submit_ts")).dt.total_seconds().alias("w"))
    assert dict(waits.iter_rows()) == {"1": 300, "2": 300, "3": 1200, "4": None, "5": 600}


def test_ambiguous_submit_without_elapsed_or_eligible() -> None:
    # No Elapsed, no Eligible: Start 02:10 is CST only (08:10Z); Submit 01:35 CST = 07:35Z is not after it.
    r = parse_sacct_text("JobID|State|Submit|Start\n1|RUNNING|2026-11-01T01:35:00|2026-11-01T02:10:00\n",
                         "n.psv", timezone=TZ)
    assert r.records.select("submit_ts", "eligible_ts", "start_ts").row(0) == (
        _utc("2026-11-01T07:35:00"), None, _utc("2026-11-01T08:10:00"))
    # No Start column at all: nothing bounds Submit, the earliest (06:35Z).
    r = parse_sacct_text("JobID|State|Submit\n1|PENDING|2026-11-01T01:35:00\n", "n.psv", timezone=TZ)
    assert r.records["submit_ts"].to_list() == [_utc("2026-11-01T06:35:00")]


# ------------------------------------------------------- 3. open sacctmgr events in the repeated hour

EVENT_HEADER = "NodeName|TimeStart|TimeEnd|Duration|State|Reason\n"
# Cluster event: 2026-10-01 00:00 CDT = 05:00Z, + 32 d 01:05 = 2026-11-02 06:05:00Z: the dump's cut.
CLUSTER_OPEN = "|2026-10-01T00:00:00|Unknown|32-01:05:00||Cluster Registered TRES\n"


def _events(text: str) -> dict[str, tuple[datetime | None, ...]]:
    r = parse_slurm_events_text(text, "slurm_events/events_2026-11-01.txt", timezone=TZ)
    assert r.records.schema == pl.Schema(SLURM_EVENT_SCHEMA)
    assert r.rejects.is_empty(), r.rejects
    return {row["node_name"] or "cluster": (row["start_ts"], row["end_ts"], row["observed_ts"])
            for row in r.records.iter_rows(named=True)}


def test_open_event_in_the_repeated_hour_is_placed_by_the_dump_cut() -> None:
    got = _events(
        EVENT_HEADER
        # 01:25 CDT = 06:25Z + 22:40 = 2026-11-02 05:05Z (1 h before the cut);
        # 01:25 CST = 07:25Z + 22:40 = 2026-11-02 06:05Z = the cut: CST.
        + "gpu009|2026-11-01T01:25:00|Unknown|22:40:00|DRAIN|NHC: GPU 3 fell off the bus\n"
        # 01:50 CDT = 06:50Z + 23:15 = 2026-11-02 06:05Z = the cut: CDT (CST would give 07:05Z).
        + "gpu010|2026-11-01T01:50:00|Unknown|23:15:00|DRAIN|Kill task failed\n"
        # Unambiguous open node event, printed 2 s later: 2026-10-30 10:00 CDT = 15:00Z + 2-15:05:02
        # = 2026-11-02 06:05:02Z. The cut is the median of 06:05:00 and 06:05:02 = 06:05:01Z.
        + "gpu001|2026-10-30T10:00:00|Unknown|2-15:05:02|DOWN*|Not responding\n"
        # Closed ambiguous event, the existing Duration rule: 01:30 -> 01:10 with 00:40:00: CDT start 06:30Z,
        # CST end 07:10Z.
        + "gpu002|2026-11-01T01:30:00|2026-11-01T01:10:00|00:40:00|DRAIN|bad ECC\n"
        + CLUSTER_OPEN
    )
    assert got == {
        "gpu009": (_utc("2026-11-01T07:25:00"), None, _utc("2026-11-02T06:05:00")),
        "gpu010": (_utc("2026-11-01T06:50:00"), None, _utc("2026-11-02T06:05:00")),
        "gpu001": (_utc("2026-10-30T15:00:00"), None, _utc("2026-11-02T06:05:02")),
        "gpu002": (_utc("2026-11-01T06:30:00"), _utc("2026-11-01T07:10:00"), None),
        "cluster": (_utc("2026-10-01T05:00:00"), None, _utc("2026-11-02T06:05:00")),
    }


def test_the_evaluators_dump_two_lines() -> None:
    got = _events(EVENT_HEADER + "gpu009|2026-11-01T01:25:00|Unknown|22:40:00|DRAIN|NHC: ...\n" + CLUSTER_OPEN)
    assert got["gpu009"] == (_utc("2026-11-01T07:25:00"), None, _utc("2026-11-02T06:05:00"))


def test_without_an_unambiguous_open_event_the_files_times_bound_the_cut() -> None:
    got = _events(
        EVENT_HEADER
        # Readings: 01:25 CDT = 06:25Z + 50 min = 07:15Z, or 01:25 CST = 07:25Z + 50 min = 08:15Z.
        + "gpu009|2026-11-01T01:25:00|Unknown|00:50:00|DRAIN|NHC: ...\n"
        # Closed: 00:10 CDT = 05:10Z -> 02:05 CST = 08:05Z (2:55:00). The dump was cut after 08:05Z, so
        # 07:15Z is impossible: CST, 07:25Z, cut 08:15Z.
        + "gpu003|2026-11-01T00:10:00|2026-11-01T02:05:00|02:55:00|DOWN|reboot\n"
    )
    assert got["gpu009"] == (_utc("2026-11-01T07:25:00"), None, _utc("2026-11-01T08:15:00"))
    assert got["gpu003"] == (_utc("2026-11-01T05:10:00"), _utc("2026-11-01T08:05:00"), None)


def test_without_any_evidence_an_open_event_keeps_the_earliest_reading() -> None:
    # Alone in its dump, both readings are possible (cut 07:15Z or 08:15Z): the earliest, 01:25 CDT = 06:25Z.
    got = _events(EVENT_HEADER + "gpu009|2026-11-01T01:25:00|Unknown|00:50:00|DRAIN|NHC: ...\n")
    assert got["gpu009"] == (_utc("2026-11-01T06:25:00"), None, _utc("2026-11-01T07:15:00"))
    # A closed event ending before the earliest cut (00:40 CDT = 05:40Z < 07:15Z) says nothing either.
    got = _events(EVENT_HEADER + "gpu009|2026-11-01T01:25:00|Unknown|00:50:00|DRAIN|NHC: ...\n"
                  + "gpu003|2026-11-01T00:10:00|2026-11-01T00:40:00|00:30:00|DOWN|reboot\n")
    assert got["gpu009"] == (_utc("2026-11-01T06:25:00"), None, _utc("2026-11-01T07:15:00"))


def test_sacctmgr_events_with_utc_offsets_are_exact() -> None:
    """sacctmgr follows SLURM_TIME_FORMAT="%FT%T%z" too: the offset says which pass of the repeated hour.
    gpu009 drained 01:25 CST (-0600) = 07:25Z, back 03:10 CST = 09:10Z (1 h 45 min = Duration 01:45:00);
    gpu014 open since 01:40 CDT (-05:00) = 06:40Z; a Z stamp stays as it is; a bad offset is rejected."""
    from gpusre.models.sources.slurm_events.parse import parse_slurm_events_text

    text = ("NodeName|TimeStart|TimeEnd|Duration|State|Reason\n"
            "gpu009|2026-11-01T01:25:00-0600|2026-11-01T03:10:00-0600|01:45:00|DRAIN|NHC: GPU lost\n"
            "gpu014|2026-11-01T01:40:00-05:00|Unknown|1-00:00:00|DOWN|Not responding\n"
            "gpu015|2026-11-01T07:00:00Z|2026-11-01T08:00:00Z|01:00:00|DRAIN|maint\n"
            "gpu016|2026-11-01T01:40:00-2500|Unknown|1-00:00:00|DOWN|bad offset\n")
    out = parse_slurm_events_text(text, "slurm_events/events_2026-11-02.txt", timezone="America/Chicago")
    got = {r["node_name"]: (r["start_ts"], r["end_ts"]) for r in out.records.iter_rows(named=True)}
    utc = timezone.utc
    assert got == {
        "gpu009": (datetime(2026, 11, 1, 7, 25, tzinfo=utc), datetime(2026, 11, 1, 9, 10, tzinfo=utc)),
        "gpu014": (datetime(2026, 11, 1, 6, 40, tzinfo=utc), None),
        "gpu015": (datetime(2026, 11, 1, 7, 0, tzinfo=utc), datetime(2026, 11, 1, 8, 0, tzinfo=utc)),
    }
    assert out.rejects["error"].to_list() == ["malformed TimeStart timestamp '2026-11-01T01:40:00-2500'"]
