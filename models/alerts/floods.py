"""Alert floods: time buckets where alerts arrive far faster than usual, merged into episodes.

An alert *arrives* at its ``starts_at`` (one row of ``core.alerts``; repeated notifications of the
same alert do not count again). Arrivals are counted per time bucket (default 5 min; buckets with
no arrival count 0, from the first to the last arrival), and each bucket is compared with a robust
baseline of the ``window_buckets`` buckets before it (default 288 = the previous 24 h):

* ``baseline`` = median of those counts, ``mad`` = their median absolute deviation, scaled by
  1.4826 so that it estimates a standard deviation for normal data;
* the bucket is a **flood bucket** when ``count > baseline + k · mad`` (default k = 5) **and**
  ``count >= min_alerts`` (default 10): the floor keeps a quiet cluster, whose MAD is 0, from
  calling 2 alerts a flood. The first ``min_history_buckets`` buckets (default 12 = 1 h) have too
  little history of their own and are compared with the first window instead (buckets 0 to
  ``window_buckets - 1``), so a flood in the very first hour of data is still found.

Flood buckets separated by at most ``merge_gap_buckets`` quiet buckets (default 1) form one
**episode**: ``start_ts`` (start of its first bucket), ``end_ts`` (end of its last), ``n_buckets``,
``n_alerts`` (arrivals from start to end), ``peak_alerts`` (largest bucket count),
``peak_rate_per_min``, and the ``baseline`` and ``threshold`` of its first bucket.

The baseline is not frozen during an episode: the median ignores a flood that fills less than
half the window, so with the default 24 h window a flood must last 12 h before it starts to
raise its own baseline.

>>> import datetime as dt
>>> t0 = dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc)
>>> quiet = [t0 + dt.timedelta(minutes=7 * i) for i in range(400)]        # ~1 alert per bucket
>>> burst = [t0 + dt.timedelta(hours=30, seconds=5 * i) for i in range(120)]  # 120 in 10 min
>>> floods = detect_floods(pl.Series("starts_at", quiet + burst))
>>> floods.select("start_ts", "n_buckets", "n_alerts", "peak_alerts").rows()  # 120 + 1 background alert
[(datetime.datetime(2026, 9, 2, 6, 0, tzinfo=zoneinfo.ZoneInfo(key='UTC')), 2, 121, 61)]
"""

from __future__ import annotations

import warnings
from datetime import timedelta

import numpy as np
import polars as pl
from numpy.lib.stride_tricks import sliding_window_view
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EPISODE_SCHEMA", "FloodSettings", "arrival_counts", "detect_floods", "flood_buckets"]

#: Normal-consistency factor of the MAD.
MAD_SCALE = 1.4826


