"""Hardware incidents read a recovery line for the part it names, not for every part of its node (outside probe X,
2026-12-05: an 8-rail HGX B200 cluster).

``merge_incidents`` asks the recovery lines two questions, both once answered by node (and class) only:

* the leaf-switch (and burst, rack) rule: how many nodes were out at one moment — a node was "out" until ANY
  recovery of the class, so on an 8-rail node one rail flapping back ended the node's outage while another
  rail was still down, and the node stopped counting toward the switch's ``fabric_min_nodes``;
* the flap chain: two fault blocks of one node and component are one flapping fault when the part came back
  in between — any recovery of the class counted, so rail B's flap chained two failures of rail A.

Rule (``repair_times.same_part``): a recovery line and a fault line are about the same part when their
``gpu_pci`` and ``device_pci`` agree wherever both carry one (the port too, where both carry one of the same
kind); a line naming no part answers for every part of its node — so a site whose link lines name no port keeps
the earlier behaviour (the ``*_without_parts`` tests).

Frames are hand-built ``core.node_events`` rows (raw lines classified as the ingest does); every expectation
below is worked out by hand in its test. The 30-min incident window and the catalog's leaf rule (3 nodes under
one leaf out at once, chained within 30 min) apply.
"""

from __future__ import annotations

from datetime import datetime, timezone

import polars as pl
import pytest

from node_event_lines import events_with_parts

from gpusre.models.failures.hw_incidents import EVENT_SCHEMA, merge_incidents
from gpusre.models.reliability.repair_times import PART_COLUMNS

UTC = timezone.utc
DT = pl.Datetime("us", "UTC")

#: Two rails of one 8-rail node (the probe's u07: mlx5_2 and mlx5_5), and the single rail logged on the others.
RAIL_A, RAIL_B, RAIL_X = ("0000:40:00.0", "mlx5_2"), ("0000:9a:00.0", "mlx5_5"), ("0000:8b:00.0", "mlx5_0")
LEAF = {"leaf1": ["n1", "n2", "n3", "n4"]}


def t(h: int, m: int = 0, s: int = 0) -> datetime:
    """2026-11-26 h:m:s UTC (the probe's day)."""
    return datetime(2026, 11, 26, h, m, s, tzinfo=UTC)


def down(rail: tuple[str, str]) -> str:
    return f"mlx5_core {rail[0]} {rail[1]}: Port: 1 Link DOWN"


def up(rail: tuple[str, str]) -> str:
    return f"mlx5_core {rail[0]} {rail[1]}: Port: 1 Link ACTIVE"


def events(lines: list[tuple[datetime, str, str]], *, parts: str = "named") -> pl.DataFrame:
    """``core.node_events`` rows (event ids 1.. in order) of ``(ts, node, raw line)``, classified as the ingest
    does. ``parts``: ``named`` keeps the part columns the lines give (``device_pci``, ``port``); ``null`` keeps
    the columns empty and ``absent`` drops them (``gpu_pci``, an :data:`EVENT_SCHEMA` column, null): a site whose
    link lines name no port."""
    frame = events_with_parts(lines)
    assert frame.filter(pl.col("kind").is_in(["ib_link_down", "ib_link_up"]))["port"].null_count() == 0
    if parts == "null":
        return frame.with_columns(pl.lit(None, pl.String).alias(c) for c in PART_COLUMNS)
    if parts == "absent":
        return frame.drop(c for c in PART_COLUMNS if c not in EVENT_SCHEMA).with_columns(
            pl.lit(None, pl.String).alias("gpu_pci"))
    return frame


def summary(incidents: pl.DataFrame) -> list[tuple]:
    return incidents.select("component", "scope", "leaf_switch", "nodes", "n_events", "start_ts", "end_ts").rows()


