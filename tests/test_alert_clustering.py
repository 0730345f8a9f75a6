"""Alert clustering: hand-built incidents (leaf switch, GPU with a hardware incident, unrelated disk
alert, storage outage), adjusted Rand index on a synthetic trace with known truth, rule-quality
verdicts, coverage, blast radius, idempotency, and a real Dagster materialization."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from gpusre.models.alerts.clustering import (
    COVERAGE_SCHEMA,
    INCIDENT_SCHEMA,
    MEMBER_SCHEMA,
    RULE_QUALITY_SCHEMA,
    AlertClusteringSettings,
    Topology,
    alert_levels,
    alert_marts,
    cluster_alerts,
    load_alert_levels,
    template_cooccurrence,
)

T0 = datetime(2026, 9, 1, 12, tzinfo=timezone.utc)
N_NODES = 512
NODES = [f"gpu{i:03d}" for i in range(1, N_NODES + 1)]
RACKS = {f"r{r:02d}": f"gpu[{16 * r + 1:03d}-{16 * r + 16:03d}]" for r in range(N_NODES // 16)}
LEAVES = {f"leaf{k + 1:02d}": f"gpu[{32 * k + 1:03d}-{32 * k + 32:03d}]" for k in range(N_NODES // 32)}
TOPO = Topology.from_groups(RACKS, LEAVES)
TEMPLATE_IDS: dict[str, int] = {}


class Alerts:
    """Builds core.alerts rows; ``truth`` records the intended incident of each alert."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.truth: list[str] = []

    def add(self, alertname: str, at: datetime, *, node: str | None = None, target: str | None = None,
            target_label: str | None = None, labels: dict | None = None, minutes: float | None = 20,
            fingerprint: str | None = None, truth: str = "") -> int:
        lab = {"alertname": alertname, **({"instance": f"{node}:9100"} if node else {}),
               **({target_label: target} if target_label else {}), **(labels or {})}
        fp = fingerprint or hashlib.sha1(json.dumps(lab, sort_keys=True).encode()).hexdigest()[:16]
        alert_id = len(self.rows) + 1
        self.rows.append({
            "alert_id": alert_id, "fingerprint": fp, "alertname": alertname,
            "status": "resolved" if minutes is not None else "firing", "severity": "critical",
            "node": node, "target": target, "target_label": target_label, "starts_at": at,
            "ends_at": at + timedelta(minutes=minutes) if minutes is not None else None,
            "labels": json.dumps(lab, separators=(",", ":")), "summary": alertname,
            "template_id": TEMPLATE_IDS.setdefault(alertname, len(TEMPLATE_IDS) + 1), "n_notifications": 2,
        })
        self.truth.append(truth)
        return alert_id

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, schema={
            "alert_id": pl.Int64, "fingerprint": pl.String, "alertname": pl.String, "status": pl.String,
            "severity": pl.String, "node": pl.String, "target": pl.String, "target_label": pl.String,
            "starts_at": pl.Datetime("us", "UTC"), "ends_at": pl.Datetime("us", "UTC"), "labels": pl.String,
            "summary": pl.String, "template_id": pl.Int64, "n_notifications": pl.Int64})


def hw_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={
        "incident_id": pl.String, "component": pl.String, "cause_class": pl.String, "severity": pl.String,
        "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String),
        "scope": pl.String, "leaf_switch": pl.String})


NODE_EXPORTER = {"job": "node-exporter"}
DCGM = {"job": "dcgm-exporter", "gpu": "3"}
LUSTRE_MOUNT = {"job": "node-exporter", "mountpoint": "/lustre", "fstype": "lustre", "device": "10.0.0.1@o2ib:/lustre1"}


def hand_case() -> tuple[Alerts, pl.DataFrame, dict[str, int]]:
    a = Alerts()
    ids: dict[str, int] = {}
    # A leaf switch dies: link-down on 12 of its nodes within 3 minutes; the switch alert fires 2 min
    # after the first node alert (the switch exporter scrapes less often) and is still the root.
    for k in range(12):
        a.add("NodeInfinibandLinkDown", T0 + timedelta(seconds=15 * k), node=f"gpu{k + 1:03d}",
              labels={**NODE_EXPORTER, "device": "mlx5_0"}, truth="leaf")
    ids["switch"] = a.add("InfinibandSwitchDown", T0 + timedelta(minutes=2), target="leaf01", target_label="switch",
                          labels={"job": "ufm"}, truth="leaf")
    # A GPU falls off the bus on gpu040 (another leaf); the logs made it hardware incident inc-gpu040.
    ids["xid"] = a.add("GpuXidError", T0 + timedelta(minutes=1), node="gpu040", labels={**DCGM, "xid": "79"}, truth="xid")
    # At the same time a disk fills up on gpu070 (rack r04): unrelated.
    ids["disk"] = a.add("HostOutOfDiskSpace", T0 + timedelta(seconds=90), node="gpu070",
                        labels={**NODE_EXPORTER, "mountpoint": "/scratch", "fstype": "xfs"}, truth="disk")
    # Three hours later Lustre goes read-only on 30 clients across several racks within 4 minutes.
    for k in range(30):
        a.add("NodeFilesystemReadOnly", T0 + timedelta(hours=3, seconds=8 * k), node=f"gpu{100 + 3 * k:03d}",
              target="10.0.0.1@o2ib:/lustre1", target_label="device", labels=LUSTRE_MOUNT, truth="lustre")
    hw = hw_frame([{"incident_id": "inc-gpu040", "component": "pcie_bus", "cause_class": "hardware", "severity": "critical",
                    "start_ts": T0 - timedelta(seconds=30), "end_ts": T0 + timedelta(minutes=5), "nodes": ["gpu040"],
                    "scope": "node", "leaf_switch": None}])
    return a, hw, ids


def _by_alert(incidents: pl.DataFrame, members: pl.DataFrame) -> dict[int, dict]:
    inc = {r["incident_id"]: r for r in incidents.iter_rows(named=True)}
    return {r["alert_id"]: inc[r["incident_id"]] for r in members.iter_rows(named=True)}


