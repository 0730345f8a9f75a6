"""A job's GPU count when its records disagree (probe AM F1, probe AN F2; hand-written dumps, cluster in
UTC so every stamp reads as written, hand-computed values).

A job's GPU allocation does not change between its records (Slurm re-allocates a requeued job its
request; het components and array tasks have ids of their own), so core.jobs.n_gpus and the n_gpus of
every core.job_instances row is the largest count the job's records state:

* An empty allocation (a pending record: AllocTRES empty, NodeList ``None assigned``; JSON
  ``allocated: []``) states no count: the parser gives NULL, not 0.
* A record whose GPU columns list TRES but no GPU states 0 — a CPU job, or an older site whose
  AccountingStorageTRES does not track gres/gpu dumped without AllocGRES — and does not hide a positive
  count another record of the job states.
* A job no record shows a GPU for stays 0 GPUs (a CPU job, size bucket '0'); one no record states an
  allocation for is NULL (unknown).

Cases:

* 1005 (OUT_OF_MEMORY, 10:00-10:30) and 1062 (COMPLETED, 12:00-14:00): the 11-10 dump has AllocTRES
  without a GPU and AllocGRES ``gpu:8`` / ``gpu:h100:8``; the later, overlapping 11-11 dump has no
  AllocGRES column -> 8 GPUs each, 8 x 0.5 h = 4 GPU-h and 8 x 2 h = 16 GPU-h (probe AM landing2).
* 1063 (COMPLETED, 15:00-16:00): another spelling, AllocGRES ``gpu:a100:4(IDX:0-3)`` -> 4 GPUs, 4 GPU-h.
* 1055: a CPU job in both dumps (``billing=4,cpu=4,mem=16G,node=1``, AllocGRES empty) -> 0 GPUs.
* 1056: pending in the 11-10 dump (empty allocation), a CPU job that ran on 11-11 -> 0 GPUs, not NULL.
* 1057: pending in both dumps, no allocation ever stated -> NULL.
* 3601 (probe AN landing2): ``sacct -D`` lists the run Slurm requeued at 20:00 (typed
  ``gres/gpu:h100=8`` only, another spelling than the probe's) and the job pending again with an empty
  AllocTRES -> the job (PENDING) has 8 GPUs, its instance (02:05-20:00, 64,500 s) 8 GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpusre.models.sources.sacct.parse import parse_sacct_json, parse_sacct_text
from gpusre.models.warehouse import connect
from tests.hand_landing import query_rows, run_hand_landing
from tests.sacct_nights import MODES, build_sacct_nights

H_GRES = "JobID|JobIDRaw|User|Account|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|AllocGRES|NodeList"
H_TRES = "JobID|JobIDRaw|User|Account|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
CPU128 = "billing=128,cpu=128,mem=1000G,node=1"
CPU4 = "billing=4,cpu=4,mem=16G,node=1"


def _rec(job: str, user: str, state: str, times: tuple[str, str, str, str], elapsed: str, tres: str,
         nodes: str, gres: str | None = None) -> str:
    """One allocation line (stamps on 2026-11-DDTHH:MM given as 'DD HH:MM', 'Unknown' kept)."""
    stamps = [t if t == "Unknown" else f"2026-11-{t[:2]}T{t[3:]}:00" for t in times]
    exit_code = "0:125" if state == "OUT_OF_MEMORY" else "0:0"
    fields = [job, job, user, "ml", state, exit_code, *stamps, elapsed, "1", tres,
              *([] if gres is None else [gres]), nodes]
    return "|".join(fields)


#: `sacct -a -P -D` of 2026-11-10, with AllocGRES.
D1 = "\n".join([
    H_GRES,
    _rec("1005", "ana", "OUT_OF_MEMORY", ("10 09:55", "10 09:55", "10 10:00", "10 10:30"), "00:30:00", CPU128,
         "gpu07", "gpu:8"),
    _rec("1062", "ana", "COMPLETED", ("10 11:00", "10 11:00", "10 12:00", "10 14:00"), "02:00:00", CPU128,
         "gpu06", "gpu:h100:8"),
    _rec("1063", "bo", "COMPLETED", ("10 14:50", "10 14:50", "10 15:00", "10 16:00"), "01:00:00",
         "billing=64,cpu=64,mem=500G,node=1", "gpu05", "gpu:a100:4(IDX:0-3)"),
    _rec("1055", "cy", "COMPLETED", ("10 08:00", "10 08:00", "10 08:00", "10 09:00"), "01:00:00", CPU4, "gpu04", ""),
    _rec("1056", "cy", "PENDING", ("10 23:00", "10 23:00", "Unknown", "Unknown"), "00:00:00", "", "None assigned", ""),
    _rec("1057", "cy", "PENDING", ("10 23:10", "10 23:10", "Unknown", "Unknown"), "00:00:00", "", "None assigned", ""),
]) + "\n"

#: The overlapping `sacct -a -P -D -S 2026-11-10 -E 2026-11-12` of the next night, without AllocGRES.
D2 = "\n".join([
    H_TRES,
    _rec("1005", "ana", "OUT_OF_MEMORY", ("10 09:55", "10 09:55", "10 10:00", "10 10:30"), "00:30:00", CPU128, "gpu07"),
    _rec("1062", "ana", "COMPLETED", ("10 11:00", "10 11:00", "10 12:00", "10 14:00"), "02:00:00", CPU128, "gpu06"),
    _rec("1063", "bo", "COMPLETED", ("10 14:50", "10 14:50", "10 15:00", "10 16:00"), "01:00:00",
         "billing=64,cpu=64,mem=500G,node=1", "gpu05"),
    _rec("1055", "cy", "COMPLETED", ("10 08:00", "10 08:00", "10 08:00", "10 09:00"), "01:00:00", CPU4, "gpu04"),
    _rec("1056", "cy", "COMPLETED", ("10 23:00", "10 23:00", "11 01:00", "11 02:00"), "01:00:00", CPU4, "gpu04"),
    _rec("1057", "cy", "PENDING", ("10 23:10", "10 23:10", "Unknown", "Unknown"), "00:00:00", "", "None assigned"),
    _rec("3601", "ivan", "REQUEUED", ("11 02:00", "11 02:00", "11 02:05", "11 20:00"), "17:55:00",
         "billing=112,cpu=112,gres/gpu:h100=8,mem=1800G,node=1", "gpu01"),
    _rec("3601", "ivan", "PENDING", ("11 20:00", "11 20:02", "Unknown", "Unknown"), "00:00:00", "", "None assigned"),
    # sets the accounting's end at 2026-11-12 00:00 (8 GPUs on gpu02)
    _rec("1070", "dee", "COMPLETED", ("11 21:50", "11 21:50", "11 22:00", "12 00:00"), "02:00:00",
         "billing=112,cpu=112,gres/gpu=8,node=1", "gpu02"),
]) + "\n"
DUMPS = {"sacct_2026-11-10.psv": D1, "sacct_2026-11-11.psv": D2}
CLUSTER_YAML = "cluster: t\ntimezone: UTC\nnodes: 'gpu[01-08]'\ngpus_per_node: 8\n"

#: (job_id, state, n_gpus, size_bucket, gpu_hours) of core.jobs, worked out above.
JOBS = [
    ("1005", "OUT_OF_MEMORY", 8, "2-8", 4.0),
    ("1055", "COMPLETED", 0, "0", 0.0),
    ("1056", "COMPLETED", 0, "0", 0.0),
    ("1057", "PENDING", None, "0", 0.0),
    ("1062", "COMPLETED", 8, "2-8", 16.0),
    ("1063", "COMPLETED", 4, "2-8", 4.0),
    ("1070", "COMPLETED", 8, "2-8", 16.0),
    ("3601", "PENDING", 8, "2-8", 0.0),
]
#: (job_id, instance_no, state, elapsed_s, n_gpus) of core.job_instances.
INSTANCES = [
    ("1005", 1, "OUT_OF_MEMORY", 1800, 8),
    ("1055", 1, "COMPLETED", 3600, 0),
    ("1056", 1, "COMPLETED", 3600, 0),
    ("1062", 1, "COMPLETED", 7200, 8),
    ("1063", 1, "COMPLETED", 3600, 4),
    ("1070", 1, "COMPLETED", 7200, 8),
    ("3601", 1, "REQUEUED", 64500, 8),
]


def test_an_empty_allocation_states_no_gpu_count_and_a_gpu_less_one_states_zero() -> None:
    text = (
        H_TRES + "\n"
        + _rec("1", "a", "PENDING", ("10 01:00", "10 01:00", "Unknown", "Unknown"), "00:00:00", "", "None assigned")
        + "\n" + _rec("2", "a", "COMPLETED", ("10 01:00", "10 01:00", "10 01:00", "10 02:00"), "01:00:00", CPU4, "n1")
        + "\n" + _rec("3", "a", "COMPLETED", ("10 01:00", "10 01:00", "10 01:00", "10 02:00"), "01:00:00",
                      "cpu=8,gres/gpu:h100=8,node=1", "n1") + "\n"
    )
    r = parse_sacct_text(text, "sacct/x.psv")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "n_gpus").rows() == [("1", None), ("2", 0), ("3", 8)]
    # An AllocTRES without GPU, the dump having AllocGRES: AllocGRES gives the count (probe AM 1005).
    gres = parse_sacct_text(D1, "sacct/d1.psv")
    assert gres.records.select("job_id", "n_gpus").rows()[:3] == [("1005", 8), ("1062", 8), ("1063", 4)]


def test_json_with_nothing_allocated_or_requested_states_no_gpu_count() -> None:
    """``sacct --json``: ``allocated: []`` and ``requested: []`` (or no ``requested``) -> NULL, as the text
    dumps' empty AllocTRES; an allocation listing TRES without a GPU -> 0."""
    def job(job_id: int, state: str, tres: dict) -> dict:
        return {"job_id": job_id, "name": "x", "user": "kim", "account": "ml", "partition": "gpu", "cluster": "t",
                "state": {"current": [state], "reason": "None"},
                "exit_code": {"status": ["SUCCESS"], "return_code": {"set": True, "infinite": False, "number": 0}},
                "time": {"submission": 1_795_000_000, "eligible": 1_795_000_000, "start": 0, "end": 0, "elapsed": 0,
                         "limit": {"set": True, "infinite": False, "number": 60}},
                "nodes": "None assigned", "restart_cnt": 0, "tres": tres, "steps": []}
    cpu = [{"type": "cpu", "name": "", "id": 1, "count": 4}, {"type": "node", "name": "", "id": 4, "count": 1}]
    doc = {"jobs": [job(1, "PENDING", {"allocated": [], "requested": []}),
                    job(2, "PENDING", {"allocated": []}),
                    job(3, "COMPLETED", {"allocated": cpu, "requested": cpu})]}
    r = parse_sacct_json(json.dumps(doc), "sacct/d.json", cluster="t")
    assert r.rejects.is_empty()
    assert r.records.select("job_id", "n_gpus").rows() == [("1", None), ("2", None), ("3", 0)]


