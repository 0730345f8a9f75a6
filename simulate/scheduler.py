"""Event-driven Slurm-like scheduler: jobs queue against finite GPUs, faults and maintenance take nodes away.

Policy (a simplified Slurm ``sched/backfill`` with ``select/cons_tres``):

* strict tiers (QOS high > normal > low), FIFO by eligible time inside a tier; at most
  ``QUEUE_DEPTH`` placement attempts per pass (Slurm's ``default_queue_depth``); jobs that cannot
  fit because a smaller request already failed in this pass are skipped without counting;
* single-node jobs are placed best-fit (the busiest node that fits), so whole nodes stay free;
* multi-node jobs take whole idle nodes; the first multi-node job that cannot start gets a
  reservation: the nodes Slurm expects to free first (by time limits) are held until they drain,
  which bounds its wait. Single-node jobs whose time limit ends before the reservation's expected
  start may backfill onto held nodes; other jobs start on the remaining capacity;
* a blocked high/normal job may preempt ``preempt``-partition jobs that ran >= ``PREEMPT_GRACE_S``
  (Meta RSC: 2 h); preempted jobs with requeue enabled are requeued under the same id;
* no job starts on a node if its time limit overlaps a planned maintenance window there, so the
  nodes are empty when the window opens;
* a fault kills the jobs on its node (NODE_FAIL or FAILED) and drains the node until repaired.

Nodes are kept in buckets by free-GPU count so placement never scans all nodes.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import FaultEvent
from gpusre.simulate.records import Instance, Job
from gpusre.simulate.submission import JobFactory
from gpusre.simulate.topology import MaintenanceWindow
from gpusre.simulate.workload import Workload

__all__ = ["QUEUE_DEPTH", "PREEMPT_GRACE_S", "SimStats", "ClusterSimulation"]

QUEUE_DEPTH = 500
PREEMPT_GRACE_S = 2 * 3600
#: Training runs restart from the last checkpoint: work since it (up to ~30 min) is lost on interruption.
#: Only drives how much work a requeue/next segment still has to do (the job stream); the checkpoint
#: truth the pipeline is checked against (runs.csv, goodput_daily.csv) is computed afterwards from the
#: instance records with the cluster.yaml policy (see checkpointing.py, reliability_truth.py).
CHECKPOINT_LOSS_S = 1800
#: Share of GPU-fault kills where the health check requeues the job (Meta: same job id) instead of FAILED.
HEALTHCHECK_REQUEUE_SHARE = 0.9
MAX_RUN_SEGMENTS = 60

_END, _FAULT, _REPAIR, _MAINT_START, _MAINT_END, _RESUBMIT, _PATIENCE = range(7)
_INTENT_END = {
    "completed": ("COMPLETED", "0:0", "completed"),
    "user_cancel": ("CANCELLED", "0:15", "user_cancel"),
    "oom": ("OUT_OF_MEMORY", "0:125", "oom"),
    "timeout": ("TIMEOUT", "0:0", "timeout"),
}


@dataclass
class SimStats:
    """Counters of one simulation (the truth files hold the details)."""

    jobs: int = 0
    instances: int = 0
    requeues: int = 0
    preemptions: int = 0
    runs: int = 0
    faults: int = 0
    pending_cancels: int = 0
    max_queue: int = 0


@dataclass
class _Reservation:
    inst: Instance
    buckets: list[set[int]]
    nodes: set[int] = field(default_factory=set)
    free_total: int = 0
    #: When the held nodes are expected (by time limits) to be free; jobs ending earlier may backfill.
    expected_start: int = 0

    @property
    def idle(self) -> set[int]:
        return self.buckets[-1]


class ClusterSimulation:
    """Runs the workload through the cluster; reports instances and faults through callbacks.

    ``on_dump(day, dump_ts, instances)`` is called at every nightly dump time with every instance
    whose [submit, end] overlaps that local day; ``on_final(instance)`` once per job id with its last
    instance when it ends for good; ``on_fault(fault, victims)`` for each fault that hit a live node;
    ``on_alloc(instance, t0, t1)`` for every interval an instance held GPUs (for per-day totals).
    """

    def __init__(self, config: SimulationConfig, clock: LocalClock, workload: Workload, faults: list[FaultEvent],
                 windows: list[MaintenanceWindow], rnd: random.Random,
                 on_dump: Callable[[int, int, list[Instance]], None], on_final: Callable[[Instance], None],
                 on_fault: Callable[[FaultEvent, list[Instance]], None],
                 on_alloc: Callable[[Instance, int, int], None]) -> None:
        self.cfg = config
        self.clock = clock
        self.wl = workload
        self.faults = faults
        self.windows = windows
        self.rnd = rnd
        self.on_dump, self.on_final, self.on_fault, self.on_alloc = on_dump, on_final, on_fault, on_alloc
        self.factory = JobFactory(workload, rnd)
        self.stats = SimStats()
        self.horizon_end = clock.day_start[-1]
        self.last_dump = clock.dump_time[-1]
        g = config.gpus_per_node
        self.G = g
        self.free = [g] * config.nodes
        self.unavail = [0] * config.nodes
        self.buckets: list[set[int]] = [set() for _ in range(g + 1)]
        self.buckets[g] = set(range(config.nodes))
        self.free_total = g * config.nodes
        self.node_jobs: list[set[Instance]] = [set() for _ in range(config.nodes)]
        #: Latest start + time limit of the jobs on each node: when Slurm expects the node to be free.
        self.busy_until = [0] * config.nodes
        self.preempt_nodes: dict[int, int] = {}
        # Pending jobs in one FIFO per (tier, n_nodes, n_gpus): if the head of a shape cannot be placed,
        # nothing behind it of that shape can either, so a pass touches heads, not the whole queue.
        self.queues: dict[tuple[int, int, int], list[Instance]] = {}
        self.heads: dict[tuple[int, int, int], int] = {}
        self.enqueued = 0
        self.n_queued = 0
        self.res: _Reservation | None = None
        self.live: dict[int, Instance] = {}
        self.ended: list[Instance] = []
        self.heap: list[tuple[int, int, int, object]] = []
        self.seq = 0
        self.dirty = False

    # ----------------------------------------------------------------- events
    def _push(self, t: int, kind: int, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, payload))

    def run(self) -> SimStats:
        """Simulate until the last nightly dump; returns counters."""
        for f in self.faults:
            self._push(f.ts, _FAULT, f)
        for w in self.windows:
            self._push(w.start, _MAINT_START, w)
            self._push(w.end, _MAINT_END, w)
        submits = self.wl.submit
        n_rows = len(self.wl)
        row = 0
        dumps = self.clock.dump_time
        day = 0
        inf = 1 << 62
        while day < len(dumps):
            t_sub = int(submits[row]) if row < n_rows else inf
            t_evt = self.heap[0][0] if self.heap else inf
            t = min(t_sub, t_evt, dumps[day])
            while row < n_rows and submits[row] == t:
                self._submit(self.factory.from_row(row), t)
                row += 1
            while self.heap and self.heap[0][0] == t:
                _, _, kind, payload = heapq.heappop(self.heap)
                self._handle(kind, payload, t)
            if self.dirty:
                self._schedule(t)
            if dumps[day] == t:
                self._dump(day, t)
                day += 1
        return self.stats

    def _handle(self, kind: int, payload: object, t: int) -> None:
        if kind == _END:
            inst = payload
            assert isinstance(inst, Instance)
            if inst.state is None and inst.planned_end == t:
                state, code, cause = _INTENT_END.get(inst.job.intent, ("FAILED", inst.job.exit_code, "user_error"))
                if cause == "user_error":
                    code = inst.job.exit_code
                self._finish(inst, t, state, code, cause, requeue=False)
        elif kind == _FAULT:
            assert isinstance(payload, FaultEvent)
            self._fault(payload, t)
        elif kind == _REPAIR:
            self._node_up(int(payload), t)  # type: ignore[call-overload]
        elif kind == _MAINT_START:
            assert isinstance(payload, MaintenanceWindow)
            for n in sorted(payload.nodes):
                assert not self.node_jobs[n], "job running into a maintenance window"
                self._node_down(n)
        elif kind == _MAINT_END:
            assert isinstance(payload, MaintenanceWindow)
            for n in sorted(payload.nodes):
                self._node_up(n, t)
        elif kind == _RESUBMIT:
            assert isinstance(payload, Job)
            self._submit(self.factory.next_segment(payload), t)
        elif kind == _PATIENCE:
            inst = payload
            assert isinstance(inst, Instance)
            if inst.queued:
                self._dequeue(inst)
                self.stats.pending_cancels += 1
                self._finish(inst, t, "CANCELLED", "0:15", "user_cancel", requeue=False)

    # ----------------------------------------------------------------- queue
    def _submit(self, job: Job, t: int) -> None:
        self.stats.jobs += 1
        if job.run is not None and job.run.segments == 1:
            self.stats.runs += 1
        inst = self._enqueue(job, 0, t)
        if job.patience_s:
            self._push(t + job.patience_s, _PATIENCE, inst)

    def _enqueue(self, job: Job, index: int, t: int) -> Instance:
        inst = Instance(job=job, index=index, submit=t, eligible=t, queued=True)
        self.stats.instances += 1
        key = (job.tier, job.n_nodes, job.n_gpus)
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = []
            self.heads[key] = 0
        self.enqueued += 1
        inst.seq = self.enqueued
        q.append(inst)
        self.n_queued += 1
        if self.n_queued > self.stats.max_queue:
            self.stats.max_queue = self.n_queued
        self.live[id(inst)] = inst
        self.dirty = True
        return inst

    def _dequeue(self, inst: Instance) -> None:
        inst.queued = False
        self.n_queued -= 1
        if self.res is not None and self.res.inst is inst:
            self._drop_reservation()

    # ----------------------------------------------------------------- node bookkeeping
    def _set_free(self, n: int, new: int) -> None:
        old = self.free[n]
        self.free[n] = new
        if self.unavail[n]:
            return
        res = self.res
        if res is not None and n in res.nodes:
            res.buckets[old].discard(n)
            res.buckets[new].add(n)
            res.free_total += new - old
            return
        self.buckets[old].discard(n)
        self.buckets[new].add(n)
        self.free_total += new - old

    def _node_down(self, n: int) -> None:
        self.unavail[n] += 1
        if self.unavail[n] > 1:
            return
        res = self.res
        if res is not None and n in res.nodes:
            res.nodes.discard(n)
            res.buckets[self.free[n]].discard(n)
            res.free_total -= self.free[n]
            return
        self.buckets[self.free[n]].discard(n)
        self.free_total -= self.free[n]

    def _node_up(self, n: int, t: int) -> None:
        self.unavail[n] -= 1
        if self.unavail[n]:
            return
        self.buckets[self.free[n]].add(n)
        self.free_total += self.free[n]
        self.dirty = True

    def _reserve_node(self, n: int) -> None:
        res = self.res
        assert res is not None
        self.buckets[self.free[n]].discard(n)
        self.free_total -= self.free[n]
        res.nodes.add(n)
        res.buckets[self.free[n]].add(n)
        res.free_total += self.free[n]

    def _unreserve_node(self, n: int) -> None:
        res = self.res
        assert res is not None
        res.nodes.discard(n)
        res.buckets[self.free[n]].discard(n)
        res.free_total -= self.free[n]
        if not self.unavail[n]:
            self.buckets[self.free[n]].add(n)
            self.free_total += self.free[n]

    def _drop_reservation(self) -> None:
        res = self.res
        assert res is not None
        for n in sorted(res.nodes):
            self._unreserve_node(n)
        self.res = None
        self.dirty = True

    def _windows_touching(self, t0: int, t1: int) -> list[MaintenanceWindow]:
        return [w for w in self.windows if w.start < t1 and w.end > t0]

    # ----------------------------------------------------------------- placement
    def _find_node(self, g: int, t: int, t_end: int, buckets: list[set[int]] | None = None) -> int | None:
        touching = self._windows_touching(t, t_end) if self.windows else []
        for k in range(g, self.G + 1):
            b = (buckets or self.buckets)[k]
            if not b:
                continue
            if not touching:
                return next(iter(b))
            for n in b:
                if not any(n in w.nodes for w in touching):
                    return n
        return None

    def _find_idle(self, count: int, t: int, t_end: int) -> list[int] | None:
        b = self.buckets[self.G]
        if len(b) < count:
            return None
        touching = self._windows_touching(t, t_end) if self.windows else []
        out: list[int] = []
        for n in b:
            if touching and any(n in w.nodes for w in touching):
                continue
            out.append(n)
            if len(out) == count:
                return out
        return None

    def _start(self, inst: Instance, nodes: list[int], t: int) -> None:
        job = inst.job
        gpn = job.gpus_per_node
        nodes.sort()
        for n in nodes:
            self._set_free(n, self.free[n] - gpn)
            assert self.free[n] >= 0, "over-allocation"
            self.node_jobs[n].add(inst)
            if t + job.limit_s > self.busy_until[n]:
                self.busy_until[n] = t + job.limit_s
            if job.preemptible:
                self.preempt_nodes[n] = self.preempt_nodes.get(n, 0) + 1
        self._dequeue(inst)
        inst.start = t
        inst.nodes = tuple(nodes)
        run_for = job.limit_s if job.intent == "timeout" else min(job.planned_s, job.limit_s)
        inst.planned_end = t + max(1, run_for)
        self._push(inst.planned_end, _END, inst)

    def _release(self, inst: Instance) -> None:
        job = inst.job
        gpn = job.gpus_per_node
        for n in inst.nodes:
            jobs = self.node_jobs[n]
            jobs.discard(inst)
            self.busy_until[n] = max((v.start + v.job.limit_s for v in jobs), default=0)  # type: ignore[operator]
            self._set_free(n, self.free[n] + gpn)
            if job.preemptible:
                left = self.preempt_nodes[n] - 1
                if left:
                    self.preempt_nodes[n] = left
                else:
                    del self.preempt_nodes[n]
        self.dirty = True

    # ----------------------------------------------------------------- scheduling pass
    def _head(self, key: tuple[int, int, int]) -> Instance | None:
        q = self.queues[key]
        i = self.heads[key]
        while i < len(q) and not q[i].queued:
            i += 1
        if i > 1024 and 2 * i > len(q):  # drop the dead prefix now and then
            del q[:i]
            i = 0
        self.heads[key] = i
        return q[i] if i < len(q) else None

    def _schedule(self, t: int) -> None:
        self.dirty = False
        if self.res is not None:
            self._progress_reservation(t)
        if self.n_queued == 0 or self.free_total + (self.res.free_total if self.res else 0) <= 0:
            return
        fail_g = self.G + 1  # smallest single-node request that found no node in this pass
        fail_n = 1 << 30  # smallest node count that found too few idle nodes
        heap: list[tuple[int, int, tuple[int, int, int]]] = []
        heads = self.heads
        for key, q in self.queues.items():
            if heads[key] < len(q):
                head = self._head(key)
                if head is not None:
                    heap.append((key[0], head.seq, key))
        heapq.heapify(heap)
        attempts = 0
        buckets = self.buckets
        while heap:
            res = self.res
            free = self.free_total + (res.free_total if res else 0)
            if free <= 0 or (fail_g <= 1 and len(buckets[self.G]) < 2):
                return  # nothing queued can start until resources are released
            tier, _, key = heapq.heappop(heap)
            _, n_nodes, g = key
            if (n_nodes == 1 and g >= fail_g) or (n_nodes > 1 and n_nodes >= fail_n and res is not None):
                continue
            q = self.queues[key]
            i = self.heads[key]
            skipped = 0
            while i < len(q):
                inst = q[i]
                i += 1
                if not inst.queued:
                    continue
                attempts += 1
                if attempts > QUEUE_DEPTH:
                    return
                started, blocked_by_window = self._try_start(inst, tier, t)
                if started:
                    nxt = self._head(key)
                    if nxt is not None:
                        heapq.heappush(heap, (tier, nxt.seq, key))
                    break
                if not blocked_by_window:
                    if n_nodes == 1:
                        fail_g = min(fail_g, g)
                    else:
                        fail_n = min(fail_n, n_nodes)
                    break
                # Only a maintenance window stopped it: a job behind with a shorter limit may fit.
                skipped += 1
                if skipped >= 20:
                    break

    def _try_start(self, inst: Instance, tier: int, t: int) -> tuple[bool, bool]:
        """Try to start ``inst`` now: (started, failed only because of a maintenance window)."""
        job = inst.job
        t_end = t + job.limit_s
        res = self.res
        if job.n_nodes == 1:
            g = job.n_gpus
            node = self._find_node(g, t, t_end)
            if node is None and res is not None and t_end <= res.expected_start:
                node = self._find_node(g, t, t_end, res.buckets)  # backfill onto held nodes
            if node is None and tier < 2 and self.preempt_nodes and t >= job.retry_preempt_at:
                node = self._preempt_for(job, t)
            if node is None:
                return False, bool(self._windows_touching(t, t_end))
            self._start(inst, [node], t)
            return True, False
        if res is not None and res.inst is inst:
            return False, False
        nodes = self._find_idle(job.n_nodes, t, t_end)
        if nodes is not None:
            self._start(inst, nodes, t)
            return True, False
        if res is None:
            self._make_reservation(inst, t)
        return False, bool(self._windows_touching(t, t_end))

    # ----------------------------------------------------------------- reservations
    def _make_reservation(self, inst: Instance, t: int) -> None:
        self.res = _Reservation(inst, [set() for _ in range(self.G + 1)])
        self._top_up(t)
        if len(self.res.nodes) < inst.job.n_nodes:
            self._drop_reservation()
            return
        if self.preempt_nodes and inst.job.tier < 2:
            for n in sorted(self.res.nodes - self.res.idle):
                jobs = self.node_jobs[n]
                if jobs and all(v.job.preemptible and t - (v.start or t) >= PREEMPT_GRACE_S for v in jobs):
                    for v in sorted(jobs, key=lambda x: x.job.raw_id):
                        self._preempt(v, t)

    def _top_up(self, t: int) -> None:
        """Add nodes to the reservation: idle ones first, then those Slurm expects to free soonest."""
        res = self.res
        assert res is not None
        job = res.inst.job
        need = job.n_nodes - len(res.nodes)
        if need <= 0:
            return
        touching = self._windows_touching(t, t + job.limit_s) if self.windows else []

        def usable(n: int) -> bool:
            return not (touching and any(n in w.nodes for w in touching))

        picked = [n for n in self.buckets[self.G] if usable(n)][:need]
        if len(picked) < need:
            busy = [n for k in range(self.G) for n in self.buckets[k] if usable(n)]
            picked += heapq.nsmallest(need - len(picked), busy, key=lambda n: (self.busy_until[n], n))
        for n in picked:
            self._reserve_node(n)
        res.expected_start = max((self.busy_until[n] for n in res.nodes), default=t)

    def _progress_reservation(self, t: int) -> None:
        res = self.res
        assert res is not None
        inst = res.inst
        job = inst.job
        if len(res.nodes) < job.n_nodes:
            self._top_up(t)
        need = job.n_nodes
        if len(res.idle) + len(self.buckets[self.G]) < need:
            return
        t_end = t + job.limit_s
        touching = self._windows_touching(t, t_end) if self.windows else []
        if touching:
            blocked = [n for n in res.nodes if any(n in w.nodes for w in touching)]
            for n in sorted(blocked):
                self._unreserve_node(n)
        chosen = sorted(res.idle)[:need]
        extra = None
        if len(chosen) < need:
            extra = self._find_idle(need - len(chosen), t, t_end)
            if extra is None:
                return
        for n in sorted(res.nodes):
            self._unreserve_node(n)
        self.res = None
        self._start(inst, chosen + (extra or []), t)

    # ----------------------------------------------------------------- preemption, faults, endings
    def _preempt_for(self, job: Job, t: int) -> int | None:
        job.retry_preempt_at = t + 600
        g = job.n_gpus
        touching = self._windows_touching(t, t + job.limit_s) if self.windows else []
        res_nodes = self.res.nodes if self.res is not None else ()
        for n in self.preempt_nodes:
            if self.unavail[n] or n in res_nodes or (touching and any(n in w.nodes for w in touching)):
                continue
            victims = [v for v in self.node_jobs[n] if v.job.preemptible and t - (v.start or t) >= PREEMPT_GRACE_S]
            if self.free[n] + sum(v.job.gpus_per_node for v in victims) < g:
                continue
            victims.sort(key=lambda v: (-(v.start or 0), v.job.raw_id))
            for v in victims:
                if self.free[n] >= g:
                    break
                self._preempt(v, t)
            return n
        return None

    def _preempt(self, inst: Instance, t: int) -> None:
        self.stats.preemptions += 1
        self._finish(inst, t, "PREEMPTED", "0:0", "preempted", requeue=inst.job.requeue_ok)

    def _fault(self, fault: FaultEvent, t: int) -> None:
        n = fault.node
        if self.unavail[n]:
            return  # already drained or in maintenance: nothing new breaks
        victims = sorted(self.node_jobs[n], key=lambda v: v.job.raw_id)
        self.stats.faults += 1
        for v in victims:
            job = v.job
            if fault.effect == "node_fail":
                self._finish(v, t, "NODE_FAIL", "0:0", "node_fail", requeue=job.requeue_ok)
            elif job.requeue_ok and self.rnd.random() < HEALTHCHECK_REQUEUE_SHARE:
                self._finish(v, t, "REQUEUED", "0:0", "node_fail", requeue=True)
            else:
                self._finish(v, t, "FAILED", "1:0", "node_fail", requeue=False)
        self._node_down(n)
        self._push(t + fault.repair_s, _REPAIR, n)
        self.on_fault(fault, victims)

    def _finish(self, inst: Instance, t: int, state: str, code: str, cause: str, requeue: bool) -> None:
        job = inst.job
        inst.end = t
        inst.state = state
        inst.exit_code = code
        inst.cause = cause
        if inst.start is not None:
            self._release(inst)
            self.on_alloc(inst, inst.start, t)
        del self.live[id(inst)]
        self.ended.append(inst)
        if requeue and t < self.horizon_end:
            self.stats.requeues += 1
            job.restarts += 1
            if job.intent != "timeout" and inst.start is not None and inst.planned_end is not None:
                lost = min(t - inst.start, CHECKPOINT_LOSS_S)
                job.planned_s = max(60, inst.planned_end - t + lost)
            self._enqueue(job, inst.index + 1, t)
            return
        self.on_final(inst)
        run = job.run
        if run is None:
            return
        elapsed = t - inst.start if inst.start is not None else 0
        interrupted = state not in ("COMPLETED", "CANCELLED", "TIMEOUT")
        run.remaining_s -= max(0, elapsed - (CHECKPOINT_LOSS_S if interrupted else 0))
        if (job.last_segment and state in ("COMPLETED", "CANCELLED")) or run.remaining_s <= 600:
            return
        if run.segments >= MAX_RUN_SEGMENTS:
            return
        delay = self.rnd.randint(60, 900) if state != "FAILED" else self.rnd.randint(600, 3 * 3600)
        if t + delay < self.horizon_end:
            self._push(t + delay, _RESUBMIT, job)

    # ----------------------------------------------------------------- dumps
    def _dump(self, day: int, t: int) -> None:
        lo = self.clock.day_start[day]
        hi = self.clock.day_start[day + 1]
        rows = [i for i in self.ended if i.end is not None and i.end >= lo and i.submit < hi]
        rows.extend(i for i in self.live.values() if i.submit < hi)
        rows.sort(key=lambda i: (i.job.raw_id, i.index))
        self.on_dump(day, t, rows)
        self.ended = [i for i in self.ended if i.end is not None and i.end >= hi]

    def remaining_live(self) -> list[Instance]:
        """Instances still pending or running after the last dump, by job id."""
        return sorted(self.live.values(), key=lambda i: (i.job.raw_id, i.index))
