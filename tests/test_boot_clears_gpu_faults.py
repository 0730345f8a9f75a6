"""A kernel boot clears a lasting GPU fault as the NVIDIA driver's load line does.

Job failure attribution treats a GPU fault whose catalog action is a GPU reset or a reboot (Xid 79, 95, 48,
119/120, fatal SXids) as lasting until its node logs a recovery from it (``catalog/recovery_events.csv``).
A node that rebooted logs the kernel's ``Linux version …`` banner (and x86's ``Command line: BOOT_IMAGE=…``),
log_patterns.csv kind ``kernel_boot``, whether or not the NVIDIA module's ``NVRM: loading NVIDIA …`` line
reaches syslog: the boot clears the fault too. It is no recovery of a component class: it ends no port's
``Link DOWN``, and it is informational (no failure, no incident member).

One hand-made landing, no node states, run through the whole pipeline:

* gpu009: Xid 79 at 18:05, booted at 18:08 (no driver load line); job 601 ran there 18:10–18:15 and FAILED
  1:0 → user. (It started after the Xid, so the fault was no evidence against it in any case: Slurm gave
  it the node afterwards.)
* gpu011: Xid 79 at 18:05, booted at 18:08; the 2-node job 602 (gpu011, gpu012) ran on from 16:00 and FAILED
  1:0 at 18:17, 12 min after the Xid (outside the 10-min window) → user: the fault was over at the boot.
* gpu010: Xid 79 at 20:00, no boot; the 2-node job 603 (gpu010, gpu013) FAILED 1:0 at 20:12 → infrastructure,
  pcie_bus, the GPU still off the bus: 16 GPUs × 0.5 h = 8.0 GPU-h (603 is 602 without the boot).
* gpu012: port ``Link DOWN`` at 21:00, booted at 21:02, no ``Link ACTIVE``; the 2-node job 604 (gpu012,
  gpu014) FAILED 1:0 at 21:15 → infrastructure, network, 8.0: a boot does not bring a port back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line

XID79 = "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
BANNER = ("Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, "
          "GNU ld (GNU Binutils for Ubuntu) 2.38) #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023")
CMDLINE = "Command line: BOOT_IMAGE=/boot/vmlinuz-5.15.0-91-generic root=/dev/mapper/vg0-root ro quiet"
DOWN = "mlx5_core 0000:0c:00.0 mlx5_1: Port: 1 Link DOWN"

CLUSTER = 'cluster: boots\ntimezone: UTC\nnodes: "gpu[009-014]"\ngpus_per_node: 8\n'
DAY = "2026-12-01"
NODES = [f"gpu{i:03d}" for i in range(9, 15)]


def _sacct_row(job_id: str, start: str, end: str, elapsed: str, nodes: str, n_nodes: int) -> str:
    return sacct_line(job_id, DAY, start, end, nodes, n_nodes, elapsed=elapsed)


SACCT = sacct_dump([
    _sacct_row("601", "18:10:00", "18:15:00", "00:05:00", "gpu009", 1),
    _sacct_row("602", "16:00:00", "18:17:00", "02:17:00", "gpu[011-012]", 2),
    _sacct_row("603", "18:30:00", "20:12:00", "01:42:00", "gpu[010,013]", 2),
    _sacct_row("604", "20:15:00", "21:15:00", "01:00:00", "gpu[012,014]", 2),
])

#: No node outages: only the cluster's registration, so the boot is the fault's only recovery.
EVENTS = ("Cluster|NodeName|TimeStart|TimeEnd|State|Reason|User|Duration|Event|ClusterNodes\n"
          "boots||2026-11-01T00:00:00|Unknown||Cluster Registered TRES||30-00:00:00|Cluster|gpu[009-014]\n")

KERNEL = {
    "gpu009": [("18:05:00", XID79), ("18:08:00", BANNER), ("18:08:00", CMDLINE)],
    "gpu011": [("18:05:00", XID79), ("18:08:00", BANNER), ("18:08:00", CMDLINE)],
    "gpu010": [("20:00:00", XID79)],
    "gpu012": [("21:00:00", DOWN), ("21:02:00", BANNER), ("21:02:00", CMDLINE)],
}


def _log(node: str) -> str:
    """The node's kernel lines among benign ones that cover the day."""
    benign = [("00:00:05", "systemd[1]: Started Session 1 of user root."),
              ("23:59:50", "CRON[4242]: (root) CMD (/usr/sbin/nhc)")]
    lines = sorted(benign + [(t, f"kernel: {m}") for t, m in KERNEL.get(node, [])])
    return "".join(f"{DAY}T{t}.000000+00:00 {node} {m}\n" for t, m in lines)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {"cluster.yaml": CLUSTER, "sacct/sacct_2026-12-01.psv": SACCT, "slurm_events/events_2026-12-01.txt": EVENTS}
    files.update({f"syslog/{DAY}/{n}.log": _log(n) for n in NODES})
    return run_hand_landing(tmp_path_factory.mktemp("boots"), files)


