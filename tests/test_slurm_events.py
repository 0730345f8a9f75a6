"""Slurm node-state history: parsing sacctmgr/sinfo output, ingestion with supersession and rejects,
the core rebuild, and a real Dagster materialization of every node-state asset.

The fixtures in tests/fixtures/slurm_events are hand-written from the documented output format of
``sacctmgr show event`` / ``sinfo -R`` (see their header comments), not captured from a cluster.
"""

from __future__ import annotations

import doctest
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from gpusre.models.sources.slurm_events import parse as slurm_events
from gpusre.models.sources.slurm_events.ingest import build_node_states, history_start, ingest_slurm_event_files
from gpusre.models.sources.slurm_events.parse import (
    SLURM_EVENT_SCHEMA,
    SlurmEventsFormatError,
    decode_state_raw,
    normalize_node_state,
    parse_sinfo_reasons_text,
    parse_slurm_events_file,
    parse_slurm_events_text,
)
from gpusre.models.warehouse import connect, transaction
from gpusre.pipelines.resources import default_resources

FIXTURES = Path(__file__).parent / "fixtures" / "slurm_events"
UTC = timezone.utc
TZ = "America/Chicago"


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_doctests() -> None:
    assert doctest.testmod(slurm_events).failed == 0


# ----------------------------------------------------------------------------------- parsing


def _night1() -> slurm_events.SlurmEventsParseResult:
    return parse_slurm_events_file(FIXTURES / "events_2026-11-01.txt", "slurm_events/events_2026-11-01.txt",
                                   timezone=TZ, cluster="fallback")


