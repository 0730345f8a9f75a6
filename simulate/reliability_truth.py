"""Reliability truth: ETTR per training run (``truth/runs.csv``) and daily cluster goodput
(``truth/goodput_daily.csv``), computed after the simulation from every started instance.

While the simulation runs, :class:`ReliabilityRecorder` keeps 9 integers per started instance that can
count (instances of runs, requeued instances, instances ended by a fault or preemption; O(1) each, no
Instance references) and a little metadata per training run; :meth:`ReliabilityRecorder.finish`
computes everything vectorised with numpy. Checkpoint phases are drawn for exactly those instances, in
(raw job id, instance index) order, from ``checkpointing.phase_rng(seed)``. Definitions (the pipeline implements the same ones from
sacct plus the cluster.yaml checkpoint policy; only the checkpoint phases are hidden from it):

* elapsed ``e_i = end - start`` (instances still running at the last dump: last dump - start);
* the instances of a run are all started instances of all jobs with its run_id, ordered by start. A
  *restart* is every instance of a run but its first (a requeue or the next segment) and every requeued
  instance (index > 0) of a job outside runs; its overhead is ``o_i = min(u0, e_i)``, else ``o_i = 0``;
* lost work ``lost_i`` follows checkpointing.lost_work_s with the instance's phase and interval;
* ETTR: an instance of a run is interrupted iff infrastructure or preemption ended it (cause in
  :data:`INTERRUPT_CAUSES`, the run's last instance included); it loses ``lost_i``, and the next instance
  of its run pays its overhead ``o_next`` (a user's own failure or cancellation costs nothing, as in
  goodput); per run ``productive = run_s - restart_overhead_s - lost_work_s`` and
  ``ettr = productive / wallclock``,
  ``wallclock = last end (or the last dump while a job of the run is pending/running) - first eligible``
  (the pipeline's available wall-clock; the simulator holds no job, eligible = submit, so it is the first
  submit);
* goodput: only instances ended by infrastructure or preemption (cause in :data:`INTERRUPT_CAUSES`:
  ``node_fail`` = NODE_FAIL / FAILED by a fault / REQUEUED by the health check, ``preempted`` = PREEMPTED
  with or without requeue) lose ``lost_i * n_gpus`` GPU-s, charged to the UTC day of their end; the next
  started instance of the same run (runs) or job (others) pays ``o_next * n_gpus`` restart GPU-s on the
  UTC day it starts. Capacity is all GPUs over the part of each UTC day inside [horizon start, last dump]
  (24 h on every full day; no deduction for maintenance or faults).
"""

from __future__ import annotations

import csv
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpusre.simulate.checkpointing import ACCOUNT_POLICIES, SITE_POLICY, lost_work_s, phase_rng, policy_for
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import FABRIC_KINDS, FAULT_KINDS, fault_mix
from gpusre.simulate.records import Instance

__all__ = ["RUNS_COLUMNS", "GOODPUT_DAILY_COLUMNS", "INTERRUPT_CAUSES", "ReliabilityRecorder", "fault_rates"]

RUNS_COLUMNS = ("run_id", "user", "account", "name", "job_ids", "n_jobs", "n_instances", "n_gpus", "interruptions",
                "first_submit_ts", "last_end_ts", "wallclock_s", "queue_s", "run_s", "restart_overhead_s",
                "lost_work_s", "productive_s", "ettr", "interval_s", "restart_overhead_cfg_s")
GOODPUT_DAILY_COLUMNS = ("day", "capacity_gpu_hours", "allocated_gpu_hours", "lost_failure_gpu_hours",
                         "lost_restart_gpu_hours", "productive_gpu_hours", "goodput")
#: Instance causes (Instance.cause) whose interruption is charged to goodput: hardware/fabric faults and preemption.
INTERRUPT_CAUSES = ("node_fail", "preempted")

