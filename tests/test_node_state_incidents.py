"""Probe AS, F6: a hardware outage nothing logged is a hardware incident (models/failures/hw_incidents.py rule 7,
node_state_incidents), so "what failed" (job_failure_attribution) and "how often each component fails" (MTBF,
repairs, taxonomy) agree.

The probe: tray gb-r2-c15 lost power — no node-log line, only Slurm's node states (``DOWN*`` "Not responding"
15:01:40, then the operator's ``DRAIN`` "tray c15 lost power (PDB), reseated" 15:20–17:00). Job 3003 (NODE_FAIL
on gb-r2-c[13-18], 24 GPUs) was infrastructure / host_power by its node state, but no incident held it: MTBF
power counted 0 failures and its 12 lost GPU-hours belonged to no incident.

Hand-computed values; the probe's own sacctmgr lines plus another convention (``PSU2 failed - replace PSU`` set
14 min after the node came back from its ``DOWN``: one outage chain, ≤ 30 min in service between).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line, slurm_duration

from gpusre.models.failures.attribution import NODE_STATE_RULE, attribute_failures, node_state_evidence
from gpusre.models.failures.drain_reasons import classify_reasons
from gpusre.models.failures.hw_incidents import (INCIDENT_SCHEMA, NODE_STATE_LABEL, incident_id,
                                                 node_state_incidents, planned_maintenance)
from gpusre.models.reliability.repair_times import link_incidents
from gpusre.reports.incident import render_incident_report

UTC = timezone.utc


def t(hour: int, minute: int = 0, second: int = 0, day: int = 4) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def _states(rows: list[tuple[str, str, datetime, datetime | None, str]]) -> pl.DataFrame:
    """core.node_states rows (node, state, start, end, reason) with the catalog's class of each reason."""
    frame = pl.DataFrame(rows, schema={"node": pl.String, "state": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                       "end_ts": pl.Datetime("us", "UTC"), "reason": pl.String}, orient="row")
    classes = classify_reasons(frame["reason"])
    return frame.with_columns(classes["reason_class"], classes["reason_component"], classes["availability_class"])


#: The probe's two sacctmgr lines of gb-r2-c15.
PROBE_STATES = [("gb-r2-c15", "DOWN*", t(15, 1, 40), t(15, 20), "Not responding"),
                ("gb-r2-c15", "DRAIN", t(15, 20), t(17), "tray c15 lost power (PDB), reseated")]
NO_INCIDENTS = pl.DataFrame(schema=INCIDENT_SCHEMA)


def _logged(iid: str, component: str, first: datetime, last: datetime, node: str) -> pl.DataFrame:
    """One event incident of ``node`` with log evidence from ``first`` to ``last``."""
    return pl.DataFrame([(iid, component, first, last, [node], "events", "hardware")],
                        schema={"incident_id": pl.String, "component": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String),
                                "label_source": pl.String, "cause_class": pl.String}, orient="row")


def test_probe_tray_power_loss_is_one_node_state_incident() -> None:
    inc = node_state_incidents(NO_INCIDENTS, _states(PROBE_STATES))
    assert inc.schema == pl.Schema(INCIDENT_SCHEMA)
    row, = inc.to_dicts()
    # from the DOWN* (the chain's first outage) to the drain naming the part; the drain reason names it
    assert {k: row[k] for k in ("component", "component_class", "cause_class", "scope", "start_ts", "end_ts", "nodes",
                                "n_events", "label_source", "root_cause", "gpus", "first_event_id", "action")} == {
        "component": "host_power", "component_class": "power", "cause_class": "hardware", "scope": "node",
        "start_ts": t(15, 1, 40), "end_ts": t(15, 20), "nodes": ["gb-r2-c15"], "n_events": 0,
        "label_source": NODE_STATE_LABEL, "root_cause": "tray c15 lost power (PDB), reseated", "gpus": [],
        "first_event_id": None, "action": "CHECK_BMC"}  # nothing logged: the BMC's event log is where to look
    assert row["incident_id"] == incident_id("host_power", t(15, 1, 40), "gb-r2-c15")