def test_node_and_cluster_events_ongoing_and_reasons_with_spaces() -> None:
    r = _night1()
    assert r.records.schema == pl.Schema(SLURM_EVENT_SCHEMA)
    by_node = {row["node_name"]: row for row in r.records.iter_rows(named=True) if row["event_type"] == "node"}
    gpu001 = by_node["gpu001"]
    # 2026-10-31T22:00 CDT (UTC-5), still ongoing: no end; Duration 1-03:30:00 dates the dump.
    assert gpu001["start_ts"] == _utc(2026, 11, 1, 3) and gpu001["end_ts"] is None
    assert gpu001["observed_ts"] == _utc(2026, 11, 2, 6, 30)
    assert gpu001["reason"] == "NHC: check_gpu_xid: Xid 79 on GPU 3"
    assert (gpu001["state"], gpu001["user_name"], gpu001["uid"], gpu001["cluster"]) == ("DRAIN", "root", 0, "h100")
    gpu002 = by_node["gpu002"]
    assert (gpu002["state"], gpu002["state_text"], gpu002["not_responding"]) == ("DOWN", "DOWN*", True)
    assert (gpu002["user_name"], gpu002["uid"]) == ("slurm", 64030)
    assert by_node["gpu004"]["state"] == "DRAIN"  # DRNG: draining
    [cluster] = r.records.filter(pl.col("event_type") == "cluster").iter_rows(named=True)
    assert cluster["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert cluster["node_name"] is None and cluster["state"] is None
    assert cluster["reason"] == "Cluster Registered TRES" and cluster["end_ts"] is None


def test_stamps_with_a_space_for_the_t_parse_like_the_t() -> None:
    # SLURM_TIME_FORMAT="%F %T" at the site: sacctmgr prints "2026-10-31 22:00:00".
    import re

    text = (FIXTURES / "events_2026-11-01.txt").read_text()
    spaced = re.sub(r"(\d{4}-\d{2}-\d{2})T(\d{2}:)", r"\1 \2", text)
    assert spaced != text
    t, s = (parse_slurm_events_text(x, "e.txt", timezone=TZ, cluster="fallback") for x in (text, spaced))
    assert s.rejects["line_no"].to_list() == t.rejects["line_no"].to_list()  # the fixture's own bad rows
    assert s.records.drop("raw_line").equals(t.records.drop("raw_line"))


def test_dst_ambiguous_local_times_are_resolved() -> None:
    by_node = {row["node_name"]: row for row in _night1().records.iter_rows(named=True)}
    # gpu002: 01:30 -> 01:10 on the fall-back night: the end is the second 01:10 (CST), 40 minutes later.
    assert (by_node["gpu002"]["start_ts"], by_node["gpu002"]["end_ts"]) == (_utc(2026, 11, 1, 6, 30), _utc(2026, 11, 1, 7, 10))
    # gpu004: 01:20 -> 03:00 CST with Duration 01:40:00 -> the start is the second 01:20 (CST).
    assert (by_node["gpu004"]["start_ts"], by_node["gpu004"]["end_ts"]) == (_utc(2026, 11, 1, 7, 20), _utc(2026, 11, 1, 9))


def test_bad_rows_are_rejected_with_line_and_reason_and_the_rest_loads() -> None:
    r = _night1()
    rejects = r.rejects.select("source_file", "line_no", "error").rows()
    assert [(f, n) for f, n, _ in rejects] == [("slurm_events/events_2026-11-01.txt", n) for n in (13, 14, 15)]
    errors = [e for _, _, e in rejects]
    assert "does not exist in America/Chicago (DST gap)" in errors[0]
    assert errors[1] == "unknown node state 'EXPLODED'"
    assert errors[2] == "expected 10 fields, got 4"
    assert r.records.height == 5 and r.rows_read == 8


def test_any_field_order_and_subset_gives_the_same_event() -> None:
    a = parse_slurm_events_text(
        "NodeName|TimeStart|TimeEnd|State|Reason|User\n"
        "gpu7|2026-01-05T10:00:00|2026-01-05T12:30:00|DRAIN|gpu ecc errors|root(0)\n", "a.txt", timezone=TZ)
    b = parse_slurm_events_text(
        "User|Reason|State|End|Start|NodeName|Cluster\n"
        "root(0)|gpu ecc errors|DRAIN|2026-01-05T12:30:00|2026-01-05T10:00:00|gpu7|c1\n", "b.txt", timezone=TZ)
    cols = ["node_name", "start_ts", "end_ts", "state", "reason", "user_name", "uid"]
    assert a.records.select(cols).rows() == b.records.select(cols).rows()
    assert a.records.item(0, "start_ts") == _utc(2026, 1, 5, 16)  # CST = UTC-6
    assert (a.records.item(0, "cluster"), b.records.item(0, "cluster")) == (None, "c1")


def test_parsable_trailing_delimiter_and_reason_containing_the_delimiter() -> None:
    r = parse_slurm_events_text(
        "NodeName|TimeStart|TimeEnd|Reason|State|\n"
        "n01|2026-01-05T10:00:00|Unknown|swap DIMM | then reboot|DOWN|\n", "p.txt")
    assert r.rejects.height == 0
    assert r.records.select("reason", "state", "end_ts").row(0) == ("swap DIMM | then reboot", "DOWN", None)


def test_headerless_or_fixed_width_files_are_refused_and_an_empty_one_loads_nothing() -> None:
    with pytest.raises(SlurmEventsFormatError, match="fixed-width"):
        parse_slurm_events_text("   Cluster        NodeName           TimeStart             TimeEnd\n", "f.txt")
    with pytest.raises(SlurmEventsFormatError, match="TimeStart"):
        parse_slurm_events_text("h100|gpu001|2026-01-01T00:00:00|Unknown|DOWN|x|root(0)\n", "h.txt")
    # An empty dump (comments and blank lines only) is no format error: it loads with no rows, as an
    # empty file of every source does.
    empty = parse_slurm_events_text("# nothing\n\n", "e.txt")
    assert (empty.records.height, empty.rejects.height, empty.rows_read) == (0, 0, 0)


def test_unknown_start_bad_hostlist_and_end_before_start_are_rejected() -> None:
    r = parse_slurm_events_text(
        "NodeName|TimeStart|TimeEnd|State\n"
        "n1|Unknown|Unknown|DOWN\n"
        "n[1-|2026-01-01T00:00:00|Unknown|DOWN\n"
        "n3|2026-01-02T00:00:00|2026-01-01T00:00:00|DOWN\n"
        "n4|2026-01-02T00:00:00|2026-01-02T01:00:00|DOWN\n", "x.txt")
    errors = dict(r.rejects.select("line_no", "error").rows())
    assert "cannot be placed in time" in errors[2]
    assert "malformed NodeName" in errors[3]
    assert "before TimeStart" in errors[4]
    assert r.records.get_column("node_name").to_list() == ["n4"]


@pytest.mark.parametrize(("text", "expected"), [
    ("DOWN", ("DOWN", False)), ("DOWN*", ("DOWN", True)), ("DRAIN", ("DRAIN", False)),
    ("DRNG*", ("DRAIN", True)), ("DRAIN+DOWN", ("DOWN", False)), ("IDLE+DRAIN", ("DRAIN", False)),
    ("FAIL", ("FAIL", False)), ("FAILG", ("FAIL", False)), ("MAINT", ("MAINT", False)), ("BOOT", ("REBOOT", False)),
    ("REBOOT", ("REBOOT", False)), ("drained*", ("DRAIN", True)), ("down~", ("DOWN", False)),
    ("IDLE*", ("IDLE", True)), ("ALLOC+", ("ALLOCATED", False)), ("", (None, False)),
])
def test_node_states_are_normalized(text: str, expected: tuple[str | None, bool]) -> None:
    assert normalize_node_state(text) == expected


def test_unknown_or_truncated_states_raise() -> None:
    for text in ("EXPLODED", "DRAIN+DO", "UP"):
        with pytest.raises(ValueError, match="unknown node state"):
            normalize_node_state(text)
    assert decode_state_raw(1) == ("DOWN", False)
    assert decode_state_raw(2 | (1 << 9)) == ("DRAIN", False)


def test_state_raw_is_used_when_state_is_absent() -> None:
    r = parse_slurm_events_text("NodeName|TimeStart|TimeEnd|StateRaw\nn1|2026-01-01T00:00:00|Unknown|514\n", "r.txt")
    assert r.records.select("state", "state_raw").row(0) == ("DRAIN", 514)


def test_sinfo_snapshot_lines_are_open_events_observed_at_the_snapshot() -> None:
    seen = _utc(2026, 11, 2, 12)
    r = parse_sinfo_reasons_text((FIXTURES / "sinfo-2026-11-02.txt").read_text(), "slurm_events/sinfo-2026-11-02.txt",
                                 observed_ts=seen, timezone=TZ)
    assert r.source_format == "sinfo" and r.rejects.height == 0
    rows = r.records.select("node_name", "state", "start_ts", "end_ts", "user_name", "observed_ts", "source_format").rows()
    assert rows == [
        ("gpu003", "DRAIN", _utc(2026, 11, 1, 15), None, "root", seen, "sinfo"),
        ("gpu004", "DRAIN", _utc(2026, 11, 2, 5), None, "slurm", seen, "sinfo"),
    ]


# --------------------------------------------------------------------- ingestion and core.*


def _landing(tmp_path: Path, files: tuple[str, ...] = ("events_2026-11-01.txt", "events_2026-11-02.txt",
                                                        "sinfo-2026-11-02.txt", "sinfo-2026-11-03.txt")) -> Path:
    root = tmp_path / "landing"
    (root / "slurm_events").mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copy(FIXTURES / name, root / "slurm_events" / name)
    mtimes = {"sinfo-2026-11-02.txt": _utc(2026, 11, 2, 12), "sinfo-2026-11-03.txt": _utc(2026, 11, 3, 6)}
    for name, when in mtimes.items():
        if (root / "slurm_events" / name).exists():
            os.utime(root / "slurm_events" / name, (when.timestamp(), when.timestamp()))
    return root


def _ingest_and_build(landing: Path, wh: Path) -> None:
    con = connect(wh)
    try:
        ingest_slurm_event_files(con, landing, timezone=TZ, cluster="h100")
        with transaction(con):
            build_node_states(con)
    finally:
        con.close()


def _states(wh: Path) -> list[tuple]:
    con = connect(wh, read_only=True)
    try:
        return con.sql("SELECT node, state, start_ts, end_ts, end_source, reason, source_file FROM core.node_states "
                       "ORDER BY node, start_ts").fetchall()
    finally:
        con.close()


def test_overlapping_dumps_supersede_each_other(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    _ingest_and_build(_landing(tmp_path, ("events_2026-11-01.txt",)), wh)
    night1 = {(r[0], r[2]): r for r in _states(wh)}
    assert night1[("gpu001", _utc(2026, 11, 1, 3))][3] is None  # ongoing after night 1
    shutil.copy(FIXTURES / "events_2026-11-02.txt", tmp_path / "landing" / "slurm_events")
    _ingest_and_build(tmp_path / "landing", wh)
    night2 = {(r[0], r[2]): r for r in _states(wh)}
    # The same drain in both dumps is one event, with the end the later dump filled in.
    gpu001 = night2[("gpu001", _utc(2026, 11, 1, 3))]
    assert gpu001[3] == _utc(2026, 11, 2, 16) and gpu001[4] == "slurm"
    assert gpu001[6] == "slurm_events/events_2026-11-02.txt"
    assert len(night2) == len(night1) + 1  # + the IB link event only night 2 saw
    assert night2[("gpu003", _utc(2026, 11, 1, 15))][3] is None  # still ongoing in both
    con = connect(wh, read_only=True)
    raw = con.sql("SELECT count(*) FROM raw.slurm_events WHERE node_name = 'gpu001'").fetchall()[0][0]
    con.close()
    assert raw == 3  # raw keeps every version


def test_sinfo_events_end_when_a_later_snapshot_no_longer_lists_them(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    _ingest_and_build(_landing(tmp_path), wh)
    by_key = {(r[0], r[2]): r for r in _states(wh)}
    gpu004 = by_key[("gpu004", _utc(2026, 11, 2, 5))]
    assert (gpu004[3], gpu004[4]) == (_utc(2026, 11, 3, 6), "sinfo_absent")
    # gpu003 is in both sinfo and sacctmgr: one event, the sacctmgr version.
    assert by_key[("gpu003", _utc(2026, 11, 1, 15))][6] == "slurm_events/events_2026-11-02.txt"


def test_an_empty_sinfo_snapshot_also_ends_open_sinfo_events(tmp_path: Path) -> None:
    landing = _landing(tmp_path, ("sinfo-2026-11-02.txt",))
    empty = landing / "slurm_events" / "sinfo-2026-11-04.txt"
    empty.write_text("")  # nothing drained or down any more
    os.utime(empty, (_utc(2026, 11, 4).timestamp(), _utc(2026, 11, 4).timestamp()))
    wh = tmp_path / "w.duckdb"
    _ingest_and_build(landing, wh)
    assert [(r[0], r[3], r[4]) for r in _states(wh)] == [
        ("gpu003", _utc(2026, 11, 4), "sinfo_absent"), ("gpu004", _utc(2026, 11, 4), "sinfo_absent")]


def test_rerun_is_idempotent_and_a_changed_file_replaces_its_rows(tmp_path: Path) -> None:
    wh = tmp_path / "w.duckdb"
    landing = _landing(tmp_path)
    tables = ("raw.slurm_events", "raw.slurm_event_snapshots", "core.node_states", "core.cluster_events",
              "core.node_state_reasons")

    def snapshot() -> dict[str, list[tuple]]:
        con = connect(wh, read_only=True)
        try:
            out = {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
            out["rejects"] = con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY ALL").fetchall()
            out["files"] = con.sql("SELECT * FROM raw.ingested_files ORDER BY ALL").fetchall()
            out["miner"] = con.sql("SELECT miner, state FROM raw.template_miners ORDER BY ALL").fetchall()
            return out
        finally:
            con.close()

    _ingest_and_build(landing, wh)
    before = snapshot()
    _ingest_and_build(landing, wh)
    assert snapshot() == before
    # The operator re-cuts night 1 without its broken lines: its rejects go, its good rows stay.
    night1 = landing / "slurm_events" / "events_2026-11-01.txt"
    night1.write_text("\n".join(night1.read_text().splitlines()[:12]) + "\n")
    _ingest_and_build(landing, wh)
    after = snapshot()
    assert [r for r in after["rejects"] if "11-01" in r[0]] == []
    assert after["core.node_states"] == before["core.node_states"]


# ---------------------------------------------------------------------------------- Dagster


def test_dagster_materializes_the_node_state_assets(tmp_path: Path) -> None:
    from gpusre.assets.ingest_node_states import (
        core_node_states,
        node_states_unique,
        raw_slurm_events,
        slurm_events_rows_reconcile,
    )
    from gpusre.assets.node_states import node_state_marts

    landing = _landing(tmp_path)
    (landing / "cluster.yaml").write_text(
        "cluster: h100\ntimezone: America/Chicago\nnodes: 'gpu[001-005]'\n"
        "maintenance:\n  - {start: '2026-11-02T00:00:00Z', end: '2026-11-02T02:00:00Z', nodes: 'gpu003'}\n")
    wh = tmp_path / "w.duckdb"

    def run() -> dg.ExecuteInProcessResult:
        return dg.materialize(
            [raw_slurm_events, core_node_states, node_state_marts, slurm_events_rows_reconcile, node_states_unique],
            resources=default_resources(str(wh), str(landing), str(tmp_path / "reports")))

    result = run()
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert len(checks) == 2 and all(c.passed for c in checks)

    def marts() -> dict[str, list[tuple]]:
        con = connect(wh, read_only=True)
        try:
            return {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                    for t in ("marts.node_availability_daily", "marts.drain_reasons", "core.node_states")}
        finally:
            con.close()

    first = marts()
    con = connect(wh, read_only=True)
    daily = con.sql("SELECT * FROM marts.node_availability_daily").pl()
    reasons = con.sql("SELECT * FROM marts.drain_reasons ORDER BY rank").pl()
    files = con.sql("SELECT rows_read, rows_loaded, rows_rejected FROM raw.ingested_files").fetchall()
    con.close()
    assert all(read == loaded + rejected for read, loaded, rejected in files)
    # Every configured node has a row per day (gpu005 never had an event: assumed in service).
    assert set(daily["node"]) == {f"gpu00{i}" for i in range(1, 6)}
    gpu005 = daily.filter(pl.col("node") == "gpu005")
    assert gpu005["source"].unique().to_list() == ["assumed_in_service"] and gpu005["down_hours"].sum() == 0
    # Down hours reconcile between the two marts and with the buckets.
    assert daily["down_hours"].sum() == pytest.approx(reasons["node_hours_lost"].sum())
    buckets = daily.select(pl.sum_horizontal("down_hardware_hours", "down_maintenance_hours",
                                             "down_health_check_hours", "down_other_hours")).to_series()
    assert (buckets - daily["down_hours"]).abs().max() < 1e-9
    assert ((daily["in_service_hours"] + daily["down_hours"]) - daily["observed_hours"]).abs().max() < 1e-9
    # gpu001 on Nov 2 (UTC): Xid drain until 16:00, IB down 14:00-18:00 overlaps -> 18 h down, not 20;
    # 16 h are the Xid drain's, 2 h (16:00-18:00) the IB link's; both hardware.
    g1 = daily.filter((pl.col("node") == "gpu001") & (pl.col("day") == datetime(2026, 11, 2).date())).row(0, named=True)
    assert g1["down_hours"] == pytest.approx(18.0) and g1["down_hardware_hours"] == pytest.approx(18.0)
    # gpu003's planned-maintenance drain is maintenance (also inside the cluster.yaml window).
    g3 = daily.filter(pl.col("node") == "gpu003")
    assert g3["down_hours"].sum() > 0
    assert g3["down_maintenance_hours"].sum() == pytest.approx(g3["down_hours"].sum())
    # Top reason by node-hours: gpu003's planned maintenance (15:00 Nov 1 -> as_of 06:30 Nov 3 = 39.5 h).
    top = reasons.row(0, named=True)
    assert (top["reason_class"], top["node_hours_lost"], top["ongoing_events"]) == ("planned_maintenance", 39.5, 1)
    # A second run changes nothing.
    assert run().success
    assert marts() == first


@pytest.mark.parametrize(("name", "observed"), [
    ("sinfo-2026-11-10T12.txt", _utc(2026, 11, 10, 18)),             # 12:00 in the cluster's zone (CST)
    ("sinfo-2026-11-10_1205.txt", _utc(2026, 11, 10, 18, 5)),
    ("sinfo_2026-11-10T12:05:30.txt", _utc(2026, 11, 10, 18, 5, 30)),
    ("sinfo-2026-11-10.txt", _utc(2026, 11, 11, 6)),                # a date alone: the mtime
    ("sinfo-latest.txt", _utc(2026, 11, 11, 6)),
])
def test_a_snapshot_is_observed_at_the_time_its_name_gives_else_its_mtime(tmp_path: Path, name: str,
                                                                         observed: datetime) -> None:
    # A landing copied without -p: every mtime is the copy's (here 11-11 06:00 UTC).
    path = tmp_path / name
    path.write_text("gpu003|Xid 79|root|2026-11-10T09:00:00|DRAIN\n")
    os.utime(path, (_utc(2026, 11, 11, 6).timestamp(), _utc(2026, 11, 11, 6).timestamp()))
    parsed = parse_slurm_events_file(path, f"slurm_events/{name}", timezone=TZ)
    assert parsed.records["observed_ts"].to_list() == [observed]


def test_sinfo_default_output_is_refused_and_a_snapshot_with_unreadable_lines_ends_nothing(tmp_path: Path) -> None:
    """`sinfo -R` without -o (padded columns) is refused with the command to use; a snapshot whose
    line was rejected cannot say that a node is no longer drained: gpu003 and gpu004 stay open
    (in the empty-snapshot test above, a readable empty snapshot ends both)."""
    landing = _landing(tmp_path, ("sinfo-2026-11-02.txt",))
    default = landing / "slurm_events" / "sinfo-2026-11-03T12.txt"
    default.write_text("REASON               USER      TIMESTAMP           NODELIST\n"
                       "Xid 79               root      2026-11-02T05:00:00 gpu004\n")
    bad = landing / "slurm_events" / "sinfo-2026-11-04.txt"
    bad.write_text("gpu003|IB link down|root|not a time|drained\n")
    os.utime(bad, (_utc(2026, 11, 4).timestamp(), _utc(2026, 11, 4).timestamp()))
    wh = tmp_path / "w.duckdb"
    _ingest_and_build(landing, wh)
    assert [(r[0], r[3]) for r in _states(wh)] == [("gpu003", None), ("gpu004", None)]
    con = connect(wh, read_only=True)
    try:
        rejects = dict(con.sql("SELECT source_file, error FROM raw.rejects WHERE line_no = 0").fetchall())
        snapshots = con.sql("SELECT source_file FROM raw.slurm_event_snapshots ORDER BY 1").fetchall()
    finally:
        con.close()
    assert rejects["slurm_events/sinfo-2026-11-03T12.txt"].endswith(
        "fixed-width sinfo output; re-run 'sinfo -R -h -o \"%n|%E|%u|%H|%T\"'")
    assert snapshots == [("slurm_events/sinfo-2026-11-02.txt",)]


@pytest.mark.parametrize(("name", "tz", "want"), [
    ("slurm_events/events_2026-09-01.txt", "UTC", _utc(2026, 9, 1)),
    ("events_20260901.psv.gz", "UTC", _utc(2026, 9, 1)),
    ("events_2026-09-01.txt", TZ, _utc(2026, 9, 1, 5)),   # CDT midnight = 05:00 UTC
    ("events_2026-01-15.txt", TZ, _utc(2026, 1, 15, 6)),  # CST midnight = 06:00 UTC
    ("events_2026-13-40_2026-09-02.txt", "UTC", _utc(2026, 9, 2)),  # not a date: the next one
    ("events.txt", "UTC", None),
    ("job_123456789.txt", "UTC", None),
    ("sinfo-2026-11-10T12.txt", "UTC", None),  # a snapshot: observed at one moment, not a day
])
def test_a_dump_names_the_day_its_history_starts(name: str, tz: str, want: datetime | None) -> None:
    assert slurm_events.dump_day_start(name, tz) == want


def test_history_starts_at_the_first_loaded_dump_even_an_empty_one(tmp_path: Path) -> None:
    """A header-only dump named 10-30 (a night without node events) starts the history at 10-30 00:00
    local (05:00 UTC), before fixture dump 11-01's first event; an undated dump contributes its cut
    (start + Duration of an open event); a refused one contributes nothing."""
    landing = _landing(tmp_path, ("events_2026-11-01.txt",))
    folder = landing / "slurm_events"
    (folder / "events_2026-10-30.txt").write_text("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User\n")
    (folder / "events_2026-10-01.txt").write_text("not a dump\n")  # refused: no observation
    wh = tmp_path / "w.duckdb"
    _ingest_and_build(landing, wh)
    con = connect(wh, read_only=True)
    try:
        status = dict(con.sql("SELECT source_file, status FROM raw.ingested_files").fetchall())
        assert status["slurm_events/events_2026-10-30.txt"] == "loaded"
        assert status["slurm_events/events_2026-10-01.txt"] == "refused"
        assert history_start(con, TZ) == _utc(2026, 10, 30, 5)
    finally:
        con.close()
    # Without any dated dump: the earliest cut the dumps give (an open event's start + Duration).
    undated = tmp_path / "undated"
    (undated / "slurm_events").mkdir(parents=True)
    (undated / "slurm_events" / "events.txt").write_text(
        "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User\n"
        "h100|gpu001|2026-10-20T10:00:00|Unknown|02:00:00|DRAIN|Xid 79|root(0)\n")
    wh2 = tmp_path / "w2.duckdb"
    _ingest_and_build(undated, wh2)
    con = connect(wh2, read_only=True)
    try:
        assert history_start(con, TZ) == _utc(2026, 10, 20, 17)  # 10:00 + 2 h CDT
    finally:
        con.close()