def test_hand_built_incidents() -> None:
    a, hw, ids = hand_case()
    incidents, members = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.schema == pl.Schema(INCIDENT_SCHEMA) and members.schema == pl.Schema(MEMBER_SCHEMA)
    assert incidents.height == 4
    of = _by_alert(incidents, members)

    leaf = of[ids["switch"]]
    assert leaf["n_alerts"] == 13 and leaf["n_nodes"] == 12
    assert leaf["root_alert_id"] == ids["switch"] and leaf["root_level"] == "fabric"
    assert leaf["root_cause_reason"] == "earliest alert at the most upstream level (fabric: leaf switch leaf01)"
    assert leaf["root_cause_candidate"] == "InfinibandSwitchDown on leaf01"
    assert leaf["scope"] == "leaf_switch" and leaf["start_ts"] == T0
    assert leaf["alertnames"] == ["InfinibandSwitchDown", "NodeInfinibandLinkDown"]

    xid = of[ids["xid"]]
    assert xid["n_alerts"] == 1 and xid["root_alert_id"] == ids["xid"] and xid["hw_incident_id"] == "inc-gpu040"
    assert xid["root_cause_reason"] == "hardware incident inc-gpu040 (pcie_bus) on gpu040"
    assert xid["scope"] == "node"

    disk = of[ids["disk"]]
    # A disk filling up is capacity housekeeping (alert_levels.csv), never failure evidence.
    assert disk["n_alerts"] == 1 and disk["hw_incident_id"] is None and disk["root_level"] == "housekeeping"
    assert disk["root_cause_reason"] == "earliest alert at the most upstream level (housekeeping: capacity on gpu070)"

    lustre = incidents.filter(pl.col("alertnames").list.contains("NodeFilesystemReadOnly")).row(0, named=True)
    assert lustre["n_alerts"] == 30 and lustre["n_nodes"] == 30
    assert lustre["root_level"] == "storage" and lustre["scope"] == "storage"
    assert lustre["root_cause_reason"] == "earliest alert at the most upstream level (storage: lustre1)"
    assert lustre["start_ts"] == T0 + timedelta(hours=3)
    assert members.filter(pl.col("is_root")).height == 4
    assert all(i.startswith("ainc-") for i in incidents["incident_id"])


def test_a_flapping_rule_is_one_incident_per_flapping_episode() -> None:
    # A disk alert on gpu070 fires 10 min, resolves for 20-60 min and fires again, for 5 hours (in
    # sessions of its own: nothing else fires in between); a day later it flaps again.
    a = Alerts()
    lab = {**NODE_EXPORTER, "mountpoint": "/var/log", "fstype": "xfs"}
    at = T0
    for quiet in (20, 45, 60, 30, 50, 25):
        a.add("NodeFilesystemSpaceFillingUp", at, node="gpu070", labels=lab, minutes=10, fingerprint="fp-var-log")
        at += timedelta(minutes=10 + quiet)
    a.add("NodeFilesystemSpaceFillingUp", T0 + timedelta(days=1), node="gpu070", labels=lab, minutes=10,
          fingerprint="fp-var-log")
    a.add("NodeFilesystemSpaceFillingUp", T0 + timedelta(days=1, hours=1), node="gpu070", labels=lab, minutes=None,
          fingerprint="fp-var-log")
    incidents, _ = cluster_alerts(a.frame(), TOPO, None)
    assert sorted(incidents.select("n_alerts", "flaps").rows()) == [(2, 1), (6, 5)]
    # A flap window of 0 keeps every firing apart (sessions are 10 min).
    apart, _ = cluster_alerts(a.frame(), TOPO, None, AlertClusteringSettings(flap_minutes=0))
    assert apart.height == 8


def test_second_wave_joins_while_the_hardware_incident_is_open() -> None:
    # Links under leaf01 go down at T0 and again 50 min later; the switch incident from the node logs is
    # open across both waves: one alert incident.
    a = Alerts()
    for wave in (0, 50):
        for k in range(6):
            a.add("NodeInfinibandLinkDown", T0 + timedelta(minutes=wave, seconds=15 * k), node=f"gpu{k + 1:03d}",
                  labels={**NODE_EXPORTER, "device": "mlx5_0", "wave": str(wave)}, minutes=5)
    hw = hw_frame([{"incident_id": "inc-leaf01", "component": "network_switch", "cause_class": "hardware",
                    "severity": "high", "start_ts": T0 - timedelta(seconds=20), "end_ts": T0 + timedelta(hours=2),
                    "nodes": [f"gpu{k + 1:03d}" for k in range(6)], "scope": "leaf_switch", "leaf_switch": "leaf01"}])
    incidents, _ = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.select("n_alerts", "hw_incident_id").rows() == [(12, "inc-leaf01")]
    # Without the hardware incident the waves are 50 min apart: two.
    assert cluster_alerts(a.frame(), TOPO, None)[0].height == 2


def test_root_is_the_server_side_even_when_a_client_matches_a_hardware_incident() -> None:
    # The OST goes down; 8 s later a client that logged Lustre errors (a storage hardware incident)
    # fires, then 20 more clients.
    a = Alerts()
    ost = a.add("LustreOSTDown", T0, target="lustre1-OST0003", target_label="ost",
                labels={"job": "lustre-exporter", "filesystem": "lustre1"})
    first = a.add("LustreClientUnhealthy", T0 + timedelta(seconds=8), node="gpu100",
                  labels={**NODE_EXPORTER, "filesystem": "lustre1"})
    for k in range(20):
        a.add("LustreClientUnhealthy", T0 + timedelta(seconds=20 + 5 * k), node=f"gpu{101 + k:03d}",
              labels={**NODE_EXPORTER, "filesystem": "lustre1"})
    hw = hw_frame([{"incident_id": "inc-lustre", "component": "storage", "cause_class": "system_software",
                    "severity": "high", "start_ts": T0, "end_ts": T0 + timedelta(minutes=30),
                    "nodes": ["gpu100"], "scope": "node", "leaf_switch": None}])
    incidents, members = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert row["root_alert_id"] == ost and row["root_cause_candidate"] == "LustreOSTDown on lustre1-OST0003"
    assert row["hw_incident_id"] == "inc-lustre" and row["scope"] == "storage"
    assert members.filter(pl.col("alert_id") == first).item(0, "hw_incident_id") == "inc-lustre"