_CAUSE_CODE = {c: i + 1 for i, c in enumerate(INTERRUPT_CAUSES)}  # 0: anything else (incl. still running)
_POLICIES = (SITE_POLICY, *ACCOUNT_POLICIES.values())
_POLICY_INDEX = {account: i + 1 for i, account in enumerate(ACCOUNT_POLICIES)}
_RAW, _IDX, _T0, _T1, _ELIG, _GPUS, _CAUSE, _RUN, _POL = range(9)
_WIDTH = 9


@dataclass
class _Run:
    run_id: str
    user: str
    account: str
    name: str
    jobs: list[tuple[int, str]] = field(default_factory=list)
    n_gpus: int = 0
    first_submit: int | None = None
    last_end: int | None = None
    live: bool = False


class ReliabilityRecorder:
    """Collects started instances and run metadata; :meth:`finish` writes runs.csv and goodput_daily.csv."""

    def __init__(self, config: SimulationConfig, clock: LocalClock) -> None:
        self.cfg = config
        self.clock = clock
        self._buf = array("q")
        self._extend = self._buf.extend
        self._run_index: dict[str, int] = {}
        self._runs: list[_Run] = []

    def _run_of(self, inst: Instance) -> int:
        job = inst.job
        if job.run is None:
            return -1
        i = self._run_index.get(job.run_id)
        if i is None:
            i = self._run_index[job.run_id] = len(self._runs)
            self._runs.append(_Run(job.run_id, job.user, job.account, job.name))
        return i

    def record_instance(self, inst: Instance, t0: int, t1: int) -> None:
        """A started instance that held its GPUs over [t0, t1) (t1: its end, or the last dump).

        Only instances that can count are kept: those of runs, requeued ones (index > 0) and those ended
        by a fault or preemption. A first instance of another job that ended otherwise has no restart
        overhead and no lost work, whatever its phase.
        """
        job = inst.job
        cause = _CAUSE_CODE.get(inst.cause, 0)
        if job.run is None:
            if not cause and not inst.index:
                return
            run = -1
        else:
            run = self._run_of(inst)
        self._extend((job.raw_id, inst.index, t0, t1, inst.eligible, job.n_gpus, cause, run,
                      _POLICY_INDEX.get(job.account, 0)))

    def record_job(self, inst: Instance) -> None:
        """A job's last instance (ended for good, or pending/running at the last dump if ``state`` is None)."""
        job = inst.job
        if job.run is None:
            return
        run = self._runs[self._run_of(inst)]
        run.jobs.append((job.raw_id, job.job_id))
        run.n_gpus = max(run.n_gpus, job.n_gpus)
        if inst.index == 0 and (run.first_submit is None or inst.submit < run.first_submit):
            run.first_submit = inst.submit
        if inst.state is None:
            run.live = True
        elif inst.end is not None and (run.last_end is None or inst.end > run.last_end):
            run.last_end = inst.end

    # ----------------------------------------------------------------- finish
    def finish(self, out_dir: Path, at: int, gpu_s_by_utc_day: list[int], utc_day0: int) -> dict[str, Any]:
        """Write ``runs.csv`` and ``goodput_daily.csv`` under ``out_dir``; return the summary additions.

        ``gpu_s_by_utc_day`` are the allocated GPU-s per UTC day from ``utc_day0`` (summary.json's days).
        """
        a = np.frombuffer(self._buf, dtype=np.int64).reshape(-1, _WIDTH)
        a = a[np.lexsort((a[:, _IDX], a[:, _RAW]))]  # (raw job id, instance index): the phase draw order
        raw, idx, t0, t1 = a[:, _RAW], a[:, _IDX], a[:, _T0], a[:, _T1]
        gpus, cause, run = a[:, _GPUS], a[:, _CAUSE], a[:, _RUN]
        n = len(a)
        interval = np.array([p.interval_s for p in _POLICIES], dtype=np.int64)[a[:, _POL]]
        u0 = np.array([p.restart_overhead_s for p in _POLICIES], dtype=np.int64)[a[:, _POL]]
        phase = phase_rng(self.cfg.seed).integers(0, interval, dtype=np.int64) if n else np.zeros(0, np.int64)

        # Next started instance: of the same run (runs, by start) or of the same job id (other jobs).
        nxt = np.full(n, -1, dtype=np.int64)
        has_prev = np.zeros(n, dtype=bool)
        in_run = run >= 0
        order = np.lexsort((idx, raw, t0, run))
        rs = run[order]
        same = (rs[1:] == rs[:-1]) & (rs[1:] >= 0)
        nxt[order[:-1][same]] = order[1:][same]
        has_prev[order[1:][same]] = True
        same_job = (raw[1:] == raw[:-1]) & ~in_run[1:]
        pos = np.arange(n, dtype=np.int64)
        nxt[pos[:-1][same_job]] = pos[1:][same_job]
        has_prev[pos[1:][same_job]] = True

        elapsed = t1 - t0
        overhead = np.where(has_prev, np.minimum(u0, elapsed), 0)
        lost = lost_work_s(elapsed - overhead, phase, interval)
        hit = cause > 0
        ettr_lost = np.where(in_run & hit, lost, 0)
        after_hit = np.zeros(n, dtype=bool)
        after_hit[nxt[hit & (nxt >= 0)]] = True
        ettr_overhead = np.where(after_hit, overhead, 0)

        # Goodput losses per UTC day.
        n_days = len(gpu_s_by_utc_day)
        fail_day = t1[hit] // 86400 - utc_day0
        fail_w = (lost * gpus)[hit]
        follow = nxt[hit & (nxt >= 0)]
        restart_day = t0[follow] // 86400 - utc_day0
        restart_w = overhead[follow] * gpus[follow]
        lost_fail = _per_day(fail_day, fail_w, n_days)
        lost_restart = _per_day(restart_day, restart_w, n_days)
        goodput = self._write_goodput(out_dir / "goodput_daily.csv", at, gpu_s_by_utc_day, utc_day0, lost_fail,
                                      lost_restart)

        # Runs.
        ettr = self._write_runs(out_dir / "runs.csv", at, a, in_run, elapsed, ettr_overhead, ettr_lost, hit)
        return {"goodput": goodput, "ettr_runs": ettr}

    def _write_goodput(self, path: Path, at: int, alloc: list[int], utc_day0: int, lost_fail: np.ndarray,
                       lost_restart: np.ndarray) -> dict[str, Any]:
        g = self.cfg.total_gpus
        lo_all = self.clock.day_start[0]
        tot = [0, 0, 0, 0, 0]  # capacity, allocated, lost failure, lost restart, productive (GPU-s)
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(GOODPUT_DAILY_COLUMNS)
            for i, allocated in enumerate(alloc):
                d0 = (utc_day0 + i) * 86400
                cap = g * max(0, min(d0 + 86400, at) - max(d0, lo_all))
                lf, lr = int(lost_fail[i]), int(lost_restart[i])
                prod = allocated - lf - lr
                for k, v in enumerate((cap, allocated, lf, lr, prod)):
                    tot[k] += v
                w.writerow((self.clock.utc(d0)[:10], *(_hours(v) for v in (cap, allocated, lf, lr, prod)),
                            f"{prod / cap:.6f}" if cap else ""))
        cap, allocated, lf, lr, prod = tot
        return {"capacity_gpu_hours": round(cap / 3600, 6), "allocated_gpu_hours": round(allocated / 3600, 6),
                "lost_failure_gpu_hours": round(lf / 3600, 6), "lost_restart_gpu_hours": round(lr / 3600, 6),
                "productive_gpu_hours": round(prod / 3600, 6), "goodput": round(prod / cap, 6) if cap else None}

    def _write_runs(self, path: Path, at: int, a: np.ndarray, in_run: np.ndarray, elapsed: np.ndarray,
                    overhead: np.ndarray, ettr_lost: np.ndarray, hit: np.ndarray) -> dict[str, Any]:
        m = len(self._runs)
        r = a[in_run, _RUN]
        sums = {}
        for key, col in (("n", np.ones(len(r), dtype=np.int64)), ("run_s", elapsed[in_run]),
                         ("queue_s", (a[:, _T0] - a[:, _ELIG])[in_run]), ("overhead", overhead[in_run]),
                         ("lost", ettr_lost[in_run]), ("interruptions", hit[in_run].astype(np.int64))):
            sums[key] = np.bincount(r, weights=col, minlength=m).astype(np.int64)
        first0 = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
        is0 = a[in_run, _IDX] == 0
        np.minimum.at(first0, r[is0], a[in_run, _ELIG][is0])  # eligible == submit for a first instance
        clock = self.clock
        ettrs: list[float] = []
        rows: list[tuple[Any, ...]] = []
        for i, run in enumerate(self._runs):
            n_inst = int(sums["n"][i])
            if n_inst == 0:
                continue
            first = int(first0[i]) if run.first_submit is None else min(int(first0[i]), run.first_submit)
            end = at if run.live or run.last_end is None else run.last_end
            wall = end - first
            run_s, overhead_s, lost_s = int(sums["run_s"][i]), int(sums["overhead"][i]), int(sums["lost"][i])
            productive = run_s - overhead_s - lost_s
            ettr = productive / wall if wall > 0 else 0.0
            ettrs.append(ettr)
            policy = policy_for(run.account)
            jobs = sorted(set(run.jobs))
            rows.append((run.run_id, run.user, run.account, run.name, ";".join(j for _, j in jobs), len(jobs), n_inst,
                         run.n_gpus, int(sums["interruptions"][i]), clock.utc(first), "" if run.live else clock.utc(end), wall,
                         int(sums["queue_s"][i]), run_s, overhead_s, lost_s, productive, f"{ettr:.6f}",
                         policy.interval_s, policy.restart_overhead_s))
        rows.sort(key=lambda row: row[0])
        with path.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(RUNS_COLUMNS)
            w.writerows(rows)
        return {"count": len(ettrs), "mean_ettr": round(sum(ettrs) / len(ettrs), 6) if ettrs else None}


