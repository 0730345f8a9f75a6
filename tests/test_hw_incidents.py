"""Failure events and incident merging (gpusre.models.failures.hw_incidents) on small hand-made event lists.

Expected incidents are worked out from the rules by hand: which events chain (gap <= window),
which leaf a node sits under, and how many nodes a chain touches.
"""

from __future__ import annotations

import doctest
from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.failures import hw_incidents as hw_incidents
from node_event_lines import T0 as T0_LINES
from node_event_lines import events_from_lines

from gpusre.models.failures.hw_incidents import (
    INCIDENT_SCHEMA,
    MEMBERSHIP_SCHEMA,
    failure_events,
    incident_id,
    merge_incidents,
    operator_incident_id,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)

# (kind, code, component, cause_class, severity, action) as the catalog classifies these lines.
XID79 = ("xid", 79, "pcie_bus", "hardware", "critical", "RESTART_BM")
AER = ("pcie_aer", None, "pcie_bus", "hardware", "critical", "RESTART_BM")
XID48 = ("xid", 48, "gpu_memory", "hardware", "critical", "WORKFLOW_XID_48")
XID13 = ("xid", 13, "user_application", "user_application", "medium", "RESTART_APP")
XID63 = ("xid", 63, "gpu_memory", "informational", "info", "IGNORE")
XID8 = ("xid", 8, "gpu_compute", "driver_firmware", "medium", "RESTART_APP")
LINK_DOWN = ("ib_link_down", None, "network", "hardware", "high", "CHECK_LINK")
LUSTRE = ("lustre_error", None, "storage", "system_software", "high", "CHECK_STORAGE")


def ev(event_id: int, at: timedelta, node: str, spec: tuple, gpu: str | None = None) -> dict:
    """One node event ``at`` after T0."""
    kind, code, component, cause, severity, action = spec
    return {"event_id": event_id, "ts": T0 + at, "node": node, "kind": kind, "code": code, "gpu_pci": gpu,
            "component": component, "cause_class": cause, "severity": severity, "action": action,
            "template_id": 1, "message": "..."}


def frame(rows: list[dict]) -> pl.DataFrame:
    """Events typed like core.node_events."""
    return pl.DataFrame(rows, schema={**hw_incidents.EVENT_SCHEMA, "template_id": pl.Int64, "message": pl.String})


M = timedelta(minutes=1)
S = timedelta(seconds=1)
LEAVES = {"leaf01": "gpu[01-08]", "leaf02": ["gpu09", "gpu10", "gpu11", "gpu12"]}


def test_doctests() -> None:
    assert doctest.testmod(hw_incidents).failed == 0


def test_failure_events_filter_by_class_and_severity() -> None:
    events = frame([ev(1, 0 * M, "n1", XID79), ev(2, 0 * M, "n1", XID13), ev(3, 0 * M, "n1", XID8),
                    ev(4, 0 * M, "n1", XID63), ev(5, 0 * M, "n1", LUSTRE)])
    # 79 (hardware, critical) and Lustre (system_software, high) are failures; 13 is the user's,
    # 8 only medium, a single 63 informational.
    assert failure_events(events)["event_id"].to_list() == [1, 5]


def test_repeated_xid63_escalates_above_threshold() -> None:
    # xid.csv: 63 has repeat_threshold 8 -> the 9th within 24 h and later are failures.
    hourly = frame([ev(i, timedelta(hours=i), "n1", XID63, gpu="0000:3b:00.0") for i in range(1, 11)])
    out = failure_events(hourly)
    assert out["event_id"].to_list() == [9, 10]
    assert out["cause_class"].to_list() == ["hardware", "hardware"]
    assert out["escalated"].to_list() == [True, True]
    # Every 4 h: a 24 h window (ts - 24 h, ts] holds at most 6 of them -> never escalated.
    sparse = frame([ev(i, timedelta(hours=4 * i), "n1", XID63, gpu="0000:3b:00.0") for i in range(1, 11)])
    assert failure_events(sparse).is_empty()


