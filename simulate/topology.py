"""Simulated cluster layout: node names, racks, leaf switches, planned maintenance, ``cluster.yaml``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.simulate.checkpointing import reliability_yaml
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig

__all__ = ["NODES_PER_RACK", "NODES_PER_LEAF", "MaintenanceWindow", "node_names", "group_hostlists",
           "plan_maintenance", "cluster_yaml"]

#: Defaults of SimulationConfig.nodes_per_rack / nodes_per_leaf.
NODES_PER_RACK = 16
NODES_PER_LEAF = 32


@dataclass(frozen=True)
class MaintenanceWindow:
    """A planned window: the scheduler starts no job on ``nodes`` whose time limit overlaps it."""

    start: int
    end: int
    nodes: frozenset[int]
    reason: str


def node_names(config: SimulationConfig) -> list[str]:
    """Node names ``<prefix><zero-padded 1..nodes>`` (``rack`` style: ``<prefix>-<rack letter><position in
    rack>``, ``dgx-a01``); node index i is ``names[i]``."""
    if config.node_name_style == "rack":
        per = config.nodes_per_rack
        width = max(2, len(str(per)))
        letters = "abcdefghijklmnopqrstuvwxyz"

        def rack(r: int) -> str:  # a..z, then aa, ab, ...
            return letters[r] if r < len(letters) else rack(r // len(letters) - 1) + letters[r % len(letters)]

        return [f"{config.node_prefix}-{rack(i // per)}{i % per + 1:0{width}d}" for i in range(config.nodes)]
    width = config.node_width
    return [f"{config.node_prefix}{i:0{width}d}" for i in range(1, config.nodes + 1)]


def group_hostlists(names: list[str], size: int, label: str) -> dict[str, str]:
    """Consecutive groups of ``size`` nodes -> hostlist, keyed ``<label>01``, ``<label>02``, ..."""
    n_groups = (len(names) + size - 1) // size
    width = max(2, len(str(n_groups)))
    return {f"{label}{g + 1:0{width}d}": compress_hostlist(names[g * size:(g + 1) * size]) for g in range(n_groups)}


def plan_maintenance(config: SimulationConfig, clock: LocalClock) -> list[MaintenanceWindow]:
    """One or two planned windows at fixed fractions of the horizon (deterministic, seed-independent).

    A 6-hour firmware upgrade on the first two racks around 40 % of the horizon and, for horizons of a
    week or more, a 4-hour leaf-switch replacement on the last leaf around 75 %.
    """
    windows: list[MaintenanceWindow] = []
    n = config.nodes
    day1 = min(config.days - 1, int(config.days * 0.4))
    rack_nodes = frozenset(range(0, min(n, 2 * config.nodes_per_rack)))
    start1 = clock.day_start[day1] + 6 * 3600
    windows.append(MaintenanceWindow(start1, start1 + 6 * 3600, rack_nodes, "GPU firmware and driver upgrade"))
    if config.days >= 7:
        day2 = min(config.days - 1, int(config.days * 0.75))
        last_leaf_first = ((n - 1) // config.nodes_per_leaf) * config.nodes_per_leaf
        leaf_nodes = frozenset(range(last_leaf_first, n))
        start2 = clock.day_start[day2] + 9 * 3600
        windows.append(MaintenanceWindow(start2, start2 + 4 * 3600, leaf_nodes, "leaf switch replacement"))
    return windows


def cluster_yaml(config: SimulationConfig, names: list[str], windows: list[MaintenanceWindow],
                 clock: LocalClock) -> dict[str, Any]:
    """The ``cluster.yaml`` document (see docs/CONTRACTS.md) as a plain dict for ``yaml.safe_dump``.

    ``reliability`` carries the site's checkpoint policy and per-account overrides (checkpointing.py).
    """
    return {
        "cluster": config.cluster,
        "timezone": config.timezone,
        "nodes": compress_hostlist(names),
        "gpus_per_node": config.gpus_per_node,
        "gpu_type": config.gpu_type,
        "racks": group_hostlists(names, config.nodes_per_rack, "r"),
        "leaf_switches": group_hostlists(names, config.nodes_per_leaf, "leaf"),
        "maintenance": [
            {"start": clock.utc(w.start), "end": clock.utc(w.end),
             "nodes": compress_hostlist(names[i] for i in sorted(w.nodes)), "reason": w.reason}
            for w in windows
        ],
        "reliability": reliability_yaml(),
    }