def test_psu_drain_set_after_the_node_came_back_is_the_same_chain() -> None:
    # DOWN 09:00-09:06, 14 min in service, then the drain: one chain (<= 30 min between), started at the DOWN
    states = _states([("hgx01", "DOWN", t(9), t(9, 6), "Not responding"),
                      ("hgx01", "IDLE+DRAIN", t(9, 20), t(11), "PSU2 failed - replace PSU")])
    row, = node_state_incidents(NO_INCIDENTS, states).to_dicts()
    assert (row["component"], row["component_class"], row["start_ts"], row["end_ts"]) == (
        "host_power", "power", t(9), t(9, 20))
    # 31 min in service: two outages, the drain alone is the fault
    states = _states([("hgx01", "DOWN", t(9), t(9, 6), "Not responding"),
                      ("hgx01", "IDLE+DRAIN", t(9, 37), t(11), "PSU2 failed - replace PSU")])
    row, = node_state_incidents(NO_INCIDENTS, states).to_dicts()
    assert (row["start_ts"], row["end_ts"]) == (t(9, 37), t(9, 37))


def test_generic_reboot_planned_and_software_reasons_make_no_incident() -> None:
    states = _states([
        ("n1", "DOWN*", t(1), t(2), "Not responding"),                   # NODE_FAIL-only: no part named
        ("n2", "DRAIN", t(1), t(2), "Kill task failed"),
        ("n3", "DOWN", t(1), t(2), ""),
        ("n4", "DRAIN", t(1), t(2), "Reboot ASAP"),                      # a reboot request
        ("n5", "DRAIN", t(1), t(2), "planned maintenance: BIOS upgrade"),
        ("n6", "DRAIN", t(1), t(2), "/tmp is 100% full"),                # software (capacity)
        ("n7", "DOWN*", t(1), t(1, 10), "Not responding"),               # generic, then a reboot request
        ("n7", "DRAIN", t(1, 10), t(2), "Reboot ASAP"),
    ])
    assert node_state_incidents(NO_INCIDENTS, states).is_empty()


def test_a_logged_fault_explains_the_drain_whatever_class_it_names() -> None:
    # An Xid 79 at 10:00 and a PSU drain at 10:10: the drain is the logged fault's (evidence up to 30 min before
    # a drain is the fault it is for), not a second, power incident — also when its reason names another class.
    states = _states([("hgx03", "DRAIN", t(10, 10), t(12), "PSU failed")])
    assert node_state_incidents(_logged("inc-x", "pcie_bus", t(10), t(10), "hgx03"), states).is_empty()
    # Logged 3 h before the drain, the fault's window (1 h after its last line) is over: the drain is its own.
    row, = node_state_incidents(_logged("inc-x", "pcie_bus", t(7), t(7, 5), "hgx03"), states).to_dicts()
    assert (row["component"], row["start_ts"]) == ("host_power", t(10, 10))


def test_planned_maintenance_claims_a_drain_inside_it() -> None:
    states = _states([("hgx01", "DRAIN", t(9, 20), t(11), "PSU2 failed - replace PSU")])
    planned = pl.DataFrame({"node": ["hgx01"], "start_ts": [t(8)], "end_ts": [t(12)]})
    assert node_state_incidents(NO_INCIDENTS, states, planned).is_empty()
    elsewhere = pl.DataFrame({"node": ["hgx02"], "start_ts": [t(8)], "end_ts": [t(12)]})
    assert node_state_incidents(NO_INCIDENTS, states, elsewhere).height == 1


