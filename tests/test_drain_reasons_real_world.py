"""Drain reasons as operators and Slurm really write them (``sacctmgr show event`` Reason,
``scontrol update ... reason=``): each classifies to what it means for repair linking
(``marts.incident_repairs``) and the node-availability SLI (planned maintenance leaves its total).

Precedence the rule file encodes, tested from both sides below:

* words naming a fault beat words that only describe the remedy or when it happens (patch, upgrade,
  firmware, maintenance, scheduled): ``GPU ECC errors, waiting for driver patch`` is a GPU ECC fault;
  ``driver 570 upgrade`` with no fault named is planned work;
* a power cycle or reboot is an action, not a power supply fault; a fault named beside it wins;
* a reboot nobody planned is ``unexpected_reboot`` (cause unknown), not requested maintenance.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.failures.drain_reasons import classify_reasons, load_drain_reason_rules
from gpusre.models.reliability.node_availability import availability_by_component, down_segments, node_availability_daily
from gpusre.models.reliability.repair_times import link_incidents

UTC = timezone.utc

#: (reason, reason_class, component, availability_class, rule_id)
CASES = [
    # --- misclassifications an evaluator found (before -> after in the comment) ---
    ("power cycle", "reboot", "os", "maintenance", "reboot"),                        # was power / host_power
    ("Power cycled node", "reboot", "os", "maintenance", "reboot"),
    ("GPU ECC errors, waiting for driver patch", "gpu_ecc", "gpu_memory", "hardware", "gpu_ecc"),  # was planned
    ("unexpected reboot", "unexpected_reboot", "os", "unknown", "unexpected_reboot"),  # was reboot (maintenance)
    ("xid79", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),                              # was unknown
    ("XID_79", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),
    ("Xid79", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),
    ("Xid 79", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),
    ("job 1234 kill task failed", "kill_task_failed", "slurm", "software", "slurm_kill_task_failed"),  # was unknown
    ("BMC unreachable", "bmc", "network", "hardware", "bmc"),                        # was power / host_power
    ("update firmware on NIC after link flaps", "network", "network", "hardware", "network"),  # was planned
    # --- Slurm's own reasons ---
    ("Not responding", "not_responding", "os", "unknown", "slurm_not_responding"),
    ("Kill task failed", "kill_task_failed", "slurm", "software", "slurm_kill_task_failed"),
    ("Node unexpectedly rebooted", "unexpected_reboot", "os", "unknown", "slurm_unexpected_reboot"),
    ("Node silently failed and came back", "unexpected_reboot", "os", "unknown", "slurm_unexpected_reboot"),
    ("Prolog error", "prolog_epilog_error", "slurm", "software", "slurm_prolog_epilog"),
    ("Epilog error", "prolog_epilog_error", "slurm", "software", "slurm_prolog_epilog"),
    ("Low RealMemory", "slurm_config", "slurm", "software", "slurm_config"),
    ("batch job complete failure", "slurm_config", "slurm", "software", "slurm_config"),
    ("duplicate jobid", "slurm_config", "slurm", "software", "slurm_config"),
    ("slurmd died", "slurm_config", "slurm", "software", "slurm_config"),
    ("reboot requested", "reboot", "os", "maintenance", "reboot"),
    ("NODE_FAIL", "not_responding", "os", "unknown", "not_responding"),              # was unknown
    # --- health checks: a check named after a component is that component's fault ---
    ("NHC: check_gpu failed", "gpu", "gpu", "hardware", "gpu"),                      # was health_check
    ("NHC: check_nv_healthmon: GPU 0000:18:00.0 is lost", "gpu", "gpu", "hardware", "gpu"),
    ("NHC: check_nvlink failed", "nvlink", "nvlink", "hardware", "nvlink"),
    ("NHC: check_hw_ib failed", "network", "network", "hardware", "network"),
    ("NHC: check_hw_physmem: Actual RAM size (2063937 kB) less than minimum", "host_memory", "host_memory",
     "hardware", "host_memory"),
    ("drained by health check", "health_check", "other", "health_check", "health_check"),
    ("NHC: check_ps_service: sshd not running", "health_check", "other", "health_check", "health_check"),
    # --- operator notes ---
    ("gpu fell off bus", "gpu", "gpu", "hardware", "gpu"),
    ("GSP firmware hang (driver 550 bug)", "gpu", "gpu", "hardware", "gpu"),         # was planned maintenance
    ("HW: replace DIMM", "host_memory", "host_memory", "hardware", "host_memory"),
    ("RMA", "hardware_repair", "other", "hardware", "hardware_repair"),
    ("IB port down", "network", "network", "hardware", "network"),
    ("replace NIC", "network", "network", "hardware", "network"),                   # was hardware_repair / other
    ("ECC", "gpu_ecc", "gpu_memory", "hardware", "gpu_ecc"),
    ("nvlink errors", "nvlink", "nvlink", "hardware", "nvlink"),
    ("thermal", "thermal", "thermal", "hardware", "thermal"),
    ("fan failure", "thermal", "thermal", "hardware", "thermal"),
    ("coolant leak", "thermal", "thermal", "hardware", "thermal"),
    ("memory leak in slurmd", "slurm_config", "slurm", "software", "slurm_config"),  # was thermal
    ("lustre mount missing", "filesystem", "storage", "software", "filesystem"),
    ("disk full /tmp", "disk_full", "local_disk", "software", "disk_full"),          # was local_disk / hardware
    ("/tmp is full", "disk_full", "local_disk", "software", "disk_full"),
    ("No space left on device", "disk_full", "local_disk", "software", "disk_full"),
    # NHC's capacity checks name a filling file system, not a broken one (outside probe K); a node-local
    # one is the node's housekeeping, not shared storage's (outside probe O)
    ("NHC: check_fs_free: /tmp has only 2% free (7.1GB), minimum is 5%", "disk_full", "local_disk", "software", "disk_full"),
    ("check_fs_iused: /var has only 1% of inodes free", "disk_full", "local_disk", "software", "disk_full"),
    ("NHC: check_fs_free: /lustre has only 1% free", "disk_full", "storage", "software", "disk_full_shared"),
    ("/scratch is full", "disk_full", "storage", "software", "disk_full_shared"),
    ("ENOSPC on /gpfs/projects", "disk_full", "storage", "software", "disk_full_shared"),
    ("NHC: check_fs_free: /local/scratch has only 3% free", "disk_full", "local_disk", "software", "disk_full"),
    ("nvme0n1 SMART critical warning", "local_disk", "local_disk", "hardware", "local_disk"),
    ("PSU 2 failed", "power", "host_power", "hardware", "power"),
    ("lost power - PDU tripped", "power", "host_power", "hardware", "power"),
    ("no power on both feeds - facilities ticket", "power", "host_power", "hardware", "power"),
    ("kernel panic", "os", "os", "software", "os"),
    ("hung", "not_responding", "os", "unknown", "not_responding"),
    ("OS reimage", "planned_maintenance", "other", "maintenance", "planned_maintenance"),
    ("Kernel upgrade", "planned_maintenance", "other", "maintenance", "planned_maintenance"),
    # --- an evaluator's second round: planned work done before anything fails, benchmarks, burn-in ---
    ("pre-emptive HCA swap", "planned_maintenance", "other", "maintenance", "planned_proactive_swap"),  # was network
    ("proactive GPU swap", "planned_maintenance", "other", "maintenance", "planned_proactive_swap"),  # was gpu
    ("preventive DIMM replacement", "planned_maintenance", "other", "maintenance", "planned_proactive_swap"),
    ("kernel 5.15 rollout", "planned_maintenance", "other", "maintenance", "planned_rollout"),  # was os / software
    ("burn-in", "planned_maintenance", "other", "maintenance", "planned_burn_in"),   # was unknown
    ("drain for HPL run", "planned_maintenance", "other", "maintenance", "planned_benchmark"),  # was unknown
    ("NCCL tests", "planned_maintenance", "other", "maintenance", "planned_benchmark"),
    ("cable reseat", "network", "network", "hardware", "network_cable"),            # was unknown
    ("nvidia driver upgrade failed", "software_update_failed", "driver", "software", "driver_update_failed"),  # was gpu
    ("kernel upgrade failed", "software_update_failed", "os", "software", "software_update_failed"),
    # --- judged ambiguous and left unclassified (unknown counts as unplanned down time) ---
    ("cordoned for testing", "unknown", "other", "unknown", None),
]


def _classify(reasons: list[str]) -> list[tuple[str, str, str, str | None]]:
    return classify_reasons(pl.Series(reasons, dtype=pl.String)).rows()


@pytest.mark.parametrize(("reason", "reason_class", "component", "availability", "rule_id"), CASES,
                         ids=[c[0] for c in CASES])
def test_real_world_reason(reason: str, reason_class: str, component: str, availability: str,
                           rule_id: str | None) -> None:
    assert _classify([reason]) == [(reason_class, component, availability, rule_id)]


# Both sides of "a fault named beats the remedy": planned work only when no fault is named.
PLANNED = [
    "driver 570 upgrade", "scheduled maintenance", "firmware update", "planned maintenance: BIOS upgrade",
    "planned maintenance: GPU firmware and driver upgrade", "planned maintenance: leaf switch replacement",
    "GPU driver upgrade", "NVSwitch firmware upgrade", "fabric manager upgrade", "NIC firmware update",
    "BIOS update", "rolling reboot for kernel patch", "maintenance", "MAINT", "down for maintenance",
    "draining for OS reimage", "maintenance window",
]
FAULT_WITH_REMEDY = [
    ("GPU ECC errors, waiting for driver patch", "gpu_ecc"),
    ("update firmware on NIC after link flaps", "network"),
    ("Xid 79 - firmware update pending", "gpu_xid"),
    ("DIMM errors - BIOS update", "host_memory"),
    ("IB link down - upgrading mlx5 firmware", "network"),
    ("nvlink errors, fabric manager update", "nvlink"),
    ("kernel panic, reimage", "os"),
    ("firmware upgrade to fix GPU fell off the bus", "gpu"),
    ("scheduled RMA for ECC errors", "gpu_ecc"),  # an RMA is a repair; 'scheduled' alone declares no planned outage
    ("Xid 79 on GPU 3, planned maintenance Friday", "gpu_xid"),  # the fault came first: the drain's cause
    ("maintenance: GPU xid 79", "gpu_xid"),  # a repair logged as maintenance
    ("unplanned maintenance: replace failed PSU", "power"),
    ("emergency change CHG-1234: GPU fell off the bus", "gpu"),
    ("Xid 79 on GPU 3; CHG-5512 to swap the GPU", "gpu_xid"),  # sites open a change for every RMA swap
    ("not planned - maintenance for DIMM errors", "host_memory"),
    ("unexpected reboot during firmware update", "unexpected_reboot"),
    ("proactive GPU swap after Xid 79", "gpu_xid"),
    ("HPL run: Xid 79 on GPU 2", "gpu_xid"),
    ("NCCL tests failing on IB", "network"),
    ("burn-in failed: DIMM errors", "host_memory"),
    ("driver install failed: GPU fell off the bus", "gpu"),
    ("GPU failed after driver update", "gpu"),
]


# A reason that declares the outage planned (it leads with planned / scheduled maintenance or a maintenance
# window, or leads with a change ticket) is planned maintenance even when it names the fault the planned work
# fixes: the node served jobs until the change. (Rule declared_planned_work; the first case was
# hardware_repair, the second power, both unplanned hardware down time.)
DECLARED_PLANNED = [
    "Planned maintenance: replace bad HGX baseboard batch (CHG-4412)",
    "planned maintenance: replace failed PSU",
    "Scheduled maintenance - swap defective HCA",
    "down for planned maintenance: bad cable",
    "[ops] planned outage: replace broken fan",
    "jdoe: Planned-Maint replace bad PSU",
    "maintenance window: GPU xid 79 fix",
    "CRQ000123 swap faulty DIMM",
    "change request 881: replace broken fan",
    "scheduled downtime",
]


@pytest.mark.parametrize("reason", DECLARED_PLANNED)
def test_declared_planned_work_is_maintenance_even_naming_a_fault(reason: str) -> None:
    assert _classify([reason])[0] == ("planned_maintenance", "other", "maintenance", "declared_planned_work")


@pytest.mark.parametrize(("reason", "reason_class"), [
    ("planned maintenance: kernel upgrade failed", "software_update_failed"),  # the planned work broke
    ("planned maintenance: nvidia driver upgrade failed", "software_update_failed"),
])
def test_planned_work_that_failed_is_software_down_time(reason: str, reason_class: str) -> None:
    assert _classify([reason])[0][0::2] == (reason_class, "software")


@pytest.mark.parametrize("reason", PLANNED)
def test_planned_work_without_a_fault_is_maintenance(reason: str) -> None:
    assert _classify([reason])[0][:3] == ("planned_maintenance", "other", "maintenance")


@pytest.mark.parametrize(("reason", "reason_class"), FAULT_WITH_REMEDY)
def test_a_fault_named_beats_planned_work_words(reason: str, reason_class: str) -> None:
    out = _classify([reason])[0]
    assert out[0] == reason_class
    assert out[2] != "maintenance"


@pytest.mark.parametrize(("reason", "reason_class"), [
    ("power cycle", "reboot"), ("powercycle", "reboot"), ("IPMI power cycle", "reboot"),
    ("power cycled via BMC", "reboot"), ("Reboot ASAP", "reboot"),
    ("PSU failed, power cycled", "power"), ("GPU fell off the bus, power cycle", "gpu"),
    ("rebooting after xid 79", "gpu_xid"), ("BMC not responding", "bmc"), ("ipmi timeout", "bmc"),
    ("unplanned reboot", "unexpected_reboot"), ("node rebooted unexpectedly", "unexpected_reboot"),
    ("unexpected reboot after PSU failure", "power"),
])
def test_reboot_power_and_bmc_precedence(reason: str, reason_class: str) -> None:
    assert _classify([reason])[0][0] == reason_class


def test_every_rule_example_is_its_own_rule() -> None:
    rules = load_drain_reason_rules()
    # An Xid code names its component by the Xid catalog (probe AS, F3): the gpu_xid example's Xid 79 is the GPU's
    # PCIe link (xid.csv: pcie_bus), not the rule's fallback gpu.
    refined = {"gpu_xid": "pcie_bus"}
    assert _classify(rules["example"].to_list()) == [
        (r["reason_class"], refined.get(r["rule_id"], r["component"]), r["availability_class"], r["rule_id"])
        for r in rules.iter_rows(named=True)]


def _states(node_reasons: list[tuple[str, str, int, int]]) -> pl.DataFrame:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    frame = pl.DataFrame(
        [(n, r, t0 + timedelta(hours=a), t0 + timedelta(hours=b)) for n, r, a, b in node_reasons],
        schema={"node": pl.String, "reason": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                "end_ts": pl.Datetime("us", "UTC")}, orient="row")
    return pl.concat([frame, classify_reasons(frame["reason"])], how="horizontal")


def test_repairs_link_a_gpu_incident_to_a_power_cycle_but_not_to_a_bmc_drain() -> None:
    """A power cycle is what any fault's repair can look like; a BMC that does not answer is a
    management-network fault, not the GPU's repair."""
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    states = _states([("n1", "power cycle", 1, 3), ("n2", "BMC unreachable", 1, 3),
                      ("n3", "GPU ECC errors, waiting for driver patch", 1, 5)])
    incidents = pl.DataFrame({"incident_id": ["i1", "i2", "i3"], "component": ["gpu", "gpu", "gpu_memory"],
                              "start_ts": [t0, t0, t0], "nodes": [["n1"], ["n2"], ["n3"]]})
    out = {r["incident_id"]: r for r in link_incidents(incidents, states).iter_rows(named=True)}
    assert (out["i1"]["linked_nodes"], out["i1"]["drain_reason_class"], out["i1"]["hours_to_repair"]) == (1, "reboot", 3.0)
    assert out["i2"]["linked_nodes"] == 0
    assert (out["i3"]["linked_nodes"], out["i3"]["drain_reason_class"], out["i3"]["hours_to_repair"]) == (1, "gpu_ecc", 5.0)


