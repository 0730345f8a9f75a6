"""Repair times across a chain of outages: a node that crashed (DOWN* "Not responding"), rebooted and was
drained for the part minutes later is repaired when it is back after the drain, not after the reboot.

Hand-made inputs modelled on the usual sequence after a DIMM panic; every expected value is computed by hand
in the comments.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.reliability.repair_times import (
    CHAIN_GAP,
    link_incidents,
    node_outages,
    outage_chains,
    repair_times,
)

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")
DIMM = "DIMM UE CPU1 DIMM C1 - replace DIMM"


def _t(day: int, h: int, m: int = 0, s: int = 0) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


def _states(rows: list[tuple[str, datetime, datetime | None, str, str]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"node": pl.String, "start_ts": DT, "end_ts": DT, "reason": pl.String,
                                      "reason_class": pl.String}, orient="row")


def _incident(iid: str, component: str, first: datetime, nodes: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"incident_id": [iid], "component": [component], "start_ts": [first],
                         "first_evidence_ts": [first], "end_ts": [first + timedelta(seconds=1)], "nodes": [nodes]},
                        schema_overrides={"start_ts": DT, "first_evidence_ts": DT, "end_ts": DT})


def _row(incidents: pl.DataFrame, states: pl.DataFrame) -> dict[str, object]:
    return link_incidents(incidents, states).row(0, named=True)


def test_gap_constant_is_documented_value() -> None:
    assert CHAIN_GAP == timedelta(minutes=30)


def test_drain_after_the_reboot_is_the_same_repair() -> None:
    # Panic 15:40:10; DOWN* 15:45:12-15:51:40 while it rebooted; drained for the DIMM 15:55 until 11-17 11:00.
    states = _states([("gpu020", _t(16, 15, 45, 12), _t(16, 15, 51, 40), "Not responding", "not_responding"),
                      ("gpu020", _t(16, 15, 55), _t(17, 11), DIMM, "host_memory")])
    row = _row(_incident("i2", "host_memory", _t(16, 15, 40, 10), ["gpu020"]), states)
    assert row["repair_state"] == "repaired"
    assert row["back_in_service_ts"] == _t(17, 11)
    # 11-17 11:00 - 11-16 15:40:10 = 19 h 19 min 50 s
    assert row["hours_to_repair"] == pytest.approx(19 + 19 / 60 + 50 / 3600)
    # detection is still the first outage: 15:45:12 - 15:40:10 = 5 min 2 s
    assert row["drain_start_ts"] == _t(16, 15, 45, 12)
    assert row["hours_to_detect"] == pytest.approx(302 / 3600)
    # the part-naming reason of the chain, not the crash's "Not responding"
    assert (row["drain_reason_class"], row["drain_reason"]) == ("host_memory", DIMM)


def test_chain_ending_in_an_open_drain_is_ongoing() -> None:
    # gpu012: DOWN* 13:07:05-13:12:30, DRAIN "RMA DIMM" from 13:15, still open at the end of the data.
    states = _states([("gpu012", _t(18, 13, 7, 5), _t(18, 13, 12, 30), "Not responding", "not_responding"),
                      ("gpu012", _t(18, 13, 15), None, "DIMM UE EDAC MC0 - RMA DIMM", "host_memory")])
    linked = link_incidents(_incident("i7", "host_memory", _t(18, 13, 2), ["gpu012"]), states)
    row = linked.row(0, named=True)
    assert row["repair_state"] == "ongoing"
    assert row["back_in_service_ts"] is None and row["hours_to_repair"] is None
    assert row["drain_reason"] == "DIMM UE EDAC MC0 - RMA DIMM"
    summary = repair_times(linked).row(0, named=True)
    assert (summary["repaired"], summary["ongoing"], summary["mttr_hours_p50"]) == (0, 1, None)


def test_crash_classified_as_os_still_follows_the_part_drain() -> None:
    # A panic whose incident names the OS (class host): the DIMM drain 3 min after the node came back is still
    # open, so the repair is ongoing (not "repaired after 2 min").
    states = _states([("gpu003", _t(20, 10, 5, 2), _t(20, 10, 7), "Not responding", "not_responding"),
                      ("gpu003", _t(20, 10, 10), None, "MCE bank 13 UE - replace DIMM", "host_memory")])
    assert _row(_incident("v1", "os", _t(20, 10, 0, 1), ["gpu003"]), states)["repair_state"] == "ongoing"


@pytest.mark.parametrize(("gap", "back"), [
    (timedelta(minutes=30), _t(16, 14)),                        # <= 30 min in service: one chain, back 14:00
    (timedelta(minutes=30, seconds=1), _t(16, 10, 10)),         # a real stretch in service: back at 10:10
])
def test_chain_gap_boundary(gap: timedelta, back: datetime) -> None:
    # DOWN* 10:00-10:10, then a DIMM drain starting `gap` later until 14:00.
    states = _states([("n1", _t(16, 10), _t(16, 10, 10), "Not responding", "not_responding"),
                      ("n1", _t(16, 10, 10) + gap, _t(16, 14), DIMM, "host_memory")])
    row = _row(_incident("i", "host_memory", _t(16, 9, 58), ["n1"]), states)
    assert row["back_in_service_ts"] == back
    # 14:00 - 9:58 = 4 h 2 min; 10:10 - 9:58 = 12 min
    assert row["hours_to_repair"] == pytest.approx(4 + 2 / 60 if back == _t(16, 14) else 12 / 60)
    # a broken chain keeps the outage's own reason (the later drain is not this incident's)
    assert row["drain_reason"] == (DIMM if back == _t(16, 14) else "Not responding")


def test_a_drain_for_another_part_ends_the_chain() -> None:
    # GPU drain 10:00-12:00 (Xid 79), then 10 min later an IB link drain 12:10-15:00: a second fault, so the GPU
    # repair ends at 12:00 (2 h after the 10:00 evidence); the network drain is another incident's.
    states = _states([("n1", _t(16, 10), _t(16, 12), "Xid 79 fell off the bus", "gpu_xid"),
                      ("n1", _t(16, 12, 10), _t(16, 15), "IB link down", "network")])
    row = _row(_incident("g", "gpu", _t(16, 10), ["n1"]), states)
    assert (row["back_in_service_ts"], row["hours_to_repair"]) == (_t(16, 12), 2.0)
    chains = outage_chains(node_outages(states)).select("outage_start_ts", "chain_end_ts").rows()
    assert chains == [(_t(16, 10), _t(16, 12)), (_t(16, 12, 10), _t(16, 15))]


def test_generic_outages_chain_through_to_the_named_drain() -> None:
    # Not responding 10:00-10:05, unexpected reboot 10:20-10:25, DIMM drain 10:40-18:00: gaps 15 min each,
    # one chain; every outage of it ends at 18:00 and names the DIMM drain.
    states = _states([("n1", _t(16, 10), _t(16, 10, 5), "Not responding", "not_responding"),
                      ("n1", _t(16, 10, 20), _t(16, 10, 25), "Node unexpectedly rebooted", "unexpected_reboot"),
                      ("n1", _t(16, 10, 40), _t(16, 18), DIMM, "host_memory")])
    chains = outage_chains(node_outages(states))
    assert chains["chain_end_ts"].to_list() == [_t(16, 18)] * 3
    assert chains["chain_reason"].to_list() == [DIMM] * 3
    # two nodes of one incident: back when the slower chain ends (18:00), 8 h after the 10:00 evidence
    other = _states([("n2", _t(16, 10, 1), _t(16, 11), "Not responding", "not_responding")])
    row = _row(_incident("i", "host_memory", _t(16, 10), ["n1", "n2"]), pl.concat([states, other]))
    assert (row["linked_nodes"], row["back_in_service_ts"], row["hours_to_repair"]) == (2, _t(16, 18), 8.0)