# (a) A leaf switch with one 8-rail node among its three downed nodes.
#   n1 rail A DOWN 10:00:00 (stays down until 10:20:00); n1 rail B DOWN 10:00:10, ACTIVE 10:00:20 (a flap);
#   n2 DOWN 10:00:40, n3 DOWN 10:00:50; n2, n3 and n1's rail A ACTIVE 10:20:00.
LEAF_LINES = [(t(10), "n1", down(RAIL_A)), (t(10, 0, 10), "n1", down(RAIL_B)), (t(10, 0, 20), "n1", up(RAIL_B)),
              (t(10, 0, 40), "n2", down(RAIL_X)), (t(10, 0, 50), "n3", down(RAIL_X)),
              (t(10, 20), "n1", up(RAIL_A)), (t(10, 20), "n2", up(RAIL_X)), (t(10, 20), "n3", up(RAIL_X))]


def test_a_node_with_one_rail_still_down_counts_toward_the_leaf_burst() -> None:
    # n1 is out while rail A is (10:00:00 - 10:20:00): rail B's ACTIVE at 10:00:20 answers rail B only.
    # n2 is out from 10:00:40 and n3 from 10:00:50, both until 10:20:00: at 10:00:50 three nodes under leaf1 are
    # out (the catalog's 3) -> one network_switch incident of leaf1 over the 4 DOWN lines (ACTIVE lines are no
    # failures), 10:00:00 - 10:00:50.
    incidents, members = merge_incidents(events(LEAF_LINES), topology=LEAF)
    assert summary(incidents) == [
        ("network_switch", "leaf_switch", "leaf1", ["n1", "n2", "n3"], 4, t(10), t(10, 0, 50))]
    assert sorted(members["event_id"].to_list()) == [1, 2, 4, 5]


def test_a_node_with_one_rail_still_down_counts_toward_a_fabric_burst() -> None:
    # The same lines with no leaf_switches configured: the burst rule (link failures chained with gaps <= 60 s:
    # 10:00:00, :10, :40, :50) counts nodes out the same way -> 3 out at 10:00:50, one fabric incident.
    incidents, _ = merge_incidents(events(LEAF_LINES))
    assert summary(incidents) == [
        ("network_switch", "fabric", None, ["n1", "n2", "n3"], 4, t(10), t(10, 0, 50))]
    # Without parts, n1 is back at 10:00:20 (rail B's ACTIVE), 2 nodes out at most: three node incidents.
    incidents, _ = merge_incidents(events(LEAF_LINES, parts="absent"))
    assert [r[1] for r in summary(incidents)] == ["node", "node", "node"]


def test_a_node_whose_rails_all_came_back_is_not_out() -> None:
    # Control (cable faults in turn): rail A also back at 10:00:30, before n2 went down. n1's parts are then out
    # 10:00:00 - 10:00:30 (A) and 10:00:10 - 10:00:20 (B): n1 is back when n2 (10:00:40) and n3 (10:00:50) go
    # down, at most 2 nodes out -> no leaf or burst incident. Per node: n1's two DOWN lines (10 s apart) are one
    # network incident; n2 and n3 one each.
    lines = [*LEAF_LINES[:3], (t(10, 0, 30), "n1", up(RAIL_A)), *LEAF_LINES[3:5], *LEAF_LINES[6:]]
    incidents, _ = merge_incidents(events(lines), topology=LEAF)
    assert summary(incidents) == [
        ("network", "node", None, ["n1"], 2, t(10), t(10, 0, 10)),
        ("network", "node", None, ["n2"], 1, t(10, 0, 40), t(10, 0, 40)),
        ("network", "node", None, ["n3"], 1, t(10, 0, 50), t(10, 0, 50))]


@pytest.mark.parametrize("parts", ["null", "absent"])
def test_a_leaf_burst_without_parts_is_read_as_before(parts: str) -> None:
    # (c) The same lines with no part columns (a site whose link lines name no port): any recovery of n1 ends its
    # outage. n1 out 10:00:00 until its first recovery after its last failure (10:00:10): rail B's ACTIVE at
    # 10:00:20. n2 (10:00:40) and n3 (10:00:50) make 2 nodes out at most -> no leaf incident, as before; per
    # node as in the control above.
    incidents, _ = merge_incidents(events(LEAF_LINES, parts=parts), topology=LEAF)
    assert summary(incidents) == [
        ("network", "node", None, ["n1"], 2, t(10), t(10, 0, 10)),
        ("network", "node", None, ["n2"], 1, t(10, 0, 40), t(10, 0, 40)),
        ("network", "node", None, ["n3"], 1, t(10, 0, 50), t(10, 0, 50))]


