import itertools

import numpy as np
import pytest
from scipy import stats

from training.ml.metrics import (
    _group_resamples,
    evaluate,
    kendall_tau,
    paired_comparison,
    pairwise_accuracy,
    per_occupation_spearman,
    spearman,
)


def _brute_pairwise_accuracy(p, t):
    good = total = 0.0
    for i, j in itertools.combinations(range(len(p)), 2):
        if t[i] == t[j]:
            continue
        total += 1
        d = (p[i] - p[j]) * (t[i] - t[j])
        good += 1.0 if d > 0 else 0.5 if d == 0 else 0.0
    return good / total


@pytest.mark.parametrize("seed", range(5))
def test_spearman_and_kendall_equal_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    p, t = rng.integers(0, 5, 40).astype(float), rng.integers(0, 4, 40) / 3
    assert spearman(p, t) == pytest.approx(stats.spearmanr(p, t).statistic, abs=1e-12)
    assert kendall_tau(p, t) == pytest.approx(stats.kendalltau(p, t).statistic, abs=1e-12)


def test_spearman_hand_worked_with_a_tie():
    # ranks of pred: 1, 2.5, 2.5, 4; of target: 1, 2, 3, 4
    r = np.array([1, 2.5, 2.5, 4])
    expected = np.corrcoef(r, [1, 2, 3, 4])[0, 1]
    assert spearman([0.1, 0.5, 0.5, 0.9], [0, 1, 2, 3]) == pytest.approx(expected)
    assert spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_kendall_hand_worked():
    # pairs: (1,2) C, (1,3) C, (2,3) D -> tau = (2 - 1) / 3
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)


@pytest.mark.parametrize("seed", range(6))
def test_pairwise_accuracy_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    p, t = rng.integers(0, 4, 30).astype(float), rng.integers(0, 3, 30).astype(float)
    assert pairwise_accuracy(p, t) == pytest.approx(_brute_pairwise_accuracy(p, t), abs=1e-9)


def test_pairwise_accuracy_hand_worked_and_constant_prediction():
    assert pairwise_accuracy([1, 2, 3], [1, 3, 2]) == pytest.approx(2 / 3)
    assert pairwise_accuracy([5, 5, 5], [1, 2, 3]) == pytest.approx(0.5)


def test_per_occupation():
    got = per_occupation_spearman([1, 2, 3, 3, 2, 1], [1, 2, 3, 1, 2, 3], list("aaabbb"))
    assert got == {"a": pytest.approx(1.0), "b": pytest.approx(-1.0)}


def test_group_resamples_take_whole_groups():
    groups = ["g1", "g1", "g2", "g3", "g3", "g3"]
    members = {"g1": {0, 1}, "g2": {2}, "g3": {3, 4, 5}}
    for idx in _group_resamples(groups, 50, seed=3):
        counts = np.bincount(idx, minlength=6)
        for m in members.values():
            assert len({counts[i] for i in m}) == 1  # a group is drawn whole or not at all


def _dataset(n_groups=60, per_group=3, noise=0.5, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.repeat(rng.random(n_groups), per_group)
    groups = np.repeat([f"g{i}" for i in range(n_groups)], per_group)
    occ = np.repeat([f"o{i % 5}" for i in range(n_groups)], per_group)
    pred = labels + noise * rng.standard_normal(labels.size)
    return pred, labels, groups.tolist(), occ.tolist()


def test_evaluate_reports_every_metric_with_an_interval():
    pred, labels, groups, occ = _dataset()
    out = evaluate(pred, labels, groups, occ, n_boot=200)
    assert out["spearman"] == pytest.approx(stats.spearmanr(pred, labels).statistic)
    for name in ("spearman", "mean_occupation_spearman", "kendall_tau", "pairwise_accuracy"):
        lo, hi = out[f"{name}_ci"]
        assert lo < out[name] < hi
    assert out["n_items"] == 180 and set(out["per_occupation"]) == {f"o{i}" for i in range(5)}
    assert evaluate(pred, labels, groups, occ, n_boot=200) == out  # seeded
    assert evaluate(pred, labels, groups, occ, n_boot=0)["spearman_ci"] is None


def test_paired_comparison_detects_a_better_model():
    pred, labels, groups, _ = _dataset(noise=0.1)
    worse = labels + np.random.default_rng(9).standard_normal(labels.size)
    out = paired_comparison(pred, worse, labels, groups, n_boot=300)
    assert out["diff"] == pytest.approx(out["rho_a"] - out["rho_b"])
    assert out["diff"] > 0 and out["ci"][0] > 0 and out["p_value"] < 0.05
    same = paired_comparison(pred, pred, labels, groups, n_boot=100)
    assert same["diff"] == 0 and same["p_value"] == 1.0


def test_spearman_of_every_resample_at_once_equals_one_at_a_time():
    """The vectorised bootstrap (NaN-padded rows ranked by scipy) against ``spearman`` per
    draw: ties, draws of one or two copies of one item (no rho), and a constant column."""
    from training.ml.metrics import _group_resamples, spearman, spearman_resampled

    rng = np.random.default_rng(3)
    for constant in (False, True):
        pred = rng.integers(0, 6, 120).astype(float)
        target = np.ones(120) if constant else rng.normal(size=120).round(1)
        draws = _group_resamples((np.arange(120) // 7).astype(str), 300, 0)
        draws += [np.array([4]), np.array([4, 4])]
        got = spearman_resampled(pred, target, draws)
        want = np.array([spearman(pred[i], target[i]) for i in draws])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], atol=1e-12)


def test_the_rank_correlation_intervals_equal_one_draw_at_a_time():
    """``evaluate`` ranks every draw at once for Spearman and the mean per-occupation
    Spearman; the intervals equal those of the draws computed one by one."""
    from training.ml.metrics import _ci, _group_resamples, spearman

    pred, labels, groups, occupations = _dataset(n_groups=40, per_group=4)
    pred = pred.round(1)  # ties
    out = evaluate(pred, labels, groups, occupations, n_boot=150, seed=3)
    occ = np.asarray(occupations)

    def mean_occupation(i):
        rhos = [spearman(pred[i][occ[i] == o], labels[i][occ[i] == o]) for o in set(occ[i])]
        rhos = [r for r in rhos if not np.isnan(r)]
        return float(np.mean(rhos)) if rhos else float("nan")

    draws = _group_resamples(groups, 150, 3)
    assert out["spearman_ci"] == pytest.approx(_ci([spearman(pred[i], labels[i]) for i in draws]))
    assert out["mean_occupation_spearman_ci"] == pytest.approx(
        _ci([mean_occupation(i) for i in draws])
    )
