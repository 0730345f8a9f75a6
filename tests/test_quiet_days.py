"""A UTC day on which no GPU job ran, started or ended, between two nightly runs, is a day of the daily
marts at 0 % — not a missing row that drops out of means, minima and the goodput SLI (outside probe,
2026-12-05: 11-22 vanished, "mean utilization 2.3 % over 6 complete days, lowest 11-25 at 0.7 %")."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
from hand_landing import run_hand_landing

from gpusre.pipelines.runner import run_pipeline

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
CLUSTER = "cluster: quiet\nnodes: gpu[01-02]\ngpus_per_node: 8\ntimezone: UTC\n"


def _job(job_id: int, start: str, end: str, hours: int) -> str:
    elapsed = f"{hours // 24}-{hours % 24:02d}:00:00" if hours >= 24 else f"{hours:02d}:00:00"  # as sacct prints it
    return (f"{job_id}|{job_id}|train|alice|llm|gpu|COMPLETED|0:0|{start}|{start}|{start}|{end}|{elapsed}|1|"
            f"cpu=96,gres/gpu=8,node=1|gpu01")


def test_a_day_nothing_ran_between_two_runs_reads_zero(tmp_path: Path) -> None:
    # Night 1: a job 11-20 06:00 → 11-21 06:00 (24 h × 8 GPUs). Nothing runs on 11-22. Night 2 (a later
    # delivery): a job 11-23 00:00 → 12:00 and one 11-24 00:00 → 06:00, ending the record on 11-24.
    wh = run_hand_landing(tmp_path, {
        "cluster.yaml": CLUSTER,
        "sacct/sacct_2026-11-21.psv": "\n".join([HEADER, _job(1, "2026-11-20T06:00:00", "2026-11-21T06:00:00", 24)]) + "\n",
    })
    (tmp_path / "landing" / "sacct" / "sacct_2026-11-24.psv").write_text("\n".join([
        HEADER, _job(2, "2026-11-23T00:00:00", "2026-11-23T12:00:00", 12),
        _job(3, "2026-11-24T00:00:00", "2026-11-24T06:00:00", 6)]) + "\n")
    run_pipeline(tmp_path / "landing", wh, tmp_path / "reports")
    con = duckdb.connect(str(wh), read_only=True)
    try:
        rows = dict(con.sql("SELECT day, allocated_gpu_hours FROM marts.utilization_daily ORDER BY day").fetchall())
    finally:
        con.close()
    # capacity 2 nodes × 8 GPUs × 24 h = 384 GPU-h a day; 11-22: 0 allocated, a day like the others.
    # 11-20 is before the accounting's first day (its first record, job 1's end, is on 11-21: the dump
    # says nothing else about 11-20), so it has no row, as in the goodput and availability marts.
    assert rows == {date(2026, 11, 21): 8 * 6.0, date(2026, 11, 22): 0.0,
                    date(2026, 11, 23): 8 * 12.0, date(2026, 11, 24): 8 * 6.0}