def test_a_drain_rewritten_from_planned_work_makes_no_incident_without_logs() -> None:
    # Probe AG's h100-003: the change ticket's drain, rewritten to the GPU the maintenance found. The chain began
    # as planned work (planned_maintenance, the node-state periods node availability takes out): without a log
    # line no incident (conservative; with one, the event incident counts it).
    states = _states([("h100-003", "DRAIN", t(6, day=10), t(10, 50, day=10), "scheduled maintenance CHG0012345"),
                      ("h100-003", "DRAIN", t(10, 50, day=10), t(10, day=11), "Xid 79 GPU fell off bus")])
    planned = planned_maintenance(states, [], t(0, day=12))
    assert planned.select("start_ts", "end_ts", "fault_drain_ts").row(0) == (t(6, day=10), t(10, 50, day=10),
                                                                             t(10, 50, day=10))
    assert node_state_incidents(NO_INCIDENTS, states, planned).is_empty()
    # the same drain on a node in service: a GPU fault (the Xid in the reason names its component, pcie_bus)
    row, = node_state_incidents(NO_INCIDENTS, states.tail(1)).to_dicts()
    assert (row["component"], row["component_class"], row["start_ts"]) == ("pcie_bus", "gpu", t(10, 50, day=10))


def test_repair_is_the_chain_end_and_the_killed_job_carries_the_incident() -> None:
    states = _states(PROBE_STATES + [("hgx01", "DOWN", t(9), t(9, 6), "Not responding"),
                                     ("hgx01", "IDLE+DRAIN", t(9, 20), t(11), "PSU2 failed - replace PSU")])
    inc = node_state_incidents(NO_INCIDENTS, states)
    ids = dict(zip(inc["nodes"].list.first(), inc["incident_id"], strict=True))
    repairs = {r["incident_id"]: r for r in link_incidents(inc, states).to_dicts()}
    # 15:01:40 -> 17:00 = 1 h 58 min 20 s; 09:00 -> 11:00 = 2 h
    assert (repairs[ids["gb-r2-c15"]]["repaired_ts"], repairs[ids["gb-r2-c15"]]["repair_source"]) == (t(17), "node_states")
    assert repairs[ids["gb-r2-c15"]]["hours_to_repair"] == pytest.approx(1 + 58 / 60 + 20 / 3600)
    assert repairs[ids["hgx01"]]["hours_to_repair"] == pytest.approx(2.0)
    jobs = pl.DataFrame([("3003", "NODE_FAIL", t(12), t(15, 2), 24, [f"gb-r2-c{i}" for i in range(13, 19)]),
                         # ended 3.5 min before the DOWN: slurmctld's detection lags the death (rule 2b's ``after``)
                         ("5001", "NODE_FAIL", t(7, 50), t(8, 56, 30), 4, ["hgx01"])],
                        schema={"job_id": pl.String, "state": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                "end_ts": pl.Datetime("us", "UTC"), "n_gpus": pl.Int64, "nodes": pl.List(pl.String)},
                        orient="row")
    events = pl.DataFrame(schema={"event_id": pl.Int64, "ts": pl.Datetime("us", "UTC"), "node": pl.String,
                                  "kind": pl.String, "code": pl.Int32, "gpu_pci": pl.String, "component": pl.String,
                                  "cause_class": pl.String, "severity": pl.String, "action": pl.String})
    out = {r["job_id"]: r for r in attribute_failures(jobs, events, inc, node_state_evidence(states)).to_dicts()}
    for job, node in (("3003", "gb-r2-c15"), ("5001", "hgx01")):
        assert (out[job]["attribution"], out[job]["rule"], out[job]["component"], out[job]["incident_id"]) == (
            "infrastructure", NODE_STATE_RULE, "host_power", ids[node])
    assert out["3003"]["evidence_node_state"] == 'DRAIN "tray c15 lost power (PDB), reseated" since 2026-11-04 15:20:00Z'


# --- the whole pipeline over a hand landing ---------------------------------------------------------------------

