"""Probe AO, F3: a fault's own repair is no planned maintenance in node availability
(models/reliability/node_availability.py: outage_causes, fault_repairs).

* A planned-looking reason (a change ticket, a reboot request, an upgrade: availability class maintenance by its
  text) on a state that continues a hardware outage of its node — same outage chain, at most 30 min in service
  between (repair_times.outage_chains, the chain incident_repairs times a repair by) — is that fault's repair.
* A bare reboot request is a fault's repair when its outage is linked to the fault's incident by the rule
  ``marts.incident_repairs`` uses (repair_times.incident_outage_links: 30 min before the first evidence to 1 h
  after the last, at most 24 h), not by a window of its own.
* Kept: a maintenance drain set while the node was in service stays maintenance (a fault found in it or not), a
  hardware drain replacing it ends it, cluster.yaml windows count as maintenance.

Hand-computed values; the probe's own sacctmgr lines plus other conventions (a Jira ticket's planned work over an
Xid 48 drain, a ServiceNow change after a 20-min gap, ``RebootASAP`` / ``reboot requested`` spellings).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import SACCT_HEADER, query_rows, run_hand_landing, slurm_duration
from hand_node_states import classified_states as _states, one_node_incidents as _incidents

from gpusre.models.reliability.mtbf import MaintenanceSpan
from gpusre.models.reliability.node_availability import (
    CONTINUES_FAULT,
    availability_by_component,
    down_segments,
    node_availability_daily,
    outage_causes,
)
from gpusre.models.reliability.repair_times import incident_outage_links, link_incidents

UTC = timezone.utc
AS_OF = datetime(2026, 11, 7, tzinfo=UTC)
NHC_GPU_LOST = ("NHC: check_gpu_health: GPU 3 (0000:5d:00.0) is lost "
                "(nvidia-smi: Unable to determine the device handle)")


def t(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


def _marts(states: pl.DataFrame, incidents: pl.DataFrame | None, first_day: date, last_day: date,
           maintenance: tuple[MaintenanceSpan, ...] = ()) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """What assets/node_states.py node_state_marts does: causes, daily rows, availability by component."""
    links = incident_outage_links(incidents, states) if incidents is not None else None
    caused = outage_causes(states, links)
    since = datetime.combine(first_day, datetime.min.time(), tzinfo=UTC)
    as_of = since + timedelta(days=(last_day - first_day).days + 1)
    daily = node_availability_daily(caused, sorted(set(states["node"])), first_day, last_day, as_of=as_of,
                                    maintenance=maintenance)
    segments = down_segments(caused, as_of, maintenance, since=since)
    return caused, daily, availability_by_component(daily, segments, caused)


def _down(daily: pl.DataFrame) -> dict[str, tuple[float, float]]:
    """(hardware, maintenance) down hours per node over the whole range, rounded to 4 places."""
    per_node = daily.group_by("node").agg(pl.col("down_hardware_hours", "down_maintenance_hours").sum())
    return {n: (round(h, 4), round(m, 4)) for n, h, m in per_node.rows()}


# -- the probe's lines ---------------------------------------------------------------------------------------

#: gpu005: NHC drained it at 03:15 for the Xid 79 at 03:12:40; at 09:02 the operator rewrote the reason to the
#: change ticket of the swap (sacctmgr closes the old event and opens a new one), lifted 11-03 14:40.
GPU005 = [("gpu005", t(2, 3, 15), t(2, 9, 2), NHC_GPU_LOST),
          ("gpu005", t(2, 9, 2), t(3, 14, 40), "CHG-5512: swap GPU 3 (Xid 79)")]
#: gpu018: Xid 79 at 20:10:33, its last line; ``Reboot ASAP`` 21:05 -> 21:26:10, 54.5 min later.
GPU018 = [("gpu018", t(6, 21, 5), t(6, 21, 26, 10), "Reboot ASAP")]
PROBE_INCIDENTS = [("inc-005", "gpu", t(2, 3, 12, 40), "gpu005"), ("inc-018", "gpu", t(6, 20, 10, 33), "gpu018")]


def test_probe_ticket_over_an_open_nhc_drain_and_late_reboot_are_gpu_down_time() -> None:
    states, incidents = _states(GPU005 + GPU018), _incidents(PROBE_INCIDENTS)
    assert states["availability_class"].to_list() == ["hardware", "maintenance", "maintenance"]  # by their text
    caused, daily, by_component = _marts(states, incidents, date(2026, 11, 2), date(2026, 11, 6))
    # gpu005: 03:15 -> 11-03 14:40 = 20.75 + 14.6667 h, all the GPU's (was 5.7833 hw + 29.6333 maintenance);
    # gpu018: 21:05 -> 21:26:10 = 0.3528 h (was maintenance: past a 30-min window of its own)
    assert _down(daily) == {"gpu005": (35.4167, 0.0), "gpu018": (0.3528, 0.0)}
    assert caused.select("availability_class", "class_source").rows() == [
        ("hardware", "reason"), ("hardware", CONTINUES_FAULT), ("hardware", "incident")]
    gpu = by_component.filter(pl.col("period_type") == "all", pl.col("component_class") == "gpu").row(0, named=True)
    assert gpu["down_node_hours"] == pytest.approx(35 + 25 / 60 + 21 / 60 + 10 / 3600)
    assert gpu["scheduled_node_hours"] == pytest.approx(2 * 5 * 24)  # nothing planned left out


def test_probe_outages_are_the_ones_incident_repairs_times() -> None:
    """The same outage is the fault's repair in both marts: incident_repairs ends gpu005's at 11-03 14:40 and
    gpu018's at 21:26:10, exactly where availability's hardware down time of the node ends."""
    states, incidents = _states(GPU005 + GPU018), _incidents(PROBE_INCIDENTS)
    repairs = {r["incident_id"]: (r["drain_start_ts"], r["repaired_ts"], round(r["hours_to_repair"], 4))
               for r in link_incidents(incidents, states).iter_rows(named=True)}
    assert repairs == {"inc-005": (t(2, 3, 15), t(3, 14, 40), 35.4556), "inc-018": (t(6, 21, 5), t(6, 21, 26, 10), 1.2603)}
    caused = outage_causes(states, incident_outage_links(incidents, states))
    segments = down_segments(caused, AS_OF)
    for drain_start, repaired, _ in repairs.values():
        inside = segments.filter((pl.col("start_ts") >= drain_start) & (pl.col("end_ts") <= repaired))
        assert set(inside["availability_class"]) == {"hardware"}
        assert inside["hours"].sum() == pytest.approx((repaired - drain_start).total_seconds() / 3600)


# -- other conventions ---------------------------------------------------------------------------------------

def test_other_tickets_and_reboot_spellings_continuing_a_fault() -> None:
    """n1: NHC's Xid 48 drain 10:00-11:00, then Jira planned work ``JIRA-1234: planned work: replace HBM`` 11:00-15:00
    (rule planned_maintenance): 5 h GPU. n2: an Xid 48 drain 10:00-11:00, node back 20 min, then a ServiceNow
    change ``CRQ000123 swap GPU 2`` 11:20-13:20 (the chain's gap <= 30 min): 3 h GPU. n3: a DOWN* ``Not
    responding`` 02:00-02:10 for a DIMM incident at 01:58, then ``RebootASAP`` 02:10-02:40: 40 min host memory.
    n4: ``reboot requested`` 50 min after an Xid 48 on it (linked: <= 1 h after the last line): 0.5 h GPU memory."""
    states = _states([("n1", t(4, 10), t(4, 11), "NHC: check_gpu_xid: Xid 48 on GPU 2"),
                      ("n1", t(4, 11), t(4, 15), "JIRA-1234: planned work: replace HBM"),
                      ("n2", t(4, 10), t(4, 11), "NHC: check_gpu_xid: Xid 48 on GPU 2"),
                      ("n2", t(4, 11, 20), t(4, 13, 20), "CRQ000123 swap GPU 2"),
                      ("n3", t(4, 2), t(4, 2, 10), "Not responding"),
                      ("n3", t(4, 2, 10), t(4, 2, 40), "RebootASAP"),
                      ("n4", t(4, 8, 50), t(4, 9, 20), "reboot requested")])
    assert states["availability_class"].to_list() == ["hardware", "maintenance", "hardware", "maintenance",
                                                      "unknown", "maintenance", "maintenance"]
    incidents = _incidents([("inc-3", "host_memory", t(4, 1, 58), "n3"), ("inc-4", "gpu_memory", t(4, 8), "n4")])
    caused, daily, by_component = _marts(states, incidents, date(2026, 11, 4), date(2026, 11, 4))
    assert _down(daily) == {"n1": (5.0, 0.0), "n2": (3.0, 0.0), "n3": (0.6667, 0.0), "n4": (0.5, 0.0)}
    # Xid 48 (a double-bit ECC error) names the GPU's memory by catalog/xid.csv: class gpu.
    assert caused.select("node", "reason_component").rows()[1::2] == [
        ("n1", "gpu_memory"), ("n2", "gpu_memory"), ("n3", "host_memory")]
    got = {c: round(h, 4) for c, h in by_component.filter(pl.col("period_type") == "all", pl.col("component_class") != "all")
           .select("component_class", "down_node_hours").rows()}
    assert got == {"gpu": 8.5, "host": 0.6667}  # n4's gpu_memory is class gpu


def test_planned_work_the_node_entered_from_service_stays_maintenance() -> None:
    """m1: ``CHG-5600: kernel upgrade`` set while the node was in service, an Xid 79 found in it at 07:00:
    2 h maintenance. m2: the Xid 48 drain ended 10:00, a ``CHG-5601: swap GPU 2`` drain 10:45 (45 min in service:
    another chain) 10:45-12:45: 2 h maintenance. m3: a maintenance drain 06:00-11:45 that a hardware drain
    replaces, 11:45-15:30: 5.75 h maintenance, 3.75 h hardware (the hardware drain ends the planned period).
    m4: ``Reboot ASAP`` 09:40, 100 min after the last line of an Xid 79 at 08:00: planned work."""
    states = _states([("m1", t(5, 6), t(5, 8), "CHG-5600: kernel upgrade"),
                      ("m2", t(5, 9), t(5, 10), "NHC: check_gpu_xid: Xid 48 on GPU 2"),
                      ("m2", t(5, 10, 45), t(5, 12, 45), "CHG-5601: swap GPU 2"),
                      ("m3", t(5, 6), t(5, 11, 45), "kernel upgrade"),
                      ("m3", t(5, 11, 45), t(5, 15, 30), "mlx5_0 link down, reseat cable"),
                      ("m4", t(5, 9, 40), t(5, 10), "Reboot ASAP")])
    incidents = _incidents([("inc-m1", "gpu", t(5, 7), "m1"), ("inc-m4", "gpu", t(5, 8), "m4")])
    _, daily, _ = _marts(states, incidents, date(2026, 11, 5), date(2026, 11, 5))
    assert _down(daily) == {"m1": (0.0, 2.0), "m2": (1.0, 2.0), "m3": (3.75, 5.75), "m4": (0.0, 0.3333)}


def test_cluster_yaml_window_stays_maintenance() -> None:
    """gpu005's ticket inside a cluster.yaml window (11-02 09:00-12:00 on gpu005): those 3 h stay maintenance,
    the rest of the ticket's time is the GPU's (03:15 -> 11-03 14:40 = 35.4167 h, 3 of them planned)."""
    window = (MaintenanceSpan(t(2, 9), t(2, 12), frozenset({"gpu005"})),)
    _, daily, _ = _marts(_states(GPU005), _incidents(PROBE_INCIDENTS[:1]), date(2026, 11, 2), date(2026, 11, 3),
                         maintenance=window)
    assert _down(daily) == {"gpu005": (32.4167, 3.0)}


# -- the real pipeline over the probe's lines ------------------------------------------------------------------

TRES = "billing=128,cpu=128,gres/gpu:h100=8,gres/gpu=8,mem=2000G,node=1"
DAYS = ["2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "2026-11-06"]
#: sacctmgr show event lines per dump day, verbatim from the probe (gpu005, gpu018), plus gpu020: an Xid 48
#: drain rewritten to Jira planned work, and gpu021: a change ticket set while in service (stays planned).
EVENTS = {
    "2026-11-02": [f"h100-east|gpu005|2026-11-02T03:15:00|2026-11-02T09:02:00|05:47:00|IDLE+DRAIN|{NHC_GPU_LOST}|root(0)",
                   "h100-east|gpu005|2026-11-02T09:02:00|Unknown|15:03:00|IDLE+DRAIN|CHG-5512: swap GPU 3 (Xid 79)|root(0)"],
    "2026-11-03": ["h100-east|gpu005|2026-11-02T09:02:00|2026-11-03T14:40:00|1-05:38:00|IDLE+DRAIN|"
                   "CHG-5512: swap GPU 3 (Xid 79)|root(0)"],
    "2026-11-04": ["h100-east|gpu020|2026-11-04T10:00:00|2026-11-04T11:00:00|01:00:00|IDLE+DRAIN|"
                   "NHC: check_gpu_xid: Xid 48 on GPU 2|root(0)",
                   "h100-east|gpu020|2026-11-04T11:00:00|2026-11-04T15:00:00|04:00:00|IDLE+DRAIN|"
                   "JIRA-1234: planned work: replace HBM|root(0)"],
    "2026-11-05": ["h100-east|gpu021|2026-11-05T06:00:00|2026-11-05T08:00:00|02:00:00|IDLE+DRAIN|"
                   "CHG-5600: kernel upgrade|root(0)"],
    "2026-11-06": ["h100-east|gpu018|2026-11-06T21:05:00|2026-11-06T21:26:10|00:21:10|IDLE+DRAIN+REBOOT_REQUESTED|"
                   "Reboot ASAP|root(0)"],
}
BOOT = ("kernel: [    0.000000] Linux version 5.15.0-124-generic (buildd@lcy02-amd64-032) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) "
        "11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #134-Ubuntu SMP Fri Sep 27 20:20:17 UTC 2024")
#: (node, time, message): the probe's own lines of gpu005 and gpu018, and gpu020's Xid 48.
LOG_LINES = [
    ("gpu005", "2026-11-02T03:12:40", "kernel: [547489.150660] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
                                      "name=<unknown>, GPU has fallen off the bus."),
    ("gpu005", "2026-11-02T03:12:40", "kernel: [421299.661726] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus."),
    ("gpu005", "2026-11-02T03:14:58", "nhc[31722]: ERROR:  nhc:  Health check failed:  check_gpu_health:  GPU 3 "
                                      "(0000:5d:00.0) is lost (nvidia-smi: Unable to determine the device handle)"),
    ("gpu018", "2026-11-06T20:10:33", "kernel: [380183.107900] NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', "
                                      "name=<unknown>, GPU has fallen off the bus."),
    ("gpu018", "2026-11-06T20:10:33", "kernel: [889467.290073] NVRM: GPU 0000:3a:00.0: GPU has fallen off the bus."),
    ("gpu018", "2026-11-06T21:23:00", BOOT),
    ("gpu020", "2026-11-04T09:58:20", "kernel: [412233.551100] NVRM: Xid (PCI:0000:9b:00): 48, pid=88123, name=python3, "
                                      "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
                                      "at partition 6, subpartition 0."),
]
NODES = ["gpu005", "gpu018", "gpu020", "gpu021", "gpu022"]
CLUSTER = """cluster: h100-east
timezone: UTC
nodes: "gpu[005,018,020-022]"
gpus_per_node: 8
"""


def landing() -> dict[str, str]:
    files = {"cluster.yaml": CLUSTER}
    T = datetime.fromisoformat
    for k, day in enumerate(DAYS):
        # one job a day on gpu022 (no event), the last ending 23:50: the data reach 11-07 00:00
        st, en = f"{day}T01:00:00", f"{day}T23:50:00"
        files[f"sacct/sacct_{day}.psv"] = "\n".join([
            SACCT_HEADER, f"80{k}|80{k}|pretrain|alice|20001|alice|llm|gpu|normal|COMPLETED|0:0|{st}|{st}|{st}|{en}|"
                    f"{slurm_duration(T(st), T(en))}|1-00:00:00|1|128|{TRES}|gpu022|"]) + "\n"
        cut = T(day) + timedelta(days=1, minutes=5)
        ev = ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User",
              f"h100-east||2026-10-01T00:00:00|Unknown|{slurm_duration(T('2026-10-01T00:00:00'), cut)}||Cluster Registered TRES|"]
        files[f"slurm_events/events_{day}.txt"] = "\n".join(ev + EVENTS.get(day, [])) + "\n"
        for node in NODES:
            routine = [(f"{day}T{h:02d}:30:01", "CRON[20566]: (root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)")
                       for h in range(0, 24, 2)]
            lines = routine + [(ts, msg) for n, ts, msg in LOG_LINES if n == node and ts.startswith(day)]
            files[f"syslog/{day}/{node}.log"] = "".join(
                f"{T(ts):%b} {T(ts).day:2d} {T(ts):%H:%M:%S} {node} {msg}\n" for ts, msg in sorted(lines))
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("fault_repair"), landing())


def test_pipeline_counts_the_repair_as_the_fault_in_every_mart(warehouse: Path) -> None:
    down = {n: (round(h, 4), round(m, 4)) for n, h, m in query_rows(warehouse, """
        SELECT node, sum(down_hardware_hours), sum(down_maintenance_hours)
        FROM marts.node_availability_daily GROUP BY node""")}
    # gpu005 35.4167 h and gpu018 0.3528 h GPU (the probe: 29.63 h / 0.35 h maintenance); gpu020 1 + 4 h GPU;
    # gpu021's ticket set while in service stays planned
    assert down == {"gpu005": (35.4167, 0.0), "gpu018": (0.3528, 0.0), "gpu020": (5.0, 0.0),
                    "gpu021": (0.0, 2.0), "gpu022": (0.0, 0.0)}
    (down_all, sched, avail), = query_rows(warehouse, """
        SELECT down_node_hours, scheduled_node_hours, availability FROM marts.availability_by_component
        WHERE period_type = 'all' AND component_class = 'all'""")
    gpu_down = 35 + 25 / 60 + 21 / 60 + 10 / 3600 + 5
    assert (down_all, sched) == (pytest.approx(gpu_down), pytest.approx(5 * 5 * 24 - 2))
    assert avail == pytest.approx(1 - gpu_down / 598)
    # incident_repairs times the same outages as these faults' repairs
    repairs = {nodes[0]: (repaired, round(h, 4)) for nodes, repaired, h in query_rows(warehouse, """
        SELECT nodes, repaired_ts, hours_to_repair FROM marts.incident_repairs ORDER BY first_evidence_ts""")}
    assert repairs["gpu005"] == (t(3, 14, 40), 35.4556)
    assert repairs["gpu018"] == (t(6, 21, 26, 10), 1.2603)
    assert repairs["gpu020"][0] == t(4, 15)
