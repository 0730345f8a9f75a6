"""Hardware fault process: when and where nodes break, what breaks, and how long repair takes.

Faults are drawn up front (a Poisson process per node, a few "lemon" nodes failing far more often,
as Meta found) so they do not depend on the job stream; the scheduler applies them: jobs on the node
die (NODE_FAIL or FAILED) and the node is drained until repaired. The component/kind mix is what the
later syslog and alert generators will render (Xid codes, ECC, NVLink, InfiniBand, storage mounts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FaultKind", "FaultEvent", "FAULT_KINDS", "THERMAL_POWER_KINDS", "FAULT_KIND_BY_NAME", "LEMON_NODE_SHARE",
           "LEMON_RATE_FACTOR", "FabricFault", "FABRIC_KINDS", "fault_mix", "plan_faults", "plan_fabric_faults",
           "fabric_node_faults", "add_second_waves"]

#: Share of nodes that are lemons and how much more often they fail (Meta: 1.2 % of RSC-1 nodes were
#: involved in 13 % of daily jobs' failures).
LEMON_NODE_SHARE = 0.015
LEMON_RATE_FACTOR = 12.0


@dataclass(frozen=True)
class FaultKind:
    """One failure mode. ``effect`` is ``node_fail`` (node stops answering: job NODE_FAIL, requeued)
    or ``job_fail`` (the application crashes: job FAILED, node drained by the health check).
    ``cause_class`` follows the event catalog's classes; ``component_class`` the product's component classes
    (``catalog/component_classes.csv``: gpu, nvlink, network, storage, host, thermal, power), both written to
    truth/incidents.csv so incident counts, MTBF and MTTR can be scored per class."""

    component: str
    kind: str
    effect: str
    weight: float
    repair_median_h: float
    cause_class: str = "hardware"
    component_class: str = "host"


#: Mix loosely follows Llama 3 Table 5 and Meta RSC Fig. 4 (GPU and HBM first, then network, host).
FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind("gpu", "xid79_fallen_off_bus", "job_fail", 0.16, 24.0, component_class="gpu"),
    FaultKind("gpu", "xid48_dbe_ecc", "job_fail", 0.10, 12.0, component_class="gpu"),
    FaultKind("gpu", "xid94_contained_ecc", "job_fail", 0.08, 2.0, component_class="gpu"),
    FaultKind("gpu", "xid119_gsp_timeout", "job_fail", 0.06, 1.0, "driver_firmware", "gpu"),
    FaultKind("nvlink", "xid74_nvlink", "job_fail", 0.14, 12.0, component_class="nvlink"),
    FaultKind("infiniband", "ib_link_down", "job_fail", 0.16, 3.0, component_class="network"),
    FaultKind("storage", "lustre_mount_missing", "job_fail", 0.08, 0.5, "system_software", "storage"),
    FaultKind("host", "kernel_panic", "node_fail", 0.10, 2.0, "system_software"),
    FaultKind("host", "dimm_uncorrectable", "node_fail", 0.06, 24.0),
    FaultKind("host", "psu_failure", "node_fail", 0.06, 36.0, component_class="power"),
)

#: Thermal and power failure modes, drawn only when ``SimulationConfig.thermal_power_fault_share`` > 0 (their
#: share of all node faults): a GPU over its slowdown temperature (a fan or cold-plate fault; NHC's thermal
#: check drains the node), a host thermal shutdown, a node losing both power feeds (PDU / circuit).
THERMAL_POWER_KINDS: tuple[FaultKind, ...] = (
    FaultKind("thermal", "gpu_overtemp", "job_fail", 0.5, 6.0, component_class="thermal"),
    FaultKind("thermal", "host_overtemp_shutdown", "node_fail", 0.2, 8.0, component_class="thermal"),
    FaultKind("power", "node_power_loss", "node_fail", 0.3, 4.0, component_class="power"),
)

#: Power faults whose node can die before it logs a line (``SimulationConfig.silent_power_fault_share``):
#: both feeds lost, or a PSU failing without redundancy left.
SILENT_POWER_KINDS: frozenset[str] = frozenset({"node_power_loss", "psu_failure"})

#: Fabric- and storage-level failure modes: one incident hits many nodes at once (see plan_fabric_faults).
FABRIC_KINDS: tuple[FaultKind, ...] = (
    FaultKind("interconnect_switch", "leaf_switch_down", "job_fail", 0.0, 0.5, component_class="network"),
    FaultKind("storage", "storage_outage", "job_fail", 0.0, 0.75, "system_software", "storage"),
)
FAULT_KIND_BY_NAME: dict[str, FaultKind] = {k.kind: k for k in FAULT_KINDS + THERMAL_POWER_KINDS + FABRIC_KINDS}


def fault_mix(thermal_power_share: float = 0.0) -> tuple[tuple[FaultKind, ...], np.ndarray]:
    """Node-fault kinds and their probabilities: FAULT_KINDS, plus THERMAL_POWER_KINDS taking
    ``thermal_power_share`` of all faults when > 0 (0: exactly the original mix and draws)."""
    base = np.array([k.weight for k in FAULT_KINDS])
    if thermal_power_share <= 0:
        return FAULT_KINDS, base / base.sum()
    extra = np.array([k.weight for k in THERMAL_POWER_KINDS])
    probs = np.concatenate([base / base.sum() * (1 - thermal_power_share), extra / extra.sum() * thermal_power_share])
    return FAULT_KINDS + THERMAL_POWER_KINDS, probs


@dataclass(frozen=True)
class FaultEvent:
    """One hardware fault on one node at ``ts`` (UTC epoch s); the node is down for ``repair_s``.

    ``incident`` is the FabricFault it belongs to (0: a fault of this node alone)."""

    fault_id: int
    ts: int
    node: int
    component: str
    kind: str
    effect: str
    repair_s: int
    incident: int = 0


def plan_faults(n_nodes: int, t0: int, t1: int, rate_per_1000_node_days: float,
                rng: np.random.Generator, thermal_power_share: float = 0.0) -> tuple[list[FaultEvent], list[int]]:
    """Faults in ``[t0, t1)`` sorted by time, and the lemon node indices; kinds from :func:`fault_mix`.

    The per-node rate is scaled so the cluster-wide mean stays ``rate_per_1000_node_days`` even
    though lemons fail ``LEMON_RATE_FACTOR`` times more often.
    """
    n_lemons = int(round(n_nodes * LEMON_NODE_SHARE))
    lemons = sorted(int(i) for i in rng.choice(n_nodes, size=n_lemons, replace=False)) if n_lemons else []
    weight = np.ones(n_nodes)
    weight[lemons] = LEMON_RATE_FACTOR
    weight *= n_nodes / weight.sum()
    days = (t1 - t0) / 86400
    expected = rate_per_1000_node_days / 1000 * days * weight
    counts = rng.poisson(expected)
    nodes = np.repeat(np.arange(n_nodes), counts)
    times = rng.integers(t0, t1, size=nodes.size)
    mix, probs = fault_mix(thermal_power_share)
    kinds = rng.choice(len(mix), size=nodes.size, p=probs)
    repair_noise = rng.lognormal(0.0, 0.8, size=nodes.size)
    order = np.lexsort((nodes, times))
    events: list[FaultEvent] = []
    for fid, i in enumerate(order, start=1):
        k = mix[int(kinds[i])]
        repair = int(min(7 * 86400, max(600, k.repair_median_h * 3600 * repair_noise[i])))
        events.append(FaultEvent(fid, int(times[i]), int(nodes[i]), k.component, k.kind, k.effect, repair))
    return events, lemons


@dataclass(frozen=True)
class FabricFault:
    """A leaf-switch failure or storage outage: ``nodes`` lose the switch / file system at ``ts``
    (each node a few seconds apart in its logs) for ``duration_s``. ``incident`` numbers them from 1 by time.

    ``second_wave``: ``(first_end_s, second_start_s)`` after ``ts`` when a leaf switch came back and failed
    again (links up at the first, down again at the second, until ``duration_s``); (0, 0): one wave."""

    incident: int
    ts: int
    component: str
    kind: str
    cause_class: str
    nodes: tuple[int, ...]
    duration_s: int
    second_wave: tuple[int, int] = (0, 0)


def plan_fabric_faults(n_nodes: int, nodes_per_leaf: int, t0: int, t1: int, leaf_rate_per_1000_switch_days: float,
                       storage_rate_per_1000_days: float, rng: np.random.Generator) -> list[FabricFault]:
    """Leaf-switch failures (Poisson per leaf; every node under the leaf) and storage outages (Poisson
    per cluster; a random 30-100 % of nodes, as an OSS/MDS outage hits the clients using it) in [t0, t1).

    Drawn from their own generator, so enabling them does not move the per-node faults.
    """
    days = (t1 - t0) / 86400
    n_leaves = (n_nodes + nodes_per_leaf - 1) // nodes_per_leaf
    leaf_counts = rng.poisson(leaf_rate_per_1000_switch_days / 1000 * days, size=n_leaves)
    n_storage = int(rng.poisson(storage_rate_per_1000_days / 1000 * days))
    leaf_kind, storage_kind = FABRIC_KINDS
    drafts: list[tuple[int, FaultKind, tuple[int, ...], int]] = []
    for leaf, count in enumerate(leaf_counts):
        members = tuple(range(leaf * nodes_per_leaf, min(n_nodes, (leaf + 1) * nodes_per_leaf)))
        for _ in range(int(count)):
            dur = int(min(12 * 3600, max(300, leaf_kind.repair_median_h * 3600 * rng.lognormal(0.0, 0.8))))
            drafts.append((int(rng.integers(t0, t1)), leaf_kind, members, dur))
    for _ in range(n_storage):
        share = rng.uniform(0.3, 1.0)
        members = tuple(sorted(int(i) for i in rng.choice(n_nodes, size=max(2, int(n_nodes * share)), replace=False)))
        dur = int(min(12 * 3600, max(300, storage_kind.repair_median_h * 3600 * rng.lognormal(0.0, 0.8))))
        drafts.append((int(rng.integers(t0, t1)), storage_kind, members, dur))
    drafts.sort(key=lambda d: (d[0], d[1].kind))
    return [FabricFault(i, ts, k.component, k.kind, k.cause_class, members, dur)
            for i, (ts, k, members, dur) in enumerate(drafts, start=1)]


def fabric_node_faults(fabric: list[FabricFault], faults: list[FaultEvent]) -> list[FaultEvent]:
    """``faults`` plus one job-killing FaultEvent per node of each fabric fault, re-numbered by time.

    Used when fabric faults kill jobs: the scheduler then treats them like any node fault (jobs on the
    node die, the node is drained until the switch / file system is back).
    """
    merged = list(faults)
    for f in fabric:
        merged.extend(FaultEvent(0, f.ts, n, f.component, f.kind, "job_fail", f.duration_s, f.incident)
                      for n in f.nodes)
    merged.sort(key=lambda e: (e.ts, e.node, e.incident))
    return [FaultEvent(i, e.ts, e.node, e.component, e.kind, e.effect, e.repair_s, e.incident)
            for i, e in enumerate(merged, start=1)]


def add_second_waves(fabric: list[FabricFault], share: float, rng: np.random.Generator) -> list[FabricFault]:
    """``fabric`` with ``share`` of the leaf-switch failures given a second wave: the links come back
    10-30 min after the failure and go down again 40-60 min after it (a switch that rebooted into the same
    fault), until the repair, which lasts at least 20 min past the second wave. One fault, one incident."""
    out = []
    for f in fabric:
        if f.kind != "leaf_switch_down" or rng.random() >= share:
            out.append(f)
            continue
        first_end, second = int(rng.uniform(600, 1800)), int(rng.uniform(2400, 3600))
        duration = max(f.duration_s, second + int(rng.uniform(1200, 5400)))
        out.append(FabricFault(f.incident, f.ts, f.component, f.kind, f.cause_class, f.nodes, duration,
                               (first_end, second)))
    return out