@pytest.mark.parametrize("mode", MODES)
def test_the_job_gpu_count_is_what_its_records_state(tmp_path: Path, mode: str) -> None:
    """One run a night (merges over the old picks), one run over both dumps, and both then the first dump
    re-read (its jobs rebuilt from every record): the same counts."""
    wh = build_sacct_nights(tmp_path, mode, DUMPS, CLUSTER_YAML)
    con = connect(wh, read_only=True)
    try:
        jobs = con.sql("SELECT job_id, state, n_gpus, size_bucket, gpu_hours FROM core.jobs ORDER BY job_id").fetchall()
        inst = con.sql("SELECT job_id, instance_no, state, elapsed_s, n_gpus FROM core.job_instances "
                       "ORDER BY job_id, instance_no").fetchall()
    finally:
        con.close()
    assert jobs == JOBS
    assert inst == INSTANCES
    # The GPU model likewise: any record's (1062's type only the 11-10 dump's AllocGRES names, 3601's only
    # its requeued run's typed TRES; 1005's AllocGRES `gpu:8` names none).
    assert query_rows(wh, "SELECT job_id, gpu_type FROM core.jobs ORDER BY job_id") == [("1005", None), ("1055", None), ("1056", None), ("1057", None), ("1062", "h100"),
                              ("1063", "a100"), ("1070", None), ("3601", "h100")]


