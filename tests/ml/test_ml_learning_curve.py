"""The learning curve: the fit recovers planted parameters, the projections and the verdict."""

from __future__ import annotations

import numpy as np
import pytest

from training.ml.errors import MLError
from training.ml.learning_curve import (
    CurvePoints,
    LearningCurveError,
    fit_learning_curve,
    inverse_power_law,
    measure,
    task_subsample,
)

SHARES = [0.1, 0.2, 0.3, 0.5, 0.7, 1.0]
PLANTED = (0.8, 0.12, 0.6)  # a, b, c


def _points(noise: float, seeds=range(5)) -> CurvePoints:
    def train_and_evaluate(share: float, seed: int) -> float:
        jitter = np.random.default_rng([seed, int(share * 1000)]).normal(scale=noise)
        return float(inverse_power_law(share, *PLANTED) + jitter)

    return measure(train_and_evaluate, SHARES, list(seeds))


def test_measure_calls_every_share_under_every_seed():
    calls = []
    points = measure(lambda s, seed: calls.append((s, seed)) or s / 2, [0.5, 1.0], [7, 8])
    assert calls == [(0.5, 7), (1.0, 7), (0.5, 8), (1.0, 8)]
    np.testing.assert_array_equal(points.rho, [0.25, 0.5, 0.25, 0.5])
    np.testing.assert_array_equal(points.seed, [7, 7, 8, 8])


def test_fit_recovers_planted_parameters_and_projects_from_them():
    curve = fit_learning_curve(_points(noise=0.0), n_rankings=2000, n_boot=0)
    np.testing.assert_allclose((curve.a, curve.b, curve.c), PLANTED, rtol=1e-5)
    a, b, c = PLANTED
    # the projections, recomputed by hand from the planted curve
    assert curve.rho_now == pytest.approx(a - b, rel=1e-5)
    assert curve.rho_2x == pytest.approx(a - b * 2**-c, rel=1e-5)
    assert curve.rho_4x == pytest.approx(a - b * 4**-c, rel=1e-5)
    assert curve.gain_doubling == pytest.approx(curve.rho_2x - curve.rho_now, rel=1e-9)
    # slope per ranking at N = 2000 against a finite difference of the planted curve
    n = 2000
    slope = (inverse_power_law((n + 1) / n, a, b, c) - inverse_power_law(1.0, a, b, c)) * 100
    assert curve.gain_per_100 == pytest.approx(slope, rel=1e-3)
    assert curve.intervals is None


def test_bootstrap_over_seeds_brackets_the_planted_projection():
    curve = fit_learning_curve(_points(noise=0.01), n_rankings=2000, n_boot=300, seed=1)
    low, high = curve.intervals["rho_2x"]
    assert low < inverse_power_law(2.0, *PLANTED) < high
    assert high - low < 0.2
    assert set(curve.intervals) == {
        "rho_now",
        "rho_2x",
        "rho_4x",
        "gain_per_100",
        "gain_doubling",
        "gain_next_100",
        "gain_next_500",
    }
    again = fit_learning_curve(_points(noise=0.01), n_rankings=2000, n_boot=300, seed=1)
    assert again.intervals == curve.intervals


