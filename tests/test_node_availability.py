"""Node availability from node states: overlaps merged and attributed to the earliest open event,
ongoing events end at as_of, maintenance windows, and a small case computed by hand."""

from __future__ import annotations

import doctest
from datetime import date, datetime, timedelta, timezone

import polars as pl
import pytest

from gpusre.models.reliability import node_availability as node_availability
from gpusre.models.reliability.node_availability import DAILY_SCHEMA, MaintenanceSpan, down_segments, node_availability_daily

UTC = timezone.utc


def _t(day: int, hour: int) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def _states() -> pl.DataFrame:
    """n1: an Xid drain 20:00 -> 06:00 across midnight, overlapped by a DOWN (not responding) 22:00 -> 09:00,
    then a health-check drain from 12:00 still open; n2: an unknown-cause drain 23:00 -> 01:00 that
    runs into a planned window 00:00-02:00; n3: nothing."""
    return pl.DataFrame(
        {
            "node": ["n1", "n1", "n1", "n2"],
            "start_ts": [_t(1, 20), _t(1, 22), _t(2, 12), _t(1, 23)],
            "end_ts": [_t(2, 6), _t(2, 9), None, _t(2, 1)],
            "state": ["DRAIN", "DOWN", "DRAIN", "DRAIN"],
            "availability_class": ["hardware", "unknown", "health_check", "unknown"],
            "reason_class": ["gpu_xid", "not_responding", "health_check", "unknown"],
        },
        schema_overrides={"start_ts": pl.Datetime("us", "UTC"), "end_ts": pl.Datetime("us", "UTC")},
    )


WINDOW = [MaintenanceSpan(_t(2, 0), _t(2, 2), frozenset({"n2"}))]
AS_OF = _t(2, 18)


def test_doctests() -> None:
    assert doctest.testmod(node_availability).failed == 0


def test_hand_computed_day_by_day() -> None:
    daily = node_availability_daily(_states(), ["n1", "n2", "n3"], date(2026, 3, 1), date(2026, 3, 2),
                                    as_of=AS_OF, maintenance=WINDOW)
    assert daily.schema == pl.Schema(DAILY_SCHEMA)
    cols = ["observed_hours", "in_service_hours", "down_hours", "down_hardware_hours", "down_maintenance_hours",
            "down_health_check_hours", "down_other_hours", "source"]
    got = {(r["node"], r["day"].day): tuple(r[c] for c in cols) for r in daily.iter_rows(named=True)}
    assert got == {
        # n1, Mar 1: down 20:00-24:00, all of it the Xid drain's (the DOWN from 22:00 overlaps it).
        ("n1", 1): (24.0, 20.0, 4.0, 4.0, 0.0, 0.0, 0.0, "node_states"),
        # n1, Mar 2 (until as_of 18:00): Xid drain 00-06 (6 h hardware), then the DOWN alone 06-09
        # (3 h other), up 09-12, the open health-check drain 12-18 (6 h). 21 h of events, 15 h down.
        ("n1", 2): (18.0, 3.0, 15.0, 6.0, 0.0, 6.0, 3.0, "node_states"),
        # n2: 23-24 unknown (other); 00-01 inside the planned window counts as maintenance.
        ("n2", 1): (24.0, 23.0, 1.0, 0.0, 0.0, 0.0, 1.0, "node_states"),
        ("n2", 2): (18.0, 17.0, 1.0, 0.0, 1.0, 0.0, 0.0, "node_states"),
        ("n3", 1): (24.0, 24.0, 0.0, 0.0, 0.0, 0.0, 0.0, "assumed_in_service"),
        ("n3", 2): (18.0, 18.0, 0.0, 0.0, 0.0, 0.0, 0.0, "assumed_in_service"),
    }


def test_segments_attribute_overlaps_to_the_earliest_open_event() -> None:
    segs = down_segments(_states(), AS_OF, WINDOW)
    by_event = segs.group_by("node", "event_start_ts").agg(pl.col("hours").sum()).sort("node", "event_start_ts").rows()
    assert by_event == [
        ("n1", _t(1, 20), 10.0),   # the Xid drain: 20:00 -> 06:00
        ("n1", _t(1, 22), 3.0),    # the DOWN only where the drain no longer covers it: 06:00 -> 09:00
        ("n1", _t(2, 12), 6.0),    # ongoing: ends at as_of
        ("n2", _t(1, 23), 2.0),
    ]
    n2 = segs.filter(pl.col("node") == "n2").select("start_ts", "end_ts", "availability_class", "in_maintenance_window").rows()
    assert n2 == [(_t(1, 23), _t(2, 0), "unknown", False), (_t(2, 0), _t(2, 1), "maintenance", True)]
    # Segments never overlap on a node.
    for _, part in segs.sort("start_ts").group_by("node"):
        assert (part["start_ts"].shift(-1).drop_nulls() >= part["end_ts"].head(part.height - 1)).all()


def test_identical_overlapping_events_count_once() -> None:
    states = pl.DataFrame({"node": ["n", "n"], "start_ts": [_t(1, 0), _t(1, 0)], "end_ts": [_t(1, 6), _t(1, 4)],
                           "availability_class": ["hardware", "software"]})
    daily = node_availability_daily(states, ["n"], date(2026, 3, 1), date(2026, 3, 1), as_of=_t(3, 0))
    assert daily.select("down_hours", "down_hardware_hours", "down_other_hours").row(0) == (6.0, 6.0, 0.0)