def test_levels_from_the_rule_file() -> None:
    a = Alerts()
    a.add("InfinibandPortDown", T0, target="leaf07", target_label="switch")
    a.add("LustreOstAlmostFull", T0, target="lustre1-OST0003", target_label="ost")
    a.add("NodeFilesystemReadOnly", T0, node="gpu001", labels=LUSTRE_MOUNT)
    a.add("HostOutOfDiskSpace", T0, node="gpu001", labels={"mountpoint": "/scratch", "fstype": "xfs"})
    a.add("NodeDown", T0, node="gpu001", labels=NODE_EXPORTER)
    a.add("GpuHighTemperature", T0, node="gpu001", labels=DCGM)
    a.add("DCGMExporterLag", T0, node="gpu001", labels={"job": "dcgm-exporter"})
    a.add("PrometheusRuleFailures", T0, target="prometheus-0", target_label="instance")
    # An OST almost full and a host out of disk space are capacity housekeeping, not storage / node faults.
    assert alert_levels(a.frame()).to_list() == ["fabric", "housekeeping", "storage", "housekeeping", "node", "gpu",
                                                 "gpu", "other"]
    incidents, _ = cluster_alerts(a.frame().tail(1), TOPO)
    assert incidents["root_cause_reason"].to_list() == ["earliest alert at the most upstream level (other: prometheus-0)"]
    assert incidents["scope"].to_list() == ["service"]  # an alert on no node is a service alert, not cluster-wide


def test_rerun_and_input_order_give_the_same_ids() -> None:
    a, hw, _ = hand_case()
    first = cluster_alerts(a.frame(), TOPO, hw)
    again = cluster_alerts(a.frame().sample(fraction=1.0, shuffle=True, seed=3), TOPO, hw)
    assert first[0].equals(again[0]) and first[1].equals(again[1])


def test_blast_radius_counts_infrastructure_failures_on_the_incident_nodes() -> None:
    a, hw, ids = hand_case()
    end = T0 + timedelta(minutes=1)
    jobs = pl.DataFrame({
        "job_id": ["1", "2", "3", "4", "5"],
        "state": ["NODE_FAIL", "FAILED", "FAILED", "COMPLETED", "FAILED"],
        "end_ts": [end, end, end, end, T0 + timedelta(hours=2)],
        "nodes": [["gpu040"], ["gpu040"], ["gpu001", "gpu002"], ["gpu040"], ["gpu040"]],
    })
    attribution = pl.DataFrame({"job_id": ["1", "2", "3"], "attribution": ["infrastructure", "user", "infrastructure"],
                                "lost_gpu_hours": [4.0, 0.0, 8.0]})
    incidents, members = cluster_alerts(a.frame(), TOPO, hw, jobs=jobs, attribution=attribution)
    of = _by_alert(incidents, members)
    # Job 2 is the user's, 4 completed, 5 ended long after; job 3 died under the dead leaf.
    assert (of[ids["xid"]]["n_jobs_killed"], of[ids["xid"]]["lost_gpu_hours"]) == (1, 4.0)
    assert (of[ids["switch"]]["n_jobs_killed"], of[ids["switch"]]["lost_gpu_hours"]) == (1, 8.0)
    assert of[ids["disk"]]["n_jobs_killed"] == 0


# -- synthetic trace with known truth ----------------------------------------------------------------


STORAGE = [("lustre1", "/lustre", "lustre"), ("scratch2", "/scratch2", "lustre"), ("home", "/home", "nfs4")]


