"""Analytic ETTR (gpusre.models.reliability.ettr_model) against hand computations and the paper's figures."""

import math

import numpy as np
import polars as pl
import pytest
from scipy.optimize import brentq, minimize_scalar

from gpusre.models.reliability.ettr_model import (
    checkpoint_what_if,
    expected_ettr,
    expected_lost_work_expr,
    expected_lost_work_s,
    interval_for_target,
    optimal_checkpoint_interval_s,
)

N, RF = 128, 6.5e-3  # 128 nodes at RSC-1's 6.50 failures per 1000 node-days
LAM = N * RF / 86_400  # 0.832 failures/day = 9.62963e-6 per second


def test_lost_work_by_hand():
    # Δ = 3600 s. t = 600: 600 - 600^2 / 7200 = 600 - 50 = 550. t = Δ: Δ/2 = 1800. t > Δ: 1800.
    assert expected_lost_work_s(600.0, 3600.0) == pytest.approx(550.0)
    assert expected_lost_work_s(3600.0, 3600.0) == pytest.approx(1800.0)
    assert expected_lost_work_s(7200.0, 3600.0) == pytest.approx(1800.0)
    assert expected_lost_work_s(0.0, 3600.0) == 0.0
    assert expected_lost_work_s(500.0, math.inf) == pytest.approx(500.0)  # never checkpoints
    assert isinstance(expected_lost_work_s(600.0, 3600.0), float)
    arr = expected_lost_work_s(np.array([0.0, 600.0, 3600.0, 9000.0]), 3600.0)
    assert isinstance(arr, np.ndarray)
    assert arr.tolist() == pytest.approx([0.0, 550.0, 1800.0, 1800.0])
    with pytest.raises(ValueError):
        expected_lost_work_s(10.0, 0.0)


def test_lost_work_matches_monte_carlo_of_uniform_phase():
    # Loss = min(t, A), A ~ U(0, Δ): the derivation in the docstring, checked by simulation.
    rng = np.random.default_rng(0)
    age = rng.uniform(0, 3600.0, size=400_000)
    for t in (300.0, 1800.0, 3000.0):
        assert expected_lost_work_s(t, 3600.0) == pytest.approx(np.minimum(t, age).mean(), rel=5e-3)


def test_lost_work_polars_expr_matches_numpy():
    df = pl.DataFrame({"t": [0.0, 600.0, 3600.0, 9000.0, -5.0, None],
                       "dt": [3600.0, 3600.0, 3600.0, 3600.0, 3600.0, 3600.0]})
    out = df.select(expected_lost_work_expr(pl.col("t"), pl.col("dt")).alias("lost"))["lost"]
    assert out.to_list()[:4] == pytest.approx([0.0, 550.0, 1800.0, 1800.0])
    assert out[4] == 0.0  # negative elapsed clipped
    assert out[5] is None
    bad = pl.DataFrame({"t": [10.0], "dt": [0.0]}).select(expected_lost_work_expr(pl.col("t"), pl.col("dt")))
    assert bad.item() is None


def test_expected_ettr_hand_computed():
    # N r_f = 128 * 0.0065 = 0.832 failures/day. Δ = 1 h, u0 = 5 min, w = 0:
    #   u0 + Δ/2 = 300 + 1800 = 2100 s = 0.0243056 d; 0.832 * 0.0243056 = 0.0202222
    #   E[ETTR] = 1 - 0.0202222 = 0.9797778
    assert expected_ettr(N, RF, 3600, 300) == pytest.approx(0.9797778, abs=1e-7)
    # With a blocking 60 s write: / (1 + 60/3600) = 0.9797778 / 1.0166667 = 0.9637158
    assert expected_ettr(N, RF, 3600, 300, write_s=60) == pytest.approx(0.9637158, abs=1e-7)
    # With 10 min queue per failure: 0.832 * (600 + 300 + 1800)/86400 = 0.832 * 0.03125 = 0.026
    assert expected_ettr(N, RF, 3600, 300, queue_s=600) == pytest.approx(0.974, abs=1e-9)
    # No failures: only the write overhead remains, 1 / (1 + 60/3600) = 0.983607.
    assert expected_ettr(N, 0.0, 3600, 300, write_s=60) == pytest.approx(1 / (1 + 1 / 60))
    # Hopeless regime is clipped at 0, not negative: 100,000 nodes -> N r_f = 650/day.
    assert expected_ettr(100_000, RF, 3600, 300) == 0.0