DAY = "2026-11-04"
CLUSTER = """cluster: bw-site
timezone: UTC
nodes: "gb-r2-c[13-18],hgx[01-03]"
gpus_per_node: 4
"""
EVENTS = [
    # the probe's lines
    "bw-site|gb-r2-c15|2026-11-04T15:01:40|2026-11-04T15:20:00|00:18:20|DOWN*|Not responding|slurm",
    "bw-site|gb-r2-c15|2026-11-04T15:20:00|2026-11-04T17:00:00|01:40:00|DRAIN|tray c15 lost power (PDB), reseated|root",
    # another spelling, set after the node came back from its DOWN (one chain)
    "bw-site|hgx01|2026-11-04T09:00:00|2026-11-04T09:06:00|00:06:00|DOWN|Not responding|slurm(64030)",
    "bw-site|hgx01|2026-11-04T09:20:00|2026-11-04T11:00:00|01:40:00|IDLE+DRAIN|PSU2 failed - replace PSU|root(0)",
    # a NODE_FAIL with a generic reason only: no part to count
    "bw-site|hgx02|2026-11-04T13:00:30|2026-11-04T13:30:00|00:29:30|DOWN*|Not responding|slurm(64030)",
    # a logged fault's drain: linked to its incident, no second one
    "bw-site|hgx03|2026-11-04T14:05:00|2026-11-04T16:00:00|01:55:00|DRAIN|GPU 3 fell off the bus - RMA|root(0)",
]
XID79 = [("hgx03", "14:00:00", "kernel: [547489.150660] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
                               "name=<unknown>, GPU has fallen off the bus."),
         ("hgx03", "14:00:00", "kernel: [547489.150661] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.")]
NODES = [f"gb-r2-c{i}" for i in range(13, 19)] + ["hgx01", "hgx02", "hgx03"]


def landing() -> dict[str, str]:
    header = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User"
    cut = datetime.fromisoformat(f"{DAY}T00:00:00") + timedelta(days=1, minutes=5)
    registered = (f"bw-site||2026-10-01T00:00:00|Unknown|"
                  f"{slurm_duration(datetime.fromisoformat('2026-10-01T00:00:00'), cut)}||Cluster Registered TRES|")
    jobs = [sacct_line("3003", DAY, "12:00:00", "15:02:00", "gb-r2-c[13-18]", 6, state="NODE_FAIL", exit_code="0:0",
                       gpus_per_node=4),
            sacct_line("5001", DAY, "07:50:00", "08:56:30", "hgx01", 1, state="NODE_FAIL", exit_code="0:0",
                       gpus_per_node=4),
            sacct_line("5002", DAY, "10:00:00", "13:00:00", "hgx02", 1, state="NODE_FAIL", exit_code="0:0",
                       gpus_per_node=4),
            sacct_line("5003", DAY, "11:00:00", "14:00:30", "hgx03", 1, state="FAILED", exit_code="1:0",
                       gpus_per_node=4),
            # the data reach the day's end
            sacct_line("5009", DAY, "00:10:00", "23:50:00", "gb-r2-c13", 1, state="COMPLETED", exit_code="0:0",
                       gpus_per_node=4)]
    files = {"cluster.yaml": CLUSTER, f"sacct/sacct_{DAY}.psv": sacct_dump(jobs),
             f"slurm_events/events_{DAY}.txt": "\n".join([header, registered, *EVENTS]) + "\n"}
    for node in NODES:
        lines = [(f"{h:02d}:30:01", "CRON[20566]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)")
                 for h in range(0, 24, 2)] + [(ts, msg) for n, ts, msg in XID79 if n == node]
        files[f"syslog/{DAY}/{node}.log"] = "".join(f"Nov  4 {ts} {node} {msg}\n" for ts, msg in sorted(lines))
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("node_state_incidents"), landing())


