"""An NVLink domain failing is one rack-scope incident (gpusre.models.failures.hw_incidents, ``nvlink_domain_wide``
in catalog/component_classes.csv, cluster.yaml ``nvlink_domains``), and the marts built on incidents count it once.

On a GB200 NVL72 the NVLink domain is the rack (the site lists each rack under ``nvlink_domains`` too: the
migration for NVL72 sites since NVLink stopped being rack-wide for every system): an NVSwitch tray's fatal SXid takes the NVLink of every compute
tray down within seconds, and each tray logs its own fatal Xid 149. An SRE counts one incident (the switch's),
not one per tray. Hand-made inputs: 4 racks of 6 compute trays with 4 GPUs each (``nvl-r<k>-ct0<1-6>``); rack
r2 lists its NVSwitch tray ``nvl-r2-nvsw01``, which is not a Slurm node (no GPUs, no jobs). Expected values are
worked out by hand from the rules (RACK_SIMULTANEITY 60 s, RACK_MIN_NODES 3; lost work of a job killed after
more than a checkpoint interval = GPUs x 0.5 h, README "Lost GPU-hours").
"""

from __future__ import annotations

import csv
from datetime import timedelta
from importlib import resources
from pathlib import Path

from gpusre.models.component_classes import nvlink_domain_components, rack_wide_components
from gpusre.models.failures.hw_incidents import NVLINK_DOMAIN_CLASSES, RACK_CLASSES, incident_id, merge_incidents
from hand_landing import query_rows, run_hand_landing
from node_event_lines import T0, events_from_lines

S = timedelta(seconds=1)
M = timedelta(minutes=1)
SXID = "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up"
SXID_DETAIL = "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Severity 1 Engine instance 48 Sub-engine instance 00"
XID149 = ("NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 09 "
          "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")
XID154 = "NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)"
XID74 = "NVRM: Xid (PCI:0000:18:00): 74, pid=1912, name=python, NVLink: fatal error detected on link 4(0x0, 0x0, 0x10000, 0x0)"
SWITCH = "nvl-r2-nvsw01"
RACKS = {f"r{k}": f"nvl-r{k}-ct[01-06]" for k in range(1, 5)} | {"r2": f"nvl-r2-ct[01-06],{SWITCH}"}
#: On an NVL72 each rack is one NVLink domain.
DOMAINS = dict(RACKS)
COLS = ("component", "scope", "nodes", "n_events")


def _tray(rack: int, i: int) -> str:
    return f"nvl-r{rack}-ct{i:02d}"


def _rack_burst(at: timedelta = 0 * S, switch: bool = True) -> list[tuple[timedelta, str, str]]:
    """The switch tray's SXid (with its continuation line) at ``at``, then every r2 tray's Xid 149 + 154
    2, 4, ... 12 s later."""
    lines = [(at, SWITCH, SXID), (at, SWITCH, SXID_DETAIL)] if switch else []
    for i in range(1, 7):
        lines += [(at + 2 * i * S, _tray(2, i), XID149), (at + 2 * i * S, _tray(2, i), XID154)]
    return lines


