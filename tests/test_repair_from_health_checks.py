"""Time to repair from health checks, and detect/repair measured from the first evidence.

A failing check's last failure is the last moment the part was known broken: the repair is the first
evidence of health after it (a passing run, a reboot, else the check's next run), never the last failure.
Hand-made event sets; every expected time below is computed by hand in the comments.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from gpusre.models.reliability.repair_times import (
    DEFAULT_CHECK_INTERVAL,
    HEALTH_CHECK_END_SCHEMA,
    first_evidence,
    health_check_ends,
    link_incidents,
    repair_times,
)
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")


def _t(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def _frame(rows: list[tuple], cols: tuple[str, ...]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=list(cols), orient="row").with_columns(pl.col("ts").cast(DT))


#: Incident events (incident_id, node, ts, kind). health_check = a failing NHC run.
EVIDENCE = _frame([
    # lost: Xid 79 on n1 at 03:12:05, NHC "GPU is lost" at 03:15:01 and 03:20:01; the node reboots and its
    # GPU driver loads at 03:31:40; NHC passes at 03:35:01.
    ("lost", "n1", _t(10, 3, 12, 5), "xid"),
    ("lost", "n1", _t(10, 3, 15, 1), "health_check"),
    ("lost", "n1", _t(10, 3, 20, 1), "health_check"),
    # count: "7 GPUs, expected 8" every 5 min 15:00:01 .. 15:25:01 (6 runs), nothing logged after.
    *[("count", "n2", _t(11, 15, 5 * i, 1), "health_check") for i in range(6)],
    # single: Xid 48 at 08:20:00, one failing NHC run at 08:25:01 ("reset required").
    ("single", "n3", _t(10, 8, 20), "xid"),
    ("single", "n3", _t(10, 8, 25, 1), "health_check"),
    # dup: slurmd and nhc both log each failing run (05:00:00/05:00:02, 05:05:00/05:05:01, 05:10:00).
    ("dup", "n4", _t(10, 5, 0, 0), "health_check"), ("dup", "n4", _t(10, 5, 0, 2), "health_check"),
    ("dup", "n4", _t(10, 5, 5, 0), "health_check"), ("dup", "n4", _t(10, 5, 5, 1), "health_check"),
    ("dup", "n4", _t(10, 5, 10, 0), "health_check"),
    # after: runs at 10:00, 10:10, 10:30 (10:20 not logged: gaps 10 and 20 min, cadence 10 min), then an
    # AER line at 10:35: the next run after it is 10:30 + 10 min = 10:40.
    ("after", "n5", _t(10, 10, 0), "health_check"), ("after", "n5", _t(10, 10, 10), "health_check"),
    ("after", "n5", _t(10, 10, 30), "health_check"), ("after", "n5", _t(10, 10, 35), "pcie_aer"),
    # late: failing 01:00, 01:05; the node's next boot is two days later: too late to be its repair.
    ("late", "n6", _t(10, 1, 0), "health_check"), ("late", "n6", _t(10, 1, 5), "health_check"),
    # early: a driver load at 02:00 between failures (01:55, 02:05, 02:10): the failures after it say the
    # reboot did not repair it; next run 02:15.
    ("early", "n7", _t(10, 1, 55), "health_check"), ("early", "n7", _t(10, 2, 5), "health_check"),
    ("early", "n7", _t(10, 2, 10), "health_check"),
    # two: storage check failing on n8 (04:00, 04:05) and n9 (04:00, 04:05, 04:10, 04:15): n8 passes
    # at 04:07; n9's next run is 04:20.
    ("two", "n8", _t(10, 4, 0), "health_check"), ("two", "n8", _t(10, 4, 5), "health_check"),
    *[("two", "n9", _t(10, 4, 5 * i), "health_check") for i in range(4)],
    # xid_only: no health check saw it: not a health-check repair.
    ("xid_only", "n10", _t(10, 6, 0), "xid"),
], ("incident_id", "node", "ts", "kind"))

#: Health lines on the nodes (node, ts, kind).
LINES = _frame([
    ("n1", _t(10, 3, 31, 40), "driver_loaded"),
    ("n1", _t(10, 3, 35, 1), "health_check_pass"),
    ("n6", _t(12, 1, 0), "driver_loaded"),
    ("n7", _t(10, 2, 0), "driver_loaded"),
    ("n8", _t(10, 4, 7), "health_check_pass"),
    ("n10", _t(10, 6, 30), "driver_loaded"),
], ("node", "ts", "kind"))

def _ends(kinds: pl.DataFrame | None = None) -> dict[str, tuple[datetime, str]]:
    """The repairs with the catalog's health lines (models/catalog/recovery_events.csv) unless ``kinds``."""
    out = health_check_ends(EVIDENCE, LINES, kinds)
    assert out.schema == pl.Schema(HEALTH_CHECK_END_SCHEMA)
    return {r[0]: (r[1], r[2]) for r in out.rows()}


