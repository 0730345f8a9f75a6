"""Write a small hand-made landing (file path → text) and run the real pipeline over it.

Also the pieces the hand landings share: the ``sacct -P`` header they write (a Slurm 23.x
``sacct -P --format=…`` order with a ``Comment`` field), one allocation record of it, and Slurm's
``[D-]HH:MM:SS`` duration — so a test states only what its case is about (times, nodes, GPUs per node).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb

from gpusre.pipelines.runner import run_pipeline

#: The ``sacct -P`` header of the hand landings' dumps.
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")


def slurm_duration(start: datetime, end: datetime) -> str:
    """Slurm's ``Elapsed``/``Duration`` text of ``end - start``: ``[D-]HH:MM:SS``."""
    days, rest = divmod(int((end - start).total_seconds()), 86400)
    return (f"{days}-" if days else "") + f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def sacct_line(job_id: str, day: str, start: str, end: str, nodes: str, n_nodes: int, *,
               raw: str | None = None, state: str = "FAILED", exit_code: str = "1:0", elapsed: str | None = None,
               name: str | None = None, user: str = "alice", group: str = "ml", account: str = "llm",
               partition: str = "gpu", gpus_per_node: int = 8, cpus_per_node: int = 112, mem: str = "1000G",
               timelimit: str = "1-00:00:00") -> str:
    """One allocation record of :data:`SACCT_HEADER` submitted, eligible and started at ``day``T``start``
    and ended at ``day``T``end`` (``elapsed`` from the two unless given); the job name ``train-<raw id>``
    unless given (a name of its own: no job restarts another's run)."""
    raw = raw or job_id
    gpus, cpus = gpus_per_node * n_nodes, cpus_per_node * n_nodes
    begin, finish = f"{day}T{start}", f"{day}T{end}"
    elapsed = elapsed or slurm_duration(datetime.fromisoformat(begin), datetime.fromisoformat(finish))
    return (f"{job_id}|{raw}|{name or f'train-{raw}'}|{user}|2001|{group}|{account}|{partition}|normal|{state}|"
            f"{exit_code}|{begin}|{begin}|{begin}|{finish}|{elapsed}|{timelimit}|{n_nodes}|{cpus}|"
            f"billing={cpus},cpu={cpus},gres/gpu={gpus},mem={mem},node={n_nodes}|{nodes}|")


def sacct_dump(lines: list[str]) -> str:
    """A ``sacct -P`` dump file: :data:`SACCT_HEADER`, then ``lines``."""
    return "\n".join([SACCT_HEADER, *lines]) + "\n"


def run_hand_landing(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (paths relative to the landing, e.g. ``sacct/sacct_2026-12-01.psv``) under
    ``root/landing``, run every asset into ``root/wh/gpusre.duckdb`` (reports in ``root/reports``) and
    return the warehouse path."""
    landing = root / "landing"
    for name, text in files.items():
        (landing / name).parent.mkdir(parents=True, exist_ok=True)
        (landing / name).write_text(text)
    wh = root / "wh" / "gpusre.duckdb"
    run_pipeline(landing, wh, root / "reports")
    return wh


def query_rows(warehouse: Path, sql: str) -> list[tuple]:
    """``sql``'s rows from ``warehouse``, opened read-only and closed again."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()