def test_expected_ettr_reproduces_meta_16k_gpu_figures():
    # 16,384 GPUs = 2,048 nodes at RSC-1 r_f: N r_f = 13.312/day, u0 = 5 min, non-blocking writes.
    #   Δ = 60 min: 1 - 13.312 * 2100/86400 = 1 - 0.323556 = 0.676  (paper: "0.7")
    #   Δ = 5 min:  1 - 13.312 *  450/86400 = 1 - 0.069333 = 0.931  (paper: 0.93)
    assert expected_ettr(2048, RF, 3600, 300) == pytest.approx(0.676444, abs=1e-6)
    assert expected_ettr(2048, RF, 300, 300) == pytest.approx(0.930667, abs=1e-6)
    assert round(expected_ettr(2048, RF, 300, 300), 2) == 0.93


def test_optimal_interval_young_daly():
    # sqrt(2 * 60 / 9.62963e-6) = sqrt(12,461,538) = 3530.09 s.
    opt = optimal_checkpoint_interval_s(N, RF, 60.0)
    assert opt == pytest.approx(3530.09, abs=0.01)
    assert optimal_checkpoint_interval_s(N, RF, 0.0) is None
    assert optimal_checkpoint_interval_s(N, 0.0, 60.0) is None
    # The exact maximiser of expected_ettr is -w + sqrt(w^2 + 2aw/λ) with a = 1 - λ u0:
    # -60 + sqrt(3600 + 2 * 0.9971111 * 60 / 9.62963e-6) = 3465.50 s; Young is within 2 %.
    best = minimize_scalar(lambda dt: -expected_ettr(N, RF, dt, 300, write_s=60),
                           bounds=(10, 50_000), method="bounded", options={"xatol": 1e-6})
    assert best.x == pytest.approx(3465.50, abs=0.05)
    assert opt == pytest.approx(best.x, rel=0.02)


def test_checkpoint_what_if_table():
    out = checkpoint_what_if(N, RF, 300, 0.0)
    assert out.columns == ["interval_s", "expected_ettr"]
    assert out["interval_s"].to_list() == [300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0]
    # Δ = 300: 1 - 0.832 * 450/86400 = 0.9956667; Δ = 14400: 1 - 0.832 * 7500/86400 = 0.9277778
    assert out["expected_ettr"][0] == pytest.approx(0.9956667, abs=1e-7)
    assert out["expected_ettr"][-1] == pytest.approx(0.9277778, abs=1e-7)
    assert out["expected_ettr"].is_sorted(descending=True)  # no write cost: shorter is better
    # With a 60 s write, the best of the grid is the 1 h interval (optimum ≈ 3465 s).
    with_write = checkpoint_what_if(N, RF, 300, 60.0)
    assert with_write.sort("expected_ettr", descending=True)["interval_s"][0] == 3600.0


def test_interval_for_target_without_write_cost():
    # a = 1 - λ u0 = 1 - 9.62963e-6 * 300 = 0.9971111; largest Δ = 2 (a - 0.9) / λ
    #   = 2 * 0.0971111 / 9.62963e-6 = 20169.23 s (5.6 h).
    rng_ = interval_for_target(N, RF, 300, 0.0, target=0.9)
    assert rng_ is not None
    low, high = rng_
    assert low == 0.0
    assert high == pytest.approx(20169.23, abs=0.01)
    assert expected_ettr(N, RF, high, 300) == pytest.approx(0.9, abs=1e-12)


