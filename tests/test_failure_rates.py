"""Exact Poisson rates and MTBF (gpusre.models.reliability.failure_rates) against hand-computed values."""

import math

import polars as pl
import pytest
from scipy.stats import chi2, poisson

from gpusre.models.reliability.failure_rates import (
    add_mtbf_columns,
    garwood_interval,
    mtbf_estimate,
    rate_per_1000_node_days,
)


def test_garwood_zero_failures_is_the_rule_of_three_point_69():
    # k = 0: lower 0; upper = chi2.ppf(0.975, 2)/2 = -ln(0.025) = 3.6889 (95 %).
    low, high = garwood_interval(0, 1.0)
    assert low == 0.0
    assert high == pytest.approx(-math.log(0.025), rel=1e-12)
    assert high == pytest.approx(3.689, abs=5e-4)
    # Scales as 1/exposure.
    assert garwood_interval(0, 100.0)[1] == pytest.approx(0.036889, rel=1e-4)


def test_garwood_five_failures_matches_published_table():
    # k = 5 at 95 %: [1.6235, 11.6683] per unit exposure (standard Garwood table).
    low, high = garwood_interval(5, 1.0)
    assert low == pytest.approx(1.6235, abs=1e-4)
    assert high == pytest.approx(11.6683, abs=1e-4)
    low, high = garwood_interval(5, 1000.0)
    assert (low, high) == pytest.approx((1.6235e-3, 11.6683e-3), abs=1e-7)


def test_garwood_bounds_are_the_poisson_tail_inversion():
    # Definition of the exact interval: P(X >= k | mu_low) = alpha/2 and P(X <= k | mu_high) = alpha/2.
    k, alpha = 7, 0.10
    low, high = garwood_interval(k, 1.0, confidence=0.90)
    assert poisson.sf(k - 1, low) == pytest.approx(alpha / 2, rel=1e-9)
    assert poisson.cdf(k, high) == pytest.approx(alpha / 2, rel=1e-9)


@pytest.mark.parametrize(("k", "t", "conf"), [(-1, 1.0, 0.95), (1, 0.0, 0.95), (1, -5.0, 0.95), (1, 1.0, 1.0)])
def test_garwood_rejects_bad_input(k, t, conf):
    with pytest.raises(ValueError):
        garwood_interval(k, t, conf)


def test_mtbf_sufficient_case():
    # 5 failures in 1000 h: rate 0.005/h, MTBF 200 h; MTBF CI = 1000/[11.6683, 1.6235] = [85.70, 615.96] h.
    est = mtbf_estimate(5, 1000.0)
    assert est.sufficient and est.note == ""
    assert est.rate_per_hour == pytest.approx(0.005)
    assert est.mtbf_hours == pytest.approx(200.0)
    assert est.mtbf_ci_low == pytest.approx(1000 / 11.66833, rel=1e-5)
    assert est.mtbf_ci_high == pytest.approx(1000 / 1.623486, rel=1e-5)
    assert est.mtbf_ci_low == pytest.approx(85.70, abs=0.01)
    assert est.mtbf_ci_high == pytest.approx(615.96, abs=0.01)


def test_mtbf_zero_failures_gives_only_a_lower_bound():
    # 0 failures in 500 h: "MTBF is at least 500/3.6889 = 135.54 h"; no point estimate, no upper bound.
    est = mtbf_estimate(0, 500.0)
    assert not est.sufficient
    assert est.mtbf_hours is None
    assert est.mtbf_ci_high is None
    assert est.rate_per_hour == 0.0
    assert est.rate_ci_low == 0.0
    assert est.mtbf_ci_low == pytest.approx(500 / 3.688879, rel=1e-6)
    assert est.note == "insufficient data: 0 failures in 500.0 h (need >= 3)"


