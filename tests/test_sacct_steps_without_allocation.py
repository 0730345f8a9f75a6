"""A step whose job has no allocation record in any dump is a reject the SRE sees (probe AQ F3;
hand-written dumps, cluster in UTC so every stamp reads as written, hand-computed values).

A step is part of a job: the job's GPU time is counted through its allocation record only (core.jobs,
core.job_instances). A dump can hold ``2012.batch`` without the ``2012`` line (cut by hand, ``sacct
--jobs`` of steps, a ``--state`` filter that matched only steps); nightly dumps overlap, so the
allocation may come in another dump. After each core.jobs upsert every step of core.job_steps whose job
has no core.jobs row is one reject in raw.rejects (file and line of the step's record, NULL raw: the
record itself loaded); a later dump that brings the allocation makes the job whole and the reject goes;
a rerun changes nothing. The ledger's rows_read = loaded + rejected is unchanged (the sacct reconcile
check, run in every materialization here, stays green).

Cases (dump of 11-11, the probe's 22-column ``sacct -P`` header):

* 2004 + 2004.batch: a whole job, 8 GPUs x 1 h = 8 GPU-h, no reject.
* 2012.batch (the probe's line 10), no 2012 line: reject "step 2012.batch of job 2012: ...".
* 2013+0 het leader present, its component 2013+1 only as step ``2013+1.0``: reject for 2013+1.0 only.
* array task step ``2014_3.batch`` without ``2014_3``: reject.
* 2010 (End 2099: a rejected allocation) + 2010.0: the allocation's own reject and one for the step.

Dump of 11-12 (another header: a short ``-o`` list): 2012 (13:00-14:00, 8 GPUs) and 2012.batch again
-> 2012 in core.jobs, 8 GPU-h; 2012.batch's reject gone; the others stay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusre.models.ingest.reconcile import mismatched_files
from gpusre.models.sources.sacct.orphan_steps import ORPHAN_STEP_REASON, orphan_step_error
from gpusre.models.warehouse import connect, read_sql
from tests.hand_landing import query_rows, run_hand_landing
from tests.sacct_nights import MODES, build_sacct_nights, materialize_sacct

H22 = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
       "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
TRES8 = "billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"
STEP8 = "cpu=128,gres/gpu=8,mem=2000G,node=1"


def _alloc(job: str, start: str, end: str, elapsed: str = "01:00:00") -> str:
    return (f"{job}|{job}|run-{job}|hank|20008|research|research|gpu|normal|COMPLETED|0:0|2026-11-11T12:50:00|"
            f"2026-11-11T12:50:00|{start}|{end}|{elapsed}|1-00:00:00|1|128|{TRES8}|gpu12|")


def _step(step: str, start: str = "2026-11-11T13:00:00", end: str = "2026-11-11T14:00:00") -> str:
    name = step.rsplit(".", 1)[1]
    return (f"{step}|{step}|{name}||||research|||COMPLETED|0:0|{start}|{start}|{start}|{end}|01:00:00||1|128|"
            f"{STEP8}|gpu12|")


#: `sacct -a -P` of 11-11 (line 1 the header).
D1 = "\n".join([
    H22,
    _alloc("2004", "2026-11-11T13:00:00", "2026-11-11T14:00:00"),      # 2
    _step("2004.batch"),                                                 # 3
    # the probe's line, verbatim
    "2012.batch|2012.batch|batch||||research|||COMPLETED|0:0|2026-11-11T13:00:00|2026-11-11T13:00:00|"
    "2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00||1|128|cpu=128,gres/gpu=8,mem=2000G,node=1|gpu12|",  # 4
    _alloc("2013+0", "2026-11-11T13:00:00", "2026-11-11T14:00:00"),    # 5
    _step("2013+1.0"),                                                   # 6
    _step("2014_3.batch"),                                               # 7
    _alloc("2010", "2026-11-11T13:00:00", "2099-01-01T00:00:00"),      # 8: rejected (End 72 years on)
    _step("2010.0"),                                                     # 9
]) + "\n"
#: The next night's overlapping dump, a short `-o` list: it brings 2012's allocation.
D2 = "\n".join([
    "JobID|State|Start|End|Elapsed|NNodes|AllocTRES|NodeList",
    f"2012|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{TRES8}|gpu12",     # 2
    f"2012.batch|COMPLETED|2026-11-11T13:00:00|2026-11-11T14:00:00|01:00:00|1|{STEP8}|gpu12",  # 3
]) + "\n"
CLUSTER_YAML = "cluster: t\ntimezone: UTC\nnodes: 'gpu[01-16]'\ngpus_per_node: 8\n"
F1, F2 = "sacct/sacct_2026-11-11.psv", "sacct/sacct_2026-11-12.psv"

#: (file, line, error) of the step rejects after D1 alone ...
ORPHANS_D1 = sorted([(F1, 4, orphan_step_error("2012", "batch")), (F1, 6, orphan_step_error("2013+1", "0")),
                     (F1, 7, orphan_step_error("2014_3", "batch")), (F1, 9, orphan_step_error("2010", "0"))])
#: ... and once D2 brought 2012's allocation.
ORPHANS_BOTH = [o for o in ORPHANS_D1 if o[1] != 4]

_ORPHAN_SQL = "SELECT source_file, line_no, error FROM raw.rejects WHERE raw IS NULL AND line_no > 0 ORDER BY ALL"


def _state(wh: Path) -> dict:
    con = connect(wh, read_only=True)
    try:
        return {
            "orphans": con.sql(_ORPHAN_SQL).fetchall(),
            "rejects": con.sql("SELECT * FROM raw.rejects ORDER BY source_file, line_no").fetchall(),
            "jobs": con.sql("SELECT job_id, gpu_hours FROM core.jobs ORDER BY job_id").fetchall(),
            "steps": con.sql("SELECT job_id, step_id FROM core.job_steps ORDER BY ALL").fetchall(),
            "mismatched": mismatched_files(con, "sacct", "sacct_records"),
            "ledger": con.sql("SELECT source_file, rows_read, rows_loaded, rows_rejected FROM raw.ingested_files "
                              "WHERE source_kind = 'sacct' ORDER BY source_file").fetchall(),
        }
    finally:
        con.close()


def test_the_upsert_spells_out_the_reason_the_reconcile_check_leaves_out() -> None:
    """sql/core/jobs_upsert.sql writes ORPHAN_STEP_REASON (SQL-quoted), the one text both sides match."""
    assert ORPHAN_STEP_REASON.replace("'", "''") in read_sql("core/jobs_upsert.sql").replace("'\n    || '", "")


def test_a_step_without_its_allocation_is_a_reject_until_a_later_dump_brings_it(tmp_path: Path) -> None:
    landing, wh = tmp_path / "landing", tmp_path / "w.duckdb"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text(CLUSTER_YAML)
    (landing / F1).write_text(D1)
    materialize_sacct(landing, wh)
    night1 = _state(wh)
    assert night1["orphans"] == ORPHANS_D1
    assert night1["jobs"] == [("2004", 8.0), ("2013+0", 8.0)]
    # the steps load all the same (the job becomes whole when its allocation arrives)
    assert ("2012", "batch") in night1["steps"] and ("2014_3", "batch") in night1["steps"]
    # 8 records read: 2 allocations + 5 steps loaded, 2010's allocation rejected; the step rejects are no
    # parse rejects, so the ledger and the reconcile check stand
    assert night1["ledger"] == [(F1, 8, 7, 1)] and night1["mismatched"] == []

    materialize_sacct(landing, wh)  # a rerun changes nothing, rejected_at included
    assert _state(wh) == night1

    (landing / F2).write_text(D2)
    materialize_sacct(landing, wh)
    night2 = _state(wh)
    assert night2["orphans"] == ORPHANS_BOTH
    assert night2["jobs"] == [("2004", 8.0), ("2012", 8.0), ("2013+0", 8.0)]
    assert night2["mismatched"] == []
    # the rejects that stay are the same rows (not re-stamped)
    assert [r for r in night2["rejects"] if r[2] != 4] == [r for r in night1["rejects"] if r[2] != 4]


@pytest.mark.parametrize("mode", MODES)
def test_the_rejects_do_not_depend_on_how_the_dumps_arrived(tmp_path: Path, mode: str) -> None:
    """One run a night, one over both, both then the first re-read (its rejects deleted with its old
    version, its jobs rebuilt): the same step rejects, 2012 whole."""
    wh = build_sacct_nights(tmp_path, mode, {F1.split("/")[1]: D1, F2.split("/")[1]: D2}, CLUSTER_YAML)
    state = _state(wh)
    assert state["orphans"] == ORPHANS_BOTH
    assert state["jobs"] == [("2004", 8.0), ("2012", 8.0), ("2013+0", 8.0)]
    assert state["mismatched"] == []


def test_the_nightly_data_quality_names_the_step(tmp_path: Path) -> None:
    """Every asset over the 11-11 dump: the nightly's Data quality lists the reject (file:line, reason)."""
    wh = run_hand_landing(tmp_path, {"cluster.yaml": CLUSTER_YAML, F1: D1})
    assert query_rows(wh, _ORPHAN_SQL) == ORPHANS_D1
    nightly = "\n".join(p.read_text() for p in (tmp_path / "reports").glob("nightly-*.md"))
    assert f"{F1}:4 | step 2012.batch of job 2012: the job's GPU time is not counted" in nightly
