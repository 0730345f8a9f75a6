"""Job-size scaling of failure rate (gpusre.models.reliability.job_size_scaling) on hand-computed cases."""

import math

import numpy as np
import polars as pl
import pytest
from scipy.stats import chi2

from gpusre.models.reliability.job_size_scaling import fit_inverse_scaling, kaplan_meier_by_group, project_mttf


def test_pooled_rate_and_saturated_exponent_by_hand():
    # Two sizes, one aggregate row each:
    #   8 GPUs:  10 failures over 1000 h -> 8,000 GPU-h,  job rate 0.01/h
    #   64 GPUs: 40 failures over  500 h -> 32,000 GPU-h, job rate 0.08/h
    # Pooled r_gpu = 50 / 40,000 = 1.25e-3 per GPU-hour.
    # Saturated GLM: b = log(0.08/0.01) / log(64/8) = log 8 / log 8 = 1 exactly;
    # se(b) = sqrt(1/10 + 1/40) / log 8 = 0.353553 / 2.079442 = 0.170021;
    # 95 % CI = 1 -/+ 1.959964 * 0.170021 = [0.666768, 1.333232]; p(b = 1) = 1.
    fit = fit_inverse_scaling(np.array([8, 64]), np.array([10, 40]), np.array([1000.0, 500.0]))
    assert fit.failures == 50 and fit.gpu_hours == pytest.approx(40_000.0)
    assert fit.r_gpu_per_hour == pytest.approx(1.25e-3)
    # Garwood on 50 failures: chi2.ppf(.025, 100)/2 and chi2.ppf(.975, 102)/2 over 40,000 GPU-h.
    assert fit.r_gpu_ci_low == pytest.approx(chi2.ppf(0.025, 100) / 2 / 40_000, rel=1e-12)
    assert fit.r_gpu_ci_high == pytest.approx(chi2.ppf(0.975, 102) / 2 / 40_000, rel=1e-12)
    assert fit.r_gpu_ci_low == pytest.approx(37.11 / 40_000, rel=1e-3)
    assert fit.exponent == pytest.approx(1.0, abs=1e-8)
    assert fit.exponent_ci_low == pytest.approx(0.666768, abs=1e-5)
    assert fit.exponent_ci_high == pytest.approx(1.333232, abs=1e-5)
    assert fit.exponent_p_value == pytest.approx(1.0, abs=1e-6)
    assert fit.dispersion == 1.0  # saturated: no residual df, so no inflation


def test_exponent_detects_sublinear_scaling():
    # Same 8-GPU row; 64-GPU jobs now fail at 0.02/h (40 over 2000 h): b = log 2 / log 8 = 1/3.
    fit = fit_inverse_scaling(np.array([8, 64]), np.array([10, 40]), np.array([1000.0, 2000.0]))
    assert fit.exponent == pytest.approx(1 / 3, abs=1e-8)
    assert fit.exponent_ci_high < 1.0
    assert fit.exponent_p_value < 0.001
    # Per-job rows give the same estimate as the aggregates (Poisson sufficiency).
    n = np.r_[np.full(10, 8), np.full(40, 64), np.full(5, 64)]
    k = np.r_[np.ones(10), np.ones(40), np.zeros(5)]
    h = np.r_[np.full(10, 100.0), np.full(40, 40.0), np.full(5, 80.0)]  # 1000 h and 1600+400 h
    per_job = fit_inverse_scaling(n, k, h)
    assert per_job.exponent == pytest.approx(1 / 3, abs=1e-6)
    assert per_job.r_gpu_per_hour == pytest.approx(fit.r_gpu_per_hour)


def test_simulated_inverse_law_is_recovered():
    rng = np.random.default_rng(42)
    r_gpu = 2e-4
    sizes = rng.choice([8, 32, 128, 512, 1024], size=3000)
    hours = rng.uniform(1, 48, size=3000)
    fails = rng.poisson(sizes * r_gpu * hours)
    fit = fit_inverse_scaling(sizes, fails, hours)
    assert fit.r_gpu_ci_low < r_gpu < fit.r_gpu_ci_high
    assert fit.exponent_ci_low < 1.0 < fit.exponent_ci_high
    assert fit.exponent == pytest.approx(1.0, abs=0.1)


def test_zero_runtime_rows_and_degenerate_glm():
    fit = fit_inverse_scaling(np.array([8, 8, 8]), np.array([0, 2, 1]), np.array([0.0, 10.0, 5.0]))
    assert fit.n_dropped_zero_runtime == 1 and fit.n_rows == 2
    assert fit.r_gpu_per_hour == pytest.approx(3 / 120)
    assert fit.exponent is None  # one job size: the exponent is not identifiable
    with pytest.raises(ValueError):
        fit_inverse_scaling(np.array([8]), np.array([1]), np.array([0.0]))
    none_failed = fit_inverse_scaling(np.array([8, 64]), np.array([0, 0]), np.array([10.0, 10.0]))
    assert none_failed.exponent is None and none_failed.r_gpu_ci_low == 0.0


