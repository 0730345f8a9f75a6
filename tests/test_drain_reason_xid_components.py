"""Probe AS, F3 and F4 (a Blackwell GB200 NVL72 + B200 site): drain reasons name their component right.

* F3: ``xid 145 nvlink5 fatal gpu2 - gpu reset`` was ``gpu_xid``/``gpu``: the ``nvlink`` rule missed ``nvlink5``
  (a generation number, also ``NVLink4``, plural ``nvlinks``), and the ``gpu_xid`` rule ignored the code. An Xid
  code now names its component by the Xid catalog (``catalog/xid.csv``: 145 and 149 NVLink, 79 the GPU's PCIe
  link, 48 GPU memory, 119 GSP), and a code of another component class moves the reason to that class's rule
  (``Xid 149 on GPU1``: ``nvlink``), so ``marts.incident_repairs`` links the drain to its NVLink incident.
* F4: ``nvl72-r2 c15 tray lost power (PDB), reseated`` was ``nvlink`` (``nvl\\d*`` matched the rack name): an NVL72
  / NVL36 product or rack name names no NVLink fault; the power rule classifies it (``host_power``).

Hand-computed values; the probe's own sacctmgr lines plus other operators' spellings.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import pytest
from hand_landing import query_rows, run_hand_landing

from gpusre.models.component_classes import class_of, load_component_classes
from gpusre.models.failures.drain_reasons import classify_reasons, reason_class_components
from gpusre.models.logs.event_catalog import load_xid_catalog
from gpusre.models.reliability.repair_times import link_incidents

UTC = timezone.utc


@pytest.mark.parametrize(("reason", "reason_class", "component", "availability", "rule"), [
    # F3, the probe's line and its variants (was gpu_xid/gpu; 'NVLink5 errors' was unknown)
    ("xid 145 nvlink5 fatal gpu2 - gpu reset", "nvlink", "nvlink", "hardware", "nvlink"),
    ("Xid 149 on GPU1", "nvlink", "nvlink", "hardware", "gpu_xid"),
    ("NVLink5 errors", "nvlink", "nvlink", "hardware", "nvlink"),
    # other operators' spellings
    ("NVLink4 errors gpu3", "nvlink", "nvlink", "hardware", "nvlink"),
    ("nvlinks down on GPU 0-3", "nvlink", "nvlink", "hardware", "nvlink"),
    ("NVL errors GPU 4", "nvlink", "nvlink", "hardware", "nvlink"),               # the bare abbreviation stays
    ("XID74 GPU5", "nvlink", "nvlink", "hardware", "gpu_xid"),
    ("Xid-79 RMA", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234", "gpu_xid", "pcie_bus", "hardware", "gpu_xid"),  # the driver's own
    ("xid 48 DBE on GPU 2", "gpu_xid", "gpu_memory", "hardware", "gpu_xid"),
    ("Xid 119 GSP timeout, reset GPU", "gpu_xid", "gsp_firmware", "hardware", "gpu_xid"),
    ("nvlink errors then Xid 79 on GPU 3", "gpu_xid", "pcie_bus", "hardware", "nvlink"),   # the code decides
    ("Xid 13 on GPU 2", "gpu_xid", "gpu", "hardware", "gpu_xid"),      # a user application's code names no part
    ("xid154 node reboot required", "gpu_xid", "gpu", "hardware", "gpu_xid"),   # a recovery action names none
    ("Planned maintenance: replace GPU Xid 149 (CHG-1234)", "planned_maintenance", "other", "maintenance",
     "declared_planned_work"),                                           # declared planned work stays planned
    # F4, the probe's line and its variants (were nvlink)
    ("nvl72-r2 c15 tray lost power (PDB), reseated", "power", "host_power", "hardware", "power"),
    ("NVL72 tray c15 PSU fail", "power", "host_power", "hardware", "power"),
    ("NVL36x2 rack r4 PDU 2 tripped", "power", "host_power", "hardware", "power"),
    ("GB200 NVL72 compute tray: GPU 2 missing", "gpu", "gpu", "hardware", "gpu"),
    ("nvl36 rack maint", "planned_maintenance", "other", "maintenance", "planned_maintenance"),
])
def test_xid_codes_and_nvlink_spellings(reason: str, reason_class: str, component: str, availability: str,
                                        rule: str) -> None:
    row = classify_reasons(pl.Series([reason])).row(0, named=True)
    assert (row["reason_class"], row["reason_component"], row["availability_class"], row["rule_id"]) == (
        reason_class, component, availability, rule)


def test_every_catalogued_xid_names_its_catalog_component_and_a_class_of_that_class() -> None:
    """The Xid catalog is the one definition: for every code naming a fleet component, an operator's
    ``Xid <code> on GPU1`` gets that component, and a reason class whose component (what repair linking reads)
    is of the same component class."""
    known = set(load_component_classes()["component"])
    xids = load_xid_catalog().filter(pl.col("component").is_in(sorted(known - {"other"})))
    assert xids.height > 0
    got = classify_reasons(pl.Series([f"Xid {c} on GPU1" for c in xids["code"]]))
    assert got["reason_component"].to_list() == xids["component"].to_list()
    by_class = reason_class_components()
    rule_components = pl.Series([by_class[c] for c in got["reason_class"]])
    assert pl.select(class_of(pl.lit(rule_components))).to_series().to_list() == pl.select(
        class_of(pl.lit(xids["component"]))).to_series().to_list()


def t(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize("reason", ["xid 145 nvlink5 fatal gpu2 - gpu reset", "Xid 149 on GPU1", "NVLink4 errors"])
def test_nvlink_drain_is_the_repair_of_its_nvlink_incident(reason: str) -> None:
    """The probe's gb-r2-c07: Xid 145 at 14:00:00, drained 14:05 -> 16:00: detected after 5 min, repaired
    2.0 h after the first evidence (was not_drained: the drain's class gpu is not the incident's nvlink)."""
    states = pl.DataFrame({"node": ["gb-r2-c07"], "start_ts": [t(3, 14, 5)], "end_ts": [t(3, 16)], "reason": [reason]})
    states = states.with_columns(classify_reasons(states["reason"])["reason_class"])
    incidents = pl.DataFrame({"incident_id": ["i1"], "component": ["nvlink"], "start_ts": [t(3, 14)],
                              "first_evidence_ts": [t(3, 14)], "end_ts": [t(3, 14, 0, 1)], "nodes": [["gb-r2-c07"]]})
    row = link_incidents(incidents, states).row(0, named=True)
    assert (row["repair_state"], row["hours_to_detect"], row["hours_to_repair"], row["drain_reason_class"]) == (
        "repaired", pytest.approx(5 / 60), pytest.approx(2.0), "nvlink")


# ---- the pipeline, on the probe's lines -------------------------------------------------------------------------
CLUSTER = """cluster: bw-site
timezone: UTC
nodes: "gb-r2-c[07,15,16]"
gpus_per_node: 4
racks: {nvl72-r2: "gb-r2-c[07,15,16]"}
nvlink_domains: {nvl72-r2: "gb-r2-c[07,15,16]"}
"""
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|Account|Partition|QOS|State|ExitCode|Submit|Eligible|Start|End|"
                "Elapsed|Timelimit|NNodes|NCPUS|AllocTRES|NodeList|Comment")
TRES = "billing=72,cpu=72,gres/gpu:gb200=4,gres/gpu=4,mem=850G,node=1"
EVENTS = {
    "2026-11-03": ["bw-site|gb-r2-c07|2026-11-03T14:05:00|2026-11-03T16:00:00|01:55:00|DRAIN|"
                   "xid 145 nvlink5 fatal gpu2 - gpu reset|root"],
    "2026-11-04": ["bw-site|gb-r2-c15|2026-11-04T15:01:40|2026-11-04T15:20:00|00:18:20|DOWN*|Not responding|slurm",
                   "bw-site|gb-r2-c15|2026-11-04T15:20:00|2026-11-04T17:00:00|01:40:00|DRAIN|"
                   "nvl72-r2 c15 tray lost power (PDB), reseated|root"],
}
XID_LINES = [
    "2026-11-03T14:00:00+00:00 gb-r2-c07 kernel: NVRM: Xid (PCI:0018:01:00): 145, RLW_REMAP  Fatal   XC1 i1 Link 07 "
    "(0x00000004 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
    "2026-11-03T14:00:01+00:00 gb-r2-c07 kernel: NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from "
    "0x0 (None) to 0x1 (GPU Reset Required)",
]


def landing() -> dict[str, str]:
    files = {"cluster.yaml": CLUSTER}
    for k, day in enumerate(["2026-11-03", "2026-11-04"]):
        # one job a day on gb-r2-c16 (no event), ending 23:50: the data reach the day's end
        st, en = f"{day}T01:00:00", f"{day}T23:50:00"
        files[f"sacct/sacct_{day}.psv"] = "\n".join([
            SACCT_HEADER, f"90{k}|90{k}|pretrain|alice|20001|alice|llm|gb200|normal|COMPLETED|0:0|{st}|{st}|{st}|{en}|"
                          f"22:50:00|1-00:00:00|1|72|{TRES}|gb-r2-c16|"]) + "\n"
        files[f"slurm_events/events_{day}.txt"] = "\n".join(
            ["Cluster|NodeName|TimeStart|TimeEnd|Duration|State|Reason|User"] + EVENTS[day]) + "\n"
        for node in ("gb-r2-c07", "gb-r2-c15", "gb-r2-c16"):
            routine = [f"{day}T{h:02d}:48:04+00:00 {node} CRON[4000]: (root) CMD (/usr/sbin/nhc-wrapper)"
                       for h in range(0, 24, 2)]
            own = [line for line in XID_LINES if line.startswith(day) and f" {node} " in line]
            files[f"syslog/{day}/{node}.log"] = "\n".join(sorted(routine + own)) + "\n"
    return files


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hand_landing(tmp_path_factory.mktemp("drain_xid"), landing())


def test_pipeline_counts_the_probe_drains_by_their_components(warehouse: Path) -> None:
    # gb-r2-c07: 14:05 -> 16:00 = 1.9167 h NVLink (was GPU); gb-r2-c15: DOWN* 15:01:40 then the power drain to
    # 17:00 = 1 h 58 min 20 s = 1.9722 h power (was NVLink); nothing GPU.
    down = dict(query_rows(warehouse, """
        SELECT component_class, round(down_node_hours, 4) FROM marts.availability_by_component
        WHERE period_type = 'all' AND component_class <> 'all' AND down_node_hours > 0"""))
    assert down == {"nvlink": 1.9167, "power": 1.9722}
    classes = dict(query_rows(warehouse, """
        SELECT node, list(reason_class ORDER BY start_ts) FROM core.node_states GROUP BY node"""))
    assert classes == {"gb-r2-c07": ["nvlink"], "gb-r2-c15": ["not_responding", "power"]}


def test_pipeline_links_the_nvlink_drain_to_its_incident(warehouse: Path) -> None:
    # The Xid 145 incident (first evidence 14:00:00) is repaired when the drain ends at 16:00: 2.0 h
    # (was not_drained, hours NULL); detected by the 14:05 drain: 5 min.
    rows = query_rows(warehouse, """
        SELECT component, repair_state, round(hours_to_detect, 4), round(hours_to_repair, 4), drain_reason_class
        FROM marts.incident_repairs ORDER BY component""")
    # and gb-r2-c15's power loss, which nothing logged, is an incident of its node states (hw_incidents rule 7,
    # probe AS F6): from the DOWN* 15:01:40 to back in service 17:00 = 1 h 58 min 20 s, detected at once
    assert rows == [("host_power", "repaired", 0.0, round(1 + 58 / 60 + 20 / 3600, 4), "power"),
                    ("nvlink", "repaired", round(5 / 60, 4), 2.0, "nvlink")]