class FloodSettings(BaseModel):
    """Flood detection parameters (cluster.yaml ``alerts.floods``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    bucket_minutes: int = Field(default=5, ge=1, le=1440)
    window_buckets: int = Field(default=288, ge=3)
    k: float = Field(default=5.0, gt=0)
    min_alerts: int = Field(default=10, ge=1)
    merge_gap_buckets: int = Field(default=1, ge=0)
    min_history_buckets: int = Field(default=12, ge=1)

    @property
    def bucket(self) -> timedelta:
        return timedelta(minutes=self.bucket_minutes)


EPISODE_SCHEMA: dict[str, pl.DataType] = {
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "n_buckets": pl.Int64(),
    "n_alerts": pl.Int64(),
    "peak_alerts": pl.Int64(),
    "peak_rate_per_min": pl.Float64(),
    "baseline": pl.Float64(),
    "threshold": pl.Float64(),
}


def _as_utc(times: pl.Series) -> pl.Series:
    if not isinstance(times.dtype, pl.Datetime):
        raise TypeError(f"arrival times must be a Datetime column, got {times.dtype}")
    times = times.dt.cast_time_unit("us")
    return times.dt.replace_time_zone("UTC") if times.dtype.time_zone is None else times.dt.convert_time_zone("UTC")


def arrival_counts(starts: pl.Series, bucket_minutes: int = 5) -> pl.DataFrame:
    """Arrivals per bucket, zero-filled from the first to the last arrival's bucket:
    ``bucket_start`` (UTC), ``alerts``. Null times are ignored."""
    times = _as_utc(starts.drop_nulls())
    if times.len() == 0:
        return pl.DataFrame(schema={"bucket_start": pl.Datetime("us", "UTC"), "alerts": pl.Int64})
    every = f"{bucket_minutes}m"
    counts = (
        pl.DataFrame({"bucket_start": times.dt.truncate(every)})
        .group_by("bucket_start").agg(pl.len().cast(pl.Int64).alias("alerts"))
    )
    grid = pl.DataFrame({"bucket_start": pl.datetime_range(
        counts["bucket_start"].min(), counts["bucket_start"].max(), every, eager=True, time_unit="us", time_zone="UTC")})
    return grid.join(counts, on="bucket_start", how="left").with_columns(pl.col("alerts").fill_null(0)).sort("bucket_start")


def _rolling_median_mad(x: np.ndarray, window: int, chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Median and raw MAD of the ``window`` values *before* each position (fewer at the start;
    NaN where there are none)."""
    n = len(x)
    median = np.full(n, np.nan)
    mad = np.full(n, np.nan)
    if n == 0:
        return median, mad
    x = x.astype(np.float64)
    # The first `window` positions see a partial history (NaN-padded, nanmedian); the rest a full
    # window (np.median, several times faster).
    head = min(window, n)
    padded = np.concatenate([np.full(window, np.nan), x[:head]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN window of position 0
        w = sliding_window_view(padded[:-1], window)[:head]
        median[:head] = np.nanmedian(w, axis=1)
        mad[:head] = np.nanmedian(np.abs(w - median[:head, None]), axis=1)
    if n <= window:
        return median, mad
    positions = np.arange(window, n)
    if np.all(x >= 0) and np.all(x == np.floor(x)) and x.max() < 2**31:
        # Arrival counts: small integers, whose order statistics counting finds without sorting.
        median[window:], mad[window:] = _median_mad_of_counts(x.astype(np.int64), window)
        positions = positions[np.isnan(median[window:]) | np.isnan(mad[window:])]
    views = sliding_window_view(x[:-1], window)  # row i = x[i : i + window], before position i + window
    for lo in range(0, len(positions), chunk):
        at = positions[lo : lo + chunk]
        w = views[at - window]
        med = np.median(w, axis=1)
        median[at] = med
        mad[at] = np.median(np.abs(w - med[:, None]), axis=1)
    return median, mad


def _median_mad_of_counts(x: np.ndarray, window: int, chunk: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """For each position ``i >= window`` of non-negative integers ``x``: the median and raw MAD of
    ``x[i - window : i]``, equal to :func:`numpy.median`'s; NaN where an order statistic lies at or
    above the cap (a flood's own counts), which the caller sorts out.

    Why: a year of 5-minute buckets is ~105,000 windows of 288; sorting each (what np.median does)
    cost 0.7-0.9 s a night. Counts are small, so each window's order statistics come from running
    counts of the values below a cap: the k-th smallest value is the least v with at least k values
    <= v, and the k-th smallest absolute deviation from the median m is the least d with at least k
    values in [m - d, m + d] (found by bisection; in half units, as m may be a half).
    """
    n = len(x) - window
    median = np.full(n, np.nan)
    mad = np.full(n, np.nan)
    # Values at or above the cap count as "large": an order statistic among them is unresolved.
    cap = int(np.clip(2 * np.quantile(x, 0.99) + 2, 16, 512))
    ranks = (window // 2, window // 2 + 1) if window % 2 == 0 else ((window + 1) // 2,) * 2
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        seg = np.minimum(x[a : b + window], cap)
        # seen[u, t] = how many of seg[:t] equal u; the window of position a + k is seg[k : k + window].
        onehot = np.zeros((cap + 1, len(seg) + 1), dtype=np.int32)
        onehot[seg, np.arange(1, len(seg) + 1)] = 1
        seen = np.cumsum(onehot, axis=1)
        # at_most[v + 1, k] = values <= v in window k (row 0: v = -1, none).
        at_most = np.zeros((cap + 1, b - a), dtype=np.int32)
        np.cumsum(seen[:cap, window : window + b - a] - seen[:cap, : b - a], axis=0, out=at_most[1:])
        cols = np.arange(b - a)

        def kth_value(k: int) -> np.ndarray:
            """The k-th smallest value of each window (1-based); -1 when it is >= cap."""
            found = at_most[1:] >= k
            return np.where(found[-1], found.argmax(axis=0), -1)

        lo_v, hi_v = kth_value(ranks[0]), kth_value(ranks[1])
        ok = (lo_v >= 0) & (hi_v >= 0)
        twice_m = lo_v + hi_v  # 2 x the median

        def within(d2: np.ndarray) -> np.ndarray:
            """Values v of each window with |2v - 2m| <= d2."""
            upper = np.clip((twice_m + d2) // 2, -1, cap - 1)
            lower = np.clip((twice_m - d2 - 1) // 2, -1, cap - 1)
            return at_most[upper + 1, cols] - at_most[lower + 1, cols]

        def kth_deviation(k: int) -> np.ndarray:
            """2 x the k-th smallest |v - m| of each window; -1 when a value >= cap may be among them."""
            top = np.maximum(2 * cap - 1 - twice_m, 0)  # the largest d2 whose band stays below the cap
            lo, hi = np.zeros(b - a, dtype=np.int64), top.astype(np.int64)
            while np.any(lo < hi):
                mid = (lo + hi) // 2
                enough = within(mid) >= k
                hi, lo = np.where(enough, mid, hi), np.where(enough, lo, mid + 1)
            return np.where(within(hi) >= k, hi, -1)

        lo_d, hi_d = kth_deviation(ranks[0]), kth_deviation(ranks[1])
        ok &= (lo_d >= 0) & (hi_d >= 0)
        median[a:b] = np.where(ok, twice_m / 2, np.nan)
        mad[a:b] = np.where(ok, (lo_d + hi_d) / 4, np.nan)
    return median, mad


def flood_buckets(counts: pl.DataFrame, settings: FloodSettings | None = None) -> pl.DataFrame:
    """``counts`` (from :func:`arrival_counts`) with ``baseline``, ``mad``, ``threshold`` and
    ``is_flood`` per bucket."""
    settings = settings or FloodSettings()
    x = counts["alerts"].to_numpy().astype(np.float64)
    median, mad = _rolling_median_mad(x, settings.window_buckets)
    warmup = min(settings.min_history_buckets, len(x))
    if warmup:
        first = x[: settings.window_buckets]
        median[:warmup] = np.median(first)
        mad[:warmup] = np.median(np.abs(first - np.median(first)))
    median = np.nan_to_num(median, nan=0.0)
    mad = np.nan_to_num(mad, nan=0.0) * MAD_SCALE
    upper = median + settings.k * mad
    threshold = np.maximum(upper, float(settings.min_alerts))
    is_flood = (x > upper) & (x >= settings.min_alerts)
    return counts.with_columns(
        baseline=pl.Series(median), mad=pl.Series(mad), threshold=pl.Series(threshold),
        is_flood=pl.Series(is_flood),
    )


def detect_floods(alerts: pl.DataFrame | pl.Series, settings: FloodSettings | None = None,
                  *, time_column: str = "starts_at") -> pl.DataFrame:
    """Flood episodes (:data:`EPISODE_SCHEMA`, ordered by start) of alert arrival times.

    ``alerts`` is ``core.alerts`` (its ``starts_at``) or a Series of arrival times.
    """
    settings = settings or FloodSettings()
    starts = alerts if isinstance(alerts, pl.Series) else alerts[time_column]
    buckets = flood_buckets(arrival_counts(starts, settings.bucket_minutes), settings)
    flagged = np.flatnonzero(buckets["is_flood"].to_numpy())
    if len(flagged) == 0:
        return pl.DataFrame(schema=EPISODE_SCHEMA)
    breaks = np.flatnonzero(np.diff(flagged) > settings.merge_gap_buckets + 1)
    first = flagged[np.concatenate([[0], breaks + 1])]
    last = flagged[np.concatenate([breaks, [len(flagged) - 1]])]
    counts = buckets["alerts"].to_numpy().astype(np.int64)
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    peak = np.array([counts[a : b + 1].max() for a, b in zip(first, last)], dtype=np.int64)
    starts_ts = buckets["bucket_start"]
    return pl.DataFrame(
        {
            "start_ts": starts_ts.gather(first),
            "end_ts": starts_ts.gather(last) + settings.bucket,
            "n_buckets": (last - first + 1).astype(np.int64),
            "n_alerts": (cumulative[last + 1] - cumulative[first]).astype(np.int64),
            "peak_alerts": peak,
            "peak_rate_per_min": peak / settings.bucket_minutes,
            "baseline": buckets["baseline"].to_numpy()[first],
            "threshold": buckets["threshold"].to_numpy()[first],
        },
        schema=EPISODE_SCHEMA,
    )
