"""A landing without Slurm accounting (and without node states, or with alerts only): what depends on the
missing source is unknown — NULL in the marts, "unknown: no Slurm accounting" / "no node logs" / "no node-state
history" in the reports — never 0; everything else is the number the full run gives.

One small simulated cluster (16 nodes, 5 days, raised fault rates: hardware incidents that kill jobs, health
checks that fire) is run by the real pipeline four times: in full, without ``sacct/``, with node logs only,
and with alerts only.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml

from gpusre.pipelines.runner import run_pipeline
from gpusre.reports.incident import render_incident_report
from gpusre.simulate import SimulationConfig, simulate_cluster

CONFIG = SimulationConfig(nodes=16, days=5, seed=3, node_failures_per_1000_node_days=60,
                          fabric_faults_kill_jobs=True, syslog_layout="central", log_lines_per_node_day=20)

#: landing variant -> the source folders it keeps (cluster.yaml always)
VARIANTS = {
    "full": ("sacct", "syslog", "slurm_events", "alerts"),
    "nosacct": ("syslog", "slurm_events", "alerts"),
    "logs": ("syslog",),
    "alerts": ("alerts",),
}

#: marts.hw_incidents columns that need Slurm accounting
IMPACT = ("affected_jobs", "affected_gpus", "lost_gpu_hours", "nodes_recovered", "recovered_ts", "hours_to_recovery")

_CONTRACT = Path(__file__).resolve().parents[1] / "sql" / "contract" / "marts.yaml"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("no_accounting")
    simulate_cluster(root / "sim", CONFIG)
    out: dict[str, Path] = {}
    for name, keep in VARIANTS.items():
        landing = root / name / "landing"
        landing.mkdir(parents=True)
        shutil.copy(root / "sim" / "cluster.yaml", landing / "cluster.yaml")
        for source in keep:
            shutil.copytree(root / "sim" / source, landing / source)
        run_pipeline(landing, root / name / "w.duckdb", root / name / "reports")
        out[name] = root / name
    return out


def _con(run: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(run / "w.duckdb"), read_only=True)


def _rows(run: Path, sql: str) -> list[tuple]:
    con = _con(run)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _nightly(run: Path) -> str:
    (md,) = sorted((run / "reports").glob("nightly-*.md"))
    return md.read_text()


def _section(md: str, title: str) -> str:
    """One section of a report's Markdown (up to the next heading), as visible text."""
    start = md.index(f"## {title}")
    end = md.find("\n## ", start + 3)
    return _visible(md[start:end if end > 0 else None])


def _incident_md(run: Path, incident_id: str, out: Path) -> str:
    con = _con(run)
    try:
        return render_incident_report(con, out, incident_id).markdown.read_text()
    finally:
        con.close()


def _visible(md: str) -> str:
    return re.sub(r"\s+", " ", md.replace("**", ""))


def test_the_simulated_cluster_has_what_the_checks_need(runs: dict[str, Path]) -> None:
    """The full run has incidents that killed jobs and health checks with a precision."""
    assert _rows(runs["full"], "SELECT count(*) FROM marts.hw_incidents WHERE affected_jobs > 0")[0][0] >= 1
    assert _rows(runs["full"], "SELECT count(*) FROM marts.health_check_quality WHERE precision > 0")[0][0] >= 1


def test_hw_incident_job_impact_is_null_without_accounting(runs: dict[str, Path]) -> None:
    full, nosacct = runs["full"], runs["nosacct"]
    cols = ", ".join(IMPACT)
    impact = _rows(nosacct, f"SELECT {cols} FROM marts.hw_incidents")
    assert impact and all(v is None for row in impact for v in row), impact
    logs = _rows(runs["logs"], f"SELECT {cols} FROM marts.hw_incidents")
    assert logs and all(v is None for row in logs for v in row)
    # everything the node logs alone give is the full run's, incident for incident
    keep = ("incident_id, component, component_class, cause_class, severity, start_ts, end_ts, nodes, gpus, "
            "n_events, first_event_id, scope, root_cause, n_health_check_episodes")
    q = f"SELECT {keep} FROM marts.hw_incidents ORDER BY incident_id"
    assert _rows(nosacct, q) == _rows(full, q)
    m = "SELECT incident_id, event_id FROM marts.hw_incident_members ORDER BY ALL"
    assert _rows(nosacct, m) == _rows(full, m)
    # the full run's impact is a number
    assert all(r[0] is not None for r in _rows(full, "SELECT affected_jobs FROM marts.hw_incidents"))