def test_leaf_switch_link_loss_is_one_incident() -> None:
    events = frame([ev(1, 0 * S, "gpu01", LINK_DOWN), ev(2, 10 * S, "gpu02", LINK_DOWN),
                    ev(3, 30 * S, "gpu03", LINK_DOWN), ev(4, 50 * S, "gpu04", LINK_DOWN)])
    incidents, membership = merge_incidents(events, topology=LEAVES)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert row["component"] == "network_switch"
    assert row["scope"] == "leaf_switch" and row["leaf_switch"] == "leaf01"
    assert row["nodes"] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert row["n_events"] == 4 and row["first_event_id"] == 1
    assert row["start_ts"] == T0 and row["end_ts"] == T0 + 50 * S
    assert membership["incident_id"].unique().to_list() == [row["incident_id"]]


def test_link_loss_on_two_leaves_is_two_nic_incidents() -> None:
    events = frame([ev(1, 0 * S, "gpu01", LINK_DOWN), ev(2, 5 * S, "gpu09", LINK_DOWN)])
    incidents, _ = merge_incidents(events, topology=LEAVES)
    assert incidents.height == 2
    assert incidents["component"].to_list() == ["network", "network"]
    assert sorted(incidents["nodes"].to_list()) == [["gpu01"], ["gpu09"]]


def test_below_fabric_min_nodes_stays_per_node() -> None:
    # 2 nodes under leaf01 < fabric_min_nodes 3 -> two node incidents; with min 2 -> one.
    events = frame([ev(1, 0 * S, "gpu01", LINK_DOWN), ev(2, 5 * S, "gpu02", LINK_DOWN)])
    assert merge_incidents(events, topology=LEAVES)[0].height == 2
    assert merge_incidents(events, topology=LEAVES, fabric_min_nodes=2)[0].height == 1


def test_storage_errors_on_many_nodes_are_one_incident() -> None:
    events = frame([ev(1, 0 * M, "gpu01", LUSTRE), ev(2, 1 * M, "gpu09", LUSTRE), ev(3, 2 * M, "x7", LUSTRE)])
    incidents, _ = merge_incidents(events)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["component"], row["scope"], row["cause_class"]) == ("storage", "cluster", "system_software")
    assert row["nodes"] == ["gpu01", "gpu09", "x7"]


def test_merge_window_boundaries() -> None:
    # Gap exactly 30 min continues the incident; 30 min + 1 s starts a new one.
    same = frame([ev(1, 0 * M, "n1", XID79), ev(2, 30 * M, "n1", XID79)])
    assert merge_incidents(same)[0]["n_events"].to_list() == [2]
    split = frame([ev(1, 0 * M, "n1", XID79), ev(2, 30 * M + S, "n1", XID79)])
    assert merge_incidents(split)[0]["n_events"].to_list() == [1, 1]
    # Chained: 0, 25, 50 min -> one incident 50 min long although first and last are 50 min apart.
    chain = frame([ev(1, 0 * M, "n1", XID79), ev(2, 25 * M, "n1", XID79), ev(3, 50 * M, "n1", XID79)])
    inc = merge_incidents(chain)[0]
    assert inc["n_events"].to_list() == [3]
    assert inc["end_ts"][0] - inc["start_ts"][0] == 50 * M
    # A custom window of 10 min applies to same-component chains; the catalog's gpu_fault signature
    # (GPU evidence on one node within 30 min is one fault) still joins them.
    assert merge_incidents(chain, window=10 * M)[0].height == 1
    # Beyond both windows: three faults.
    apart = frame([ev(1, 0 * M, "n1", XID79), ev(2, 31 * M, "n1", XID79), ev(3, 62 * M, "n1", XID79)])
    assert merge_incidents(apart, window=10 * M)[0].height == 3


def test_one_gpu_fault_is_one_incident_across_kinds_and_gpus_listed() -> None:
    # Xid 79 on a GPU, a PCIe AER line without the GPU's address and an Xid 48 a minute later are one
    # GPU fault (catalog signatures gpu_fault and gpu_memory_fault); the HBM error is named the cause.
    events = frame([ev(1, 0 * M, "n1", XID79, gpu="0000:3b:00.0"), ev(2, 1 * M, "n1", AER),
                    ev(3, 1 * M, "n1", XID48, gpu="0000:86:00.0"), ev(4, 0 * M, "n1", XID13)])
    incidents, membership = merge_incidents(events)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["component"], row["component_class"]) == ("gpu_memory", "gpu")
    # a GPU is its node and address (gpu_id): two GPUs of n1
    assert row["gpus"] == ["n1:0000:3b:00.0", "n1:0000:86:00.0"]
    assert row["n_events"] == 3 and row["root_cause"] == "xid 48"
    assert row["evidence_kinds"] == ["pcie_aer", "xid"] and not row["single_symptom"]
    assert row["label_source"] == "events"
    assert membership["event_id"].to_list() == [1, 2, 3]  # the user Xid 13 is in no incident
    # Without the Xid 48, the Xid 79 names the fault.
    alone, _ = merge_incidents(events.filter(pl.col("event_id") != 3))
    assert alone.select("component", "root_cause").row(0) == ("pcie_bus", "xid 79")