def synthetic_trace(days: float = 7, mean_gap_s: float = 1800, seed: int = 11) -> Alerts:
    """Incidents of seven kinds arriving as a Poisson process (mean ``mean_gap_s`` apart: 48 a day
    on 512 nodes by default, a busy cluster) on the 512-node topology; every alert records the
    incident it belongs to. Independent incidents that happen to hit the same nodes within minutes
    are the clustering's only mistakes (single linkage merges them; an SRE would look at them
    together): denser traces score lower (about 0.93 at 72 incidents a day, 0.85 at 144)."""
    rng = np.random.default_rng(seed)
    a = Alerts()
    t = T0
    end = T0 + timedelta(days=days)
    k = 0
    kinds = ["gpu", "node_down", "noise", "flap", "leaf", "rack", "storage"]
    weights = np.array([28, 14, 30, 10, 6, 5, 7], dtype=float)
    while t < end:
        t += timedelta(seconds=float(rng.exponential(mean_gap_s)))
        k += 1
        kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
        truth = f"{kind}-{k}"
        node = NODES[int(rng.integers(0, N_NODES))]

        def at(max_s: float) -> datetime:
            return t + timedelta(seconds=float(rng.uniform(0, max_s)))

        if kind == "gpu":
            a.add("GpuXidError", t, node=node, labels={**DCGM, "xid": "79"}, truth=truth)
            if rng.random() < 0.6:
                a.add("GpuEccDoubleBitError", at(120), node=node, labels=DCGM, truth=truth)
            if rng.random() < 0.5:
                a.add("NodeHealthCheckFailed", at(300), node=node, labels={"job": "slurm"}, truth=truth)
        elif kind == "node_down":
            a.add("NodeDown", t, node=node, labels=NODE_EXPORTER, truth=truth)
            a.add("IpmiPowerSupplyFailure", at(200), node=node, labels={"job": "ipmi-exporter"}, truth=truth)
        elif kind == "noise":
            name = ["HostHighCpuLoad", "HostOutOfMemory", "HostOutOfDiskSpace"][int(rng.integers(0, 3))]
            a.add(name, t, node=node, labels=NODE_EXPORTER, truth=truth)
        elif kind == "flap":
            fp = f"flap-{k}"
            for c in range(int(rng.integers(3, 7))):
                a.add("HostNetworkInterfaceFlapping", t + timedelta(minutes=6 * c), node=node, minutes=2,
                      labels={**NODE_EXPORTER, "device": "eth0"}, fingerprint=fp, truth=truth)
        elif kind == "leaf":
            leaf = int(rng.integers(0, len(LEAVES)))
            a.add("InfinibandSwitchDown", at(150), target=f"leaf{leaf + 1:02d}", target_label="switch", truth=truth)
            for n in rng.choice(32, size=int(rng.integers(4, 33)), replace=False):
                a.add("NodeInfinibandLinkDown", at(180), node=NODES[32 * leaf + int(n)],
                      labels={**NODE_EXPORTER, "device": "mlx5_0"}, truth=truth)
        elif kind == "rack":
            rack = int(rng.integers(0, len(RACKS)))
            for n in range(16):
                a.add("NodeDown", at(120), node=NODES[16 * rack + n], labels=NODE_EXPORTER, truth=truth)
        else:  # storage: a server fails, clients across the cluster see the mount go read-only
            fs, mount, fstype = STORAGE[int(rng.integers(0, len(STORAGE)))]
            if fstype == "lustre":
                a.add("LustreOstDown", t, target=f"{fs}-OST{int(rng.integers(0, 64)):04x}", target_label="ost", truth=truth)
            else:
                a.add("NfsServerDown", t, target=f"{fs}-server", target_label="instance", truth=truth)
            for n in rng.choice(N_NODES, size=int(rng.integers(10, 60)), replace=False):
                a.add("NodeFilesystemReadOnly", at(240), node=NODES[int(n)], truth=truth,
                      labels={"job": "node-exporter", "mountpoint": mount, "fstype": fstype})
    return a


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_adjusted_rand_index_on_a_synthetic_trace(seed: int) -> None:
    a = synthetic_trace(seed=seed)
    frame = a.frame()
    incidents, members = cluster_alerts(frame, TOPO)
    truth = dict(zip(frame["alert_id"].to_list(), a.truth))
    predicted = members.sort("alert_id")
    ari = adjusted_rand_score([truth[i] for i in predicted["alert_id"]], predicted["incident_id"].to_list())
    print(f"ARI = {ari:.4f} over {frame.height} alerts, {len(set(a.truth))} true / {incidents.height} found incidents")
    assert ari >= 0.9
    # Storage root: the server (storage level, and earliest), linked to its clients by co-occurrence.
    storage = incidents.filter(pl.col("alertnames").list.contains("NodeFilesystemReadOnly"))
    assert (storage["root_level"] == "storage").mean() >= 0.9
    assert storage["root_cause_candidate"].str.contains("^(LustreOstDown|NfsServerDown)").mean() >= 0.9
    # Leaf failures: the switch alert is the root.
    leaf = incidents.filter(pl.col("alertnames").list.contains("InfinibandSwitchDown"))
    assert (leaf["root_cause_reason"].str.contains("leaf switch")).mean() >= 0.9


def test_template_cooccurrence_finds_the_ost_and_client_templates() -> None:
    a = synthetic_trace(days=14)
    frame = a.frame().sort("starts_at")
    ts = frame["starts_at"].dt.epoch("us").to_numpy()
    from gpusre.models.alerts.clustering import sessionize

    settings = AlertClusteringSettings()
    pairs = template_cooccurrence(frame["template_id"].cast(pl.String), sessionize(ts, settings.gap_us), ts, settings)
    related = {(r["a"], r["b"]) for r in pairs.iter_rows(named=True)}
    client = str(TEMPLATE_IDS["NodeFilesystemReadOnly"])
    for server in ("LustreOstDown", "NfsServerDown"):
        assert tuple(sorted((str(TEMPLATE_IDS[server]), client))) in related
    noise = str(TEMPLATE_IDS["HostHighCpuLoad"])
    assert not any(noise in p for p in related)


# -- hygiene ---------------------------------------------------------------------------------------


def test_rule_quality_verdicts_and_missing_coverage() -> None:
    a = Alerts()
    hw_rows = []
    # Useful: 6 GPU alerts, each on a node with a hardware incident.
    for k in range(6):
        at = T0 + timedelta(hours=5 * k)
        node = f"gpu{200 + k:03d}"
        a.add("GpuXidError", at, node=node, labels=DCGM)
        hw_rows.append({"incident_id": f"inc-{k}", "component": "gpu", "cause_class": "hardware", "severity": "high",
                        "start_ts": at - timedelta(minutes=2), "end_ts": at, "nodes": [node], "scope": "node",
                        "leaf_switch": None})
    # Noise: 10 CPU-load alerts that never meet a hardware incident or a killed job.
    for k in range(10):
        a.add("HostHighCpuLoad", T0 + timedelta(hours=5 * k + 2), node=f"gpu{300 + k:03d}", labels=NODE_EXPORTER)
    # Flapping: one interface firing and resolving 6 times in an hour.
    for k in range(6):
        a.add("HostNetworkInterfaceFlapping", T0 + timedelta(hours=1, minutes=9 * k), node="gpu400", minutes=3,
              labels=NODE_EXPORTER, fingerprint="flappy")
    # Too few: two alerts.
    for k in range(2):
        a.add("RaidDegraded", T0 + timedelta(hours=7 + 9 * k), node="gpu450", labels=NODE_EXPORTER)
    # A hardware incident no alert saw (inside the alert span), and one long before any alert.
    hw_rows.append({"incident_id": "inc-silent", "component": "gpu_memory", "cause_class": "hardware", "severity": "high",
                    "start_ts": T0 + timedelta(hours=3), "end_ts": T0 + timedelta(hours=3, minutes=5),
                    "nodes": ["gpu480"], "scope": "node", "leaf_switch": None})
    hw_rows.append({"incident_id": "inc-old", "component": "gpu", "cause_class": "hardware", "severity": "high",
                    "start_ts": T0 - timedelta(days=30), "end_ts": T0 - timedelta(days=30), "nodes": ["gpu480"],
                    "scope": "node", "leaf_switch": None})
    marts = alert_marts(a.frame(), topology=TOPO, hw_incidents=hw_frame(hw_rows))
    q = {r["alertname"]: r for r in marts.rule_quality.iter_rows(named=True)}
    assert marts.rule_quality.schema == pl.Schema(RULE_QUALITY_SCHEMA)
    assert q["GpuXidError"]["verdict"] == "useful" and q["GpuXidError"]["precision"] == 1.0
    assert q["GpuXidError"]["with_hw_incident"] == 6
    assert q["HostHighCpuLoad"]["verdict"] == "noise: consider silencing" and q["HostHighCpuLoad"]["precision"] == 0.0
    assert q["HostNetworkInterfaceFlapping"]["verdict"] == "flapping" and q["HostNetworkInterfaceFlapping"]["flapping"] == 1
    assert q["HostNetworkInterfaceFlapping"]["median_duration_s"] == 180.0
    assert q["RaidDegraded"]["verdict"] == "too few to judge"
    assert marts.hw_without_alert["incident_id"].to_list() == ["inc-silent"]
    # The judged incidents: the six the GPU alerts were about (each started 2 min before the first
    # alert about it; inc-0 also before the first alert of all) and the silent one; not inc-old.
    cov = {r["incident_id"]: (r["covered"], r["n_alerts"]) for r in marts.coverage.iter_rows(named=True)}
    assert marts.coverage.schema == pl.Schema(COVERAGE_SCHEMA)
    assert cov == {**{f"inc-{k}": (True, 1) for k in range(6)}, "inc-silent": (False, 0)}
    # Alerts without any hardware incident or failed job in their span: precision cannot be judged.
    blind = {r["alertname"]: r for r in alert_marts(a.frame(), topology=TOPO).rule_quality.iter_rows(named=True)}
    assert blind["HostHighCpuLoad"]["precision"] is None and blind["HostHighCpuLoad"]["verdict"] == "too few to judge"
    assert blind["HostNetworkInterfaceFlapping"]["verdict"] == "flapping"
    # 6 flapping alerts are one incident (same node, 9 min apart); the rest stand alone.
    assert marts.incidents.height == 6 + 10 + 1 + 2
    daily = marts.daily
    assert daily["alerts"].sum() == 24
    # Notifications are counted by the day they were received (raw notifications, not core.alerts):
    # without them the count is unknown, not the alerts' n_notifications on their start day.
    assert daily["notifications"].null_count() == daily.height
    assert daily["incidents"].sum() == 19 and daily["day"].to_list()[0] == T0.date()