def test_mtbf_two_failures_below_minimum():
    # k = 2 over 1234.56 h: lower rate = chi2.ppf(.025, 4)/2 = 0.2422, upper = chi2.ppf(.975, 6)/2 = 7.2247.
    est = mtbf_estimate(2, 1234.56)
    assert est.mtbf_hours is None and not est.sufficient
    assert est.rate_ci_high == pytest.approx(7.224688 / 1234.56, rel=1e-5)
    assert est.mtbf_ci_low == pytest.approx(1234.56 / 7.224688, rel=1e-5)
    assert est.mtbf_ci_high == pytest.approx(1234.56 / 0.2422093, rel=1e-5)
    assert est.note == "insufficient data: 2 failures in 1,234.6 h (need >= 3)"
    # Read on a screen in SLO reviews: singular, thousands separators.
    assert mtbf_estimate(1, 9_092_765.6).note == "insufficient data: 1 failure in 9,092,765.6 h (need >= 3)"
    # Lowering the bar makes the same data sufficient: 1234.56/2 = 617.28 h.
    assert mtbf_estimate(2, 1234.56, min_failures=2).mtbf_hours == pytest.approx(617.28)


def test_mtbf_zero_exposure_is_all_none():
    est = mtbf_estimate(0, 0.0)
    assert (est.rate_per_hour, est.rate_ci_low, est.rate_ci_high, est.mtbf_hours,
            est.mtbf_ci_low, est.mtbf_ci_high) == (None,) * 6
    assert not est.sufficient and est.note.startswith("no exposure")


def test_rate_per_1000_node_days_reproduces_rsc1_unit():
    # 13 failures over 48,000 node-hours = 2,000 node-days -> 13/2000*1000 = 6.5 (RSC-1's r_f).
    assert rate_per_1000_node_days(13, 48_000.0) == pytest.approx(6.5)
    with pytest.raises(ValueError):
        rate_per_1000_node_days(1, 0.0)


def test_add_mtbf_columns_matches_scalar_path_row_by_row():
    df = pl.DataFrame({
        "node": ["a", "b", "c", "d", "e", "f"],
        "failures": [5, 0, 2, 3, 0, None],
        "exposure_hours": [1000.0, 500.0, 1234.56, 72.0, 0.0, 10.0],
    })
    out = add_mtbf_columns(df)
    assert out.columns == ["node", "failures", "exposure_hours", "mtbf_hours", "ci_low", "ci_high",
                           "rate_per_1000_node_days", "sufficient", "note"]
    rows = {r["node"]: r for r in out.iter_rows(named=True)}
    for node, k, t in [("a", 5, 1000.0), ("b", 0, 500.0), ("c", 2, 1234.56), ("d", 3, 72.0)]:
        est = mtbf_estimate(k, t)
        r = rows[node]
        for got, want in [(r["mtbf_hours"], est.mtbf_hours), (r["ci_low"], est.mtbf_ci_low),
                          (r["ci_high"], est.mtbf_ci_high)]:
            assert got == (None if want is None else pytest.approx(want, rel=1e-12))
        assert r["sufficient"] == est.sufficient
        assert r["note"] == est.note
    # d: 3 failures in 72 node-hours = 3 node-days -> 1000 per 1000 node-days; MTBF 24 h.
    assert rows["d"]["rate_per_1000_node_days"] == pytest.approx(1000.0)
    assert rows["d"]["mtbf_hours"] == pytest.approx(24.0)
    # a: 5 / (1000/24) * 1000 = 120.
    assert rows["a"]["rate_per_1000_node_days"] == pytest.approx(120.0)
    for node in ("e", "f"):  # zero exposure, null failures
        r = rows[node]
        assert (r["mtbf_hours"], r["ci_low"], r["ci_high"], r["rate_per_1000_node_days"]) == (None,) * 4
        assert r["sufficient"] is False
        assert r["note"] == "no exposure: 0 h observed"


def test_add_mtbf_columns_custom_names_and_confidence():
    df = pl.DataFrame({"n_fail": [4], "node_hours": [200.0]})
    out = add_mtbf_columns(df, failures_col="n_fail", exposure_col="node_hours", confidence=0.90)
    # 90 %: rate upper = chi2.ppf(0.95, 10)/2/200; MTBF ci_low is its inverse.
    expected_low = 200.0 / (chi2.ppf(0.95, 10) / 2)
    assert out["ci_low"][0] == pytest.approx(expected_low, rel=1e-12)
    assert out["mtbf_hours"][0] == pytest.approx(50.0)
    with pytest.raises(ValueError):
        add_mtbf_columns(pl.DataFrame({"failures": [-1], "exposure_hours": [1.0]}))
