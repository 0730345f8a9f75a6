"""Alert-flood detection: a synthetic arrival series with a known burst, the robust baseline, the
floor, episode merging, and edge cases."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from gpusre.models.alerts.floods import FloodSettings, arrival_counts, detect_floods, flood_buckets

T0 = datetime(2026, 9, 1, tzinfo=timezone.utc)


def poisson_arrivals(rate_per_hour: float, hours: float, seed: int, start: datetime = T0) -> list[datetime]:
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate_per_hour * hours)
    offsets = np.sort(rng.uniform(0, hours * 3600, n))
    return [start + timedelta(seconds=float(s)) for s in offsets]


def burst(start: datetime, n: int, minutes: float) -> list[datetime]:
    return [start + timedelta(seconds=minutes * 60 * i / n) for i in range(n)]


def test_a_known_burst_in_noisy_background_is_the_only_flood() -> None:
    # 3 days at ~12 alerts/h (~1 per 5-min bucket), plus 400 alerts in 20 min on day 2 at 14:00.
    background = poisson_arrivals(12, 72, seed=1)
    flood_start = T0 + timedelta(days=1, hours=14)
    alerts = pl.DataFrame({"starts_at": background + burst(flood_start, 400, 20)})
    floods = detect_floods(alerts)
    assert floods.height == 1
    f = floods.row(0, named=True)
    assert f["start_ts"] == flood_start and f["end_ts"] == flood_start + timedelta(minutes=20)
    assert f["n_buckets"] == 4
    in_window = sum(flood_start <= t < flood_start + timedelta(minutes=20) for t in background)
    assert f["n_alerts"] == 400 + in_window
    assert f["peak_alerts"] >= 100 and f["peak_rate_per_min"] == pytest.approx(f["peak_alerts"] / 5)
    assert f["baseline"] <= 3 and f["threshold"] == 10  # quiet baseline: the floor decides


def test_steady_high_rate_is_not_a_flood_but_a_jump_above_it_is() -> None:
    # A busy cluster: ~60 alerts per bucket all the time. 90 in a bucket is within 5 MADs; 300 is not.
    rng = np.random.default_rng(7)
    times: list[datetime] = []
    counts = rng.poisson(60, 600)
    counts[500] = 300
    for b, c in enumerate(counts):
        times += [T0 + timedelta(minutes=5 * b, seconds=float(s)) for s in rng.uniform(0, 300, c)]
    floods = detect_floods(pl.Series("starts_at", times))
    assert floods["start_ts"].to_list() == [T0 + timedelta(minutes=5 * 500)]
    assert floods["n_alerts"].to_list() == [300]
    assert 55 <= floods["baseline"][0] <= 65


def test_floor_and_merge_gap() -> None:
    quiet = [T0 + timedelta(hours=h) for h in range(48)]          # 1 alert/h
    small = burst(T0 + timedelta(hours=10, minutes=1), 6, 3)      # 6 in one bucket: under the floor of 10
    two = burst(T0 + timedelta(hours=20, minutes=1), 30, 3) + burst(T0 + timedelta(hours=20, minutes=11), 30, 3)
    series = pl.Series("t", quiet + small + two)
    floods = detect_floods(series)
    # The two bursts 10 min apart (one quiet bucket between) merge into one episode of 3 buckets
    # (60 alerts, plus the hourly background alert at 20:00).
    assert floods.select("start_ts", "n_buckets", "n_alerts").rows() == [(T0 + timedelta(hours=20), 3, 61)]
    # Without merging they are two episodes; with a lower floor the small burst counts too.
    assert detect_floods(series, FloodSettings(merge_gap_buckets=0)).height == 2
    assert detect_floods(series, FloodSettings(min_alerts=5)).height == 2


def test_a_flood_in_the_first_hour_is_found_against_the_first_day() -> None:
    background = poisson_arrivals(12, 24, seed=3)
    floods = detect_floods(pl.Series("starts_at", burst(T0, 200, 10) + background))
    assert floods.select("start_ts", "n_buckets").rows() == [(T0, 2)]


def test_arrival_counts_are_zero_filled_and_utc() -> None:
    naive = pl.Series("t", [datetime(2026, 9, 1, 0, 1), datetime(2026, 9, 1, 0, 2), datetime(2026, 9, 1, 0, 16)])
    counts = arrival_counts(naive, 5)
    assert counts["alerts"].to_list() == [2, 0, 0, 1]
    assert counts["bucket_start"].dtype == pl.Datetime("us", "UTC")
    flagged = flood_buckets(counts)
    assert flagged.columns == ["bucket_start", "alerts", "baseline", "mad", "threshold", "is_flood"]
    assert not flagged["is_flood"].any()


def test_empty_and_invalid_input() -> None:
    empty = detect_floods(pl.Series("starts_at", [], dtype=pl.Datetime("us", "UTC")))
    assert empty.height == 0 and "peak_rate_per_min" in empty.columns
    with pytest.raises(TypeError):
        detect_floods(pl.Series("starts_at", ["2026-09-01"]))
    with pytest.raises(ValidationError):
        FloodSettings(bucket_minutes=0)


@pytest.mark.parametrize(("n", "window"), [(1, 5), (5, 5), (6, 5), (100, 7), (1000, 288)])
def test_rolling_baseline_is_the_median_and_mad_of_the_previous_buckets(n: int, window: int) -> None:
    from gpusre.models.alerts.floods import _rolling_median_mad

    x = np.random.default_rng(n).poisson(5, n).astype(float)
    median, mad = _rolling_median_mad(x, window)
    assert np.isnan(median[0]) and np.isnan(mad[0])
    for i in range(1, n):
        history = x[max(0, i - window):i]
        assert median[i] == np.median(history)
        assert mad[i] == np.median(np.abs(history - np.median(history)))


def _baseline_by_definition(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """The median and raw MAD of the ``window`` values before each position, window by window."""
    median, mad = np.full(len(x), np.nan), np.full(len(x), np.nan)
    for i in range(1, len(x)):
        history = x[max(0, i - window):i]
        median[i] = np.median(history)
        mad[i] = np.median(np.abs(history - median[i]))
    return median, mad


@settings(max_examples=300, deadline=None)
@given(window=st.integers(1, 30),
       counts=st.lists(st.one_of(st.integers(0, 6), st.integers(0, 60), st.integers(0, 5000)), min_size=1, max_size=300)
       | st.lists(st.integers(0, 9), min_size=40, max_size=300),
       fraction=st.booleans())
def test_the_counting_baseline_equals_the_median_and_mad_window_by_window(window: int, counts: list[int],
                                                                          fraction: bool) -> None:
    # Arrival counts take the counting path (order statistics below a cap, the rest sorted); anything
    # else (a fraction) the sorting one. Both must give np.median's values exactly: the threshold is
    # compared with counts, so an off-by-a-half baseline moves flood edges.
    from gpusre.models.alerts.floods import _rolling_median_mad

    x = np.array(counts, dtype=np.float64) + (0.25 if fraction else 0.0)
    median, mad = _rolling_median_mad(x, window)
    expected_median, expected_mad = _baseline_by_definition(x, window)
    np.testing.assert_array_equal(median, expected_median)
    np.testing.assert_array_equal(mad, expected_mad)


def test_the_counting_baseline_hands_windows_above_its_cap_to_the_sort() -> None:
    # A day of ~3 alerts per bucket, then a day of ~900: the cap (from the counts' 99th percentile)
    # is far below the second day's medians, which only the sorting path can resolve.
    from gpusre.models.alerts.floods import _median_mad_of_counts, _rolling_median_mad

    rng = np.random.default_rng(7)
    x = np.concatenate([rng.poisson(3, 2000), rng.poisson(900, 300)])
    fast_median, _ = _median_mad_of_counts(x, 288)
    assert np.isnan(fast_median[-1]) and not np.isnan(fast_median[0])
    median, mad = _rolling_median_mad(x.astype(np.float64), 288)
    expected_median, expected_mad = _baseline_by_definition(x.astype(np.float64), 288)
    np.testing.assert_array_equal(median, expected_median)
    np.testing.assert_array_equal(mad, expected_mad)