def test_projection_with_meta_1024_gpu_mttf():
    # Meta: MTTF 7.9 h at 1,024 GPUs. Encode it as 100 failures over 790 h of 1,024-GPU jobs:
    # r_gpu = 100 / (1024 * 790) per GPU-hour; MTTF(N) = 7.9 * 1024 / N.
    #   1,024 -> 7.9 h; 4,096 -> 1.975 h; 16,384 -> 0.49375 h; 131,072 -> 0.0617 h.
    fit = fit_inverse_scaling(np.array([1024]), np.array([100]), np.array([790.0]))
    proj = project_mttf(fit)
    assert proj.columns == ["n_gpus", "mttf_hours", "ci_low", "ci_high"]
    assert proj["n_gpus"].to_list() == [1024, 4096, 16384, 131072]
    assert proj["mttf_hours"].to_list() == pytest.approx([7.9, 1.975, 0.49375, 0.061719], rel=1e-4)
    # Interval at 16k: 16384 * r_high = chi2.ppf(.975, 202)/2 / 790 / 1024 * 16384, inverted.
    r_high = chi2.ppf(0.975, 202) / 2 / (1024 * 790)
    row = proj.filter(pl.col("n_gpus") == 16384).row(0, named=True)
    assert row["ci_low"] == pytest.approx(1 / (16384 * r_high), rel=1e-12)
    assert row["ci_low"] < row["mttf_hours"] < row["ci_high"]


def test_projection_without_failures_is_unbounded_above():
    fit = fit_inverse_scaling(np.array([8]), np.array([0]), np.array([1000.0]))
    proj = project_mttf(fit, [8, 80])
    assert proj["mttf_hours"].to_list() == [None, None]
    assert proj["ci_high"].to_list() == [None, None]
    # ci_low = 1 / (N * 3.6889 / 8000): 8 GPUs -> 8000 / (8 * 3.6889) = 271.08 h.
    assert proj["ci_low"][0] == pytest.approx(8000 / (8 * 3.688879), rel=1e-6)


def test_kaplan_meier_tiny_case_by_hand():
    # times [1,2,3,4], status [1,0,1,1]:
    #   t=1: 4 at risk, 1 event -> S = 3/4 = 0.75
    #   t=2: censored (no row)
    #   t=3: 2 at risk, 1 event -> S = 0.75 * 1/2 = 0.375
    #   t=4: 1 at risk, 1 event -> S = 0
    # Greenwood at t=1: var = S^2 * 1/(4*3) = 0.046875, se = 0.216506.
    # log-log: se_ll = se / (S |ln S|) = 0.216506 / (0.75 * 0.287682) = 1.003452;
    # CI = 0.75 ** exp(+/- 1.959964 * 1.003452) = 0.75 ** [7.1481, 0.13990] = [0.12793, 0.96056].
    out = kaplan_meier_by_group(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 0, 1, 1], dtype=bool),
                                ["a", "a", "a", "a"])
    assert out.columns == ["group", "time_h", "survival", "ci_low", "ci_high", "at_risk"]
    assert out["time_h"].to_list() == [1.0, 3.0, 4.0]
    assert out["survival"].to_list() == pytest.approx([0.75, 0.375, 0.0])
    assert out["at_risk"].to_list() == [4, 2, 1]
    assert out["ci_low"][0] == pytest.approx(0.12793, abs=1e-4)
    assert out["ci_high"][0] == pytest.approx(0.96056, abs=1e-4)
    se_ll = math.sqrt(1 / 12) / abs(math.log(0.75))
    assert out["ci_low"][0] == pytest.approx(0.75 ** math.exp(1.959964 * se_ll), rel=1e-6)
    assert out["ci_low"][2] is None and out["ci_high"][2] is None  # S = 0: undefined


def test_kaplan_meier_groups_are_separate():
    # Group "big": [1 event, 2 event] -> S = 0.5, 0; group "small": no events -> no rows.
    # Group "mid": times [2, 2, 5] status [1, 0, 1]: t=2: 3 at risk, 1 event -> 2/3; t=5: 1 at risk -> 0.
    out = kaplan_meier_by_group(
        np.array([1.0, 2.0, 7.0, 2.0, 2.0, 5.0]),
        np.array([True, True, False, True, False, True]),
        ["big", "big", "small", "mid", "mid", "mid"],
    )
    assert out["group"].to_list() == ["big", "big", "mid", "mid"]
    assert out["survival"].to_list() == pytest.approx([0.5, 0.0, 2 / 3, 0.0])
    assert out["at_risk"].to_list() == [2, 1, 3, 1]
    ok = out.filter(pl.col("ci_low").is_not_null())
    assert ((ok["ci_low"] <= ok["survival"]) & (ok["survival"] <= ok["ci_high"])).all()