def test_nodes_seen_only_in_states_are_added_and_days_after_as_of_are_dropped() -> None:
    daily = node_availability_daily(_states(), ["n3"], date(2026, 3, 1), date(2026, 3, 10), as_of=AS_OF)
    assert sorted(set(daily["node"])) == ["n1", "n2", "n3"]
    assert daily["day"].max() == date(2026, 3, 2)
    assert daily.filter(pl.col("day") == date(2026, 3, 2))["observed_hours"].unique().to_list() == [18.0]


def test_an_event_older_than_the_range_is_clipped_to_it() -> None:
    states = pl.DataFrame({"node": ["n"], "start_ts": [datetime(2025, 1, 1, tzinfo=UTC)], "end_ts": [None],
                           "availability_class": ["hardware"]},
                          schema_overrides={"end_ts": pl.Datetime("us", "UTC")})
    daily = node_availability_daily(states, ["n"], date(2026, 3, 1), date(2026, 3, 2), as_of=AS_OF)
    assert daily.select("day", "down_hours", "in_service_hours").rows() == [
        (date(2026, 3, 1), 24.0, 0.0), (date(2026, 3, 2), 18.0, 0.0)]


def test_empty_inputs_and_naive_times() -> None:
    empty = _states().clear()
    daily = node_availability_daily(empty, ["a", "b"], date(2026, 3, 1), date(2026, 3, 1), as_of=_t(2, 0))
    assert daily.height == 2 and daily["in_service_hours"].to_list() == [24.0, 24.0]
    assert node_availability_daily(empty, [], date(2026, 3, 1), date(2026, 3, 1), as_of=_t(2, 0)).height == 0
    assert down_segments(empty, _t(2, 0)).height == 0
    with pytest.raises(ValueError, match="naive"):
        down_segments(_states(), datetime(2026, 3, 2))


def test_since_clips_segments_but_keeps_the_attribution() -> None:
    segs = down_segments(_states(), AS_OF, since=_t(2, 3))
    # From 03:00 on Mar 2: the Xid drain still owns 03-06 although the DOWN started before it was cut.
    assert segs.select("node", "start_ts", "end_ts", "reason_class").rows() == [
        ("n1", _t(2, 3), _t(2, 6), "gpu_xid"), ("n1", _t(2, 6), _t(2, 9), "not_responding"),
        ("n1", _t(2, 12), _t(2, 18), "health_check")]


def test_availability_by_component_class_hand_computed() -> None:
    from datetime import date as _date

    from gpusre.models.reliability.node_availability import availability_by_component

    utc = timezone.utc
    t0 = datetime(2026, 1, 1, tzinfo=utc)
    states = pl.DataFrame({
        "node": ["a", "b", "b"],
        "start_ts": [t0 + timedelta(hours=2), t0 + timedelta(hours=1), t0 + timedelta(hours=20)],
        "end_ts": [t0 + timedelta(hours=8), t0 + timedelta(hours=4), t0 + timedelta(hours=22)],
        "availability_class": ["hardware", "hardware", "maintenance"],
        "reason_class": ["gpu", "network", "maintenance"],
        "reason_component": ["gpu_memory", "network", None],
    })
    segments = down_segments(states, t0 + timedelta(days=1))
    daily = node_availability_daily(states, ["a", "b"], _date(2026, 1, 1), _date(2026, 1, 1),
                                    as_of=t0 + timedelta(days=1))
    out = availability_by_component(daily, segments, states)
    got = {(r["period"], r["component_class"]): (r["down_node_hours"], r["scheduled_node_hours"])
           for r in out.iter_rows(named=True)}
    # 48 node-hours observed, 2 of them planned maintenance -> 46 scheduled; 6 h GPU + 3 h network down
    assert got[("all", "gpu")] == (6.0, 46.0)
    assert got[("all", "network")] == (3.0, 46.0)
    assert got[("all", "all")] == (9.0, 46.0)
    assert out.filter((pl.col("period") == "2026-01") & (pl.col("component_class") == "all")).item(0, "availability") \
        == pytest.approx(1 - 9 / 46)


def test_availability_by_component_splits_outages_at_month_ends() -> None:
    """gpu001 drained 10-31 12:00 .. 11-01 12:00 (GPU), gpu002 never: each month of 2 nodes x 24 h
    observed has 12 h down -> 0.75 in both (the outage once all went to October, and November had no row)."""
    from datetime import date as _date

    from gpusre.models.reliability.node_availability import availability_by_component

    utc = timezone.utc
    states = pl.DataFrame({
        "node": ["gpu001"], "start_ts": [datetime(2026, 10, 31, 12, tzinfo=utc)],
        "end_ts": [datetime(2026, 11, 1, 12, tzinfo=utc)], "availability_class": ["hardware"],
        "reason_class": ["gpu"], "reason_component": ["gpu_memory"]})
    as_of = datetime(2026, 11, 2, tzinfo=utc)
    segments = down_segments(states, as_of)
    daily = node_availability_daily(states, ["gpu001", "gpu002"], _date(2026, 10, 31), _date(2026, 11, 1), as_of=as_of)
    out = availability_by_component(daily, segments, states)
    got = {(r["period"], r["component_class"]): (r["down_node_hours"], r["scheduled_node_hours"], r["availability"])
           for r in out.iter_rows(named=True)}
    assert got[("2026-10", "all")] == (12.0, 48.0, 0.75)
    assert got[("2026-11", "all")] == (12.0, 48.0, 0.75)
    assert got[("2026-10", "gpu")][0] == got[("2026-11", "gpu")][0] == 12.0
    assert got[("all", "all")] == (24.0, 96.0, 0.75)
