"""Alert labels → Slurm node and target: normalization cases, known-node lists, settings, and the
set-based SQL form agreeing with the reference rule."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest
from pydantic import ValidationError

from gpusre.models.alerts.nodes import (
    AlertLocation,
    NodeMapping,
    NodeRewrite,
    host_names,
    label_values_sql,
    locate,
    location_sql,
    node_lists,
    node_name,
    node_names,
    normalize_host,
)

NODES = [f"gpu{i:03d}" for i in range(1, 17)]


@pytest.mark.parametrize(("value", "expected"), [
    ("gpu001", "gpu001"),
    ("gpu001:9100", "gpu001"),
    ("gpu001.cluster.local", "gpu001"),
    ("gpu001.cluster.local:9100", "gpu001"),
    ("GPU001.Cluster.Local.", "gpu001"),          # case, trailing dot of an FQDN
    ("gpu001-bmc", "gpu001"),
    ("gpu001-ipmi:9290", "gpu001"),
    ("gpu001-bmc.mgmt.cluster.local:623", "gpu001"),
    ("bmc-gpu001", "gpu001"),
    ("gpu010-ib", "gpu010"),        # the node's InfiniBand (IPoIB) name in DNS, as a central syslog prints it
    ("gpu010-ib0.ib.cluster.example.com", "gpu010"),
    ("gpu011-eth1", "gpu011"),
    ("http://gpu001:9400/metrics", "gpu001"),     # blackbox / URL-style instance
    ("https://user@gpu001.example.org/health", "gpu001"),
    ("10.1.2.3:9100", "10.1.2.3"),                # addresses stay whole
    ("[fe80::1]:9100", "fe80::1"),
    ("fe80::1", "fe80::1"),
    ("  ", None),
])
def test_normalize_host(value: str, expected: str | None) -> None:
    assert normalize_host(value) == expected


def test_node_name_needs_a_known_node_when_there_is_a_list() -> None:
    known = {n.lower(): n for n in ["GPU001", "gpu002"]}
    assert node_name("gpu001.cluster.local:9100", known=known) == "GPU001"  # spelled as the list spells it
    assert node_name("gpu002-bmc", known=known) == "gpu002"
    assert node_name("gpu099", known=known) is None
    assert node_name("gpu099") == "gpu099"        # no list: any host name
    assert node_name("10.1.2.3:9100") is None     # an address is never a node name
    assert node_name("localhost:9090") is None


def test_locate_takes_the_first_label_that_names_a_node() -> None:
    # dcgm-exporter behind a Kubernetes service: instance is a pod address, Hostname the node.
    dcgm = {"alertname": "GpuXid", "instance": "10.244.1.7:9400", "Hostname": "gpu007", "gpu": "3",
            "device": "nvidia3"}
    assert locate(dcgm, known_nodes=NODES) == AlertLocation("gpu007", "nvidia3", "device")
    # node label wins over an instance that is not a node
    assert locate({"instance": "prometheus:9090", "node": "gpu002"}, known_nodes=NODES).node == "gpu002"
    assert locate({"exported_instance": "gpu003.cluster.local"}, known_nodes=NODES).node == "gpu003"


def test_switch_storage_and_unknown_hosts_keep_a_target() -> None:
    assert locate({"instance": "leaf07:9100", "switch": "leaf07"}, known_nodes=NODES) == \
        AlertLocation(None, "leaf07", "switch")
    assert locate({"instance": "mds01:9169", "filesystem": "lustre1"}, known_nodes=NODES) == \
        AlertLocation(None, "lustre1", "filesystem")
    assert locate({"instance": "gpu004:9100", "device": "/dev/nvme0n1", "mountpoint": "/scratch"},
                  known_nodes=NODES) == AlertLocation("gpu004", "/dev/nvme0n1", "device")
    assert locate({"instance": "login01.cluster.local:9100"}, known_nodes=NODES) == \
        AlertLocation(None, "login01.cluster.local:9100", "instance")
    assert locate({"alertname": "Watchdog"}, known_nodes=NODES) == AlertLocation(None, None, None)


def test_a_device_of_a_host_that_is_no_node_is_qualified_by_the_host() -> None:
    # Two hosts outside the node list, both with an eth0: two targets, not one.
    assert locate({"instance": "10.0.0.21:9100", "device": "eth0"}, known_nodes=NODES) == \
        AlertLocation(None, "10.0.0.21/eth0", "device")
    assert locate({"instance": "10.0.0.35:9100", "device": "eth0"}, known_nodes=NODES) == \
        AlertLocation(None, "10.0.0.35/eth0", "device")
    assert locate({"instance": "login01.cluster.local:9100", "mountpoint": "/scratch"}, known_nodes=NODES) == \
        AlertLocation(None, "login01/scratch", "mountpoint")
    # A network file system's device names the file system all clients share: kept as it is.
    assert locate({"instance": "10.0.0.22:9100", "device": "10.0.9.1@o2ib:/scratch"}, known_nodes=NODES) == \
        AlertLocation(None, "10.0.9.1@o2ib:/scratch", "device")
    # On a node the node says where; a fabric-wide label is never qualified.
    assert locate({"instance": "gpu004:9100", "device": "eth0"}, known_nodes=NODES).target == "eth0"
    assert locate({"instance": "ufm01:9001", "switch": "leaf01"}, known_nodes=NODES).target == "leaf01"
    assert locate({"instance": "10.0.0.21:9100", "device": "eth0"}, NodeMapping(host_local_labels=[]),
                  known_nodes=NODES).target == "eth0"


def test_settings_are_configurable_and_validated() -> None:
    mapping = NodeMapping(node_labels=["host"], target_labels=[], strip_domain=False,
                          rewrites=[NodeRewrite(pattern=r"^(node\d+)-ib\d$", replacement=r"\1")])
    assert locate({"instance": "gpu001:9100", "host": "node12-ib0"}, mapping) == AlertLocation("node12", None, None)
    assert normalize_host("node12.ib.local", mapping) == "node12.ib.local"
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        NodeRewrite(pattern="(unclosed")
    with pytest.raises(ValidationError):
        NodeMapping(node_labels=[])
    with pytest.raises(ValidationError):
        NodeMapping.model_validate({"node_label": ["instance"]})  # typo: unknown keys are errors


def test_node_names_maps_each_distinct_value_once() -> None:
    values = pl.Series(["gpu001:9100", None, "gpu001:9100", "10.0.0.1:9100", "gpu002-bmc"])
    assert node_names(values, known_nodes=NODES).to_list() == ["gpu001", None, "gpu001", None, "gpu002"]


LABEL_SETS = [
    {"alertname": "A", "instance": "gpu001.cluster.local:9100"},
    {"alertname": "A", "instance": "10.244.1.7:9400", "Hostname": "gpu007", "device": "nvidia3"},
    {"alertname": "A", "instance": "leaf07:9100", "switch": "leaf07"},
    {"alertname": "A", "instance": "login01:9100"},
    {"alertname": "A", "instance": "prometheus:9090", "node": "gpu002-bmc"},
    {"alertname": "A", "job": "blackbox"},
    {"alertname": "A", "host": "gpu099", "hostname": "gpu009.cluster.local"},
    {"alertname": "A", "instance": "gpu016-ipmi:9290", "filesystem": "lustre1", "device": "sda"},
    {"alertname": "A", "instance": "", "node": "gpu005", "switch": ""},   # empty values are absent
    {"alertname": "A", "instance": "10.0.0.21:9100", "device": "eth0"},
    {"alertname": "A", "instance": "login01.cluster.local:9100", "mountpoint": "/scratch"},
    {"alertname": "A", "instance": "10.0.0.22:9100", "device": "10.0.9.1@o2ib:/scratch"},
    # Kubernetes dcgm-exporter: the node label, not the pod (Hostname) nor its address (instance).
    {"alertname": "A", "kubernetes_node": "gpu010", "Hostname": "nvidia-dcgm-exporter-7x9kq",
     "instance": "10.244.3.17:9400", "gpu": "5"},
    # Slurm hostlists: several nodes (a target of its own), one node, none of them a node.
    {"alertname": "A", "nodelist": "gpu[003-005]", "job": "slurm-job-exporter"},
    {"alertname": "A", "nodelist": "gpu[007,099]", "instance": "slurm-exporter:8080"},
    {"alertname": "A", "nodelist": "cpu[01-02]"},
    # A switch or OST watched by a server: without a node list the server is no node.
    {"alertname": "A", "switch": "leaf03", "instance": "ufm01.mgmt.example.com:9090"},
    {"alertname": "A", "ost": "scratch-OST0007", "instance": "oss04.example.com:9169", "node": "gpu002"},
]


#: (labels, annotations): step 5 (a node named only in the annotations) and aliases.
ANNOTATED: list[tuple[dict[str, str], dict[str, str]]] = [
    ({"alertname": "NHCCheckFailed", "job": "nhc"}, {"summary": "NHC check_nv_healthmon failed on gpu005"}),
    ({"alertname": "A", "instance": "10.9.9.9:9100"}, {"description": "GPU lost on GPU006.cluster.local:9100."}),
    ({"alertname": "A"}, {"summary": "gpu005 and gpu006 disagree"}),                   # two nodes: none
    ({"alertname": "A"}, {"summary": "gpu005 restarted", "message": "gpu005-bmc says so"}),  # one node, twice
    ({"alertname": "A", "node": "gpu001"}, {"summary": "after gpu005 failed"}),           # a label wins
    ({"alertname": "A", "nodelist": "gpu[001-002]"}, {"summary": "on gpu005"}),           # several from a label
    ({"alertname": "A", "device": "eth0"}, {"summary": "link down on 10.0.0.7"}),         # an alias in the text
    ({"alertname": "A", "instance": "10.0.0.7:9100", "device": "mlx5_0"}, {}),           # an alias in a label
    ({"alertname": "A"}, {"summary": "gpu0055 and xgpu005 and 5.5"}),                    # no whole word
    # A server that is no node (a service, an exporter) reports on the node its text names; a
    # switch of its own keeps the alert on the switch, whatever its text says.
    ({"alertname": "A", "instance": "slurmctl01:9341"}, {"summary": "slurmctld lost gpu005"}),
    ({"alertname": "A", "switch": "leaf03"}, {"summary": "port 12 to gpu005 down"}),
    ({"alertname": "A", "instance": "http://[fe80::1]:9100/metrics"}, {"summary": "gpu005 down"}),
]


@pytest.mark.parametrize("known", [NODES, []])
def test_sql_form_agrees_with_the_rule(known: list[str]) -> None:
    mapping = NodeMapping(aliases={"10.0.0.7": "gpu007"})
    con = duckdb.connect()
    sets = [(labels, None) for labels in LABEL_SETS] + ANNOTATED
    con.execute("CREATE TABLE alerts (alert_id BIGINT, labels JSON, annotations JSON)")
    con.executemany("INSERT INTO alerts VALUES (?, ?, ?)",
                    [[i, json.dumps(labels), None if notes is None else json.dumps(notes)]
                     for i, (labels, notes) in enumerate(sets)])
    con.execute(f"CREATE TABLE label_values AS {label_values_sql(mapping, alerts='alerts')}")
    values = con.sql("SELECT DISTINCT value FROM (SELECT unnest(node_values) AS value FROM label_values) "
                     "WHERE value IS NOT NULL AND value <> ''").pl()["value"]
    names = pl.DataFrame({"value": values, "node": node_names(values, mapping, known),
                          "host": host_names(values, mapping), "nodes": node_lists(values, mapping, known)}).to_arrow()
    con.register("names", names)
    got = {r[0]: AlertLocation(*r[1:])
           for r in con.sql(location_sql(mapping, values="label_values", names="names",
                                         without_node_list=not known)).fetchall()}
    assert got == {i: locate(labels, mapping, known, notes) for i, (labels, notes) in enumerate(sets)}
    if known:  # the step-5 cases by hand
        assert [got[len(LABEL_SETS) + i].node for i in range(len(ANNOTATED))] == [
            "gpu005", "gpu006", None, "gpu005", "gpu001", None, "gpu007", "gpu007", None, "gpu005", None, "gpu005"]
        assert got[len(LABEL_SETS) + 5] == AlertLocation(None, "gpu[001-002]", "nodelist")
    else:  # without a node list no annotation word is a node
        assert [got[len(LABEL_SETS) + i].node for i in (0, 1, 2, 3, 6, 8)] == [None] * 6
