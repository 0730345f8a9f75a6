"""One bad night written by hand with all four sources consistent (``tests/fixtures/hand_computed/
bad_night_berlin``, hand answers in its README.md, written before any run by an outside evaluator).

Cluster h100-berlin, 16 nodes x 8 GPUs, Europe/Berlin. At 01:10:12Z GPU 3 of gpu005 logs Xid 48 then
Xid 79; alice's 64-GPU job 2001 dies NODE_FAIL at 01:11Z and Slurm requeues it (it later completes);
NHC drains gpu005 at 01:14Z; DCGM alerts fire; the node is back at 08:30Z. At 13:20Z leaf02 flaps and
kills erin's 16-GPU job 2004 (FAILED). bob's job 2002 dies of Xid 13/43 (his own code).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from gpusre.pipelines.runner import run_pipeline

LANDING = Path(__file__).parent / "fixtures" / "hand_computed" / "bad_night_berlin"


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    root = tmp_path_factory.mktemp("bad_night")
    shutil.copytree(LANDING, root / "landing")
    run_pipeline(root / "landing", root / "wh" / "w.duckdb", root / "reports")
    c = duckdb.connect(str(root / "wh" / "w.snapshot.duckdb"), read_only=True)
    yield c
    c.close()


def test_the_gpu_fault_is_one_gpu_memory_incident_blamed_for_the_requeued_run(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.sql("SELECT component, nodes, affected_jobs, round(lost_gpu_hours, 2) FROM marts.hw_incidents "
                   "WHERE list_contains(nodes, 'gpu005')").fetchall()
    # lost = 64 GPUs x (half the 1 h checkpoint interval + 5 min restart) = 32 + 5.33
    assert rows == [("gpu_memory", ["gpu005"], 1, 37.33)]
    blame = dict(con.sql("SELECT job_id, attribution FROM marts.job_failure_attribution").fetchall())
    assert blame.get("2002") == "user" and blame.get("2004") == "infrastructure"
    assert con.sql("SELECT job_id, instance_no, attribution FROM marts.instance_failure_attribution").fetchall() == [
        ("2001", 1, "infrastructure")]


def test_an_alert_incident_counts_the_run_slurm_requeued(con: duckdb.DuckDBPyConnection) -> None:
    """The DCGM alerts on gpu005 are about the fault that killed job 2001's first run: 1 job killed,
    37.33 GPU-h lost — as the hardware incident says. (Counting final job states only, it read 0 and
    0.0, because job 2001 ended COMPLETED after its requeue.)"""
    rows = con.sql("SELECT n_alerts, n_jobs_killed, round(lost_gpu_hours, 2) FROM marts.alert_incidents "
                   "WHERE list_contains(nodes, 'gpu005')").fetchall()
    assert rows == [(3, 1, 37.33)]
    # the leaf02 flap killed job 2004 (never resubmitted): 16 GPUs x 0.5 h, no restart followed
    leaf = con.sql("SELECT n_jobs_killed, round(lost_gpu_hours, 2) FROM marts.alert_incidents "
                   "WHERE scope = 'leaf_switch'").fetchall()
    assert leaf == [(1, 8.0)]
    # 4 alert incidents: gpu005's, gpu014's /tmp disk (same minutes, other node), leaf02's, day 1's CPU load
    assert con.sql("SELECT count(*) FROM marts.alert_incidents").fetchall() == [(4,)]
    assert con.sql("SELECT sum(jobs_killed) FROM marts.alert_incident_scopes WHERE day = DATE '2026-11-18'"
                   ).fetchall() == [(2,)]


def test_the_flapping_leaf_switch_is_one_incident(con: duckdb.DuckDBPyConnection) -> None:
    """leaf02's ports on gpu009-012 go down at 13:20:05Z (ACTIVE ~2.5 min later) and again at 13:50:10Z
    (ACTIVE 45 s later): one flapping switch, 13:20:05 to the last line of the second flap — the alert
    side says the same (one incident, 1 flap). It was two incidents while every link's ACTIVE split them."""
    rows = con.sql("SELECT component, leaf_switch, strftime(start_ts AT TIME ZONE 'UTC', '%H:%M:%S'), "
                   "strftime(end_ts AT TIME ZONE 'UTC', '%H:%M') FROM marts.hw_incidents "
                   "WHERE list_has_any(nodes, ['gpu009', 'gpu010', 'gpu011', 'gpu012'])").fetchall()
    assert rows == [("network_switch", "leaf02", "13:20:05", "13:50")]
    assert con.sql("SELECT count(*) FROM marts.hw_incidents").fetchall() == [(2,)]