def test_floods_and_daily_compression() -> None:
    a = Alerts()
    # A quiet background (one alert every 2 h on a different node) and a leaf failure flood.
    for k in range(36):
        a.add("HostHighCpuLoad", T0 + timedelta(hours=2 * k + 1), node=NODES[(37 * k) % N_NODES], labels=NODE_EXPORTER)
    flood_at = T0 + timedelta(days=2)
    a.add("InfinibandSwitchDown", flood_at + timedelta(minutes=1), target="leaf03", target_label="switch")
    for k in range(32):
        a.add("NodeInfinibandLinkDown", flood_at + timedelta(seconds=5 * k), node=NODES[64 + k], labels=NODE_EXPORTER)
    marts = alert_marts(a.frame(), topology=TOPO)
    assert marts.floods.height == 1
    flood = marts.floods.row(0, named=True)
    assert flood["incidents"] == 1 and flood["n_alerts"] == 33 and flood["compression_ratio"] == 33.0
    assert flood["flood_id"].startswith("flood-") and flood["peak_per_bucket"] == 33
    assert marts.incidents.filter(pl.col("in_flood"))["n_alerts"].to_list() == [33]
    day = marts.daily.filter(pl.col("day") == flood_at.date()).row(0, named=True)
    assert day["flood_episodes"] == 1 and day["alerts"] == 12 + 33 and day["incidents"] == 13
    assert day["compression_ratio"] == pytest.approx(45 / 13)


def test_empty_input_gives_empty_marts_with_columns() -> None:
    marts = alert_marts(pl.DataFrame(), topology=TOPO, hw_incidents=None)
    for frame in marts:
        assert frame.height == 0 and frame.width > 0
    assert marts.incidents.schema == pl.Schema(INCIDENT_SCHEMA)


# -- the Dagster asset on a real warehouse ----------------------------------------------------------


CLUSTER_YAML = (
    "cluster: t\nnodes: 'gpu[001-512]'\n"
    "racks: {" + ", ".join(f"{k}: '{v}'" for k, v in RACKS.items()) + "}\n"
    "leaf_switches: {" + ", ".join(f"{k}: '{v}'" for k, v in LEAVES.items()) + "}\n"
)


def _materialize(tmp_path: Path, fill, extra_yaml: str = "") -> tuple[dg.ExecuteInProcessResult, Path]:  # noqa: ANN001
    from gpusre.assets.alert_incidents import alert_incident_marts
    from gpusre.models.warehouse import connect
    from gpusre.pipelines.resources import default_resources

    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "cluster.yaml").write_text(CLUSTER_YAML + extra_yaml)
    wh = tmp_path / "w.duckdb"
    con = connect(wh)  # applies the DDL
    fill(con)
    con.close()
    result = dg.materialize([alert_incident_marts], resources=default_resources(str(wh), str(landing), str(tmp_path / "r")))
    return result, wh


def _hand_case_filler(job_state: str):  # noqa: ANN202 - a fill callback
    """Fill a warehouse with the hand case's alerts and hardware incidents and one job ('7', ``job_state``)
    on gpu040 ending a minute after T0, attributed to the infrastructure with 4 lost GPU-hours."""
    a, hw, ids = hand_case()

    def fill(con) -> None:  # noqa: ANN001
        alerts = a.frame().with_columns(pl.lit("alerts/x.json").alias("source_file"),
                                        pl.lit("alerts/x.json").alias("first_received_file"))
        con.register("_a", alerts.to_arrow())
        con.execute("INSERT INTO core.alerts BY NAME SELECT * REPLACE (labels::JSON AS labels) FROM _a")
        con.register("_hw", hw.to_arrow())
        con.execute("CREATE TABLE marts.hw_incidents AS SELECT * FROM _hw")
        con.execute("INSERT INTO core.jobs (job_id, state, end_ts, nodes, n_gpus, restarts, source_file, line_no) VALUES "
                    "('7', ?, ?, ['gpu040'], 8, 0, 's.psv', 2)", [job_state, T0 + timedelta(minutes=1)])
        con.execute("CREATE TABLE marts.job_failure_attribution AS SELECT '7' AS job_id, 'infrastructure' AS attribution, "
                    "4.0::DOUBLE AS lost_gpu_hours, NULL::VARCHAR AS incident_id")
    return fill, ids


