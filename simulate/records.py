"""Mutable simulation records: a Slurm job (one job id) and its instances (one per requeue)."""

from __future__ import annotations

from dataclasses import dataclass

from gpusre.simulate.workload import RunPlan

__all__ = ["Job", "Instance", "RunState", "FINAL_STATES"]

#: Slurm states an instance can end in (REQUEUED / NODE_FAIL / PREEMPTED also for requeued instances).
FINAL_STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED",
                "REQUEUED")


@dataclass(slots=True)
class RunState:
    """Progress of a multi-job training run while the simulation runs."""

    plan: RunPlan
    remaining_s: float
    segments: int = 0


@dataclass(slots=True, eq=False)
class Job:
    """One Slurm job id: what was asked for and what the user intends to happen."""

    raw_id: int
    job_id: str
    name: str
    user: str
    uid: int
    account: str
    partition: str
    qos: str
    tier: int
    n_nodes: int
    n_gpus: int
    limit_s: int
    intent: str
    planned_s: int
    exit_code: str
    requeue_ok: bool
    run_id: str
    comment: str = ""
    run: RunState | None = None
    last_segment: bool = True
    restarts: int = 0
    retry_preempt_at: int = 0
    patience_s: int = 0

    @property
    def preemptible(self) -> bool:
        """Jobs in the ``preempt`` partition may be preempted by higher tiers."""
        return self.partition == "preempt"

    @property
    def gpus_per_node(self) -> int:
        """GPUs used on each allocated node (whole nodes for multi-node jobs)."""
        return self.n_gpus // self.n_nodes


@dataclass(slots=True, eq=False)
class Instance:
    """One execution attempt of a job (``sacct -D`` prints one row per instance).

    ``state`` stays ``None`` while the instance is pending or running; ``planned_end`` is when it
    will end unless something (fault, preemption) ends it first.
    """

    job: Job
    index: int
    submit: int
    eligible: int
    start: int | None = None
    end: int | None = None
    planned_end: int | None = None
    state: str | None = None
    exit_code: str = "0:0"
    cause: str = ""
    nodes: tuple[int, ...] = ()
    queued: bool = False
    seq: int = 0
    final_text: str | None = None
