"""NVIDIA IMEX (Internode Memory Exchange) failing on a tray of a multi-node NVLink domain (probe AS F5).

IMEX lets CUDA import GPU memory that another tray of a GB200 NVL72 exported; NVIDIA's IMEX guide
("Connections, Quorum, and Clean up"): when a node sees a peer's IMEX restarted, every job that imported
memory from it is invalidated. So a dying ``nvidia-imex.service`` kills the multi-tray NVLink jobs of its
tray even when systemd (``Restart=on-failure``) starts it again a second later. Before the catalog had
rules for it, job 4004 (16 GPUs on 4 trays, FAILED 40 s after gb-r1-c16's IMEX exited with status 1)
was the user's ("non-zero exit without infrastructure evidence").

Hand computation (lost GPU-hours: a job that ran for 1 h or more loses GPUs x 0.5 h):

* 4004, gb-c[01-04] (4 GPUs each), 10:00-12:00 FAILED 1:0; gb-c02's IMEX exits with status 1 at 11:59:20
  (``journalctl -o short-iso``) and systemd restarts it at 11:59:22 -> infrastructure / nvlink,
  16 x 0.5 = 8.0 GPU-h, with the IMEX incident of gb-c02 (the restart clears nothing).
* 4006, gb-c[03-06], 16:00-17:00 FAILED 1:0; gb-c06's IMEX killed by SIGKILL at 16:52 (RFC 3164)
  -> infrastructure / nvlink, 16 x 0.5 = 8.0 GPU-h.
* 4005, gb-c[05-06], 13:00-14:00 FAILED 1:0; gb-c05 rebooted right after (``journalctl -o short-full``):
  IMEX stops cleanly at 14:00:20 (``Stopping`` / ``Deactivated successfully`` / ``Stopped``), boots at
  14:02, IMEX ``Started`` again -> no event, user, 0.0 GPU-h.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line

from gpusre.models.logs.event_catalog import classify_messages

FAILS = "non-zero exit without infrastructure evidence"

# --- the catalog: each systemd spelling of a failed unit, the daemon's own start-up error; routine lines none --


def test_imex_failures_are_nvlink_evidence_and_routine_lines_no_events() -> None:
    failed = [
        "systemd[1]: nvidia-imex.service: Main process exited, code=exited, status=1/FAILURE",
        "systemd[1]: nvidia-imex.service: Failed with result 'exit-code'.",
        # NVIDIA's unit is Type=forking: a start that fails is the control process's exit
        "systemd[1]: nvidia-imex.service: Control process exited, code=exited, status=1/FAILURE",
        "systemd[1]: nvidia-imex.service: Main process exited, code=dumped, status=6/ABRT",
        "systemd[1]: Failed to start NVIDIA IMEX service.",
        "systemd[1]: Failed to start nvidia-imex.service - NVIDIA IMEX service.",  # systemd >= 249, combined
        "systemd[1]: Failed to start nvidia-imex.service.",                          # StatusUnitFormat=name
        "nvidia-imex[2211]: [Mar 26 2025 16:41:27] [ERROR] [tid 40] No matching network interface found for any IP "
        "addresses in the node configuration file /etc/nvidia-imex/nodes_config.cfg.",
    ]
    got = classify_messages(pl.Series(failed)).select("kind", "component", "severity", "action").rows()
    assert got == [("imex_down", "nvlink", "high", "RESTART_FM")] * len(failed)
    routine = [
        "systemd[1]: Starting NVIDIA IMEX service...",
        "systemd[1]: Started NVIDIA IMEX service.",
        "systemd[1]: Stopping NVIDIA IMEX service...",
        "systemd[1]: nvidia-imex.service: Deactivated successfully.",
        "systemd[1]: Stopped NVIDIA IMEX service.",
        "systemd[1]: Stopped nvidia-imex.service - NVIDIA IMEX service.",
        "systemd[1]: nvidia-imex.service: Consumed 2.118s CPU time.",
        "systemd[1]: nvidia-imex.service: Main process exited, code=exited, status=0/SUCCESS",
        "systemd[1]: nvidia-imex.service: Scheduled restart job, restart counter is at 1.",
        "nvidia-imex[3121]: [Mar 25 2025 10:41:54] [INFO] [tid 38] NvGpu Library version matched with GPU Driver version",
        "nvidia-imex[3121]: [Mar 25 2025 10:41:54] [INFO] [tid 38] IMEX version 570.00 is running with the following "
        "configuration options",
        # another unit's failure is not IMEX's
        "systemd[1]: Failed to start NVIDIA Persistence Daemon.",
    ]
    assert classify_messages(pl.Series(routine))["kind"].to_list() == [None] * len(routine)


# --- end to end: sacct and node logs through the pipeline --------------------------------------------------

DAY = "2026-12-01"
CLUSTER = ('cluster: nvl\ntimezone: UTC\nnodes: "gb-c[01-06]"\ngpus_per_node: 4\n'
           'racks: {nvl72-r1: "gb-c[01-06]"}\nnvlink_domains: {nvl72-r1: "gb-c[01-06]"}\n')


def _sacct_row(job_id: str, start: str, end: str, nodes: str, n_nodes: int) -> str:
    """One FAILED job of its own training run on GB200 trays (4 GPUs, 144 cores each)."""
    return sacct_line(job_id, DAY, start, end, nodes, n_nodes, user="leo", group="cv", account="cv",
                      partition="gb200", gpus_per_node=4, cpus_per_node=144, mem="800G")


SACCT = sacct_dump([
    _sacct_row("4004", "10:00:00", "12:00:00", "gb-c[01-04]", 4),
    _sacct_row("4005", "13:00:00", "14:00:00", "gb-c[05-06]", 2),
    _sacct_row("4006", "16:00:00", "17:00:00", "gb-c[03-06]", 4),
])


def _benign(node: str) -> list[tuple[str, str]]:
    """(time, 'program: message') lines that cover the day on ``node``."""
    return [("00:00:05", "systemd[1]: Started Session 1 of user root."),
            ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]


def _short_iso(node: str, lines: list[tuple[str, str]]) -> str:
    """``journalctl -o short-iso``: ``2026-12-01T11:59:20+0000 host prog[pid]: msg``."""
    return "".join(f"{DAY}T{t}+0000 {node} {m}\n" for t, m in sorted(lines))


def _short_full(node: str, lines: list[tuple[str, str]]) -> str:
    """``journalctl -o short-full``: ``Tue 2026-12-01 14:00:20 UTC host prog[pid]: msg``."""
    return "".join(f"Tue {DAY} {t} UTC {node} {m}\n" for t, m in sorted(lines))


def _rfc3164(node: str, lines: list[tuple[str, str]]) -> str:
    """Classic syslog: ``Dec  1 16:52:00 host prog[pid]: msg``."""
    return "".join(f"Dec  1 {t} {node} {m}\n" for t, m in sorted(lines))


IMEX_DIES = [  # gb-c02, 40 s before 4004's end; systemd's Restart=on-failure brings it back 2 s later
    ("11:59:20", "systemd[1]: nvidia-imex.service: Main process exited, code=exited, status=1/FAILURE"),
    ("11:59:20", "systemd[1]: nvidia-imex.service: Failed with result 'exit-code'."),
    ("11:59:21", "systemd[1]: nvidia-imex.service: Scheduled restart job, restart counter is at 1."),
    ("11:59:22", "systemd[1]: Started NVIDIA IMEX service."),
]
IMEX_KILLED = [  # gb-c06, 8 min before 4006's end
    ("16:52:00", "systemd[1]: nvidia-imex.service: Main process exited, code=killed, status=9/KILL"),
    ("16:52:00", "systemd[1]: nvidia-imex.service: Failed with result 'signal'."),
]
CLEAN_REBOOT = [  # gb-c05, an operator's reboot 20 s after 4005 ended
    ("14:00:20", "systemd[1]: Stopping NVIDIA IMEX service..."),
    ("14:00:21", "systemd[1]: nvidia-imex.service: Deactivated successfully."),
    ("14:00:21", "systemd[1]: Stopped NVIDIA IMEX service."),
    ("14:02:00", "kernel: Linux version 6.8.0-1017-nvidia-64k (buildd@bos03-arm64-013) (aarch64-linux-gnu-gcc-13)"),
    ("14:02:40", "systemd[1]: Starting NVIDIA IMEX service..."),
    ("14:02:41", "systemd[1]: Started NVIDIA IMEX service."),
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": SACCT}
    logs = {"gb-c02": (_short_iso, IMEX_DIES), "gb-c05": (_short_full, CLEAN_REBOOT),
            "gb-c06": (_rfc3164, IMEX_KILLED)}
    for i in range(1, 7):
        node = f"gb-c{i:02d}"
        write, extra = logs.get(node, (_short_iso, []))
        files[f"syslog/{DAY}/{node}.log"] = write(node, _benign(node) + extra)
    return run_hand_landing(tmp_path_factory.mktemp("imex"), files)


def test_a_failed_imex_service_is_the_multi_tray_jobs_infrastructure_fault(warehouse: Path) -> None:
    got = {r[0]: r[1:] for r in query_rows(warehouse, "SELECT job_id, attribution, rule, component, lost_gpu_hours "
                                                       "FROM marts.job_failure_attribution ORDER BY job_id")}
    assert got == {
        "4004": ("infrastructure", "failure event in window", "nvlink", 8.0),
        # the clean stop at the reboot is no evidence: the job's own exit
        "4005": ("user", FAILS, "user_application", 0.0),
        "4006": ("infrastructure", "failure event in window", "nvlink", 8.0),
    }
    # Only the failures are events (two lines each), none of the clean stop, start or restart lines.
    events = query_rows(warehouse, "SELECT node, strftime(ts, '%H:%M:%S'), kind, component, severity "
                                   "FROM core.node_events WHERE kind = 'imex_down' ORDER BY node, ts, event_id")
    assert events == [("gb-c02", "11:59:20", "imex_down", "nvlink", "high")] * 2 + \
                     [("gb-c06", "16:52:00", "imex_down", "nvlink", "high")] * 2
    assert query_rows(warehouse, "SELECT count(*) FROM core.node_events WHERE node = 'gb-c05' "
                                 "AND kind = 'imex_down'") == [(0,)]
    # Each failure is one-tray NVLink incident that killed its job, and the job names it.
    incidents = query_rows(warehouse, "SELECT nodes, component, affected_jobs FROM marts.hw_incidents ORDER BY start_ts")
    assert incidents == [(["gb-c02"], "nvlink", 1), (["gb-c06"], "nvlink", 1)]
    linked = query_rows(warehouse, "SELECT a.job_id, i.nodes FROM marts.job_failure_attribution a "
                                   "JOIN marts.hw_incidents i USING (incident_id) ORDER BY a.job_id")
    assert linked == [("4004", ["gb-c02"]), ("4006", ["gb-c06"])]
