"""A generic node-state reason ("Not responding") takes its outage's cause, in node availability,
availability by component and node_hardware_loss alike (models/reliability/node_availability.py,
outage_causes): the part its repair chain's drain names, else the hardware incident linked to its outage
(the marts.incident_repairs linkage, repair_times.incident_outage_links). Hand-computed values."""

from __future__ import annotations

from datetime import date, datetime, timezone
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.failures.node_loss import write_node_hardware_loss
from gpusre.models.reliability.mtbf import MaintenanceSpan
from gpusre.models.reliability.node_availability import (
    availability_by_component,
    down_segments,
    node_availability_daily,
    outage_causes,
)
from gpusre.models.reliability.repair_times import incident_outage_links, link_incidents
from gpusre.models.warehouse import apply_ddl

UTC = timezone.utc
DAY = date(2026, 11, 26)
AS_OF = datetime(2026, 11, 27, tzinfo=UTC)
RACK = ["r5n1", "r5n2", "r5n3", "r5n4"]

# (reason, reason_class, reason_component, availability_class) as catalog/drain_reasons.csv classifies them
NOT_RESPONDING = ("Not responding", "not_responding", "os", "unknown")
REPLACE_DIMM = ("replace DIMM", "host_memory", "host_memory", "hardware")
PLANNED = ("planned maintenance: BIOS update", "planned_maintenance", "other", "maintenance")


def t(hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, 26, hour, minute, second, tzinfo=UTC)


def states_of(rows: list[tuple[str, datetime, datetime, tuple[str, str, str, str]]]) -> pl.DataFrame:
    return pl.DataFrame(
        [(node, s, e, *reason) for node, s, e, reason in rows],
        schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                "reason": pl.String, "reason_class": pl.String, "reason_component": pl.String,
                "availability_class": pl.String},
        orient="row")