def test_the_boot_lines_are_informational_kernel_boot_events(warehouse: Path) -> None:
    got = query_rows(warehouse, "SELECT node, kind, component, cause_class, severity, action, count(*) "
                                "FROM core.node_events WHERE kind = 'kernel_boot' GROUP BY ALL ORDER BY node")
    assert got == [(n, "kernel_boot", "os", "informational", "info", "IGNORE", 2) for n in ("gpu009", "gpu011", "gpu012")]


def test_a_boot_clears_a_lasting_gpu_fault_but_not_a_link(warehouse: Path) -> None:
    got = {r[0]: r[1:] for r in query_rows(warehouse, "SELECT job_id, attribution, rule, component, lost_gpu_hours "
                                                       "FROM marts.job_failure_attribution ORDER BY job_id")}
    assert got == {
        "601": ("user", "non-zero exit without infrastructure evidence", "user_application", 0.0),
        # the Xid 79 12 min before the end was over: gpu011 booted at 18:08
        "602": ("user", "non-zero exit without infrastructure evidence", "user_application", 0.0),
        # the same without the boot: the GPU still off the bus
        "603": ("infrastructure", "failure event in window", "pcie_bus", 8.0),
        # a boot is no recovery of a port: still down
        "604": ("infrastructure", "failure event in window", "network", 8.0),
    }


def test_boot_lines_join_no_incident(warehouse: Path) -> None:
    # One incident per fault (the Xid 79s, the port down); the boot lines are no member of any.
    members = query_rows(warehouse, "SELECT e.node, e.kind FROM marts.hw_incident_members AS m "
                                    "JOIN core.node_events AS e USING (event_id) ORDER BY e.node")
    assert members == [("gpu009", "xid"), ("gpu010", "xid"), ("gpu011", "xid"), ("gpu012", "ib_link_down")]


def test_incident_repairs_without_node_states(warehouse: Path) -> None:
    # Without node states or a failing health check, a reboot after a lasting GPU fault (its catalog action a
    # GPU reset or a reboot) is its repair, as attribution ends the fault: gpu009's and gpu011's Xid 79 at
    # 18:05 are repaired by the boot at 18:08 (3 min). gpu010 never booted: no repair time.
    got = query_rows(warehouse, "SELECT nodes[1], repair_state, repair_source, strftime(repaired_ts, '%H:%M'), "
                                "round(hours_to_repair * 60, 6) FROM marts.incident_repairs "
                                "WHERE component = 'pcie_bus' ORDER BY nodes[1]")
    assert got == [("gpu009", "repaired", "reboot", "18:08", 3.0), ("gpu010", "not_drained", None, None, None),
                   ("gpu011", "repaired", "reboot", "18:08", 3.0)]


def test_a_boot_ends_a_lasting_gpu_faults_repair(warehouse: Path) -> None:
    got = query_rows(warehouse, "SELECT nodes[1], repair_source, strftime(repaired_ts, '%H:%M') "
                                "FROM marts.incident_repairs WHERE component = 'pcie_bus' AND nodes[1] = 'gpu009'")
    assert got == [("gpu009", "reboot", "18:08")]


def test_a_boot_ends_no_network_incident(warehouse: Path) -> None:
    # gpu012's port went down at 21:00 and the node booted at 21:02 without the port coming back: still down.
    got = query_rows(warehouse, "SELECT nodes[1], component_class, repair_state, repair_source "
                                "FROM marts.incident_repairs WHERE component_class <> 'gpu' ORDER BY nodes[1]")
    assert got == [("gpu012", "network", "not_drained", None)]
