"""sacct ingestion into a real DuckDB file through real Dagster materializations:
supersession across dumps, rejects with file and line, idempotent reruns, crash safety."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pytest

from gpusre.assets.core_jobs import core_jobs
from gpusre.assets.ingest_sacct import raw_sacct, sacct_rows_reconcile
from gpusre.models.warehouse import connect
from gpusre.pipelines.resources import default_resources

HEADER = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList"
DAY1 = "\n".join([
    HEADER,
    "100|100|train|alice|ml|batch|RUNNING|0:0|2026-09-01T08:00:00|2026-09-01T08:00:00|2026-09-01T09:00:00|Unknown|15:00:00|2-00:00:00|2|64|billing=64,cpu=64,gres/gpu=16,node=2|gpu[001-002]",
    "100.batch|100.batch|batch||ml||RUNNING|0:0|2026-09-01T09:00:00|2026-09-01T09:00:00|2026-09-01T09:00:00|Unknown|15:00:00||1|32|cpu=32,gres/gpu=8,node=1|gpu001",
    "101|101|eval|bob|ml|batch|CANCELLED by 1001|0:0|2026-09-01T10:00:00|2026-09-01T10:00:00|2026-09-01T10:05:00|2026-09-01T11:05:00|01:00:00|04:00:00|1|8|cpu=8,gres/gpu=1,node=1|gpu003",
]) + "\n"
DAY2 = "\n".join([
    HEADER,
    "100|100|train|alice|ml|batch|COMPLETED|0:0|2026-09-01T08:00:00|2026-09-01T08:00:00|2026-09-01T09:00:00|2026-09-02T09:00:00|1-00:00:00|2-00:00:00|2|64|billing=64,cpu=64,gres/gpu=16,node=2|gpu[001-002]",
    "100.batch|100.batch|batch||ml||COMPLETED|0:0|2026-09-01T09:00:00|2026-09-01T09:00:00|2026-09-01T09:00:00|2026-09-02T09:00:00|1-00:00:00||1|32|cpu=32,gres/gpu=8,node=1|gpu001",
    "102|102|oops|carol|ml|batch|EXPLODED|1:0|2026-09-02T10:00:00|2026-09-02T10:00:00|2026-09-02T10:05:00|2026-09-02T10:06:00|00:01:00|01:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu004",
    "103|103|fine|carol|ml|batch|FAILED|2:0|2026-09-02T11:00:00|2026-09-02T11:00:00|2026-09-02T11:05:00|2026-09-02T11:35:00|00:30:00|01:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu004",
]) + "\n"
FIXED_WIDTH = textwrap.dedent("""\
           JobID    JobName  Partition    Account  AllocCPUS      State ExitCode
    ------------ ---------- ---------- ---------- ---------- ---------- --------
    1488666      a1ql_2012+       main      bsc32          4 OUT_OF_ME+    0:125
