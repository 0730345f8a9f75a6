"""The retrospective's wording a retrospective meeting would misread (an outside evaluator's probe AT),
on a small hand-made landing run through the whole pipeline (ISO syslog timestamps and dgx hostnames,
where the probe had RFC 3164 lines and gpu nodes):

* dgx01: Xid 79 (GPU 0000:3b:00.0 fallen off the bus) at 08:00:00; NHC check_nv_healthmon fails at 08:05:02
  and 08:10:02; Slurm drains dgx01 08:11:00 → 10:00:00; the node reboots 09:40:12 (kernel banner) and NHC
  passes at 09:45:03. Job 701 (dgx[01-02], 16 GPUs, user kim) is REQUEUED at 08:01:30 and its second run
  (dgx[03-04]) COMPLETED 08:20 → 09:00: the incident killed no job but one requeued run —
  "0 jobs + 1 requeued run", never "killed 1 job" (README hw_incidents.affected_jobs).
* dgx05: NHC check_fs_mount "/scratch not mounted" at 13:00:04 and 13:05:04, a passing run at 13:10:04,
  nothing else; job 702 ran on dgx05 12:30 → 14:00 and COMPLETED; no drain. The node never left service:
  "its health check failed for 10 min … the node stayed in service", never "it was down 10 min"; the
  incident rests on health-check lines alone: check_fs_mount's 1 firing preceded no job failure
  (precision 0.00, marts.health_check_quality), and job 702 ran through it.
* dgx06: the NFS server fs1 stops answering 15:00:00 ("not responding, still trying") and answers again
  15:30:00 ("OK"): a storage outage timed by its recovery line, "the file system back on its clients",
  not "a link back ACTIVE".
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.reports.incident import build_incident_context
from gpusre.reports.kit.zone import LANDING_ENV

DAY = "2026-12-01"
NODES = [f"dgx{i:02d}" for i in range(1, 7)]
CLUSTER = 'cluster: retro\ntimezone: UTC\nnodes: "dgx[01-06]"\ngpus_per_node: 8\n'
HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
          "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
BANNER = ("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (x86_64-linux-gnu-gcc-13 (Ubuntu 13.2.0-23ubuntu4) "
          "13.2.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #45-Ubuntu SMP PREEMPT_DYNAMIC Fri Aug 30 12:02:04 UTC 2024")
HEALTHMON = ("Health check failed:  check_nv_healthmon:  GPU 0000:3b:00.0 is lost "
             "(nvidia-smi: Unable to determine the device handle)")
FS_MOUNT = "Health check failed:  check_fs_mount:  /scratch not mounted"
PASS = "Node Health Check completed successfully (3s)."


def _row(job_id: str, state: str, exitc: str, start: str, end: str, elapsed: str, nodes: str, n_nodes: int,
         user: str) -> str:
    gpus, cpus = 8 * n_nodes, 112 * n_nodes
    return (f"{job_id}|{job_id}|job-{job_id}|{user}|2001|ml|ml|gpu|normal|{state}|{exitc}|{DAY}T{start}|{DAY}T{start}|"
            f"{DAY}T{start}|{DAY}T{end}|{elapsed}|1-00:00:00|{n_nodes}|{cpus}|"
            f"billing={cpus},cpu={cpus},gres/gpu={gpus},mem=1000G,node={n_nodes}|{nodes}|")


SACCT = "\n".join([
    HEADER,
    # sacct -D: the requeued run, then the job's final (completed) run
    _row("701", "REQUEUED", "0:0", "06:00:00", "08:01:30", "02:01:30", "dgx[01-02]", 2, "kim"),
    _row("701", "COMPLETED", "0:0", "08:20:00", "09:00:00", "00:40:00", "dgx[03-04]", 2, "kim"),
    _row("702", "COMPLETED", "0:0", "12:30:00", "14:00:00", "01:30:00", "dgx05", 1, "lee"),
]) + "\n"

EVENTS = ("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|Duration|Event|ClusterNodes\n"
          "retro||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||30-00:00:00|Cluster|dgx[01-06]\n"
          "retro|dgx01|2026-12-01T08:11:00|2026-12-01T10:00:00|DRAIN|NHC: check_nv_healthmon: GPU 0000:3b:00.0 is lost|"
          "root(0)|01:49:00|Node|\n")

LINES = {
    "dgx01": [("08:00:00", "kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen "
                           "off the bus."),
              ("08:05:02", f"nhc[5101]: {HEALTHMON}"), ("08:10:02", f"nhc[5202]: {HEALTHMON}"),
              ("09:40:12", f"kernel: {BANNER}"), ("09:45:03", f"nhc[5303]: {PASS}")],
    "dgx05": [("13:00:04", f"nhc[6101]: {FS_MOUNT}"), ("13:05:04", f"nhc[6202]: {FS_MOUNT}"),
              ("13:10:04", f"nhc[6303]: {PASS}")],
    "dgx06": [("15:00:00", "kernel: nfs: server fs1 not responding, still trying"),
              ("15:30:00", "kernel: nfs: server fs1 OK")],
}


def _log(node: str) -> str:
    benign = [("00:00:05", "systemd[1]: Started Session 1 of user root."),
              ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]
    return "".join(f"{DAY}T{t}.000000+00:00 {node} {m}\n" for t, m in sorted(benign + LINES.get(node, [])))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": SACCT, "slurm_events/events_2026-12-01.txt": EVENTS}
    files.update({f"syslog/{DAY}/{n}.log": _log(n) for n in NODES})
    return run_hand_landing(tmp_path_factory.mktemp("retro_wording"), files)


@pytest.fixture(autouse=True)
def _no_landing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LANDING_ENV, raising=False)


def _incident_on(warehouse: Path, node: str) -> str:
    return query_rows(warehouse, f"SELECT incident_id FROM marts.hw_incidents WHERE list_contains(nodes, '{node}')")[0][0]


def _context(warehouse: Path, node: str) -> dict:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.sql("SET TimeZone='UTC'")
        return build_incident_context(con, _incident_on(warehouse, node), cluster_timezone="UTC")
    finally:
        con.close()


def _moments(ctx: dict) -> list[tuple[str, str]]:
    """(time, what) of every key-moment table of the timeline, in order."""
    return [(r[0].text, r[2].title or r[2].text) for tb in ctx["by_key"]["timeline"].items
            if hasattr(tb, "rows") for r in tb.rows]


def test_the_marts_count_the_requeued_run_and_no_killed_job(warehouse: Path) -> None:
    # the hand values the wording rests on: one run killed (affected_jobs counts it), no final run attributed
    inc = _incident_on(warehouse, "dgx01")
    assert query_rows(warehouse, f"SELECT affected_jobs, affected_gpus FROM marts.hw_incidents "
                                 f"WHERE incident_id = '{inc}'") == [(1, 16)]
    assert query_rows(warehouse, f"SELECT count(*) FROM marts.job_failure_attribution WHERE incident_id = '{inc}'") == [(0,)]
    assert query_rows(warehouse, f"SELECT job_id, instance_no FROM marts.instance_failure_attribution "
                                 f"WHERE incident_id = '{inc}'") == [("701", 1)]


def test_a_requeued_run_is_no_killed_job(warehouse: Path) -> None:
    ctx = _context(warehouse, "dgx01")
    summary, blast = ctx["by_key"]["summary"], ctx["by_key"]["blast-radius"]
    assert "it killed 0 jobs + 1 requeued run and lost" in summary.lead
    assert "killed 1 job" not in summary.lead
    card = next(c for c in summary.cards if c["label"] == "Jobs killed")
    assert (card["value"], card["sub"]) == ("0", "+ 1 requeued run · 1 user · 16 GPUs")
    assert "0 jobs killed + 1 requeued run (16 GPUs of 1 user)" in blast.lead
    users = blast.items[-1]
    assert [c.text for c in users.rows[0]][:3] == ["kim", "0", "1"]


def test_key_moments_name_detection_and_recovery(warehouse: Path) -> None:
    moments = _moments(_context(warehouse, "dgx01"))
    times = [t for t, _ in moments]
    text = dict(moments)
    # detection: the first failing NHC run, named by its check
    assert text[f"{DAY} 08:05:02"].startswith("first failing health check of hardware incident")
    assert "(detection): NHC check_nv_healthmon on dgx01" in text[f"{DAY} 08:05:02"]
    # the last evidence says what the line is
    assert "(its last log line: NHC check_nv_healthmon on dgx01)" in text[f"{DAY} 08:10:02"]
    assert f"{DAY} 08:11:00" in times  # the drain
    # the recovery lines, each named by what it is, then the return to service
    assert text[f"{DAY} 09:40:12"].startswith("recovery: node rebooted (kernel boot) on dgx01")
    assert text[f"{DAY} 09:45:03"].startswith("recovery: NHC health check passed on dgx01")
    assert text[f"{DAY} 10:00:00"] == "last linked node back in service"


def test_a_node_that_stayed_in_service_was_not_down(warehouse: Path) -> None:
    ctx = _context(warehouse, "dgx05")
    lead = ctx["by_key"]["summary"].lead
    assert query_rows(warehouse, "SELECT firings, preceded_job_failure, precision FROM marts.health_check_quality "
                                 "WHERE check_name = 'check_fs_mount'") == [(1, 0, 0.0)]
    assert "was down" not in lead
    assert ("its health check failed for 10 min, to the first passing run of its health check at "
            f"{DAY} 13:10:04 UTC; no drain linked: the node stayed in service") in lead
    assert ("It rests on health-check lines alone; marts.health_check_quality: check_fs_mount preceded a job "
            "failure after 0 of its 1 firing (precision 0.00).") in lead
    assert lead.endswith("1 job on its node ran through it and completed (702).")


def test_a_storage_repair_names_the_file_systems_recovery(warehouse: Path) -> None:
    assert query_rows(warehouse, "SELECT repair_source, component_class FROM marts.incident_repairs "
                                 "WHERE list_contains(nodes, 'dgx06')") == [("recovery_events", "storage")]
    lead = _context(warehouse, "dgx06")["by_key"]["repair"].lead
    assert "by recovery log lines — file system back on its clients" in lead
    assert "ACTIVE" not in lead
