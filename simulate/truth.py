"""Ground truth the pipeline's outputs are checked against, under ``out_dir/truth``:

* ``jobs.csv`` (JOBS_COLUMNS): one row per job id, its last instance. Rows are streamed while the
  simulation runs (written when the last instance ends for good, or at the last dump for jobs still
  pending/running) and sorted by raw job id at the end.
* ``faults.csv`` (FAULTS_COLUMNS): hardware faults that hit a live node, with the job ids they killed.
* ``runs.csv`` (reliability_truth.RUNS_COLUMNS): one row per multi-job training run (a workload RunPlan)
  with at least one started instance, sorted by run_id: ``run_id, user, account, name, job_ids``
  (';'-joined, submission order, including jobs that never started), ``n_jobs, n_instances`` (started
  instances), ``n_gpus, interruptions`` (= n_instances - 1), ``first_submit_ts, last_end_ts`` (empty
  while a job of the run is pending/running at the last dump), ``wallclock_s`` (last end or last dump
  - first eligible, = first submit: the simulator holds no job), ``queue_s`` (sum of start - eligible), ``run_s`` (sum of elapsed),
  ``restart_overhead_s, lost_work_s, productive_s`` (= run - overhead - lost), ``ettr`` (productive /
  wallclock), ``interval_s, restart_overhead_cfg_s`` (the checkpoint policy of the run's account).
* ``goodput_daily.csv`` (reliability_truth.GOODPUT_DAILY_COLUMNS): one row per UTC day of
  ``allocated_gpu_hours_by_utc_day``: ``day, capacity_gpu_hours`` (all GPUs over the part of the day in
  [horizon start, last dump]: 24 h per full day, no maintenance deduction), ``allocated_gpu_hours``,
  ``lost_failure_gpu_hours, lost_restart_gpu_hours`` (work lost / restart overhead after fault or
  preemption interruptions), ``productive_gpu_hours`` (allocated - both losses), ``goodput``
  (productive / capacity).
* ``summary.json``: exact totals (GPU-hours by state, per UTC day, ...), plus ``goodput`` (horizon
  totals of goodput_daily.csv), ``ettr_runs`` (count, mean_ettr of runs.csv),
  ``fault_rate_per_node_hour_by_component`` (true expected node-fault rate per node-hour by component
  and ``total``) and ``fabric_fault_rates`` (leaf-switch failures per switch-day and storage outages
  per day: separate processes, not in the node rates).

Checkpointing is accounting truth only (checkpointing.py, reliability_truth.py): it is computed after
the simulation from the instance records and never changes the job stream.
All totals are computed from integer seconds, so they agree exactly with the rows.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.simulate.clock import LocalClock
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.faults import FaultEvent
from gpusre.simulate.records import Instance
from gpusre.simulate.reliability_truth import ReliabilityRecorder, fault_rates

__all__ = ["JOBS_COLUMNS", "FAULTS_COLUMNS", "TruthRecorder"]

JOBS_COLUMNS = ("job_id", "job_id_raw", "run_id", "user", "account", "name", "partition", "n_nodes", "n_gpus",
                "submit_ts", "eligible_ts", "start_ts", "end_ts", "state_final", "cause", "restarts", "elapsed_s",
                "gpu_hours", "nodes")
FAULTS_COLUMNS = ("fault_id", "ts", "node", "component", "kind", "effect", "repair_end_ts", "job_ids")


class TruthRecorder:
    """Collects truth while the simulation runs and writes it under ``out_dir/truth``."""

    def __init__(self, out_dir: Path, config: SimulationConfig, clock: LocalClock, node_names: list[str]) -> None:
        self.dir = out_dir / "truth"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cfg = config
        self.clock = clock
        self.names = node_names
        self._jobs_path = self.dir / "jobs.csv"
        self._fh = self._jobs_path.open("w", newline="", encoding="utf-8")
        self._csv = csv.writer(self._fh, lineterminator="\n")
        self._csv.writerow(JOBS_COLUMNS)
        self.jobs_by_state: Counter[str] = Counter()
        self.gpu_s_by_state: Counter[str] = Counter()
        self.jobs_by_cause: Counter[str] = Counter()
        self.gpu_s_by_cause: Counter[str] = Counter()
        self.faults: list[tuple[FaultEvent, list[str]]] = []
        self._utc_day0 = clock.day_start[0] // 86400
        self._gpu_s_by_utc_day: list[int] = [0] * ((clock.dump_time[-1] // 86400) - self._utc_day0 + 1)
        self.instance_gpu_s = 0
        #: GPU-seconds of every ended run (instance) by the state it ended in: a requeued job's earlier
        #: runs under NODE_FAIL / PREEMPTED / REQUEUED (what marts.gpu_time_by_state counts).
        self.gpu_s_by_run_state: Counter[str] = Counter()
        self.reliability = ReliabilityRecorder(config, clock)

    def _ts(self, ts: int | None) -> str:
        return "" if ts is None else self.clock.utc(ts)

    def record_final(self, inst: Instance, at: int) -> None:
        """Write the truth row of ``inst``'s job as of epoch ``at`` (pending/running if not ended by then)."""
        job = inst.job
        if inst.state is not None:
            state, cause, end = inst.state, inst.cause, inst.end
            elapsed = (inst.end - inst.start) if inst.start is not None and inst.end is not None else 0
        elif inst.start is not None:
            state, cause, end, elapsed = "RUNNING", "running", None, at - inst.start
        else:
            state, cause, end, elapsed = "PENDING", "pending", None, 0
        gpu_s = job.n_gpus * elapsed
        self.reliability.record_job(inst)
        self.jobs_by_state[state] += 1
        self.gpu_s_by_state[state] += gpu_s
        self.jobs_by_cause[cause] += 1
        self.gpu_s_by_cause[cause] += gpu_s
        nodes = compress_hostlist(self.names[n] for n in inst.nodes) if inst.nodes else ""
        self._csv.writerow((job.job_id, job.raw_id, job.run_id, job.user, job.account, job.name, job.partition,
                            job.n_nodes, job.n_gpus, self._ts(inst.submit), self._ts(inst.eligible),
                            self._ts(inst.start), self._ts(end), state, cause, job.restarts, elapsed,
                            f"{gpu_s / 3600:.4f}", nodes))

    def record_alloc(self, inst: Instance, t0: int, t1: int) -> None:
        """Add ``inst``'s GPUs held over [t0, t1) to the per-UTC-day totals (called once per started instance)."""
        g = inst.job.n_gpus
        self.instance_gpu_s += g * (t1 - t0)
        if inst.state is not None:
            self.gpu_s_by_run_state[inst.state] += g * (t1 - t0)
        self.reliability.record_instance(inst, t0, t1)
        days = self._gpu_s_by_utc_day
        d = t0 // 86400
        while t0 < t1:
            nxt = min(t1, (d + 1) * 86400)
            i = d - self._utc_day0
            if 0 <= i < len(days):
                days[i] += g * (nxt - t0)
            t0 = nxt
            d += 1

    def record_fault(self, fault: FaultEvent, victims: list[Instance]) -> None:
        """Remember a fault that hit a live node and the job ids it killed."""
        self.faults.append((fault, [v.job.job_id for v in victims]))

    def finish(self, live: list[Instance], at: int, extra: dict[str, Any]) -> dict[str, Any]:
        """Write rows for still-live jobs, sort jobs.csv, write faults.csv, runs.csv, goodput_daily.csv and
        summary.json; return the summary."""
        for inst in live:
            if inst.start is not None:
                self.record_alloc(inst, inst.start, at)
            self.record_final(inst, at)
        self._fh.close()
        df = pl.read_csv(self._jobs_path, infer_schema=False)
        df = df.sort(pl.col("job_id_raw").cast(pl.Int64))
        df.write_csv(self._jobs_path, line_terminator="\n")
        with (self.dir / "faults.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(FAULTS_COLUMNS)
            for f, job_ids in self.faults:
                w.writerow((f.fault_id, self.clock.utc(f.ts), self.names[f.node], f.component, f.kind, f.effect,
                            self.clock.utc(f.ts + f.repair_s), ";".join(job_ids)))
        by_day = {self.clock.utc((self._utc_day0 + i) * 86400)[:10]: round(s / 3600, 6)
                  for i, s in enumerate(self._gpu_s_by_utc_day)}
        span_gpu_s = self.cfg.total_gpus * (at - self.clock.day_start[0])
        summary: dict[str, Any] = {
            "cluster": self.cfg.cluster,
            "seed": self.cfg.seed,
            "nodes": self.cfg.nodes,
            "gpus_per_node": self.cfg.gpus_per_node,
            "days": self.cfg.days,
            "start": self.cfg.start.isoformat(),
            "timezone": self.cfg.timezone,
            "horizon_start_utc": self.clock.utc(self.clock.day_start[0]),
            "horizon_end_utc": self.clock.utc(self.clock.day_start[-1]),
            "last_dump_utc": self.clock.utc(at),
            "n_jobs": sum(self.jobs_by_state.values()),
            "capacity_gpu_hours": self.cfg.capacity_gpu_hours,
            "allocated_gpu_hours": round(self.instance_gpu_s / 3600, 6),
            "utilization": round(self.instance_gpu_s / span_gpu_s, 6),
            "gpu_hours_final_jobs": round(sum(self.gpu_s_by_state.values()) / 3600, 6),
            "jobs_by_state": dict(sorted(self.jobs_by_state.items())),
            "gpu_hours_by_state": {k: round(v / 3600, 6) for k, v in sorted(self.gpu_s_by_state.items())},
            "gpu_hours_by_run_state": {k: round(v / 3600, 6) for k, v in sorted(self.gpu_s_by_run_state.items())},
            "jobs_by_cause": dict(sorted(self.jobs_by_cause.items())),
            "gpu_hours_by_cause": {k: round(v / 3600, 6) for k, v in sorted(self.gpu_s_by_cause.items())},
            "n_faults": len(self.faults),
            "allocated_gpu_hours_by_utc_day": by_day,
        }
        summary.update(self.reliability.finish(self.dir, at, self._gpu_s_by_utc_day, self._utc_day0))
        summary.update(fault_rates(self.cfg))
        summary.update(extra)
        (self.dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        return summary
