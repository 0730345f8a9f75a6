"""LBNL NHC's file-system checks are two families (``scripts/lbnl_fs.nhc``, github.com/mej/nhc):

* mount / readability checks (``check_fs_mount``, ``check_fs_mount_rw``/``_ro``, ``check_file_test`` on a
  shared path): a file system missing or read-only IS a storage fault — a failure event, an incident;
* capacity checks (``check_fs_free``, ``check_fs_used``, ``check_fs_size``, ``check_fs_inodes``,
  ``check_fs_ifree``, ``check_fs_iused``) and health-check lines that say a file system is full: a disk
  or inode table filling up, usually with a job's own output, is housekeeping. Still a health-check
  firing (``marts.health_check_quality``), never failure evidence: no incident, no MTBF failure, no
  infrastructure attribution, no suspect-node hw episode.

(Outside probe K, 2026-12-05: 34 NHC ``check_fs_free: /tmp has only 2% free`` episodes became 34 storage
incidents — 34 of 56 — halving cluster MTBF; a user's job that filled /tmp and exited 1 was blamed on
the infrastructure.)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, failure_events
from gpusre.models.logs.event_catalog import classify_messages

_NHC = "nhc: ERROR:  nhc:  Health check failed:  "
_SLURMD = "slurmd: error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "


@pytest.mark.parametrize(("line", "pattern_id", "component"), [
    # capacity family, NHC's own message shapes (lbnl_fs.nhc die() texts)
    ("nhc[23633]: Health check failed:  check_fs_free:  /tmp has only 2% free (7.1GB), minimum is 5%",
     "nhc_fs_capacity", "local_disk"),
    (_SLURMD + "check_fs_free:  /tmp has only 0% free (0kB), minimum is 5%", "nhc_fs_capacity", "local_disk"),
    (_NHC + "check_fs_free:  /local has only 12GB free, minimum is 20GB", "nhc_fs_capacity", "local_disk"),
    (_NHC + "check_fs_used:  /var is 97% full (48GB), threshold is 95%", "nhc_fs_capacity", "local_disk"),
    (_NHC + "check_fs_size:  /local size 1.7TB less than minimum of 3.4TB", "nhc_fs_capacity", "local_disk"),
    (_NHC + "check_fs_inodes:  /tmp inodes 1000 less than minimum of 2000", "nhc_fs_capacity", "local_disk"),
    (_NHC + "check_fs_ifree:  /tmp has only 1% of inodes free (2100), minimum is 5%", "nhc_fs_capacity", "local_disk"),
    # a node-local scratch is not the shared /scratch
    (_NHC + "check_fs_iused:  /local/scratch has 99% of inodes used (99000), threshold is 95%",
     "nhc_fs_capacity", "local_disk"),
    # a shared path filling up: the file system's component, still no failure
    (_NHC + "check_fs_used:  /lustre is 97% full (2.9PB), threshold is 95%", "nhc_fs_capacity_shared", "storage"),
    (_NHC + "check_fs_free:  /scratch2 has only 1% free (3TB), minimum is 2%", "nhc_fs_capacity_shared", "storage"),
    # without a check name: words in the text
    ("Health check failed: /scratch is 99% full", "nhc_capacity_shared_text", "storage"),
    ("Health check failed: write test on /lustre/proj failed: No space left on device",
     "nhc_capacity_shared_text", "storage"),
    ("Health check failed: /tmp is 100% full", "nhc_capacity_text", "local_disk"),
    ("Health check failed: /local/scratch is 100% full", "nhc_capacity_text", "local_disk"),
    ("nhc[881]: ERROR: nhc: Health check failed: /var has 96% used", "nhc_capacity_text", "local_disk"),
    ("Health check failed: disk full on /dev/nvme0n1", "nhc_capacity_text", "local_disk"),
])
def test_capacity_lines_are_health_checks_below_the_failure_threshold(line: str, pattern_id: str,
                                                                      component: str) -> None:
    row = classify_messages(pl.Series([line])).row(0, named=True)
    assert (row["pattern_id"], row["kind"], row["component"], row["cause_class"], row["severity"], row["action"]) \
        == (pattern_id, "health_check", component, "system_software", "medium", "MONITOR")


@pytest.mark.parametrize(("line", "pattern_id", "component"), [
    # mount / readability: a file system missing or read-only is a storage fault
    (_NHC + "check_fs_mount_rw:  /lustre not mounted", "nhc_filesystem", "storage"),
    (_SLURMD + "check_fs_mount:  /lustre not mounted", "nhc_filesystem", "storage"),
    (_NHC + "check_fs_mount_ro:  /cvmfs mount options incorrect (should match /(^|,)ro($|,)/)",
     "nhc_filesystem", "storage"),
    ("nhc[881]: ERROR: nhc: Health check failed: check_file_test: /lustre/scratch/.nhc_probe not readable",
     "nhc_storage_text", "storage"),
    # not a file system at all: GPU memory "98% used" is no disk filling up
    ("Health check failed: GPU 5 memory 98% used", "nhc_gpu_text", "gpu_compute"),
])
def test_mount_and_other_checks_stay_failures(line: str, pattern_id: str, component: str) -> None:
    row = classify_messages(pl.Series([line])).row(0, named=True)
    assert (row["pattern_id"], row["component"], row["severity"]) == (pattern_id, component, "high")
    assert row["cause_class"] in {"system_software", "hardware"}


def test_failure_events_keep_the_mount_check_and_drop_the_capacity_checks() -> None:
    lines = [_NHC + "check_fs_free:  /tmp has only 2% free (7.1GB), minimum is 5%",
             _NHC + "check_fs_used:  /lustre is 97% full (2.9PB), threshold is 95%",
             "Health check failed: /scratch is 99% full",
             _NHC + "check_fs_mount_rw:  /lustre not mounted"]
    cls = classify_messages(pl.Series(lines))
    t0 = datetime(2026, 12, 1, 2, 0)
    events = pl.DataFrame({
        "event_id": list(range(1, len(lines) + 1)), "ts": [t0 + timedelta(minutes=5 * i) for i in range(len(lines))],
        "node": ["gpu01"] * len(lines)}).with_columns(pl.col("ts").dt.replace_time_zone("UTC")).hstack(
        cls.select("kind", "code", "gpu_pci", "component", "cause_class", "severity", "action"))
    got = failure_events(events.select(*EVENT_SCHEMA))
    assert got["event_id"].to_list() == [4]


# --- end to end: a hand-made landing ---------------------------------------------------------------

SACCT = "JobID|JobIDRaw|JobName|User|Account|Partition|State|ExitCode|Submit|Eligible|Start|End|Elapsed|NNodes|AllocTRES|NodeList"
EVENTS = "Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User|Event|ClusterNodes"
FREE = "check_fs_free:  /tmp has only 2% free (7.1GB), minimum is 5%"
FULL = "check_fs_free:  /tmp has only 0% free (0kB), minimum is 5%"
MOUNT = "check_fs_mount_rw:  /lustre not mounted"


def _job(job_id: int, user: str, state: str, exit_code: str, start: str, end: str, node: str) -> str:
    t0, t1 = datetime.fromisoformat(f"2026-12-01T{start}"), datetime.fromisoformat(f"2026-12-01T{end}")
    secs = int((t1 - t0).total_seconds())
    elapsed = f"{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    return (f"{job_id}|{job_id}|train|{user}|llm|gpu|{state}|{exit_code}|2026-12-01T{start}|2026-12-01T{start}|"
            f"2026-12-01T{start}|2026-12-01T{end}|{elapsed}|1|cpu=96,gres/gpu=8,node=1|{node}")


def _nhc_runs(node: str, start: str, runs: int, check: str) -> list[str]:
    """NHC failing ``runs`` times every 300 s from ``start`` (HH:MM), each run logged by nhc and echoed by slurmd 2 s later."""
    t0 = datetime.fromisoformat(f"2026-12-01T{start}:00")
    out = []
    for i in range(runs):
        t = t0 + timedelta(seconds=300 * i)
        out.append(f"{t:%b} {t.day:2d} {t:%H:%M:%S} {node} nhc[{2300 + i}]: Health check failed:  {check}")
        t2 = t + timedelta(seconds=2)
        out.append(f"{t2:%b} {t2.day:2d} {t2:%H:%M:%S} {node} slurmd[1805]: error: health_check failed: rc:1 "
                   f"output:ERROR:  nhc:  Health check failed:  {check}")
    return out


def _drain(node: str, start: str, end: str, check: str) -> str:
    t0, t1 = datetime.fromisoformat(f"2026-12-01T{start}"), datetime.fromisoformat(f"2026-12-01T{end}")
    secs = int((t1 - t0).total_seconds())
    return (f"c|{node}|2026-12-01T{start}|2026-12-01T{end}|{secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}|"
            f"DRAIN|NHC: {check}|root(0)|Node|")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpu01: /tmp below 5 % free twice (3 failing runs each, 15-min drains), no job failure near;
    gpu02: alice's job exits 1 at 06:00 and check_fs_free reports /tmp 0 % free at 06:02 (2 runs);
    gpu03: /lustre not mounted from 09:00 (3 runs, a 1-h drain), bob's job dies at 09:00:30."""
    root = tmp_path_factory.mktemp("nhc_capacity")
    syslog = {
        "gpu01": _nhc_runs("gpu01", "02:00", 3, FREE) + _nhc_runs("gpu01", "14:00", 3, FREE),
        "gpu02": _nhc_runs("gpu02", "06:02", 2, FULL),
        "gpu03": _nhc_runs("gpu03", "09:00", 3, MOUNT),
    }
    files = {
        "cluster.yaml": "cluster: capacity\nnodes: gpu[01-03]\ngpus_per_node: 8\ntimezone: UTC\n",
        "sacct/sacct_2026-12-01.psv": "\n".join([
            SACCT,
            _job(101, "carol", "COMPLETED", "0:0", "00:30:00", "12:00:00", "gpu01"),
            _job(102, "alice", "FAILED", "1:0", "01:00:00", "06:00:00", "gpu02"),
            _job(103, "bob", "FAILED", "1:0", "03:00:00", "09:00:30", "gpu03"),
            _job(104, "carol", "COMPLETED", "0:0", "14:30:00", "20:00:00", "gpu01"),
        ]) + "\n",
        "slurm_events/events_2026-12-01.txt": "\n".join([
            EVENTS,
            _drain("gpu01", "02:00:01", "02:15:00", FREE),
            _drain("gpu01", "14:00:01", "14:15:00", FREE),
            _drain("gpu02", "06:02:01", "06:12:00", FULL),
            _drain("gpu03", "09:00:01", "10:00:00", MOUNT),
        ]) + "\n",
        **{f"syslog/2026-12-01/{node}.log": "\n".join(lines) + "\n" for node, lines in syslog.items()},
    }
    return run_hand_landing(root, files)


