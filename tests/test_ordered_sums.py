"""Reruns change nothing, to the last bit: float sums a mart stores do not depend on row order.

Two roll-ups of the same benchmark-year warehouse once stored alert incidents' lost GPU-hours and
availability hours differing in the last bits (Polars' parallel group-by adds a group's rows in a
varying order). These tests feed the same rows in other orders and compare bits, not approximations.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.failures.taxonomy import incident_impact
from gpusre.models.ordered_sums import ordered_sum
from gpusre.models.reliability.node_availability import (availability_by_component, down_segments,
                                                         node_availability_daily)

UTC = timezone.utc
_FLOATS = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


def _shuffled(frame: pl.DataFrame, seed: int) -> pl.DataFrame:
    order = list(range(frame.height))
    random.Random(seed).shuffle(order)
    return frame[order]


def _group_sums(frame: pl.DataFrame) -> list[tuple[int, float]]:
    return frame.group_by("g").agg(ordered_sum("x")).sort("g").rows()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), _FLOATS), min_size=1, max_size=60), st.integers(0, 2**32))
def test_a_group_sum_has_the_same_bits_in_any_row_order(rows: list[tuple[int, float]], seed: int) -> None:
    frame = pl.DataFrame(rows, schema={"g": pl.Int64, "x": pl.Float64}, orient="row")
    assert _group_sums(_shuffled(frame, seed)) == _group_sums(frame)


def test_a_large_group_sum_has_the_same_bits_in_any_row_order() -> None:
    # Large enough for the group-by to run on several threads, values of very different magnitudes
    # (where the order of the terms shows in the last bits).
    rng = random.Random(7)
    frame = pl.DataFrame({"g": [rng.randrange(40) for _ in range(300_000)],
                          "x": [rng.choice((1e-3, 1.0, 1e6)) * rng.random() for _ in range(300_000)]})
    first = _group_sums(frame)
    assert all(_group_sums(_shuffled(frame, seed)) == first for seed in range(3))
    assert [g for g, _ in first] == list(range(40))


def test_availability_by_component_is_the_same_in_any_row_order() -> None:
    rng = random.Random(3)
    # 300 nodes over three months: large enough that a plain sum gave 4 different results in 6 calls.
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    nodes = [f"gpu{i:03d}" for i in range(300)]
    rows = []
    for node in nodes:
        t = t0 + timedelta(minutes=rng.randrange(600))
        for _ in range(40):
            start = t + timedelta(minutes=rng.randrange(60, 3000), seconds=rng.random())
            end = start + timedelta(minutes=rng.randrange(5, 900), microseconds=rng.randrange(10**6))
            kind = rng.choice(("hardware", "hardware", "maintenance"))
            rows.append((node, start, end, kind, "gpu" if kind == "hardware" else "maintenance",
                         rng.choice(("gpu_memory", "network", "nvlink")) if kind == "hardware" else None))
            t = end
    states = pl.DataFrame(rows, schema={"node": pl.String, "start_ts": pl.Datetime("us", "UTC"),
                                        "end_ts": pl.Datetime("us", "UTC"), "availability_class": pl.String,
                                        "reason_class": pl.String, "reason_component": pl.String}, orient="row")
    as_of = datetime(2026, 4, 1, tzinfo=UTC)

    def computed(frame: pl.DataFrame) -> pl.DataFrame:
        segments = down_segments(frame, as_of)
        daily = node_availability_daily(frame, nodes, date(2026, 1, 1), date(2026, 3, 31), as_of=as_of)
        return availability_by_component(_shuffled(daily, 11), _shuffled(segments, 12), frame)

    first = computed(states)
    assert first.height > 5 and first["down_node_hours"].sum() > 0
    for seed in range(5):
        assert computed(_shuffled(states, seed) if seed % 2 else states).rows() == first.rows()


def test_incident_impact_lost_hours_are_the_same_in_any_row_order() -> None:
    rng = random.Random(5)
    end = datetime(2026, 2, 1, tzinfo=UTC)
    incidents = pl.DataFrame({"incident_id": [f"i{k}" for k in range(8)], "end_ts": [end] * 8,
                              "nodes": [[f"n{k}"] for k in range(8)]},
                             schema_overrides={"end_ts": pl.Datetime("us", "UTC")})
    kills = pl.DataFrame({"job_id": [f"j{k % 900}" for k in range(3000)],
                          "attribution": ["infrastructure"] * 3000,
                          "incident_id": [f"i{rng.randrange(8)}" for _ in range(3000)],
                          "n_gpus": [8] * 3000,
                          "lost_gpu_hours": [rng.choice((1e-4, 1.0, 1e4)) * rng.random() for _ in range(3000)]})
    jobs = pl.DataFrame(schema={"state": pl.String, "start_ts": pl.Datetime("us", "UTC"), "nodes": pl.List(pl.String)})
    first = incident_impact(incidents, kills, jobs)
    assert first["lost_gpu_hours"].min() > 0
    for seed in range(3):
        assert incident_impact(incidents, _shuffled(kills, seed), jobs).rows() == first.rows()
