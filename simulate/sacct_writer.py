"""Nightly ``sacct -a -P -D -S D -E D+1`` dumps as the cluster would have printed them at 00:15 on D+1.

One allocation row per job instance (``-D`` shows requeued instances too) followed by its step rows
(``.batch`` on the first node, ``.extern`` on all nodes, ``.0`` for multi-node jobs). States are as of
the dump time: a job still running prints RUNNING with ``End=Unknown``; one not started prints
PENDING. Rows are plain string joins (no CSV library): this is the hot path of the benchmark.
"""

from __future__ import annotations

from pathlib import Path

from gpusre.models.ingest.hostlist import compress_hostlist
from gpusre.simulate.clock import LocalClock, format_duration
from gpusre.simulate.config import SimulationConfig
from gpusre.simulate.records import Instance, Job

__all__ = ["SACCT_FIELDS", "SACCT_HEADER", "SacctDumpWriter", "step_state"]

SACCT_FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "UID", "Group", "Account", "Partition", "QOS", "State",
                "ExitCode", "Submit", "Eligible", "Start", "End", "Elapsed", "Timelimit", "NNodes", "NCPUS",
                "AllocTRES", "NodeList", "Comment")
SACCT_HEADER = "|".join(SACCT_FIELDS)

#: Job state -> (state, exit code) of its batch and srun steps; None keeps the job's own exit code.
_STEP_STATE: dict[str, tuple[str, str | None]] = {
    "COMPLETED": ("COMPLETED", "0:0"),
    "FAILED": ("FAILED", None),
    "CANCELLED": ("CANCELLED", "0:15"),
    "TIMEOUT": ("CANCELLED", "0:15"),
    "OUT_OF_MEMORY": ("OUT_OF_MEMORY", "0:125"),
    "NODE_FAIL": ("CANCELLED", "0:9"),
    "PREEMPTED": ("CANCELLED", "0:15"),
    "REQUEUED": ("CANCELLED", "0:15"),
}


def step_state(job_state: str, job_exit: str) -> tuple[str, str]:
    """State and exit code Slurm records for the batch / ``.0`` step of a job that ended in ``job_state``."""
    state, code = _STEP_STATE.get(job_state, ("CANCELLED", "0:15"))
    return state, job_exit if code is None else code


def _mem_text(gb: int) -> str:
    # Slurm prints memory in the largest unit that keeps an integer.
    return f"{gb // 1024}T" if gb >= 1024 and gb % 1024 == 0 else f"{gb}G"