def test_the_rack_wide_classes_are_the_catalogs_with_an_example_each() -> None:
    """The rack and NVLink-domain rules are data: ``rack_wide`` / ``nvlink_domain_wide`` rows of
    component_classes.csv, each with its reason in the note. NVLink is not rack-wide (HGX: per node)."""
    assert RACK_CLASSES == rack_wide_components() == {"thermal": ("thermal",), "power": ("host_power",)}
    assert NVLINK_DOMAIN_CLASSES == nvlink_domain_components() == {"nvlink": ("nvlink", "nvswitch")}
    with resources.files("gpusre.models.catalog").joinpath("component_classes.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    for column in ("rack_wide", "nvlink_domain_wide"):
        flagged = [r for r in rows if r[column] == "true"]
        assert flagged and all(f"{column}:" in r["note"] for r in flagged)


def test_a_rack_nvlink_domain_failure_is_one_rack_incident_rooted_at_the_switch_tray() -> None:
    # SXid on the switch tray at 0 s, the 6 trays' Xid 149 at 2..12 s (gaps 2 s <= 60 s; no NVLink recovery
    # line, so all 7 hosts are out at 12 s >= 3) -> one rack incident. The SXid is the earliest evidence and
    # nvswitch is rack-wide for nvlink -> component nvswitch, id = the switch tray's own incident's id.
    # Failure events: SXid (its detail line is informational) + 6 x Xid 149 = 7; each tray's Xid 154 (Drain and
    # Reset, sympathetic: no failure) joins its GPU's incident as a member (rule 4r): 7 + 6 = 13 events.
    # An independent Xid 149 on r3-ct02 10 min later stays a node incident (its 149 + its 154 = 2 events).
    lines = _rack_burst() + [(10 * M, _tray(3, 2), XID149), (10 * M, _tray(3, 2), XID154)]
    incidents, membership = merge_incidents(events_from_lines(lines), racks=RACKS, nvlink_domains=DOMAINS)
    assert incidents.select(*COLS, "component_class").rows() == [
        ("nvswitch", "rack", sorted([_tray(2, i) for i in range(1, 7)] + [SWITCH]), 13, "nvlink"),
        ("nvlink", "node", [_tray(3, 2)], 2, "nvlink")]
    assert incidents["incident_id"][0] == incident_id("nvswitch", T0, SWITCH)
    alone, _ = merge_incidents(events_from_lines(lines[:2]), racks=RACKS, nvlink_domains=DOMAINS)
    assert alone["incident_id"].to_list() == [incidents["incident_id"][0]]
    assert membership.height == 15  # 13 + 2
    # Without nvlink_domains (racks alone, or nothing): one incident per host (the switch tray's and each
    # tray's) + r3-ct02's = 8.
    assert merge_incidents(events_from_lines(lines))[0]["scope"].to_list() == ["node"] * 8
    assert merge_incidents(events_from_lines(lines), racks=RACKS)[0]["scope"].to_list() == ["node"] * 8


def test_without_the_switch_tray_the_rack_incident_is_named_nvlink() -> None:
    # The trays' Xids alone (the switch tray logs nothing, or racks does not list it): rack incident, nvlink,
    # id of the first tray's own incident (nvl-r2-ct01 at 2 s); 6 Xid 149 + each tray's Xid 154 = 12 events.
    incidents, _ = merge_incidents(events_from_lines(_rack_burst(switch=False)), nvlink_domains=DOMAINS)
    assert incidents.select(COLS).rows() == [("nvlink", "rack", [_tray(2, i) for i in range(1, 7)], 12)]
    assert incidents["incident_id"].to_list() == [incident_id("nvlink", T0 + 2 * S, _tray(2, 1))]
    # The switch tray outside every domain: its SXid stays its own node incident beside the domain's one.
    other_domains = DOMAINS | {"r2": "nvl-r2-ct[01-06]"}
    split, _ = merge_incidents(events_from_lines(_rack_burst()), racks=RACKS, nvlink_domains=other_domains)
    assert split.select("component", "scope", "nodes").rows() == [
        ("nvswitch", "node", [SWITCH]), ("nvlink", "rack", [_tray(2, i) for i in range(1, 7)])]


def test_nvlink_faults_of_one_domain_at_once_are_one_incident_and_per_node_without_domains() -> None:
    # Three trays of r1 log Xid 74 at 0, 20, 40 s. With r1 an NVLink domain: one incident (nvlink, scope rack).
    # Two trays at once (< RACK_MIN_NODES), or three trays 2 min apart (gaps > 60 s), stay per node; so do
    # 2 + 2 trays of two domains. With racks alone (HGX: the NVSwitches are on each node's baseboard) the
    # three stay three node incidents (tests/test_nvlink_domains.py has the HGX cases).
    three = [(20 * k * S, _tray(1, k + 1), XID74) for k in range(3)]
    assert merge_incidents(events_from_lines(three), racks=RACKS, nvlink_domains=DOMAINS)[0].select(COLS).rows() == [
        ("nvlink", "rack", [_tray(1, k) for k in (1, 2, 3)], 3)]
    assert merge_incidents(events_from_lines(three), racks=RACKS)[0]["scope"].to_list() == ["node"] * 3
    assert merge_incidents(events_from_lines(three[:2]), nvlink_domains=DOMAINS)[0]["scope"].to_list() == ["node"] * 2
    apart = [(2 * k * M, _tray(1, k + 1), XID74) for k in range(3)]
    assert merge_incidents(events_from_lines(apart), nvlink_domains=DOMAINS)[0]["scope"].to_list() == ["node"] * 3
    two_racks = [(k * S, _tray(1 + k % 2, 1 + k // 2), XID74) for k in range(4)]
    assert merge_incidents(events_from_lines(two_racks), nvlink_domains=DOMAINS)[0]["scope"].to_list() == ["node"] * 4


_CLUSTER = """cluster: nvl
timezone: UTC
nodes: "nvl-r[1-4]-ct[01-06]"
gpus_per_node: 4
gpu_type: gb200
racks: {r1: "nvl-r1-ct[01-06]", r2: "nvl-r2-ct[01-06],nvl-r2-nvsw01", r3: "nvl-r3-ct[01-06]", r4: "nvl-r4-ct[01-06]"}
nvlink_domains: {r1: "nvl-r1-ct[01-06]", r2: "nvl-r2-ct[01-06],nvl-r2-nvsw01", r3: "nvl-r3-ct[01-06]",
                 r4: "nvl-r4-ct[01-06]"}
"""
_SACCT_HEAD = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
               "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def _job(job: int, state: str, start: str, end: str, elapsed: str, nodes: int, hosts: str) -> str:
    gpus = 4 * nodes
    # (a name of its own per job: the same user and name within 6 h would read as a resubmission)
    return (f"{job}|{job}|run{job}|alice|1001|alice|ml|gb200|normal|{state}|1:0|2026-12-01T{start}|2026-12-01T{start}|"
            f"2026-12-01T{start}|2026-12-01T{end}|{elapsed}|1-00:00:00|{nodes}|{72 * nodes}|"
            f"cpu={72 * nodes},gres/gpu={gpus},node={nodes}|{hosts}|")


def test_a_rack_nvlink_failure_through_the_pipeline(tmp_path: Path) -> None:
    """One day, 2026-12-01, 24 trays x 4 GPUs:

    - 10:00:00 SXid on nvl-r2-nvsw01 (racks and nvlink_domains list it under r2, nodes does not), 10:00:02-10:00:12 Xid 149 on
      each r2 tray; job 9001 (r2 ct[01-06], 24 GPUs, 08:00-10:00:30) FAILED -> one nvswitch rack incident,
      9001 charged to it, lost 24 x 0.5 = 12.0 GPU-h split over its 6 trays: 2.0 each.
    - 15:00 Xid 149 on nvl-r3-ct02; job 9002 (r3 ct[01-02], 8 GPUs, 13:00-15:00:30) FAILED -> a node
      incident, 8 x 0.5 = 4.0 GPU-h on ct02 alone.
    - 18:00 SXid on nvl-r4-nvsw01, a host in no rack or domain and not a node: its own incident in hw_incidents (3),
      not a failure of the fleet (MTBF: 2), and never a node_hardware_loss row (it has no GPUs).
    """
    syslog = ["Dec  1 00:00:00 nvl-r1-ct01 systemd[1]: Started Session 1 of user root.",
              f"Dec  1 10:00:00 {SWITCH} kernel: [100.000000] {SXID}",
              f"Dec  1 10:00:00 {SWITCH} kernel: [100.000001] {SXID_DETAIL}"]
    for i in range(1, 7):
        syslog += [f"Dec  1 10:00:{2 * i:02d} {_tray(2, i)} kernel: [100.{i:06d}] {XID149}",
                   f"Dec  1 10:00:{2 * i:02d} {_tray(2, i)} kernel: [100.{i:06d}] {XID154}"]
    syslog += [f"Dec  1 15:00:00 {_tray(3, 2)} kernel: [200.000000] {XID149}",
               f"Dec  1 18:00:00 nvl-r4-nvsw01 kernel: [300.000000] {SXID}",
               "Dec  1 23:59:59 nvl-r1-ct01 systemd[1]: Started Session 2 of user root."]
    sacct = "\n".join([_SACCT_HEAD,
                       _job(9001, "FAILED", "08:00:00", "10:00:30", "02:00:30", 6, "nvl-r2-ct[01-06]"),
                       _job(9002, "FAILED", "13:00:00", "15:00:30", "02:00:30", 2, "nvl-r3-ct[01-02]"),
                       _job(9003, "COMPLETED", "00:00:00", "23:59:00", "23:59:00", 6, "nvl-r1-ct[01-06]")]) + "\n"
    wh = run_hand_landing(tmp_path, {"cluster.yaml": _CLUSTER, "sacct/sacct_2026-12-01.psv": sacct,
                                     "syslog/2026-12-01/central.log": "\n".join(syslog) + "\n"})
    snap = wh.with_name("gpusre.snapshot.duckdb")
    incidents = query_rows(snap, "SELECT component, component_class, scope, len(nodes), strftime(start_ts, '%H:%M:%S') "
                                 "FROM marts.hw_incidents ORDER BY start_ts")
    assert incidents == [("nvswitch", "nvlink", "rack", 7, "10:00:00"), ("nvlink", "nvlink", "node", 1, "15:00:00"),
                         ("nvswitch", "nvlink", "node", 1, "18:00:00")]
    charged = query_rows(snap, "SELECT a.job_id, i.scope, i.component, a.lost_gpu_hours FROM marts.job_failure_attribution a "
                               "JOIN marts.hw_incidents i USING (incident_id) ORDER BY 1")
    assert [(j, s, c, round(x, 6)) for j, s, c, x in charged] == [("9001", "rack", "nvswitch", 12.0),
                                                                  ("9002", "node", "nvlink", 4.0)]
    mtbf = dict(query_rows(snap, "SELECT component, failures FROM marts.mtbf WHERE period_type = 'all' "
                                 "AND scope IN ('cluster', 'component_class') AND component IN ('all', 'nvlink')"))
    assert mtbf == {"all": 2, "nvlink": 2}
    loss = query_rows(snap, "SELECT node, gpus_per_node, round(job_lost_gpu_hours, 6), jobs_killed "
                            "FROM marts.node_hardware_loss ORDER BY node")
    assert [r for r in loss if "nvsw" in r[0]] == []
    assert [r for r in loss if r[3] > 0] == [*[(_tray(2, i), 4, 2.0, 1) for i in range(1, 7)], (_tray(3, 2), 4, 4.0, 1)]


def test_a_rack_nvlink_incident_is_named_and_advised_as_the_nvlink_domain_not_a_pdu() -> None:
    from gpusre.reports.kit.labels import incident_action, incident_component, incident_kind

    # "NVLink domain", not "Rack NVLink domain": on an NVL36x2 the domain spans two racks.
    for component in ("nvlink", "nvswitch"):
        assert incident_component(component, "rack") == "NVLink domain"
        assert incident_kind(component, "rack") == "NVLink domain failure"
        assert incident_action("RESTART_BM", component, "rack") == (
            "Check the NVLink domain's NVSwitch trays and Fabric Manager, not one compute tray")
    assert incident_kind("host_power", "rack") == "Rack power loss"  # unchanged
    assert incident_kind("nvswitch", "node") == "NVLink/NVSwitch failure"


def test_a_host_that_runs_no_jobs_does_not_keep_a_rack_incident_unrecovered() -> None:
    """A switch tray in a rack incident never runs a job: the incident recovers when its compute trays
    have each completed a job after it (hand values: end 10:00, trays back 11:00 and 12:30)."""
    from datetime import datetime, timezone

    import polars as pl

    from gpusre.models.failures.taxonomy import incident_impact

    utc = timezone.utc
    incidents = pl.DataFrame({"incident_id": ["inc-r"], "end_ts": [datetime(2026, 11, 21, 10, tzinfo=utc)],
                              "nodes": [["t01", "t02", "sw01"]]})
    jobs = pl.DataFrame({"state": ["COMPLETED", "COMPLETED", "FAILED"],
                         "start_ts": [datetime(2026, 11, 21, 11, tzinfo=utc), datetime(2026, 11, 21, 12, 30, tzinfo=utc),
                                      datetime(2026, 11, 21, 9, tzinfo=utc)],
                         "nodes": [["t01"], ["t02"], ["t01", "t02"]]})
    attribution = pl.DataFrame(schema={"job_id": pl.String, "attribution": pl.String, "incident_id": pl.String,
                                       "n_gpus": pl.Int64, "lost_gpu_hours": pl.Float64})
    row = incident_impact(incidents, attribution, jobs).row(0, named=True)
    assert row["nodes_recovered"] == 2
    assert row["recovered_ts"] == datetime(2026, 11, 21, 12, 30, tzinfo=utc)
    assert row["hours_to_recovery"] == 2.5
