"""Upstream fabric and rack-wide incidents (gpusre.models.failures.hw_incidents), from raw log lines.

A spine (or subnet manager) takes several leaf switches down within seconds: one ``fabric`` incident,
not one per leaf. A rack's PDU trip makes every BMC of the rack report AC lost at once: one ``rack``
incident, not one per node. Expected values are worked out by hand from the rules in the module
docstring (FABRIC_SIMULTANEITY = RACK_SIMULTANEITY = 60 s, fabric_min_nodes 3 from the catalog's
leaf_switch row, RACK_MIN_NODES 3). The last test runs a small landing through the whole pipeline.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl

from gpusre.models.failures.hw_incidents import (FABRIC_SIMULTANEITY, RACK_MIN_NODES, RACK_SIMULTANEITY, SCOPE_ORDER,
                                                 incident_id, merge_incidents)
from gpusre.pipelines.runner import run_pipeline
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
M = timedelta(minutes=1)
DOWN = "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link DOWN"
UP = "mlx5_core 0000:1a:00.0 mlx5_0: Port: 1 Link ACTIVE"
PSU = "ipmievd[2214]: Power Supply sensor PS1 Status, Power Supply AC lost Asserted"
PSU_OK = "ipmievd[2201]: Power Supply sensor PS1 Status, Power Supply AC lost Deasserted"
HOT = "ipmievd[1234]: Temperature sensor GPU3_Temp Upper Critical going high Asserted"
LEAVES = {"leaf01": "gpu[01-04]", "leaf02": "gpu[05-08]", "leaf03": "gpu[09-12]", "leaf04": "gpu[13-16]"}
RACKS = {"r1": "gpu[01-04]", "r2": "gpu[05-08]", "r3": "gpu[09-12]", "r4": "gpu[13-16]"}
COLS = ("component", "scope", "leaf_switch", "nodes", "n_events")


def _node(i: int) -> str:
    return f"gpu{i:02d}"


def test_constants_are_the_documented_ones() -> None:
    assert FABRIC_SIMULTANEITY == RACK_SIMULTANEITY == timedelta(seconds=60) and RACK_MIN_NODES == 3
    assert SCOPE_ORDER == ("node", "rack", "leaf_switch", "fabric", "cluster")


def test_four_leaves_two_nodes_each_down_within_5_s_are_one_fabric_incident() -> None:
    # 2 nodes under each of 4 leaves, one every 0.5 s (0-3.5 s): no leaf reaches 3 nodes, but the 8 links
    # chain within 60 s and all 8 are out at 3.5 s (no ACTIVE) -> one fabric incident, no leaf named.
    nodes = [1, 2, 5, 6, 9, 10, 13, 14]
    lines = [(k * S / 2, _node(n), DOWN) for k, n in enumerate(nodes)]
    incidents, membership = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select(COLS).rows() == [("network_switch", "fabric", None, [_node(n) for n in nodes], 8)]
    assert incidents["incident_id"].to_list() == [incident_id("network_switch", T0, "gpu01")]
    assert membership.height == 8
    # Without the topology the same burst is the same fabric incident (nodes under no leaf).
    alone, _ = merge_incidents(events_from_lines(lines))
    assert alone.select(COLS).rows() == incidents.select(COLS).rows()


def test_whole_leaves_in_lockstep_are_one_fabric_incident_with_the_first_leafs_id() -> None:
    # Every node of leaf01 and leaf02 goes down within 3 s, back ACTIVE 9 min later: two leaf incidents
    # whose onsets (3rd node out: leaf01 at 2 s, leaf02 at 3 s) are 1 s apart -> one fabric incident.
    lines = [(k % 4 * S, _node(n), DOWN) for k, n in enumerate(range(1, 9))]
    lines += [(9 * M + k % 4 * S, _node(n), UP) for k, n in enumerate(range(1, 9))]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select(COLS).rows() == [("network_switch", "fabric", None, [_node(n) for n in range(1, 9)], 8)]
    # The id is the one leaf01's incident had alone (its first evidence: gpu01 at T0): ids stay stable.
    leaf01, _ = merge_incidents(events_from_lines([x for x in lines if x[1] <= "gpu04"]), topology=LEAVES)
    assert leaf01.select("scope", "leaf_switch").rows() == [("leaf_switch", "leaf01")]
    assert incidents["incident_id"].to_list() == leaf01["incident_id"].to_list()


def test_a_whole_leaf_and_a_few_nodes_of_another_at_once_are_one_fabric_incident() -> None:
    # leaf01: 4 nodes (a leaf incident, onset at 2 s); leaf02: 2 nodes at 1 s and 4 s (the burst of what no
    # leaf took: 2 nodes < 3 -> no burst of its own) -> the 2 stay node incidents: lockstep needs two
    # incidents. With a third leaf02 node (5 s) the burst has 3 nodes, onset 5 s, 3 s after leaf01's -> fabric.
    lines = [(k * S / 2, _node(n), DOWN) for k, n in enumerate(range(1, 5))] + [(1 * S, "gpu05", DOWN), (4 * S, "gpu06", DOWN)]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert sorted(incidents.select("scope", "leaf_switch").rows(), key=str) == [
        ("leaf_switch", "leaf01"), ("node", None), ("node", None)]
    more, _ = merge_incidents(events_from_lines(lines + [(5 * S, "gpu07", DOWN)]), topology=LEAVES)
    assert more.select(COLS).rows() == [("network_switch", "fabric", None, [_node(n) for n in range(1, 8)], 7)]


def test_two_leaves_down_20_min_apart_are_two_leaf_incidents() -> None:
    lines = [(k * S, _node(n), DOWN) for k, n in enumerate(range(1, 5))]
    lines += [(20 * M + k * S, _node(n), DOWN) for k, n in enumerate(range(5, 9))]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select(COLS).rows() == [
        ("network_switch", "leaf_switch", "leaf01", [_node(n) for n in range(1, 5)], 4),
        ("network_switch", "leaf_switch", "leaf02", [_node(n) for n in range(5, 9)], 4)]
    # Onsets 61 s apart (leaf01's 3rd node at 2 s, leaf02's at 63 s): independent; 60 s apart: lockstep.
    for gap, n in ((61 * S, 2), (60 * S, 1)):
        shifted = lines[:4] + [(gap + k * S, _node(n2), DOWN) for k, n2 in enumerate(range(5, 9))]
        assert merge_incidents(events_from_lines(shifted), topology=LEAVES)[0].height == n, gap


def test_link_losses_minutes_apart_without_topology_stay_per_node() -> None:
    # Three cable faults 5 min apart: no lockstep burst -> three node incidents.
    lines = [(5 * k * M, _node(n), DOWN) for k, n in enumerate((1, 6, 11))]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.select("component", "scope").rows() == [("network", "node")] * 3
    # Two nodes within seconds are below fabric_min_nodes (3): per node too.
    pair, _ = merge_incidents(events_from_lines([(0 * S, "gpu01", DOWN), (2 * S, "gpu06", DOWN)]))
    assert pair["scope"].to_list() == ["node", "node"]


def test_a_rack_pdu_trip_is_one_rack_incident() -> None:
    # 4 nodes of rack r4 report AC lost at 0, 15, 30, 45 s (chained within 60 s), all out at 45 s -> one
    # rack incident (component host_power); the same lines without racks are 4 node incidents.
    lines = [(15 * k * S, _node(n), PSU) for k, n in enumerate(range(13, 17))]
    lines += [(35 * M + 15 * k * S, _node(n), PSU_OK) for k, n in enumerate(range(13, 17))]
    events = events_from_lines(lines)
    incidents, membership = merge_incidents(events, racks=RACKS, topology=LEAVES)
    assert incidents.select(COLS).rows() == [("host_power", "rack", None, [_node(n) for n in range(13, 17)], 4)]
    assert incidents["component_class"].to_list() == ["power"]
    assert membership.height == 4
    # The id is the one gpu13's node incident had (first evidence: host_power, T0, gpu13).
    assert incidents["incident_id"].to_list() == [incident_id("host_power", T0, "gpu13")]
    per_node, _ = merge_incidents(events, topology=LEAVES)
    assert per_node.select("component", "scope").rows() == [("host_power", "node")] * 4


def test_a_single_power_supply_fault_is_a_node_incident() -> None:
    incidents, _ = merge_incidents(events_from_lines([(0 * S, "gpu05", PSU)]), racks=RACKS)
    assert incidents.select(COLS).rows() == [("host_power", "node", None, ["gpu05"], 1)]


def test_power_faults_in_one_rack_not_at_once_stay_per_node() -> None:
    # PSUs of 4 nodes of r1 failing 10 min apart (a gap > 60 s breaks the burst): four node faults.
    lines = [(10 * k * M, _node(n), PSU) for k, n in enumerate(range(1, 5))]
    assert merge_incidents(events_from_lines(lines), racks=RACKS)[0]["scope"].to_list() == ["node"] * 4
    # Two nodes at once (< RACK_MIN_NODES) and one node's faults in other racks at once: per node.
    spread = [(0 * S, "gpu01", PSU), (1 * S, "gpu02", PSU), (2 * S, "gpu05", PSU), (3 * S, "gpu09", PSU)]
    assert merge_incidents(events_from_lines(spread), racks=RACKS)[0]["scope"].to_list() == ["node"] * 4


def test_a_rack_cooling_loss_is_one_thermal_rack_incident() -> None:
    lines = [(10 * k * S, _node(n), HOT) for k, n in enumerate(range(5, 9))]
    incidents, _ = merge_incidents(events_from_lines(lines), racks=RACKS)
    assert incidents.select(COLS).rows() == [("thermal", "rack", None, [_node(n) for n in range(5, 9)], 4)]


def test_operator_label_over_a_fabric_incident_keeps_its_scope_and_id() -> None:
    lines = [(k % 4 * S, _node(n), DOWN) for k, n in enumerate(range(1, 9))]
    events = events_from_lines(lines)
    alone, _ = merge_incidents(events, topology=LEAVES)
    op = pl.DataFrame({"id": ["OPS-7"], "start": [T0 - M], "end": [T0 + 30 * M], "component": ["interconnect_switch"],
                       "root_cause": ["spine ib-spine-01 rebooted"], "nodes": ["gpu01"], "notes": [None]},
                      schema={"id": pl.String, "start": pl.Datetime("us", "UTC"), "end": pl.Datetime("us", "UTC"),
                              "component": pl.String, "root_cause": pl.String, "nodes": pl.String, "notes": pl.String})
    labelled, membership = merge_incidents(events, topology=LEAVES, operator=op)
    assert labelled.select("incident_id", "scope", "label_source", "component").rows() == [
        (alone["incident_id"][0], "fabric", "operator", "interconnect_switch")]
    assert labelled["nodes"].to_list() == [[_node(n) for n in range(1, 9)]] and membership.height == 8
    # A rack incident folded with a node incident of another rack by one operator row takes the wider scope.
    psu = events_from_lines([(15 * k * S, _node(n), PSU) for k, n in enumerate(range(13, 17))] + [(S, "gpu01", PSU)])
    op2 = op.with_columns(pl.lit("gpu[01,13]").alias("nodes"), pl.lit("host_power").alias("component"))
    folded, _ = merge_incidents(psu, racks=RACKS, operator=op2)
    assert folded.select("scope", "n_events").rows() == [("rack", 5)]


FIXTURE = Path(__file__).parent / "fixtures" / "fabric_and_rack"


def test_fabric_and_rack_incidents_through_the_pipeline(tmp_path: Path) -> None:
    """tests/fixtures/fabric_and_rack, 16 nodes, racks = leaves of 4 nodes (syslog in its real format):

    - 02:10:00-02:10:03 every node of leaf01 and leaf02 logs Link DOWN (ACTIVE at 02:19): one fabric incident;
      job 8001 (gpu[001-008], FAILED 02:11) is charged to it.
    - 05:00 gpu009-011 (leaf03) and 05:20 gpu013-015 (leaf04) down: two leaf-switch incidents.
    - 07:15:00-07:15:45 rack r4's 4 BMCs report AC lost (back 07:50): one rack incident; job 8002
      (gpu[013-014], NODE_FAIL 07:16) is charged to it.
    - 09:00 one PSU of gpu005: a node incident.
    """
    landing = tmp_path / "landing"
    shutil.copytree(FIXTURE, landing)
    wh = tmp_path / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, tmp_path / "reports")
    con = duckdb.connect(str(wh.with_name("gpusre.snapshot.duckdb")), read_only=True)
    try:
        rows = con.sql("SELECT component, scope, leaf_switch, len(nodes), strftime(start_ts, '%H:%M:%S') "
                       "FROM marts.hw_incidents ORDER BY start_ts").fetchall()
        assert rows == [("network_switch", "fabric", None, 8, "02:10:00"),
                        ("network_switch", "leaf_switch", "leaf03", 3, "05:00:00"),
                        ("network_switch", "leaf_switch", "leaf04", 3, "05:20:00"),
                        ("host_power", "rack", None, 4, "07:15:00"),
                        ("host_power", "node", None, 1, "09:00:00")]
        charged = con.sql("SELECT a.job_id, i.scope FROM marts.job_failure_attribution a "
                          "JOIN marts.hw_incidents i USING (incident_id) ORDER BY 1").fetchall()
        assert charged == [("8001", "fabric"), ("8002", "rack")]
    finally:
        con.close()


def test_a_rack_incident_takes_its_nodes_down_in_the_estimated_availability() -> None:
    """Without node states, availability is estimated from incidents: a rack's power loss downs each of
    its nodes (like a node's own fault), a fabric outage does not (the nodes run on, unreachable)."""
    from gpusre.models.reliability.marts import _down_spans

    t = datetime(2026, 11, 24, 7, 15, tzinfo=UTC)
    incidents = pl.DataFrame({
        "incident_id": ["inc-rack", "inc-fabric"],
        "scope": ["rack", "fabric"],
        "nodes": [["gpu057", "gpu058"], ["gpu001", "gpu002"]],
        "start_ts": [t, t],
        "recovered_ts": [t + timedelta(hours=2), t + timedelta(minutes=9)],
        "repaired_ts": [None, None],
    }, schema_overrides={"repaired_ts": pl.Datetime("us", "UTC")})
    spans = _down_spans(incidents, t + timedelta(days=1))
    assert spans.rows() == [("gpu057", t, t + timedelta(hours=2)), ("gpu058", t, t + timedelta(hours=2))]
