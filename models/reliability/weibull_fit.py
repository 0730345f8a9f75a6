"""Two-parameter Weibull fit with right censoring, for time-to-failure of nodes, GPUs or jobs.

Why Weibull: its shape k says whether the hazard falls (k < 1: infant mortality, "lemon"
hardware that fails early and then less), is flat (k = 1: exponential, the constant-rate model
behind MTBF and r_f), or rises (k > 1: wear-out). Right censoring matters because most
intervals we see end without a failure (the job completed, the window closed); dropping them
biases the scale down and the shape in unpredictable directions.

Likelihood (durations t_i > 0, d_i = 1 for an observed failure, 0 for right-censored)::

    l(k, lam) = sum_i d_i * [log k - k log lam + (k - 1) log t_i]  -  sum_i (t_i / lam) ** k

i.e. log-density for failures plus log-survival ``-(t/lam)^k`` for every interval.

Maximisation: for fixed k the scale has a closed form, ``lam(k)^k = sum_i t_i^k / d``
(d = number of failures), so the problem reduces to one dimension in log k (the profile
likelihood). Its stationary point is the root of the classic score equation

    g(k) = sum t^k log t / sum t^k  -  1/k  -  mean_{failures} log t  = 0,

which is strictly increasing in k, so the root is unique when it exists; it is found with
``scipy.optimize.brentq`` on log k (log parameters keep the search positive and well scaled).
The result agrees with ``scipy.stats.weibull_min.fit(CensoredData(...), floc=0)`` (checked in
the tests), which is slower and gives no interval.

Shape interval: **profile likelihood** (not Wald): the set of k with
``2 * (l_max - l_profile(k)) <= chi2.ppf(confidence, 1)``. With the handful of failures a node
or a job class typically has, the profile interval is markedly asymmetric and keeps its coverage
far better than a Wald interval, even one on log k.
"""

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import chi2

__all__ = [
    "CONSTANT_RATE",
    "INFANT_MORTALITY",
    "MIN_FAILURES",
    "WEAR_OUT",
    "WeibullFit",
    "fit_weibull",
    "weibull_censored_loglik",
]

MIN_FAILURES: Final = 3
INFANT_MORTALITY: Final = "infant mortality / lemon behaviour (k<1)"
WEAR_OUT: Final = "wear-out (k>1)"
CONSTANT_RATE: Final = "consistent with constant rate (CI contains 1)"

# Bracket limits for log k: k in [e^-12, e^12] covers every physically meaningful shape; a root
# outside means the data are degenerate (e.g. all failures at one instant).
_LOG_K_MIN: Final = -12.0
_LOG_K_MAX: Final = 12.0


@dataclass(frozen=True, slots=True)
class WeibullFit:
    """Maximum-likelihood Weibull(k, lam) with a profile-likelihood interval on the shape k.

    ``scale`` is in the units of the durations (the 63.2 % failure quantile). ``log_likelihood``
    is the maximised censored log-likelihood, comparable across fits of the same data.
    """

    shape: float
    scale: float
    shape_ci_low: float
    shape_ci_high: float
    confidence: float
    n_failures: int
    n_censored: int
    log_likelihood: float
    interpretation: str
    ci_method: str = "profile likelihood"


def weibull_censored_loglik(shape: float, scale: float, durations: np.ndarray,
                            observed: np.ndarray) -> float:
    """Right-censored Weibull log-likelihood l(k, lam) (formula in the module docstring).

    ``observed[i]`` True means a failure at ``durations[i]``; False means the unit was still
    alive at ``durations[i]`` (right-censored).
    """
    t, d = _validated(durations, observed)
    if not (shape > 0 and scale > 0):
        raise ValueError(f"shape and scale must be > 0, got {shape}, {scale}")
    log_t = np.log(t)
    z = shape * (log_t - math.log(scale))  # log((t/lam)^k), kept in log space against overflow
    n_fail = int(d.sum())
    return float(n_fail * (math.log(shape) - shape * math.log(scale))
                 + (shape - 1.0) * log_t[d].sum() - np.exp(z).sum())