def test_asset_materializes_all_marts(tmp_path: Path) -> None:
    from gpusre.models.warehouse import connect

    fill, ids = _hand_case_filler("NODE_FAIL")

    result, wh = _materialize(tmp_path, fill)
    assert result.success
    con = connect(wh, read_only=True)
    try:
        counts = {t: con.sql(f"SELECT count(*) FROM marts.{t}").fetchall()[0][0] for t in (
            "alert_incidents", "alert_incident_members", "alert_daily", "alert_floods", "alert_rule_quality",
            "hw_incidents_without_alert")}
        root = con.execute("SELECT root_cause_reason, n_jobs_killed, lost_gpu_hours FROM marts.alert_incidents "
                       "WHERE root_alert_id = ?", [ids["xid"]]).fetchall()
        ids_first = con.sql("SELECT incident_id FROM marts.alert_incidents ORDER BY 1").fetchall()
    finally:
        con.close()
    assert counts == {"alert_incidents": 4, "alert_incident_members": 45, "alert_daily": 1,
                      "alert_floods": counts["alert_floods"], "alert_rule_quality": 5, "hw_incidents_without_alert": 0}
    assert root == [("hardware incident inc-gpu040 (pcie_bus) on gpu040", 1, 4.0)]
    mat = {m.asset_key.path[-1]: m for m in result.get_asset_materialization_events()}
    meta = mat["alert_incidents"].materialization.metadata
    assert meta["dagster/row_count"].value == 4 and meta["compression_ratio"].value == 11.25
    assert "InfinibandSwitchDown on leaf01" in meta["top_incidents"].value
    # Rerun: same incident ids.
    from gpusre.assets.alert_incidents import alert_incident_marts
    from gpusre.pipelines.resources import default_resources

    assert dg.materialize([alert_incident_marts], resources=default_resources(
        str(wh), str(tmp_path / "landing"), str(tmp_path / "r"))).success
    con = connect(wh, read_only=True)
    try:
        assert con.sql("SELECT incident_id FROM marts.alert_incidents ORDER BY 1").fetchall() == ids_first
    finally:
        con.close()


@pytest.mark.parametrize(("extra_yaml", "killed"), [
    ("", 0),  # default killed_states (FAILED, NODE_FAIL): a TIMEOUT job is not counted
    ("alerts: {clustering: {killed_states: [FAILED, NODE_FAIL, TIMEOUT]}}\n", 1),
])
def test_asset_honours_killed_states_setting(tmp_path: Path, extra_yaml: str, killed: int) -> None:
    """The asset's pre-filter reads cluster.yaml killed_states: a site adding TIMEOUT gets its TIMEOUT jobs."""
    from gpusre.models.warehouse import connect

    fill, ids = _hand_case_filler("TIMEOUT")

    result, wh = _materialize(tmp_path, fill, extra_yaml)
    assert result.success
    con = connect(wh, read_only=True)
    try:
        got = con.execute("SELECT n_jobs_killed FROM marts.alert_incidents WHERE root_alert_id = ?",
                          [ids["xid"]]).fetchall()
    finally:
        con.close()
    assert got == [(killed,)]


def test_unknown_killed_state_is_a_config_error() -> None:
    from gpusre.pipelines.config import ClusterConfigError, parse_cluster_config

    with pytest.raises(ClusterConfigError, match=r"killed_states.*TIMEOUTT"):
        parse_cluster_config("alerts: {clustering: {killed_states: [FAILED, TIMEOUTT]}}\n")


def test_asset_without_alerts_writes_empty_marts(tmp_path: Path) -> None:
    from gpusre.models.warehouse import connect

    result, wh = _materialize(tmp_path, lambda con: con.execute("DROP TABLE IF EXISTS core.alerts"))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        cols = [r[0] for r in con.sql("DESCRIBE marts.alert_incidents").fetchall()]
        assert cols == list(INCIDENT_SCHEMA)
        assert con.sql("SELECT count(*) FROM marts.alert_rule_quality").fetchall() == [(0,)]
    finally:
        con.close()


def test_docstring_examples() -> None:
    import doctest

    import gpusre.models.alerts.clustering as module

    assert doctest.testmod(module).failed == 0


_LABEL_VALUES = st.one_of(
    st.sampled_from(["lustre", "nfs4", "ext4", "dcgm-exporter", "node-exporter", "my-gpu-job", "", "fuse.sshfs"]),
    st.text(max_size=12))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["HostHighCpuLoad", "LustreOstDown", "GpuXidError", "IBLinkDown", "FilesystemFull"]),
    st.sampled_from([None, "instance", "fstype", "switch", "mountpoint"]),
    st.booleans(),
    st.one_of(st.none(), st.dictionaries(st.sampled_from(["fstype", "job", "mountpoint", "fs", "device", "a-b"]),
                                         _LABEL_VALUES, max_size=4))), min_size=1, max_size=30))
def test_alert_levels_read_the_labels_json_like_a_json_parser(rows: list[tuple]) -> None:
    # Oracle: each row's labels parsed by Python's json and the catalog's rules applied one by one;
    # repeated label texts are common (an alert's labels are its fingerprint's), so rows are doubled.
    rows = rows + rows
    frame = pl.DataFrame({
        "alertname": [r[0] for r in rows], "target_label": [r[1] for r in rows],
        "node": ["gpu0001" if r[2] else None for r in rows],
        "labels": [None if r[3] is None else json.dumps(r[3]) for r in rows]},
        schema={"alertname": pl.String, "target_label": pl.String, "node": pl.String, "labels": pl.String})
    rules = load_alert_levels()
    expected = []
    for alertname, target_label, has_node, labels in rows:
        values = {k: v for k, v in (labels or {}).items()}
        expected.append(next((r.level for r in rules if r.matches(alertname, target_label, has_node, values)), "other"))
    assert alert_levels(frame, rules).to_list() == expected


