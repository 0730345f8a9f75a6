"""Censored Weibull MLE (gpusre.models.reliability.weibull_fit): hand-checked likelihood, recovery, intervals."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import CensoredData, chi2, weibull_min

from gpusre.models.reliability.weibull_fit import (
    CONSTANT_RATE,
    INFANT_MORTALITY,
    WEAR_OUT,
    fit_weibull,
    weibull_censored_loglik,
)


def censored_sample(shape: float, scale: float, n: int, censor_at: float, seed: int):
    """Weibull lifetimes, right-censored by an administrative cut-off and by random early stops."""
    rng = np.random.default_rng(seed)
    life = scale * rng.weibull(shape, size=n)
    stop = np.minimum(censor_at, rng.uniform(0, 3 * censor_at, size=n))  # jobs end for other reasons
    observed = life <= stop
    return np.where(observed, life, stop), observed


def test_loglik_tiny_case_by_hand():
    t = np.array([1.0, 2.0])
    obs = np.array([True, False])
    # k = 1, lam = 1: failure at 1 -> log 1 - 1*log 1 + 0 = 0; survival terms -(1 + 2) -> -3.
    assert weibull_censored_loglik(1.0, 1.0, t, obs) == pytest.approx(-3.0, abs=1e-12)
    # k = 2, lam = 2: failure term log 2 - 2 log 2 + (2-1) log 1 = -ln 2 = -0.693147;
    # survival terms -(1/2)^2 - (2/2)^2 = -1.25 -> total -1.943147.
    assert weibull_censored_loglik(2.0, 2.0, t, obs) == pytest.approx(-math.log(2) - 1.25, abs=1e-12)
    # Same thing from scipy: log-density of the failure + log-survival of the censored interval.
    ref = weibull_min.logpdf(1.0, 2.0, scale=2.0) + weibull_min.logsf(2.0, 2.0, scale=2.0)
    assert weibull_censored_loglik(2.0, 2.0, t, obs) == pytest.approx(ref, rel=1e-12)


def test_exponential_data_closed_form():
    # For fixed k = 1 the scale MLE is total time / failures; check the profile scale at k = 1 by
    # evaluating the likelihood: at k = 1, lam = (1+2+3+4+10)/4 = 5 must beat lam = 4.9 and 5.1.
    t = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    obs = np.array([True, True, True, True, False])
    at5 = weibull_censored_loglik(1.0, 5.0, t, obs)
    assert at5 > weibull_censored_loglik(1.0, 4.9, t, obs)
    assert at5 > weibull_censored_loglik(1.0, 5.1, t, obs)
    # and equals -4 log 5 - 20/5 = -10.4378 (failures contribute -log lam; survival -sum t / lam).
    assert at5 == pytest.approx(-4 * math.log(5) - 4.0, abs=1e-12)


def test_mle_is_the_joint_maximum_and_matches_scipy_censoreddata():
    t, obs = censored_sample(1.6, 50.0, 120, censor_at=60.0, seed=3)
    fit = fit_weibull(t, obs)
    assert fit is not None
    # Independent optimiser on (log k, log lam) of the same public likelihood.
    res = minimize(lambda p: -weibull_censored_loglik(math.exp(p[0]), math.exp(p[1]), t, obs),
                   x0=[0.0, math.log(float(np.mean(t)))], method="Nelder-Mead",
                   options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000})
    assert math.exp(res.x[0]) == pytest.approx(fit.shape, rel=1e-4)
    assert math.exp(res.x[1]) == pytest.approx(fit.scale, rel=1e-4)
    assert fit.log_likelihood == pytest.approx(-res.fun, abs=1e-6)
    # scipy's own censored fit (scipy >= 1.11 CensoredData).
    k_sp, loc_sp, lam_sp = weibull_min.fit(CensoredData(uncensored=t[obs], right=t[~obs]), floc=0)
    assert loc_sp == 0
    assert k_sp == pytest.approx(fit.shape, rel=1e-3)
    assert lam_sp == pytest.approx(fit.scale, rel=1e-3)


@pytest.mark.parametrize(("shape", "scale", "label"), [
    (0.6, 200.0, INFANT_MORTALITY),
    (1.0, 100.0, CONSTANT_RATE),
    (2.5, 40.0, WEAR_OUT),
])
def test_recovers_known_parameters_under_censoring(shape, scale, label):
    t, obs = censored_sample(shape, scale, 600, censor_at=1.5 * scale, seed=11)
    assert 0 < (~obs).sum() < len(obs)  # really censored, really has failures
    fit = fit_weibull(t, obs)
    assert fit is not None
    assert fit.n_failures == int(obs.sum()) and fit.n_censored == int((~obs).sum())
    assert fit.shape == pytest.approx(shape, rel=0.10)
    assert fit.scale == pytest.approx(scale, rel=0.10)
    assert fit.shape_ci_low < shape < fit.shape_ci_high
    assert fit.interpretation == label


def test_profile_interval_endpoints_sit_on_the_chi2_cut():
    t, obs = censored_sample(0.8, 10.0, 40, censor_at=15.0, seed=5)
    fit = fit_weibull(t, obs)
    assert fit is not None

    def profile(k: float) -> float:
        # For fixed k the scale MLE is closed form: lam^k = sum t^k / d.
        lam = (np.sum(t ** k) / obs.sum()) ** (1 / k)
        return weibull_censored_loglik(k, lam, t, obs)

    cut = chi2.ppf(0.95, 1)  # 3.8415
    assert 2 * (fit.log_likelihood - profile(fit.shape_ci_low)) == pytest.approx(cut, abs=1e-6)
    assert 2 * (fit.log_likelihood - profile(fit.shape_ci_high)) == pytest.approx(cut, abs=1e-6)
    assert fit.shape_ci_low < fit.shape < fit.shape_ci_high


def test_profile_interval_coverage_is_near_nominal():
    # 300 replicate small samples (~25 failures each) with k = 1.3: coverage of the 95 % interval.
    hits = 0
    reps = 300
    for seed in range(reps):
        t, obs = censored_sample(1.3, 5.0, 40, censor_at=7.0, seed=1000 + seed)
        fit = fit_weibull(t, obs)
        assert fit is not None
        hits += fit.shape_ci_low <= 1.3 <= fit.shape_ci_high
    # Binomial sd at 95 % over 300 reps is 1.26 %; allow about 3 sd either way.
    assert 0.91 <= hits / reps <= 0.99


def test_unit_invariance():
    t, obs = censored_sample(1.2, 3.0, 80, censor_at=4.0, seed=7)
    hours = fit_weibull(t, obs)
    seconds = fit_weibull(t * 3600.0, obs)
    assert hours is not None and seconds is not None
    assert seconds.shape == pytest.approx(hours.shape, rel=1e-9)
    assert seconds.scale == pytest.approx(hours.scale * 3600.0, rel=1e-9)
    assert seconds.shape_ci_high == pytest.approx(hours.shape_ci_high, rel=1e-7)


def test_too_few_failures_or_degenerate_data_return_none():
    assert fit_weibull(np.array([1.0, 2.0, 3.0]), np.array([True, True, False])) is None
    # All failures at the same instant and nothing censored later: k -> infinity, no finite MLE.
    assert fit_weibull(np.array([5.0, 5.0, 5.0, 1.0]), np.array([True, True, True, False])) is None


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        fit_weibull(np.array([0.0, 1.0, 2.0, 3.0]), np.array([True] * 4))
    with pytest.raises(ValueError):
        fit_weibull(np.array([1.0, 2.0]), np.array([True]))