def _validated(durations: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(durations, dtype=float)
    d = np.asarray(observed, dtype=bool)
    if t.ndim != 1 or t.shape != d.shape:
        raise ValueError(f"durations and observed must be 1-D of equal length, got {t.shape} and {d.shape}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        # log t enters the likelihood; a zero-length interval carries no Weibull information.
        # Callers should drop such rows or floor them to the clock resolution (e.g. 1 s).
        raise ValueError("durations must be finite and > 0")
    return t, d


def _profile(log_t: np.ndarray, d: np.ndarray):
    """Profile log-likelihood l_p(log k), its score g(log k), and lam(k), all for fixed data."""
    n_fail = int(d.sum())
    sum_log_t_fail = float(log_t[d].sum())
    mean_log_t_fail = sum_log_t_fail / n_fail

    def log_sum_tk(k: float) -> float:
        return float(logsumexp(k * log_t))

    def score(log_k: float) -> float:
        k = math.exp(log_k)
        # sum t^k log t / sum t^k as a softmax-weighted mean of log t: overflow-safe for any k.
        w = np.exp(k * log_t - log_sum_tk(k))
        return float(w @ log_t) - 1.0 / k - mean_log_t_fail

    def loglik(log_k: float) -> float:
        k = math.exp(log_k)
        # l(k, lam(k)) with lam(k)^k = sum t^k / d: d log k - d log(sum t^k / d) + (k-1) sum log t - d.
        return (n_fail * (log_k - (log_sum_tk(k) - math.log(n_fail)))
                + (k - 1.0) * sum_log_t_fail - n_fail)

    def scale(log_k: float) -> float:
        k = math.exp(log_k)
        return math.exp((log_sum_tk(k) - math.log(n_fail)) / k)

    return loglik, score, scale


def _interpret(ci_low: float, ci_high: float) -> str:
    if ci_high < 1.0:
        return INFANT_MORTALITY
    if ci_low > 1.0:
        return WEAR_OUT
    return CONSTANT_RATE


def fit_weibull(durations: np.ndarray, observed: np.ndarray,
                confidence: float = 0.95) -> WeibullFit | None:
    """Fit a 2-parameter Weibull by maximum likelihood with right censoring.

    ``durations`` are positive times (any unit; the scale comes back in the same unit),
    ``observed`` is True for a failure and False for a right-censored interval. Returns None
    with fewer than 3 observed failures (too little to say anything about the shape), or when
    no finite maximum exists (e.g. every failure at the same instant and nothing censored later,
    which drives k to infinity). The shape interval is a profile-likelihood interval; its
    ``interpretation`` is "infant mortality / lemon behaviour (k<1)" when the whole interval is
    below 1, "wear-out (k>1)" when it is above 1, else "consistent with constant rate (CI contains 1)".
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    t, d = _validated(durations, observed)
    n_fail = int(d.sum())
    if n_fail < MIN_FAILURES:
        return None
    # Rescaling time by its geometric mean leaves k unchanged and keeps log t near 0, which
    # makes the log k bracket meaningful whatever the unit (seconds vs days).
    log_t_raw = np.log(t)
    shift = float(log_t_raw.mean())
    log_t = log_t_raw - shift
    loglik, score, scale = _profile(log_t, d)

    # g is increasing in k with g -> -inf as k -> 0; no sign change at the top = no finite MLE.
    if not (score(_LOG_K_MIN) < 0 < score(_LOG_K_MAX)):
        return None
    log_k_hat = brentq(score, _LOG_K_MIN, _LOG_K_MAX, xtol=1e-12)
    l_max = loglik(log_k_hat)
    cut = l_max - chi2.ppf(confidence, 1) / 2.0

    def excess(log_k: float) -> float:
        return loglik(log_k) - cut

    # The profile is unimodal (its derivative is -d * g), so each side has exactly one crossing.
    log_lo = brentq(excess, _LOG_K_MIN, log_k_hat, xtol=1e-12) if excess(_LOG_K_MIN) < 0 else _LOG_K_MIN
    log_hi = brentq(excess, log_k_hat, _LOG_K_MAX, xtol=1e-12) if excess(_LOG_K_MAX) < 0 else math.inf
    k_hat = math.exp(log_k_hat)
    ci_low, ci_high = math.exp(log_lo), math.exp(log_hi)
    # Undo the rescaling. The profile on rescaled times differs from the raw one only by the
    # constant Jacobian term -d * shift, so k and its interval are unaffected; the reported
    # log-likelihood is recomputed on the raw durations so it is comparable with other fits.
    scale_hat = scale(log_k_hat) * math.exp(shift)
    return WeibullFit(
        shape=k_hat,
        scale=scale_hat,
        shape_ci_low=ci_low,
        shape_ci_high=ci_high,
        confidence=confidence,
        n_failures=n_fail,
        n_censored=int((~d).sum()),
        log_likelihood=weibull_censored_loglik(k_hat, scale_hat, t, d),
        interpretation=_interpret(ci_low, ci_high),
    )
