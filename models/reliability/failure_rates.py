"""Failure rates and MTBF with exact Poisson (Garwood) confidence intervals.

The model throughout is a homogeneous Poisson process: ``failures`` events observed over
``exposure`` units of time (node-hours, GPU-hours, job-hours...). The maximum-likelihood rate is
``failures / exposure`` and MTBF is its inverse. The interval on the rate is the exact
("Garwood", 1936) interval built from chi-square quantiles, which keeps at least the nominal
coverage even for 0, 1 or 2 failures, where a normal approximation is useless. The MTBF interval
is the rate interval inverted (the map is monotone, so coverage carries over exactly).

Small counts: below ``min_failures`` (default 3) no point MTBF is reported, because a point
estimate from one or two failures swings by an order of magnitude with the next event. The
interval is still reported; its upper rate bound gives the honest statement "MTBF is at least
``mtbf_ci_low`` hours", which is useful even with zero failures.

``rate_per_1000_node_days`` is the unit of Meta's r_f (Kokolis et al., HPCA'25: RSC-1 6.50,
RSC-2 2.34 failures per 1000 node-days); it is only meaningful when the exposure is node-hours.
"""

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.stats import chi2

__all__ = [
    "HOURS_PER_DAY",
    "MtbfEstimate",
    "add_mtbf_columns",
    "garwood_interval",
    "insufficient_note",
    "zero_failure_note",
    "mtbf_estimate",
    "rate_per_1000_node_days",
]

HOURS_PER_DAY = 24.0
NO_EXPOSURE_NOTE = "no exposure: 0 h observed"


