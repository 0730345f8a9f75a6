"""What a node logs in planned maintenance is the maintenance's work, not failure evidence
(models/failures/hw_incidents.py rule 0): no incident, no MTBF failure, no suspect-node signal.

Planned maintenance is the one definition node availability and MTBF exposure use
(:func:`~gpusre.models.failures.hw_incidents.planned_maintenance`): node states whose reason class is
maintenance, and down time inside a cluster.yaml window; without node states, the windows. The end-to-end
figures (3 MTBF failures over 2245.5 node-h on the probe's landing) are in
tests/test_planned_maintenance_attribution.py.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.failures.hw_incidents import (EVENT_SCHEMA, merge_incidents, planned_evidence,
                                                 planned_maintenance)
from gpusre.models.failures.suspect_nodes import suspect_nodes
from gpusre.models.reliability.mtbf import MaintenanceSpan

UTC = timezone.utc


def t(h: int, m: int = 0, day: int = 25) -> datetime:
    return datetime(2026, 11, day, h, m, tzinfo=UTC)


LINK_DOWN = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
GPU_LOST = ("health_check", None, "pcie_bus", "hardware", "high", "DRAIN_NODE")
XID48 = ("xid", 48, "gpu_memory", "hardware", "critical", "RESET_GPU")
XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")


def ev(event_id: int, ts: datetime, node: str, spec: tuple) -> dict:
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": ts, "node": node, "kind": kind, "code": code, "gpu_pci": None,
            "component": component, "cause_class": cause, "severity": severity, "action": action}


def events(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EVENT_SCHEMA)


def states(rows: list[tuple]) -> pl.DataFrame:
    """core.node_states rows: (node, start, end, state, availability_class)."""
    return pl.DataFrame(rows, schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                      "end_ts": pl.Datetime("us", "UTC"), "state": pl.String,
                                      "availability_class": pl.String}, orient="row")


def periods(frame: pl.DataFrame, claims_evidence: bool = True) -> list[tuple[str | None, int, int]]:
    """The periods whose failure lines are the maintenance's (``claims_evidence``), or the windows' whole spans
    on nodes node states show in service in part of them (False: rule 2p of job attribution only)."""
    rows = frame.filter(pl.col("claims_evidence") == claims_evidence).select("node", "start_ts", "end_ts").rows()
    return [(n, a.hour * 60 + a.minute, b.hour * 60 + b.minute) for n, a, b in rows]


WINDOW = MaintenanceSpan(t(6), t(12), frozenset({"n1", "n2", "n4", "n5"}), "CHG-4411")


def test_planned_periods_follow_node_availability() -> None:
    s = states([
        ("n1", t(6), t(12), "DRAIN", "maintenance"),          # maint: firmware upgrade
        ("n2", t(6), t(12), "DRAIN", "maintenance"),
        ("n2", t(6, 6), t(6, 15), "DOWN*", "unknown"),         # the reboot's Not responding inside the drain
        ("n3", t(13, 5), t(19, 5), "DRAIN", "hardware"),      # Xid 48 - RMA: no maintenance
        ("n5", t(7), t(7, 30), "DOWN*", "unknown"),            # down inside the cluster.yaml window: maintenance
    ])
    got = periods(planned_maintenance(s, [WINDOW], t(0, day=26)))
    # n4 is named by the window but stayed in service (no down state): exposed, its faults count
    assert got == [("n1", 360, 720), ("n2", 360, 720), ("n5", 420, 450)]
    # the window's whole span on every node it names, for jobs the reservation ended (rule 2p), not for evidence
    assert periods(planned_maintenance(s, [WINDOW], t(0, day=26)), claims_evidence=False) == [
        ("n1", 360, 720), ("n2", 360, 720), ("n4", 360, 720), ("n5", 360, 720)]
    # a drain classed maintenance still open at the end of the data runs to it
    open_drain = states([("n1", t(22), None, "DRAIN", "maintenance")])
    assert periods(planned_maintenance(open_drain, [], t(23, 30))) == [("n1", 1320, 1410)]


def test_without_node_states_the_windows_count() -> None:
    got = periods(planned_maintenance(None, [WINDOW], None))
    assert got == [("n1", 360, 720), ("n2", 360, 720), ("n4", 360, 720), ("n5", 360, 720)]
    empty = states([])
    whole = MaintenanceSpan(t(6), t(12), None, "fleet")
    assert periods(planned_maintenance(empty, [whole], t(23), ["a", "b"])) == [("a", 360, 720), ("b", 360, 720)]


PLANNED = pl.DataFrame({"node": ["n1", "n2", "n3"], "start_ts": [t(6)] * 3, "end_ts": [t(12)] * 3},
                       schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC")})


def test_planned_evidence_window_edges() -> None:
    rows = [
        ev(1, t(7, 50), "n1", LINK_DOWN),   # in the window: the flash
        ev(2, t(7, 40), "n2", GPU_LOST), ev(3, t(7, 45), "n2", GPU_LOST),
        ev(4, t(5, 50), "n3", XID79), ev(5, t(6, 10), "n3", XID79),   # straddles the start: a fault found before
        ev(6, t(11, 50), "n1", GPU_LOST), ev(7, t(12, 5), "n1", GPU_LOST),  # still lost after the window
        ev(8, t(6), "n2", XID48), ev(9, t(12), "n2", XID48),   # on the edges: inside (inclusive)
        ev(10, t(8), "n9", XID48),          # a node not in maintenance
    ]
    got = planned_evidence(events(rows), PLANNED)["event_id"].to_list()
    assert got == [1, 2, 3, 6, 8, 9]


def test_no_incident_from_the_maintenance() -> None:
    rows = [
        ev(1, t(7, 50), "n1", LINK_DOWN),
        ev(2, t(7, 40), "n2", GPU_LOST), ev(3, t(7, 45), "n2", GPU_LOST),
        ev(4, t(5, 50), "n3", XID79), ev(5, t(6, 10), "n3", XID79),
        ev(6, t(11, 50), "n1", GPU_LOST), ev(7, t(12, 5), "n1", GPU_LOST), ev(11, t(12, 10), "n1", GPU_LOST),
        ev(10, t(13), "n2", XID48),
    ]
    incidents, members = merge_incidents(events(rows), planned=PLANNED)
    got = {(r["nodes"][0], r["component"]): (r["start_ts"], r["n_events"]) for r in incidents.iter_rows(named=True)}
    assert got == {
        ("n3", "pcie_bus"): (t(5, 50), 2),   # kept whole, its line in the window too
        ("n1", "pcie_bus"): (t(12, 5), 2),   # a failure from its first line after the window
        ("n2", "gpu_memory"): (t(13), 1),    # an hour after the window: a failure
    }
    assert sorted(members["event_id"].to_list()) == [4, 5, 7, 10, 11]
    # without the maintenance the flash makes the probe's two extra incidents (and n1's starts in the window)
    bare, _ = merge_incidents(events(rows))
    assert bare.height == 5


def test_suspect_nodes_ignore_the_maintenance() -> None:
    # n1 logs a link drop every 2 h through a 24-h planned drain (a firmware soak test), and a NODE_FAIL of
    # the maintenance reboot; nine quiet nodes: without the maintenance known, n1 is far above the fleet.
    day = pl.DataFrame({"node": ["n1"], "start_ts": [t(0)], "end_ts": [t(0, day=26)]},
                       schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC")})
    rows = [ev(i, t(0) + timedelta(hours=2 * i), "n1", LINK_DOWN) for i in range(1, 11)]
    jobs = pl.DataFrame({"job_id": ["j1"], "state": ["NODE_FAIL"], "end_ts": [t(6, 6)], "nodes": [["n1"]]},
                        schema={"job_id": pl.String, "state": pl.String, "end_ts": pl.Datetime("us", "UTC"),
                                "nodes": pl.List(pl.String)})
    fleet = [f"n{i}" for i in range(1, 11)]
    as_of = t(0, day=27)
    before = suspect_nodes(events(rows), pl.DataFrame({"job_id": ["j1"], "attribution": ["infrastructure"]}), jobs,
                           as_of=as_of, fleet=fleet)
    assert before["node"].to_list() == ["n1"]
    after = suspect_nodes(events(rows), pl.DataFrame({"job_id": ["j1"], "attribution": ["planned"]}), jobs,
                          as_of=as_of, fleet=fleet, planned=day)
    assert after.is_empty()
