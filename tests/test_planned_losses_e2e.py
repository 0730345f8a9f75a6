"""Probe AG's F5-F7 through the real pipeline: a hand-made landing with the probe's own lines.

4 nodes h100-[001-004] × 8 GPUs, UTC, 2026-11-09 … 2026-11-11; cluster.yaml maintenance window 11-10 06:00-14:00
on h100-001 (drained ``maint: BIOS 2.3 + fw`` 06:00-13:30). Expected values worked out by hand (Δ = 3600 s,
u0 = 300 s, 8 GPUs: a run interrupted after ≥ 1 h loses 8 × 0.5 = 4.0 GPU-h, its restart 8 × 300 s = 0.667):

* 1001: REQUEUED on h100-001 at 11-10 06:00:30 by the maintenance (planned), requeue started 06:30 on h100-002:
  4.667 GPU-h, goodput's ``lost_maintenance`` on 11-10, one interruption of its ETTR run;
* 1003: PREEMPTED on h100-003 at 11-10 05:55: 4.0 GPU-h of ``lost_preemption``, no infrastructure interruption;
* 1009: FAILED on h100-004 at 11-11 03:00:30, Xid 119 at 03:00: infrastructure, 4.0 GPU-h ``lost_failure``;
  ``Reboot ASAP`` on h100-004 03:10-03:25 is that Xid's repair: 0.25 h of hardware down time, not maintenance;
* drain reasons on 11-11: ``PM`` (h100-003) planned; ``Reboot ASAP`` with no fault (h100-002) planned;
  ``OPS-4411`` (h100-002) unknown, template ``<TICKET>``; ``scheduled maintenance CRQ000000012345`` (h100-001)
  planned, template ``scheduled maintenance <TICKET>``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hand_landing import SACCT_HEADER, query_rows, run_hand_landing, slurm_duration

TRES = "billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"
#: (job, user, uid, name, node, submit, start, end, state, exit), as the probe's sacct lines.
JOBS = [
    ("2001", "alice", 20001, "pretrain-a", "h100-004", "2026-11-09T00:00:00", "2026-11-09T00:00:00", "2026-11-09T06:00:00", "COMPLETED", "0:0"),
    ("1001", "judy", 20004, "moe-j", "h100-001", "2026-11-09T21:55:00", "2026-11-09T22:00:00", "2026-11-10T06:00:30", "REQUEUED", "0:0"),
    ("1001", "judy", 20004, "moe-j", "h100-002", "2026-11-10T06:00:30", "2026-11-10T06:30:00", "2026-11-10T10:30:00", "COMPLETED", "0:0"),
    ("1003", "lena", 20008, "rm-l", "h100-003", "2026-11-09T23:55:00", "2026-11-10T00:00:00", "2026-11-10T05:55:00", "PREEMPTED", "0:0"),
    ("1009", "tina", 20017, "gpt-t", "h100-004", "2026-11-10T19:55:00", "2026-11-10T20:00:00", "2026-11-11T03:00:30", "FAILED", "1:0"),
    ("2007", "grace", 20012, "distill-g", "h100-003", "2026-11-11T12:05:00", "2026-11-11T12:10:00", "2026-11-11T23:30:00", "COMPLETED", "0:0"),
]
#: sacctmgr show event lines per dump day (node, start, end, state, reason).
EVENTS = {
    "2026-11-10": [("h100-001", "2026-11-10T06:00:00", "2026-11-10T13:30:00", "DRAIN", "maint: BIOS 2.3 + fw")],
    "2026-11-11": [("h100-004", "2026-11-11T03:10:00", "2026-11-11T03:25:00", "DOWN+DRAIN+REBOOT_ISSUED", "Reboot ASAP"),
                   ("h100-003", "2026-11-11T08:00:00", "2026-11-11T08:30:00", "DRAIN", "PM"),
                   ("h100-002", "2026-11-11T09:00:00", "2026-11-11T09:30:00", "IDLE+DRAIN+REBOOT_REQUESTED", "Reboot ASAP"),
                   ("h100-002", "2026-11-11T10:00:00", "2026-11-11T10:30:00", "DRAIN", "OPS-4411"),
                   ("h100-001", "2026-11-11T14:00:00", "2026-11-11T14:30:00", "DRAIN",
                    "scheduled maintenance CRQ000000012345")],
}
XID_119 = ("kernel: [961200.000000] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=python3, Timeout after 6s of "
           "waiting for RPC response from GPU4 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801348 0x4).")
BOOT = ("kernel: [    0.000000] Linux version 5.15.0-122-generic (buildd@lcy02-amd64-034) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
        "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024")
#: Node-log lines beyond the routine ones every node logs every few hours.
LOG_LINES = [("h100-004", "2026-11-11T03:00:00", XID_119), ("h100-004", "2026-11-11T03:00:06", XID_119),
             ("h100-004", "2026-11-11T03:15:00", BOOT)]
CLUSTER = """cluster: h100
timezone: UTC
nodes: "h100-[001-004]"
gpus_per_node: 8
maintenance:
  - {start: "2026-11-10T06:00:00Z", end: "2026-11-10T14:00:00Z", nodes: "h100-001", reason: "maint_1110: BIOS 2.3 + GPU firmware"}