def test_an_alert_joins_the_incident_nearest_its_start_not_the_earliest_in_its_window() -> None:
    # gpu001: a Lustre blip at 09:35 (recovered in seconds), then the GPU falls off the bus at 10:00 and
    # the Xid alert fires at 10:00:15. Both incidents lie in the alert's window [start - 10 min, end + 30 min];
    # the alert is about the Xid. The blip had no alert of its own: it is missing alert coverage.
    t = datetime(2026, 11, 30, 9, 35, tzinfo=timezone.utc)
    a = Alerts()
    a.add("HostHighCpuLoad", t - timedelta(hours=1), node="gpu009", labels=NODE_EXPORTER)  # opens the alert span
    a.add("GPUXid79", t + timedelta(minutes=25, seconds=15), node="gpu001", labels=DCGM)
    hw = hw_frame([
        {"incident_id": "inc-lustre", "component": "storage", "cause_class": "system_software", "severity": "high",
         "start_ts": t, "end_ts": t + timedelta(seconds=5), "nodes": ["gpu001"], "scope": "node", "leaf_switch": None},
        {"incident_id": "inc-xid79", "component": "pcie_bus", "cause_class": "hardware", "severity": "critical",
         "start_ts": t + timedelta(minutes=25), "end_ts": t + timedelta(minutes=25), "nodes": ["gpu001"],
         "scope": "node", "leaf_switch": None},
    ])
    marts = alert_marts(a.frame(), topology=TOPO, hw_incidents=hw)
    assert marts.incidents.sort("start_ts")["hw_incident_id"].to_list() == [None, "inc-xid79"]
    assert marts.hw_without_alert["incident_id"].to_list() == ["inc-lustre"]


def test_an_alert_between_two_hardware_incidents_links_only_its_nearest() -> None:
    # gpu004: Xid 79 at 10:00, PSU lost at 10:35 (two faults, two hardware incidents). Alerts: the Xid
    # at 10:00:20, a temperature alert at 10:26, the PSU at 10:37 — three sessions (gaps > 10 min).
    # The 10:26 alert lies in both windows ([09:50, 10:30] and [10:25, 11:05]); its nearest evidence
    # is the PSU (9 min vs 26 min): it joins the PSU alert and does not chain the Xid in.
    t = datetime(2026, 11, 10, 10, tzinfo=timezone.utc)
    a = Alerts()
    xid = a.add("GpuXidError", t + timedelta(seconds=20), node="gpu004", labels=DCGM, minutes=None)
    temp = a.add("NodeHighTemperature", t + timedelta(minutes=26), node="gpu004", labels=NODE_EXPORTER, minutes=None)
    psu = a.add("IPMIPowerSupplyFailed", t + timedelta(minutes=37), node="gpu004", labels={"job": "ipmi"}, minutes=None)
    hw = hw_frame([
        {"incident_id": "inc-xid", "component": "pcie_bus", "cause_class": "hardware", "severity": "critical",
         "start_ts": t, "end_ts": t, "nodes": ["gpu004"], "scope": "node", "leaf_switch": None},
        {"incident_id": "inc-psu", "component": "host_power", "cause_class": "hardware", "severity": "critical",
         "start_ts": t + timedelta(minutes=35), "end_ts": t + timedelta(minutes=35), "nodes": ["gpu004"],
         "scope": "node", "leaf_switch": None},
    ])
    incidents, members = cluster_alerts(a.frame(), TOPO, hw)
    by_alert = _by_alert(incidents, members)
    assert by_alert[xid]["n_alerts"] == 1 and by_alert[xid]["hw_incident_id"] == "inc-xid"
    assert by_alert[temp]["incident_id"] == by_alert[psu]["incident_id"]
    assert by_alert[psu]["n_alerts"] == 2 and by_alert[psu]["hw_incident_id"] == "inc-psu"


@pytest.mark.parametrize("client_labels", [
    # node_exporter's filesystem alerts: no file-system label, the NID and fsname in `device`.
    {"device": "10.0.9.1@o2ib:/scratch", "fstype": "lustre", "mountpoint": "/lustre/scratch"},
    # ... a failover pair of NIDs, or only the mountpoint.
    {"device": "10.0.9.1@o2ib:10.0.9.2@o2ib:/scratch", "fstype": "lustre", "mountpoint": "/lustre/scratch"},
    {"fstype": "lustre", "mountpoint": "/lustre/scratch/"},
])
@pytest.mark.parametrize(("server", "server_labels"), [
    ("LustreOSTDown", {"ost": "scratch-OST0003"}), ("LustreMDTUnhealthy", {"fsname": "scratch"})])
def test_lustre_server_alert_and_node_exporter_client_alerts_share_the_file_system(
        client_labels: dict, server: str, server_labels: dict) -> None:
    # oss01 (no Slurm node) at 14:00; gpu009-011 see /lustre/scratch fail 1-3 min later. All four name
    # file system `scratch` -> one incident, the server side its root.
    t = datetime(2026, 11, 10, 14, tzinfo=timezone.utc)
    a = Alerts()
    label = next(iter(server_labels))
    root = a.add(server, t, target=server_labels[label] if label == "ost" else None,
                 target_label="ost" if label == "ost" else None,
                 labels={"instance": "oss01:9169", **({} if label == "ost" else server_labels)})
    for k in (1, 2, 3):
        device = client_labels.get("device")
        a.add("NodeFilesystemDeviceError", t + timedelta(minutes=k), node=f"gpu{8 + k:03d}",
              target=device, target_label="device" if device else None, labels={**NODE_EXPORTER, **client_labels})
    incidents, _ = cluster_alerts(a.frame(), TOPO, None)
    row = incidents.row(0, named=True)
    assert incidents.height == 1 and row["n_alerts"] == 4 and row["root_alert_id"] == root
    assert row["root_level"] == "storage" and row["scope"] == "storage"


