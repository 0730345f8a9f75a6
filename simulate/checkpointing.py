"""Checkpointing as accounting truth: the policy the simulated site runs, checkpoint phases, lost work.

The scheduler's job stream does not depend on anything here (it keeps its own fixed resubmission
bookkeeping), so a seed's sacct and syslog output is unchanged. The truth of what interruptions cost is
computed afterwards from the instance records (see reliability_truth):

* every started instance i checkpoints at ``start + o_i + phi_i + k * interval`` (k = 0, 1, ...), where
  ``o_i`` is its restart overhead (``min(u0, elapsed)`` for a restart, 0 for a first instance) and the
  phase ``phi_i ~ Uniform{0, ..., interval - 1}`` is drawn per instance from its own generator
  (``numpy.random.default_rng([seed, PHASE_STREAM])``, in (raw job id, instance index) order over the
  instances whose phase can matter: those of training runs, requeued ones and those ended by a fault or
  preemption; see reliability_truth);
* an interrupted instance loses the time since its last checkpoint: with ``t = elapsed - o_i``,
  ``lost = t`` if ``t < phi`` else ``(t - phi) mod interval`` (see :func:`lost_work_s`); always ``< interval``.

The policy is written to ``cluster.yaml`` under ``reliability`` (what the pipeline assumes); only the
phases are hidden from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CheckpointPolicy", "SITE_POLICY", "ACCOUNT_POLICIES", "PHASE_STREAM", "policy_for", "reliability_yaml",
           "phase_rng", "lost_work_s"]


@dataclass(frozen=True)
class CheckpointPolicy:
    """Checkpoint interval, restart overhead after an interruption (u0) and blocking write time (s)."""

    interval_s: int
    restart_overhead_s: int
    write_s: int = 0


#: Site default (Meta HPCA'25 defaults: hourly checkpoints, 5 min to re-initialise).
SITE_POLICY = CheckpointPolicy(interval_s=3600, restart_overhead_s=300, write_s=0)
#: Per-account overrides: large pre-training checkpoints twice as often but takes longer to restart.
ACCOUNT_POLICIES: dict[str, CheckpointPolicy] = {
    "llm-pretrain": CheckpointPolicy(interval_s=1800, restart_overhead_s=600, write_s=SITE_POLICY.write_s),
}
#: Second entropy word of the phase generator: ``default_rng([seed, PHASE_STREAM])``.
PHASE_STREAM = 4242


def policy_for(account: str) -> CheckpointPolicy:
    """The checkpoint policy of a job of ``account``."""
    return ACCOUNT_POLICIES.get(account, SITE_POLICY)


def reliability_yaml() -> dict[str, Any]:
    """The ``reliability`` section of cluster.yaml (pipelines.config.ReliabilityConfig keys)."""
    site = SITE_POLICY
    overrides: dict[str, dict[str, int]] = {}
    for account, p in ACCOUNT_POLICIES.items():
        diff = {k: getattr(p, k) for k in ("interval_s", "restart_overhead_s", "write_s")
                if getattr(p, k) != getattr(site, k)}
        overrides[account] = diff
    return {
        "checkpoint": {"interval_s": site.interval_s, "restart_overhead_s": site.restart_overhead_s,
                       "write_s": site.write_s},
        "checkpoint_overrides": overrides,
    }


def phase_rng(seed: int) -> np.random.Generator:
    """The generator of checkpoint phases (independent of every stream the job stream uses)."""
    return np.random.default_rng([seed, PHASE_STREAM])


def lost_work_s(t: Any, phase: Any, interval: Any) -> Any:
    """Work lost when an instance is interrupted ``t`` s after its restart overhead (scalars or numpy arrays).

    The first checkpoint is at ``phase``, then every ``interval``: before it everything is lost, after it
    the time since the last one. Example: t=5000, phase=1000, interval=3600 -> 400; t=500 -> 500.
    """
    if isinstance(t, np.ndarray) or isinstance(phase, np.ndarray) or isinstance(interval, np.ndarray):
        t, phase, interval = np.asarray(t), np.asarray(phase), np.asarray(interval)
        return np.where(t < phase, t, np.mod(t - phase, interval))
    return t if t < phase else (t - phase) % interval