def test_the_repair_is_the_first_evidence_of_health_after_the_last_failure() -> None:
    assert _ends() == {
        "lost": (_t(10, 3, 35, 1), "health_check_pass"),  # the passing run wins over the 03:31:40 reboot
        "count": (_t(11, 15, 30, 1), "health_checks"),     # 15:25:01 + 300 s
        "single": (_t(10, 8, 30, 1), "health_checks"),     # one run: 08:25:01 + the default 300 s
        "dup": (_t(10, 5, 15), "health_checks"),           # runs 05:00, 05:05, 05:10 (duplicates merged)
        "after": (_t(10, 10, 40), "health_checks"),        # first run after the 10:35 AER line
        "late": (_t(10, 1, 10), "health_checks"),          # a boot 2 days later is not its repair
        "early": (_t(10, 2, 15), "health_checks"),         # cadence: gaps 10, 5 min -> 5 min
        "two": (_t(10, 4, 20), "health_checks"),           # the last node (n9) sets time and source
    }
    assert DEFAULT_CHECK_INTERVAL == timedelta(seconds=300)


def test_the_catalog_reboot_line_repairs_a_lost_gpu_without_a_passing_run() -> None:
    # recovery_events.csv names the NVIDIA driver load as a reboot line: without the passing NHC run,
    # the lost GPU was repaired by the node's reboot.
    got = _ends(pl.DataFrame({"kind": ["driver_loaded"], "evidence": ["reboot"]}))
    assert got["lost"] == (_t(10, 3, 31, 40), "reboot")
    assert got["count"] == (_t(11, 15, 30, 1), "health_checks")


