"""Drain-reason spellings (probe AG, F7): ``PM`` is preventive maintenance, a ticket id is masked as a
ticket (not a node), and a ``Reboot ASAP`` requested right after a hardware fault on its node is that
fault's repair (hardware down time), not planned work. Hand-computed values; the probe's own lines plus
other spellings and conventions (Jira keys, ServiceNow / Remedy numbers, a power cycle after an Xid 79)."""

from __future__ import annotations

from datetime import date, datetime, timezone

import polars as pl
import pytest
from hand_node_states import classified_states as _states

from gpusre.models.failures.drain_reasons import REBOOT_CLASS, classify_reasons
from gpusre.models.logs.masking import mask_messages
from gpusre.models.reliability.node_availability import node_availability_daily, outage_causes
from gpusre.models.reliability.repair_times import incident_outage_links, link_incidents

UTC = timezone.utc


@pytest.mark.parametrize(("reason", "availability", "rule"), [
    ("PM", "maintenance", "preventive_maintenance_pm"),                      # the probe's h100-015: was unknown
    ("PM: quarterly fan filter swap", "maintenance", "preventive_maintenance_pm"),
    ("quarterly PM", "maintenance", "preventive_maintenance_pm"),
    ("rack 12 pm - BMC fw", "maintenance", "planned_maintenance"),         # 'fw' names the planned work first
    ("down since 3 PM", "unknown", None),                                   # a time of day, not maintenance
    ("drained this PM", "unknown", None),
    ("PM: GPU 3 Xid 79", "hardware", "gpu_xid"),                            # a fault named beside PM wins
    ("PM2.5 sensor alarm", "unknown", None),                                # not the word PM
    ("HW maint", "maintenance", "planned_maintenance"),
])
def test_pm_is_preventive_maintenance(reason: str, availability: str, rule: str | None) -> None:
    row = classify_reasons(pl.Series([reason])).row(0, named=True)
    assert (row["availability_class"], row["rule_id"]) == (availability, rule)


@pytest.mark.parametrize(("reason", "masked"), [
    ("scheduled maintenance CHG0012345", "scheduled maintenance <TICKET>"),  # the probe's: was <NODE>
    ("OPS-4411", "<TICKET>"),                                               # the probe's: was <NODE>
    ("INC123 reboot", "<TICKET> reboot"),
    ("JIRA-12", "<TICKET>"),
    ("RITM0001234 swap HCA on gpu017", "<TICKET> swap HCA on <NODE>"),      # a ticket and a node side by side
    ("CRQ000000012345 firmware", "<TICKET> firmware"),                       # BMC Remedy change request
    ("SRE-207: replace DIMM", "<TICKET>: replace DIMM"),
    ("dgx-a100-03 down", "<NODE> down"),                                    # node names stay nodes
    ("PSU-1 failed", "<NODE> failed"),                                      # a part's index is no ticket (as before)
])
def test_ticket_ids_are_masked_as_tickets(reason: str, masked: str) -> None:
    assert mask_messages(pl.Series([reason])).to_list() == [masked]


