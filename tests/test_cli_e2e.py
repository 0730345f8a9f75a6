"""End to end: `gpusre simulate` + `gpusre run` on a small cluster, checked against the simulator's
ground truth; reruns change nothing; user errors are one line with a non-zero exit code."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpusre.models.warehouse import catalog_clash_error, connect

GPUSRE = [sys.executable, "-m", "gpusre.pipelines.cli"]


def _gpusre(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GPUSRE, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    landing = tmp_path_factory.mktemp("e2e") / "landing"
    proc = _gpusre("simulate", "--out", str(landing), "--nodes", "16", "--days", "21", "--seed", "3",
                   "--timezone", "America/Chicago")
    assert proc.returncode == 0, proc.stderr
    return landing


@pytest.fixture(scope="module")
def warehouse(simulated: Path) -> Path:
    wh = simulated.parent / "w.duckdb"
    proc = _gpusre("run", "--landing", str(simulated), "--warehouse", str(wh), "--reports", str(simulated.parent / "reports"))
    assert proc.returncode == 0, proc.stderr
    assert "report:" in proc.stdout
    assert f"snapshot for ad hoc queries (readable while a run writes): {wh.with_name('w.snapshot.duckdb')}" in proc.stdout
    assert "Traceback" not in proc.stderr
    return wh


def _truth_jobs(landing: Path) -> list[dict[str, str]]:
    with (landing / "truth" / "jobs.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def _core_and_marts(wh: Path) -> dict[str, list[tuple]]:
    con = connect(wh, read_only=True)
    try:
        tables = [r[0] for r in con.sql(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema IN ('core', 'marts') ORDER BY 1").fetchall()]
        return {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}
    finally:
        con.close()


def test_core_jobs_match_truth(simulated: Path, warehouse: Path) -> None:
    truth = {row["job_id"]: row for row in _truth_jobs(simulated)}
    con = connect(warehouse, read_only=True)
    jobs = {r[0]: r[1:] for r in con.sql(
        "SELECT job_id, state, n_gpus, elapsed_s, restarts, strftime(start_ts, '%Y-%m-%dT%H:%M:%SZ') FROM core.jobs").fetchall()}
    rejects = con.sql("SELECT count(*) FROM raw.rejects").fetchall()[0][0]
    con.close()
    assert rejects == 0
    assert set(jobs) == set(truth)
    # A job that never started has no AllocTRES, so its GPU count is not in the dump: compare
    # GPUs only for started jobs.
    mismatched = [
        job_id for job_id, (state, n_gpus, elapsed_s, restarts, start) in jobs.items()
        if (state, n_gpus if start else None, elapsed_s, restarts, start or "")
        != (truth[job_id]["state_final"], int(truth[job_id]["n_gpus"]) if truth[job_id]["start_ts"] else None,
            int(truth[job_id]["elapsed_s"]), int(truth[job_id]["restarts"]), truth[job_id]["start_ts"])
    ]
    assert mismatched == []


def test_marts_match_truth(simulated: Path, warehouse: Path) -> None:
    summary = json.loads((simulated / "truth" / "summary.json").read_text())
    con = connect(warehouse, read_only=True)
    by_state = dict(con.sql(
        "SELECT state, gpu_hours FROM marts.gpu_time_by_state WHERE period_type = 'all'").fetchall())
    util = dict(con.sql("SELECT day::VARCHAR, allocated_gpu_hours FROM marts.utilization_daily").fetchall())
    findings = con.sql("SELECT count(*) FROM marts.findings").fetchall()[0][0]
    con.close()
    # GPU-hours by the state each run ended in: the jobs' final runs (from truth/jobs.csv) and the
    # earlier runs of requeued jobs (the simulator's per-run tally; Slurm requeues only NODE_FAIL,
    # PREEMPTED and REQUEUED runs, so the other states are the final runs alone).
    truth_jobs = _truth_jobs(simulated)
    final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}
    expected: dict[str, float] = {}
    for row in truth_jobs:
        if row["state_final"] in final and int(row["n_gpus"]) > 0:
            expected[row["state_final"]] = expected.get(row["state_final"], 0.0) + (
                int(row["n_gpus"]) * int(row["elapsed_s"]) / 3600)
    runs = summary["gpu_hours_by_run_state"]
    for state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"):
        assert runs.get(state, 0.0) == pytest.approx(expected.get(state, 0.0), abs=1e-3), state
    expected.update({s: h for s, h in runs.items() if s in {"NODE_FAIL", "PREEMPTED", "REQUEUED"}})
    assert by_state.keys() == expected.keys()
    for state, hours in expected.items():
        assert by_state[state] == pytest.approx(hours, rel=1e-6)
    truth_util = summary["allocated_gpu_hours_by_utc_day"]
    for day, hours in truth_util.items():
        assert util[day] == pytest.approx(hours, rel=1e-6, abs=1e-6), day
    assert findings == 4


def test_report_written(simulated: Path, warehouse: Path) -> None:
    reports = sorted((simulated.parent / "reports").glob("nightly-*.html"))
    assert reports
    html = reports[-1].read_text(encoding="utf-8")
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")


def test_snapshot_holds_what_the_warehouse_holds(warehouse: Path) -> None:
    """The run ends by publishing the copy ad hoc readers open: every core and mart table, equal."""
    assert _core_and_marts(warehouse.with_name("w.snapshot.duckdb")) == _core_and_marts(warehouse)


def test_rerun_changes_nothing(simulated: Path, warehouse: Path) -> None:
    before = _core_and_marts(warehouse)
    proc = _gpusre("run", "--landing", str(simulated), "--warehouse", str(warehouse), "--reports", str(simulated.parent / "reports"))
    assert proc.returncode == 0, proc.stderr
    assert "0 new/changed file(s)" in proc.stderr
    assert _core_and_marts(warehouse) == before


def test_missing_landing_is_a_one_line_error(tmp_path: Path) -> None:
    proc = _gpusre("run", "--landing", str(tmp_path / "nope"), "--warehouse", str(tmp_path / "w.duckdb"))
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert "nope" in proc.stderr and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "cluster.yaml").write_text("nodes: 4\n")
    proc = _gpusre("run", "--landing", str(tmp_path / "cluster.yaml"), "--warehouse", str(tmp_path / "w.duckdb"))
    assert proc.returncode == 1 and "cluster.yaml: is a file, not a landing directory" in proc.stderr


def test_bad_cluster_yaml_names_the_key(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "a.psv").write_text("JobID|State\n1|COMPLETED\n")
    (landing / "cluster.yaml").write_text("timezone: Nowhere/Land\n")
    proc = _gpusre("run", "--landing", str(landing), "--warehouse", str(tmp_path / "w.duckdb"))
    assert proc.returncode == 1
    assert "cluster.yaml: timezone: unknown IANA time zone" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["raw.duckdb", "Core.duckdb", "marts.2026.duckdb", "lake"])
def test_a_warehouse_named_like_a_schema_is_refused_before_anything_is_written(simulated: Path, tmp_path: Path,
                                                                               name: str) -> None:
    # DuckDB names the database after the file up to its first dot: raw.duckdb would be the catalog
    # raw, and every raw.* query ambiguous (before the check, the DDL failed with a Binder Error).
    proc = _gpusre("run", "--landing", str(simulated), "--warehouse", str(tmp_path / name))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    schema = name.split(".")[0].lower()
    assert f"'{schema}' is also one of its schemas ({schema}.*)" in proc.stderr
    assert proc.stderr.strip() == f"gpusre: error: {catalog_clash_error(tmp_path / name)}"
    assert list(tmp_path.iterdir()) == []


def test_connect_refuses_a_catalog_that_clashes_with_a_schema(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'raw' is also one of its schemas"):
        connect(tmp_path / "raw.snapshot.duckdb")
    assert list(tmp_path.iterdir()) == []
    connect(tmp_path / "raw_2026.duckdb").close()  # only the name up to the first dot counts


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    proc = _gpusre("simulate", "--out", str(tmp_path), "--nodes", "zero")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_locked_warehouse_is_a_one_line_error(simulated: Path, tmp_path: Path) -> None:
    wh = tmp_path / "locked.duckdb"
    holder = subprocess.Popen([sys.executable, "-c",
                               "import duckdb,sys,time; c=duckdb.connect(sys.argv[1]); print('ok', flush=True); time.sleep(60)",
                               str(wh)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        proc = _gpusre("run", "--landing", str(simulated), "--warehouse", str(wh))
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    assert "another" in proc.stderr and "Traceback" not in proc.stderr


def test_report_on_a_file_that_is_no_warehouse_says_so(tmp_path: Path) -> None:
    """Not "held open by another process?": nothing holds it, it is no DuckDB file."""
    bogus = tmp_path / "notes.duckdb"
    bogus.write_text("this is not a database\n" * 100)
    proc = _gpusre("report", "nightly", "--warehouse", str(bogus), "--out", str(tmp_path / "r"))
    err = proc.stderr.strip()
    assert proc.returncode != 0 and err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("gpusre: error: cannot open the warehouse: ") and "another process" not in err, err


def test_unreadable_incidents_csv_is_a_refused_file(tmp_path: Path) -> None:
    """incidents.csv is a landing file like the others: unreadable, it is refused with one line and
    exit 1 (everything else still loads), never a traceback; its row is in the ledger."""
    landing = tmp_path / "landing"
    (landing / "sacct").mkdir(parents=True)
    (landing / "sacct" / "a.psv").write_text(
        "JobID|JobName|User|Account|Partition|State|ExitCode|Start|End|Elapsed|NNodes|AllocTRES|NodeList\n"
        "1001|train|alice|research|gpu|COMPLETED|0:0|2026-11-02T01:00:00|2026-11-02T05:00:00|04:00:00|1|"
        "cpu=8,gres/gpu=8,node=1|gpu001\n")
    (landing / "incidents.csv").write_bytes("id,start,end,component,root_cause,nodes\n".encode("utf-16"))
    wh = tmp_path / "wh" / "w.duckdb"
    proc = _gpusre("run", "--landing", str(landing), "--warehouse", str(wh), "--reports", str(tmp_path / "reports"))
    assert proc.returncode == 1, proc.stderr
    assert "gpusre: error: incidents.csv: UTF-16 encoded: convert to UTF-8" in proc.stderr.splitlines()
    assert "      incidents: incidents.csv refused; 0 operator incident(s) loaded, 0 rejected" in proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr and "1 file(s) refused this run" in proc.stdout
    con = connect(wh, read_only=True)
    try:
        assert con.execute("SELECT status, rows_read FROM raw.ingested_files "
                           "WHERE source_file = 'incidents.csv'").fetchall() == [("refused", 0)]
        assert con.execute("SELECT count(*) FROM core.jobs").fetchall() == [(1,)]
    finally:
        con.close()