def incidents_of(rows: list[tuple[str, str, str, datetime, list[str]]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "component": pl.String, "scope": pl.String,
                                      "start_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String)},
                        orient="row")


def marts(states: pl.DataFrame, incidents: pl.DataFrame | None,
          maintenance: tuple[MaintenanceSpan, ...] = ()) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """What assets/node_states.py node_state_marts does: causes, daily rows, availability by component."""
    links = incident_outage_links(incidents, states) if incidents is not None else None
    caused = outage_causes(states, links)
    nodes = sorted(set(states["node"].to_list()))
    daily = node_availability_daily(caused, nodes, DAY, DAY, as_of=AS_OF, maintenance=maintenance)
    segments = down_segments(caused, AS_OF, maintenance, since=t(0))
    return caused, daily, availability_by_component(daily, segments, caused)


def down(daily: pl.DataFrame, node: str) -> tuple[float, float, float, float]:
    row = daily.filter(pl.col("node") == node).row(0, named=True)
    return tuple(round(row[c], 6) for c in ("down_hardware_hours", "down_maintenance_hours",  # type: ignore[return-value]
                                            "down_health_check_hours", "down_other_hours"))


def by_class(by_component: pl.DataFrame) -> dict[str, float]:
    rows = by_component.filter(pl.col("period_type") == "all", pl.col("component_class") != "all")
    return {c: round(h, 6) for c, h in rows.select("component_class", "down_node_hours").rows()}


# -- a rack PDU trip: 4 nodes `DOWN* Not responding` 03:05 -> 05:05 (2 h), a rack host_power incident at 03:00

RACK_STATES = [(n, t(3, 5), t(5, 5), NOT_RESPONDING) for n in RACK]
RACK_INCIDENT = [("pdu-r5", "host_power", "rack", t(3), RACK)]


def test_rack_power_trip_is_hardware_power_down_time() -> None:
    caused, daily, by_component = marts(states_of(RACK_STATES), incidents_of(RACK_INCIDENT))
    assert caused.select("availability_class", "reason_component", "component_class", "class_source").unique().rows() == [
        ("hardware", "host_power", "power", "incident")]
    for node in RACK:
        assert down(daily, node) == (2.0, 0.0, 0.0, 0.0)  # was (0, 0, 0, 2.0): "other"
    assert by_class(by_component) == {"power": 8.0}   # 4 x 2 h; nothing under host/os


def test_same_linkage_as_incident_repairs() -> None:
    states, incidents = states_of(RACK_STATES), incidents_of(RACK_INCIDENT)
    links = incident_outage_links(incidents, states)
    repair = link_incidents(incidents, states).row(0, named=True)
    assert sorted(links["node"].to_list()) == RACK and repair["linked_nodes"] == 4
    assert links["outage_start_ts"].unique().to_list() == [repair["drain_start_ts"]] == [t(3, 5)]


def test_rack_power_trip_in_node_hardware_loss(tmp_path: Path) -> None:
    _, daily, _ = marts(states_of(RACK_STATES), incidents_of(RACK_INCIDENT))
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        con.execute("SET TimeZone = 'UTC'")
        apply_ddl(con)
        con.register("_daily", daily.to_arrow())
        con.execute("INSERT INTO marts.node_availability_daily BY NAME SELECT * FROM _daily")
        con.execute("CREATE TABLE marts.hw_incidents (incident_id VARCHAR, nodes VARCHAR[], start_ts TIMESTAMPTZ, "
                    "recovered_ts TIMESTAMPTZ, scope VARCHAR, cause_class VARCHAR)")
        con.execute("INSERT INTO marts.hw_incidents VALUES ('pdu-r5', ?, ?, ?, 'rack', 'hardware')",
                    [RACK, t(3), t(5, 5)])
        for table in ("job_failure_attribution", "instance_failure_attribution"):
            con.execute(f"CREATE TABLE marts.{table} (job_id VARCHAR, instance_no INTEGER, attribution VARCHAR, "
                        "incident_id VARCHAR, end_ts TIMESTAMPTZ, lost_gpu_hours DOUBLE)")
        assert write_node_hardware_loss(con, gpus_per_node=8, as_of=AS_OF) == 4
        rows = con.sql("SELECT node, down_hardware_hours, down_gpu_hours, down_source "
                       "FROM marts.node_hardware_loss ORDER BY node").fetchall()
    finally:
        con.close()
    assert rows == [(n, 2.0, 16.0, "node_states") for n in RACK]


# -- a DIMM crash: DOWN* 3.5 min while it reboots, back 6.5 min, then DRAIN "replace DIMM" for 10 h

def test_down_then_part_drain_is_that_part() -> None:
    states = states_of([("n1", t(1), t(1, 3, 30), NOT_RESPONDING), ("n1", t(1, 10), t(11, 10), REPLACE_DIMM)])
    caused, daily, by_component = marts(states, None)  # no incident needed: the chain names the part
    assert caused.select("availability_class", "reason_component", "class_source").rows() == [
        ("hardware", "host_memory", "outage_chain"), ("hardware", "host_memory", "reason")]
    assert down(daily, "n1") == (round(10 + 3.5 / 60, 6), 0.0, 0.0, 0.0)  # 10.058333 h, all hardware
    assert by_class(by_component) == {"host": round(10 + 3.5 / 60, 6)}


def test_down_then_drain_after_chain_gap_is_not_chained() -> None:
    # Back in service 40 min (> 30 min): the drain is a separate outage; the DOWN* says nothing.
    states = states_of([("n1", t(1), t(1, 3, 30), NOT_RESPONDING), ("n1", t(1, 43, 30), t(11, 43, 30), REPLACE_DIMM)])
    _, daily, _ = marts(states, None)
    assert down(daily, "n1") == (10.0, 0.0, 0.0, round(3.5 / 60, 6))


# -- the generic reason stays generic without a cause

def test_not_responding_without_incident_stays_other() -> None:
    states = states_of([("n1", t(3, 5), t(5, 5), NOT_RESPONDING)])
    other_node = [("other-node-incident", "host_power", "node", t(3), ["n9"])]  # another node's: no link
    caused, daily, by_component = marts(states, incidents_of(other_node))
    assert caused.select("availability_class", "reason_component", "class_source").row(0) == ("unknown", "os", "reason")
    assert down(daily, "n1") == (0.0, 0.0, 0.0, 2.0)
    assert by_class(by_component) == {"host": 2.0}


def test_incident_long_after_the_outage_does_not_claim_it() -> None:
    # Outage 03:05; incident 2 h later: outside the link window (it starts 30 min before the incident).
    states = states_of([("n1", t(3, 5), t(5, 5), NOT_RESPONDING)])
    _, daily, _ = marts(states, incidents_of([("late", "host_power", "node", t(5), ["n1"])]))
    assert down(daily, "n1") == (0.0, 0.0, 0.0, 2.0)


# -- a reason of its own keeps it

def test_planned_drain_with_incident_inside_stays_maintenance() -> None:
    # Planned drain 02:45 -> 06:45 (4 h); power incident 03:00 on the node, DOWN* 03:05 -> 04:05 inside the drain.
    states = states_of([("n1", t(2, 45), t(6, 45), PLANNED), ("n1", t(3, 5), t(4, 5), NOT_RESPONDING)])
    incidents = incidents_of([("psu", "host_power", "node", t(3), ["n1"])])
    assert incident_outage_links(incidents, states)["outage_start_ts"].to_list() == [t(2, 45)]  # linked
    caused, daily, by_component = marts(states, incidents)
    assert caused["availability_class"].to_list()[0] == "maintenance"
    # the whole 4 h is the planned drain's (the earliest open event): none becomes hardware
    assert down(daily, "n1") == (0.0, 4.0, 0.0, 0.0)
    assert by_class(by_component) == {}


def test_part_naming_reason_keeps_its_part() -> None:
    # Only generic reasons take the incident's class; a drain naming a part keeps its own part.
    states = states_of([("n1", t(3, 5), t(5, 5), ("NHC: Xid 79", "gpu_xid", "gpu", "hardware"))])
    caused, daily, by_component = marts(states, incidents_of([("pdu", "host_power", "rack", t(3), ["n1"])]))
    assert caused.select("reason_component", "class_source").row(0) == ("gpu", "reason")
    assert by_class(by_component) == {"gpu": 2.0}


def test_outage_causes_without_states_or_links() -> None:
    empty = states_of([])
    assert outage_causes(empty).height == 0
    one = states_of([("n1", t(1), t(2), NOT_RESPONDING)])
    assert outage_causes(one, None)["class_source"].to_list() == ["reason"]


@pytest.mark.parametrize("reason", [("Kill task failed", "kill_task_failed", "slurm", "software"),
                                    ("", None, None, None)])
def test_other_generic_reasons_take_the_incident(reason: tuple[str, str, str, str]) -> None:
    states = states_of([("n1", t(3, 5), t(5, 5), reason)])
    _, daily, by_component = marts(states, incidents_of([("psu", "host_power", "node", t(3), ["n1"])]))
    assert down(daily, "n1") == (2.0, 0.0, 0.0, 0.0)
    assert by_class(by_component) == {"power": 2.0}
