"""NVLink domains are a cluster.yaml fact (``nvlink_domains``), not the rack (gpusre.models.failures.hw_incidents,
``nvlink_domain_wide`` in catalog/component_classes.csv).

On an 8-GPU HGX / DGX node the NVSwitches sit on the node's own baseboard: each node is its own NVLink domain,
and Xid 74s on several nodes of one rack within a minute are unrelated node faults (an outside probe on an HGX
B200 cluster got one "Rack NVLink domain failure" from four of them). On a GB200 NVL72 the domain is the rack; on
an NVL36x2 it spans two racks. So NVLink bursts group by ``nvlink_domains`` (scope ``rack``, as before on NVL72);
without it NVLink faults stay per node, while power and thermal keep grouping by ``racks``.

Also here: the recommended action of a leaf-switch incident points at the switch, not at one node's link
(gpusre.reports.kit.labels.incident_action).

Expected values are worked out by hand from the rules (RACK_SIMULTANEITY 60 s, RACK_MIN_NODES 3).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gpusre.models.failures.hw_incidents import incident_id, merge_incidents
from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config
from gpusre.reports.kit.labels import incident_action, incident_kind
from hand_landing import query_rows, run_hand_landing
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
XID74 = "NVRM: Xid (PCI:0000:18:00): 74, pid=1912, name=python, NVLink: fatal error detected on link 4(0x0, 0x0, 0x10000, 0x0)"
XID149 = ("NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 "
          "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
SXID = "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"
PSU = "ipmievd[2214]: Power Supply sensor PS1 Status, Power Supply AC lost Asserted"
COLS = ("component", "scope", "nodes", "n_events")

# HGX B200: two racks of four 8-GPU nodes; each node is its own NVLink domain (no nvlink_domains).
HGX_RACKS = {"r1": "hgx-r1-u[01-04]", "r2": "hgx-r2-u[01-04]"}
#: The probe's timing: Xid 74 on four nodes of rack r1 at 0, 35, 50, 110 s (gaps 35, 15, 60 s <= 60 s, no
#: recovery line: all four out at 110 s, >= 3 — under the old rack-wide rule one rack incident).
HGX_XID74 = [(0 * S, "hgx-r1-u01", XID74), (35 * S, "hgx-r1-u02", XID74), (50 * S, "hgx-r1-u03", XID74),
             (110 * S, "hgx-r1-u04", XID74)]

# GB200 NVL36x2: one NVLink domain spans racks r1 and r2 (9 compute trays each) and their switch tray.
NVL36_RACKS = {"r1": "nvl-r1-ct[01-09]", "r2": "nvl-r2-ct[01-09]"}
NVL36_DOMAINS = {"nvl36x2-a": "nvl-r[1-2]-ct[01-09],nvl-a-nvsw01"}


def test_hgx_nvlink_faults_of_one_rack_at_once_stay_per_node_with_racks() -> None:
    # No nvlink_domains: four node incidents (nvlink), whatever racks says.
    incidents, membership = merge_incidents(events_from_lines(HGX_XID74), racks=HGX_RACKS)
    assert incidents.select(COLS).rows() == [("nvlink", "node", [f"hgx-r1-u0{i}"], 1) for i in range(1, 5)]
    assert membership.height == 4


def test_power_still_groups_by_rack_beside_per_node_nvlink() -> None:
    # PSU AC lost on three r2 nodes at 0, 5, 10 s (gaps <= 60 s, 3 out at once) -> one host_power rack
    # incident; the four r1 Xid 74s beside it stay four node incidents: 5 incidents.
    psu = [(5 * k * S, f"hgx-r2-u0{k + 1}", PSU) for k in range(3)]
    incidents, _ = merge_incidents(events_from_lines(psu + HGX_XID74), racks=HGX_RACKS)
    assert sorted(incidents.select(COLS).rows()) == sorted(
        [("host_power", "rack", ["hgx-r2-u01", "hgx-r2-u02", "hgx-r2-u03"], 3)]
        + [("nvlink", "node", [f"hgx-r1-u0{i}"], 1) for i in range(1, 5)])


def test_an_hgx_site_may_list_each_node_as_its_own_domain() -> None:
    # Listing every node as a domain of one host is the same as listing none: no domain reaches 3 hosts.
    domains = {f"hgx-r1-u0{i}": f"hgx-r1-u0{i}" for i in range(1, 5)}
    incidents, _ = merge_incidents(events_from_lines(HGX_XID74), racks=HGX_RACKS, nvlink_domains=domains)
    assert incidents["scope"].to_list() == ["node"] * 4


def test_an_nvl36x2_domain_spans_two_racks() -> None:
    # Xid 149 on r1-ct01, r1-ct02, r2-ct01, r2-ct02 at 0, 2, 4, 6 s. By domain: 4 hosts of nvl36x2-a out at
    # 6 s -> one nvlink incident (scope rack), id of the first tray's own incident. By rack alone each rack
    # has 2 (< 3), and NVLink is not rack-wide anyway: 4 node incidents.
    trays = ["nvl-r1-ct01", "nvl-r1-ct02", "nvl-r2-ct01", "nvl-r2-ct02"]
    lines = [(2 * k * S, tray, XID149) for k, tray in enumerate(trays)]
    incidents, _ = merge_incidents(events_from_lines(lines), racks=NVL36_RACKS, nvlink_domains=NVL36_DOMAINS)
    assert incidents.select(COLS).rows() == [("nvlink", "rack", trays, 4)]
    assert incidents["incident_id"].to_list() == [incident_id("nvlink", T0, "nvl-r1-ct01")]
    per_node, _ = merge_incidents(events_from_lines(lines), racks=NVL36_RACKS)
    assert per_node["scope"].to_list() == ["node"] * 4


def test_a_switch_tray_listed_only_in_its_domain_roots_the_incident() -> None:
    # The switch tray (in no rack, not a node) logs a fatal SXid at 0 s, three trays of both racks Xid 149 at
    # 3, 6, 9 s: one nvswitch incident of 4 hosts with the switch tray's own id.
    switch = "nvl-a-nvsw01"
    lines = [(0 * S, switch, SXID), (3 * S, "nvl-r1-ct05", XID149), (6 * S, "nvl-r2-ct05", XID149),
             (9 * S, "nvl-r2-ct09", XID149)]
    incidents, _ = merge_incidents(events_from_lines(lines), racks=NVL36_RACKS, nvlink_domains=NVL36_DOMAINS)
    assert incidents.select(COLS).rows() == [
        ("nvswitch", "rack", sorted([switch, "nvl-r1-ct05", "nvl-r2-ct05", "nvl-r2-ct09"]), 4)]
    assert incidents["incident_id"].to_list() == [incident_id("nvswitch", T0, switch)]


_NVL36_YAML = """cluster: nvl
nodes: "nvl-r[1-2]-ct[01-09]"
gpus_per_node: 4
racks: {r1: "nvl-r1-ct[01-09]", r2: "nvl-r2-ct[01-09]"}
"""


def test_cluster_yaml_nvlink_domains_may_name_switch_trays_outside_nodes() -> None:
    config = parse_cluster_config(_NVL36_YAML + 'nvlink_domains: {nvl36x2-a: "nvl-r[1-2]-ct[01-09],nvl-a-nvsw01"}\n')
    assert config.nvlink_domains == {"nvl36x2-a": "nvl-r[1-2]-ct[01-09],nvl-a-nvsw01"}
    assert parse_cluster_config(_NVL36_YAML).nvlink_domains == {}  # optional: HGX sites list none


@pytest.mark.parametrize(("extra", "error"), [
    ('nvlink_domains: {a: "nvl-r1-ct[01-"}\n',
     "cluster.yaml: nvlink_domains: a: 'nvl-r1-ct[01-': unbalanced '[' in hostlist 'nvl-r1-ct[01-'"),
    ('nvlink_domains: {a: "nvl-r1-ct[01-09]", b: "nvl-r1-ct09,nvl-r2-ct[01-08]"}\n',
     "cluster.yaml: nvlink_domains: host nvl-r1-ct09 is in two NVLink domains: a and b"),
    ('nvlink_domains: {"": "nvl-r1-ct01"}\n', "cluster.yaml: nvlink_domains: an NVLink domain needs a name"),
    ('nvlink_domains: ["nvl-r1-ct[01-09]"]\n', "cluster.yaml: nvlink_domains: Input should be a valid dictionary"),
    ("nvlink_domains: {a: 3}\n", "cluster.yaml: nvlink_domains.a: Input should be a valid string"),
])
def test_cluster_yaml_nvlink_domain_errors_are_one_line(extra: str, error: str) -> None:
    with pytest.raises(ClusterConfigError) as info:
        parse_cluster_config(_NVL36_YAML + extra)
    assert str(info.value) == error


@pytest.mark.parametrize(("component", "scope", "catalog_action", "action"), [
    # A leaf switch's outage: the switch (as a rack power loss names the PDU), not the catalog's CHECK_LINK.
    ("network_switch", "leaf_switch", "CHECK_LINK",
     "Check the leaf switch (power, management state, uplinks), not one node's link"),
    ("interconnect_switch", "leaf_switch", None,  # an operator label over a leaf incident: still the switch
     "Check the leaf switch (power, management state, uplinks), not one node's link"),
    ("network_switch", "fabric", "CHECK_LINK",
     "Check the spine / core switches and the subnet manager above the leaf switches"),
    ("host_power", "rack", "DRAIN_NODE", "Check the rack's PDU / breaker and power feed (not one node's power supply)"),
    ("nvlink", "rack", "RESTART_BM", "Check the NVLink domain's NVSwitch trays and Fabric Manager, not one compute tray"),
    ("network", "node", "CHECK_LINK", "Check the network link"),  # one node's link: the catalog's action
    ("nvlink", "node", "RESTART_BM", "Reboot the node"),
])
def test_the_incident_action_points_at_what_its_scope_shares(component: str, scope: str, catalog_action: str | None,
                                                             action: str) -> None:
    assert incident_action(catalog_action, component, scope) == action


def test_an_nvlink_domain_incident_is_not_called_a_rack_failure() -> None:
    assert incident_kind("nvswitch", "rack") == "NVLink domain failure"
    assert incident_kind("nvlink", "node") == "NVLink/NVSwitch failure"


_HGX_YAML = """cluster: hgx
timezone: UTC
nodes: "hgx-r[1-2]-u[01-04]"
gpus_per_node: 8
gpu_type: b200
racks: {r1: "hgx-r1-u[01-04]", r2: "hgx-r2-u[01-04]"}
"""
_SACCT_HEAD = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
               "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def test_an_hgx_rack_through_the_pipeline(tmp_path: Path) -> None:
    """One day, 2026-12-01, 8 HGX B200 nodes in racks r1, r2 (no nvlink_domains):

    - 09:00:00, :05, :10 PSU AC lost on hgx-r2-u01..u03 -> one host_power rack incident (3 nodes);
    - 14:00:00, 14:00:35, 14:00:50, 14:01:50 Xid 74 on hgx-r1-u01..u04 -> four nvlink node incidents.
    MTBF (over the accounting span: job 9001 runs 00:00-23:59) counts the 4 NVLink failures, not 1 rack
    incident, and 5 failures in all.
    """
    syslog = ["Dec  1 00:00:00 hgx-r1-u01 systemd[1]: Started Session 1 of user root."]
    syslog += [f"Dec  1 09:00:{5 * k:02d} hgx-r2-u0{k + 1} {PSU}" for k in range(3)]
    syslog += [f"Dec  1 14:0{int(at.total_seconds()) // 60}:{int(at.total_seconds()) % 60:02d} {node} kernel: "
               f"[100.{i:06d}] {msg}" for i, (at, node, msg) in enumerate(HGX_XID74)]
    syslog += ["Dec  1 23:59:59 hgx-r1-u01 systemd[1]: Started Session 2 of user root."]
    sacct = "\n".join([_SACCT_HEAD,
                       "9001|9001|run9001|alice|1001|alice|ml|b200|normal|COMPLETED|0:0|2026-12-01T00:00:00|"
                       "2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T23:59:00|23:59:00|1-00:00:00|8|896|"
                       "cpu=896,gres/gpu=64,node=8|hgx-r[1-2]-u[01-04]|"]) + "\n"
    wh = run_hand_landing(tmp_path, {"cluster.yaml": _HGX_YAML, "sacct/sacct_2026-12-01.psv": sacct,
                                     "syslog/2026-12-01/central.log": "\n".join(syslog) + "\n"})
    snap = wh.with_name("gpusre.snapshot.duckdb")
    incidents = query_rows(snap, "SELECT component, scope, len(nodes), strftime(start_ts, '%H:%M:%S') "
                                 "FROM marts.hw_incidents ORDER BY start_ts")
    assert incidents == [("host_power", "rack", 3, "09:00:00"), ("nvlink", "node", 1, "14:00:00"),
                         ("nvlink", "node", 1, "14:00:35"), ("nvlink", "node", 1, "14:00:50"),
                         ("nvlink", "node", 1, "14:01:50")]
    mtbf = dict(query_rows(snap, "SELECT component, failures FROM marts.mtbf WHERE period_type = 'all' "
                                 "AND scope IN ('cluster', 'component_class') AND component IN ('all', 'nvlink')"))
    assert mtbf == {"all": 5, "nvlink": 4}