_rows = query_rows


def test_only_the_mount_failure_is_an_incident(warehouse: Path) -> None:
    rows = _rows(warehouse, "SELECT component, cause_class, nodes, n_health_check_episodes FROM marts.hw_incidents")
    assert rows == [("storage", "system_software", ["gpu03"], 1)]


def test_the_capacity_check_still_counts_as_a_firing(warehouse: Path) -> None:
    rows = {r[0]: r[1:] for r in _rows(warehouse, "SELECT check_name, component, firings, events, nodes, "
                                                  "preceded_job_failure, precision FROM marts.health_check_quality")}
    # check_fs_free: gpu01 2 episodes + gpu02 1 = 3 firings; events are runs, each logged by nhc and
    # echoed by slurmd 2 s later (one run, core/node_events_once.sql): 3 + 3 + 2 = 8; the 06:02 firing is
    # within [−5 min, +10 min] of alice's 06:00 failure: 1 of 3
    # (the check saw what ended her job; whose fault it was is attribution's question)
    assert rows["check_fs_free"] == ("local_disk", 3, 8, 2, 1, pytest.approx(1 / 3))
    assert rows["check_fs_mount_rw"] == ("storage", 1, 3, 1, 1, 1.0)


def test_a_job_that_filled_tmp_is_the_users_and_the_lustre_outage_is_infrastructure(warehouse: Path) -> None:
    rows = {r[0]: r[1:] for r in _rows(warehouse, "SELECT job_id, attribution, component "
                                                  "FROM marts.job_failure_attribution")}
    assert rows["102"][0] == "user"
    assert rows["103"] == ("infrastructure", "storage")


