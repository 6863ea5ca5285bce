"""Kendall's W, Krippendorff's alpha and leave-one-out reliability against independent sums."""

import krippendorff
import numpy as np
import pytest
from scipy import stats

from annotation.stats.agreement import (
    agreement,
    alpha_from_blocks,
    annotator_reliability,
    kendall_w,
)
from annotation.stats.records import RankingRecord


def rec(task, annotator, order, occupation="nurse", **kw):
    return RankingRecord(task, annotator, occupation, tuple(order), **kw)


def random_study(seed, n_tasks=30, sizes=(6,), annotators=12, per_task=3, noise=1.5):
    """Tasks of the given sizes, each ranked by ``per_task`` annotators around a true order."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_tasks):
        k = int(rng.choice(sizes))
        truth = rng.normal(0, 1, k)
        for a in rng.choice(annotators, per_task, replace=False):
            order = np.argsort(truth + rng.normal(0, noise, k))
            out.append(rec(t, f"a{a}", [f"t{t}i{i}" for i in order], occupation=f"o{t % 3}"))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_w_equals_friedman_over_m_times_n_minus_1_on_complete_designs(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 7)), int(rng.integers(3, 8))
    ranks = np.array([rng.permutation(n) + 1 for _ in range(m)])
    friedman = stats.friedmanchisquare(*ranks.T)  # one sample per item, blocks = rankings
    res = kendall_w(ranks)
    assert res.w == pytest.approx(friedman.statistic / (m * (n - 1)), abs=1e-12)
    assert res.chi2 == pytest.approx(friedman.statistic, abs=1e-9)
    assert res.p_value == pytest.approx(friedman.pvalue, abs=1e-12)
    assert res.df == n - 1


@pytest.mark.parametrize("seed", range(4))
def test_w_ties_correction_matches_scipys_tie_corrected_friedman(seed):
    rng = np.random.default_rng(100 + seed)
    scores = rng.integers(0, 3, size=(5, 6)).astype(float)  # many ties
    friedman = stats.friedmanchisquare(*scores.T)
    assert kendall_w(scores).w == pytest.approx(friedman.statistic / (5 * 5), abs=1e-12)


def test_w_ties_hand_worked():
    # Rankings (1, 2, 3) and (1.5, 1.5, 3): R = (2.5, 3.5, 6), mean 4, S = 6.5;
    # T = 0 + (2^3 - 2) = 6; W = 12 * 6.5 / (2^2 (27 - 3) - 2 * 6) = 78 / 84.
    assert kendall_w([[1, 2, 3], [1, 1, 2]]).w == pytest.approx(78 / 84)
    # Without the correction it would be 78 / 96: the correction matters.
    assert kendall_w([[1, 2, 3], [1, 1, 2]]).w != pytest.approx(78 / 96)


def test_w_is_one_for_identical_rankings_and_zero_for_a_latin_square():
    same = kendall_w([[1, 2, 3, 4]] * 4)
    assert same.w == pytest.approx(1.0)
    assert same.chi2 == pytest.approx(4 * 3)
    assert same.p_value == pytest.approx(stats.chi2.sf(12, 3))
    assert agreement(
        [rec(1, a, "xyzw") for a in "abcd"], n_boot=0
    ).kendall_w.value == pytest.approx(1)
    latin = [rec(1, "a", "xyz"), rec(1, "b", "yzx"), rec(1, "c", "zxy")]
    assert agreement(latin, n_boot=0).kendall_w.value == pytest.approx(0.0)


def test_hand_worked_two_rankings_w_and_interval_alpha():
    # a: x y z -> values x 0, y .5, z 1; b: x z y -> x 0, z .5, y 1.
    # W: ranks (1,2,3), (1,3,2): R = (2,5,5), S = 6, W = 72 / 96 = 0.75.
    # alpha interval, units x:(0,0) y:(.5,1) z:(1,.5), N = 6 values:
    # D_o = (0 + 2*.25 + 2*.25) / 6 = 1/6; D_e = 2 * (4*.25 + 4*1 + 4*.25) / (6*5) = 0.4;
    # alpha = 1 - (1/6) / 0.4 = 7/12.
    records = [rec(1, "a", "xyz"), rec(1, "b", "xzy")]
    result = agreement(records, n_boot=0)
    assert result.kendall_w.value == pytest.approx(0.75)
    assert result.alpha_interval.value == pytest.approx(7 / 12)
    assert result.kendall_w.ci_low is None  # n_boot = 0: no interval


def reliability_matrix(records):
    """Annotators x (task, item) units, value = position / (K - 1), NaN where not ranked."""
    annotators = sorted({r.annotator for r in records})
    units = sorted({(r.task_id, i) for r in records for i in r.order})
    data = np.full((len(annotators), len(units)), np.nan)
    for r in records:
        for pos, item in enumerate(r.order):
            data[annotators.index(r.annotator), units.index((r.task_id, item))] = pos / (r.k - 1)
    return data


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_equals_the_package_on_a_hand_built_reliability_matrix(level):
    records = random_study(3, n_tasks=15, sizes=(4, 5, 6), annotators=8, per_task=3)
    expected = krippendorff.alpha(
        reliability_data=reliability_matrix(records), level_of_measurement=level
    )
    got = getattr(agreement(records, n_boot=0), f"alpha_{level}")
    assert got.value == pytest.approx(expected, abs=1e-10)
    assert got.n == 15


def test_ordinal_and_interval_alpha_coincide_for_one_task_size_only():
    one_k = random_study(4, sizes=(5,))
    a = agreement(one_k, n_boot=0)
    assert a.alpha_ordinal.value == pytest.approx(a.alpha_interval.value, abs=1e-12)
    mixed = random_study(4, sizes=(3, 6))
    b = agreement(mixed, n_boot=0)
    assert abs(b.alpha_ordinal.value - b.alpha_interval.value) > 1e-4


def test_tasks_with_one_ranking_do_not_count():
    records = random_study(5, n_tasks=10)
    lonely = [rec(100 + t, "solo", "uvwxyz") for t in range(5)]
    assert agreement(records + lonely, n_boot=0) == agreement(records, n_boot=0)
    assert agreement(records + lonely, n_boot=0).n_tasks == 10


def test_bootstrap_interval_contains_the_estimate_and_is_reproducible_by_seed():
    records = random_study(6, n_tasks=40)
    first = agreement(records, n_boot=300, seed=11)
    for est in (first.kendall_w, first.alpha_ordinal, first.alpha_interval):
        assert est.ci_low < est.value < est.ci_high
        assert est.n == 40
    assert agreement(records, n_boot=300, seed=11) == first
    other = agreement(records, n_boot=300, seed=12).kendall_w
    assert (other.ci_low, other.ci_high) != (first.kendall_w.ci_low, first.kendall_w.ci_high)
    # Per task, W = Friedman's statistic / (m (n - 1)) (no ties), computed by scipy.
    per_task = []
    for t in sorted({r.task_id for r in records}):
        rs = [r for r in records if r.task_id == t]
        items = sorted(rs[0].order)
        ranks = np.array([[r.order.index(i) + 1 for i in items] for r in rs])
        m, n = ranks.shape
        per_task.append(stats.friedmanchisquare(*ranks.T).statistic / (m * (n - 1)))
    assert first.kendall_w.value == pytest.approx(np.mean(per_task))


def test_agreement_rises_with_less_noise():
    noisy = agreement(random_study(7, noise=3.0), n_boot=0)
    clean = agreement(random_study(7, noise=0.3), n_boot=0)
    assert clean.kendall_w.value > noisy.kendall_w.value
    assert clean.alpha_interval.value > noisy.alpha_interval.value


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="same items"):
        agreement([rec(1, "a", "xyz"), rec(1, "b", "xyw")], n_boot=0)
    with pytest.raises(ValueError, match="more than once"):
        agreement([rec(1, "a", "xyz"), rec(1, "a", "zyx")], n_boot=0)
    with pytest.raises(ValueError, match="2 or more rankings"):
        kendall_w([[1, 2, 3]])
    with pytest.raises(ValueError, match="repeats"):
        rec(1, "a", "xxz")
    with pytest.raises(ValueError, match="reordering"):
        rec(1, "a", "xyz", shown_order=("x", "y", "w"))
    with pytest.raises(ValueError, match="level"):
        alpha_from_blocks([np.array([[1, 2, 3], [1, 2, 3]])], "nominal")


def test_reliability_equals_spearman_with_the_others_mean_position():
    records = random_study(8, n_tasks=20, annotators=6, per_task=4)
    expected: dict[str, list[float]] = {}
    for t in {r.task_id for r in records}:
        rs = [r for r in records if r.task_id == t]
        items = sorted(rs[0].order)
        for r in rs:
            mine = [r.order.index(i) for i in items]
            others = [np.mean([o.order.index(i) for o in rs if o is not r]) for i in items]
            if len(set(others)) > 1:
                expected.setdefault(r.annotator, []).append(stats.spearmanr(mine, others)[0])
    got = annotator_reliability(records)
    assert set(got) == {r.annotator for r in records}
    for annotator, rhos in expected.items():
        assert got[annotator].rho == pytest.approx(np.mean(rhos), abs=1e-12)
        assert got[annotator].n_tasks == len(rhos)


def test_reliability_hand_cases():
    # c's consensus (a, b agree) is x y z, c ranks the reverse: rho = -1.
    # a's consensus: mean of b (x y z) and c (z y x) ties everything: undefined, skipped.
    records = [rec(1, "a", "xyz"), rec(1, "b", "xyz"), rec(1, "c", "zyx"), rec(2, "solo", "xyz")]
    got = annotator_reliability(records)
    assert got["c"].rho == pytest.approx(-1.0)
    assert got["c"].n_tasks == 1
    assert got["a"].n_tasks == 0 and np.isnan(got["a"].rho)
    assert got["solo"].n_tasks == 0
