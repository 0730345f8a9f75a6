"""End to end on real files only: `gpusre run` over a landing directory assembled from the real
samples (sacct --parsable2 from an issue paste, slurmrestd JSON, gpud dmesg / Fabric Manager logs in
files not named after a node, quoted kernel lines, Alertmanager / Grafana / msteams webhook payloads,
sacctmgr events and sinfo snapshots). Every file is accounted for, every good record loads, and a
log that names no host still yields its hardware incident (this once failed the failure marts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpusre.models.warehouse import connect

FIX = Path(__file__).parent / "fixtures"
FILES = {
    "sacct": [*sorted((FIX / "sacct" / "slurmrestd_json_slurmweb").glob("*.json")),
              FIX / "sacct" / "issue_pastes" / "martius-lab_cluster_utils_issue87_parsable2.psv"],
    # A collector's directory: file names are not node names, and dmesg lines carry no host.
    "syslog/collected": [*sorted((FIX / "syslog").glob("gpud_*.log")), FIX / "syslog" / "other_kernel_and_slurm_lines.txt"],
    "alerts": [*sorted((FIX / "alerts").glob("*.json")), FIX / "alerts" / "alertmonitor_example_syslog.txt"],
    "slurm_events": sorted((FIX / "slurm_events").glob("*.txt")),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str], int]:
    root = tmp_path_factory.mktemp("real")
    landing = root / "landing"
    n_files = 0
    for folder, paths in FILES.items():
        (landing / folder).mkdir(parents=True)
        for path in paths:
            # .txt is not a node-log suffix; the quoted kernel lines land as a .log file
            name = path.with_suffix(".log").name if folder.startswith("syslog") else path.name
            shutil.copy(path, landing / folder / name)
            n_files += 1
    wh = root / "w.duckdb"
    proc = subprocess.run([sys.executable, "-m", "gpusre.pipelines.cli", "run", "--landing", str(landing),
                           "--warehouse", str(wh), "--reports", str(root / "reports")],
                          capture_output=True, text=True, timeout=600)
    return wh, proc, n_files


def test_run_succeeds_and_publishes_reports(run: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    wh, proc, _ = run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert "report:" in proc.stdout and "SLO report:" in proc.stdout
    assert wh.with_name("w.snapshot.duckdb").is_file()


def test_every_file_is_accounted_for_and_counts_reconcile(run: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    wh, _, n_files = run
    con = connect(wh, read_only=True)
    files = con.sql("SELECT source_file, status, rows_read, rows_loaded, rows_rejected FROM raw.ingested_files").fetchall()
    rejects = dict(con.sql("SELECT source_file, count(*) FROM raw.rejects GROUP BY ALL").fetchall())
    loaded = dict(con.sql(
        "SELECT source_file, count(*) FROM (SELECT source_file FROM raw.sacct_records UNION ALL "
        "SELECT source_file FROM raw.syslog_lines UNION ALL SELECT source_file FROM raw.alert_notifications "
        "UNION ALL SELECT source_file FROM raw.slurm_events) GROUP BY ALL").fetchall())
    con.close()
    assert len(files) == n_files
    for source_file, status, read, n_loaded, n_rejected in files:
        assert status == "loaded", source_file
        assert read == n_loaded + n_rejected, source_file
        assert rejects.get(source_file, 0) == n_rejected, source_file
    # Every file but sinfo snapshots listing no node contributed rows.
    assert sum(loaded.values()) == sum(f[3] for f in files)


def test_a_log_without_host_names_still_gives_its_incident(run: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    wh, _, _ = run
    con = connect(wh, read_only=True)
    gsp = con.sql("SELECT nodes, n_events, root_cause FROM marts.hw_incidents WHERE component = 'gsp_firmware'").fetchall()
    freshness = {r[0] for r in con.sql("SELECT source_kind FROM marts.data_freshness").fetchall()}
    jobs = con.sql("SELECT count(*) FROM core.jobs").fetchall()[0][0]
    con.close()
    # gpud's dmesg with Xid 119 (GSP RPC timeout) has no host on its lines and its file is not named
    # after a node: one GSP incident with no node, rather than a failed mart.
    assert gsp and gsp[0][0] == [] and gsp[0][1] >= 1 and gsp[0][2].startswith("xid 119")
    assert freshness == {"sacct", "syslog", "alerts", "slurm_events"}
    assert jobs > 0


def test_no_warnings_on_stderr(run: tuple[Path, subprocess.CompletedProcess[str], int]) -> None:
    """Library warnings are noise in a cron mail (a chart with nothing to label once warned here)."""
    _, proc, _ = run
    assert "Warning:" not in proc.stderr, [line for line in proc.stderr.splitlines() if "Warning:" in line]
