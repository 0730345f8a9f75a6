"""Outside probe AP (job failure attribution and lost GPU-hours), findings F1-F3, rebuilt on real log lines.

F1. A job killed on after-the-fact evidence is its incident's: probe job 500304 FAILED at 10:00:00 on gpu027,
    Xid 79 (GPU fallen off the bus) at 10:01:30 and NHC's ``check_nv_healthmon … is lost`` at 10:04:00. The
    health check is the job's evidence (a detection, up to 5 min after the end) and a member of the incident
    that starts at 10:01:30 — so the job is that incident's kill (it was linked to none: the incident started
    more than 60 s after the end). An incident that supplied none of the job's evidence still may not claim
    it by starting after its end.
F2. A Lustre eviction is not undone by the reconnect after it: probe job 500205 on gpu031, connection to
    scratch-OST0004 lost 18:01:40, evicted 18:01:55 (``in progress operations using this service will
    fail``), connection restored 18:02:05, job FAILED 1:0 at 18:02:30 → infrastructure / storage (was the
    user's). A lost connection alone, restored before the end, still clears (the client replays its I/O).
F3. A fatal NVLink Xid 74 lasts until a GPU reset: probe variant H, 2-node job 500801, Xid 74 on gpu030
    15 min before its end (outside the 10-min window), no reset or reboot → infrastructure / nvlink (was
    the user's). The NVLink5 Xids 144-150 likewise when their sub-code is Fatal; a Nonfatal one is no failure.

Every job runs 2 h (≥ Δ = 1 h): an infrastructure kill loses Δ/2 = 0.5 h per GPU: 8 GPUs → 4.0 GPU-h,
16 GPUs → 8.0 GPU-h.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line
from node_event_lines import events_with_parts

from gpusre.models.failures.attribution import attribute_failures
from gpusre.models.failures.hw_incidents import merge_incidents
from gpusre.models.logs.event_catalog import classify_messages, fails_in_flight_kinds, load_log_patterns

S = timedelta(seconds=1)
M = timedelta(minutes=1)
H = timedelta(hours=1)
END = datetime(2026, 11, 4, 10, 0, tzinfo=timezone.utc)

XID79 = "NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
NHC_LOST = ("nhc[70312]: ERROR:  nhc:  Health check failed:  check_nv_healthmon:  GPU 0000:9b:00.0 is lost, "
            "reboot required")
# The same check relayed by slurmd (HealthCheckProgram's output), another site's convention.
SLURMD_LOST = ("slurmd: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
               "check_nv_healthmon:  GPU 0000:9b:00.0 is lost")
XID94 = ("NVRM: Xid (PCI:0000:18:00): 94, pid=4410, name=python3, Ch 00000010, errorString CTX SWITCH TIMEOUT, "
         "Info 0x3c")
LOST = ("Lustre: scratch-OST0004-osc-ffff9a2c3e5d8800: Connection to scratch-OST0004 (at 10.10.0.14@o2ib) was lost; "
        "in progress operations using this service will wait for recovery to complete")
EVICTED = ("LustreError: 167-0: scratch-OST0004-osc-ffff9a2c3e5d8800: This client was evicted by scratch-OST0004; "
           "in progress operations using this service will fail.")
RESTORED = "Lustre: scratch-OST0004-osc-ffff9a2c3e5d8800: Connection restored to 10.10.0.14@o2ib (at 10.10.0.14@o2ib)"
# An older client's eviction line names no import, only the target (here an MDT).
EVICTED_MDT = ("LustreError: 167-0: This client was evicted by work-MDT0000; in progress operations using this "
               "service will fail.")
RESTORED_MDT = "Lustre: work-MDT0000-mdc-ffff8f2a4c1b9000: Connection restored to 10.10.0.2@o2ib (at 10.10.0.2@o2ib)"
NFS_SOFT = "nfs: server home01 not responding, timed out"
NFS_HARD = "nfs: server home01 not responding, still trying"
NFS_OK = "nfs: server home01 OK"
XID74 = ("NVRM: Xid (PCI:0000:18:00): 74, pid=88213, name=python, NVLink: fatal error detected on link 7"
         "(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
# NVLink5 (Blackwell) Xid 145 prints its sub-code's fatality (NVIDIA Xid catalog: Nonfatal → IGNORE).
XID145_FATAL = "NVRM: Xid (PCI:0000:1b:00): 145, RLW_REMAP Fatal XC0 i0 Link 10 (0x00000002 0x00000000 0x00000000)"
XID145_NONFATAL = ("NVRM: Xid (PCI:0000:1b:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 10 "
                   "(0x00000002 0x00000000 0x00000000)")
DRIVER = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024"

JOB_SCHEMA = {"job_id": pl.String, "state": pl.String, "nodes": pl.List(pl.String), "n_gpus": pl.Int64,
              "start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"), "elapsed_s": pl.Int64,
              "exit_code": pl.Int64, "exit_signal": pl.Int64}


def job(job_id: str, nodes: list[str], *, exit_code: int = 1, exit_signal: int = 0) -> dict:
    """A FAILED core.jobs row of 2 h ending at END, 8 GPUs per node."""
    return {"job_id": job_id, "state": "FAILED", "nodes": nodes, "n_gpus": 8 * len(nodes), "start_ts": END - 2 * H,
            "end_ts": END, "elapsed_s": 7200, "exit_code": exit_code, "exit_signal": exit_signal}


def attribute(jobs: list[dict], lines: list[tuple[timedelta, str, str]]) -> tuple[dict[str, dict], pl.DataFrame]:
    """Attribution rows by job id, and the incidents' membership (``event_id``, ``incident_id``); ``lines`` are
    (offset from END, node, raw line), event ids 1.. in order."""
    events = events_with_parts([(END + at, node, line) for at, node, line in lines])
    incidents, members = merge_incidents(events)
    out = attribute_failures(pl.DataFrame(jobs, schema=JOB_SCHEMA), events, incidents)
    return {r["job_id"]: r for r in out.iter_rows(named=True)}, members


def incident_of(members: pl.DataFrame, event_id: int) -> str:
    """The incident an event is a member of."""
    return members.filter(pl.col("event_id") == event_id)["incident_id"].item()


def verdict(row: dict) -> tuple:
    return row["attribution"], row["component"], row["lost_gpu_hours"]


# ---- F1: the job is the incident's its evidence is a member of ------------------------------------------------


def test_a_job_killed_on_a_later_health_check_is_the_incident_of_that_check() -> None:
    # probe: Xid 79 at +90 s (a fault line past the 60-s clock skew: no evidence of its own), NHC at +4 min
    # (a detection: evidence) → infrastructure with the incident both are members of (it starts at +90 s).
    # variant G, another convention: the check relayed by slurmd alone, at +4 and +9 min (only +4 is inside
    # the 5-min after-window).
    got, members = attribute([job("probe", ["gpu027"]), job("nhc_only", ["gpu028"])], [
        (90 * S, "gpu027", XID79), (4 * M, "gpu027", NHC_LOST),
        (4 * M, "gpu028", SLURMD_LOST), (9 * M, "gpu028", SLURMD_LOST)])
    assert incident_of(members, 1) == incident_of(members, 2)
    assert verdict(got["probe"]) == ("infrastructure", "pcie_bus", 4.0)
    assert got["probe"]["evidence_event_ids"] == [2]
    assert got["probe"]["incident_id"] == incident_of(members, 2)
    assert got["nhc_only"]["attribution"] == "infrastructure" and got["nhc_only"]["lost_gpu_hours"] == 4.0
    assert got["nhc_only"]["evidence_event_ids"] == [3]
    assert got["nhc_only"]["incident_id"] == incident_of(members, 3)


def test_an_incident_that_supplied_none_of_the_evidence_still_cannot_start_after_the_end() -> None:
    # late: Xid 79 on n1 at +2 min only (a fault past the clock skew: no evidence) → the user's, no incident.
    # two: a 2-node job, Xid 94 on n2 2 min before the end (its evidence) and an Xid 79 incident on n3 that
    # starts at +2 min → the Xid 94's incident, not the later one; 16 GPUs × 0.5 h = 8.0.
    got, members = attribute([job("late", ["n1"]), job("two", ["n2", "n3"])], [
        (2 * M, "n1", XID79), (-2 * M, "n2", XID94), (2 * M, "n3", XID79)])
    assert incident_of(members, 2) != incident_of(members, 3)
    assert (got["late"]["attribution"], got["late"]["incident_id"]) == ("user", None)
    assert verdict(got["two"]) == ("infrastructure", "gpu_memory", 8.0)
    assert got["two"]["incident_id"] == incident_of(members, 2)


# ---- F2: a failure that already failed the job's work is not cleared by a later recovery ----------------------


def test_the_catalog_names_the_kinds_whose_failed_operations_no_recovery_undoes() -> None:
    # The eviction and the soft mount's timeout each have their own kind (the catalog marks kinds, not lines);
    # the lost connection and the hard mount's "still trying", whose I/O resumes, are not marked.
    assert fails_in_flight_kinds() == ["lustre_eviction", "nfs_soft_timeout"]
    got = classify_messages(pl.Series([EVICTED, EVICTED_MDT, NFS_SOFT, LOST, NFS_HARD])).select("kind", "port", "severity")
    assert got.rows() == [("lustre_eviction", "scratch-OST0004", "high"), ("lustre_eviction", "work-MDT0000", "high"),
                          ("nfs_soft_timeout", None, "high"), ("lustre_disconnect", "scratch-OST0004", "high"),
                          ("nfs_timeout", None, "high")]
    # every marked row's example is its own kind (load_log_patterns checks the regex matches it)
    marked = load_log_patterns().filter(pl.col("fails_in_flight"))
    assert classify_messages(marked["example"])["kind"].to_list() == marked["kind"].to_list()


def test_a_lustre_eviction_stays_evidence_after_the_client_reconnects() -> None:
    # probe job 500205 (times from the end 18:02:30): lost -50 s, evicted -35 s, restored -25 s → storage, 4.0,
    # evidence the eviction only (the lost connection was restored), with the incident of both.
    # mdt: the older spelling (no import name), an MDT, restored 2 min before the end → storage, 4.0.
    # flap: the connection lost and restored without an eviction → the user's (the client replayed its I/O).
    got, members = attribute([job("probe", ["gpu031"]), job("mdt", ["n2"]), job("flap", ["n3"])], [
        (-50 * S, "gpu031", LOST), (-35 * S, "gpu031", EVICTED), (-25 * S, "gpu031", RESTORED),
        (-3 * M, "n2", EVICTED_MDT), (-2 * M, "n2", RESTORED_MDT),
        (-50 * S, "n3", LOST), (-25 * S, "n3", RESTORED)])
    assert verdict(got["probe"]) == ("infrastructure", "storage", 4.0)
    assert got["probe"]["evidence_event_ids"] == [2]
    assert got["probe"]["incident_id"] == incident_of(members, 2)
    assert verdict(got["mdt"]) == ("infrastructure", "storage", 4.0)
    assert got["mdt"]["incident_id"] == incident_of(members, 4)
    assert (got["flap"]["attribution"], got["flap"]["rule"], got["flap"]["lost_gpu_hours"]) == (
        "user", "non-zero exit without infrastructure evidence", 0.0)


def test_a_soft_nfs_timeout_stays_evidence_after_the_server_answers_again() -> None:
    # soft: "timed out" 4 min before the end (EIO to the application), OK 3 min before → storage, 4.0.
    # hard: "still trying" at the same times (the I/O blocked, then resumed at OK) → the user's.
    # old: "timed out" 20 min before the end (outside the 10-min window), OK 19 min before: the outage was
    # over and the failed operations are older than the window → the user's.
    got, _ = attribute([job("soft", ["n1"]), job("hard", ["n2"]), job("old", ["n3"])], [
        (-4 * M, "n1", NFS_SOFT), (-3 * M, "n1", NFS_OK),
        (-4 * M, "n2", NFS_HARD), (-3 * M, "n2", NFS_OK),
        (-20 * M, "n3", NFS_SOFT), (-19 * M, "n3", NFS_OK)])
    assert verdict(got["soft"]) == ("infrastructure", "storage", 4.0)
    for job_id in ("hard", "old"):
        assert (got[job_id]["attribution"], got[job_id]["lost_gpu_hours"]) == ("user", 0.0), job_id


# ---- F3: a fatal NVLink error lasts until a GPU reset ----------------------------------------------------------


def test_a_fatal_nvlink_error_stays_open_until_a_reset() -> None:
    # probe variant H: Xid 74 on the second node of a 2-node job 15 min before the end, nothing after →
    # nvlink, 16 × 0.5 = 8.0, with its incident. fatal145: an NVLink5 Xid 145 Fatal 20 min before → 4.0.
    # nonfatal145: the same sub-code Nonfatal (severity capped at medium: no failure) → the user's.
    # reset: Xid 74 20 min before, the NVIDIA driver reloaded 15 min before (the GPU reset) → the user's.
    got, members = attribute([job("probe", ["gpu029", "gpu030"]), job("fatal145", ["n1"]),
                              job("nonfatal145", ["n2"]), job("reset", ["n3"])], [
        (-(15 * M + 5 * S), "gpu030", XID74),
        (-20 * M, "n1", XID145_FATAL), (-20 * M, "n2", XID145_NONFATAL),
        (-20 * M, "n3", XID74), (-15 * M, "n3", DRIVER)])
    assert verdict(got["probe"]) == ("infrastructure", "nvlink", 8.0)
    assert got["probe"]["evidence_event_ids"] == [1] and got["probe"]["incident_id"] == incident_of(members, 1)
    assert verdict(got["fatal145"]) == ("infrastructure", "nvlink", 4.0)
    for job_id in ("nonfatal145", "reset"):
        assert (got[job_id]["attribution"], got[job_id]["rule"], got[job_id]["lost_gpu_hours"]) == (
            "user", "non-zero exit without infrastructure evidence", 0.0), job_id


# ---- end to end: the incident's kills, the taxonomy and the attribution agree ---------------------------------

CLUSTER = 'cluster: probeap\ntimezone: UTC\nnodes: "gpu[1-6]"\ngpus_per_node: 8\n'
DAY = "2026-11-04"


def _sacct_row(job_id: str, start: str, end: str, nodes: str, n_nodes: int) -> str:
    return sacct_line(job_id, DAY, start, end, nodes, n_nodes)


SACCT = sacct_dump([
    _sacct_row("601", "08:00:00", "10:00:00", "gpu1", 1),        # F1: Xid 79 at 10:01:30, NHC at 10:04:00
    _sacct_row("602", "16:02:30", "18:02:30", "gpu2", 1),        # F2: evicted 18:01:55, restored 18:02:05
    _sacct_row("603", "16:40:10", "18:40:10", "gpu[3-4]", 2),    # F3: Xid 74 on gpu4 at 18:25:05
])
KERNEL = {
    "gpu1": [("10:01:30", f"kernel: {XID79}"), ("10:04:00", NHC_LOST)],
    "gpu2": [("18:01:40", f"kernel: {LOST}"), ("18:01:55", f"kernel: {EVICTED}"), ("18:02:05", f"kernel: {RESTORED}")],
    "gpu4": [("18:25:05", f"kernel: {XID74}")],
}


def _log(node: str) -> str:
    """The node's lines among benign ones that cover the day."""
    benign = [("00:00:05", "systemd[1]: Started Session 1 of user root."),
              ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]
    return "".join(f"{DAY}T{t}.000000+00:00 {node} {m}\n" for t, m in sorted(benign + KERNEL.get(node, [])))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, "sacct/sacct_2026-11-04.psv": SACCT}
    files.update({f"syslog/{DAY}/gpu{i}.log": _log(f"gpu{i}") for i in range(1, 7)})
    return run_hand_landing(tmp_path_factory.mktemp("probe_ap"), files)


