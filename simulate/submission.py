"""Turn workload rows and run segments into Slurm jobs with ids (``sbatch`` as the scheduler sees it)."""

from __future__ import annotations

import random
from dataclasses import replace

from gpusre.simulate.records import Job, RunState
from gpusre.simulate.workload import EXIT_CODES, INTENTS, PARTITIONS, QOS_BY_TIER, Workload, plan_segment

__all__ = ["FIRST_JOB_ID", "JobFactory"]

FIRST_JOB_ID = 100001


class JobFactory:
    """Hands out consecutive raw job ids in submission order; array tasks print as ``<first>_<task>``."""

    def __init__(self, workload: Workload, rnd: random.Random) -> None:
        self.wl = workload
        self.rnd = rnd
        self.next_raw = FIRST_JOB_ID
        self._array_first_raw: dict[int, int] = {}

    def _new_raw(self) -> int:
        raw = self.next_raw
        self.next_raw += 1
        return raw

    def from_row(self, i: int) -> Job:
        """The job submitted by workload row ``i`` (the first segment if the row starts a run)."""
        wl = self.wl
        raw = self._new_raw()
        group = int(wl.array_group[i])
        if group >= 0:
            first = self._array_first_raw.setdefault(group, raw)
            job_id = f"{first}_{int(wl.array_task[i])}"
        else:
            job_id = str(raw)
        u = int(wl.user[i])
        tier = int(wl.tier[i])
        job = Job(
            raw_id=raw, job_id=job_id, name=wl.names[i], user=wl.users.names[u], uid=wl.users.uids[u],
            account=wl.users.accounts[u], partition=PARTITIONS[int(wl.partition[i])], qos=QOS_BY_TIER[tier],
            tier=tier, n_nodes=int(wl.n_nodes[i]), n_gpus=int(wl.n_gpus[i]), limit_s=int(wl.limit_s[i]),
            intent=INTENTS[int(wl.intent[i])], planned_s=int(wl.planned_s[i]),
            exit_code=EXIT_CODES[int(wl.exit_code[i])], requeue_ok=bool(wl.requeue_ok[i]), run_id=job_id,
            patience_s=int(wl.patience_s[i]),
        )
        plan = wl.runs.get(i)
        if plan is not None:
            job.run = RunState(plan, plan.work_s)
            job.run_id = plan.run_id
            job.comment = f"run={plan.run_id}" if plan.with_comment else ""
            self._apply_segment(job)
        return job

    def next_segment(self, previous: Job) -> Job:
        """The next job of ``previous``'s run: same user, name, account, size; a fresh id and plan."""
        raw = self._new_raw()
        job = replace(previous, raw_id=raw, job_id=str(raw), restarts=0, retry_preempt_at=0, patience_s=0)
        self._apply_segment(job)
        return job

    def _apply_segment(self, job: Job) -> None:
        run = job.run
        assert run is not None
        seg = plan_segment(run.plan, run.remaining_s, self.rnd)
        run.segments += 1
        job.intent, job.planned_s, job.limit_s, job.last_segment = seg.intent, seg.planned_s, seg.limit_s, seg.last
        job.exit_code = EXIT_CODES[0] if self.rnd.random() < 0.8 else EXIT_CODES[3]