def test_stable_incident_ids() -> None:
    rows = [ev(1, 0 * M, "n2", XID79), ev(2, 0 * M, "n1", XID79), ev(3, 5 * M, "n1", XID79)]
    first, _ = merge_incidents(frame(rows))
    again, _ = merge_incidents(frame(list(reversed(rows))))
    assert first.equals(again)
    # The id is a function of component, first timestamp and first node only.
    assert sorted(first["incident_id"].to_list()) == sorted(
        [incident_id("pcie_bus", T0, "n1"), incident_id("pcie_bus", T0, "n2")]
    )
    # Adding a later event to an incident keeps its id (first event unchanged).
    more, _ = merge_incidents(frame([*rows, ev(4, 20 * M, "n1", XID79)]))
    assert set(more["incident_id"]) == set(first["incident_id"])


def test_operator_incident_overrides_label() -> None:
    events = frame([ev(1, 0 * M, "gpu05", LINK_DOWN), ev(2, 2 * M, "gpu06", LINK_DOWN), ev(3, 0 * M, "n9", XID79)])
    operator = pl.DataFrame({
        "id": ["OPS-7", "OPS-8"],
        "start": [T0 - 5 * M, T0 + timedelta(days=3)],
        "end": [T0 + 60 * M, T0 + timedelta(days=3, hours=1)],
        "component": ["ip_configuration", "storage_switch"],
        "root_cause": ["wrong netmask pushed by config management", "storage switch reboot"],
        "nodes": ["gpu[05-06]", None],
        "notes": ["rolled back", ""],
    })
    incidents, membership = merge_incidents(events, operator=operator)
    by_source = incidents.partition_by("label_source", as_dict=True)
    ops = by_source[("operator",)].sort("operator_id")
    assert ops["operator_id"].to_list() == ["OPS-7", "OPS-8"]
    ops7 = ops.row(0, named=True)
    assert ops7["component"] == "ip_configuration"
    assert ops7["root_cause"] == "wrong netmask pushed by config management"
    # It folds the link losses of gpu05 (T0) and gpu06: it keeps the earliest one's id, the id the events
    # alone gave (was operator_incident_id("OPS-7"), which broke ids printed before the label).
    assert ops7["incident_id"] == incident_id("network", T0, "gpu05")
    assert ops7["scope"] == "node"
    assert ops.row(1, named=True)["incident_id"] == operator_incident_id("OPS-8")
    assert ops7["n_events"] == 2 and ops7["nodes"] == ["gpu05", "gpu06"]
    assert ops7["start_ts"] == T0 - 5 * M and ops7["end_ts"] == T0 + 60 * M
    # OPS-8 matched no events but is kept: humans saw it.
    assert ops.row(1, named=True)["n_events"] == 0
    # The Xid 79 on n9 is outside OPS-7's nodes: still an event incident.
    assert by_source[("events",)]["nodes"].to_list() == [["n9"]]
    assert dict(membership.iter_rows()) == {1: ops7["incident_id"], 2: ops7["incident_id"],
                                             3: incident_id("pcie_bus", T0, "n9")}


def test_empty_events() -> None:
    incidents, membership = merge_incidents(frame([]), topology=LEAVES)
    assert incidents.is_empty() and membership.is_empty()
    assert dict(incidents.schema) == INCIDENT_SCHEMA
    assert dict(membership.schema) == MEMBERSHIP_SCHEMA