""")


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    root = tmp_path / "landing"
    (root / "sacct").mkdir(parents=True)
    (root / "sacct" / "sacct_2026-09-01.psv").write_text(DAY1)
    (root / "sacct" / "sacct_2026-09-02.psv").write_text(DAY2)
    (root / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[001-004]'\ngpus_per_node: 8\n")
    return root


def _materialize(landing: Path, warehouse: Path) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [raw_sacct, core_jobs, sacct_rows_reconcile],
        resources=default_resources(str(warehouse), str(landing), str(warehouse.parent / "reports")),
    )


def _snapshot(warehouse: Path) -> dict[str, list[tuple]]:
    con = connect(warehouse, read_only=True)
    try:
        return {
            "jobs": con.sql("SELECT * EXCLUDE (nodes, array_task_ids) FROM core.jobs ORDER BY job_id").fetchall(),
            "steps": con.sql("SELECT job_id, step_id, state FROM core.job_steps ORDER BY ALL").fetchall(),
            "raw": con.sql("SELECT source_file, line_no, job_id, state FROM raw.sacct_records ORDER BY ALL").fetchall(),
            "rejects": con.sql("SELECT source_file, line_no, error FROM raw.rejects ORDER BY ALL").fetchall(),
            "files": con.sql("SELECT source_file, sha256, rows_read, rows_loaded, rows_rejected, status, ingested_at "
                             "FROM raw.ingested_files ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def test_later_dump_supersedes_and_bad_lines_are_rejected(landing: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    result = _materialize(landing, warehouse)
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert checks and all(c.passed for c in checks)

    con = connect(warehouse, read_only=True)
    jobs = {r[0]: r[1:] for r in con.sql(
        "SELECT job_id, state, n_gpus, gpu_hours, cancelled_by, end_day::VARCHAR, nodes FROM core.jobs").fetchall()}
    rejects = con.sql("SELECT source_file, line_no, error FROM raw.rejects").fetchall()
    files = con.sql("SELECT source_file, rows_read, rows_loaded, rows_rejected FROM raw.ingested_files ORDER BY 1").fetchall()
    steps = con.sql("SELECT job_id, step_id, state FROM core.job_steps").fetchall()
    con.close()

    # Job 100 was RUNNING in the first dump and COMPLETED in the second: one row, the final state.
    assert jobs["100"] == ("COMPLETED", 16, 16 * 24.0, None, "2026-09-02", ["gpu001", "gpu002"])
    assert jobs["101"][0] == "CANCELLED" and jobs["101"][3] == 1001
    assert jobs["103"][0] == "FAILED"
    assert "102" not in jobs  # unknown state: rejected, not guessed
    assert rejects == [("sacct/sacct_2026-09-02.psv", 4, rejects[0][2])]
    assert "EXPLODED" in rejects[0][2]
    assert files == [("sacct/sacct_2026-09-01.psv", 3, 3, 0), ("sacct/sacct_2026-09-02.psv", 4, 3, 1)]
    assert steps == [("100", "batch", "COMPLETED")]


def test_rerun_changes_nothing(landing: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    _materialize(landing, warehouse)
    before = _snapshot(warehouse)
    _materialize(landing, warehouse)
    assert _snapshot(warehouse) == before


def test_changed_dump_replaces_its_rows(landing: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    _materialize(landing, warehouse)
    # The operator re-cuts day 2 without job 103: its only record disappears, and so does the job.
    day2 = landing / "sacct" / "sacct_2026-09-02.psv"
    day2.write_text("\n".join(line for line in DAY2.splitlines() if not line.startswith("103|")) + "\n")
    _materialize(landing, warehouse)
    snap = _snapshot(warehouse)
    assert [j[0] for j in snap["jobs"]] == ["100", "101"]
    assert ("sacct/sacct_2026-09-02.psv", 3, 2, 1) in [(f[0], f[2], f[3], f[4]) for f in snap["files"]]


def test_fixed_width_file_is_refused_and_the_rest_loads(landing: Path, tmp_path: Path) -> None:
    (landing / "sacct" / "pasted.txt").write_text(FIXED_WIDTH)
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse).success
    con = connect(warehouse, read_only=True)
    refused = con.sql("SELECT status, error FROM raw.ingested_files WHERE source_file = 'sacct/pasted.txt'").fetchall()
    reject = con.sql("SELECT line_no, error FROM raw.rejects WHERE source_file = 'sacct/pasted.txt'").fetchall()
    n_jobs = con.sql("SELECT count(*) FROM core.jobs").fetchall()[0][0]
    con.close()
    assert refused[0][0] == "refused" and "fixed-width" in refused[0][1]
    assert reject[0][0] == 0 and "fixed-width" in reject[0][1]
    assert n_jobs == 3


CRASHING_INGEST = """
import os, sys
from pathlib import Path
from gpusre.models.warehouse import connect, read_sql
from gpusre.models.sources.sacct.ingest import parse_sacct_shard, plan_sacct, publish_sacct_rows
con = connect(Path(sys.argv[1]))
con.execute("BEGIN TRANSACTION")
plan = plan_sacct(con, Path(sys.argv[2]))
publish_sacct_rows(con, plan, parse_sacct_shard(plan, 0))
con.execute(read_sql("core/jobs_upsert.sql"))
os._exit(3)  # the process dies before COMMIT: power loss, OOM kill, kill -9
"""


def test_crash_mid_run_leaves_the_warehouse_as_it_was(landing: Path, tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    (landing / "sacct" / "sacct_2026-09-02.psv").rename(tmp_path / "later.psv")
    _materialize(landing, warehouse)
    before = _snapshot(warehouse)
    (tmp_path / "later.psv").rename(landing / "sacct" / "sacct_2026-09-02.psv")
    proc = subprocess.run([sys.executable, "-c", CRASHING_INGEST, str(warehouse), str(landing)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert _snapshot(warehouse) == before
    # And the next normal run picks the new dump up.
    _materialize(landing, warehouse)
    assert len(_snapshot(warehouse)["jobs"]) == 3


XDMOD_FIELDS = ("jobid,jobidraw,cluster,partition,qos,account,group,gid,user,uid,submit,eligible,start,end,"
                "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqtres,alloctres,timelimit,nodelist,jobname")


def test_real_samples_headerless_and_json_through_the_asset(tmp_path: Path) -> None:
    """Open XDMoD's headerless fixtures (field list from cluster.yaml) and slurmrestd JSON together."""
    fixtures = Path(__file__).parent / "fixtures" / "sacct"
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    for name in ("accounting-logs.log", "unknown-job-state.log", "utf8-multibyte-chars.log"):
        (landing / "sacct" / f"xdmod-{name}").write_bytes((fixtures / "xdmod" / name).read_bytes())
    for path in sorted((fixtures / "slurmrestd_json_slurmweb").glob("*.json")):
        (landing / "sacct" / path.name).write_bytes(path.read_bytes())
    fields = ", ".join(XDMOD_FIELDS.split(","))
    (landing / "cluster.yaml").write_text(f"cluster: ub-hpc\nsacct:\n  fields: [{fields}]\n")
    warehouse = tmp_path / "w.duckdb"
    assert _materialize(landing, warehouse).success

    con = connect(warehouse, read_only=True)
    files = dict(con.sql("SELECT source_file, rows_rejected FROM raw.ingested_files").fetchall())
    jobs = {r[0]: r[1:] for r in con.sql("SELECT job_id, state, n_gpus, name, n_nodes FROM core.jobs").fetchall()}
    con.close()
    assert files["sacct/xdmod-unknown-job-state.log"] == 2  # FOO and BAR are rejected, not guessed
    assert jobs["4107166"][0] == "CANCELLED"
    assert jobs["5692623"][1] == 2  # gres/gpu=2
    # Job 4103947 is in two dumps with the same instance; the later-sorting dump wins, and its
    # UTF-8 job name is kept intact.
    assert jobs["4103947"][2] == "aàb"
    assert jobs["4746"][0] == "RUNNING" and jobs["4746"][3] == 2  # slurmrestd multi-node GPU job


