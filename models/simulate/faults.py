"""Hardware fault process: when and where nodes break, what breaks, and how long repair takes.

Faults are drawn up front (a Poisson process per node, a few "lemon" nodes failing far more often,
as Meta found) so they do not depend on the job stream; the scheduler applies them: jobs on the node
die (NODE_FAIL or FAILED) and the node is drained until repaired. The component/kind mix is what the
later syslog and alert generators will render (Xid codes, ECC, NVLink, InfiniBand, storage mounts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FaultKind", "FaultEvent", "FAULT_KINDS", "LEMON_NODE_SHARE", "LEMON_RATE_FACTOR", "plan_faults"]

#: Share of nodes that are lemons and how much more often they fail (Meta: 1.2 % of RSC-1 nodes were
#: involved in 13 % of daily jobs' failures).
LEMON_NODE_SHARE = 0.015
LEMON_RATE_FACTOR = 12.0


@dataclass(frozen=True)
class FaultKind:
    """One failure mode. ``effect`` is ``node_fail`` (node stops answering: job NODE_FAIL, requeued)
    or ``job_fail`` (the application crashes: job FAILED, node drained by the health check)."""

    component: str
    kind: str
    effect: str
    weight: float
    repair_median_h: float


#: Mix loosely follows Llama 3 Table 5 and Meta RSC Fig. 4 (GPU and HBM first, then network, host).
FAULT_KINDS: tuple[FaultKind, ...] = (
    FaultKind("gpu", "xid79_fallen_off_bus", "job_fail", 0.16, 24.0),
    FaultKind("gpu", "xid48_dbe_ecc", "job_fail", 0.10, 12.0),
    FaultKind("gpu", "xid94_contained_ecc", "job_fail", 0.08, 2.0),
    FaultKind("gpu", "xid119_gsp_timeout", "job_fail", 0.06, 1.0),
    FaultKind("nvlink", "xid74_nvlink", "job_fail", 0.14, 12.0),
    FaultKind("infiniband", "ib_link_down", "job_fail", 0.16, 3.0),
    FaultKind("storage", "lustre_mount_missing", "job_fail", 0.08, 0.5),
    FaultKind("host", "kernel_panic", "node_fail", 0.10, 2.0),
    FaultKind("host", "dimm_uncorrectable", "node_fail", 0.06, 24.0),
    FaultKind("host", "psu_failure", "node_fail", 0.06, 36.0),
)


@dataclass(frozen=True)
class FaultEvent:
    """One hardware fault on one node at ``ts`` (UTC epoch s); the node is down for ``repair_s``."""

    fault_id: int
    ts: int
    node: int
    component: str
    kind: str
    effect: str
    repair_s: int


def plan_faults(n_nodes: int, t0: int, t1: int, rate_per_1000_node_days: float,
                rng: np.random.Generator) -> tuple[list[FaultEvent], list[int]]:
    """Faults in ``[t0, t1)`` sorted by time, and the lemon node indices.

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
    probs = np.array([k.weight for k in FAULT_KINDS])
    kinds = rng.choice(len(FAULT_KINDS), size=nodes.size, p=probs / probs.sum())
    repair_noise = rng.lognormal(0.0, 0.8, size=nodes.size)
    order = np.lexsort((nodes, times))
    events: list[FaultEvent] = []
    for fid, i in enumerate(order, start=1):
        k = FAULT_KINDS[int(kinds[i])]
        repair = int(min(7 * 86400, max(600, k.repair_median_h * 3600 * repair_noise[i])))
        events.append(FaultEvent(fid, int(times[i]), int(nodes[i]), k.component, k.kind, k.effect, repair))
    return events, lemons
