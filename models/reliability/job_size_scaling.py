"""How job failure rate and time-to-failure scale with job size (GPUs per job).

Model (Kokolis et al., HPCA'25, Fig. 7): every GPU of a job fails independently at a constant
rate ``r_gpu`` per GPU-hour, so a job on N GPUs fails at ``N * r_gpu`` per hour and its mean time
to failure is ``MTTF(N) = 1 / (N * r_gpu)``, i.e. MTTF is proportional to 1/N. Meta reports
7.9 h at 1,024 GPUs and 47.7 days at 8 GPUs; under pure 1/N the 1,024-GPU figure projects to
7.9 / 16 = 0.49 h at 16,384 GPUs. (Meta's published 1.8 h at 16k comes from their own r_f fit,
not from the 1,024-GPU measurement, see reliability-facts §1.7; this module does the plain math.)

* :func:`fit_inverse_scaling` gives the Poisson MLE of ``r_gpu`` (total failures / total
  GPU-hours) with an exact Garwood interval, and, so that the 1/N assumption can be checked rather
  than assumed, a Poisson GLM with a free exponent b in ``rate = c * N^b`` (b = 1 is the 1/N law).
* :func:`project_mttf` turns ``r_gpu`` into MTTF at other sizes.
* :func:`kaplan_meier_by_group` gives the non-parametric survival curve of job runtime per group
  (e.g. size bucket), for when neither model should be trusted.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import statsmodels.api as sm
from scipy.stats import norm
from statsmodels.duration.survfunc import SurvfuncRight

from gpusre.models.reliability.failure_rates import garwood_interval

__all__ = [
    "ScalingFit",
    "fit_inverse_scaling",
    "kaplan_meier_by_group",
    "project_mttf",
]

DEFAULT_PROJECTION_SIZES: tuple[int, ...] = (1024, 4096, 16384, 131072)


@dataclass(frozen=True, slots=True)
class ScalingFit:
    """Per-GPU failure rate under the 1/N model, plus a free-exponent check of that model.

    ``r_gpu_*`` are failures per GPU-hour; ``r_gpu_ci_high`` is always finite and
    ``r_gpu_ci_low`` is 0 when there were no failures. The ``exponent_*`` fields are None when
    the GLM cannot be estimated (no failures, or fewer than two distinct job sizes).
    ``exponent_p_value`` tests exponent == 1 (two-sided Wald). ``dispersion`` is the Pearson
    chi-square / residual df used to widen the exponent's interval (never below 1).
    """

    r_gpu_per_hour: float
    r_gpu_ci_low: float
    r_gpu_ci_high: float
    failures: int
    gpu_hours: float
    n_rows: int
    n_dropped_zero_runtime: int
    confidence: float
    exponent: float | None
    exponent_ci_low: float | None
    exponent_ci_high: float | None
    exponent_p_value: float | None
    dispersion: float | None


def _free_exponent(n_gpus: np.ndarray, failures: np.ndarray, runtime_hours: np.ndarray,
                   confidence: float) -> tuple[float, float, float, float, float] | None:
    """Poisson GLM ``log E[failures] = log(runtime) + a + b log N``; returns b, CI, p(b=1), dispersion."""
    if failures.sum() == 0 or np.unique(n_gpus).size < 2:
        return None
    exog = sm.add_constant(np.log(n_gpus.astype(float)), has_constant="add")
    model = sm.GLM(failures, exog, family=sm.families.Poisson(), offset=np.log(runtime_hours))
    with warnings.catch_warnings():
        # Sizes that never failed push the MLE to the boundary; statsmodels warns, the fit is
        # still usable for the exponent as long as it converged (checked below).
        warnings.simplefilter("ignore")
        first = model.fit()
        df_resid = first.df_resid
        # Job failures are overdispersed (lemon nodes, bad racks), so plain Poisson SEs would be
        # too narrow: inflate by the Pearson dispersion when it exceeds 1 (quasi-Poisson).
        # With no residual df (e.g. one row per size, saturated) it cannot be estimated: use 1.
        dispersion = max(1.0, first.pearson_chi2 / df_resid) if df_resid > 0 else 1.0
        res = model.fit(scale=dispersion)
    if not res.converged or not np.all(np.isfinite(res.bse)):
        return None
    b, se = float(res.params[1]), float(res.bse[1])
    z = norm.ppf(0.5 + confidence / 2)
    p_value = float(2 * norm.sf(abs(b - 1.0) / se))
    return b, b - z * se, b + z * se, p_value, dispersion


def fit_inverse_scaling(n_gpus: np.ndarray, failures: np.ndarray, runtime_hours: np.ndarray,
                        confidence: float = 0.95) -> ScalingFit:
    """Fit the per-GPU failure rate of the MTTF ∝ 1/N model, and test the exponent.

    Inputs are parallel arrays, one row per job or per (size, period) aggregate: GPUs per job,
    failures attributed to infrastructure (usually 0/1 per job) and runtime in hours. Under
    Poisson the MLE is ``r_gpu = sum(failures) / sum(n_gpus * runtime_hours)`` (GPU-hours), with a
    Garwood interval. The free exponent b comes from a Poisson GLM with log link, offset
    ``log(runtime_hours)`` and regressor ``log(n_gpus)``: ``rate = exp(a) * N^b``; b close to 1
    (its interval containing 1) supports the 1/N law, b < 1 means big jobs fail less per GPU than
    the law predicts. Rows with zero runtime carry no exposure and are dropped (counted in
    ``n_dropped_zero_runtime``); a failure on such a row is an error, since its rate is infinite.
    """
    n = np.asarray(n_gpus, dtype=float)
    k = np.asarray(failures, dtype=float)
    h = np.asarray(runtime_hours, dtype=float)
    if not (n.shape == k.shape == h.shape) or n.ndim != 1:
        raise ValueError("n_gpus, failures and runtime_hours must be 1-D arrays of equal length")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(k)) and np.all(np.isfinite(h))):
        raise ValueError("inputs must be finite")
    if np.any(n < 1) or np.any(k < 0) or np.any(h < 0):
        raise ValueError("need n_gpus >= 1, failures >= 0, runtime_hours >= 0")
    zero = h == 0
    if np.any(k[zero] > 0):
        raise ValueError("a row with zero runtime has failures: its exposure is 0, the rate is undefined")
    n, k, h = n[~zero], k[~zero], h[~zero]
    gpu_hours = float(np.sum(n * h))
    if gpu_hours <= 0:
        raise ValueError("no exposure: total GPU-hours is 0")
    total = int(round(k.sum()))
    low, high = garwood_interval(total, gpu_hours, confidence)
    free = _free_exponent(n, k, h, confidence)
    b, b_low, b_high, p_value, dispersion = free if free is not None else (None,) * 5
    return ScalingFit(
        r_gpu_per_hour=total / gpu_hours,
        r_gpu_ci_low=low,
        r_gpu_ci_high=high,
        failures=total,
        gpu_hours=gpu_hours,
        n_rows=int(n.size),
        n_dropped_zero_runtime=int(zero.sum()),
        confidence=confidence,
        exponent=b,
        exponent_ci_low=b_low,
        exponent_ci_high=b_high,
        exponent_p_value=p_value,
        dispersion=dispersion,
    )


def project_mttf(fit: ScalingFit,
                 n_gpus_list: Sequence[int] = DEFAULT_PROJECTION_SIZES) -> pl.DataFrame:
    """Project MTTF (hours) to other job sizes under the 1/N law: ``1 / (N * r_gpu)``.

    Columns ``n_gpus, mttf_hours, ci_low, ci_high``; the interval is the Garwood rate interval
    inverted (``ci_low = 1/(N r_high)``, ``ci_high = 1/(N r_low)``). ``mttf_hours`` and
    ``ci_high`` are null (unbounded) when no failure was observed.
    """
    sizes = np.asarray(list(n_gpus_list), dtype=float)
    if np.any(sizes < 1):
        raise ValueError("n_gpus_list entries must be >= 1")

    def inverse(rate: float) -> list[float | None]:
        return [None if rate == 0 else 1.0 / (s * rate) for s in sizes]

    return pl.DataFrame(
        {
            "n_gpus": [int(s) for s in sizes],
            "mttf_hours": inverse(fit.r_gpu_per_hour),
            "ci_low": inverse(fit.r_gpu_ci_high),
            "ci_high": inverse(fit.r_gpu_ci_low),
        },
        schema={"n_gpus": pl.Int64, "mttf_hours": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
    )


def kaplan_meier_by_group(durations_h: np.ndarray, observed: np.ndarray, groups: Sequence | np.ndarray,
                          confidence: float = 0.95) -> pl.DataFrame:
    """Kaplan-Meier survival of job runtime per group, with pointwise log-log intervals.

    One row per (group, distinct event time): ``group, time_h, survival, ci_low, ci_high,
    at_risk`` (number at risk just before ``time_h``). Groups are sorted; a group with no
    observed failure contributes no rows (its curve stays at 1). Estimates come from statsmodels
    ``SurvfuncRight`` (Greenwood standard errors). statsmodels offers only simultaneous bands, so
    the pointwise interval is computed here on the log(-log S) scale (Kalbfleisch-Prentice, R's
    ``conf.type = "log-log"``): ``S ** exp(±z * se / (S |log S|))``, which stays inside [0, 1].
    It is null where S = 0 (the transform is undefined there).
    """
    t = np.asarray(durations_h, dtype=float)
    d = np.asarray(observed, dtype=bool)
    g = pl.Series("group", groups) if not isinstance(groups, pl.Series) else groups.alias("group")
    if not (t.shape == d.shape == (g.len(),)):
        raise ValueError("durations_h, observed and groups must be 1-D of equal length")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("durations_h must be finite and >= 0")
    z = float(norm.ppf(0.5 + confidence / 2))
    frame = pl.DataFrame([g, pl.Series("t", t), pl.Series("d", d)]).sort("group", nulls_last=True)
    parts: list[pl.DataFrame] = []
    for part in frame.partition_by("group", maintain_order=True):
        if not part["d"].any():
            continue
        sf = SurvfuncRight(part["t"].to_numpy(), part["d"].to_numpy().astype(float))
        s = np.asarray(sf.surv_prob, dtype=float)
        se = np.asarray(sf.surv_prob_se, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            se_loglog = se / (s * np.abs(np.log(s)))
            low = s ** np.exp(z * se_loglog)
            high = s ** np.exp(-z * se_loglog)
        undefined = (s <= 0) | ~np.isfinite(se_loglog)
        parts.append(pl.DataFrame({
            "group": pl.Series([part["group"][0]] * s.size, dtype=frame.schema["group"]),
            "time_h": np.asarray(sf.surv_times, dtype=float),
            "survival": s,
            "ci_low": np.where(undefined, np.nan, low),
            "ci_high": np.where(undefined, np.nan, high),
            "at_risk": np.asarray(sf.n_risk, dtype=np.int64),
        }).with_columns(pl.col("ci_low", "ci_high").fill_nan(None)))
    if not parts:
        return pl.DataFrame(schema={"group": frame.schema["group"], "time_h": pl.Float64,
                                    "survival": pl.Float64, "ci_low": pl.Float64,
                                    "ci_high": pl.Float64, "at_risk": pl.Int64})
    return pl.concat(parts)