def _check_confidence(confidence: float) -> float:
    """Return alpha for a two-sided interval; reject confidence outside (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return 1.0 - confidence


def garwood_interval(failures: int, exposure: float, confidence: float = 0.95) -> tuple[float, float]:
    """Exact two-sided Poisson (Garwood) confidence interval for the rate ``failures / exposure``.

    ``lower = chi2.ppf(alpha/2, 2k) / 2 / exposure`` (0 when k = 0) and
    ``upper = chi2.ppf(1 - alpha/2, 2k + 2) / 2 / exposure``, alpha = 1 - confidence.
    E.g. at 95 %: k = 0 gives [0, 3.689/exposure], k = 5 gives [1.6235, 11.6683]/exposure.

    Raises ValueError for negative failures, non-positive exposure or confidence outside (0, 1).
    """
    alpha = _check_confidence(confidence)
    if failures < 0:
        raise ValueError(f"failures must be >= 0, got {failures}")
    if not exposure > 0:
        raise ValueError(f"exposure must be > 0, got {exposure}")
    # chi2 with 0 degrees of freedom is a point mass at 0 (scipy returns nan), hence the branch.
    lower = 0.0 if failures == 0 else float(chi2.ppf(alpha / 2, 2 * failures)) / 2 / exposure
    upper = float(chi2.ppf(1 - alpha / 2, 2 * failures + 2)) / 2 / exposure
    return lower, upper


@dataclass(frozen=True, slots=True)
class MtbfEstimate:
    """MTBF and failure rate with an exact Poisson interval.

    ``None`` means "not estimable": every rate/MTBF field is None when exposure is 0;
    ``mtbf_hours`` is None when there are fewer than ``min_failures`` failures;
    ``mtbf_ci_high`` is None (unbounded) when there are no failures.
    """

    failures: int
    exposure_hours: float
    rate_per_hour: float | None
    rate_ci_low: float | None
    rate_ci_high: float | None
    mtbf_hours: float | None
    mtbf_ci_low: float | None
    mtbf_ci_high: float | None
    sufficient: bool
    note: str


def zero_failure_note(exposure_hours: float, mtbf_ci_low: float) -> str:
    """The note of a period with no failure: its lower MTBF limit is the finding ("0 failures in 7,742.6 h:
    MTBF ≥ 2,098.9 h (95 % lower limit)"), formatted as :func:`insufficient_note` formats its hours."""
    return f"0 failures in {float(exposure_hours):,.1f} h: MTBF ≥ {float(mtbf_ci_low):,.1f} h (95 % lower limit)"


def insufficient_note(failures: int, exposure_hours: float, min_failures: int) -> str:
    """The note attached to an estimate with too few failures (shared by the scalar and vector paths)."""
    return (f"insufficient data: {failures} failure{'' if failures == 1 else 's'} in {float(exposure_hours):,.1f} h "
            f"(need >= {min_failures})")


def mtbf_estimate(failures: int, exposure_hours: float, min_failures: int = 3,
                  confidence: float = 0.95) -> MtbfEstimate:
    """Rate, MTBF and their exact Poisson intervals for ``failures`` over ``exposure_hours``.

    * exposure 0: everything None, ``sufficient`` False, note "no exposure: 0 h observed".
    * failures < min_failures: ``mtbf_hours`` None and a note
      "insufficient data: N failures in X h (need >= min)", but the rate and its interval are
      still given, and so is ``mtbf_ci_low`` (= 1 / rate_ci_high): "MTBF is at least ...".
      ``mtbf_ci_high`` is kept too when finite; it is None (unbounded) when failures == 0.
    * otherwise: ``mtbf_hours = exposure / failures`` and the inverted rate interval.
    """
    if failures < 0:
        raise ValueError(f"failures must be >= 0, got {failures}")
    if exposure_hours < 0 or math.isnan(exposure_hours):
        raise ValueError(f"exposure_hours must be >= 0, got {exposure_hours}")
    if min_failures < 1:
        raise ValueError(f"min_failures must be >= 1, got {min_failures}")
    if exposure_hours == 0:
        _check_confidence(confidence)
        return MtbfEstimate(failures, 0.0, None, None, None, None, None, None, False, NO_EXPOSURE_NOTE)

    rate_low, rate_high = garwood_interval(failures, exposure_hours, confidence)
    sufficient = failures >= min_failures
    return MtbfEstimate(
        failures=failures,
        exposure_hours=float(exposure_hours),
        rate_per_hour=failures / exposure_hours,
        rate_ci_low=rate_low,
        rate_ci_high=rate_high,
        mtbf_hours=exposure_hours / failures if sufficient else None,
        mtbf_ci_low=1.0 / rate_high,
        mtbf_ci_high=1.0 / rate_low if rate_low > 0 else None,
        sufficient=sufficient,
        note="" if sufficient else insufficient_note(failures, exposure_hours, min_failures),
    )


def rate_per_1000_node_days(failures: int, node_hours: float) -> float:
    """Failures per 1000 node-days (Meta's r_f unit): ``failures / (node_hours / 24) * 1000``.

    Example: 13 failures over 48,000 node-hours (2,000 node-days) -> 6.5, RSC-1's published rate.
    """
    if failures < 0:
        raise ValueError(f"failures must be >= 0, got {failures}")
    if not node_hours > 0:
        raise ValueError(f"node_hours must be > 0, got {node_hours}")
    return failures / (node_hours / HOURS_PER_DAY) * 1000.0


def add_mtbf_columns(df: pl.DataFrame, failures_col: str = "failures",
                     exposure_col: str = "exposure_hours", min_failures: int = 3,
                     confidence: float = 0.95) -> pl.DataFrame:
    """Add MTBF columns to every row of ``df``, vectorised (same rules as :func:`mtbf_estimate`).

    Added columns: ``mtbf_hours``, ``ci_low``, ``ci_high`` (the MTBF interval in hours),
    ``rate_per_1000_node_days`` (meaningful only when the exposure is node-hours),
    ``sufficient`` (bool) and ``note`` (str, "" when sufficient). A row whose exposure is 0 or
    null, or whose failure count is null, gets null numbers, ``sufficient`` False and the
    "no exposure" note. ``ci_high`` is null (unbounded) when there are no failures.
    """
    alpha = _check_confidence(confidence)
    if min_failures < 1:
        raise ValueError(f"min_failures must be >= 1, got {min_failures}")
    k_series = df.get_column(failures_col).cast(pl.Float64)
    t_series = df.get_column(exposure_col).cast(pl.Float64)
    if (k_series < 0).any():
        raise ValueError(f"{failures_col} must be >= 0")
    if (t_series < 0).any():
        raise ValueError(f"{exposure_col} must be >= 0")

    k = k_series.fill_null(np.nan).to_numpy()
    t = t_series.fill_null(np.nan).to_numpy()
    valid = np.isfinite(k) & np.isfinite(t) & (t > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # chi2 with df = 0 is undefined in scipy (nan); the k = 0 lower bound is 0 by definition,
        # so evaluate with a dummy df of 1 there and overwrite.
        lower_q = np.where(k > 0, chi2.ppf(alpha / 2, np.where(k > 0, 2 * k, 1.0)) / 2, 0.0)
        upper_q = chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2
        rate_low = lower_q / t
        rate_high = upper_q / t
        sufficient = valid & (k >= min_failures)
        mtbf = np.where(sufficient, t / k, np.nan)
        mtbf_low = np.where(valid, 1.0 / rate_high, np.nan)
        mtbf_high = np.where(valid & (k > 0), 1.0 / rate_low, np.nan)
        r_f = np.where(valid, k / (t / HOURS_PER_DAY) * 1000.0, np.nan)

    def col(name: str, values: np.ndarray) -> pl.Series:
        # nan_to_null: the contract is SQL-style NULL for "not estimable", not IEEE nan.
        return pl.Series(name, values, dtype=pl.Float64).fill_nan(None)

    out = df.with_columns(
        col("mtbf_hours", mtbf),
        col("ci_low", mtbf_low),
        col("ci_high", mtbf_high),
        col("rate_per_1000_node_days", r_f),
        pl.Series("sufficient", sufficient, dtype=pl.Boolean),
    )
    note = (
        pl.when(~pl.col("sufficient").fill_null(False) & pl.col("mtbf_hours").is_null()
                & pl.col("ci_low").is_not_null())
        # The scalar path's own function, row by row: one text for both paths (at most a few
        # thousand rows: component classes x periods, and one row per node).
        .then(pl.Series([insufficient_note(int(kk), float(tt), min_failures) if np.isfinite(kk) and np.isfinite(tt)
                         else None for kk, tt in zip(k, t)], dtype=pl.String))
        .when(pl.col("ci_low").is_null())
        .then(pl.lit(NO_EXPOSURE_NOTE))
        .otherwise(pl.lit(""))
    )
    return out.with_columns(note.alias("note"))