def test_a_failed_write_rolls_back_the_whole_run(landing: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes run on a writer thread; its error must reach the caller after the queued writes, and
    the run's one transaction must roll back (earlier batches included), leaving the warehouse as it was."""
    import gpusre.models.sources.sacct.ingest as sacct_ingest

    warehouse = tmp_path / "w.duckdb"
    (landing / "sacct" / "sacct_2026-09-02.psv").rename(tmp_path / "later.psv")
    _materialize(landing, warehouse)
    before = _snapshot(warehouse)
    (tmp_path / "later.psv").rename(landing / "sacct" / "sacct_2026-09-02.psv")
    (landing / "sacct" / "sacct_2026-09-03.psv").write_text(DAY2.replace("|103|", "|104|").replace("103|", "104|"))
    monkeypatch.setattr(sacct_ingest, "TYPE_BATCH_LINES", 1)  # one batch per dump: several writes
    real_write = sacct_ingest.write_file_sets
    calls: list[int] = []

    def failing_write(*args) -> int:  # type: ignore[no-untyped-def]
        calls.append(args[2].height)  # (lake, spec, records, versions)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_write(*args)

    monkeypatch.setattr(sacct_ingest, "write_file_sets", failing_write)
    con = connect(warehouse)
    try:
        with pytest.raises(OSError, match="disk full"):
            sacct_ingest.ingest_sacct_files(con, landing)
    finally:
        con.close()
    assert len(calls) == 2  # the first new dump was written, then the second write failed
    assert _snapshot(warehouse) == before
    monkeypatch.setattr(sacct_ingest, "write_file_sets", real_write)
    _materialize(landing, warehouse)  # and the next run loads both dumps
    assert _snapshot(warehouse)["files"][-1][0] == "sacct/sacct_2026-09-03.psv"


def test_a_job_listed_again_unchanged_queues_no_old_days(tmp_path: Path) -> None:
    """A daily dump lists a job pending (or requeued) for months again and again. Only the days of
    instances and job rows that changed go to core.dirty_days: one such job queued the days of all
    its old instances, and the daily marts recomputed most of a year every night (bench_nightly)."""
    requeued = ("200|200|long|dave|ml|batch|{state}|0:0|2026-08-01T08:00:00|2026-08-01T08:00:00|{start}|{end}|"
                "{elapsed}|2-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|{nodes}")
    first = requeued.format(state="PREEMPTED", start="2026-08-01T09:00:00", end="2026-08-01T10:00:00",
                            elapsed="01:00:00", nodes="gpu001")
    pending = requeued.format(state="PENDING", start="Unknown", end="Unknown", elapsed="00:00:00", nodes="None assigned")
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-08-01.psv").write_text("\n".join([HEADER, first, pending]) + "\n")
    wh = tmp_path / "w.duckdb"
    assert _materialize(landing, wh).success

    def dirty_after(name: str, lines: list[str]) -> list[str]:
        con = connect(wh)
        con.execute("DELETE FROM core.dirty_days")  # as the daily marts leave it
        con.close()
        (landing / "sacct" / name).write_text("\n".join([HEADER, *lines]) + "\n")
        assert _materialize(landing, wh).success
        con = connect(wh, read_only=True)
        try:
            return [d.isoformat() for (d,) in con.sql("SELECT day FROM core.dirty_days ORDER BY day").fetchall()]
        finally:
            con.close()

    other = "201|201|x|erin|ml|batch|COMPLETED|0:0|2026-09-03T01:00:00|2026-09-03T01:00:00|2026-09-03T02:00:00|2026-09-03T03:00:00|01:00:00|1:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu002"
    # Listed again, unchanged, beside a new job: only the new job's day.
    assert dirty_after("sacct_2026-09-03.psv", [pending, other]) == ["2026-09-03"]
    # It runs again: its new instance's days; the first instance changes only in being the latest.
    again = requeued.format(state="COMPLETED", start="2026-09-04T09:00:00", end="2026-09-05T01:00:00",
                            elapsed="16:00:00", nodes="gpu001")
    assert dirty_after("sacct_2026-09-05.psv", [again]) == ["2026-08-01", "2026-09-04", "2026-09-05"]


def test_dumps_one_night_at_a_time_build_the_same_core_as_all_at_once(tmp_path: Path) -> None:
    """core_jobs merges a job's new records with its old picks (winner, instances, steps) and reads
    every column of the winner only, from the dumps holding the winners. Fed one nightly dump per
    run (old picks of jobs re-listed for days and of requeued jobs sit in older dumps), and after a
    dump is re-cut (its old records' jobs are rebuilt), the core tables must equal those of one run
    over the same dumps."""
    from gpusre.simulate import SimulationConfig, simulate_cluster

    sim = tmp_path / "sim"
    simulate_cluster(sim, SimulationConfig(nodes=16, days=6, seed=7, jobs_per_day=60))
    dumps = sorted((sim / "sacct").iterdir())
    assert len(dumps) >= 6

    def landing(name: str) -> Path:
        root = tmp_path / name
        (root / "sacct").mkdir(parents=True)
        (root / "cluster.yaml").write_text((sim / "cluster.yaml").read_text())
        return root

    once, nightly = landing("once"), landing("nightly")
    for dump in dumps:
        (once / "sacct" / dump.name).write_bytes(dump.read_bytes())
    assert _materialize(once, tmp_path / "once.duckdb").success
    for dump in dumps:
        (nightly / "sacct" / dump.name).write_bytes(dump.read_bytes())
        assert _materialize(nightly, tmp_path / "nightly.duckdb").success

    def tables(wh: Path) -> dict[str, list[tuple]]:
        con = connect(wh, read_only=True)
        try:
            return {t: con.sql(f"SELECT * FROM core.{t} ORDER BY ALL").fetchall()
                    for t in ("jobs", "job_instances", "job_steps")}
        finally:
            con.close()

    con = connect(tmp_path / "once.duckdb", read_only=True)
    relisted, requeued = con.sql(
        "SELECT (SELECT count(*) FROM (SELECT job_id FROM raw.sacct_records WHERE record_type = 'allocation' "
        "        GROUP BY job_id HAVING count(DISTINCT source_file) > 1)),"
        "       (SELECT count(*) FROM core.job_instances WHERE instance_no > 1)").fetchall()[0]
    con.close()
    assert relisted > 0 and requeued > 0, "the trace must hold jobs in several dumps and requeued jobs"
    assert tables(tmp_path / "nightly.duckdb") == tables(tmp_path / "once.duckdb")

    # An operator re-cuts an older dump without every third record: jobs lose records that were
    # picks (rebuilt from what is left), while the other jobs are untouched.
    recut = dumps[-3].name
    lines = (nightly / "sacct" / recut).read_text().splitlines()
    kept = "\n".join([lines[0], *(line for i, line in enumerate(lines[1:]) if i % 3 != 1)]) + "\n"
    (nightly / "sacct" / recut).write_text(kept)
    assert _materialize(nightly, tmp_path / "nightly.duckdb").success
    (once / "sacct" / recut).write_text(kept)
    assert _materialize(once, tmp_path / "fresh.duckdb").success
    assert tables(tmp_path / "nightly.duckdb") == tables(tmp_path / "fresh.duckdb")
    assert tables(tmp_path / "fresh.duckdb") != tables(tmp_path / "once.duckdb")


def test_restarts_seen_in_an_older_dump_survive_a_merge(tmp_path: Path) -> None:
    """core.jobs.restarts is the largest Slurm Restarts count over every record (or the starts seen,
    less one). A dump cut without the Restarts field must not lower it when the next night merges
    the job's new record with its old pick, nor when the job is rebuilt from all records."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[001-004]'\ngpus_per_node: 8\n")
    job = ("300|300|train|alice|ml|batch|{state}|0:0|2026-09-01T08:00:00|2026-09-01T08:00:00|"
           "2026-09-01T09:00:00|{end}|{elapsed}|2-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu001")
    (landing / "sacct" / "sacct_2026-09-01.psv").write_text(
        HEADER + "|Restarts\n" + job.format(state="RUNNING", end="Unknown", elapsed="15:00:00") + "|2\n")
    wh = tmp_path / "w.duckdb"
    assert _materialize(landing, wh).success
    (landing / "sacct" / "sacct_2026-09-02.psv").write_text(
        HEADER + "\n" + job.format(state="COMPLETED", end="2026-09-02T09:00:00", elapsed="1-00:00:00") + "\n")
    assert _materialize(landing, wh).success
    fresh = tmp_path / "fresh.duckdb"
    assert _materialize(landing, fresh).success
    for warehouse in (wh, fresh):
        con = connect(warehouse, read_only=True)
        try:
            assert con.sql("SELECT state, restarts FROM core.jobs WHERE job_id = '300'").fetchall() == [("COMPLETED", 2)]
        finally:
            con.close()


def test_a_first_load_upserts_within_a_small_memory_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first load queues every job. The lake views' row estimate is ~0, so DuckDB built the upsert's
    hash joins on the lake scan (every wide record): a simulated year ran out of the 1 GB default. Here
    100 k jobs in ten dumps, through the real assets, under 128 MB (the flipped plan needs ~200 MB,
    the written one ~100 MB, measured on 2026-12-02)."""
    import polars as pl

    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    per_day = 10_000
    for d in range(10):
        day = f"2026-03-{d + 1:02d}"
        i = pl.int_range(d * per_day, (d + 1) * per_day, eager=True)
        first = (i % 100 * 8 + 1).cast(pl.String).str.zfill(4)
        last = (i % 100 * 8 + 8).cast(pl.String).str.zfill(4)
        lines = pl.select(pl.format(
            "{}|{}|train|alice|ml|gpu|COMPLETED|0:0|{}T00:00:00|{}T00:00:00|{}T01:00:00|{}T05:00:00|04:00:00|"
            "1-00:00:00|8|64|billing=64,cpu=64,gres/gpu=64,node=8|gpu[{}-{}]",
            i + 1000, i + 1000, pl.lit(day), pl.lit(day), pl.lit(day), pl.lit(day), first, last)).to_series()
        (landing / "sacct" / f"sacct_{day}.psv").write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    monkeypatch.setenv("GPUSRE_DUCKDB_MEMORY_LIMIT", "128MB")
    wh = tmp_path / "w.duckdb"
    assert _materialize(landing, wh).success
    con = connect(wh, read_only=True)
    try:
        assert con.sql("SELECT count(*), sum(gpu_hours), count(*) FILTER (len(nodes) = 8) FROM core.jobs").fetchall() == [
            (100_000, 100_000 * 64 * 4.0, 100_000)]
        assert con.sql("SELECT count(*) FROM raw.sacct_dirty_jobs").fetchall() == [(0,)]
    finally:
        con.close()


def test_the_upsert_keeps_the_written_build_side_and_resets_it() -> None:
    """jobs_upsert.sql sets lake.LAKE_JOIN_BUILD_SIDE (the first-load memory fix above) and resets it,
    so the asset's later queries on the same connection plan as usual."""
    from gpusre.models.ingest.lake import LAKE_JOIN_BUILD_SIDE
    from gpusre.models.warehouse import read_sql

    sql = read_sql("core/jobs_upsert.sql")
    assert sql.count(LAKE_JOIN_BUILD_SIDE + ";") == 1
    assert sql.index(LAKE_JOIN_BUILD_SIDE) < sql.index("raw.sacct_records") < sql.index("RESET disabled_optimizers;")


def test_an_instance_no_dump_saw_end_ends_at_the_requeue(tmp_path: Path) -> None:
    """Dumps cut without -D list only a job's latest run: night 1 shows job 1700 RUNNING since 10:00,
    night 2 shows it COMPLETED after a requeue (submit 01:00, start 02:00). The first run ended when
    Slurm requeued it (the next run's submit time), not at the end of the data: hand-computed rows,
    the same whether the dumps arrive one night at a time or together."""
    rows = {
        "sacct_2026-11-10.psv": "1700|1700|llm|alice|ml|batch|RUNNING|0:0|2026-11-10T09:00:00|2026-11-10T09:00:00|"
                                "2026-11-10T10:00:00|Unknown|14:15:00|2-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu001",
        "sacct_2026-11-11.psv": "1700|1700|llm|alice|ml|batch|COMPLETED|0:0|2026-11-11T01:00:00|2026-11-11T01:02:00|"
                                "2026-11-11T02:00:00|2026-11-11T05:00:00|03:00:00|2-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu002",
    }
    utc = timezone.utc
    want = [(1, "REQUEUED", datetime(2026, 11, 10, 10, tzinfo=utc), datetime(2026, 11, 11, 1, tzinfo=utc), 15 * 3600),
            (2, "COMPLETED", datetime(2026, 11, 11, 2, tzinfo=utc), datetime(2026, 11, 11, 5, tzinfo=utc), 3 * 3600)]
    for mode in ("nightly", "once"):
        landing = tmp_path / mode
        (landing / "sacct").mkdir(parents=True)
        (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[001-004]'\ngpus_per_node: 8\n")
        for name, line in rows.items():
            (landing / "sacct" / name).write_text(HEADER + "\n" + line + "\n")
            if mode == "nightly":
                assert _materialize(landing, tmp_path / f"{mode}.duckdb").success
        if mode == "once":
            assert _materialize(landing, tmp_path / f"{mode}.duckdb").success
        con = connect(tmp_path / f"{mode}.duckdb", read_only=True)
        try:
            got = con.sql("SELECT instance_no, state, start_ts, end_ts, elapsed_s FROM core.job_instances "
                          "WHERE job_id = '1700' ORDER BY instance_no").fetchall()
            assert got == want, mode
        finally:
            con.close()


def test_a_pending_array_range_gives_way_to_its_tasks(tmp_path: Path) -> None:
    """Night 1 lists task 1 running and the range 1800_[2-3%1] pending; night 2 lists task 2 done and
    the range shrunk to 1800_[3%1]; night 3 lists task 3 done. A range stays a pending job while a task
    of it has no record of its own, and is gone once every one has."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'gpu[001-004]'\ngpus_per_node: 8\n")
    done = ("1800_{t}|180{t}|llm|alice|ml|batch|COMPLETED|0:0|2026-11-10T09:00:00|2026-11-10T09:00:00|"
            "2026-11-1{t}T01:00:00|2026-11-1{t}T05:00:00|04:00:00|1-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu001")
    pending = ("1800_[{tasks}%1]|1800|llm|alice|ml|batch|PENDING|0:0|2026-11-10T09:00:00|2026-11-10T09:00:00|"
               "Unknown|Unknown|00:00:00|1-00:00:00|1|8||None assigned")
    nights = {"sacct_2026-11-11.psv": [done.format(t=1), pending.format(tasks="2-3")],
              "sacct_2026-11-12.psv": [done.format(t=2), pending.format(tasks="3")],
              "sacct_2026-11-13.psv": [done.format(t=3)]}
    wh = tmp_path / "w.duckdb"
    seen = []
    for name, lines in nights.items():
        (landing / "sacct" / name).write_text(HEADER + "\n" + "\n".join(lines) + "\n")
        assert _materialize(landing, wh).success
        con = connect(wh, read_only=True)
        try:
            seen.append([r[0] for r in con.sql("SELECT job_id FROM core.jobs ORDER BY job_id").fetchall()])
        finally:
            con.close()
    assert seen == [["1800_1", "1800_[2-3%1]"],
                    ["1800_1", "1800_2", "1800_[3%1]"],   # [2-3] is stale: 2 has a record, 3 the newer range
                    ["1800_1", "1800_2", "1800_3"]]


def test_a_record_without_alloctres_keeps_the_gpu_count_another_record_gave(tmp_path: Path) -> None:
    """Night 1's dump has AllocTRES (8 GPUs, job 950 running since 21:00); night 2's --format left it out
    (COMPLETED at 05:00, 8 h): the job still held 8 GPUs, 64 GPU-hours, merged or rebuilt alike."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "cluster.yaml").write_text("cluster: t\ntimezone: UTC\nnodes: 'r1n[01-04]'\ngpus_per_node: 8\n")
    (landing / "sacct" / "sacct_2026-11-10.psv").write_text(
        "JobID|State|ExitCode|Submit|Start|End|Elapsed|NNodes|AllocTRES|NodeList\n"
        "950|RUNNING|0:0|2026-11-10T20:00:00|2026-11-10T21:00:00|Unknown|03:15:00|1|cpu=8,gres/gpu=8,node=1|r1n01\n")
    wh = tmp_path / "w.duckdb"
    assert _materialize(landing, wh).success
    (landing / "sacct" / "sacct_2026-11-11.psv").write_text(
        "JobID|State|ExitCode|Submit|Start|End|Elapsed|NNodes|NodeList\n"
        "950|COMPLETED|0:0|2026-11-10T20:00:00|2026-11-10T21:00:00|2026-11-11T05:00:00|08:00:00|1|r1n01\n")
    assert _materialize(landing, wh).success
    assert _materialize(landing, tmp_path / "fresh.duckdb").success
    for warehouse in (wh, tmp_path / "fresh.duckdb"):
        con = connect(warehouse, read_only=True)
        try:
            assert con.sql("SELECT state, n_gpus, gpu_hours FROM core.jobs").fetchall() == [("COMPLETED", 8, 64.0)]
            assert con.sql("SELECT n_gpus FROM core.job_instances").fetchall() == [(8,)]
        finally:
            con.close()


def test_a_span_that_ends_at_midnight_does_not_queue_the_next_day(tmp_path: Path) -> None:
    """A dump cut at 00:00: a running job's span reaches the cut, a finished one ends at 00:00 exactly.
    Spans are half-open, so neither touches the new day (queuing it made a phantom day of 0 %
    utilization at full capacity); the job that ended at 00:00 still counts on its end day for usage."""
    rows = [
        # running since 18:00, Elapsed 06:00:00: start + Elapsed = the dump's cut, 2026-09-02T00:00:00
        "300|300|train|alice|ml|batch|RUNNING|0:0|2026-09-01T17:00:00|2026-09-01T17:00:00|2026-09-01T18:00:00|Unknown|"
        "06:00:00|2-00:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu001",
        # ran 22:00 .. 00:00 on the dot
        "301|301|eval|bob|ml|batch|COMPLETED|0:0|2026-09-01T21:00:00|2026-09-01T21:00:00|2026-09-01T22:00:00|"
        "2026-09-02T00:00:00|02:00:00|04:00:00|1|8|cpu=8,gres/gpu=8,node=1|gpu002",
    ]
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "sacct_2026-09-01.psv").write_text("\n".join([HEADER, rows[0]]) + "\n")
    wh = tmp_path / "w.duckdb"
    assert _materialize(landing, wh).success
    con = connect(wh, read_only=True)
    try:
        assert [d.isoformat() for (d,) in con.sql("SELECT day FROM core.dirty_days ORDER BY day").fetchall()] == [
            "2026-09-01"]
    finally:
        con.close()
    (landing / "sacct" / "sacct_2026-09-02.psv").write_text("\n".join([HEADER, rows[1]]) + "\n")
    assert _materialize(landing, wh).success
    con = connect(wh, read_only=True)
    try:
        # job 301's instance touches 09-01 only; its job row ends on 09-02 (usage counts jobs by end day)
        assert [d.isoformat() for (d,) in con.sql("SELECT day FROM core.dirty_days ORDER BY day").fetchall()] == [
            "2026-09-01", "2026-09-02"]
    finally:
        con.close()
