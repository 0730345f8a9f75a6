"""One quantity, one value across the marts and the retrospective (outside probe AT, findings A–C), on a small
hand-made landing run through the whole pipeline — ISO syslog timestamps, dgx hostnames, a DCGM ``DCGMXidError``
alert keyed by ``Hostname`` (the probe had RFC 3164 lines, gpu nodes and ``GPUXidCritical``):

* dgx01: Xid 79 (GPU 0000:3b:00.0 fallen off the bus) at 08:00:00, the line delivered twice (a relay's copy
  in the same second); NHC check_nv_healthmon fails at 08:05:02 and 08:10:02, each run also reported by slurmd
  (``error: health_check failed: rc:1 output:…``) a second later — the same run; Slurm drains dgx01
  08:11:00 → 10:00:00. Alert DCGMXidError on dgx01 08:00:40 → 09:50:40.
* Job 801 (dgx[01-02], 16 GPUs, user kim, unique name) is REQUEUED at 08:01:30 after a 06:00:00 start and its
  second run (dgx[03-04]) COMPLETED 08:20 → 09:00. Checkpoint Δ = 3600 s, u0 = 300 s: the run lost
  16 × Δ/2 = 8.0 GPU-h (7290 s ≥ Δ) + the restart 16 × 300 s = 1.333 GPU-h: 9.333 GPU-h.

A. The hardware incident counts the requeued run (affected_jobs 1, 9.333 GPU-h); the alert incident about it
   counted FAILED/NODE_FAIL runs only and said "killed 0 jobs and lost 0.0 GPU-hours". It now counts the same
   run: n_jobs_killed 1 (a job with a killed run, as affected_jobs), n_runs_requeued 1, 9.333 GPU-h, and both
   retrospectives say "0 jobs + 1 requeued run".
B. The failure lines span 08:00:00 → 08:10:02 (10 min), the node was down until 10:00:00 (2.0 h): the summary
   states the outage, then the failure lines' span as such — never "its log evidence spans 10 min" as the
   incident's length.
C. The timeline's window line counts each event once (3: the Xid line, two NHC runs — marts.hw_incidents.n_events),
   not the 6 rows of core.node_events (a copy of the Xid line, slurmd's report of each run).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest
from alertmanager_payloads import webhook_payload
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line

from gpusre.reports.incident import build_incident_context
from gpusre.reports.kit.zone import LANDING_ENV
from gpusre.reports.nightly import build_nightly_context

DAY = "2026-12-03"
NODES = [f"dgx{i:02d}" for i in range(1, 5)]
CLUSTER = ('cluster: retro\ntimezone: UTC\nnodes: "dgx[01-04]"\ngpus_per_node: 8\n'
           "reliability:\n  checkpoint: {interval_s: 3600, restart_overhead_s: 300, write_s: 0}\n")
SACCT = sacct_dump([
    sacct_line("801", DAY, "06:00:00", "08:01:30", "dgx[01-02]", 2, state="REQUEUED", exit_code="0:0", user="kim"),
    sacct_line("801", DAY, "08:20:00", "09:00:00", "dgx[03-04]", 2, state="COMPLETED", exit_code="0:0", user="kim"),
])
EVENTS = ("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|Duration|Event|ClusterNodes\n"
          "retro||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||30-00:00:00|Cluster|dgx[01-04]\n"
          f"retro|dgx01|{DAY}T08:11:00|{DAY}T10:00:00|DRAIN|NHC: check_nv_healthmon: GPU 0000:3b:00.0 is lost|"
          "root(0)|01:49:00|Node|\n")
XID = "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
HEALTHMON = ("Health check failed:  check_nv_healthmon:  GPU 0000:3b:00.0 is lost "
             "(nvidia-smi: Unable to determine the device handle)")
SLURMD = f"slurmd[2210]: error: health_check failed: rc:1 output:ERROR:  nhc:  {HEALTHMON}"
LINES = {"dgx01": [("08:00:00", XID), ("08:00:00", XID),
                   ("08:05:02", f"nhc[5101]: {HEALTHMON}"), ("08:05:03", SLURMD),
                   ("08:10:02", f"nhc[5202]: {HEALTHMON}"), ("08:10:03", SLURMD)]}
ALERT = {"alertname": "DCGMXidError", "Hostname": "dgx01", "instance": "dgx01:9400", "job": "dcgm-exporter",
         "gpu": "0", "xid": "79", "severity": "critical"}


def _log(node: str) -> str:
    benign = [("00:00:05", "systemd[1]: Started Session 1 of user root."),
              ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]
    return "".join(f"{DAY}T{t}.000000+00:00 {node} {m}\n" for t, m in sorted(benign + LINES.get(node, [])))


def _alerts() -> str:
    start, end = datetime(2026, 12, 3, 8, 0, 40, tzinfo=timezone.utc), datetime(2026, 12, 3, 9, 50, 40, tzinfo=timezone.utc)
    return "".join(json.dumps(p) + "\n" for p in (webhook_payload(ALERT, start, None, "00000000000000a1"),
                                                   webhook_payload(ALERT, start, end, "00000000000000a1")))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, f"sacct/sacct_{DAY}.psv": SACCT, f"slurm_events/events_{DAY}.txt": EVENTS,
             f"alerts/{DAY}.jsonl": _alerts()}
    files.update({f"syslog/{DAY}/{n}.log": _log(n) for n in NODES})
    return run_hand_landing(tmp_path_factory.mktemp("one_value"), files)


@pytest.fixture(autouse=True)
def _no_landing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANDING_ENV, raising=False)


def _hw(warehouse: Path) -> str:
    return query_rows(warehouse, "SELECT incident_id FROM marts.hw_incidents WHERE list_contains(nodes, 'dgx01')")[0][0]


def _ainc(warehouse: Path) -> str:
    return query_rows(warehouse, "SELECT incident_id FROM marts.alert_incidents WHERE list_contains(nodes, 'dgx01')")[0][0]


def _context(warehouse: Path, incident_id: str) -> dict:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.sql("SET TimeZone='UTC'")
        return build_incident_context(con, incident_id, cluster_timezone="UTC")
    finally:
        con.close()


LOST = 16 * 0.5 + 16 * 300 / 3600  # 9.333 GPU-h: the requeued run's work since its checkpoint + the restart


# -- A. the alert incident counts the requeued run the hardware incident counts ------------------------------


def test_the_alert_incident_counts_what_its_hardware_incident_counts(warehouse: Path) -> None:
    hw = _hw(warehouse)
    assert query_rows(warehouse, f"SELECT affected_jobs, lost_gpu_hours FROM marts.hw_incidents "
                                 f"WHERE incident_id = '{hw}'") == [(1, pytest.approx(LOST))]
    assert query_rows(warehouse, "SELECT hw_incident_id, n_jobs_killed, n_runs_requeued, lost_gpu_hours "
                                 "FROM marts.alert_incidents") == [(hw, 1, 1, pytest.approx(LOST))]
    # the scopes mart sums the same column
    assert query_rows(warehouse, "SELECT jobs_killed, lost_gpu_hours FROM marts.alert_incident_scopes") == [
        (1, pytest.approx(LOST))]


def test_both_retrospectives_say_0_jobs_and_1_requeued_run(warehouse: Path) -> None:
    for incident_id in (_ainc(warehouse), _hw(warehouse)):
        ctx = _context(warehouse, incident_id)
        summary, blast = ctx["by_key"]["summary"], ctx["by_key"]["blast-radius"]
        assert "it killed 0 jobs + 1 requeued run and lost 9.3 GPU-hours" in summary.lead, incident_id
        card = next(c for c in summary.cards if c["label"] == "Jobs killed")
        assert (card["value"], card["sub"]) == ("0", "+ 1 requeued run · 1 user · 16 GPUs")
        assert "0 jobs killed + 1 requeued run (16 GPUs of 1 user) and 9.3 lost GPU-hours" in blast.lead
        # counted, so no "the marts do not count it as killed" note, and the list agrees with the mart
        assert not any("do not count" in n or "rerun the pipeline" in n for n in blast.notes), blast.notes
    # the alert retrospective's note on its hardware incident splits the same runs the same way
    notes = _context(warehouse, _ainc(warehouse))["by_key"]["blast-radius"].notes
    assert (f"Linked hardware incident {_hw(warehouse)} killed 0 jobs + 1 requeued run and lost 9.3 GPU-hours by its "
            "own attribution.") in notes


def test_the_nightly_names_the_requeued_run_of_the_alert_incident(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.sql("SET TimeZone='UTC'")
        sec = build_nightly_context(con, report_date=datetime(2026, 12, 3).date())["by_key"]["alert_incidents"]
    finally:
        con.close()
    assert "killed 1 job (1 requeued run among its killed runs; 9.3 GPU-h lost)" in sec.lead
    table = sec.items[0]
    cell = table.rows[0][7]
    assert (cell.text, cell.sub) == ("1", "1 requeued run")


# -- B. the outage and the failure lines' span, each named -----------------------------------------------------


def test_the_summary_states_the_outage_then_the_failure_lines_span(warehouse: Path) -> None:
    ctx = _context(warehouse, _hw(warehouse))
    lead = ctx["by_key"]["summary"].lead
    hw = _hw(warehouse)
    assert lead.startswith(
        f"Hardware incident {hw}, PCIe bus failure on dgx01 (xid 79), started 2026-12-03 08:00:00 UTC; it was down "
        "until every node was back in service 2.0 h after the first evidence, at 2026-12-03 10:00:00 UTC; its "
        "failure lines span 10 min (3 events), the last at 2026-12-03 08:10:02 UTC; it killed 0 jobs + 1 requeued run")
    assert "log evidence spans" not in lead
    started = next(c for c in ctx["by_key"]["summary"].cards if c["label"] == "Started")
    assert started["sub"] == "UTC · failure lines span 10 min"


# -- C. each event once -------------------------------------------------------------------------------------


def test_the_window_line_counts_each_event_once(warehouse: Path) -> None:
    hw = _hw(warehouse)
    # 6 rows logged on dgx01 in the window (a copy of the Xid line, slurmd's report of each NHC run) ...
    assert query_rows(warehouse, "SELECT count(*) FROM core.node_events WHERE node = 'dgx01' "
                                 f"AND ts BETWEEN '{DAY} 07:00:00+00' AND '{DAY} 09:00:00+00'") == [(6,)]
    # ... are 3 events, as the incident counts them
    assert query_rows(warehouse, f"SELECT n_events FROM marts.hw_incidents WHERE incident_id = '{hw}'") == [(3,)]
    for incident_id in (hw, _ainc(warehouse)):
        lead = _context(warehouse, incident_id)["by_key"]["timeline"].lead
        assert " 3 node events" in lead and "6 node events" not in lead, lead


# -- A, the rule itself: runs attribution gives to a hardware incident count whatever their state ------------


def test_blast_radius_counts_the_runs_its_hardware_incident_counts() -> None:
    """Four runs on dgx01 around a GPU fault (inc-x) and its alert at 08:00:40: 801#1 ended REQUEUED and 804 ended
    TIMEOUT (NCCL hung on the lost GPU), both given to inc-x by attribution — inc-x counts them, so the alert
    incident does; 803#2 is an earlier run Slurm requeued after a NODE_FAIL (``sacct -D``), unattributed, in the
    window; 802#1 ended REQUEUED, attributed to the infrastructure but to no incident: no hardware incident
    counts it, neither does the alert incident (REQUEUED is no killed state)."""
    import polars as pl

    from gpusre.models.alerts.clustering import cluster_alerts

    t = datetime(2026, 12, 3, 8, tzinfo=timezone.utc)
    ts = pl.Datetime("us", "UTC")
    alerts = pl.DataFrame([{"alert_id": 1, "fingerprint": "a1", "alertname": "DCGMXidError", "status": "resolved",
                            "severity": "critical", "node": "dgx01", "target": None, "target_label": None,
                            "starts_at": t.replace(second=40), "ends_at": t.replace(hour=9),
                            "labels": json.dumps(ALERT), "template_id": 1, "n_notifications": 2}],
                          schema_overrides={"starts_at": ts, "ends_at": ts, "target": pl.String,
                                            "target_label": pl.String})
    hw = pl.DataFrame([{"incident_id": "inc-x", "component": "pcie_bus", "start_ts": t, "end_ts": t,
                        "nodes": ["dgx01"], "scope": "node"}], schema_overrides={"start_ts": ts, "end_ts": ts})
    end = t.replace(minute=1, second=30)
    jobs = pl.DataFrame({"job_id": ["801#1", "804", "803#2", "802#1"],
                         "state": ["REQUEUED", "TIMEOUT", "NODE_FAIL", "REQUEUED"],
                         "end_ts": [end, t.replace(minute=40), end, end],
                         "nodes": [["dgx01", "dgx02"], ["dgx01"], ["dgx01"], ["dgx01"]]},
                        schema_overrides={"end_ts": ts})
    attribution = pl.DataFrame({"job_id": ["801#1", "804", "802#1"],
                                "attribution": ["infrastructure", "infrastructure", "infrastructure"],
                                "lost_gpu_hours": [9.333, 4.0, 2.0], "incident_id": ["inc-x", "inc-x", None]})
    incidents, _ = cluster_alerts(alerts, hw_incidents=hw, jobs=jobs, attribution=attribution)
    row = incidents.row(0, named=True)
    # jobs 801, 804, 803 (a job with a killed run each); of the runs, 801#1 and 803#2 were requeued
    assert (row["hw_incident_id"], row["n_jobs_killed"], row["n_runs_requeued"]) == ("inc-x", 3, 2)
    assert row["lost_gpu_hours"] == pytest.approx(9.333 + 4.0)