def test_storage_alerts_of_different_file_systems_stay_apart() -> None:
    # /lustre/scratch and /lustre/home fail a minute apart on clients in different racks and leaves:
    # two file systems, nothing else shared.
    t = datetime(2026, 11, 10, 14, tzinfo=timezone.utc)
    a = Alerts()
    a.add("NodeFilesystemReadOnly", t, node="gpu009",
          labels={**NODE_EXPORTER, "fstype": "lustre", "device": "10.0.9.1@o2ib:/scratch", "mountpoint": "/lustre/scratch"})
    a.add("NodeFilesystemReadOnly", t + timedelta(minutes=1), node="gpu100",
          labels={**NODE_EXPORTER, "fstype": "lustre", "device": "10.0.9.1@o2ib:/home", "mountpoint": "/lustre/home"})
    assert cluster_alerts(a.frame(), TOPO, None)[0].height == 2


def test_an_incident_is_in_a_flood_when_one_of_its_alerts_started_inside_it() -> None:
    # The switch alert fires at 11:52, 8 min before its 32 link-downs flood the 12:00 bucket: the
    # incident starts before the episode, yet its alerts are the flood -> in_flood, and the episode
    # counts it (32 alerts inside / 1 incident).
    a = Alerts()
    for k in range(36):
        a.add("HostHighCpuLoad", T0 + timedelta(hours=2 * k + 1), node=NODES[(37 * k) % N_NODES], labels=NODE_EXPORTER)
    flood_at = T0 + timedelta(days=2)
    switch = a.add("InfinibandSwitchDown", flood_at - timedelta(minutes=8), target="leaf03", target_label="switch")
    for k in range(32):
        a.add("NodeInfinibandLinkDown", flood_at + timedelta(seconds=5 * k), node=NODES[64 + k], labels=NODE_EXPORTER)
    marts = alert_marts(a.frame(), topology=TOPO)
    flood = marts.floods.row(0, named=True)
    assert marts.floods.height == 1 and flood["start_ts"] == flood_at
    assert (flood["n_alerts"], flood["incidents"], flood["compression_ratio"]) == (32, 1, 32.0)
    leaf = marts.incidents.filter(pl.col("root_alert_id") == switch).row(0, named=True)
    assert leaf["start_ts"] == flood_at - timedelta(minutes=8) and leaf["n_alerts"] == 33 and leaf["in_flood"]


def test_a_short_session_gap_alone_is_a_valid_setting() -> None:
    """Only ``gap_minutes: 3`` in cluster.yaml: the peer gap (default 5 min) follows it down; a peer gap
    set above the session gap is still an error."""
    from pydantic import ValidationError

    assert AlertClusteringSettings(gap_minutes=3).peer_gap_us == 3 * 60_000_000
    assert AlertClusteringSettings().peer_gap_us == 5 * 60_000_000
    assert AlertClusteringSettings(gap_minutes=3, peer_gap_minutes=2).peer_gap_us == 2 * 60_000_000
    with pytest.raises(ValidationError, match="peer_gap_minutes must not exceed gap_minutes"):
        AlertClusteringSettings(gap_minutes=3, peer_gap_minutes=4)


def test_the_first_alert_about_a_hardware_incident_is_its_root() -> None:
    # gpu003: Xid 79 at 02:00:05 (evidence until 02:30). The DCGM Xid alert fires 25 s later, the node
    # exporter goes quiet at 02:03: both about the same incident, one alert incident. The root is the
    # first alarm about the fault (the Xid alert), not the node-level one for being more upstream.
    t = datetime(2026, 11, 10, 2, 0, 5, tzinfo=timezone.utc)
    a = Alerts()
    xid = a.add("GpuXidError", t + timedelta(seconds=25), node="gpu003", labels=DCGM, minutes=None)
    a.add("NodeExporterDown", t + timedelta(minutes=3), node="gpu003", labels=NODE_EXPORTER, minutes=None)
    hw = hw_frame([{"incident_id": "inc-xid", "component": "pcie_bus", "cause_class": "hardware",
                    "severity": "critical", "start_ts": t, "end_ts": t + timedelta(minutes=30), "nodes": ["gpu003"],
                    "scope": "node", "leaf_switch": None}])
    incidents, _ = cluster_alerts(a.frame(), TOPO, hw)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert (row["root_alert_id"], row["hw_incident_id"], row["n_alerts"]) == (xid, "inc-xid", 2)


def test_a_job_another_hardware_incident_killed_is_not_this_alert_incidents() -> None:
    # gpu011: a /var/log filling alert (no hardware incident) at 12:00; job 7 ran on gpu011 and gpu030
    # and failed at 12:01, attributed to a GPU fault on gpu030 (inc-gpu). The disk alert does not claim
    # it (it once did: the job counted in two alert incidents); the GPU alert about inc-gpu does.
    t = datetime(2026, 8, 17, 12, tzinfo=timezone.utc)
    a = Alerts()
    disk = a.add("NodeFilesystemSpaceFillingUp", t, node="gpu011", labels=NODE_EXPORTER, minutes=None)
    gpu = a.add("GpuXidError", t + timedelta(seconds=30), node="gpu030", labels=DCGM, minutes=None)
    hw = hw_frame([{"incident_id": "inc-gpu", "component": "pcie_bus", "cause_class": "hardware",
                    "severity": "critical", "start_ts": t, "end_ts": t, "nodes": ["gpu030"], "scope": "node",
                    "leaf_switch": None}])
    jobs = pl.DataFrame({"job_id": ["7"], "state": ["FAILED"], "end_ts": [t + timedelta(minutes=1)],
                         "nodes": [["gpu011", "gpu030"]]})
    attribution = pl.DataFrame({"job_id": ["7"], "attribution": ["infrastructure"], "lost_gpu_hours": [74.67],
                                "incident_id": ["inc-gpu"]})
    incidents, members = cluster_alerts(a.frame(), TOPO, hw, jobs=jobs, attribution=attribution)
    of = _by_alert(incidents, members)
    assert of[disk]["incident_id"] != of[gpu]["incident_id"]
    assert (of[disk]["n_jobs_killed"], of[disk]["lost_gpu_hours"]) == (0, 0.0)
    assert (of[gpu]["n_jobs_killed"], of[gpu]["lost_gpu_hours"]) == (1, 74.67)
