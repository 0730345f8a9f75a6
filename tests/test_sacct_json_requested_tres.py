"""``sacct --json``: GPUs from ``tres.allocated``, else from ``tres.requested`` -- the rule of the text
dumps (AllocTRES when the row has one, else ReqTRES). Hand-written ``jobs[]`` documents in Slurm's
data_parser shape (v0.0.39-v0.0.43: TRES lists of ``{type, name, id, count}``), hand-computed values.

* 7001 PENDING, ``allocated: []``, requested ``gres gpu:h200`` x 8 -> 8 GPUs, type h200 (probe_v
  landing2 job 2007); its CPUs/nodes are no allocation: n_cpus null.
* 7002 COMPLETED, allocated ``gres gpu`` 8 + ``gres gpu:h200`` 8 (the same 8 GPUs twice, as slurmdbd
  prints them), requested 16 -> the allocation wins: 8 GPUs, 2 h -> 16 GPU-h.
* 7003 COMPLETED, allocated lists TRES but no GPU, requested 4 GPUs -> 0 (AllocTRES not empty wins).
* 7004 PENDING, no ``allocated`` key (an older/trimmed shape), requested untyped ``gpu`` 4 plus typed
  ``gpu:a100`` 2 and ``gpu:h100`` 2 -> the untyped total 4, type a100 (first typed entry).
* A step's ``tres.requested`` is usage statistics (``{max, min, average, total}``), never read.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct, sacct_rows_reconcile
from gpusre.models.sources.sacct.parse import parse_sacct_json, parse_sacct_text
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

T0 = 1_795_000_000  # 2026-11-18T08:26:40Z; only differences matter


def _tres(kind: str, name: str, tid: int, count: int) -> dict:
    return {"type": kind, "name": name, "id": tid, "count": count}


CPU128, NODE1 = _tres("cpu", "", 1, 128), _tres("node", "", 4, 1)
GPU8, H200_8 = _tres("gres", "gpu", 1001, 8), _tres("gres", "gpu:h200", 1002, 8)


def _job(job_id: int, state: str, tres: dict, *, start: int = 0, end: int = 0, steps: list | None = None) -> dict:
    return {
        "job_id": job_id, "name": f"j{job_id}", "user": "kim", "account": "ml", "partition": "gpu",
        "cluster": "t", "state": {"current": [state], "reason": "None"},
        "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "infinite": False, "number": 0}},
        "time": {"submission": T0 - 600, "eligible": T0 - 600, "start": start, "end": end,
                 "elapsed": (end - start) if start and end else 0,
                 "limit": {"set": True, "infinite": False, "number": 240}},
        "nodes": "gpu01" if start else "None assigned", "restart_cnt": 0, "tres": tres, "steps": steps or [],
    }


STEP = {
    "step": {"id": "7002.batch", "name": "batch"}, "state": ["COMPLETED"],
    "exit_code": {"return_code": {"set": True, "infinite": False, "number": 0}},
    "time": {"start": T0, "end": T0 + 7200, "elapsed": 7200}, "nodes": {"count": 1, "range": "gpu01"},
    # Usage statistics, not a request: must not be read as GPUs.
    "tres": {"requested": {"max": [], "min": [], "average": [], "total": [_tres("gres", "gpu", 1001, 99)]},
             "consumed": {"max": [], "min": [], "average": [], "total": []},
             "allocated": [CPU128, NODE1, GPU8, H200_8]},
}

DOC = {"jobs": [
    _job(7001, "PENDING", {"allocated": [], "requested": [CPU128, NODE1, _tres("gres", "gpu:h200", 1001, 8)]}),
    _job(7002, "COMPLETED", {"allocated": [CPU128, NODE1, GPU8, H200_8],
                             "requested": [CPU128, NODE1, _tres("gres", "gpu", 1001, 16)]},
         start=T0, end=T0 + 7200, steps=[STEP]),
    _job(7003, "COMPLETED", {"allocated": [CPU128, NODE1], "requested": [CPU128, _tres("gres", "gpu", 1001, 4)]},
         start=T0, end=T0 + 3600),
    _job(7004, "PENDING", {"requested": [_tres("gres", "gpu", 1001, 4), _tres("gres", "gpu:a100", 1002, 2),
                                         _tres("gres", "gpu:h100", 1003, 2)]}),
]}


def test_json_gpus_fall_back_to_requested_tres_when_nothing_is_allocated() -> None:
    r = parse_sacct_json(json.dumps(DOC), "sacct/d.json", cluster="t")
    assert r.rejects.is_empty()
    rows = r.records.select("job_id", "record_type", "state", "n_gpus", "gpu_type", "n_cpus").rows()
    assert rows == [
        ("7001", "allocation", "PENDING", 8, "h200", None),
        ("7002", "allocation", "COMPLETED", 8, "h200", 128),
        ("7002", "step", "COMPLETED", 8, "h200", 128),
        ("7003", "allocation", "COMPLETED", 0, None, 128),
        ("7004", "allocation", "PENDING", 4, "a100", None),
    ]


def test_json_and_text_dumps_of_the_same_jobs_give_the_same_gpus() -> None:
    """The same four jobs as ``sacct -P`` rows (AllocTRES|ReqTRES): one rule, one result."""
    text = (
        "JobID|State|AllocTRES|ReqTRES\n"
        "7001|PENDING||cpu=128,gres/gpu:h200=8,node=1\n"
        "7002|COMPLETED|cpu=128,gres/gpu:h200=8,gres/gpu=8,node=1|cpu=128,gres/gpu=16,node=1\n"
        "7003|COMPLETED|cpu=128,node=1|cpu=128,gres/gpu=4\n"
        "7004|PENDING||gres/gpu=4,gres/gpu:a100=2,gres/gpu:h100=2\n"
    )
    from_text = parse_sacct_text(text, "sacct/d.psv").records.select("job_id", "n_gpus", "gpu_type").rows()
    from_json = (parse_sacct_json(json.dumps(DOC), "sacct/d.json", cluster="t").records
                 .filter(record_type="allocation").select("job_id", "n_gpus", "gpu_type").rows())
    assert from_json == from_text == [("7001", 8, "h200"), ("7002", 8, "h200"), ("7003", 0, None),
                                      ("7004", 4, "a100")]


def test_pending_json_job_reaches_core_jobs_with_its_requested_gpus(tmp_path: Path) -> None:
    """Through the pipeline: 7001 has 8 GPUs (0 GPU-h: it never ran), 7002 2 h x 8 = 16 GPU-h,
    7003 0 GPUs, 7004 4 GPUs; no rejects."""
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[01-04]'\ngpus_per_node: 8\n")
    (landing / "sacct" / "sacct_2026-11-18.json").write_text(json.dumps(DOC))
    result = dg.materialize([raw_sacct, core_jobs, sacct_rows_reconcile],
                            resources=default_resources(str(wh), str(landing), str(tmp_path / "rep")))
    assert result.success
    con = connect(wh, read_only=True)
    try:
        jobs = con.sql("SELECT job_id, state, n_gpus, gpu_type, gpu_hours FROM core.jobs ORDER BY job_id").fetchall()
        rejects = con.sql("SELECT count(*) FROM raw.rejects").fetchall()
    finally:
        con.close()
    assert jobs == [("7001", "PENDING", 8, "h200", 0.0), ("7002", "COMPLETED", 8, "h200", 16.0),
                    ("7003", "COMPLETED", 0, None, 0.0), ("7004", "PENDING", 4, "a100", 0.0)]
    assert rejects == [(0,)]