def test_no_capacity_event_is_failure_evidence(warehouse: Path) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        events = con.sql("SELECT * FROM core.node_events").pl()
    finally:
        con.close()
    hc = events.filter(pl.col("kind") == "health_check")
    assert hc.height == 16 + 6
    failures = failure_events(events.select(*EVENT_SCHEMA, "message"))
    # what suspect_nodes' hw_episodes and attribution read: only gpu03's mount check (3 runs × 2 lines)
    assert failures["node"].to_list() == ["gpu03"] * 6
    assert set(hc.filter(pl.col("node") != "gpu03")["component"]) == {"local_disk"}


def test_mtbf_and_repairs_count_the_mount_failure_only(warehouse: Path) -> None:
    rows = _rows(warehouse, "SELECT component, failures FROM marts.mtbf WHERE period_type = 'all' "
                            "AND scope = 'component' ORDER BY component")
    assert rows == [("storage", 1)]
    assert _rows(warehouse, "SELECT failures FROM marts.mtbf WHERE period_type = 'all' AND scope = 'cluster'") == [(1,)]
    # the drain of the mount failure still repairs it: 09:00:00 first evidence -> back 10:00:00 = 1 h
    assert _rows(warehouse, "SELECT component_class, incidents, repaired, mttr_hours_mean FROM marts.repair_times "
                            "ORDER BY component_class") == [("all", 1, 1, 1.0), ("storage", 1, 1, 1.0)]