def test_pipeline_counts_the_unlogged_power_loss_in_every_mart(warehouse: Path) -> None:
    incidents = {nodes[0]: (iid, comp, cls, start, n, src, jobs, round(lost, 4))
                 for iid, comp, cls, start, nodes, n, src, jobs, lost in query_rows(warehouse, """
        SELECT incident_id, component, component_class, start_ts, nodes, n_events, label_source, affected_jobs,
               lost_gpu_hours FROM marts.hw_incidents""")}
    assert set(incidents) == {"gb-r2-c15", "hgx01", "hgx03"}  # hgx02's "Not responding" names no part
    c15, hgx01 = incidents["gb-r2-c15"], incidents["hgx01"]
    # 24 GPUs x the checkpoint interval's half (ran 3 h 02 min >= 1 h) = 12 GPU-h; hgx01: 4 x 0.5 = 2
    assert c15[1:] == ("host_power", "power", t(15, 1, 40), 0, NODE_STATE_LABEL, 1, 12.0)
    assert hgx01[1:] == ("host_power", "power", t(9), 0, NODE_STATE_LABEL, 1, 2.0)
    assert incidents["hgx03"][5] == "events"
    attribution = {j: (rule, comp, iid) for j, rule, comp, iid in query_rows(warehouse, """
        SELECT job_id, rule, component, incident_id FROM marts.job_failure_attribution""")}
    assert attribution["3003"] == (NODE_STATE_RULE, "host_power", c15[0])
    assert attribution["5001"] == (NODE_STATE_RULE, "host_power", hgx01[0])
    assert attribution["5002"] == ("node failure without evidence", "unknown (suspected)", None)
    (failures,), = query_rows(warehouse, """SELECT failures FROM marts.mtbf
        WHERE period_type = 'all' AND scope = 'component_class' AND component = 'power'""")
    assert failures == 2
    repairs = {iid: (state, source, round(h, 4)) for iid, state, source, h in query_rows(warehouse, """
        SELECT incident_id, repair_state, repair_source, hours_to_repair FROM marts.incident_repairs""")}
    assert repairs[c15[0]] == ("repaired", "node_states", round(1 + 58 / 60 + 20 / 3600, 4))
    assert repairs[hgx01[0]] == ("repaired", "node_states", 2.0)
    (tax_incidents, tax_lost), = query_rows(warehouse, """SELECT incidents, lost_gpu_hours FROM marts.failure_taxonomy
        WHERE period_type = 'all' AND component = 'host_power'""")
    assert (tax_incidents, tax_lost) == (2, 14.0)
    # The nightly's "To do" names an action for them, not a dash (they have no catalog evidence to take one from).
    nightly = next((warehouse.parent.parent / "reports").glob("nightly-*.md")).read_text()
    todo = next(line for line in nightly.splitlines() if line.startswith("- **To do:**"))
    assert todo.startswith("- **To do:** Check the node's BMC event log (SEL) and the part its drain reason names "
                           "(gb-r2-c15); Check the node's BMC event log (SEL) and the part its drain reason names "
                           "(hgx01); Reboot the node (hgx03)."), todo


def test_the_retrospective_calls_its_evidence_node_states_not_log_lines(warehouse: Path, tmp_path: Path) -> None:
    (iid,), = query_rows(warehouse, "SELECT incident_id FROM marts.hw_incidents WHERE nodes = ['gb-r2-c15']")
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        md = " ".join(render_incident_report(con, tmp_path, iid).markdown.read_text().split())
    finally:
        con.close()
    # the DOWN* 15:01:40 and the drain naming the part 15:20 are its evidence; no log line exists
    assert "node-state evidence 2026-11-04 15:01:40 UTC → 2026-11-04 15:20:00 UTC" in md
    assert "its node states span 18 min (0 log lines), the last at 2026-11-04 15:20:00 UTC" in md
    assert "(its last node state)" in md and "severity high; 0 log lines on 1 node." in md
    assert "log evidence" not in md and "failure lines" not in md and "0 events" not in md
    assert "Check the node's BMC event log (SEL) and the part its drain reason names" in md


