"""Prometheus / Alertmanager alerts of a simulated cluster: webhook payloads as a receiver logs them, and truth.

What the monitoring stack of the simulated cluster would have sent, consistent with the faults:

* **Node faults** (``truth/faults.csv``): a GPU fault fires dcgm-exporter's ``DCGMXidError`` (labels
  ``Hostname``, ``gpu``, ``UUID``, ``xid``; the GPU the node logs name) plus, by kind, ``GPUUncorrectableECC``
  (Xid 48), ``GPURowRemapPending`` (Xid 94), ``NodeGPUMissing`` (Xid 79), ``DCGMNVLinkErrors`` (Xid 74); an
  InfiniBand link fault ``InfinibandLinkDown`` on the node; a Lustre mount fault ``LustreClientUnhealthy``; a
  node that dies (kernel panic, DIMM UE, PSU) ``NodeDown`` and slurm-exporter's ``SlurmNodeNotResponding``
  (``node`` label, after SlurmdTimeout), a PSU also ipmi-exporter's ``IPMIPowerSupplyFailed`` from the BMC.
* **Leaf-switch failures**: ``LeafSwitchDown`` (``switch="leafNN"``) within a minute or two, then
  ``InfinibandLinkDown`` on every node under the switch that was up and ``NodeNetworkUnreachable`` (IPoIB
  ping) on some of them. **Storage outages**: one server-side ``LustreOSTDown`` (``filesystem``, ``ost``),
  ``LustreClientUnhealthy`` on every client that was hit and ``FilesystemUnreachable`` on many of them
  (``filesystem="lustre"`` — the file system the node logs name, ``mountpoint="/lustre"``, ``fstype``).
* Detection 1-5 min after the fault (a rule's ``for:`` plus scraping), firing until the repair ends (the
  fault's ``repair_s``, the switch / file system coming back) plus a scrape or two. An alert whose cause
  cleared before it could fire does not fire.
* **Thermal and power faults** (``thermal_power_fault_share``): ``GPUTemperatureHigh`` (dcgm) and the BMC's
  ``IPMITemperatureCritical`` for a hot GPU; ``IPMITemperatureCritical`` minutes before a host's thermal
  shutdown; ``PDUOutletPowerLost`` (snmp-pdu) for a node that lost power; node deaths as above.
* **Flapping fault alerts** (``fault_alert_flap_share`` of link-down and GPU-temperature faults): the alert
  fires, resolves 5-20 min later and fires again after ``alert_flap_off_s`` for as long as the fault lasts,
  each firing a new occurrence of the same fingerprint, all of the fault's incident and episode.
  **Second waves** (a leaf switch with ``FabricFault.second_wave``): every alert of the switch resolves after
  the first wave and fires again in the second, all of the one incident.
* Label conventions (``alert_instance_style``): ``port`` ``instance="gpu001:9100"`` and dcgm ``Hostname``;
  ``fqdn`` ``instance="gpu001.cluster.local"``; ``node_label`` an IP ``instance`` with a ``node`` label; BMC
  targets are ``gpu001-bmc`` host names.
* **Noise** with no fault behind it (rates times ``alert_noise_scale``): ``NodeFilesystemSpaceFillingUp`` on
  ``/var/log`` flapping (fires for 5-15 min, resolves for ``alert_flap_off_s``, by default 15-45 min, 5-12
  cycles over a few hours), ``PrometheusTargetDown`` (a scrape
  target missing for minutes), ``NodeClockSkewDetected``, ``HighLoad``. Only on nodes that are powered on.

Alertmanager (:func:`_notifications`), one route for everything: ``group_by: [alertname, cluster]``,
``group_wait`` 30 s, ``group_interval`` 5 min, ``repeat_interval`` 4 h, ``send_resolved``. Each group flushes
every group_interval and notifies when the notification log says so (Alertmanager's ``DedupStage``: a new
firing alert, a newly resolved one, or the repeat interval passed); each notification lists every alert of
the group (firing, and resolved since the last flush), so one alert appears in many notifications.
Identities are Alertmanager's: alerts are keyed by fingerprint (FNV-1a of the sorted label set, as
Prometheus computes it), a second occurrence of the same label set gets a new ``startsAt``, and an
occurrence that fires and resolves between two flushes of a group with nothing else firing is never sent.

Everything random is drawn from its own stream (``default_rng([seed, 6161])``) after the simulation: the
job stream, sacct dumps, node logs and node-state dumps are unchanged.

Files::

    alerts/YYYY-MM-DD.jsonl   one Alertmanager webhook payload (version "4") per line, as a webhook receiver
                              appends request bodies; one file per UTC day of the notification, days without
                              any notification have no file
    truth/alerts.csv          one row per alert occurrence that was notified at least once: fingerprint,
                              starts_at (exactly as in the payloads, ns precision), ends_at (endsAt of its
                              resolved notification; empty while still firing at the horizon), alertname,
                              severity, node, target (switch / file system / OST), truth_incident_id (the
                              incidents.csv id of the fault, or ``noise-<n>``, one per noise occurrence),
                              episode_id (the incident, or ``flap-<n>`` for the cycles of one flapping episode),
                              source (fault / fabric / noise), kind (fault kind or noise kind), fault_id,
                              n_notifications
    truth/summary.json        + n_alert_payloads, n_alert_notifications (alerts over all payloads: the rows
                              the pipeline's raw.alert_notifications gets), n_alerts (distinct fingerprint +
                              startsAt: core.alerts rows), alerts_by_source, alert_files
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import FabricFault, FaultEvent
from gpusre.simulate.incident_truth import Incident
from gpusre.simulate.node_timeline import NodeTimeline

__all__ = ["ALERTS_COLUMNS", "STREAM", "GROUP_WAIT_S", "GROUP_INTERVAL_S", "REPEAT_INTERVAL_S", "RULES",
           "label_fingerprints", "write_alerts"]

ALERTS_COLUMNS = ("fingerprint", "starts_at", "ends_at", "alertname", "severity", "node", "target",
                  "truth_incident_id", "episode_id", "source", "kind", "fault_id", "n_notifications")
#: Seed suffix of this module's random stream.
STREAM = 6161
#: Alertmanager route timing (the defaults of most GPU-cluster configs).
GROUP_WAIT_S = 30
GROUP_INTERVAL_S = 300
REPEAT_INTERVAL_S = 4 * 3600
RECEIVER = "slurm-oncall"
#: Lustre file system and mount point (the node logs' OSTs are ``lustre-OSTxxxx``).
FSNAME = "lustre"
MOUNTPOINT = "/lustre"
#: Noise per node-day: flapping /var/log episodes, scrape targets down, clock skew, high load.
FLAP_EPISODES_PER_NODE_DAY = 0.006
TARGET_DOWN_PER_NODE_DAY = 0.012
CLOCK_SKEW_PER_NODE_DAY = 0.004
HIGH_LOAD_PER_NODE_DAY = 0.015
#: Share of a leaf's nodes whose IPoIB ping also fails; of a storage outage's clients whose stat() fails.
NET_UNREACHABLE_SHARE = 0.4
FS_UNREACHABLE_SHARE = 0.6
_NS = 1_000_000_000
_ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class Rule:
    """A Prometheus alerting rule: severity, expression (for generatorURL), annotation templates."""

    severity: str
    expr: str
    summary: str
    description: str


RULES: dict[str, Rule] = {
    "LeafSwitchDown": Rule(
        "critical", 'ufm_switch_up{role="leaf"} == 0',
        "InfiniBand leaf switch {switch} is down",
        "UFM lost leaf switch {switch} ({instance}); its {ports} node ports are down."),
    "InfinibandLinkDown": Rule(
        "critical", 'count by (instance) (node_infiniband_state_id != 4) > 0',
        "InfiniBand link down on {node}",
        "{down} of 8 InfiniBand ports on {instance} are not ACTIVE ({hcas})."),
    "NodeNetworkUnreachable": Rule(
        "warning", 'probe_success{job="blackbox-icmp-ipoib"} == 0',
        "IPoIB address of {node} unreachable",
        "ICMP probe of {instance} over IPoIB has failed for more than 2 minutes."),
    "LustreOSTDown": Rule(
        "critical", 'lustre_health_check{component="ost"} == 0',
        "Lustre {ost} of {filesystem} is down",
        "Object storage target {ost} on {instance} is unhealthy; clients of {filesystem} hang on I/O."),
    "LustreClientUnhealthy": Rule(
        "critical", 'node_lustre_client_import_state{state!="FULL"} > 0',
        "Lustre client on {node} lost {filesystem}",
        "Lustre client imports of {filesystem} on {instance} are not FULL (mounted at {mountpoint})."),
    "FilesystemUnreachable": Rule(
        "critical", 'node_filesystem_device_error{fstype="lustre"} == 1',
        "{mountpoint} unreachable on {node}",
        "stat() of {mountpoint} ({filesystem}) on {instance} fails or times out."),
    "DCGMXidError": Rule(
        "critical", "DCGM_FI_DEV_XID_ERRORS > 0",
        "GPU {gpu} on {node} reported Xid {xid}",
        "dcgm-exporter on {instance} reports Xid {xid} on GPU {gpu} ({uuid})."),
    "GPUUncorrectableECC": Rule(
        "critical", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[5m]) > 0",
        "Uncorrectable ECC errors on GPU {gpu} of {node}",
        "GPU {gpu} ({uuid}) on {instance} has volatile double-bit ECC errors."),
    "GPURowRemapPending": Rule(
        "warning", "DCGM_FI_DEV_ROW_REMAP_PENDING > 0",
        "Row remap pending on GPU {gpu} of {node}",
        "GPU {gpu} ({uuid}) on {instance} needs a reset to activate remapped rows."),
    "NodeGPUMissing": Rule(
        "critical", "nvidia_gpu_count < 8",
        "GPU missing on {node}",
        "{instance} sees {visible} of 8 GPUs (GPU {gpu} fell off the bus)."),
    "DCGMNVLinkErrors": Rule(
        "critical", "increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[5m]) > 100 or DCGM_FI_DEV_XID_ERRORS == 74",
        "NVLink errors on GPU {gpu} of {node}",
        "GPU {gpu} ({uuid}) on {instance} reports fatal NVLink errors on link {link}."),
    "NodeDown": Rule(
        "critical", 'up{job="node-exporter"} == 0',
        "Node {node} is down",
        "node-exporter on {instance} has not answered scrapes for more than 1 minute."),
    "SlurmNodeNotResponding": Rule(
        "critical", 'slurm_node_state{state=~"down.*"} == 1',
        "Slurm node {node} not responding",
        "slurmctld marked {node} DOWN* (Not responding)."),
    "IPMIPowerSupplyFailed": Rule(
        "critical", 'ipmi_sensor_state{type="Power Supply"} == 2',
        "Power supply failed on {node}",
        "BMC {instance} reports {sensor} in critical state."),
    "GPUTemperatureHigh": Rule(
        "critical", "DCGM_FI_DEV_GPU_TEMP > 90",
        "GPU {gpu} on {node} is overheating",
        "GPU {gpu} ({uuid}) on {instance} is at {temp} C (limit 90 C)."),
    "IPMITemperatureCritical": Rule(
        "critical", 'ipmi_temperature_state == 2',
        "Temperature critical on {node}",
        "BMC {instance} reports {sensor} above its upper critical threshold."),
    "PDUOutletPowerLost": Rule(
        "critical", 'pdu_outlet_power_watts == 0 and on(outlet) pdu_outlet_state == 1',
        "Power lost on outlets of {node}",
        "PDU {pdu} reports no power on the outlets feeding {node}."),
    "NodeFilesystemSpaceFillingUp": Rule(
        "warning", 'predict_linear(node_filesystem_avail_bytes{mountpoint="/var/log"}[6h], 4*3600) < 0',
        "Filesystem {mountpoint} on {node} is predicted to run out of space within 4 hours",
        "Filesystem on {device} at {instance} has {avail}% available space left and is filling up."),
    "PrometheusTargetDown": Rule(
        "warning", "up == 0",
        "Target {instance} of job {job} is down",
        "{instance} of job {job} has been down for more than 2 minutes."),
    "NodeClockSkewDetected": Rule(
        "warning", "node_timex_offset_seconds > 0.05",
        "Clock skew detected on {node}",
        "Clock on {instance} is out of sync by more than 50 ms. Ensure NTP is configured correctly."),
    "HighLoad": Rule(
        "warning", "node_load15 / count without (cpu, mode) (node_cpu_seconds_total{mode=\"idle\"}) > 2",
        "High load on {node}",
        "15-minute load average on {instance} is {load} per CPU."),
}


@dataclass
class _Alert:
    alertname: str
    labels: dict[str, str]
    annotations: dict[str, str]
    fire_ns: int                 # startsAt
    resolve_ns: int | None       # endsAt when it resolves; None: still firing past the horizon
    node: str
    target: str
    truth: str
    episode: str
    source: str
    kind: str
    fault_id: int = 0
    fingerprint: str = ""
    notified: int = 0
    resolved_sent: bool = False
    labels_json: str = field(default="", repr=False)
    annotations_json: str = field(default="", repr=False)
    json_firing: str = field(default="", repr=False)
    json_resolved: str = field(default="", repr=False)


# -- fingerprints --------------------------------------------------------------------------------

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211


def _label_blob(labels: dict[str, str]) -> bytes:
    return b"".join(k.encode() + b"\xff" + v.encode() + b"\xff" for k, v in sorted(labels.items()) if v != "")


def label_fingerprints(label_sets: list[dict[str, str]]) -> list[str]:
    """Alertmanager's fingerprint (Prometheus ``LabelSet.Fingerprint``: 64-bit FNV-1a over the labels
    sorted by name, each ``name 0xFF value 0xFF``) of each label set, as 16 hex digits; vectorized.

    >>> label_fingerprints([{"alertname": "InstanceDown", "instance": "gpu001:9100"}])
    ['8301411030036a33']
    """
    blobs = [_label_blob(ls) for ls in label_sets]
    if not blobs:
        return []
    lengths = np.array([len(b) for b in blobs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8).astype(np.uint64)
    h = np.full(len(blobs), _FNV_OFFSET, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    order = np.argsort(-lengths, kind="stable")  # longest first: the live rows are a prefix
    sorted_len, sorted_start = lengths[order], starts[order]
    hs = h[order]
    for k in range(int(lengths.max())):
        live = int(np.searchsorted(-sorted_len, -k, side="left"))  # rows with length > k
        hs[:live] = (hs[:live] ^ data[sorted_start[:live] + k]) * prime
    h[order] = hs
    return [f"{x:016x}" for x in h.tolist()]


# -- alert generation ----------------------------------------------------------------------------


class _Builder:
    """Label sets of the cluster's exporters; collects alerts."""

    def __init__(self, config: SimulationConfig, names: list[str], leaves: list[str]) -> None:
        self.cfg, self.names, self.leaves = config, names, leaves
        self.cluster = config.cluster
        self.alerts: list[_Alert] = []
        self._uuid: dict[tuple[int, int], str] = {}

    def uuid(self, node: int, gpu: int) -> str:
        key = (node, gpu)
        if key not in self._uuid:
            h = hashlib.md5(f"{self.cluster}/{self.names[node]}/{gpu}".encode()).hexdigest()
            self._uuid[key] = f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        return self._uuid[key]

    def _ip(self, node: int) -> str:
        return f"10.1.{node // 250}.{node % 250 + 2}"

    def node_exporter(self, node: int) -> dict[str, str]:
        """node-exporter target labels in the config's ``alert_instance_style``."""
        name, style = self.names[node], self.cfg.alert_instance_style
        if style == "fqdn":
            return {"instance": f"{name}.cluster.local", "job": "node-exporter"}
        if style == "node_label":
            return {"instance": f"{self._ip(node)}:9100", "job": "node-exporter", "node": name}
        return {"instance": f"{name}:9100", "job": "node-exporter"}

    def dcgm(self, node: int, gpu: int) -> dict[str, str]:
        """dcgm-exporter labels: the host in ``Hostname`` (``node`` with ``node_label``)."""
        name, style = self.names[node], self.cfg.alert_instance_style
        host = {"Hostname": f"{name}.cluster.local"} if style == "fqdn" else (
            {"node": name} if style == "node_label" else {"Hostname": name})
        instance = f"{self._ip(node)}:9400" if style == "node_label" else f"{name}.cluster.local:9400"
        return {"instance": instance, "job": "dcgm-exporter", **host,
                "gpu": str(gpu), "UUID": self.uuid(node, gpu), "device": f"nvidia{gpu}",
                "modelName": f"NVIDIA {self.cfg.gpu_type.upper()} 80GB HBM3"}

    def bmc(self, node: int) -> dict[str, str]:
        """ipmi-exporter labels: the BMC's host name (``gpu001-bmc``), with the port unless ``node_label``."""
        name = self.names[node]
        port = "" if self.cfg.alert_instance_style == "node_label" else ":9290"
        return {"instance": f"{name}-bmc{port}", "job": "ipmi-exporter"}

    def flapping(self, alertname: str, extra: dict[str, str], fire_s: float, end_s: float, rng: np.random.Generator,
                 **kwargs: Any) -> None:
        """An alert that flaps while its cause lasts: fires, resolves 5-20 min later, fires again after the
        config's ``alert_flap_off_s`` gap, ... until ``end_s``; every firing has the same truth and episode."""
        lo, hi = self.cfg.alert_flap_off_s
        t = fire_s
        while t < end_s:
            off = min(end_s, t + float(rng.uniform(300, 1200)))
            self.add(alertname, extra, t, off, **kwargs)
            t = off + float(rng.uniform(lo, hi))

    def add(self, alertname: str, extra: dict[str, str], fire_s: float, resolve_s: float | None, horizon: int,
            node: int, target: str, truth: str, source: str, kind: str, fault_id: int = 0,
            episode: str | None = None, **context: Any) -> None:
        """One alert occurrence; dropped when its cause cleared before it fired or it fires past the horizon."""
        if fire_s >= horizon or (resolve_s is not None and resolve_s <= fire_s + 1):
            return
        rule = RULES[alertname]
        labels = {"alertname": alertname, "cluster": self.cluster, "severity": rule.severity, **extra}
        node_name = self.names[node] if node >= 0 else ""
        ctx = {"node": node_name, **labels, **context, "uuid": labels.get("UUID", "")}
        annotations = {"summary": rule.summary.format(**ctx), "description": rule.description.format(**ctx)}
        resolve_ns = None if resolve_s is None or resolve_s >= horizon else int(resolve_s * _NS)
        self.alerts.append(_Alert(alertname, labels, annotations, int(fire_s * _NS), resolve_ns, node_name, target,
                                  truth, episode or truth, source, kind, fault_id))