def test_events_without_a_node_form_an_incident_with_no_nodes() -> None:
    """A log that names no host (a Fabric Manager log, bare dmesg in a file not named after a node)
    gives events with node NULL: they still merge into an incident, with an empty node list and a
    stable id, instead of failing the whole mart (found on the real gpud samples)."""
    sxid = ("sxid", 12028, "nvswitch", "hardware", "critical", "RESTART_BM")
    events = frame([ev(1, 0 * M, None, sxid), ev(2, 1 * M, None, sxid), ev(3, 0 * M, "n1", XID79)])
    incidents, membership = merge_incidents(events)
    by_component = {r["component"]: r for r in incidents.iter_rows(named=True)}
    assert by_component["nvswitch"]["nodes"] == [] and by_component["nvswitch"]["n_events"] == 2
    assert by_component["nvswitch"]["incident_id"] == incident_id("nvswitch", T0, None)
    assert by_component["pcie_bus"]["nodes"] == ["n1"]
    assert sorted(membership["event_id"].to_list()) == [1, 2, 3]


# Health checks are evidence: NHC repeats a failing check every run until the condition clears.
NHC_IB = "nhc[811]: ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_0:1 is ACTIVE"
NHC_HOT = "nhc[2211]: Health check failed: GPU3 temperature 96C exceeds limit 90C"
NHC_OTHER = "nhc: ERROR:  nhc:  Health check failed:  check_file_test:  -r /etc/slurm/slurm.conf returned 1."
NHC_GPU_LOST = ("nhc: ERROR:  nhc:  Health check failed:  check_nv_healthmon:  GPU 0000:91:00.0 is lost "
                "(nvidia-smi: Unable to determine the device handle)")
NHC_FS = "nhc[881]: ERROR: nhc: Health check failed: check_file_test: /lustre/scratch/.probe not readable"
XID79_LINE = "NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
LINK_DOWN_LINE = "mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link DOWN"


def runs(line: str, node: str, start: timedelta, n: int, every: timedelta = 5 * M) -> list[tuple[timedelta, str, str]]:
    """``n`` failing NHC runs of ``line`` on ``node`` from ``start``, ``every`` apart."""
    return [(start + k * every, node, line) for k in range(n)]


def test_health_check_episode_alone_is_one_incident_of_its_checks_component() -> None:
    # 8 h of a failing IB check every 5 min (96 lines): one network incident, not 96, not `other`.
    incidents, members = merge_incidents(events_from_lines(runs(NHC_IB, "n1", 0 * M, 96)))
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["component"], row["component_class"]) == ("network", "network")
    assert row["evidence_kinds"] == ["health_check"] and row["single_symptom"]
    assert row["n_health_check_episodes"] == 1 and row["n_events"] == 96
    assert row["end_ts"] - row["start_ts"] == 95 * 5 * M
    assert members.height == 96


def test_health_check_thermal_without_check_name() -> None:
    incidents, _ = merge_incidents(events_from_lines(runs(NHC_HOT, "n1", 0 * M, 3, every=2 * M)))
    assert incidents.select("component", "component_class").rows() == [("thermal", "thermal")]


def test_single_failed_run_or_unknown_check_alone_is_no_incident() -> None:
    assert merge_incidents(events_from_lines(runs(NHC_IB, "n1", 0 * M, 1)))[0].is_empty()
    assert merge_incidents(events_from_lines(runs(NHC_OTHER, "n1", 0 * M, 20)))[0].is_empty()
    # Two episodes of one check, 40 min apart (> 30 min episode gap), one run each: still nothing.
    assert merge_incidents(events_from_lines(runs(NHC_IB, "n1", 0 * M, 2, every=40 * M)))[0].is_empty()


def test_health_check_episode_attaches_to_the_fault_it_follows() -> None:
    # Xid 79, then NHC finds the GPU lost every 5 min for 8 h and an unrelated-looking check fails too:
    # one GPU incident carrying all of it, ending at the last failing run.
    lines = [(0 * M, "n1", XID79_LINE), *runs(NHC_GPU_LOST, "n1", 1 * M, 96), *runs(NHC_OTHER, "n1", 2 * M, 4)]
    incidents, members = merge_incidents(events_from_lines(lines))
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["component"], row["root_cause"]) == ("pcie_bus", "xid 79")
    assert row["n_health_check_episodes"] == 2 and row["n_events"] == 101
    assert row["end_ts"] - row["start_ts"] == 1 * M + 95 * 5 * M
    assert members.height == 101