"""


def landing() -> dict[str, str]:
    files = {"cluster.yaml": CLUSTER}
    T = datetime.fromisoformat
    for day in ("2026-11-09", "2026-11-10", "2026-11-11"):
        rows = [SACCT_HEADER] + [
            f"{j}|{j}|{name}|{user}|{uid}|{user}|llm|gpu|normal|{state}|{ex}|{sub}|{sub}|{st}|{en}|{slurm_duration(T(st), T(en))}|"
            f"1-00:00:00|1|128|{TRES}|{node}|"
            for j, user, uid, name, node, sub, st, en, state, ex in JOBS if en.startswith(day)]
        files[f"sacct/sacct_{day}.psv"] = "\n".join(rows) + "\n"
        cut = T(day) + timedelta(days=1, minutes=5)
        ev = ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User",
              f"h100||2026-10-01T00:00:00|Unknown|{slurm_duration(T('2026-10-01T00:00:00'), cut)}||Cluster Registered TRES|"]
        ev += [f"h100|{n}|{s}|{e}|{slurm_duration(T(s), T(e))}|{state}|{reason}|root(0)" for n, s, e, state, reason in EVENTS.get(day, [])]
        files[f"slurm_events/events_{day}.txt"] = "\n".join(ev) + "\n"
        for k in range(1, 5):
            node = f"h100-{k:03d}"
            routine = [(f"{day}T00:00:05", "chronyd[2031]: Selected source 10.0.0.5 (ntp1.cluster.internal)")]
            routine += [(f"{day}T{h:02d}:01:1{k}", f"CRON[1000{h:02d}]: (root) CMD (/usr/sbin/nhc -c /etc/nhc/nhc.conf -t 120)")
                        for h in range(0, 24, 3)]
            lines = routine + [(ts, msg) for n, ts, msg in LOG_LINES if n == node and ts.startswith(day)]
            files[f"syslog/{day}/{node}.log"] = "".join(
                f"{T(ts).strftime('%b %d %H:%M:%S')} {node} {msg}\n" for ts, msg in sorted(lines))
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("planned_losses"), landing())


def test_goodput_charges_planned_and_preempted_work_as_their_own_parts(warehouse: Path) -> None:
    got = {r[0].day: r[1:] for r in query_rows(warehouse, """
        SELECT day, lost_failure_gpu_hours, lost_restart_gpu_hours, infra_interruptions, lost_preemption_gpu_hours,
               preemptions, lost_maintenance_gpu_hours, planned_interruptions, largest_loss
        FROM marts.goodput_daily ORDER BY day""")}
    # the probe's goodput said 1 infrastructure interruption and 4.0 GPU-h lost to failures on 11-10 (1003's
    # preemption), and nothing of 1001's planned requeue
    assert got[10] == (0.0, 0.0, 0, pytest.approx(4.0), 1, pytest.approx(4 + 2 / 3), 1, "idle")
    assert got[11] == (pytest.approx(4.0), 0.0, 1, 0.0, 0, 0.0, 0, "idle")
    # ETTR: 1001's run was interrupted once, by the maintenance (the probe: 0 interruptions)
    assert query_rows(warehouse, "SELECT interruptions, lost_work_s, restart_overhead_s FROM marts.ettr_runs "
                                 "WHERE run_id = '1001'") == [(1, 1800.0, 300)]
    # the infrastructure's attribution rows are what goodput charges the infrastructure
    assert query_rows(warehouse, "SELECT job_id, attribution, lost_gpu_hours FROM marts.job_failure_attribution "
                                 "WHERE attribution <> 'none'") == [("1009", "infrastructure", pytest.approx(4.0))]


def test_the_planned_row_costs_what_goodput_charges(warehouse: Path) -> None:
    rows = query_rows(warehouse, "SELECT job_id, instance_no, lost_gpu_hours FROM marts.instance_failure_attribution "
                                 "WHERE attribution = 'planned'")
    assert rows == [("1001", 1, pytest.approx(4 + 2 / 3))]  # the probe: 4.0, no restart overhead
    (maint,), = query_rows(warehouse, "SELECT sum(lost_maintenance_gpu_hours) FROM marts.goodput_daily")
    assert maint == pytest.approx(rows[0][2])


def test_drain_reason_spellings(warehouse: Path) -> None:
    got = {r[0]: r[1:] for r in query_rows(warehouse, "SELECT DISTINCT reason, availability_class, reason_template "
                                                      "FROM core.node_states")}
    assert got["PM"][0] == "maintenance"                                      # was unknown
    assert got["OPS-4411"] == ("unknown", "<TICKET>")                         # was <NODE>
    assert got["scheduled maintenance CRQ000000012345"] == ("maintenance", "scheduled maintenance <TICKET>")
    down = {r[0]: r[1:] for r in query_rows(warehouse, """
        SELECT node, down_hardware_hours, down_maintenance_hours, down_other_hours
        FROM marts.node_availability_daily WHERE day = DATE '2026-11-11'""")}
    assert down["h100-004"] == (0.25, 0.0, 0.0)   # Reboot ASAP after its Xid 119: the fault's repair (was maintenance)
    assert down["h100-003"] == (0.0, 0.5, 0.0)    # PM
    assert down["h100-002"] == (0.0, 0.5, 0.5)    # Reboot ASAP with no fault; OPS-4411 unknown
    assert down["h100-001"] == (0.0, 0.5, 0.0)


def test_slo_report_calls_no_day_a_maintenance_day(warehouse: Path) -> None:
    """Every day lost most to idle capacity (4 nodes, a few jobs): no worst day is 'a maintenance day', though
    11-10 and 11-11 had planned maintenance; the losses to preemption and planned maintenance show apart."""
    report = next((warehouse.parent.parent / "reports").glob("slo-*.md")).read_text()
    goodput = report[report.index("## Goodput"):]
    goodput = goodput[:goodput.index("\n## ")]
    takeaways = [line for line in goodput.splitlines() if line.startswith("- **")]
    assert len(takeaways) == 2 and "worst day" in takeaways[1]
    assert not any("a maintenance day" in line for line in takeaways)
    assert "| Lost to preemption | 4 |" in goodput and "| Lost to planned maintenance | 5 |" in goodput