def test_end_to_end_the_incident_counts_the_jobs_its_evidence_killed(warehouse: Path) -> None:
    got = {r[0]: r[1:] for r in query_rows(warehouse, """
        SELECT a.job_id, a.attribution, a.component, a.lost_gpu_hours, i.component, i.affected_jobs, i.lost_gpu_hours
        FROM marts.job_failure_attribution a LEFT JOIN marts.hw_incidents i USING (incident_id) ORDER BY a.job_id""")}
    assert got == {
        "601": ("infrastructure", "pcie_bus", 4.0, "pcie_bus", 1, 4.0),
        "602": ("infrastructure", "storage", 4.0, "storage", 1, 4.0),
        "603": ("infrastructure", "nvlink", 8.0, "nvlink", 1, 8.0),
    }
    # The taxonomy counts the same kills as the incidents.
    taxonomy = dict(((c, (j, round(h, 4))) for c, j, h in query_rows(warehouse, """
        SELECT component, affected_jobs, lost_gpu_hours FROM marts.failure_taxonomy
        WHERE period_type = 'all' AND component IN ('pcie_bus', 'storage', 'nvlink')""")))
    assert taxonomy == {"pcie_bus": (1, 4.0), "storage": (1, 4.0), "nvlink": (1, 8.0)}