def _fault_alerts(b: _Builder, rng: np.random.Generator, faults: list[tuple[FaultEvent, list[str]]],
                  devices: dict[int, dict[str, int]], incident_of_fault: dict[int, str], horizon: int) -> None:
    def delay() -> float:
        return float(rng.uniform(60, 300))

    def clear() -> float:
        return float(rng.uniform(30, 180))

    for f, _jobs in faults:
        if f.incident:
            continue  # a fabric fault's per-node share: rendered once per fabric incident
        truth = incident_of_fault.get(f.fault_id)
        if truth is None:
            continue
        end = f.ts + f.repair_s
        dev = devices.get(f.fault_id) or {"gpu": int(rng.integers(b.cfg.gpus_per_node)), "link": 0, "hca": 0}
        gpu, link, hca = dev.get("gpu", 0), dev.get("link", 0), dev.get("hca", 0)
        n = f.node
        common = dict(horizon=horizon, node=n, target="", truth=truth, source="fault", kind=f.kind, fault_id=f.fault_id)
        if f.kind.startswith("xid"):
            xid = f.kind[3:].split("_")[0]
            t_xid = f.ts + delay()
            b.add("DCGMXidError", {**b.dcgm(n, gpu), "xid": xid}, t_xid, end + clear(), **common)
            if f.kind == "xid48_dbe_ecc":
                b.add("GPUUncorrectableECC", b.dcgm(n, gpu), f.ts + delay(), end + clear(), **common)
            elif f.kind == "xid94_contained_ecc":
                b.add("GPURowRemapPending", b.dcgm(n, gpu), t_xid + float(rng.uniform(0, 120)), end + clear(), **common)
            elif f.kind == "xid79_fallen_off_bus":
                b.add("NodeGPUMissing", b.node_exporter(n), f.ts + delay(), end + clear(), **common,
                      visible=b.cfg.gpus_per_node - 1, gpu=gpu)
            elif f.kind == "xid74_nvlink":
                b.add("DCGMNVLinkErrors", b.dcgm(n, gpu), f.ts + delay(), end + clear(), **common, link=link)
        elif f.kind == "ib_link_down":
            if b.cfg.fault_alert_flap_share > 0 and rng.random() < b.cfg.fault_alert_flap_share:
                b.flapping("InfinibandLinkDown", b.node_exporter(n), f.ts + delay(), end, rng, **common,
                           down=1, hcas=f"mlx5_{hca}")
            else:
                b.add("InfinibandLinkDown", b.node_exporter(n), f.ts + delay(), end + clear(), **common,
                      down=1, hcas=f"mlx5_{hca}")
        elif f.kind == "gpu_overtemp":
            temp = 92 + (gpu * 5) % 9  # as the node logs and NHC print it
            if b.cfg.fault_alert_flap_share > 0 and rng.random() < b.cfg.fault_alert_flap_share:
                b.flapping("GPUTemperatureHigh", b.dcgm(n, gpu), f.ts + delay(), end, rng, **common, temp=temp)
            else:
                b.add("GPUTemperatureHigh", b.dcgm(n, gpu), f.ts + delay(), end + clear(), **common, temp=temp)
            b.add("IPMITemperatureCritical", {**b.bmc(n), "sensor": f"GPU{gpu}_Temp"},
                  f.ts + float(rng.uniform(20, 90)), end + clear(), **common)
        elif f.kind == "lustre_mount_missing":
            fs = {"filesystem": FSNAME, "mountpoint": MOUNTPOINT, "fstype": "lustre"}
            b.add("LustreClientUnhealthy", {**b.node_exporter(n), **fs}, f.ts + delay(), end + clear(),
                  **{**common, "target": FSNAME})
        elif f.effect == "node_fail":
            up = end + float(rng.uniform(60, 240))  # booted, node-exporter scraped again
            if f.kind == "psu_failure":
                b.add("IPMIPowerSupplyFailed", {**b.bmc(n), "sensor": f"PSU{int(rng.integers(1, 3))} Status"},
                      f.ts + float(rng.uniform(20, 90)), end + clear(), **common)
            elif f.kind == "host_overtemp_shutdown":
                b.add("IPMITemperatureCritical", {**b.bmc(n), "sensor": f"CPU{int(rng.integers(1, 3))}_Temp"},
                      f.ts - float(rng.uniform(120, 400)), end + clear(), **common)
            elif f.kind == "node_power_loss":
                rack = n // b.cfg.nodes_per_rack + 1
                b.add("PDUOutletPowerLost", {"instance": f"pdu-r{rack:02d}a:161", "job": "snmp-pdu",
                                             "pdu": f"pdu-r{rack:02d}a", "outlet": f"{n % b.cfg.nodes_per_rack + 1}"},
                      f.ts + float(rng.uniform(20, 90)), end + clear(), **common, pdu=f"pdu-r{rack:02d}a")
            b.add("NodeDown", b.node_exporter(n), f.ts + delay(), up, **common)
            # SlurmdTimeout (300 s) before slurmctld marks the node DOWN*; back when slurmd registers.
            b.add("SlurmNodeNotResponding", {"instance": "slurmctl01:9341", "job": "slurm-exporter",
                                             "node": b.names[n]},
                  f.ts + 300 + float(rng.uniform(0, 120)), up + float(rng.uniform(30, 120)), **common)


