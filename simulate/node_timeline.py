"""When each simulated node is powered off and when it (re)booted: what its logs can and cannot show.

A node that died (kernel panic, PSU, DIMM UE) logs nothing until it is repaired and boots again; a
node drained for a GPU/NIC fault stays up but is rebooted when the repair ends; a maintenance window
shuts the node down and boots it near the end. Kernel lines carry ``[uptime]`` since the last boot,
so the writer asks this timeline for every line's boot time. Lookups are vectorized ``searchsorted``
over ``node * 2**32 + epoch_s`` keys (epochs fit 32 bits until 2106).
"""

from __future__ import annotations

import numpy as np

from gpusre.simulate.faults import FaultEvent
from gpusre.simulate.topology import MaintenanceWindow

__all__ = ["NodeTimeline"]

_SHIFT = np.int64(1 << 32)


class NodeTimeline:
    """Down intervals and boot times per node over the horizon ``[t0, t1)`` (UTC epoch s)."""

    def __init__(self, n_nodes: int, t0: int, t1: int, faults: list[FaultEvent], windows: list[MaintenanceWindow],
                 rng: np.random.Generator) -> None:
        # Nodes were booted some days before the horizon (uptimes in the first lines look lived-in).
        first_boot = t0 - rng.integers(86400, 60 * 86400, size=n_nodes)
        boots: list[list[int]] = [[int(b)] for b in first_boot]
        down: list[list[tuple[int, int]]] = [[] for _ in range(n_nodes)]
        for f in faults:
            end = f.ts + f.repair_s
            if f.incident:
                continue  # a switch or file system coming back does not reboot the node
            if f.effect == "node_fail":
                down[f.node].append((f.ts + 10, end))  # dead right after its last words
            else:
                down[f.node].append((end - 240, end))  # drained, then rebooted when the repair is done
            boots[f.node].append(end)
        for w in windows:
            for n in w.nodes:
                down[n].append((w.start + 1200, w.end - 600))
                boots[n].append(w.end - 600)
        self.t0, self.t1 = t0, t1
        #: Boots inside the horizon, (epoch s, node), for the boot banner lines.
        self.boots_in_horizon: list[tuple[int, int]] = sorted(
            (b, n) for n, bs in enumerate(boots) for b in bs if t0 <= b < t1)
        bkeys = sorted(n * (1 << 32) + b for n, bs in enumerate(boots) for b in set(bs))
        self._boot_keys = np.array(bkeys, dtype=np.int64)
        starts, ends = [], []
        for n, spans in enumerate(down):
            merged: list[list[int]] = []
            for a, b in sorted(spans):
                if merged and a <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], b)
                else:
                    merged.append([a, b])
            for a, b in merged:
                starts.append(n * (1 << 32) + a)
                ends.append(n * (1 << 32) + b)
        self._down_start = np.array(starts, dtype=np.int64)
        self._down_end = np.array(ends, dtype=np.int64)

    def up_mask(self, node: np.ndarray, ts_s: np.ndarray) -> np.ndarray:
        """True where ``node`` is powered on (can log) at epoch second ``ts_s``."""
        key = node.astype(np.int64) * _SHIFT + ts_s.astype(np.int64)
        i = np.searchsorted(self._down_start, key, side="right") - 1
        inside = (i >= 0) & (key < self._down_end[np.maximum(i, 0)])
        return ~inside

    def is_up(self, node: int, ts: float) -> bool:
        """Scalar :meth:`up_mask`."""
        return bool(self.up_mask(np.array([node]), np.array([int(ts)]))[0])

    def boot_of(self, node: np.ndarray, ts_s: np.ndarray) -> np.ndarray:
        """Epoch second of the last boot at or before ``ts_s`` on ``node``."""
        key = node.astype(np.int64) * _SHIFT + ts_s.astype(np.int64)
        i = np.searchsorted(self._boot_keys, key, side="right") - 1
        return self._boot_keys[np.maximum(i, 0)] - node.astype(np.int64) * _SHIFT