def test_health_check_repairs_in_the_incident_mart() -> None:
    incidents = pl.DataFrame({
        "incident_id": ["lost", "count", "single", "xid_only"],
        "component": ["pcie_bus", "gpu_compute", "gpu_memory", "gpu"],
        "start_ts": [_t(10, 3, 12, 5), _t(11, 15, 0, 1), _t(10, 8, 20), _t(10, 6)],
        "end_ts": [_t(10, 3, 20, 1), _t(11, 15, 25, 1), _t(10, 8, 25, 1), _t(10, 6)],
        "nodes": [["n1"], ["n2"], ["n3"], ["n10"]],
        "n_health_check_episodes": [1, 1, 1, 0],
    }, schema_overrides={"start_ts": DT, "end_ts": DT})
    states = pl.DataFrame(schema={"node": pl.String, "start_ts": DT, "end_ts": DT})
    rows = {r["incident_id"]: r for r in link_incidents(
        incidents, states, health_checks=health_check_ends(EVIDENCE, LINES)).iter_rows(named=True)}
    # lost: 03:12:05 -> 03:35:01 = 22 min 56 s; count: 15:00:01 -> 15:30:01 = 0.5 h;
    # single: 08:20:00 -> 08:30:01 = 10 min 1 s.
    assert rows["lost"]["repair_source"] == "health_check_pass"
    assert rows["lost"]["hours_to_repair"] == pytest.approx((22 * 60 + 56) / 3600)
    assert (rows["count"]["repaired_ts"], rows["count"]["hours_to_repair"]) == (_t(11, 15, 30, 1), 0.5)
    assert rows["single"]["hours_to_repair"] == pytest.approx((10 * 60 + 1) / 3600)
    assert rows["xid_only"]["repair_state"] == "not_drained"
    # GPU median of 0.1669, 0.3822, 0.5 h: 22.9 min — not the 8 min of the last failing lines.
    gpu = repair_times(pl.DataFrame(list(rows.values()))).filter(pl.col("component_class") == "gpu")
    assert gpu.item(0, "mttr_hours_p50") == pytest.approx((22 * 60 + 56) / 3600)
    # A drained node keeps node_states: its drain (03:14 -> 05:00) times the repair.
    drained = pl.DataFrame({"node": ["n1"], "start_ts": [_t(10, 3, 14)], "end_ts": [_t(10, 5)],
                            "reason": ["NHC: GPU lost"], "reason_class": ["gpu_xid"]},
                           schema_overrides={"start_ts": DT, "end_ts": DT})
    ends = health_check_ends(EVIDENCE, LINES)
    row = link_incidents(incidents.head(1), drained, health_checks=ends).row(0, named=True)
    assert (row["repair_source"], row["repaired_ts"]) == ("node_states", _t(10, 5))


def test_a_labelled_incident_is_measured_from_its_first_evidence() -> None:
    # OPS-1: the operator says the GPU failed at 03:05; the first log line is the Xid 79 at 03:10; the node
    # is drained 03:15 and back 2026-11-04 09:00. Detect 03:10 -> 03:15 = 5 min; repair 03:10 -> 09:00 the
    # next day = 29 h 50 min. The incident keeps the operator's start.
    members = _frame([("ops", _t(3, 3, 10), "xid"), ("ops", _t(3, 3, 15), "health_check"),
                      ("ops", _t(3, 3, 20), "health_check")], ("incident_id", "ts", "kind"))
    # first and last log line: the span of its log evidence
    assert first_evidence(members).rows() == [("ops", _t(3, 3, 10), _t(3, 3, 20))]
    incidents = pl.DataFrame({"incident_id": ["ops"], "component": ["gpu"], "start_ts": [_t(3, 3, 5)],
                              "end_ts": [_t(4, 9)], "nodes": [["gpu006"]]},
                             schema_overrides={"start_ts": DT, "end_ts": DT})
    states = pl.DataFrame({"node": ["gpu006"], "start_ts": [_t(3, 3, 15)], "end_ts": [_t(4, 9)],
                           "reason": ["GPU 3 fell off the bus"], "reason_class": ["gpu_xid"]},
                          schema_overrides={"start_ts": DT, "end_ts": DT})
    row = link_incidents(incidents.join(first_evidence(members), on="incident_id"), states).row(0, named=True)
    assert row["incident_start_ts"] == _t(3, 3, 5) and row["first_evidence_ts"] == _t(3, 3, 10)
    assert row["hours_to_detect"] == pytest.approx(5 / 60)
    assert row["hours_to_repair"] == pytest.approx(29 + 50 / 60)
    # Without log evidence the operator's start is all there is: 03:05 -> 03:15, 03:05 -> 09:00.
    row = link_incidents(incidents, states).row(0, named=True)
    assert row["first_evidence_ts"] is None
    assert row["hours_to_detect"] == pytest.approx(10 / 60)
    assert row["hours_to_repair"] == pytest.approx(29 + 55 / 60)
    # An operator start later than the first line (03:20): still measured from 03:10, and the 03:15 drain
    # before the operator's start is still the incident's.
    late = incidents.with_columns(pl.lit(_t(3, 3, 20)).cast(DT).alias("start_ts"))
    row = link_incidents(late.join(first_evidence(members), on="incident_id"), states).row(0, named=True)
    assert (row["drain_start_ts"], row["hours_to_detect"]) == (_t(3, 3, 15), pytest.approx(5 / 60))


