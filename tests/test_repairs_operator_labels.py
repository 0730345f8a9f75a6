"""An operator's label must not cut an incident off its own drain and recovery; an operator's end times a repair
no log line timed.

Found by an outside probe (a quarter of 12 nodes with an operator-curated incidents.csv):

* OPS-101 relabelled gpu03's Xid 79 (09-05 04:00) ``PSU`` (class power). Slurm drained the node 04:05-16:00
  "Xid 79 GPU fallen off the bus": a GPU reason, so the rule "a drain naming only another class is another
  incident's" dropped it, and the repair was re-timed by the next completed job (21.0 h instead of 12.0 h).
  OPS-103 labelled gpu01's ``Link DOWN`` 13:00 / ``Link ACTIVE`` 13:10 ``none`` (class other): the network
  recovery no longer counted (12.0 h instead of 10 min).
* OPS-102, gpu12 10:00-14:00 thermal, no log line: timed to the next job start (15.0 h), not the operator's
  end (4.0 h).

Rule: for an operator-labelled incident the classes of the evidence it folded count as its own, in addition to
the label's, for drains and recovery lines; the end an operator wrote times the repair when no logged evidence
(node states, a recovery line, health checks) did, before the next completed job. Every expected value below
is computed by hand.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.reliability.repair_times import (
    link_incidents,
    operator_label_evidence,
    recovery_ends,
)

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
M = timedelta(minutes=1)


def _t(hour: int, minute: int = 0, day: int = 5) -> datetime:
    return datetime(2026, 9, day, hour, minute, tzinfo=UTC)


def _incidents(rows: list[dict]) -> pl.DataFrame:
    schema = {"incident_id": pl.String, "component": pl.String, "component_class": pl.String,
              "start_ts": DT, "end_ts": DT, "first_evidence_ts": DT, "nodes": pl.List(pl.String),
              "recovered_ts": DT, "evidence_classes": pl.List(pl.String), "operator_end_ts": DT}
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)


#: gpu03 drained for its Xid 79: 04:05 -> 16:00.
XID_DRAIN = pl.DataFrame({"node": ["gpu03"], "start_ts": [_t(4, 5)], "end_ts": [_t(16)],
                          "reason": ["Xid 79 GPU fallen off the bus"], "reason_class": ["gpu_xid"]},
                         schema_overrides={"start_ts": DT, "end_ts": DT})
#: OPS-101: the Xid 79 (first line 04:00) labelled PSU; the next job on gpu03 completed after 09-06 01:00.
OPS_101 = {"incident_id": "i101", "component": "host_power", "component_class": "power", "start_ts": _t(4),
           "end_ts": _t(16), "first_evidence_ts": _t(4), "nodes": ["gpu03"], "recovered_ts": _t(1, day=6)}


def test_operator_label_evidence_gives_the_folded_classes_and_the_operators_end() -> None:
    incidents = pl.DataFrame({
        "incident_id": ["i101", "i102", "i103", "i104", "ev"],
        "label_source": ["operator", "operator", "operator", "operator", "events"],
        # i101: end 16:00 after its last line 04:00 -> the operator's. i102: no evidence -> its end.
        # i103: end 13:10 = its last line (the operator wrote none, or the same): not the operator's statement.
        # i104: operator row without end. ev: an event incident -> no row.
        "end_ts": [_t(16), _t(14), _t(13, 10), None, _t(9)]}, schema_overrides={"end_ts": DT})
    members = pl.DataFrame({
        "incident_id": ["i101", "i101", "i103", "i103", "i104", "ev"],
        "ts": [_t(4), _t(4), _t(13), _t(13, 10), _t(8), _t(9)],
        "component": ["pcie_bus", "pcie_bus", "network", None, "pcie_bus", "pcie_bus"]},
        schema_overrides={"ts": DT})
    assert operator_label_evidence(incidents, members).rows() == [
        ("i101", ["gpu"], _t(16)), ("i102", [], _t(14)), ("i103", ["network"], None), ("i104", ["gpu"], None)]
    # Without label_source (an older warehouse) nobody labelled anything.
    assert operator_label_evidence(incidents.drop("label_source"), members).is_empty()


def test_a_relabelled_incident_keeps_its_drain() -> None:
    # Before the fix: the GPU drain names another class than power -> not linked, the next job: 04:00 -> 01:00 = 21 h.
    row = link_incidents(_incidents([OPS_101]), XID_DRAIN).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"], row["drain_reason"]) == ("job_completed", 21.0, None)
    # The folded Xid 79 is a GPU fault: its drain is the incident's. Detect 04:00 -> 04:05, repair 04:00 -> 16:00.
    labelled = _incidents([{**OPS_101, "evidence_classes": ["gpu"]}])
    row = link_incidents(labelled, XID_DRAIN).row(0, named=True)
    assert (row["repair_source"], row["repaired_ts"], row["drain_reason"]) == (
        "node_states", _t(16), "Xid 79 GPU fallen off the bus")
    assert row["hours_to_detect"] == pytest.approx(5 / 60) and row["hours_to_repair"] == pytest.approx(12.0)
    # A drain naming a third class (the IB link) is still another incident's.
    ib = XID_DRAIN.with_columns(pl.lit("IB link down").alias("reason"), pl.lit("network").alias("reason_class"))
    assert link_incidents(labelled, ib).row(0, named=True)["drain_start_ts"] is None


def test_a_relabelled_link_keeps_its_recovery() -> None:
    # OPS-103: mlx5_0 port 1 of gpu01 down at 13:00, labelled "none" (class other); the same port ACTIVE 13:10,
    # another NIC's port ACTIVE 13:05 (no recovery of this one).
    evidence = pl.DataFrame({"incident_id": ["i103"], "component_class": ["other"], "node": ["gpu01"],
                             "device_pci": ["0000:0c:00.0"], "port": ["1"], "last_ts": [_t(13)],
                             "action": ["CHECK_LINK"]}, schema_overrides={"last_ts": DT})
    events = pl.DataFrame({"node": ["gpu01", "gpu01"], "ts": [_t(13, 5), _t(13, 10)],
                           "kind": ["ib_link_up", "ib_link_up"], "device_pci": ["0000:1a:00.0", "0000:0c:00.0"],
                           "port": ["1", "1"]}, schema_overrides={"ts": DT})
    assert recovery_ends(evidence, events).is_empty()  # class other has no recovery lines
    folded = evidence.with_columns(pl.lit(["network"], pl.List(pl.String)).alias("evidence_classes"))
    assert recovery_ends(folded, events).rows() == [("i103", _t(13, 10), "recovery_events")]
    incident = _incidents([{"incident_id": "i103", "component": "none", "component_class": "other",
                            "start_ts": _t(12, 55), "end_ts": _t(13, 15), "first_evidence_ts": _t(13),
                            "nodes": ["gpu01"], "recovered_ts": _t(1, day=6), "evidence_classes": ["network"],
                            "operator_end_ts": _t(13, 15)}])
    row = link_incidents(incident, pl.DataFrame(schema={"node": pl.String, "start_ts": DT, "end_ts": DT}),
                         recoveries=recovery_ends(folded, events)).row(0, named=True)
    # The logged recovery (13:10) beats the operator's rounded end (13:15): 13:00 -> 13:10.
    assert row["repair_source"] == "recovery_events" and row["hours_to_repair"] == pytest.approx(10 / 60)


def test_a_relabelled_gpu_fault_is_cleared_by_a_reboot() -> None:
    # An Xid 79 (RESTART_BM) on n1 at 04:00 labelled PSU (power: a class with recovery lines of its own, which a
    # boot does not end); n1 booted at 06:00. As power only: no end. With its folded GPU class: the boot, 06:00.
    evidence = pl.DataFrame({"incident_id": ["p"], "component_class": ["power"], "node": ["n1"],
                             "last_ts": [_t(4)], "action": ["RESTART_BM"]}, schema_overrides={"last_ts": DT})
    events = pl.DataFrame({"node": ["n1"], "ts": [_t(6)], "kind": ["kernel_boot"]}, schema_overrides={"ts": DT})
    assert recovery_ends(evidence, events).is_empty()
    folded = evidence.with_columns(pl.lit(["gpu"], pl.List(pl.String)).alias("evidence_classes"))
    assert recovery_ends(folded, events).rows() == [("p", _t(6), "reboot")]


def test_the_operators_end_after_logged_evidence_before_the_next_job() -> None:
    # OPS-102: gpu12 10:00-14:00 thermal, no log line; the next job on gpu12 started 09-06 01:00.
    base = {"incident_id": "i102", "component": "thermal", "component_class": "thermal", "start_ts": _t(10),
            "end_ts": _t(14), "nodes": ["gpu12"], "recovered_ts": _t(1, day=6), "evidence_classes": [],
            "operator_end_ts": _t(14)}
    no_states = pl.DataFrame(schema={"node": pl.String, "start_ts": DT, "end_ts": DT})
    row = link_incidents(_incidents([base]), no_states).row(0, named=True)
    assert (row["repair_source"], row["repair_state"], row["repaired_ts"]) == ("operator", "repaired", _t(14))
    assert row["hours_to_repair"] == pytest.approx(4.0)
    # Without the operator's end: the next job, 10:00 -> 01:00 = 15 h (what the probe saw).
    row = link_incidents(_incidents([{**base, "operator_end_ts": None}]), no_states).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("job_completed", 15.0)
    # A logged recovery (12:30) beats it: 2.5 h.
    recoveries = pl.DataFrame({"incident_id": ["i102"], "recovered_ts": [_t(12, 30)],
                               "repair_source": ["recovery_events"]}, schema_overrides={"recovered_ts": DT})
    row = link_incidents(_incidents([base]), no_states, recoveries=recoveries).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("recovery_events", 2.5)
    # Node states beat it: drained 10:20 -> 18:00 = 8 h.
    drain = pl.DataFrame({"node": ["gpu12"], "start_ts": [_t(10, 20)], "end_ts": [_t(18)],
                          "reason": ["inlet temp high"], "reason_class": [None]},
                         schema_overrides={"start_ts": DT, "end_ts": DT, "reason_class": pl.String})
    row = link_incidents(_incidents([base]), drain).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("node_states", 8.0)
    # It speaks for every node the operator named (a next job does only for one): two nodes -> 4 h.
    row = link_incidents(_incidents([{**base, "nodes": ["gpu11", "gpu12"]}]), no_states).row(0, named=True)
    assert (row["repair_source"], row["hours_to_repair"]) == ("operator", 4.0)
    # An end before the incident's start says nothing about the repair: the next job again.
    row = link_incidents(_incidents([{**base, "operator_end_ts": _t(9)}]), no_states).row(0, named=True)
    assert row["repair_source"] == "job_completed"
    # No nodes: nothing to repair (no_nodes, as before).
    row = link_incidents(_incidents([{**base, "nodes": []}]), no_states).row(0, named=True)
    assert (row["repair_state"], row["repaired_ts"]) == ("no_nodes", None)


# The probe's three labels through the whole pipeline, on a landing small enough to read (one day, 4 nodes).
CLUSTER = 'cluster: t\ntimezone: UTC\nnodes: "gpu[01-04]"\ngpus_per_node: 8\n'
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|Start|End|Elapsed|"
                "Timelimit|NNodes|NCPUS|AllocTRES|NodeList\n")
# One job per node the next night, 01:00-02:00: the "next completed job" the probe's repairs fell back to.
SACCT = SACCT_HEADER + "".join(
    f"{100 + i}|{100 + i}|eval|bob|1004|llm|gpu|COMPLETED|0:0|2026-09-06T00:55:00|2026-09-06T01:00:00|"
    f"2026-09-06T02:00:00|01:00:00|02:00:00|1|8|billing=8,cpu=8,gres/gpu=8,node=1|gpu0{i}\n" for i in range(1, 5))
EVENTS = ("Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User\n"
          "t|gpu03|2026-09-05T04:05:00|2026-09-05T16:00:00|11:55:00|DRAIN|Xid 79 GPU fallen off the bus|root(0)\n")
SYSLOG = {
    "gpu01": ["2026-09-05T13:00:00+00:00 gpu01 kernel: mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link DOWN",
              "2026-09-05T13:10:00+00:00 gpu01 kernel: mlx5_core 0000:0c:00.0 mlx5_0: Port: 1 Link ACTIVE"],
    "gpu03": ["2026-09-05T04:00:00+00:00 gpu03 kernel: NVRM: GPU 0000:19:00.0: GPU has fallen off the bus.",
              "2026-09-05T04:00:00.000500+00:00 gpu03 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', "
              "name=<unknown>, GPU has fallen off the bus."],
}
INCIDENTS = ("id,start,end,component,root_cause,nodes,notes\n"
             "OPS-101,2026-09-05T04:00:00,2026-09-05T16:00:00,PSU,PSU brown-out dropped GPU off the bus,gpu03,\n"
             "OPS-102,2026-09-05T10:00:00,2026-09-05T14:00:00,thermal,CRAC unit failure,gpu02,BMC web UI only\n"
             "OPS-103,2026-09-05T12:55:00,2026-09-05T13:15:00,none,netops cable test,gpu01,not a failure\n")


def test_the_pipeline_times_labelled_incidents_by_their_own_evidence(tmp_path: Path) -> None:
    from gpusre.pipelines.runner import run_pipeline

    landing = tmp_path / "landing"
    for folder in ("sacct", "slurm_events", "syslog/2026-09-05", "syslog/2026-09-06"):
        (landing / folder).mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER)
    (landing / "sacct" / "sacct.psv").write_text(SACCT)
    (landing / "slurm_events" / "events_2026-09-05.txt").write_text(EVENTS)
    (landing / "incidents.csv").write_text(INCIDENTS)
    for i in range(1, 5):  # every node logs the whole span
        node = f"gpu0{i}"
        lines = [f"2026-09-05T00:00:00+00:00 {node} CRON[1]: (root) CMD (run-parts /etc/cron.hourly)",
                 *SYSLOG.get(node, [])]
        (landing / "syslog" / "2026-09-05" / f"{node}.log").write_text("\n".join(lines) + "\n")
        (landing / "syslog" / "2026-09-06" / f"{node}.log").write_text(
            f"2026-09-06T03:00:00+00:00 {node} CRON[2]: (root) CMD (run-parts /etc/cron.hourly)\n")
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = duckdb.connect(str(wh.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        rows = con.sql("SELECT h.operator_id, r.repair_source, r.hours_to_repair, r.hours_to_detect, r.drain_reason "
                       "FROM marts.incident_repairs AS r JOIN marts.hw_incidents AS h USING (incident_id) "
                       "ORDER BY h.operator_id").fetchall()
    finally:
        con.close()
    # OPS-101: drained 04:05-16:00 for the folded Xid 79: detect 5 min, repair 04:00 -> 16:00 = 12 h.
    # OPS-102: no log line: the operator's 10:00 -> 14:00 = 4 h (not 10:00 -> the next job at 01:00, 15 h).
    # OPS-103: the port back ACTIVE: 13:00 -> 13:10 = 10 min (not 13:00 -> 01:00, 12 h).
    assert [(op, src) for op, src, *_ in rows] == [
        ("OPS-101", "node_states"), ("OPS-102", "operator"), ("OPS-103", "recovery_events")]
    assert [r[2] for r in rows] == pytest.approx([12.0, 4.0, 10 / 60])
    assert rows[0][3] == pytest.approx(5 / 60) and rows[0][4] == "Xid 79 GPU fallen off the bus"


def test_the_asset_recovers_each_part_by_its_own_line(tmp_path: Path) -> None:
    from gpusre.assets.node_states import _recoveries
    from gpusre.models.warehouse import connect

    # n1 (the probe's b200-r3-u07): mlx5_5 (0000:c0:00.0) down 17:59:50, ACTIVE 18:00:30; mlx5_2 (0000:40:00.0)
    # down 18:00:00, ACTIVE 22:00. One incident: back when its last port is, 22:00 — not at mlx5_5's 18:00:30.
    con = connect(tmp_path / "w.duckdb")
    try:
        events = pl.DataFrame({
            "event_id": [1, 2, 3, 4], "ts": [_t(17, 59) + timedelta(seconds=50), _t(18), _t(18) + timedelta(seconds=30),
                                             _t(22)],
            "node": ["n1"] * 4, "kind": ["ib_link_down", "ib_link_down", "ib_link_up", "ib_link_up"],
            "device_pci": ["0000:c0:00.0", "0000:40:00.0", "0000:c0:00.0", "0000:40:00.0"], "port": ["1"] * 4,
            "component": ["network", "network", None, None], "source_file": ["f"] * 4, "line_no": [1, 2, 3, 4]},
            schema_overrides={"ts": DT})
        con.register("_e", events.to_arrow())
        con.execute("INSERT INTO core.node_events BY NAME SELECT * FROM _e")
        con.execute("CREATE TABLE marts.hw_incident_members AS SELECT * FROM (VALUES ('i', 1), ('i', 2)) "
                    "AS t(incident_id, event_id)")
        incidents = pl.DataFrame({"incident_id": ["i"], "component": ["network"], "component_class": ["network"],
                                  "action": ["CHECK_LINK"]})
        assert _recoveries(con, incidents).rows() == [("i", _t(22), "recovery_events")]
    finally:
        con.close()