@pytest.fixture(scope="module")
def pipeline_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both dumps through every asset; 3601's node logged Xid 79 at 19:59:20 (probe AN's evidence);
    checkpoints every 1800 s, restart 600 s (probe AN's llm-pretrain policy)."""
    root = tmp_path_factory.mktemp("gpu_count")
    xid = ("Nov 11 19:59:20 gpu01 kernel: [55001.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
           "name=<unknown>, GPU has fallen off the bus.\n")
    cluster = CLUSTER_YAML + "reliability:\n  checkpoint: {interval_s: 1800, restart_overhead_s: 600, write_s: 0}\n"
    files = {f"sacct/{name}": text for name, text in DUMPS.items()}
    files |= {"cluster.yaml": cluster, "syslog/2026-11-11/gpu01.log": xid}
    return run_hand_landing(root, files).with_name("gpusre.snapshot.duckdb")


def test_job_totals_count_the_gpus_only_an_earlier_dump_stated(pipeline_warehouse: Path) -> None:
    """11-10: GPU jobs 1005, 1062, 1063 (3; 0 when the later dump won), 1005's OOM the failed one;
    4 + 16 + 4 = 24 GPU-h."""
    rows = query_rows(pipeline_warehouse, "SELECT gpu_jobs, failed_jobs, gpu_hours FROM marts.job_totals "
                                          "WHERE day = DATE '2026-11-10'")
    assert rows == [(3, 1, pytest.approx(24.0))]


def test_a_requeued_run_pending_again_keeps_its_gpus_in_the_failure_marts(pipeline_warehouse: Path) -> None:
    """3601's run ended by the Xid: 8 GPUs x E[lost] = Δ/2 = 900 s (64,500 s >= Δ) -> 2.0 GPU-h, no restart
    yet (pending at the end)."""
    rows = query_rows(pipeline_warehouse, "SELECT instance_no, n_gpus, round(lost_gpu_hours, 4) "
                                          "FROM marts.instance_failure_attribution WHERE job_id = '3601'")
    assert rows == [(1, 8, 2.0)]


def test_a_requeued_run_pending_again_is_an_ongoing_run(pipeline_warehouse: Path) -> None:
    """Probe AN V3: wall 11-11 02:00 (eligible) -> the accounting's end 11-12 00:00 = 79,200 s; run 64,500 s,
    lost 900 s, no restart yet -> productive 63,600 s, ETTR 63,600 / 79,200 = 0.80303."""
    rows = query_rows(pipeline_warehouse, "SELECT job_ids, ongoing, n_gpus, wallclock_s, run_s, productive_s, ettr "
                                          "FROM marts.ettr_runs WHERE list_contains(job_ids, '3601')")
    assert rows == [(["3601"], True, 8, 79200, 64500, pytest.approx(63600.0), pytest.approx(63600 / 79200))]
