"""The gate's drift interval (``gate.drift_interval``): against scipy's own bootstrap, by
prompt rather than by item, and its bad input; the flip rate's Clopper-Pearson bound and
the copy's own threshold."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from training.ml.encoders.gate import accuracy_gate, drift_interval


def _scores(n: int, seed: int = 5):
    rng = np.random.default_rng(seed)
    labels = rng.uniform(size=n)
    reference = labels + rng.normal(scale=0.3, size=n)
    return reference, reference + rng.normal(scale=0.05, size=n), labels


def _drift(r, q, y) -> float:
    return accuracy_gate(r, q, y, 0.0, max_rho_drift=1, max_flip_share=1).rho_drift


def test_one_row_per_prompt_matches_scipys_percentile_bootstrap():
    r, q, y = _scores(150)
    ours = drift_interval(r, q, y, [f"p{i}" for i in range(150)], n_boot=2000, seed=1)
    theirs = bootstrap(
        (r, q, y),
        _drift,
        paired=True,
        vectorized=False,
        n_resamples=2000,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    # Two independent resamplings of one distribution: the ends agree to the Monte
    # Carlo error, and both hold the point estimate.
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.006)
    assert ours[0] <= _drift(r, q, y) <= ours[1]


def test_prompts_not_items_are_resampled_and_identical_scores_never_drift():
    r, q, y = _scores(30)
    by_prompt = drift_interval(r, q, y, [f"p{i}" for i in range(30)], n_boot=400)
    # Ten items per prompt (same scores, same label): no more information than 30 prompts,
    # so resampling prompts gives the same interval; resampling items would narrow it.
    tenfold = [np.repeat(a, 10) for a in (r, q, y)]
    groups = [f"p{i}" for i in range(30) for _ in range(10)]
    again = drift_interval(*tenfold, groups, n_boot=400)
    assert again[1] == pytest.approx(by_prompt[1], abs=0.02)
    items = drift_interval(*tenfold, [str(i) for i in range(300)], n_boot=400)
    assert items[1] < again[1] * 0.8
    assert drift_interval(r, r, y, [str(i) for i in range(30)], n_boot=50) == pytest.approx((0, 0))


def test_the_interval_refuses_bad_input():
    r, q, y = _scores(10)
    with pytest.raises(ValueError, match="differ in length"):
        drift_interval(r, q, y, ["a"] * 9)
    with pytest.raises(ValueError, match="at least 3 groups"):
        drift_interval(r, q, y, ["a", "b"] * 5)
    with pytest.raises(ValueError, match="undefined"):
        drift_interval(np.ones(10), q, y, [str(i) for i in range(10)], n_boot=20)


def test_the_flip_bound_is_clopper_pearsons_and_needs_149_clean_prompts_for_2_percent():
    from scipy.stats import binomtest

    from training.ml.encoders.gate import clopper_pearson_upper

    for k, n in ((0, 120), (2, 300), (5, 120), (3, 400)):
        exact = binomtest(k, n).proportion_ci(confidence_level=0.90, method="exact").high
        assert clopper_pearson_upper(k, n) == pytest.approx(exact, rel=1e-9)
    assert clopper_pearson_upper(0, 148) > 0.02 > clopper_pearson_upper(0, 149)
    # the case: 0 flips on 62 eval prompts proved nothing, 5 of 120 is refused
    assert clopper_pearson_upper(0, 62) > 0.04 and clopper_pearson_upper(5, 120) > 0.08
    assert clopper_pearson_upper(4, 4) == 1.0
    with pytest.raises(ValueError):
        clopper_pearson_upper(3, 2)


def test_the_copys_own_threshold_absorbs_a_systematic_offset():
    """A copy that scores every prompt 0.01 lower: at fp32's threshold the prompts just
    above it flip; at its own threshold, calibrated on other prompts, none does."""
    from training.ml.encoders.gate import copy_threshold

    rng = np.random.default_rng(8)
    train, gate = rng.uniform(-1, 1, 300), rng.uniform(-1, 1, 400)
    t = 0.1
    own = copy_threshold(train, train - 0.01, t)
    assert own == pytest.approx(t - 0.01, abs=0.01)
    labels = gate  # any labels: the flips are the point here
    shared = accuracy_gate(gate, gate - 0.01, labels, t, max_rho_drift=1, max_flip_share=0.02)
    assert shared.flips == int(np.sum((gate >= t) & (gate < t + 0.01))) > 0
    fixed = accuracy_gate(
        gate, gate - 0.01, labels, t, max_rho_drift=1, max_flip_share=0.02, copy=own
    )
    assert fixed.flips <= 1 and fixed.passed and fixed.copy_threshold == own
    near = fixed.near_threshold
    assert near["n"] == int(np.sum(np.abs(gate - t) < near["within"]))