def test_without_node_logs_the_node_state_incidents_are_a_floor(tmp_path: Path) -> None:
    # sacct and node states only: the drains naming a part are incidents, the card says they are a floor
    files = {name: text for name, text in landing().items() if not name.startswith("syslog/")}
    wh = run_hand_landing(tmp_path, files)
    rows = query_rows(wh, "SELECT nodes, label_source FROM marts.hw_incidents ORDER BY start_ts")
    # hgx03's GPU drain names a part too: with no log line it is an outage nothing logged
    assert rows == [(["hgx01"], NODE_STATE_LABEL), (["hgx03"], NODE_STATE_LABEL), (["gb-r2-c15"], NODE_STATE_LABEL)]
    nightly = next((tmp_path / "reports").glob("nightly-*.md")).read_text()
    assert ("**Hardware incidents:** 3 (whole period · 3 began 2026-11-04 · at least: node states only, "
            "no node logs)") in nightly


#: Rack r07 of four trays and one tray of rack r08 (cluster.yaml ``racks``).
RACKS = {"r07": "gb-r7-c[01-04]", "r08": ["gb-r8-c01"]}


def _down_and_drain(node: str, down: datetime, reason: str) -> list[tuple[str, str, datetime, datetime | None, str]]:
    """A tray that stopped answering at ``down`` (``DOWN*``) and its drain 20 min later, repaired 2 h after."""
    return [(node, "DOWN*", down, down + timedelta(minutes=20), "Not responding"),
            (node, "DRAIN", down + timedelta(minutes=20), down + timedelta(hours=2), reason)]


def test_trays_of_one_rack_losing_power_together_are_one_rack_incident() -> None:
    # slurmctld marks the trays DOWN* on successive ping rounds: 0, 100, 200 and 290 s after the first
    rows = [r for k, dt in enumerate((0, 100, 200, 290))
            for r in _down_and_drain(f"gb-r7-c0{k + 1}", t(3) + timedelta(seconds=dt), "rack r07 PDU B tripped")]
    rows += _down_and_drain("gb-r8-c01", t(3, 1), "lost power - PDU tripped")  # same minute, another rack
    inc = node_state_incidents(NO_INCIDENTS, _states(rows), racks=RACKS).sort("start_ts")
    assert inc.select("scope", "nodes", "component", "start_ts", "end_ts").rows() == [
        ("rack", ["gb-r7-c01", "gb-r7-c02", "gb-r7-c03", "gb-r7-c04"], "host_power", t(3), t(3, 24, 50)),
        ("node", ["gb-r8-c01"], "host_power", t(3, 1), t(3, 21))]
    # the rack incident keeps the id its first tray's incident would have had
    assert inc["incident_id"][0] == incident_id("host_power", t(3), "gb-r7-c01")
    # without the topology: one incident per tray, as before
    assert node_state_incidents(NO_INCIDENTS, _states(rows)).height == 5


def test_two_trays_or_hours_apart_stay_node_incidents() -> None:
    # two trays only (fewer than RACK_MIN_NODES = 3), then two more 6 h later: four node incidents
    rows = [r for node, down in (("gb-r7-c01", t(3)), ("gb-r7-c02", t(3, 2)), ("gb-r7-c03", t(9)),
                                 ("gb-r7-c04", t(9, 3)))
            for r in _down_and_drain(node, down, "PSU failure - replace PSU2")]
    inc = node_state_incidents(NO_INCIDENTS, _states(rows), racks=RACKS)
    assert sorted(inc["scope"].to_list()) == ["node"] * 4
    # and a chain of starts each within 5 min of the one before groups, even past 5 min end to end
    rows = [r for k in range(3) for r in _down_and_drain(f"gb-r7-c0{k + 1}", t(3, 4 * k), "PDU tripped")]
    inc = node_state_incidents(NO_INCIDENTS, _states(rows), racks=RACKS)
    assert inc.select("scope", pl.col("nodes").list.len()).rows() == [("rack", 3)]
    # a GPU drain on three trays at once is no rack-wide class: three node incidents
    rows = [r for k in range(3) for r in _down_and_drain(f"gb-r7-c0{k + 1}", t(3, k), "GPU 3 fell off the bus - RMA")]
    assert node_state_incidents(NO_INCIDENTS, _states(rows), racks=RACKS)["scope"].to_list() == ["node"] * 3