def test_the_asset_times_repairs_from_the_node_logs(tmp_path: Path) -> None:
    from gpusre.assets.node_states import repair_time_marts

    # gpu01: Xid 79 03:12:05, NHC failing 03:15:01 and 03:20:01, driver loaded 03:31:40 (the catalog's
    # reboot line): repaired 03:31:40, 19 min 35 s after the first evidence. gpu04: NHC failing 15:00:01 and
    # 15:05:01 only: next run 15:10:01, 10 min. Labelled: operator start 02:55, first line 03:12:05.
    wh = tmp_path / "w.duckdb"
    con = connect(wh)
    events = pl.DataFrame({
        "event_id": [1, 2, 3, 4, 5, 6, 7],
        "ts": [_t(10, 3, 12, 5), _t(10, 3, 15, 1), _t(10, 3, 20, 1), _t(10, 3, 31, 40),
               _t(11, 15, 0, 1), _t(11, 15, 5, 1), _t(11, 16)],
        "node": ["gpu01", "gpu01", "gpu01", "gpu01", "gpu04", "gpu04", "gpu04"],
        "kind": ["xid", "health_check", "health_check", "driver_loaded", "health_check", "health_check", "oom_kill"],
        "source_file": ["f"] * 7, "line_no": list(range(1, 8)),
    }, schema_overrides={"ts": DT})
    con.register("_e", events.to_arrow())
    con.execute("INSERT INTO core.node_events BY NAME SELECT * FROM _e")
    incidents = pl.DataFrame({
        "incident_id": ["i1", "i2"], "component": ["pcie_bus", "gpu_compute"], "component_class": ["gpu", "gpu"],
        "start_ts": [_t(10, 2, 55), _t(11, 15, 0, 1)], "end_ts": [_t(10, 3, 20, 1), _t(11, 15, 5, 1)],
        "nodes": [["gpu01"], ["gpu04"]], "n_health_check_episodes": [1, 1]},
        schema_overrides={"start_ts": DT, "end_ts": DT})
    con.register("_i", incidents.to_arrow())
    con.execute("CREATE TABLE marts.hw_incidents AS SELECT * FROM _i")
    con.execute("CREATE TABLE marts.hw_incident_members AS SELECT * FROM (VALUES "
                "('i1', 1), ('i1', 2), ('i1', 3), ('i2', 5), ('i2', 6)) AS t(incident_id, event_id)")
    con.close()
    result = dg.materialize([repair_time_marts], resources=default_resources(str(wh), str(tmp_path), str(tmp_path)))
    assert result.success
    con = connect(wh, read_only=True)
    rows = con.sql("SELECT incident_id, repair_source, repaired_ts, hours_to_repair FROM marts.incident_repairs "
                   "ORDER BY incident_id").fetchall()
    con.close()
    assert [(r[0], r[1], r[2]) for r in rows] == [("i1", "reboot", _t(10, 3, 31, 40)),
                                                  ("i2", "health_checks", _t(11, 15, 10, 1))]
    assert rows[0][3] == pytest.approx((19 * 60 + 35) / 3600) and rows[1][3] == pytest.approx(10 / 60)


def test_nhc_lines_classify_into_the_health_evidence_the_repair_reads() -> None:
    """The catalog ties NHC's own lines to the kinds above: a failure, a passing run, a driver (re)load."""
    from gpusre.models.logs.event_catalog import classify_messages
    lines = pl.Series(["nhc[3301]: Node Health Check completed successfully (2s).",
                       "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024",
                       "nhc[2211]: Health check failed: GPU3 temperature 96C exceeds limit 90C"])
    assert classify_messages(lines)["kind"].to_list() == ["health_check_pass", "driver_loaded", "health_check"]