def test_the_bootstrap_equals_one_refit_per_resample():
    """Fitting each distinct multiset of seeds once gives the intervals of refitting every
    resample: checked against a plain bootstrap written here with scipy's curve_fit (the
    same draws from the same generator, every resample refitted, numpy's percentiles)."""
    from scipy.optimize import curve_fit

    points, n, n_boot = _points(noise=0.02, seeds=range(3)), 2000, 200
    curve = fit_learning_curve(points, n_rankings=n, n_boot=n_boot, seed=3)
    rng, seeds = np.random.default_rng(3), np.unique(points.seed)
    rho_2x, gain_500 = [], []
    for _ in range(n_boot):
        drawn = sorted(rng.integers(0, seeds.size, seeds.size).tolist())
        idx = np.concatenate([np.flatnonzero(points.seed == seeds[i]) for i in drawn])
        (a, b, c), _ = curve_fit(
            lambda s, a, b, c: a - b * s**-c,
            points.share[idx],
            points.rho[idx],
            p0=[min(1.0, points.rho[idx].max() + 0.05), 0.1, 0.5],
            bounds=([-np.inf, 0, 1e-3], [1, np.inf, 3]),
            maxfev=20_000,
        )
        rho_2x.append(a - b * 2**-c)
        gain_500.append((a - b * (1 + 500 / n) ** -c) - (a - b))
    for name, values in (("rho_2x", rho_2x), ("gain_next_500", gain_500)):
        expected = np.percentile(values, [2.5, 97.5])
        np.testing.assert_allclose(curve.intervals[name], expected, rtol=1e-4, atol=1e-6)


def test_verdict_flips_at_the_threshold():
    points = _points(noise=0.0)
    gain = fit_learning_curve(points, 2000, n_boot=0).gain_doubling  # about 0.041
    assert not fit_learning_curve(points, 2000, threshold=gain - 1e-4, n_boot=0).stops_paying
    assert fit_learning_curve(points, 2000, threshold=gain + 1e-4, n_boot=0).stops_paying


def test_a_flat_curve_stops_paying():
    flat = CurvePoints(np.array(SHARES * 2), np.full(12, 0.6), np.repeat([0, 1], 6))
    curve = fit_learning_curve(flat, 500, n_boot=50)
    assert curve.gain_doubling == pytest.approx(0.0, abs=1e-3)
    assert curve.stops_paying


@pytest.mark.parametrize(
    ("points", "n_rankings", "message"),
    [
        (CurvePoints(np.array([0.1, 0.5]), np.array([0.1, 0.2]), np.array([0, 0])), 10, "3"),
        (CurvePoints(np.array([0.1, 0.5, 1.5]), np.zeros(3), np.zeros(3)), 10, r"\(0, 1\]"),
        (CurvePoints(np.array([0.1, 0.5, 1.0]), np.array([0, 2, 0.5]), np.zeros(3)), 10, "rho"),
        (CurvePoints(np.array([0.1, 0.5, 1.0]), np.zeros(2), np.zeros(3)), 10, "one length"),
        (CurvePoints(np.array([0.1, 0.5, 1.0]), np.zeros(3), np.zeros(3)), 0, "n_rankings"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(points, n_rankings, message):
    with pytest.raises(LearningCurveError, match=message) as caught:
        fit_learning_curve(points, n_rankings)
    assert isinstance(caught.value, MLError) and isinstance(caught.value, ValueError)


def test_measure_needs_a_share_and_a_seed():
    with pytest.raises(LearningCurveError, match="one share and one seed"):
        measure(lambda s, seed: 0.0, [], [0])


def test_gain_of_the_next_rankings_is_read_off_the_planted_curve():
    # Hand-worked: a - b s^-c at s = 1 + 500/2000 = 1.25 against s = 1.
    curve = fit_learning_curve(_points(noise=0.0), n_rankings=2000, n_boot=0)
    a, b, c = PLANTED
    assert curve.gain_next_500 == pytest.approx(b * (1 - 1.25**-c), rel=1e-5)
    assert curve.gain_next_100 == pytest.approx(b * (1 - 1.05**-c), rel=1e-5)
    assert 0 < curve.gain_next_100 < curve.gain_next_500 < curve.gain_doubling


def test_task_subsample_draws_whole_tasks_without_replacement():
    rng = np.random.default_rng(0)
    picked = task_subsample(40, 0.25, rng)
    assert len(picked) == 10 and len(set(picked.tolist())) == 10
    assert picked.min() >= 0 and picked.max() < 40
    assert len(task_subsample(40, 1.0, rng)) == 40
    assert len(task_subsample(3, 0.01, rng)) == 1  # never an empty draw
    with pytest.raises(LearningCurveError):
        task_subsample(10, 0.0, rng)
