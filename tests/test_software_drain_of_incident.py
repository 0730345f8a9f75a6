"""A software-class drain naming a part's class (a file-system mount check: ``storage``) on an outage that
``marts.incident_repairs``' link rule links to a hardware incident of that same component takes the incident's cause in
node availability, availability by component and node_hardware_loss (models/reliability/node_availability.py,
outage_causes; probe AU F2). Without such an incident it stays software ("other" down time). Also: an NHC drain
naming a part counts under that part's class, one naming none (``check_ps_service``) under health_check.
Hand-computed values; the probe's own lines plus other file systems (GPFS, NFS) and conventions."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing, sacct_dump, sacct_line, slurm_duration
from hand_node_states import classified_states as _states, one_node_incidents as _incidents

from gpusre.models.reliability.node_availability import (
    availability_by_component,
    down_segments,
    node_availability_daily,
    outage_causes,
)
from gpusre.models.reliability.repair_times import incident_outage_links, link_incidents

UTC = timezone.utc
DAY = date(2026, 11, 11)
#: The probe's gpu018 drain, verbatim (two spaces after the colon, as NHC prints it).
LUSTRE_DRAIN = "NHC: check_fs_mount_rw:  /lustre not mounted"


def t(hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, 11, hour, minute, tzinfo=UTC)


def _marts(states: pl.DataFrame, incidents: pl.DataFrame | None) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, float]]:
    """What assets/node_states.py node_state_marts does: causes, daily rows, unplanned down hours by class."""
    links = incident_outage_links(incidents, states) if incidents is not None else None
    caused = outage_causes(states, links)
    as_of = t(0) + timedelta(days=1)
    daily = node_availability_daily(caused, sorted(set(states["node"])), DAY, DAY, as_of=as_of)
    by_component = availability_by_component(daily, down_segments(caused, as_of, since=t(0)), caused)
    by_class = {c: round(h, 4) for c, h in by_component.filter(pl.col("period_type") == "all",
                                                              pl.col("component_class") != "all")
                .select("component_class", "down_node_hours").rows()}
    return caused, daily, by_class


def _down(daily: pl.DataFrame) -> dict[str, tuple[float, float, float, float]]:
    """(hardware, maintenance, health_check, other) down hours per node, rounded to 4 places."""
    cols = ("down_hardware_hours", "down_maintenance_hours", "down_health_check_hours", "down_other_hours")
    return {r[0]: tuple(round(v, 4) for v in r[1:]) for r in daily.select("node", *cols).rows()}


# -- the probe's case ------------------------------------------------------------------------------------------

def test_mount_check_drain_of_a_storage_incident_is_its_hardware_down_time() -> None:
    """gpu018: LustreError 13:00 (storage incident), NHC drain ``check_fs_mount_rw: /lustre not mounted``
    13:10-14:10: 1.0 h hardware, storage (was 1.0 h other); incident_repairs links the same drain."""
    states = _states([("gpu018", t(13, 10), t(14, 10), LUSTRE_DRAIN)])
    assert states.select("reason_component", "availability_class").row(0) == ("storage", "software")
    incidents = _incidents([("inc-lustre", "storage", t(13), "gpu018")])
    caused, daily, by_class = _marts(states, incidents)
    assert caused.select("availability_class", "reason_component", "component_class", "class_source").row(0) == (
        "hardware", "storage", "storage", "incident")
    assert _down(daily) == {"gpu018": (1.0, 0.0, 0.0, 0.0)}
    assert by_class == {"storage": 1.0}
    repair = link_incidents(incidents, states).row(0, named=True)
    assert (repair["drain_start_ts"], repair["back_in_service_ts"]) == (t(13, 10), t(14, 10))


def test_mount_check_drain_without_incident_stays_other() -> None:
    """The same drain, no incident on gpu018 (one on gpu017 only): 1.0 h other, still storage by component."""
    states = _states([("gpu018", t(13, 10), t(14, 10), LUSTRE_DRAIN)])
    caused, daily, by_class = _marts(states, _incidents([("elsewhere", "storage", t(13), "gpu017")]))
    assert caused.select("availability_class", "class_source").row(0) == ("software", "reason")
    assert _down(daily) == {"gpu018": (0.0, 0.0, 0.0, 1.0)}
    assert by_class == {"storage": 1.0}


def test_incident_after_the_link_window_does_not_claim_the_drain() -> None:
    """Storage incident 15:00, drain 13:10 (more than 30 min before its first evidence): not linked, other."""
    states = _states([("gpu018", t(13, 10), t(14, 10), LUSTRE_DRAIN)])
    _, daily, _ = _marts(states, _incidents([("late", "storage", t(15), "gpu018")]))
    assert _down(daily) == {"gpu018": (0.0, 0.0, 0.0, 1.0)}


# -- other file systems and conventions ----------------------------------------------------------------------------

def test_gpfs_crash_chain_takes_the_storage_incident() -> None:
    """n1: DOWN* ``Not responding`` 09:00-09:20 (a storage incident's first line 08:58), back 10 min, then
    ``GPFS mount /gpfs/fs1: Stale file handle`` 09:30-11:30 (one chain: <= 30 min between): 20 min + 2 h =
    2.3333 h hardware storage — the generic state takes the chain's drain's cause, now the incident's.
    n2: an NFS drain ``nfs: server fs01 not responding, /home hung`` 06:00-07:30, NFS incident at 05:45: 1.5 h."""
    states = _states([("n1", t(9), t(9, 20), "Not responding"),
                      ("n1", t(9, 30), t(11, 30), "GPFS mount /gpfs/fs1: Stale file handle"),
                      ("n2", t(6), t(7, 30), "nfs: server fs01 not responding, /home hung")])
    caused, daily, by_class = _marts(states, _incidents([("inc-gpfs", "storage", t(8, 58), "n1"),
                                                         ("inc-nfs", "storage", t(5, 45), "n2")]))
    assert caused.select("availability_class", "reason_component", "class_source").rows() == [
        ("hardware", "storage", "outage_chain"), ("hardware", "storage", "incident"), ("hardware", "storage", "incident")]
    assert _down(daily) == {"n1": (2.3333, 0.0, 0.0, 0.0), "n2": (1.5, 0.0, 0.0, 0.0)}
    assert by_class == {"storage": 3.8333}


def test_storage_drain_linked_only_to_another_class_stays_software() -> None:
    """m1: ``NHC: check_fs_mount: /gpfs/fs1 not mounted`` 13:10-14:10, then an Xid 79 drain 13:30-15:00 (one
    outage); a GPU incident 13:25 is linked to it (the outage names the GPU too), no storage incident: the mount
    check's 1.0 h stays other, the GPU drain's 50 min after it is hardware (the earliest open event owns the union)."""
    states = _states([("m1", t(13, 10), t(14, 10), "NHC: check_fs_mount: /gpfs/fs1 not mounted"),
                      ("m1", t(13, 30), t(15), "Xid 79 GPU fell off the bus")])
    incidents = _incidents([("inc-gpu", "pcie_bus", t(13, 25), "m1")])
    assert incident_outage_links(incidents, states)["outage_start_ts"].to_list() == [t(13, 10)]
    caused, daily, by_class = _marts(states, incidents)
    assert caused["availability_class"].to_list() == ["software", "hardware"]
    assert _down(daily) == {"m1": (0.8333, 0.0, 0.0, 1.0)}
    assert by_class == {"storage": 1.0, "gpu": 0.8333}


# -- NHC drains: a check naming a part counts under that part, one naming none under health_check ---------------

@pytest.mark.parametrize(("reason", "component", "bucket"), [
    ("NHC: check_nv_healthmon:  GPU 0000:91:00.0 is lost", "gpu", "hardware"),         # the probe's gpu003
    ("NHC: check_gpu_health: GPU 3 (0000:5d:00.0) is lost", "gpu", "hardware"),
    ("NHC: check_hw_ib:  No IB port mlx5_0:1 is ACTIVE", "network", "hardware"),        # the probe's gpu012
    ("NHC: check_hw_eth: Device eth0 not found", "network", "hardware"),
    ("NHC: check_ipmi_psu:  PSU2 status is Failure detected", "host_power", "hardware"),  # the probe's gpu015
    ("NHC: check_hw_mem: 512GB DIMM missing", "host_memory", "hardware"),
    ("NHC: check_ps_service: sshd not running", "other", "health_check"),
    ("NHC: check_ps_daemon: slurmd not running", "other", "health_check"),
])
def test_nhc_drain_counts_under_the_part_it_names(reason: str, component: str, bucket: str) -> None:
    """A 2 h NHC drain 03:00-05:00 with no incident: 2.0 h in the bucket of the part it names."""
    states = _states([("n", t(3), t(5), reason)])
    assert states["reason_component"].to_list() == [component]
    _, daily, _ = _marts(states, None)
    expected = {"hardware": (2.0, 0.0, 0.0, 0.0), "health_check": (0.0, 0.0, 2.0, 0.0)}[bucket]
    assert _down(daily) == {"n": expected}


# -- the real pipeline over the probe's lines ------------------------------------------------------------------

CLUSTER = """cluster: probeau
timezone: UTC
nodes: "gpu[016-018]"
gpus_per_node: 8
"""
#: gpu018: the probe's Lustre outage, verbatim; gpu017: the same drain text without a Lustre line (no incident);
#: gpu016: an NHC service check (no part).
EVENTS = [
    "probeau|gpu016|2026-11-11T08:00:00|2026-11-11T09:30:00|01:30:00|IDLE+DRAIN|NHC: check_ps_service: sshd not running|root(0)",
    "probeau|gpu017|2026-11-11T16:00:00|2026-11-11T18:00:00|02:00:00|IDLE+DRAIN|NHC: check_fs_mount_rw:  /scratch not mounted|root(0)",
    f"probeau|gpu018|2026-11-11T13:10:00|2026-11-11T14:10:00|01:00:00|IDLE+DRAIN|{LUSTRE_DRAIN}|root(0)",
]
LOG_LINES = {"gpu018": [
    "2026-11-11T13:00:00.000000+00:00 gpu018 kernel: LustreError: 11-0: lustre1-OST0003-osc-ffff8f2a: operation "
    "ost_read to node 10.0.0.5@o2ib failed: rc = -107",
    "2026-11-11T13:05:00.000000+00:00 gpu018 nhc[6300]: ERROR:  nhc:  Health check failed:  check_fs_mount_rw:  "
    "/lustre not mounted",
    "2026-11-11T13:10:00.000000+00:00 gpu018 nhc[6300]: ERROR:  nhc:  Health check failed:  check_fs_mount_rw:  "
    "/lustre not mounted",
    "2026-11-11T14:00:00.000000+00:00 gpu018 kernel: Lustre: lustre1-OST0003-osc-ffff8f2a: Connection restored to "
    "10.0.0.5@o2ib (at 10.0.0.5@o2ib)",
]}


def landing() -> dict[str, str]:
    cut = datetime(2026, 11, 12, tzinfo=UTC)
    head = ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User",
            f"probeau||2026-10-01T00:00:00|Unknown|{slurm_duration(datetime(2026, 10, 1, tzinfo=UTC), cut)}||"
            "Cluster Registered TRES|"]
    files = {"cluster.yaml": CLUSTER,
             # one job on gpu016 after its drain, ending 23:50: the data reach 11-12 00:00
             "sacct/sacct_2026-11-11.psv": sacct_dump([sacct_line("9001", "2026-11-11", "10:00:00", "23:50:00",
                                                                  "gpu016", 1, state="COMPLETED", exit_code="0:0")]),
             "slurm_events/events_2026-11-11.txt": "\n".join(head + EVENTS) + "\n"}
    for node in ("gpu016", "gpu017", "gpu018"):
        routine = [f"2026-11-11T{h:02d}:00:07.000000+00:00 {node} nhc[40{h:02d}]: Node Health Check completed "
                   "successfully (2s)." for h in range(0, 24, 3)]
        files[f"syslog/2026-11-11/{node}.log"] = "\n".join(sorted(routine + LOG_LINES.get(node, []))) + "\n"
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("software_drain_of_incident"), landing())


def test_pipeline_counts_the_linked_mount_drain_as_hardware_everywhere(warehouse: Path) -> None:
    (incident, drain_start), = query_rows(warehouse, "SELECT incident_id, drain_start_ts FROM marts.incident_repairs "
                                                     "WHERE component_class = 'storage'")
    assert drain_start == t(13, 10)  # the mount check's drain is the storage incident's outage ...
    down = {r[0]: tuple(round(v, 4) for v in r[1:]) for r in query_rows(warehouse, """
        SELECT node, sum(down_hardware_hours), sum(down_maintenance_hours), sum(down_health_check_hours),
               sum(down_other_hours)
        FROM marts.node_availability_daily GROUP BY node""")}
    # ... so its hour is hardware (was other); gpu017's drain, no incident, stays other; sshd: health check
    assert down == {"gpu016": (0.0, 0.0, 1.5, 0.0), "gpu017": (0.0, 0.0, 0.0, 2.0), "gpu018": (1.0, 0.0, 0.0, 0.0)}
    by_class = dict(query_rows(warehouse, "SELECT component_class, round(down_node_hours, 4) FROM "
                                          "marts.availability_by_component WHERE period_type = 'all' "
                                          "AND component_class <> 'all'"))
    assert by_class == {"storage": 3.0, "other": 1.5}  # gpu017 2 h + gpu018 1 h storage; the sshd check: other
    loss = query_rows(warehouse, "SELECT node, down_hardware_hours, down_gpu_hours FROM marts.node_hardware_loss")
    assert loss == [("gpu018", 1.0, 8.0)]  # 1 h x 8 GPUs
    assert incident.startswith("inc-")
