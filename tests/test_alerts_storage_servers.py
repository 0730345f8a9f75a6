"""Alerts from the storage servers and node-local file systems (an outside evaluator's probe: 64 H100
nodes hgx[001-064], a Lustre MDS hang, an OST outage, an NFS outage, a fabric event, and a node-local
/local/scratch filling up on 24 nodes during the MDS hang):

1. a storage alert on no Slurm node (the server side: ``LustreMDTUnresponsive{mdt=...}``,
   ``NFSServerNotResponding{instance="home01:9100"}``) is about the shared-storage hardware incident
   wider than a node whose window its firing overlaps: it gets its ``hw_incident_id``, jobs and GPU-h;
   a one-node storage incident (one client's) is never a server's;
2. a node-local file system (``device="/dev/md0"``, ``fstype="xfs"``) is never about a shared-storage
   incident, and a capacity alert (``NodeFilesystemAlmostFull``: level ``housekeeping``) about no
   hardware incident at all: it forms its alert incidents, which claim no job a hardware incident killed;
3. those 24 alerts (one every 2 min) are no flood: at most 5 arrivals in a 5-min bucket, under
   ``min_alerts`` (10);
4. ``marts.alert_coverage`` / ``hw_incidents_without_alert`` use the very match the alert incidents use
   (the fabric alert of a subnet manager covers its incident in both), and an uncovered incident's
   ``duration_s`` runs to its repair (``marts.incident_repairs.repaired_ts``) where known.

Alertmanager webhook payloads are ingested as the pipeline does; the hardware incidents are hand-built
with every column of ``marts.hw_incidents``. Every expected value is worked out by hand below.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from gpusre.models.alerts.clustering import Topology, alert_levels, alert_marts
from gpusre.models.alerts.floods import FloodSettings, arrival_counts
from gpusre.models.ingest.hostlist import expand_hostlist

from alertmanager_payloads import ingest_alerts

NODES = expand_hostlist("hgx[001-064]")
LEAVES = {"leaf01": "hgx[001-016]", "leaf02": "hgx[017-032]", "leaf03": "hgx[033-048]", "leaf04": "hgx[049-064]"}
TOPO = Topology.from_groups(racks={f"r{i}": v for i, v in enumerate(LEAVES.values(), 1)}, leaf_switches=LEAVES)
DAY = datetime(2026, 11, 28, tzinfo=UTC)


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    return DAY.replace(hour=hh, minute=mm, second=ss)




MDS = {"alertname": "LustreMDTUnresponsive", "instance": "mds01:9100", "job": "lustre", "mdt": "scratch-MDT0000",
       "fsname": "scratch", "severity": "critical"}
OST = {"alertname": "LustreOSTUnreachable", "instance": "oss04:9100", "job": "lustre", "ost": "scratch-OST0007",
       "fsname": "scratch", "severity": "critical"}
NFS = {"alertname": "NFSServerNotResponding", "instance": "home01:9100", "job": "nfs-server", "severity": "critical"}
UFM = {"alertname": "UFMSubnetManagerFailover", "instance": "ufm01:9100", "job": "ufm", "severity": "critical"}


def _local_full(node: str) -> dict:
    return {"alertname": "NodeFilesystemAlmostFull", "instance": f"{node}:9100", "job": "node-exporter",
            "device": "/dev/md0", "fstype": "xfs", "mountpoint": "/local/scratch", "severity": "warning"}


#: (labels, start, end): 24 local-disk alerts hgx041..hgx064 at 13:50 + 2 min·k (k = 0..23: the last
#: 14:36), resolved 18:00; the MDS server alert; a Lustre client's mount going read-only (storage level by
#: its fstype); a node-local ext4 going read-only on hgx010 (a node alert, not the shared storage); the
#: OST, the subnet manager and the NFS server.
ALERTS = [
    *[(_local_full(f"hgx{41 + k:03d}"), at(13, 50) + timedelta(minutes=2 * k), at(18, 0)) for k in range(24)],
    (MDS, at(14, 1), at(14, 26)),
    ({"alertname": "NodeFilesystemReadOnly", "instance": "hgx031:9100", "job": "node-exporter",
      "device": "10.0.9.1@o2ib:/scratch", "fstype": "lustre", "mountpoint": "/lustre/scratch"}, at(14, 3), at(14, 30)),
    ({"alertname": "NodeFilesystemReadOnly", "instance": "hgx010:9100", "job": "node-exporter",
      "device": "/dev/nvme0n1p1", "fstype": "ext4", "mountpoint": "/local"}, at(14, 5), at(14, 40)),
    (UFM, at(16, 0, 20), at(16, 10)),
    (OST, at(20, 1), at(20, 42)),
    (NFS, at(23, 11), at(23, 19)),
]


def _hw_row(iid: str, component: str, cls: str, start: datetime, end: datetime, nodes: list[str], scope: str,
            cause: str = "system_software") -> dict:
    """A row with every column of marts.hw_incidents."""
    return {"incident_id": iid, "component": component, "component_class": cls, "cause_class": cause,
            "severity": "critical", "action": None, "start_ts": start, "end_ts": end, "nodes": nodes, "gpus": [],
            "n_events": 3, "first_event_id": 1, "scope": scope, "leaf_switch": None, "label_source": "heuristic",
            "root_cause": None, "operator_id": None, "notes": None, "evidence_kinds": ["syslog"],
            "n_health_check_episodes": 0, "single_symptom": False, "affected_jobs": 0, "affected_gpus": 0,
            "lost_gpu_hours": 0.0, "nodes_recovered": 0, "recovered_ts": None, "hours_to_recovery": None}


HW = pl.DataFrame([
    _hw_row("inc-mds", "storage", "storage", at(14, 0), at(14, 0, 7), NODES, "cluster"),
    _hw_row("inc-fabric", "network_switch", "network", at(16, 0), at(16, 0, 3), NODES, "fabric", "hardware"),
    _hw_row("inc-quota", "storage", "storage", at(20, 5), at(20, 5), ["hgx005"], "node"),
    _hw_row("inc-ost", "storage", "storage", at(20, 0, 10), at(20, 0, 16), expand_hostlist("hgx[050-055]"), "nodes"),
    _hw_row("inc-gpfs", "storage", "storage", at(21, 30, 5), at(21, 30, 41), ["hgx020"], "node"),
    _hw_row("inc-nfs", "storage", "storage", at(23, 10), at(23, 10, 8), NODES, "cluster"),
], schema={"incident_id": pl.String, "component": pl.String, "component_class": pl.String, "cause_class": pl.String,
           "severity": pl.String, "action": pl.String, "start_ts": pl.Datetime("us", "UTC"),
           "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String), "gpus": pl.List(pl.String),
           "n_events": pl.Int64, "first_event_id": pl.Int64, "scope": pl.String, "leaf_switch": pl.String,
           "label_source": pl.String, "root_cause": pl.String, "operator_id": pl.String, "notes": pl.String,
           "evidence_kinds": pl.List(pl.String), "n_health_check_episodes": pl.Int64, "single_symptom": pl.Boolean,
           "affected_jobs": pl.Int64, "affected_gpus": pl.Int64, "lost_gpu_hours": pl.Float64,
           "nodes_recovered": pl.Int64, "recovered_ts": pl.Datetime("us", "UTC"), "hours_to_recovery": pl.Float64})

#: (job, end, nodes, hardware incident, lost GPU-h): the MDS hang killed 3 one-node jobs (two on nodes of
#: the local-disk alerts, one on hgx010 of the local ext4 alert), 4 GPU-h each; the OST outage 2 jobs
#: (8 GPUs: 4 GPU-h; 16 GPUs: 8 GPU-h); the fabric event one 2-node job (8 GPU-h).
JOBS = [("m1", at(14, 4), ["hgx041"], "inc-mds", 4.0), ("m2", at(14, 10), ["hgx042"], "inc-mds", 4.0),
        ("m3", at(14, 6), ["hgx010"], "inc-mds", 4.0),
        ("o1", at(20, 6), ["hgx050"], "inc-ost", 4.0), ("o2", at(20, 8), ["hgx051", "hgx052"], "inc-ost", 8.0),
        ("f1", at(16, 5), ["hgx001", "hgx002"], "inc-fabric", 8.0)]
REPAIRS = pl.DataFrame({"incident_id": ["inc-mds", "inc-ost", "inc-quota", "inc-gpfs"],
                        "repaired_ts": [at(14, 25, 4), at(20, 40, 5), at(20, 35), None]},
                       schema={"incident_id": pl.String, "repaired_ts": pl.Datetime("us", "UTC")})


@pytest.fixture(scope="module")
def marts(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - AlertMarts
    tmp = tmp_path_factory.mktemp("storage_servers")
    alerts = ingest_alerts(tmp, "2026-11-28", ALERTS, NODES)
    jobs = pl.DataFrame({"job_id": [j[0] for j in JOBS], "state": ["FAILED"] * len(JOBS),
                         "end_ts": [j[1] for j in JOBS], "nodes": [j[2] for j in JOBS]},
                        schema={"job_id": pl.String, "state": pl.String, "end_ts": pl.Datetime("us", "UTC"),
                                "nodes": pl.List(pl.String)})
    attribution = pl.DataFrame({"job_id": [j[0] for j in JOBS], "attribution": ["infrastructure"] * len(JOBS),
                                "lost_gpu_hours": [j[4] for j in JOBS], "incident_id": [j[3] for j in JOBS]})
    return alerts, alert_marts(alerts, topology=TOPO, hw_incidents=HW, jobs=jobs, attribution=attribution,
                               node_labels=("instance",), repairs=REPAIRS)


def _by_root(incidents: pl.DataFrame) -> dict[str, dict]:
    return {r["root_cause_candidate"]: r for r in incidents.iter_rows(named=True)}


def test_the_ingest_places_the_alerts_as_the_probe_saw_them(marts) -> None:  # noqa: ANN001
    alerts, _ = marts
    where = {r["alertname"]: (r["node"], r["target"], r["target_label"])
             for r in alerts.filter(pl.col("node").is_null()).iter_rows(named=True)}
    assert where["LustreMDTUnresponsive"] == (None, "scratch-MDT0000", "mdt")
    assert where["LustreOSTUnreachable"] == (None, "scratch-OST0007", "ost")
    assert alerts.filter(pl.col("alertname") == "NodeFilesystemAlmostFull")["node"].n_unique() == 24


def test_a_storage_server_alert_is_about_the_shared_storage_incident(marts) -> None:  # noqa: ANN001
    _, m = marts
    inc = _by_root(m.incidents)
    mds = inc["LustreMDTUnresponsive on scratch-MDT0000"]
    # The server side and the client's Lustre mount on hgx031 (same file system "scratch"): one incident,
    # about inc-mds, with its 3 jobs (m1, m2, m3: 3 x 4 GPU-h).
    assert mds["hw_incident_id"] == "inc-mds" and mds["root_level"] == "storage" and mds["scope"] == "storage"
    assert mds["root_cause_reason"] == "hardware incident inc-mds (storage) on hgx[001-064]"
    assert sorted(mds["alertnames"]) == ["LustreMDTUnresponsive", "NodeFilesystemReadOnly"] and mds["nodes"] == ["hgx031"]
    assert (mds["n_jobs_killed"], mds["lost_gpu_hours"]) == (3, 12.0)
    # The OST outage on hgx[050-055] (scope nodes): its 2 jobs, 12 GPU-h; the one-node quota incident on
    # hgx005 at 20:05 lies in the OST alert's window too, but a one-node storage incident is a client's.
    ost = inc["LustreOSTUnreachable on scratch-OST0007"]
    assert ost["hw_incident_id"] == "inc-ost" and (ost["n_jobs_killed"], ost["lost_gpu_hours"]) == (2, 12.0)
    assert ost["root_cause_reason"] == "hardware incident inc-ost (storage) on hgx[050-055]"
    nfs = inc["NFSServerNotResponding on home01:9100"]
    assert nfs["hw_incident_id"] == "inc-nfs" and (nfs["n_jobs_killed"], nfs["lost_gpu_hours"]) == (0, 0.0)
    # The subnet manager (fabric, no node) is about the fabric incident, as before.
    ufm = inc["UFMSubnetManagerFailover on ufm01:9100"]
    assert ufm["hw_incident_id"] == "inc-fabric" and (ufm["n_jobs_killed"], ufm["lost_gpu_hours"]) == (1, 8.0)


def test_a_node_local_file_system_never_takes_the_shared_storage_incident(marts) -> None:  # noqa: ANN001
    _, m = marts
    full = m.incidents.filter(pl.col("alertnames").list.contains("NodeFilesystemAlmostFull"))
    # Two incidents, one per leaf (hgx041-048 under leaf03, hgx049-064 under leaf04), 2 min apart on each:
    # capacity housekeeping, about no hardware incident, and no job of the MDS hang (m1 on hgx041 at 14:04,
    # m2 on hgx042 at 14:10 are inc-mds's).
    assert sorted(full["n_alerts"].to_list()) == [8, 16]
    assert full["root_level"].to_list() == ["housekeeping", "housekeeping"]
    assert full["hw_incident_id"].to_list() == [None, None]
    assert full["n_jobs_killed"].to_list() == [0, 0] and full["lost_gpu_hours"].to_list() == [0.0, 0.0]
    assert sorted(full["root_cause_candidate"].to_list()) == ["NodeFilesystemAlmostFull on hgx041",
                                                              "NodeFilesystemAlmostFull on hgx049"]
    # A node-local ext4 going read-only on hgx010 (no capacity alert: node level) at 14:05, inside the MDS
    # incident's window on one of its nodes: still not about the shared storage, and m3 (hgx010, 14:06) is
    # inc-mds's job.
    local = _by_root(m.incidents)["NodeFilesystemReadOnly on hgx010"]
    assert local["root_level"] == "node" and local["hw_incident_id"] is None
    assert (local["n_jobs_killed"], local["lost_gpu_hours"]) == (0, 0.0)
    members = m.members.filter(pl.col("hw_incident_id") == "inc-mds")
    assert members.height == 2  # the MDS alert and the Lustre client's mount
    # The largest alert incident by jobs is the MDS hang's.
    assert m.incidents.sort("n_jobs_killed", descending=True).row(0, named=True)["hw_incident_id"] == "inc-mds"


def test_the_local_disk_alerts_are_no_flood(marts) -> None:  # noqa: ANN001
    alerts, m = marts
    # 5-min buckets: 13:50 (13:50, 13:52, 13:54) = 3; 14:00 (14:00, 14:01 MDS, 14:02, 14:03 client, 14:04) = 5;
    # 14:05 (14:05 hgx010, 14:06, 14:08) = 3; ...: at most 5, under min_alerts = 10 (and the MAD test
    # needs a count above the baseline of the bucket before it).
    counts = arrival_counts(alerts["starts_at"])
    assert counts["alerts"].max() == 5 and FloodSettings().min_alerts == 10
    assert m.floods.is_empty()
    assert not m.incidents["in_flood"].any()


def test_coverage_uses_the_match_of_the_alert_incidents(marts) -> None:  # noqa: ANN001
    _, m = marts
    cov = {r["incident_id"]: (r["covered"], r["n_alerts"]) for r in m.coverage.iter_rows(named=True)}
    assert cov == {"inc-mds": (True, 2), "inc-fabric": (True, 1), "inc-ost": (True, 1), "inc-quota": (False, 0),
                   "inc-gpfs": (False, 0), "inc-nfs": (True, 1)}
    # One rule: every hardware incident an alert incident is about is covered, and the others are not.
    about = set(m.members["hw_incident_id"].drop_nulls().to_list())
    assert about == {k for k, (covered, _) in cov.items() if covered}
    assert sorted(m.hw_without_alert["incident_id"].to_list()) == ["inc-gpfs", "inc-quota"]


def test_an_uncovered_incident_lasts_until_its_repair(marts) -> None:  # noqa: ANN001
    _, m = marts
    rows = {r["incident_id"]: r for r in m.coverage.iter_rows(named=True)}
    # inc-ost: 20:00:10 to its repair 20:40:05 = 39 min 55 s (its last error line was at 20:00:16).
    assert rows["inc-ost"]["repaired_ts"] == at(20, 40, 5) and rows["inc-ost"]["duration_s"] == 2395.0
    # inc-quota: 20:05:00 to the repair 20:35:00; inc-gpfs: no repair known, to its last evidence 21:30:41.
    gone = {r["incident_id"]: r["duration_s"] for r in m.hw_without_alert.iter_rows(named=True)}
    assert gone == {"inc-quota": 1800.0, "inc-gpfs": 36.0}
    # Without the repairs mart: to the last evidence. (An unrelated alert 19:00-21:00 spans the alert data.)
    other = pl.DataFrame([{"alert_id": 1, "fingerprint": "f", "alertname": "X", "starts_at": at(19, 0),
                           "ends_at": at(21, 0)}])
    again = alert_marts(other, hw_incidents=HW.filter(pl.col("incident_id") == "inc-ost"))
    assert again.hw_without_alert["duration_s"].to_list() == [6.0]


@pytest.mark.parametrize(("alertname", "labels", "on_node", "level"), [
    # capacity: housekeeping, whatever the file system
    ("NodeFilesystemAlmostFull", {"device": "/dev/md0", "fstype": "xfs"}, True, "housekeeping"),
    ("NodeFilesystemSpaceFillingUp", {"fstype": "lustre"}, True, "housekeeping"),
    ("NodeFilesystemAlmostOutOfFiles", {"fstype": "ext4"}, True, "housekeeping"),
    ("HostOutOfDiskSpace", {}, True, "housekeeping"),
    ("LustreOSTFilesystemFull", {"ost": "scratch-OST0001"}, False, "housekeeping"),
    # a network file system's device makes a node alert a storage one, fstype or not
    ("NodeFilesystemReadOnly", {"device": "nfs01:/export/home"}, True, "storage"),
    ("NodeFilesystemReadOnly", {"device": "10.0.9.1@o2ib:/scratch", "fstype": "lustre"}, True, "storage"),
    # a local block device stays the node's
    ("NodeFilesystemReadOnly", {"device": "/dev/nvme0n1p1", "fstype": "ext4"}, True, "node"),
    # look-alikes that are no capacity alert
    ("NodeDown", {}, True, "node"),
    ("SlurmNodeFailed", {}, True, "slurm"),
    ("LustreMDTUnresponsive", {"mdt": "scratch-MDT0000"}, False, "storage"),
])
def test_level_rules_for_capacity_and_file_systems(alertname: str, labels: dict, on_node: bool, level: str) -> None:
    frame = pl.DataFrame({"alertname": [alertname], "target_label": [None], "node": ["hgx001" if on_node else None],
                          "labels": [json.dumps({"alertname": alertname, **labels})]},
                         schema={"alertname": pl.String, "target_label": pl.String, "node": pl.String,
                                 "labels": pl.String})
    assert alert_levels(frame).to_list() == [level]