# (b) One node, rail A down / (rail B flaps) / rail A down again, A never logging ACTIVE in between.
#   n5 rail A DOWN 10:00:00; rail B DOWN 10:10:00, ACTIVE 10:10:30; rail A DOWN 11:00:00.
#   Blocks (30-min window): X = {A 10:00:00, B 10:10:00}, Y = {A 11:00:00} (50 min after 10:10:00).
FLAP_LINES = [(t(10), "n5", down(RAIL_A)), (t(10, 10), "n5", down(RAIL_B)), (t(10, 10, 30), "n5", up(RAIL_B)),
              (t(11), "n5", down(RAIL_A))]


def test_another_rails_flap_does_not_chain_a_rails_failures() -> None:
    # Y's rail A last failed in X at 10:00:00; no recovery of rail A follows before 11:00:00 (B's ACTIVE at
    # 10:10:30 is rail B's) -> no flap edge: X (2 events, 10:00:00 - 10:10:00) and Y (1 event) are two incidents.
    incidents, _ = merge_incidents(events(FLAP_LINES))
    assert summary(incidents) == [
        ("network", "node", None, ["n5"], 2, t(10), t(10, 10)),
        ("network", "node", None, ["n5"], 1, t(11), t(11))]


def test_a_rails_own_recovery_still_chains_its_flap() -> None:
    # Control: rail A logs ACTIVE at 10:30:00, after its failure at 10:00:00 and before it fails again at
    # 11:00:00 (within a day, no repair) -> one flapping fault: 3 DOWN lines, 10:00:00 - 11:00:00.
    lines = [*FLAP_LINES[:3], (t(10, 30), "n5", up(RAIL_A)), FLAP_LINES[3]]
    incidents, _ = merge_incidents(events(lines))
    assert summary(incidents) == [("network", "node", None, ["n5"], 3, t(10), t(11))]


def test_a_flap_between_two_failures_of_another_rail_chains_neither() -> None:
    # Rail B's block between rail A's: A DOWN 10:00:00; B DOWN 11:00:00, ACTIVE 11:00:30; A DOWN 12:00:00 (each
    # an hour apart: three blocks). A's failure at 12:00 has its previous one at 10:00 (no A recovery between);
    # B's has none before it; B's ACTIVE answers B only, which fails no more -> three incidents. (By node only,
    # B's ACTIVE chained B's block with A's at 12:00.)
    lines = [(t(10), "n5", down(RAIL_A)), (t(11), "n5", down(RAIL_B)), (t(11, 0, 30), "n5", up(RAIL_B)),
             (t(12), "n5", down(RAIL_A))]
    incidents, _ = merge_incidents(events(lines))
    assert summary(incidents) == [
        ("network", "node", None, ["n5"], 1, t(10), t(10)),
        ("network", "node", None, ["n5"], 1, t(11), t(11)),
        ("network", "node", None, ["n5"], 1, t(12), t(12))]
    # Without parts any recovery of the node answers: B's ACTIVE (11:00:30) falls between the block at 11:00
    # and the one at 12:00 -> chained, as before: two incidents.
    incidents, _ = merge_incidents(events(lines, parts="absent"))
    assert summary(incidents) == [
        ("network", "node", None, ["n5"], 1, t(10), t(10)),
        ("network", "node", None, ["n5"], 2, t(11), t(12))]


@pytest.mark.parametrize("parts", ["null", "absent"])
def test_a_flap_without_parts_is_read_as_before(parts: str) -> None:
    # (c) FLAP_LINES with no part columns: the first recovery after X's last logged failure (10:10:00) is the
    # ACTIVE at 10:10:30, before Y (11:00:00), within a day, no repair -> one flapping fault, 3 events, as before.
    incidents, _ = merge_incidents(events(FLAP_LINES, parts=parts))
    assert summary(incidents) == [("network", "node", None, ["n5"], 3, t(10), t(11))]