class SacctDumpWriter:
    """Writes ``sacct/sacct_YYYY-MM-DD.psv`` files; ``rows_written`` counts allocation rows."""

    def __init__(self, out_dir: Path, config: SimulationConfig, clock: LocalClock, node_names: list[str]) -> None:
        self.dir = out_dir / "sacct"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cfg = config
        self.clock = clock
        self.names = node_names
        self.rows_written = 0
        self.lines_written = 0
        self._tres: dict[tuple[int, int], tuple[int, str, str, str, int]] = {}
        self._prefix: dict[int, str] = {}

    def _tres_for(self, n_nodes: int, n_gpus: int) -> tuple[int, str, str, str, int]:
        key = (n_nodes, n_gpus)
        hit = self._tres.get(key)
        if hit is None:
            cfg = self.cfg
            gt = cfg.gpu_type
            cpus = n_gpus * cfg.cpus_per_gpu
            gpn = n_gpus // n_nodes
            cpn = gpn * cfg.cpus_per_gpu
            mem = _mem_text(n_gpus * cfg.mem_gb_per_gpu)
            alloc = f"billing={cpus},cpu={cpus},gres/gpu:{gt}={n_gpus},gres/gpu={n_gpus},mem={mem},node={n_nodes}"
            extern = f"cpu={cpus},gres/gpu:{gt}={n_gpus},gres/gpu={n_gpus},mem={mem},node={n_nodes}"
            batch = (f"cpu={cpn},gres/gpu:{gt}={gpn},gres/gpu={gpn},"
                     f"mem={_mem_text(gpn * cfg.mem_gb_per_gpu)},node=1")
            hit = (cpus, alloc, extern, batch, cpn)
            self._tres[key] = hit
        return hit

    def _job_prefix(self, job: Job) -> str:
        return (f"{job.job_id}|{job.raw_id}|{job.name}|{job.user}|{job.uid}|{job.account}|{job.account}|"
                f"{job.partition}|{job.qos}|")

    def _nodelist(self, inst: Instance) -> str:
        if len(inst.nodes) == 1:
            return self.names[inst.nodes[0]]
        return compress_hostlist(self.names[n] for n in inst.nodes)

    def instance_text(self, inst: Instance, at: int) -> str:
        """The allocation row and its step rows for ``inst`` as printed at epoch ``at``."""
        job = inst.job
        local = self.clock.local
        cpus, alloc_tres, extern_tres, batch_tres, cpn = self._tres_for(job.n_nodes, job.n_gpus)
        prefix = self._job_prefix(job)
        submit, eligible = local(inst.submit), local(inst.eligible)
        limit = format_duration(job.limit_s)
        ended = inst.end is not None and inst.end <= at
        started = inst.start is not None and inst.start <= at
        if not started:
            if ended:  # cancelled while pending: Slurm sets Start = End = cancel time
                end = local(inst.end)  # type: ignore[arg-type]
                return (f"{prefix}CANCELLED by {job.uid}|0:0|{submit}|{eligible}|{end}|{end}|00:00:00|{limit}|"
                        f"{job.n_nodes}|{cpus}||None assigned|{job.comment}")
            return (f"{prefix}PENDING|0:0|{submit}|{eligible}|Unknown|Unknown|00:00:00|{limit}|"
                    f"{job.n_nodes}|{cpus}||None assigned|{job.comment}")
        start = local(inst.start)  # type: ignore[arg-type]
        nodelist = self._nodelist(inst)
        if ended:
            state = inst.state or "COMPLETED"
            shown = f"CANCELLED by {job.uid}" if state == "CANCELLED" else state
            code = inst.exit_code
            end = local(inst.end)  # type: ignore[arg-type]
            elapsed = format_duration(inst.end - inst.start)  # type: ignore[operator]
            s_state, s_code = step_state(state, code)
            e_state = "COMPLETED"
        else:
            shown, code, end = "RUNNING", "0:0", "Unknown"
            elapsed = format_duration(at - inst.start)  # type: ignore[operator]
            s_state, s_code, e_state = "RUNNING", "0:0", "RUNNING"
        acct = job.account
        first = self.names[inst.nodes[0]]
        rid = job.raw_id
        jid = job.job_id
        times = f"{start}|{start}|{start}|{end}|{elapsed}|"
        lines = [
            f"{prefix}{shown}|{code}|{submit}|{eligible}|{start}|{end}|{elapsed}|{limit}|{job.n_nodes}|{cpus}|"
            f"{alloc_tres}|{nodelist}|{job.comment}",
            f"{jid}.batch|{rid}.batch|batch||||{acct}|||{s_state}|{s_code}|{times}|1|{cpn}|{batch_tres}|{first}|",
            f"{jid}.extern|{rid}.extern|extern||||{acct}|||{e_state}|0:0|{times}|{job.n_nodes}|{cpus}|"
            f"{extern_tres}|{nodelist}|",
        ]
        if job.n_nodes > 1:
            lines.append(f"{jid}.0|{rid}.0|python||||{acct}|||{s_state}|{s_code}|{times}|{job.n_nodes}|{cpus}|"
                         f"{extern_tres}|{nodelist}|")
        return "\n".join(lines)

    def write_day(self, day: int, at: int, instances: list[Instance]) -> None:
        """Write the dump of local day ``day`` taken at epoch ``at`` (instances sorted by job id)."""
        parts = [SACCT_HEADER]
        for inst in instances:
            if inst.end is not None and inst.end <= at:
                text = inst.final_text
                if text is None:
                    text = self.instance_text(inst, at)
                    inst.final_text = text
            else:
                text = self.instance_text(inst, at)
            parts.append(text)
        body = "\n".join(parts) + "\n"
        self.rows_written += len(instances)
        self.lines_written += body.count("\n") - 1
        (self.dir / f"sacct_{self.clock.day_label[day]}.psv").write_text(body, encoding="utf-8")
