"""The co-occurrence catalog (catalog/fault_signatures.csv): every rule's example lines, classified by the
event catalog, merge into one incident inside the rule's window and not beyond it."""

from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest

from gpusre.models.failures.fault_signatures import Signature, load_fault_signatures
from gpusre.models.failures.hw_incidents import failure_events, merge_incidents
from node_event_lines import events_from_lines

SIGNATURES = load_fault_signatures()


def test_catalog_loads_with_every_scope() -> None:
    assert {s.scope for s in SIGNATURES} == {"node", "leaf_switch", "storage"}


@pytest.mark.parametrize("sig", [s for s in SIGNATURES if s.scope == "node"], ids=lambda s: s.signature_id)
def test_node_signature_example_merges_within_window(sig: Signature) -> None:
    inside = timedelta(seconds=sig.window_s - 1)
    events = events_from_lines([(timedelta(0), "n1", sig.example_cause), (inside, "n1", sig.example_effect)])
    assert events.height == 2, f"{sig.signature_id}: both example lines must be recognized events"
    assert failure_events(events).height >= 1
    incidents, members = merge_incidents(events)
    both = members.group_by("incident_id").len().filter(pl.col("len") == 2)
    assert both.height == 1, f"{sig.signature_id}: examples {inside} apart are not one incident"
    row = incidents.filter(pl.col("incident_id") == both["incident_id"][0]).row(0, named=True)
    cause_component = events["component"][0]
    if failure_events(events.head(1)).height and sig.cause != sig.effect:
        assert row["component"] == cause_component, f"{sig.signature_id}: named {row['component']}, not the cause"


@pytest.mark.parametrize("sig", [s for s in SIGNATURES if s.scope == "node"], ids=lambda s: s.signature_id)
def test_node_signature_example_splits_beyond_every_window(sig: Signature) -> None:
    # Beyond the widest node window of the catalog, no rule joins the two lines.
    far = timedelta(seconds=max(s.window_s for s in SIGNATURES if s.scope == "node") + 1)
    events = events_from_lines([(timedelta(0), "n1", sig.example_cause), (far, "n1", sig.example_effect)])
    _, members = merge_incidents(events)
    assert members.group_by("incident_id").len().filter(pl.col("len") == 2).is_empty()


@pytest.mark.parametrize("sig", [s for s in SIGNATURES if s.scope != "node"], ids=lambda s: s.signature_id)
def test_wide_signature_example_is_one_incident_on_min_nodes(sig: Signature) -> None:
    nodes = [f"gpu{i:02d}" for i in range(1, sig.min_nodes + 1)]
    lines = [(timedelta(seconds=10 * i), n, sig.example_cause) for i, n in enumerate(nodes)]
    lines += [(timedelta(seconds=60 + 10 * i), n, sig.example_effect) for i, n in enumerate(nodes)]
    topology = {"leaf01": nodes}
    incidents, _ = merge_incidents(events_from_lines(lines), topology=topology)
    assert incidents.height == 1
    row = incidents.row(0, named=True)
    assert row["scope"] == {"leaf_switch": "leaf_switch", "storage": "cluster"}[sig.scope]
    assert row["nodes"] == nodes
    # One node fewer than min_nodes: no multi-node incident.
    if sig.min_nodes > 1:
        few, _ = merge_incidents(events_from_lines([x for x in lines if x[1] != nodes[-1]]), topology=topology)
        assert "leaf_switch" not in few["scope"].to_list() and "cluster" not in few["scope"].to_list()