def _fabric_alerts(b: _Builder, rng: np.random.Generator, fabric: list[FabricFault],
                   fabric_nodes: dict[int, tuple[int, ...]], incident_of_fabric: dict[int, str], horizon: int) -> None:
    for ff in fabric:
        truth = incident_of_fabric.get(ff.incident)
        hit = fabric_nodes.get(ff.incident, ())
        if truth is None or not hit:
            continue
        end = ff.ts + ff.duration_s
        common = dict(horizon=horizon, truth=truth, source="fabric", kind=ff.kind)
        if ff.kind == "leaf_switch_down":
            leaf = b.leaves[hit[0] // b.cfg.nodes_per_leaf]
            # A second wave: everything resolves after the first wave and fires again in the second.
            first_end, second = ff.second_wave
            waves = [(ff.ts, end)] if not second else [(ff.ts, ff.ts + first_end), (ff.ts + second, end)]
            for w0, w1 in waves:
                b.add("LeafSwitchDown", {"instance": f"{leaf}-mgmt", "job": "ufm-exporter", "switch": leaf},
                      w0 + float(rng.uniform(30, 120)), w1 + float(rng.uniform(30, 120)), node=-1, target=leaf,
                      ports=len(hit), **common)
                for n in hit:
                    b.add("InfinibandLinkDown", b.node_exporter(n), w0 + float(rng.uniform(60, 300)),
                          w1 + float(rng.uniform(30, 180)), node=n, target="", down=8,
                          hcas=", ".join(f"mlx5_{h}" for h in range(8)), **common)
                    if rng.random() < NET_UNREACHABLE_SHARE:
                        b.add("NodeNetworkUnreachable", {"instance": f"{b.names[n]}.ib.cluster.local",
                                                         "job": "blackbox-icmp-ipoib"},
                              w0 + float(rng.uniform(90, 300)), w1 + float(rng.uniform(30, 180)), node=n, target="",
                              **common)
        else:
            ost = f"{FSNAME}-OST{int(rng.integers(16)):04x}"
            oss = f"oss{int(ost[-1], 16) // 4 + 1:02d}"
            b.add("LustreOSTDown", {"instance": f"{oss}.cluster.local:32221", "job": "lustre-exporter",
                                    "filesystem": FSNAME, "ost": ost},
                  ff.ts + float(rng.uniform(30, 150)), end + float(rng.uniform(30, 120)), node=-1, target=ost,
                  **common)
            fs = {"filesystem": FSNAME, "mountpoint": MOUNTPOINT, "fstype": "lustre"}
            for n in hit:
                b.add("LustreClientUnhealthy", {**b.node_exporter(n), **fs}, ff.ts + float(rng.uniform(60, 300)),
                      end + float(rng.uniform(30, 180)), node=n, target=FSNAME, **common)
                if rng.random() < FS_UNREACHABLE_SHARE:
                    b.add("FilesystemUnreachable", {**b.node_exporter(n), **fs}, ff.ts + float(rng.uniform(90, 300)),
                          end + float(rng.uniform(30, 180)), node=n, target=FSNAME, **common)


def _noise_alerts(b: _Builder, rng: np.random.Generator, t0: int, horizon: int, timeline: NodeTimeline | None) -> None:
    cfg = b.cfg
    node_days = cfg.nodes * (horizon - t0) / 86400
    drafts: list[tuple[float, int, str, dict[str, str], float, str, str, dict[str, Any]]] = []

    def place(rate: float) -> tuple[np.ndarray, np.ndarray]:
        count = int(rng.poisson(rate * cfg.alert_noise_scale * node_days))
        return rng.integers(cfg.nodes, size=count), rng.uniform(t0, horizon, size=count)

    # Flapping /var/log: each episode cycles fire (5-15 min) / resolve (15-45 min).
    nodes, starts = place(FLAP_EPISODES_PER_NODE_DAY)
    cycles = rng.integers(5, 13, size=nodes.size)
    on = rng.uniform(300, 900, size=int(cycles.sum()))
    off = rng.uniform(*cfg.alert_flap_off_s, size=int(cycles.sum()))
    avail = rng.uniform(3, 9, size=nodes.size)
    k = 0
    for ep, (n, t, c) in enumerate(zip(nodes.tolist(), starts.tolist(), cycles.tolist(), strict=True), start=1):
        labels = {**b.node_exporter(n), "device": "/dev/md1", "fstype": "xfs", "mountpoint": "/var/log"}
        for _ in range(c):
            drafts.append((t, n, "NodeFilesystemSpaceFillingUp", labels, t + on[k], "disk_space_flapping",
                           f"flap-{ep}", {"avail": f"{avail[ep - 1]:.1f}"}))
            t += on[k] + off[k]
            k += 1
    nodes, starts = place(TARGET_DOWN_PER_NODE_DAY)
    which = rng.integers(3, size=nodes.size)
    dur = np.clip(rng.lognormal(np.log(360), 0.6, size=nodes.size), 120, 3600)
    for n, t, w, d in zip(nodes.tolist(), starts.tolist(), which.tolist(), dur.tolist(), strict=True):
        dcgm = b.dcgm(n, 0)
        labels = (b.node_exporter(n), {"instance": dcgm["instance"], "job": "dcgm-exporter"}, b.bmc(n))[w]
        drafts.append((t, n, "PrometheusTargetDown", labels, t + d, "target_down", "", {}))
    nodes, starts = place(CLOCK_SKEW_PER_NODE_DAY)
    dur = rng.uniform(600, 5400, size=nodes.size)
    for n, t, d in zip(nodes.tolist(), starts.tolist(), dur.tolist(), strict=True):
        drafts.append((t, n, "NodeClockSkewDetected", b.node_exporter(n), t + d, "clock_skew", "", {}))
    nodes, starts = place(HIGH_LOAD_PER_NODE_DAY)
    dur = rng.uniform(900, 7200, size=nodes.size)
    load = rng.uniform(2.1, 4.0, size=nodes.size)
    for n, t, d, ld in zip(nodes.tolist(), starts.tolist(), dur.tolist(), load.tolist(), strict=True):
        drafts.append((t, n, "HighLoad", b.node_exporter(n), t + d, "high_load", "", {"load": f"{ld:.2f}"}))

    if timeline is not None and drafts:
        up = timeline.up_mask(np.array([d[1] for d in drafts]), np.array([int(d[0]) for d in drafts]))
        drafts = [d for d, ok in zip(drafts, up.tolist(), strict=True) if ok]
    drafts.sort(key=lambda d: (d[0], d[1], d[2]))
    for i, (t, n, alertname, labels, end, kind, episode, ctx) in enumerate(drafts, start=1):
        truth = f"noise-{i}"
        b.add(alertname, labels, t, end, horizon, n, "", truth, "noise", kind, episode=episode or truth, **ctx)


def _merge_overlaps(alerts: list[_Alert]) -> list[_Alert]:
    """One occurrence per fingerprint at a time: a label set already firing absorbs a later overlapping
    occurrence (Prometheus keeps one alert per label set; it stays firing until the last cause clears)."""
    alerts.sort(key=lambda a: (a.fingerprint, a.fire_ns))
    kept: list[_Alert] = []
    for a in alerts:
        prev = kept[-1] if kept and kept[-1].fingerprint == a.fingerprint else None
        if prev is not None and (prev.resolve_ns is None or a.fire_ns < prev.resolve_ns):
            if prev.resolve_ns is not None:
                prev.resolve_ns = None if a.resolve_ns is None else max(prev.resolve_ns, a.resolve_ns)
            continue
        kept.append(a)
    return kept


# -- Alertmanager --------------------------------------------------------------------------------


def _notifications(alerts: list[_Alert], horizon_ns: int) -> list[tuple[int, list[int], bool]]:
    """Notifications of one group (``alerts`` sorted by startsAt): ``(flush time ns, alert indices, any firing)``.

    Event-driven over the group's flush grid (group_wait after creation, then every group_interval), with
    Alertmanager's notification-log rule per flush: notify when a firing alert was not in the last
    notification's firing set, when all alerts resolved and the last notification had firing ones, when a
    resolved alert was not in its resolved set, or when repeat_interval has passed; then drop the resolved
    alerts (a group left empty is deleted; the notification log outlives it)."""
    inf = 1 << 62
    wait, interval, repeat = GROUP_WAIT_S * _NS, GROUP_INTERVAL_S * _NS, REPEAT_INTERVAL_S * _NS
    fire = [a.fire_ns for a in alerts]
    resolve = [inf if a.resolve_ns is None else a.resolve_ns for a in alerts]
    fps = [a.fingerprint for a in alerts]
    out: list[tuple[int, list[int], bool]] = []
    entry: tuple[frozenset[str], frozenset[str], int] | None = None
    store: dict[str, int] = {}
    i, n, t = 0, len(alerts), 0
    while True:
        if not store:
            if i >= n or fire[i] >= horizon_ns:
                break
            t = fire[i] + wait
        else:
            e = min(resolve[a] for a in store.values())
            if i < n:
                e = min(e, fire[i])
            if entry is not None:
                e = min(e, entry[2] + repeat + 1)
            t += interval * max(1, -(-(e - t) // interval))
        if t >= horizon_ns:
            break
        while i < n and fire[i] <= t:
            store[fps[i]] = i  # the same label set again replaces the older occurrence
            i += 1
        firing = frozenset(fp for fp, a in store.items() if resolve[a] > t)
        resolved = frozenset(fp for fp, a in store.items() if resolve[a] <= t)
        if entry is None:
            send = bool(firing)
        elif not firing <= entry[0]:
            send = True
        elif not firing:
            send = bool(entry[0])
        elif not resolved <= entry[1]:
            send = True
        else:
            send = t - entry[2] > repeat
        if send:
            out.append((t, list(store.values()), bool(firing)))
            entry = (firing, resolved, t)
        for fp in resolved:
            del store[fp]
    return out


def _go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it (sorted map keys; <, >, & escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _rfc3339(clock: LocalClock, ns: int) -> str:
    s, frac = divmod(ns, _NS)
    return f"{clock.utc(s)[:-1]}.{frac:09d}Z"


def _incident_maps(incidents: list[Incident], fabric: list[FabricFault],
                   fabric_nodes: dict[int, tuple[int, ...]]) -> tuple[dict[int, str], dict[int, str]]:
    by_fault: dict[int, str] = {}
    by_key: dict[tuple[str, int, tuple[int, ...]], str] = {}
    for inc in incidents:
        if inc.kind in ("leaf_switch_down", "storage_outage"):
            by_key[(inc.kind, inc.start, inc.nodes)] = inc.incident_id
        else:
            for fid in inc.fault_ids:
                by_fault[fid] = inc.incident_id
    by_fabric = {}
    for ff in fabric:
        key = (ff.kind, ff.ts, fabric_nodes.get(ff.incident, ()))
        if key in by_key:
            by_fabric[ff.incident] = by_key[key]
    return by_fault, by_fabric


def write_alerts(out_dir: Path, config: SimulationConfig, clock: LocalClock, names: list[str],
                 faults: list[tuple[FaultEvent, list[str]]], fabric: list[FabricFault], incidents: list[Incident],
                 fabric_nodes: dict[int, tuple[int, ...]], fault_devices: dict[int, dict[str, int]],
                 timeline: NodeTimeline | None) -> dict[str, Any]:
    """Write ``alerts/*.jsonl``, ``truth/alerts.csv`` and the alert keys of ``truth/summary.json``; returns
    those keys. ``incidents``: truth incidents (incident_truth.build_incidents); ``fabric_nodes`` and
    ``fault_devices``: the nodes each fabric fault hit and the device each node fault hit (node logs)."""
    rng = np.random.default_rng([config.seed, STREAM])
    t0, horizon = clock.day_start[0], clock.day_start[-1]
    n_leaves = (config.nodes + config.nodes_per_leaf - 1) // config.nodes_per_leaf
    width = max(2, len(str(n_leaves)))
    b = _Builder(config, names, [f"leaf{g + 1:0{width}d}" for g in range(n_leaves)])
    by_fault, by_fabric = _incident_maps(incidents, fabric, fabric_nodes)
    _fault_alerts(b, rng, faults, fault_devices, by_fault, horizon)
    _fabric_alerts(b, rng, fabric, fabric_nodes, by_fabric, horizon)
    _noise_alerts(b, rng, t0, horizon, timeline)

    alerts = b.alerts
    for a, fp in zip(alerts, label_fingerprints([a.labels for a in alerts]), strict=True):
        a.fingerprint = fp
    alerts = _merge_overlaps(alerts)
    prom, am = f"http://prometheus.{config.cluster}.example:9090", f"http://alertmanager.{config.cluster}.example:9093"
    urls = {name: _go_json(f"{prom}/graph?g0.expr={quote(rule.expr, safe='')}&g0.tab=1")
            for name, rule in RULES.items()}
    for a in alerts:
        a.labels_json, a.annotations_json = _go_json(a.labels), _go_json(a.annotations)
        body = (f'"labels":{a.labels_json},"annotations":{a.annotations_json},'
                f'"startsAt":"{_rfc3339(clock, a.fire_ns)}",')
        tail = f',"generatorURL":{urls[a.alertname]},"fingerprint":"{a.fingerprint}"}}'
        a.json_firing = f'{{"status":"firing",{body}"endsAt":"{_ZERO_TIME}"{tail}'
        if a.resolve_ns is not None:
            a.json_resolved = f'{{"status":"resolved",{body}"endsAt":"{_rfc3339(clock, a.resolve_ns)}"{tail}'

    groups: dict[str, list[_Alert]] = {}
    for a in sorted(alerts, key=lambda a: (a.fire_ns, a.fingerprint)):
        groups.setdefault(a.alertname, []).append(a)
    sends: list[tuple[int, str, str]] = []
    n_notifications = 0
    common_json: dict[tuple[tuple[str, str], ...], str] = {}

    def common(items: dict[str, str]) -> str:
        key = tuple(items.items())
        if key not in common_json:
            common_json[key] = _go_json(items)
        return common_json[key]

    for alertname, members in sorted(groups.items()):
        group_json = _go_json({"alertname": alertname, "cluster": config.cluster})
        key_json = _go_json(f'{{}}:{{alertname="{alertname}", cluster="{config.cluster}"}}')
        for t, idx, any_firing in _notifications(members, horizon * _NS):
            # Alertmanager lists a group's alerts by job, instance, then fingerprint.
            listed = sorted((members[i] for i in idx),
                            key=lambda a: (a.labels.get("job", ""), a.labels.get("instance", ""), a.fingerprint))
            if len(listed) == 1:
                labels_json, ann_json = listed[0].labels_json, listed[0].annotations_json
            else:
                common_labels, common_ann = dict(listed[0].labels), dict(listed[0].annotations)
                for a in listed[1:]:
                    if len(common_labels) > 2:  # alertname and cluster are common to the group
                        common_labels = {k: v for k, v in common_labels.items() if a.labels.get(k) == v}
                    if common_ann:
                        common_ann = {k: v for k, v in common_ann.items() if a.annotations.get(k) == v}
                labels_json, ann_json = common(common_labels), common(common_ann)
            parts = []
            for a in listed:
                firing = a.resolve_ns is None or a.resolve_ns > t
                parts.append(a.json_firing if firing else a.json_resolved)
                a.notified += 1
                if not firing:
                    a.resolved_sent = True
            n_notifications += len(parts)
            payload = (f'{{"receiver":"{RECEIVER}","status":"{"firing" if any_firing else "resolved"}",'
                       f'"alerts":[{",".join(parts)}],"groupLabels":{group_json},'
                       f'"commonLabels":{labels_json},"commonAnnotations":{ann_json},'
                       f'"externalURL":"{am}","version":"4","groupKey":{key_json},"truncatedAlerts":0}}')
            sends.append((t, alertname, payload))
    sends.sort(key=lambda s: (s[0], s[1]))

    alert_dir = out_dir / "alerts"
    alert_dir.mkdir(parents=True, exist_ok=True)
    by_day: dict[str, list[str]] = {}
    for t, _, payload in sends:
        by_day.setdefault(clock.utc(t // _NS)[:10], []).append(payload)
    for day, payloads in sorted(by_day.items()):
        (alert_dir / f"{day}.jsonl").write_text("\n".join(payloads) + "\n", encoding="utf-8")

    seen = sorted((a for a in alerts if a.notified), key=lambda a: (a.fire_ns, a.fingerprint))
    with (out_dir / "truth" / "alerts.csv").open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(ALERTS_COLUMNS)
        for a in seen:
            ends = _rfc3339(clock, a.resolve_ns) if a.resolved_sent and a.resolve_ns is not None else ""
            w.writerow((a.fingerprint, _rfc3339(clock, a.fire_ns), ends, a.alertname, a.labels["severity"], a.node,
                        a.target, a.truth, a.episode, a.source, a.kind, a.fault_id or "", a.notified))
    keys: dict[str, Any] = {
        "n_alert_payloads": len(sends),
        "n_alert_notifications": n_notifications,
        "n_alerts": len(seen),
        "alerts_by_source": dict(sorted(Counter(a.source for a in seen).items())),
        "alert_files": len(by_day),
    }
    path = out_dir / "truth" / "summary.json"
    if path.exists():
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary.update(keys)
        path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return keys