def _per_day(day: np.ndarray, weight: np.ndarray, n_days: int) -> np.ndarray:
    ok = (day >= 0) & (day < n_days)
    return np.bincount(day[ok], weights=weight[ok], minlength=n_days)[:n_days].astype(np.int64)


def _hours(gpu_s: int) -> str:
    return f"{gpu_s / 3600:.6f}"


def fault_rates(config: SimulationConfig) -> dict[str, Any]:
    """True expected node-fault rates per node-hour by component (the config's fault_mix shares) and their total.

    Fabric faults are separate processes (FABRIC_KINDS) with their own rates: leaf-switch failures per
    switch-day and storage outages per cluster-day (in ``fabric_fault_rates``); they are not in these numbers.
    """
    per_node_hour = config.node_failures_per_1000_node_days / 1000 / 24
    # Without thermal/power kinds, weights / their total exactly as first written (same digits in summary.json).
    if config.thermal_power_fault_share > 0:
        mix, probs = fault_mix(config.thermal_power_fault_share)
        weights, total_w = probs.tolist(), 1.0
    else:
        mix, weights = FAULT_KINDS, [k.weight for k in FAULT_KINDS]
        total_w = sum(weights)
    by_comp: dict[str, float] = {}
    for k, w in zip(mix, weights, strict=True):
        by_comp[k.component] = by_comp.get(k.component, 0.0) + w
    rates: dict[str, Any] = {c: per_node_hour * w / total_w for c, w in by_comp.items()}
    rates["total"] = per_node_hour
    leaf, storage = FABRIC_KINDS
    return {
        "fault_rate_per_node_hour_by_component": rates,
        "fabric_fault_rates": {
            f"{leaf.kind}_per_switch_day": config.leaf_switch_failures_per_1000_switch_days / 1000,
            f"{storage.kind}_per_day": config.storage_outages_per_1000_days / 1000,
            "kill_jobs": config.fabric_faults_kill_jobs,
        },
    }