def t(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def _incidents(rows: list[tuple[str, str, datetime, str]]) -> pl.DataFrame:
    return pl.DataFrame([(i, c, "node", s, [n]) for i, c, s, n in rows],
                        schema={"incident_id": pl.String, "component": pl.String, "scope": pl.String,
                                "start_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String)}, orient="row")


def _daily(states: pl.DataFrame, incidents: pl.DataFrame) -> pl.DataFrame:
    caused = outage_causes(states, incident_outage_links(incidents, states))
    return node_availability_daily(caused, sorted(set(states["node"])), date(2026, 11, 12), date(2026, 11, 12),
                                   as_of=t(13, 0))


def test_reboot_asap_after_a_fault_is_its_repair() -> None:
    """The probe's h100-013: Xid 119 (GSP timeout) at 03:00, ``Reboot ASAP`` 03:10 -> 03:25: 0.25 h of GPU
    down time, not planned (its SLI 0.95512 -> 0.95449 on the probe). h100-015: ``Reboot ASAP`` with no fault
    stays planned. gpu-b: a ``power cycle`` 20 min after an Xid 79 is that fault's repair too; gpu-c: a
    power cycle 45 min after its Xid is still inside incident_repairs' link (to 1 h after the last evidence:
    probe AO F3 — it was planned work under a 30-min window of its own); gpu-d: a power cycle 90 min after
    its Xid is past the link (planned work)."""
    states = _states([("h100-013", t(12, 3, 10), t(12, 3, 25), "Reboot ASAP"),
                      ("h100-015", t(12, 4), t(12, 4, 30), "Reboot ASAP"),
                      ("gpu-b", t(12, 8, 20), t(12, 9, 20), "power cycle"),
                      ("gpu-c", t(12, 8, 45), t(12, 9, 15), "power cycle"),
                      ("gpu-d", t(12, 9, 30), t(12, 10), "power cycle")])
    assert set(states["reason_class"]) == {REBOOT_CLASS}
    incidents = _incidents([("inc-13", "gsp_firmware", t(12, 3), "h100-013"), ("inc-b", "pcie_bus", t(12, 8), "gpu-b"),
                            ("inc-c", "pcie_bus", t(12, 8), "gpu-c"), ("inc-d", "pcie_bus", t(12, 8), "gpu-d")])
    daily = {r["node"]: (r["down_hardware_hours"], r["down_maintenance_hours"])
             for r in _daily(states, incidents).iter_rows(named=True)}
    assert daily == {"h100-013": (0.25, 0.0), "h100-015": (0.0, 0.5), "gpu-b": (1.0, 0.0), "gpu-c": (0.5, 0.0),
                     "gpu-d": (0.0, 0.5)}
    # The same outages incident_repairs times the repairs by (gpu-d's incident: not drained).
    repairs = {r["incident_id"]: r["repair_state"] for r in link_incidents(incidents, states).iter_rows(named=True)}
    assert repairs == {"inc-13": "repaired", "inc-b": "repaired", "inc-c": "repaired", "inc-d": "not_drained"}


def test_a_reboot_requested_long_before_the_fault_stays_planned() -> None:
    """n1: the reboot came first (02:30), the fault's line at 03:12, 42 min after the request: no link, planned
    work. n2: requested at 03:10, 2 min before the line (the drain for it within incident_repairs' 30 min before
    the first evidence): incident_repairs times the fault's repair by this outage, so it is the fault's down time
    (it was planned under the old 30-min-after window: the two marts disagreed on the same outage)."""
    states = _states([("n1", t(12, 2, 30), t(12, 2, 45), "Reboot ASAP"),
                      ("n2", t(12, 3, 10), t(12, 3, 25), "Reboot ASAP")])
    incidents = _incidents([("inc-1", "gpu", t(12, 3, 12), "n1"), ("inc-2", "gpu", t(12, 3, 12), "n2")])
    daily = {r["node"]: (r["down_hardware_hours"], r["down_maintenance_hours"])
             for r in _daily(states, incidents).iter_rows(named=True)}
    assert daily == {"n1": (0.0, 0.25), "n2": (0.25, 0.0)}
    repairs = {r["incident_id"]: r["repair_state"] for r in link_incidents(incidents, states).iter_rows(named=True)}
    assert repairs == {"inc-1": "not_drained", "inc-2": "repaired"}


def test_a_reboot_with_a_reason_of_its_own_keeps_it() -> None:
    # "Reboot ASAP for kernel update" names planned work (rule planned_maintenance), fault or not.
    states = _states([("n1", t(12, 3, 10), t(12, 3, 25), "Reboot ASAP for kernel update")])
    daily = _daily(states, _incidents([("inc-1", "gsp_firmware", t(12, 3), "n1")]))
    assert daily.select("down_hardware_hours", "down_maintenance_hours").row(0) == (0.0, 0.25)