def test_interval_for_target_with_write_cost_is_a_range():
    # slack = 0.0971111; disc = slack^2 - 2 λ T w = 0.00943057 - 2 * 9.62963e-6 * 0.9 * 60 = 0.00839057
    # roots = (0.0971111 -/+ 0.0916000) / 9.62963e-6 = [572.30, 19596.93] s.
    rng_ = interval_for_target(N, RF, 300, 60.0, target=0.9)
    assert rng_ is not None
    low, high = rng_
    assert (low, high) == pytest.approx((572.30, 19596.93), abs=0.01)
    # Cross-check with a root finder on the E[ETTR] formula itself.
    gap = lambda dt: expected_ettr(N, RF, dt, 300, write_s=60) - 0.9  # noqa: E731
    assert brentq(gap, 10, 3465) == pytest.approx(low, rel=1e-9)
    assert brentq(gap, 3466, 50_000) == pytest.approx(high, rel=1e-9)
    # Unreachable: 2,048 nodes with 5-min restarts cannot reach 0.99 at any interval.
    assert interval_for_target(2048, RF, 300, 0.0, target=0.99) is None
    # Reachable only without the write: w so large the discriminant is negative.
    assert interval_for_target(N, RF, 300, 2000.0, target=0.9) is None
    # No failures: ETTR = 1/(1 + w/Δ) >= 0.9 iff Δ >= 0.9 * 60 / 0.1 = 540 s.
    assert interval_for_target(N, 0.0, 300, 60.0, target=0.9) == (pytest.approx(540.0), math.inf)


def _runs(productive: float, wall: int, queue: int) -> pl.DataFrame:
    return pl.DataFrame({"productive_s": [productive], "wallclock_s": [wall], "queue_s": [queue]})


def test_what_if_uses_the_slo_definition_so_it_cannot_contradict_the_slo() -> None:
    """Hand-computed: runs queued 30 % of their wall-clock, productive 6,000 of 10,000 s. With queue wait in the
    SLO, even a 5-min checkpoint gives 0.99567 x 0.7 = 0.697 < 0.9 (no interval reaches it, as the SLO says);
    without it the closed form applies as published and every interval up to 4 h reaches 0.9."""
    from gpusre.models.reliability.job_reliability import checkpoint_what_if_table
    from gpusre.models.reliability.training_runs import CheckpointAssumption

    policy = CheckpointAssumption(3600, 300, 0)
    incl = checkpoint_what_if_table(N, RF, policy, 0.9, includes_queue_wait=True, measured=_runs(6000, 10000, 3000))
    assert incl["queue_share"][0] == pytest.approx(0.3) and incl["measured_ettr"][0] == pytest.approx(0.6)
    assert incl["expected_ettr"][0] == pytest.approx(0.9956667 * 0.7, abs=1e-6)
    assert not incl["reaches_target"].any() and incl["max_interval_for_target_s"][0] is None
    excl = checkpoint_what_if_table(N, RF, policy, 0.9, includes_queue_wait=False, measured=_runs(6000, 10000, 3000))
    assert excl["measured_ettr"][0] == pytest.approx(6000 / 7000)
    assert excl["expected_ettr"].to_list() == excl["expected_ettr_excl_queue"].to_list()
    assert excl["reaches_target"].all() and excl["max_interval_for_target_s"][0] == pytest.approx(20169.23, abs=0.01)
    # 5 % queue share: the closed form must reach 0.9 / 0.95 = 0.947368 -> largest interval 2 (a − 0.947368) / λ
    # = 10,331.17 s; at Δ = 2 h: (1 − λ (300 + 3,600)) x 0.95 = 0.96244 x 0.95 = 0.91432.
    some = checkpoint_what_if_table(N, RF, policy, 0.9, includes_queue_wait=True, measured=_runs(9000, 10000, 500))
    assert some["max_interval_for_target_s"][0] == pytest.approx(10331.17, abs=0.01)
    row = some.filter(pl.col("interval_s") == 7200).row(0, named=True)
    assert row["expected_ettr"] == pytest.approx(0.9143222, abs=1e-7) and row["reaches_target"]
    assert not some.filter(pl.col("interval_s") == 14400)["reaches_target"][0]