def test_taxonomy_and_suspect_job_signals_are_null_without_accounting(runs: dict[str, Path]) -> None:
    q = ("SELECT period_type, period, component, cause_class, incidents, events FROM marts.failure_taxonomy "
         "ORDER BY ALL")
    assert _rows(runs["nosacct"], q) == _rows(runs["full"], q)
    assert _rows(runs["nosacct"], "SELECT count(*) FROM marts.failure_taxonomy "
                                  "WHERE affected_jobs IS NOT NULL OR lost_gpu_hours IS NOT NULL")[0][0] == 0
    assert _rows(runs["nosacct"], "SELECT count(*) FROM marts.suspect_nodes "
                                  "WHERE infra_failed_jobs IS NOT NULL OR node_fail_jobs IS NOT NULL")[0][0] == 0


def test_health_check_precision_is_null_without_accounting(runs: dict[str, Path]) -> None:
    q = "SELECT check_name, component, firings, events, nodes, first_ts, last_ts FROM marts.health_check_quality ORDER BY 1"
    assert _rows(runs["nosacct"], q) == _rows(runs["full"], q)
    rows = _rows(runs["nosacct"], "SELECT preceded_job_failure, precision FROM marts.health_check_quality")
    assert rows and all(v is None for r in rows for v in r)


def test_the_contract_says_null_without_accounting(runs: dict[str, Path]) -> None:
    contract = yaml.safe_load(_CONTRACT.read_text())
    for table, cols in (("marts.hw_incidents", IMPACT), ("marts.health_check_quality", ("precision",)),
                        ("marts.failure_taxonomy", ("affected_jobs", "lost_gpu_hours"))):
        for col in cols:
            assert "without Slurm accounting" in contract[table]["columns"][col], (table, col)
    # and the warehouse carries it as the column comment
    comment = _rows(runs["nosacct"], "SELECT comment FROM duckdb_columns() WHERE schema_name = 'marts' "
                                     "AND table_name = 'hw_incidents' AND column_name = 'lost_gpu_hours'")[0][0]
    assert "NULL without Slurm accounting" in comment


def test_incident_report_without_accounting_warns_and_says_unknown(runs: dict[str, Path], tmp_path: Path) -> None:
    (inc,) = _rows(runs["full"], "SELECT incident_id FROM marts.hw_incidents ORDER BY affected_jobs DESC, "
                                 "incident_id LIMIT 1")[0]
    raw = _incident_md(runs["nosacct"], inc, tmp_path)
    md = _visible(raw)
    assert "Data warning: No Slurm accounting (sacct) records were loaded" in md
    assert "Job impact unknown: no Slurm accounting" in md
    assert "its job impact is unknown: no Slurm accounting" in _section(raw, "Summary")
    assert "Jobs killed: unknown (no Slurm accounting)" in md
    assert "Lost GPU-hours: unknown (no Slurm accounting)" in md
    assert "jobs running: unknown, no Slurm accounting" in _section(raw, "Timeline")
    assert "is unknown: no Slurm accounting" in _section(raw, "Blast radius")
    for zero in ("killed 0 jobs", "Jobs killed: 0", "Lost GPU-hours: 0.0", "0 jobs running", "0 jobs killed"):
        assert zero not in md, zero
    # node states were loaded: the drain and repair read as before
    assert "no node-state history" not in md
    # the full run's report has no such warning
    full = _visible(_incident_md(runs["full"], inc, tmp_path / "full"))
    assert "Data warning: No Slurm accounting" not in full and "unknown: no Slurm accounting" not in full


def test_nightly_without_accounting_says_unknown(runs: dict[str, Path]) -> None:
    md = _nightly(runs["nosacct"])
    top = _section(md, "Top incidents by lost GPU-hours")
    assert "unknown: no Slurm accounting" in top
    assert "no job started after the incident has completed" not in top and "not yet (0/" not in top
    assert "| unknown | unknown | unknown |" in top
    checks = _section(md, "Health checks: precision and missed detections")
    assert "unknown: no Slurm accounting" in checks and "precision needs job outcomes" in checks
    assert "0.0 %" not in checks
    taxonomy = _section(md, "Failure taxonomy")
    assert "unknown: no Slurm accounting" in taxonomy and "0 infrastructure-failed jobs" not in taxonomy
    # the failed jobs of the night are unknown, not "No GPU job ended in FAILED ..."
    assert "No GPU job ended in" not in md
    assert re.search(r"The failed GPU jobs of \d{4}-\d\d-\d\d are unknown: no Slurm accounting", md)
    # the full run shows numbers
    full = _visible(_nightly(runs["full"]))
    assert "unknown: no Slurm accounting" not in full


