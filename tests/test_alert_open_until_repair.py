"""A hardware incident stays open until it is repaired, and an alert incident's reason names where the
hardware incident is (an outside evaluator's probe AL, 32 H100 nodes gpu[001-032], racks of 8, leaf02 =
gpu[017-024]).

1. gpu027 logs an EDAC UE and ``Kernel panic - not syncing: Fatal machine check`` at 16:45:10-16:45:12 (its
   last log line); the BMC alert fires at 16:45:40. The operator drains it at 17:06 "DIMM B2 UE - replace",
   and ``SlurmNodeDrained`` (``for: 15m``) fires at 17:21 — 36 min after the last log line, beyond the
   hardware window's floor (16:45:12 + 30 min = 17:15:12) but before the node is back in service at 18:30
   (``marts.incident_repairs.repaired_ts``). The drain alert is about the DIMM incident: one alert incident.
   A repair known to be earlier (17:00) never shrinks the window below the floor: the 17:21 alert is apart.
2. leaf02's links drop at 14:00:01-14:00:03 (the incident's last evidence), the switch alert fires at 14:00:40;
   job 2003 dies at 14:31 while the links are still down (ACTIVE at 14:35, the nodes drained until 14:40 =
   repaired_ts): ``SlurmJobFailed{nodelist="gpu[017-024]"}`` at 14:31:30 (31.5 min after the last evidence,
   a new session) belongs to the leaf incident — here with the hostlist under ``hostlist=`` instead.
3. The reason names the hardware incident's own place: ``rack r02 (gpu[009-016])`` for the rack-scope
   thermal incident whose root is the cooling controller ``crac-row1.mgmt:161``, ``leaf switch leaf02
   (gpu[017-024])`` for the leaf incident, ``gpu027`` for a node's.

Alertmanager webhook payloads are ingested as the pipeline does; hardware incidents and repairs are hand-built
(the columns of marts.hw_incidents / marts.incident_repairs).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from gpusre.models.alerts.clustering import Topology, alert_coverage, cluster_alerts
from gpusre.models.ingest.hostlist import expand_hostlist

from alertmanager_payloads import ingest_alerts

NODES = expand_hostlist("gpu[001-032]")
TOPO = Topology.from_groups(
    racks={"r01": "gpu[001-008]", "r02": "gpu[009-016]", "r03": "gpu[017-024]", "r04": "gpu[025-032]"},
    leaf_switches={"leaf01": "gpu[001-016]", "leaf02": "gpu[017-032]"})
DT = pl.Datetime("us", "UTC")


def t(day: int, hh: int, mm: int, ss: int = 0) -> datetime:
    return datetime(2026, 11, day, hh, mm, ss, tzinfo=UTC)


def _hw(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "component": pl.String, "start_ts": DT,
                                      "end_ts": DT, "nodes": pl.List(pl.String), "scope": pl.String,
                                      "leaf_switch": pl.String})


def _repairs(rows: list[tuple[str, datetime]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"incident_id": pl.String, "repaired_ts": DT}, orient="row")


DIMM = _hw([{"incident_id": "inc-dimm", "component": "host_memory", "start_ts": t(11, 16, 45, 10),
             "end_ts": t(11, 16, 45, 12), "nodes": ["gpu027"], "scope": "node", "leaf_switch": None}])
BMC = ({"alertname": "IPMIMemoryUncorrectable", "instance": "gpu027", "job": "ipmi", "severity": "critical"},
       t(11, 16, 45, 40), t(11, 17, 30))
DRAINED = ({"alertname": "SlurmNodeDrained", "node": "gpu027", "reason": "DIMM B2 UE - replace",
            "job": "slurm-exporter", "severity": "warning"}, t(11, 17, 21), t(11, 18, 31))


def _by_alertname(inc: pl.DataFrame, members: pl.DataFrame, alerts: pl.DataFrame) -> dict[str, str]:
    return dict(members.join(alerts.select("alert_id", "alertname"), on="alert_id")
                .select("alertname", "incident_id").iter_rows())


def test_a_drain_alert_after_the_last_log_line_joins_the_unrepaired_dimm_incident(tmp_path: Path) -> None:
    alerts = ingest_alerts(tmp_path, "2026-11-11", [BMC, DRAINED], NODES)
    inc, members = cluster_alerts(alerts, TOPO, DIMM, repairs=_repairs([("inc-dimm", t(11, 18, 30))]))
    # Window [16:35:10, max(17:15:12, 18:30)]: 17:21 is inside it.
    assert inc.select("n_alerts", "hw_incident_id", "scope").rows() == [(2, "inc-dimm", "node")]
    assert members["hw_incident_id"].to_list() == ["inc-dimm", "inc-dimm"]
    assert inc["root_cause_reason"].to_list() == ["hardware incident inc-dimm (host_memory) on gpu027"]

    # Without a repair time (no node states): the floor, last evidence + 30 min = 17:15:12 < 17:21.
    inc, members = cluster_alerts(alerts, TOPO, DIMM)
    by_name = _by_alertname(inc, members, alerts)
    assert inc.height == 2 and by_name["SlurmNodeDrained"] != by_name["IPMIMemoryUncorrectable"]
    drained = inc.filter(pl.col("incident_id") == by_name["SlurmNodeDrained"]).row(0, named=True)
    assert drained["hw_incident_id"] is None
    # A repair before the floor (17:00) keeps the floor: the window never closes before end + 30 min.
    inc, _ = cluster_alerts(alerts, TOPO, DIMM, repairs=_repairs([("inc-dimm", t(11, 17, 0))]))
    assert inc.height == 2


def test_coverage_uses_the_same_open_window(tmp_path: Path) -> None:
    alerts = ingest_alerts(tmp_path, "2026-11-11", [DRAINED], NODES)
    span = (t(11, 0, 0), t(12, 0, 0))
    repaired = alert_coverage(alerts, DIMM, TOPO, data_span=span, repairs=_repairs([("inc-dimm", t(11, 18, 30))]))
    assert repaired.select("incident_id", "covered", "n_alerts", "repaired_ts").rows() == [
        ("inc-dimm", True, 1, t(11, 18, 30))]
    # Start to repair: 16:45:10 -> 18:30:00 = 6290 s.
    assert repaired["duration_s"].to_list() == [6290.0]
    unrepaired = alert_coverage(alerts, DIMM, TOPO, data_span=span)
    assert unrepaired.select("covered", "n_alerts").rows() == [(False, 0)]


LEAF = _hw([{"incident_id": "inc-leaf", "component": "network_switch", "start_ts": t(10, 14, 0, 1),
             "end_ts": t(10, 14, 0, 3), "nodes": expand_hostlist("gpu[017-024]"), "scope": "leaf_switch",
             "leaf_switch": "leaf02"}])


def test_a_failed_job_alert_while_the_links_are_down_joins_the_leaf_incident(tmp_path: Path) -> None:
    switch = ({"alertname": "IBSwitchDown", "switch": "leaf02", "instance": "ufm01.mgmt:9001", "job": "ufm-exporter",
               "severity": "critical"}, t(10, 14, 0, 40), t(10, 14, 36))
    job = ({"alertname": "SlurmJobFailed", "hostlist": "gpu[017-024]", "job_id": "2003", "job": "slurm-exporter",
            "severity": "warning"}, t(10, 14, 31, 30), t(10, 14, 40))
    alerts = ingest_alerts(tmp_path, "2026-11-10", [switch, job], NODES)
    inc, members = cluster_alerts(alerts, TOPO, LEAF, repairs=_repairs([("inc-leaf", t(10, 14, 40))]))
    # Window [13:50:01, max(14:30:03, 14:40)]: the 14:31:30 hostlist alert is about the leaf incident.
    assert inc.select("n_alerts", "hw_incident_id", "scope", "root_cause_candidate").rows() == [
        (2, "inc-leaf", "leaf_switch", "IBSwitchDown on leaf02")]
    assert inc["root_cause_reason"].to_list() == [
        "hardware incident inc-leaf (network_switch) on leaf switch leaf02 (gpu[017-024])"]
    # Closed at 14:30:03 (no repair known) it stays an incident of its own, on several nodes only a hostlist names.
    inc, members = cluster_alerts(alerts, TOPO, LEAF)
    by_name = _by_alertname(inc, members, alerts)
    assert inc.height == 2
    assert inc.filter(pl.col("incident_id") == by_name["SlurmJobFailed"]).select("scope", "hw_incident_id").rows() == [
        ("nodes", None)]


def test_a_rack_incident_is_named_by_its_rack_not_by_the_cooling_controller(tmp_path: Path) -> None:
    thermal = _hw([{"incident_id": "inc-thermal", "component": "thermal", "start_ts": t(11, 10, 0, 2),
                    "end_ts": t(11, 10, 0, 37), "nodes": expand_hostlist("gpu[009-016]"), "scope": "rack",
                    "leaf_switch": None}])
    crac = ({"alertname": "RackInletTemperatureHigh", "rack": "r02", "instance": "crac-row1.mgmt:161",
             "job": "snmp-cooling", "severity": "critical"}, t(11, 9, 58), t(11, 10, 52))
    gpus = [({"alertname": "DCGMGPUTemperatureHigh", "Hostname": node, "gpu": "0", "severity": "warning"},
             t(11, 10, 0, 30), t(11, 10, 40)) for node in ("gpu009", "gpu010")]
    alerts = ingest_alerts(tmp_path, "2026-11-11", [crac, *gpus], NODES)
    inc, _ = cluster_alerts(alerts, TOPO, thermal)
    assert inc.select("n_alerts", "scope", "hw_incident_id", "root_cause_candidate").rows() == [
        (3, "rack", "inc-thermal", "RackInletTemperatureHigh on crac-row1.mgmt:161")]
    assert inc["root_cause_reason"].to_list() == ["hardware incident inc-thermal (thermal) on rack r02 (gpu[009-016])"]
    # Without a topology the rack is unknown: the incident's own nodes, still never the controller.
    inc, _ = cluster_alerts(alerts, Topology(), thermal)
    assert "hardware incident inc-thermal (thermal) on gpu[009-016]" in inc["root_cause_reason"].to_list()