def test_leaf_switch_second_wave_joins_while_the_first_is_not_cleared() -> None:
    # Ports under leaf01 go down on 4 nodes, their IB checks keep failing, and the links drop again
    # 50 min later: one switch incident, not two.
    nodes = ["gpu01", "gpu02", "gpu03", "gpu04"]
    lines = [(i * 10 * S, n, LINK_DOWN_LINE) for i, n in enumerate(nodes)]
    lines += [x for n in nodes for x in runs(NHC_IB, n, 2 * M, 14)]
    lines += [(50 * M + i * 10 * S, n, LINK_DOWN_LINE) for i, n in enumerate(nodes)]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select("component", "scope", "leaf_switch").rows() == [("network_switch", "leaf_switch", "leaf01")]
    # Without the health checks the waves are 50 min apart, but two multi-node waves under one leaf
    # within 2 h are one switch failing again before its repair.
    bare = [x for x in lines if x[2] == LINK_DOWN_LINE]
    assert merge_incidents(events_from_lines(bare), topology=LEAVES)[0].height == 1
    # Three hours apart they are two failures.
    later = bare[:4] + [(at + 130 * M, n, m) for at, n, m in bare[4:]]
    assert merge_incidents(events_from_lines(later), topology=LEAVES)[0].height == 2


