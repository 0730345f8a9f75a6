"""The annotation fallback (step 5 of the alert node rule) for alerts whose labels name a service or an
exporter that is no node: a Redfish exporter reporting a node's PSU, a Slurm controller reporting a node.
Hand-made inputs; expected values computed by hand from the rule (models/alerts/nodes.py)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusre.models.alerts.clustering import Topology, alert_marts
from gpusre.models.alerts.nodes import (AlertLocation, NodeMapping, annotation_values_sql, host_names,
                                        label_values_sql, locate, location_sql, node_lists, node_names)
from gpusre.models.sources.alerts.ingest import AlertSettings, build_core_alerts, ingest_alert_files
from gpusre.models.warehouse import connect

RACK = [f"b200-r3-u{i:02d}" for i in range(1, 13)]
#: DCGM's addresses are aliased (cluster.yaml node_aliases); the BMCs' 10.2.3.x are not.
MAPPING = NodeMapping(aliases={f"10.1.3.{30 + i}": f"b200-r3-u{i:02d}" for i in range(1, 13)})
EXPORTER = "redfish-exporter.monitoring.svc:9610"


def _psu(node: str) -> dict[str, str]:
    return {"summary": f"PSU1 on {node} reports AC lost", "description": f"BMC of {node}: PowerSupply PSU1 Critical"}


#: (labels, annotations, expected location) — each by hand from the rule.
CASES: list[tuple[dict[str, str], dict[str, str], AlertLocation]] = [
    # An exporter's service name is no fleet node: the one node its text names.
    ({"alertname": "RedfishPowerSupplyFailed", "instance": EXPORTER, "psu": "PSU1"}, _psu("b200-r3-u01"),
     AlertLocation("b200-r3-u01", None, None)),
    # A BMC address that is no alias: the same fallback (as before).
    ({"alertname": "RedfishPowerSupplyFailed", "instance": "10.2.3.33", "psu": "PSU1"}, _psu("b200-r3-u03"),
     AlertLocation("b200-r3-u03", None, None)),
    # A DCGM address that is an alias: the label names the node, the text is not read.
    ({"alertname": "DCGMNVLinkErrors", "instance": "10.1.3.32:9400"}, {"summary": "NVLink errors on b200-r3-u09"},
     AlertLocation("b200-r3-u02", None, None)),
    # Two fleet nodes named: no node; the exporter stays the target.
    ({"alertname": "IBPeerUnreachable", "instance": EXPORTER},
     {"summary": "b200-r3-u05 cannot reach b200-r3-u06"}, AlertLocation(None, EXPORTER, "instance")),
    # No fleet node named (the exporter itself is down): the exporter stays the target.
    ({"alertname": "RedfishExporterDown", "instance": EXPORTER}, {"summary": "redfish-exporter is down"},
     AlertLocation(None, EXPORTER, "instance")),
    # A switch of its own keeps the alert on the switch, whatever its text says.
    ({"alertname": "UFMPortDown", "instance": "ufm01.mgmt:9001", "switch": "ib-leaf-a3"},
     {"summary": "port 12 to b200-r3-u05 down"}, AlertLocation(None, "ib-leaf-a3", "switch")),
    # A host-local device (a NIC) on a service host: the node of the text, the device kept.
    ({"alertname": "NicDown", "instance": "relay01.svc:9100", "device": "eth0"}, {"summary": "eth0 of b200-r3-u07"},
     AlertLocation("b200-r3-u07", "eth0", "device")),
]


@pytest.mark.parametrize(("labels", "notes", "expected"), CASES)
def test_locate_takes_the_one_node_a_service_alert_names(labels: dict[str, str], notes: dict[str, str],
                                                          expected: AlertLocation) -> None:
    assert locate(labels, MAPPING, RACK, notes) == expected


def test_without_a_node_list_the_text_is_not_read() -> None:
    # Without a node list any host name is a "node": the exporter's own name, not the text's.
    labels, notes, _ = CASES[0]
    assert locate(labels, MAPPING, None, notes) == AlertLocation("redfish-exporter", None, None)


def test_two_pass_sql_agrees_with_the_rule_and_maps_words_only_for_alerts_without_a_node() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE alerts (alert_id BIGINT, labels JSON, annotations JSON)")
    con.executemany("INSERT INTO alerts VALUES (?, ?, ?)",
                    [[i, json.dumps(labels), json.dumps(notes)] for i, (labels, notes, _) in enumerate(CASES)])
    # Pass 1: the label values only, mapped.
    con.execute(f"CREATE TABLE v1 AS {label_values_sql(MAPPING, alerts='alerts', annotations=None)}")
    values = con.sql("SELECT DISTINCT value FROM (SELECT unnest(node_values) AS value FROM v1) "
                     "WHERE value IS NOT NULL AND value <> ''").pl()["value"]

    def mapped(vals: pl.Series) -> pl.DataFrame:
        return pl.DataFrame({"value": vals, "node": node_names(vals, MAPPING, RACK), "host": host_names(vals, MAPPING),
                             "nodes": node_lists(vals, MAPPING, RACK)},
                            schema={"value": pl.String, "node": pl.String, "host": pl.String, "nodes": pl.String})

    names = mapped(values)
    con.register("names1", names.to_arrow())
    # Pass 2: the annotation words of the alerts pass 1 left without a node (and no switch of their own).
    con.execute(f"CREATE TABLE v2 AS {annotation_values_sql(MAPPING, values='v1', alerts='alerts', names='names1')}")
    n_labels = len(MAPPING.node_labels)
    words = dict(con.sql(f"SELECT alert_id, len(node_values) - {n_labels} FROM v2").fetchall())
    # Words read for the exporter and the BMC address (summary + description, distinct, ':' ends a
    # word: PSU1 on b200-r3-u0N reports AC lost BMC of PowerSupply Critical = 10), the two-node and
    # no-node exporters and the NIC's relay; none for the aliased DCGM alert (its label names a node)
    # nor the switch's alert (a target of its own).
    assert words[2] == 0 and words[5] == 0
    assert words[0] == 10 and words[1] == 10
    assert all(words[i] > 0 for i in (3, 4, 6))
    extra = con.sql("SELECT DISTINCT value FROM (SELECT unnest(node_values) AS value FROM v2) "
                    "WHERE value IS NOT NULL AND value <> ''").pl()["value"]
    con.register("names", pl.concat([names, mapped(extra.filter(~extra.is_in(names["value"].implode())))]).to_arrow())
    got = {r[0]: AlertLocation(*r[1:]) for r in con.sql(location_sql(MAPPING, values="v2", names="names")).fetchall()}
    assert got == {i: expected for i, (_, _, expected) in enumerate(CASES)}
    # The one-pass form (every alert's words) gives the same.
    con.execute(f"CREATE TABLE v0 AS {label_values_sql(MAPPING, alerts='alerts')}")
    got0 = {r[0]: AlertLocation(*r[1:]) for r in con.sql(location_sql(MAPPING, values="v0", names="names")).fetchall()}
    assert got0 == got


# -- ingest and incidents: the probe's rack power event, by hand ----------------------------------------

ZERO = "0001-01-01T00:00:00Z"


def _alert(labels: dict[str, str], notes: dict[str, str], starts: str, fp: str) -> dict:
    return {"status": "firing", "labels": labels, "annotations": notes, "startsAt": starts, "endsAt": ZERO,
            "fingerprint": fp}


def test_a_rack_power_event_through_an_exporter_is_one_incident(tmp_path: Path) -> None:
    """Four RedfishPowerSupplyFailed 09:00:10, :13, :16, :19 (3 s apart): two from the exporter's
    service address, two from unaliased BMC addresses, each text naming its node b200-r3-u01..u04.
    All four are on their nodes, and the rack groups them: one incident of 4 alerts on 4 nodes, no
    "service" incident on the exporter."""
    redfish = {"alertname": "RedfishPowerSupplyFailed", "job": "redfish", "psu": "PSU1", "severity": "critical"}
    alerts = [
        _alert({**redfish, "instance": EXPORTER}, _psu("b200-r3-u01"), "2026-11-27T09:00:10Z", "b2b2b2b2b2b2b2b0"),
        _alert({**redfish, "instance": EXPORTER}, _psu("b200-r3-u02"), "2026-11-27T09:00:13Z", "b2b2b2b2b2b2b2b1"),
        _alert({**redfish, "instance": "10.2.3.33"}, _psu("b200-r3-u03"), "2026-11-27T09:00:16Z", "b2b2b2b2b2b2b2b2"),
        _alert({**redfish, "instance": "10.2.3.34"}, _psu("b200-r3-u04"), "2026-11-27T09:00:19Z", "b2b2b2b2b2b2b2b3"),
    ]
    (tmp_path / "landing" / "alerts").mkdir(parents=True)
    (tmp_path / "landing" / "alerts" / "2026-11-27.jsonl").write_text(
        "\n".join(json.dumps({"version": "4", "status": "firing", "receiver": "sre", "alerts": [a]}) for a in alerts)
        + "\n")
    con = connect(tmp_path / "w.duckdb")
    try:
        ingest_alert_files(con, tmp_path / "landing")
        assert build_core_alerts(con, AlertSettings(nodes=MAPPING), RACK)[0] == 4
        core = con.sql("SELECT alert_id, fingerprint, alertname, status, severity, node, target, target_label, "
                       "starts_at, ends_at, CAST(labels AS VARCHAR) AS labels, template_id, n_notifications "
                       "FROM core.alerts ORDER BY starts_at").pl()
    finally:
        con.close()
    assert core["node"].to_list() == ["b200-r3-u01", "b200-r3-u02", "b200-r3-u03", "b200-r3-u04"]
    assert core["target"].to_list() == [None] * 4
    marts = alert_marts(core, topology=Topology.from_groups(racks={"r3": "b200-r3-u[01-12]"}))
    inc = marts.incidents.select("n_alerts", "n_nodes", "nodes", "scope").to_dicts()
    assert inc == [{"n_alerts": 4, "n_nodes": 4, "nodes": ["b200-r3-u01", "b200-r3-u02", "b200-r3-u03", "b200-r3-u04"],
                    "scope": "rack"}]