def test_alert_incident_job_impact_is_null_without_accounting(runs: dict[str, Path]) -> None:
    """Alert incidents are the full run's, alert for alert; the jobs they killed are unknown (NULL), not 0."""
    q = "SELECT incident_id, n_alerts, nodes, root_cause_candidate, hw_incident_id FROM marts.alert_incidents ORDER BY 1"
    assert _rows(runs["nosacct"], q) == _rows(runs["full"], q)
    assert _rows(runs["full"], "SELECT count(*) FROM marts.alert_incidents WHERE n_jobs_killed > 0")[0][0] >= 1
    for run in ("nosacct", "alerts"):
        impact = _rows(runs[run], "SELECT n_jobs_killed, lost_gpu_hours FROM marts.alert_incidents")
        assert impact and all(v is None for row in impact for v in row), run
        scopes = _rows(runs[run], "SELECT jobs_killed, lost_gpu_hours FROM marts.alert_incident_scopes")
        assert scopes and all(v is None for row in scopes for v in row), run
    # the full run counts 0 for an incident that killed nothing: accounting says so
    assert _rows(runs["full"], "SELECT count(*) FROM marts.alert_incidents WHERE n_jobs_killed IS NULL")[0][0] == 0
    contract = yaml.safe_load(_CONTRACT.read_text())
    for table, col in (("marts.alert_incidents", "n_jobs_killed"), ("marts.alert_incidents", "lost_gpu_hours"),
                       ("marts.alert_incident_scopes", "jobs_killed")):
        assert "without Slurm accounting" in contract[table]["columns"][col], (table, col)


def test_nightly_alert_incidents_without_accounting_say_unknown(runs: dict[str, Path]) -> None:
    checked = 0
    for run in ("nosacct", "alerts"):
        md = _nightly(runs[run])
        title = re.search(r"## (Alert incidents of [^\n]*)", md).group(1)
        sec = _section(md, title)
        if "No alert incident started" in sec:
            continue
        checked += 1
        assert "jobs killed: unknown: no Slurm accounting" in sec, run
        assert "none killed a job" not in sec and "| unknown | unknown |" in sec, run
    assert checked, "no alert incident on either report's day: the check above ran on nothing"
    full = _section(_nightly(runs["full"]), re.search(r"## (Alert incidents of [^\n]*)", _nightly(runs["full"])).group(1))
    assert "unknown" not in full


def test_logs_only_repair_time_is_an_estimate(runs: dict[str, Path], tmp_path: Path) -> None:
    (inc,) = _rows(runs["logs"], "SELECT incident_id FROM marts.incident_repairs WHERE hours_to_repair IS NOT NULL "
                                 "ORDER BY incident_id LIMIT 1")[0]
    raw = _incident_md(runs["logs"], inc, tmp_path)
    md = _visible(raw)
    repair = _section(raw, "Time to detect and repair")
    assert "No node-state history: repair time estimated from" in repair
    assert "No drain of the incident's nodes followed" not in md
    assert "no node-state history: repair time estimated from" in _section(raw, "Summary")
    assert "every node was back in service" not in md
    assert "Data warning: No node-state history (Slurm sacctmgr events) was loaded" in md
    timeline = _section(raw, "Timeline")
    assert "drains: unknown, no node-state history" in timeline and "0 drain/downs" not in timeline
    assert "alerts: unknown, no alerts" in timeline and "0 incident alerts" not in timeline
    assert "no alert fired for it" not in md


def test_alerts_only_names_the_sources_never_loaded(runs: dict[str, Path], tmp_path: Path) -> None:
    (inc,) = _rows(runs["alerts"], "SELECT incident_id FROM marts.alert_incidents ORDER BY n_alerts DESC, "
                                   "incident_id LIMIT 1")[0]
    raw = _incident_md(runs["alerts"], inc, tmp_path)
    md = _visible(raw)
    timeline = _section(raw, "Timeline")
    for text in ("node events: unknown, no node logs", "jobs running: unknown, no Slurm accounting",
                 "drains: unknown, no node-state history"):
        assert text in timeline, text
    for zero in ("0 node events", "0 jobs running", "0 drain/downs", "killed 0 jobs", "Jobs killed: 0"):
        assert zero not in md, zero
    assert "Data warning: No Node logs records were loaded" in md
    assert "No node logs were loaded" in _section(raw, "Time to detect and repair")
    nightly = _nightly(runs["alerts"])
    assert "No node logs were loaded" in _section(nightly, "Top incidents by lost GPU-hours")
    assert "No node logs were loaded" in _section(nightly, "Health checks: precision and missed detections")
    # No node logs: no hardware incident could be seen, so alert coverage is unknown, not "every incident had an alert".
    hygiene = _section(nightly, "Alert hygiene: noisy rules and missing coverage")
    assert "alert coverage is unknown: no node logs were loaded" in hygiene
    assert "had an alert on" not in hygiene