def test_pipeline_makes_one_rack_incident_of_a_rack_that_lost_power_without_logs(tmp_path: Path) -> None:
    """The whole pipeline: rack r07's four trays go DOWN* on successive ping rounds and are drained "rack r07 PDU B
    tripped"; one NODE_FAIL job ran on all four. One power failure of the rack, not four of its trays."""
    cluster = CLUSTER.replace('nodes: "gb-r2-c[13-18],hgx[01-03]"', 'nodes: "gb-r7-c[01-04],hgx01"') + \
        'racks: {r07: "gb-r7-c[01-04]", r08: "hgx01"}\n'
    header = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User"
    events = [header]
    for k, down in enumerate(("10:00:05", "10:01:45", "10:03:25", "10:04:55")):
        start = datetime.fromisoformat(f"{DAY}T{down}")
        drain, back = start + timedelta(minutes=20), datetime.fromisoformat(f"{DAY}T13:00:00") + timedelta(minutes=k)
        events += [f"bw-site|gb-r7-c0{k + 1}|{start.isoformat()}|{drain.isoformat()}|{slurm_duration(start, drain)}|"
                   "DOWN*|Not responding|slurm",
                   f"bw-site|gb-r7-c0{k + 1}|{drain.isoformat()}|{back.isoformat()}|{slurm_duration(drain, back)}|"
                   "DRAIN|rack r07 PDU B tripped|root"]
    jobs = [sacct_line("7001", DAY, "08:00:00", "10:00:30", "gb-r7-c[01-04]", 4, state="NODE_FAIL", exit_code="0:0",
                       gpus_per_node=4),
            sacct_line("7009", DAY, "00:10:00", "23:50:00", "hgx01", 1, state="COMPLETED", exit_code="0:0",
                       gpus_per_node=4)]
    files = {"cluster.yaml": cluster, f"sacct/sacct_{DAY}.psv": sacct_dump(jobs),
             f"slurm_events/events_{DAY}.txt": "\n".join(events) + "\n"}
    for node in ["gb-r7-c01", "gb-r7-c02", "gb-r7-c03", "gb-r7-c04", "hgx01"]:
        files[f"syslog/{DAY}/{node}.log"] = "".join(
            f"Nov  4 {h:02d}:30:01 {node} CRON[20566]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)\n"
            for h in range(0, 24, 2))
    wh = run_hand_landing(tmp_path, files)
    (iid, scope, nodes, comp, start, label, jobs_hit, lost), = query_rows(wh, """
        SELECT incident_id, scope, nodes, component, start_ts, label_source, affected_jobs, lost_gpu_hours
        FROM marts.hw_incidents""")
    assert (scope, sorted(nodes), comp, start, label, jobs_hit) == (
        "rack", ["gb-r7-c01", "gb-r7-c02", "gb-r7-c03", "gb-r7-c04"], "host_power", t(10, 0, 5), NODE_STATE_LABEL, 1)
    assert lost == pytest.approx(8.0)  # 16 GPUs x half the 1 h checkpoint interval (ran 2 h)
    assert query_rows(wh, "SELECT rule, incident_id FROM marts.job_failure_attribution WHERE job_id = '7001'") == [
        (NODE_STATE_RULE, iid)]
    (failures,), = query_rows(wh, """SELECT failures FROM marts.mtbf
        WHERE period_type = 'all' AND scope = 'component_class' AND component = 'power'""")
    assert failures == 1
    # repaired when its last tray came back: 10:00:05 -> 13:03
    assert query_rows(wh, f"SELECT repair_state, repaired_ts FROM marts.incident_repairs WHERE incident_id = '{iid}'"
                      ) == [("repaired", t(13, 3))]