def test_long_single_node_check_does_not_bridge_storage_outages() -> None:
    # A broken mount on n9 fails its check for 3 days; two outages on 4 other nodes a day apart stay two.
    lines = runs(NHC_FS, "n9", 0 * M, 3 * 24 * 12)
    for day in (1, 2):
        lines += [(timedelta(days=day) + i * M, f"n{i}", NHC_FS) for i in range(1, 5)]
        lines += [(timedelta(days=day) + 6 * M + i * M, f"n{i}", NHC_FS) for i in range(1, 5)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    wide = incidents.filter(pl.col("scope") == "cluster")
    assert wide.height == 2 and all(len(n) >= 4 for n in wide["nodes"].to_list())


def test_a_check_of_another_class_attaches_to_the_fault_it_overlaps() -> None:
    # An NVLink fault (Xid 74) and a site check that only says the GPU is unhealthy: one nvlink incident.
    xid74 = "NVRM: Xid (PCI:0000:18:00): 74, pid=1912, name=python, NVLink: fatal error detected on link 4"
    lines = [(0 * M, "n1", xid74), *runs("Health check failed: GPU 3 is not responding to nvidia-smi", "n1", 2 * M, 30)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.select("component_class", "n_health_check_episodes").rows() == [("nvlink", 1)]
    # A bare NVLink check line is classed nvlink by its words.
    nvl, _ = merge_incidents(events_from_lines(runs("Health check failed: GPU3 NVLink link 3 state Inactive", "n2",
                                                    0 * M, 5)))
    assert nvl.select("component_class").rows() == [("nvlink",)]


def test_evidence_of_one_class_inside_one_drain_is_one_fault() -> None:
    # Xid 74 and its check, then the check pauses for 5 h while the node is reset, and fails again for a
    # day; the node stays drained throughout. A Lustre outage hits the node (and three others) meanwhile.
    xid74 = "NVRM: Xid (PCI:0000:18:00): 74, pid=1912, name=python, NVLink: fatal error detected on link 4"
    nvl = "nhc: ERROR:  nhc:  Health check failed:  check_nv_healthmon:  GPU 0000:18:00.0 NVLink 4 is inactive"
    lustre = "LustreError: 11-0: fs-OST0000-osc-X: operation ost_read to node 10.0.1.5@tcp failed: rc = -107"
    lines = [(0 * M, "n1", xid74), *runs(nvl, "n1", 1 * M, 36), *runs(nvl, "n1", 8 * 60 * M, 200)]
    lines += [(20 * 60 * M + k * S, n, lustre) for k, n in enumerate(["n1", "n2", "n3", "n4"])]
    outages = pl.DataFrame({"node": ["n1"], "outage_start_ts": [T0_LINES + 1 * M], "outage_end_ts": [None]},
                           schema={"node": pl.String, "outage_start_ts": pl.Datetime("us", "UTC"),
                                   "outage_end_ts": pl.Datetime("us", "UTC")})
    with_states, _ = merge_incidents(events_from_lines(lines), outages=outages)
    assert sorted(with_states.select("component_class", "scope").rows()) == [("nvlink", "node"), ("storage", "cluster")]
    # Without node states the paused check is a second NVLink fault, but still not part of the outage.
    without, _ = merge_incidents(events_from_lines(lines))
    assert sorted(without.select("component_class", "scope").rows()) == [
        ("nvlink", "node"), ("nvlink", "node"), ("storage", "cluster")]


def test_rsyslog_repeated_message_counts_as_its_lines() -> None:
    # Ubuntu's rsyslog folds identical lines: one Xid 63 line, then "message repeated 9 times: [ ... ]"
    # stands for 9 more (10 in all, above the threshold of 8): the folded line is the 9th and 10th.
    xid = "NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper: New row marked for remapping"
    rows = [ev(1, timedelta(hours=1), "n1", XID63, gpu="0000:3b:00.0"),
            ev(2, timedelta(hours=2), "n1", XID63, gpu="0000:3b:00.0")]
    folded = frame(rows).with_columns(pl.Series("message", [xid, f"message repeated 9 times: [ {xid}]"]))
    out = failure_events(folded)
    assert out["event_id"].to_list() == [2] and out["escalated"].to_list() == [True]
    # The same two lines without the fold are two lines: below the threshold.
    assert failure_events(frame(rows)).is_empty()


XID48_LINE = "NVRM: Xid (PCI:0000:86:00): 48, pid=2211, name=python, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0."


def test_a_long_health_check_episode_does_not_bridge_two_gpu_faults() -> None:
    # GPU 91 falls off the bus at 0; NHC finds it lost every 5 min for 4 h; GPU 86 reports a DBE at
    # 40 min — outside the 30-min GPU signature window of the Xid 79. Two faults: the episode stays
    # with the bus drop it follows (it once bridged both into one incident named after the DBE).
    lines = [(0 * M, "n1", XID79_LINE), *runs(NHC_GPU_LOST, "n1", 1 * M, 48), (40 * M, "n1", XID48_LINE)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    got = sorted(incidents.select("component", "n_events", "n_health_check_episodes").rows())
    assert got == [("gpu_memory", 1, 0), ("pcie_bus", 49, 1)]


def test_the_signature_cause_names_the_fault_only_when_logged_first() -> None:
    # Xid 79 at 0, a DBE on the same node 10 min later: one GPU fault (within the signature window),
    # named by the bus drop that came first; a DBE first names it (test above: the Xid 48 a minute
    # after the Xid 79 is within a minute's logging slack).
    lines = [(0 * M, "n1", XID79_LINE), (10 * M, "n1", XID48_LINE)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    assert incidents.select("component", "root_cause", "n_events").rows() == [("pcie_bus", "xid 79", 2)]
    reversed_, _ = merge_incidents(events_from_lines([(0 * M, "n1", XID48_LINE), (10 * M, "n1", XID79_LINE)]))
    assert reversed_.select("component", "root_cause").rows() == [("gpu_memory", "xid 48")]


XID94_LINE = "NVRM: Xid (PCI:0000:5d:00): 94, pid=77311, name=pt_main_thread, Contained: SM (0x1). RST: No, D-RST: No"
XID95_LINE = ("NVRM: Xid (PCI:0000:5d:00): 95, pid='<unknown>', name=<unknown>, Uncontained: LTC TAG (0x2,0x0). "
              "RST: Yes, D-RST: No")


def test_the_first_line_of_the_worst_component_names_the_fault() -> None:
    # A contained ECC error (Xid 94, high) killed the job at 0; the uncontained one (Xid 95, critical) on
    # the same GPU came 20 min later: one gpu_memory fault (GPU signature, 30 min), severity critical,
    # named by its first line "xid 94" — not by the worse line logged after the job had died (an
    # evaluator's gpu07 read "xid 95"). The other order names it "xid 95".
    incidents, _ = merge_incidents(events_from_lines([(0 * M, "n1", XID94_LINE), (20 * M, "n1", XID95_LINE)]))
    assert incidents.select("component", "severity", "root_cause", "n_events").rows() == [
        ("gpu_memory", "critical", "xid 94", 2)]
    reversed_, _ = merge_incidents(events_from_lines([(0 * M, "n1", XID95_LINE), (20 * M, "n1", XID94_LINE)]))
    assert reversed_.select("component", "root_cause").rows() == [("gpu_memory", "xid 95")]
    # Across components the most severe one still names the fault: a GSP timeout (Xid 119, high,
    # gsp_firmware) and a minute later the GPU falling off the bus (Xid 79, critical, pcie_bus).
    xid119 = "NVRM: Xid (PCI:0000:5d:00): 119, pid=1, name=python, Timeout after 6s of waiting for RPC response from GPU0 GSP!"
    mixed, _ = merge_incidents(events_from_lines([(0 * M, "n1", xid119), (1 * M, "n1", XID79_LINE)]))
    assert mixed.select("component", "root_cause").rows() == [("pcie_bus", "xid 79")]


def test_lines_of_one_second_name_the_cause_by_code_whatever_their_order() -> None:
    # The driver logs the Xid 79 line and "GPU has fallen off the bus" in the same second, in either
    # order: both orders name the incident "xid 79" (one incident named "gpu_fallen_off_bus" and the next
    # "xid 79" for identical evidence read as two kinds of fault in the review).
    bus = "NVRM: GPU 0000:91:00.0: GPU has fallen off the bus."
    for lines in ([(0 * M, "n1", XID79_LINE), (0 * M, "n1", bus)], [(0 * M, "n1", bus), (0 * M, "n1", XID79_LINE)]):
        incidents, _ = merge_incidents(events_from_lines(lines))
        assert incidents.select("component", "root_cause", "evidence_kinds").rows() == [
            ("pcie_bus", "xid 79", ["gpu_fallen_off_bus", "xid"])]


def test_slow_escalated_repeats_of_one_gpu_are_one_fault() -> None:
    # Xid 63 on one GPU every 90 min, 20 times: from the 9th (16 lines in a day allow it) each line is
    # escalated; 90-min gaps exceed the 30-min incident gap, yet a failing HBM is one fault (it once
    # made 12 incidents and a GPU-class MTBF of 15 h).
    slow = [ev(i, timedelta(minutes=90 * i), "n1", XID63, gpu="0000:3b:00.0") for i in range(1, 21)]
    incidents, members = merge_incidents(frame(slow))
    assert incidents.select("component", "n_events").rows() == [("gpu_memory", 12)]
    assert sorted(members["event_id"].to_list()) == list(range(9, 21))
    # The first 8 (at most the threshold in a day) are no fault at all.
    assert merge_incidents(frame(slow[:8]))[0].is_empty()


LINK_UP_LINE = "mlx5_core 0000:08:00.0 mlx5_0: Port: 1 Link ACTIVE"


def test_a_switch_that_flaps_is_one_failure_until_its_waves_are_hours_apart() -> None:
    # Ports of 4 nodes under leaf01 go down at 16:00 and are ACTIVE again at 16:05; they go down again
    # at 16:30 / 17:00 (ACTIVE 5 min later): a flapping switch, one failure — as a flapping port of one
    # node is, and as the alert side counts a rule firing again within its flap window. (Until
    # 2026-12-05 every link back ACTIVE in between split it: an outside evaluator's flapping leaf02 read
    # as two network incidents, three failures in MTBF and a 3-min median repair.)
    nodes = ["gpu01", "gpu02", "gpu03", "gpu04"]
    for gap in (30, 60):
        lines = []
        for wave in (0, gap):
            lines += [((wave + 0) * M + i * 10 * S, n, LINK_DOWN_LINE) for i, n in enumerate(nodes)]
            lines += [((wave + 5) * M + i * 10 * S, n, LINK_UP_LINE) for i, n in enumerate(nodes)]
        incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
        assert incidents.select("component", "leaf_switch", "n_events").rows() == [
            ("network_switch", "leaf01", 8)], gap
    # Waves more than WIDE_REJOIN (2 h) apart are separate failures.
    lines = []
    for wave in (0, 180):
        lines += [((wave + 0) * M + i * 10 * S, n, LINK_DOWN_LINE) for i, n in enumerate(nodes)]
        lines += [((wave + 5) * M + i * 10 * S, n, LINK_UP_LINE) for i, n in enumerate(nodes)]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select("component", "leaf_switch", "n_events").rows() == [
        ("network_switch", "leaf01", 4), ("network_switch", "leaf01", 4)]


def test_a_local_disk_error_is_no_part_of_a_file_server_outage() -> None:
    # Lustre clients on n5-n8 lose their server at 08:00; n1's own NVMe times out at 08:10. The server
    # outage is one storage incident of 4 nodes; the NVMe is n1's fault (class host), not a fifth
    # client of it (it once joined the Lustre incident and blamed n1's job on the file system).
    lustre = "LustreError: 11-0: fs-OST0000-osc-X: operation ost_read to node 10.0.1.5@tcp failed: rc = -107"
    nvme = "nvme nvme0: I/O 161 QID 2 timeout, aborting"
    lines = [(i * M, f"n{i}", lustre) for i in range(5, 9)] + [(10 * M, "n1", nvme)]
    incidents, _ = merge_incidents(events_from_lines(lines))
    got = sorted((r["component"], r["component_class"], r["nodes"]) for r in incidents.iter_rows(named=True))
    assert got == [("local_disk", "host", ["n1"]), ("storage", "storage", ["n5", "n6", "n7", "n8"])]


def _outage(node: str, start: timedelta, end: timedelta | None) -> pl.DataFrame:
    return pl.DataFrame({"node": [node], "outage_start_ts": [T0_LINES + start],
                         "outage_end_ts": [None if end is None else T0_LINES + end]},
                        schema={"node": pl.String, "outage_start_ts": pl.Datetime("us", "UTC"),
                                "outage_end_ts": pl.Datetime("us", "UTC")})


def test_a_flapping_port_is_one_fault_until_repaired() -> None:
    # gpu05's port goes down and is ACTIVE again a minute later, every 35 min for 6 h (gaps above the
    # 30-min incident window): one faulty link or cable, not 11 incidents. Hand count: 11 flaps -> 1.
    lines = []
    for k in range(11):
        lines += [(k * 35 * M, "gpu05", LINK_DOWN_LINE), (k * 35 * M + 1 * M, "gpu05", LINK_UP_LINE)]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert incidents.select("component", "nodes", "n_events").rows() == [("network", ["gpu05"], 11)]
    assert incidents["end_ts"].to_list() == [T0_LINES + 350 * M]
    # Down lines alone 35 min apart (the port never came back by itself): the window decides, 11 faults.
    downs = [x for x in lines if x[2] == LINK_DOWN_LINE]
    assert merge_incidents(events_from_lines(downs), topology=LEAVES)[0].height == 11
    # A repair in between (the node drained at 01:50 and returned at 02:40): two faults, the flaps up to
    # the return (00:00 ... 02:20, five) and those after it (02:55 ... 05:50, six).
    repaired, _ = merge_incidents(events_from_lines(lines), topology=LEAVES, outages=_outage("gpu05", 110 * M, 160 * M))
    assert [r["n_events"] for r in repaired.sort("start_ts").iter_rows(named=True)] == [5, 6]
    # More than a day after the last flap: another fault.
    later = lines[:2] + [(25 * 60 * M, "gpu05", LINK_DOWN_LINE)]
    assert merge_incidents(events_from_lines(later), topology=LEAVES)[0].height == 2


def test_cable_faults_in_turn_on_one_leaf_are_not_a_switch_failure() -> None:
    # gpu01, gpu02, gpu03 lose their links 22 min apart, each ACTIVE again 3 min later: at most one link
    # is down at a time — three cable faults, not a leaf-switch failure. Without the recoveries (nothing
    # says the links came back) they overlap: one switch incident, as before.
    lines = []
    for k, node in enumerate(["gpu01", "gpu02", "gpu03"]):
        lines += [(k * 22 * M, node, LINK_DOWN_LINE), (k * 22 * M + 3 * M, node, LINK_UP_LINE)]
    incidents, _ = merge_incidents(events_from_lines(lines), topology=LEAVES)
    assert sorted(incidents.select("component", "nodes").rows()) == [
        ("network", ["gpu01"]), ("network", ["gpu02"]), ("network", ["gpu03"])]
    downs = [x for x in lines if x[2] == LINK_DOWN_LINE]
    assert merge_incidents(events_from_lines(downs), topology=LEAVES)[0].select("component").rows() == [("network_switch",)]


def test_evidence_just_before_its_drain_is_the_same_fault() -> None:
    # Xid 79 at 03:00, Slurm drains the node at 03:03 (the drain follows the evidence), the GPU falls
    # off again at 03:50 while the node is still drained: one fault. It was two when the first Xid
    # came before the drain began.
    xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
    lines = [(0 * M, "n1", xid79), (50 * M, "n1", xid79)]
    incidents, _ = merge_incidents(events_from_lines(lines), outages=_outage("n1", 3 * M, 6 * 60 * M))
    assert incidents.select("component", "n_events").rows() == [("pcie_bus", 2)]
    # Without node states, 50 min apart with nothing logged in between: two faults.
    assert merge_incidents(events_from_lines(lines))[0].height == 2