def test_a_fault_waiting_for_a_patch_stays_in_the_availability_slis_down_time() -> None:
    """Planned maintenance leaves the SLI's total; a GPU ECC fault waiting for a patch must not."""
    states = _states([("n1", "GPU ECC errors, waiting for driver patch", 0, 4), ("n2", "driver 570 upgrade", 0, 4)])
    daily = node_availability_daily(states, ["n1", "n2"], datetime(2026, 3, 1).date(), datetime(2026, 3, 1).date(),
                                    as_of=datetime(2026, 3, 2, tzinfo=UTC))
    rows = {r["node"]: r for r in daily.iter_rows(named=True)}
    assert (rows["n1"]["down_hardware_hours"], rows["n1"]["down_maintenance_hours"]) == (4.0, 0.0)
    assert (rows["n2"]["down_hardware_hours"], rows["n2"]["down_maintenance_hours"]) == (0.0, 4.0)


def test_a_declared_planned_change_leaves_the_availability_slis_total() -> None:
    """The probe's case by hand: 2 nodes, n1 drained 06:00-18:00 for "Planned maintenance: replace bad HGX
    baseboard batch (CHG-4412)" (no cluster.yaml window), n2 for "maintenance: GPU xid 79" 06:00-10:00.
    n1: 12 h maintenance, 0 h down; n2: 4 h hardware. Scheduled = 48 - 12 = 36 h; availability
    1 - 4/36 = 0.8889 (it was 1 - 16/48 = 0.6667 while "bad" made the change a hardware repair)."""
    states = _states([("n1", "Planned maintenance: replace bad HGX baseboard batch (CHG-4412)", 6, 18),
                      ("n2", "maintenance: GPU xid 79", 6, 10)])
    daily = node_availability_daily(states, ["n1", "n2"], datetime(2026, 3, 1).date(), datetime(2026, 3, 1).date(),
                                    as_of=datetime(2026, 3, 2, tzinfo=UTC))
    rows = {r["node"]: r for r in daily.iter_rows(named=True)}
    assert (rows["n1"]["down_hardware_hours"], rows["n1"]["down_maintenance_hours"]) == (0.0, 12.0)
    assert (rows["n2"]["down_hardware_hours"], rows["n2"]["down_maintenance_hours"]) == (4.0, 0.0)
    by_comp = availability_by_component(daily, down_segments(states, datetime(2026, 3, 2, tzinfo=UTC)),
                                        states)
    cluster = by_comp.filter((pl.col("period_type") == "all") & (pl.col("component_class") == "all")).row(0, named=True)
    assert (cluster["down_node_hours"], cluster["scheduled_node_hours"]) == (4.0, 36.0)
    assert cluster["availability"] == pytest.approx(1 - 4 / 36)