def test_a_switch_that_recovered_by_itself_is_not_back_in_service(con: duckdb.DuckDBPyConnection,
                                                                  tmp_path: Path) -> None:
    """No node of the leaf02 flap was drained: the retrospective says its nodes recovered (links back
    ACTIVE), not that they were 'back in service' — they never left it."""
    from gpusre.reports.incident import render_incident_report

    (inc,) = con.sql("SELECT incident_id FROM marts.hw_incidents WHERE leaf_switch = 'leaf02'").fetchall()[0]
    text = " ".join(render_incident_report(con, tmp_path, inc).markdown.read_text().split())
    assert "its nodes recovered 31 min after the first evidence, by recovery log lines" in text
    assert "back in service 31 min" not in text


def test_lost_gpu_hours_are_what_goodput_charges(con: duckdb.DuckDBPyConnection) -> None:
    """Hand answers (fixture README): job 2004 (16 GPUs, leaf02 flap, never resubmitted) lost 16 × 0.5 h
    = 8.0; job 2001's first run (64 GPUs, requeued and restarted) 64 × (0.5 h + 5 min) = 37.33."""
    assert con.sql("SELECT job_id, round(lost_gpu_hours, 2) FROM marts.job_failure_attribution "
                   "WHERE attribution = 'infrastructure'").fetchall() == [("2004", 8.0)]
    assert con.sql("SELECT job_id, instance_no, round(lost_gpu_hours, 2) FROM marts.instance_failure_attribution "
                   "WHERE attribution = 'infrastructure'").fetchall() == [("2001", 1, 37.33)]
    assert con.sql("SELECT component, round(lost_gpu_hours, 2) FROM marts.hw_incidents ORDER BY component"
                   ).fetchall() == [("gpu_memory", 37.33), ("network_switch", 8.0)]
    # goodput on 11-18: lost work 64 × 0.5 + 16 × 0.5 = 40; restart 64 × 5 min = 5.33 (2001's requeue only)
    lost, restart = con.sql("SELECT lost_failure_gpu_hours, lost_restart_gpu_hours FROM marts.goodput_daily "
                            "WHERE day = DATE '2026-11-18'").fetchall()[0]
    assert (lost, restart) == (pytest.approx(40.0), pytest.approx(64 * 5 / 60))
    total = con.sql("SELECT sum(lost_gpu_hours) FROM marts.hw_incidents").fetchall()[0][0]
    assert total == pytest.approx(lost + restart)  # 45.33, not 46.67


def test_the_job_slo_counts_the_killed_run_slurm_requeued(con: duckdb.DuckDBPyConnection) -> None:
    """2026-11-18: 7 GPU jobs ended plus job 2001's first run, which the GPU fault killed before Slurm
    requeued it; 2004 (leaf02) and 2001#1 were killed by the infrastructure: 6 good runs of 8 (the SLI
    read 6 of 7, a success for the 64-GPU run the fault killed)."""
    assert con.sql("SELECT good, total FROM marts.slo_daily WHERE sli = 'job_infra_success' "
                   "AND day = DATE '2026-11-18'").fetchall() == [(6.0, 8.0)]
