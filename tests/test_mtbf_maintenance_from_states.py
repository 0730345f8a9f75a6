"""Maintenance recorded only in Slurm node states feeds the before/after-maintenance MTBF comparison
(marts.mtbf_trend), deduplicated against cluster.yaml's windows.

Hand rule (models.reliability.mtbf.maintenance_from_node_states): outages classed maintenance that overlap
or start within 12 h of the earlier ones' end are one window; it counts when it touched at least
max(2, ceil(10 % of the fleet)) nodes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl

from gpusre.models.reliability.marts import (ReliabilityInputs, ReliabilitySettings, compute_reliability_marts)
from gpusre.models.reliability.mtbf import (MaintenanceSpan, maintenance_from_node_states, mtbf_around_maintenance,
                                            with_state_maintenance)

UTC = timezone.utc
NODES = [f"n{i}" for i in range(10)]


def t(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 9, day, hour, tzinfo=UTC)


def outages(rows: list[tuple[str, datetime, datetime | None, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                      "end_ts": pl.Datetime("us", "UTC"), "reason": pl.String}, orient="row")


def test_a_rolling_fleet_drain_is_one_window_and_a_single_node_is_none() -> None:
    rows = ([(f"n{i}", t(22, 0), t(22, 6), "Planned maintenance: OS image upgrade") for i in range(4)]
            # second batch 8 h after the first ended: same window (gap 12 h)
            + [(f"n{i}", t(22, 14), t(22, 20), "Planned maintenance: OS image upgrade") for i in (4, 5)]
            + [("n6", t(22, 14), t(22, 20), "maint - firmware")]
            # one node alone, days later: a repair, not a fleet window (needs max(2, ceil(1.0)) = 2 nodes)
            + [("n9", t(26, 0), t(26, 5), "Planned maintenance: swap PSU")]
            # still open: nothing after it to compare
            + [("n1", t(28, 0), None, "Planned maintenance: rack move"), ("n2", t(28, 0), None, "rack move")])
    got = maintenance_from_node_states(outages(rows), len(NODES))
    assert got == [MaintenanceSpan(t(22, 0), t(22, 20), frozenset({"n0", "n1", "n2", "n3", "n4", "n5", "n6"}),
                                   "OS image upgrade")]
    # a 20-node fleet needs 2 nodes as well; a 100-node fleet needs 10: the 7-node drain is no fleet window
    assert maintenance_from_node_states(outages(rows), 100) == []
    assert maintenance_from_node_states(outages([]), 10) == []


def test_windows_in_both_places_count_once_under_the_configured_reason() -> None:
    configured = [MaintenanceSpan(t(22, 0), t(23, 0), None, "OS image upgrade (cluster.yaml)")]
    states = [MaintenanceSpan(t(22, 1), t(22, 20), frozenset(NODES), "OS image upgrade"),
              MaintenanceSpan(t(5), t(5, 8), frozenset(NODES[:3]), "driver 570")]
    assert with_state_maintenance(configured, states) == [states[1], configured[0]]


def _incidents(starts: list[tuple[datetime, str]]) -> pl.DataFrame:
    return pl.DataFrame({"incident_id": [f"i{k}" for k in range(len(starts))], "component": ["gpu_xid"] * len(starts),
                         "severity": ["critical"] * len(starts), "start_ts": [s for s, _ in starts],
                         "end_ts": [s + timedelta(minutes=1) for s, _ in starts], "nodes": [[n] for _, n in starts],
                         "scope": ["node"] * len(starts), "recovered_ts": [None] * len(starts),
                         "repaired_ts": [None] * len(starts)},
                        schema_overrides={"start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC"),
                                          "recovered_ts": pl.Datetime("us", "UTC"),
                                          "repaired_ts": pl.Datetime("us", "UTC")})


def test_the_comparison_row_comes_from_node_states_alone() -> None:
    # 10 nodes, 2026-09-01 … 2026-09-30, the whole fleet drained 09-15 00:00 … 09-16 00:00 (node states only);
    # 3 failures before (09-02, 09-05, 09-09), none after. Exposure without node-state rows: the windows are out,
    # before = 10 × 14 d × 24 h = 3,360 h, after = 10 × 14 d × 24 h = 3,360 h.
    win = maintenance_from_node_states(outages([(n, t(15), t(16), "Planned maintenance: OS image upgrade")
                                                for n in NODES]), len(NODES))
    inc = _incidents([(t(2), "n1"), (t(5), "n2"), (t(9), "n3")])
    out = mtbf_around_maintenance(inc, NODES, t(1), t(30), win)
    cluster = out.filter(pl.col("scope") == "cluster").row(0, named=True)
    assert cluster["comparison"] == "after OS image upgrade (2026-09-15)"
    assert cluster["period"] == "2026-09-16 00:00 to 2026-09-30 00:00"
    assert cluster["previous_period"] == "2026-09-01 00:00 to 2026-09-15 00:00"
    assert (cluster["failures"], cluster["previous_failures"]) == (0, 3)
    assert cluster["previous_mtbf_hours"] == 3360 / 3
    # equal exposure on both sides: p = P(0 of 3 after | 3) two-sided = 2 × 0.5³ = 0.25
    assert abs(cluster["p_value"] - 0.25) < 1e-12 and cluster["direction"] == "no significant change"


def test_compute_reliability_marts_reads_node_state_maintenance() -> None:
    inc = _incidents([(t(2), "n1"), (t(5), "n2"), (t(9), "n3")])
    empty = pl.DataFrame()
    inputs = ReliabilityInputs(
        jobs=empty, instances=empty, job_attribution=empty, instance_attribution=empty, incidents=inc,
        utilization=empty, observed_nodes=[],
        availability=pl.DataFrame(schema={"day": pl.Date, "node": pl.String, "observed_hours": pl.Float64,
                                          "in_service_hours": pl.Float64, "down_maintenance_hours": pl.Float64,
                                          "source": pl.String}),
        t0=None, as_of=None, log_span=(t(1), t(30)),
        maintenance_outages=outages([(n, t(15), t(16), "Planned maintenance: OS image upgrade") for n in NODES]))
    marts = compute_reliability_marts(inputs, ReliabilitySettings(node_names=NODES, node_count=10))
    trend = marts["mtbf_trend"].filter(pl.col("comparison").str.starts_with("after"))
    assert set(trend.get_column("comparison")) == {"after OS image upgrade (2026-09-15)"}
    # the same window also in cluster.yaml: one comparison, the configured reason
    marts = compute_reliability_marts(inputs, ReliabilitySettings(
        node_names=NODES, node_count=10, maintenance=[MaintenanceSpan(t(15), t(16), None, "image v2")]))
    trend = marts["mtbf_trend"].filter(pl.col("comparison").str.starts_with("after"))
    assert set(trend.get_column("comparison")) == {"after image v2 (2026-09-15)"}
