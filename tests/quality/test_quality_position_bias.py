"""Position bias: the shown x final table and its test, the untouched rate, shown-final tau."""

import math

import numpy as np
import pytest
from scipy import stats

from annotation.stats.position_bias import (
    permutation_chi2,
    position_bias,
    position_table,
    shown_final_tau,
)
from annotation.stats.records import RankingRecord


def rec(annotator, order, shown, task=1):
    return RankingRecord(task, annotator, "nurse", tuple(order), shown_order=tuple(shown))


def random_rankings(rng, n, k, keep_shown=0.0, annotators=10):
    """``n`` rankings with random shown orders; a share ``keep_shown`` is submitted as shown."""
    out = []
    for t in range(n):
        items = [f"t{t}i{i}" for i in range(k)]
        shown = [items[i] for i in rng.permutation(k)]
        order = shown if rng.random() < keep_shown else [items[i] for i in rng.permutation(k)]
        out.append(rec(f"a{t % annotators}", order, shown, task=t))
    return out


def test_table_counts_shown_against_final_positions():
    records = [
        rec("a", "xyz", "xyz"),  # untouched: the diagonal
        rec("b", "zyx", "xyz"),  # reversed: the anti-diagonal
    ]
    table = position_table(records)
    assert table.tolist() == [[1, 0, 1], [0, 2, 0], [1, 0, 1]]
    assert (table.sum(axis=0) == 2).all() and (table.sum(axis=1) == 2).all()


def test_chi2_is_pearsons_against_uniform_rescaled_for_permutations():
    rng = np.random.default_rng(0)
    records = random_rankings(rng, 60, 4, keep_shown=0.3)
    table = position_table(records)
    n, k = 60, 4
    hand_x2 = float((((table - n / k) ** 2) / (n / k)).sum())
    x2, chi2, df, p = permutation_chi2(table)
    assert x2 == pytest.approx(hand_x2)
    assert x2 == pytest.approx(stats.chi2_contingency(table, correction=False).statistic)
    assert df == (k - 1) ** 2
    assert chi2 == pytest.approx(hand_x2 * (k - 1) / k)
    assert p == pytest.approx(stats.chi2.sf(hand_x2 * (k - 1) / k, 9))
    assert position_bias(records, n_boot=0)[4].p_value == pytest.approx(p)


def test_the_test_holds_its_level_on_unbiased_data_where_the_plain_one_does_not():
    rng = np.random.default_rng(1)
    ours, plain = [], []
    for _ in range(400):
        table = np.zeros((4, 4), dtype=int)
        for _ in range(80):
            table[np.arange(4), rng.permutation(4)] += 1
        x2, _, _, p = permutation_chi2(table)
        ours.append(p < 0.05)
        plain.append(stats.chi2_contingency(table, correction=False).pvalue < 0.05)
    assert 0.02 <= np.mean(ours) <= 0.09
    assert np.mean(plain) > 0.10  # uncorrected X^2 against chi2((K-1)^2) is too eager


def test_biased_rankings_are_found():
    rng = np.random.default_rng(2)
    fig = position_bias(random_rankings(rng, 80, 5, keep_shown=0.4), n_boot=200)[5]
    assert fig.p_value < 1e-6
    assert fig.untouched_p_value < 1e-6
    assert fig.mean_tau.ci_low > 0


def test_untouched_rate_against_one_over_k_factorial_with_a_binomial_test():
    records = [rec("a", "xyz", "xyz", task=t) for t in range(3)]
    records += [rec("a", "yxz", "xyz", task=t) for t in range(3, 10)]
    fig = position_bias(records, n_boot=0)[3]
    assert fig.n_untouched == 3 and fig.untouched_rate == pytest.approx(0.3)
    assert fig.untouched_expected == pytest.approx(1 / 6)
    # P(X >= 3), X ~ Binomial(10, 1/6), summed by hand
    tail = sum(math.comb(10, i) * (1 / 6) ** i * (5 / 6) ** (10 - i) for i in range(3, 11))
    assert fig.untouched_p_value == pytest.approx(tail)
    assert fig.untouched_p_value == pytest.approx(
        stats.binomtest(3, 10, 1 / 6, alternative="greater").pvalue
    )


def test_tau_matches_scipy_and_the_obvious_cases():
    rng = np.random.default_rng(3)
    for r in random_rankings(rng, 20, 6):
        shown = [r.shown_order.index(i) for i in r.order]
        final = list(range(r.k))
        assert shown_final_tau(r) == pytest.approx(stats.kendalltau(shown, final).statistic)
    assert shown_final_tau(rec("a", "wxyz", "wxyz")) == 1.0
    assert shown_final_tau(rec("a", "zyxw", "wxyz")) == -1.0


def test_tau_interval_contains_the_mean_and_is_reproducible():
    rng = np.random.default_rng(4)
    records = random_rankings(rng, 120, 4, keep_shown=0.1, annotators=15)
    first = position_bias(records, n_boot=300, seed=5)[4].mean_tau
    assert first.ci_low < first.value < first.ci_high
    assert first.n == 15  # annotators resampled
    assert position_bias(records, n_boot=300, seed=5)[4].mean_tau == first
    assert first.value == pytest.approx(np.mean([shown_final_tau(r) for r in records]))


def test_per_k_and_per_annotator_and_unknown_shown_orders_left_out():
    records = [
        rec("keeper", "xyz", "xyz", task=1),
        rec("keeper", "xyz", "xyz", task=2),
        rec("mover", "wxyz", "zyxw", task=3),
        RankingRecord(4, "mover", "nurse", ("x", "y")),  # imported: no shown order
    ]
    overall = position_bias(records, n_boot=0)
    assert sorted(overall) == [3, 4]
    per = {
        who: position_bias([r for r in records if r.annotator == who], n_boot=0)
        for who in ("keeper", "mover")
    }
    assert per["keeper"][3].untouched_rate == 1.0
    assert per["keeper"][3].mean_tau.value == 1.0
    assert list(per["mover"]) == [4]
    assert per["mover"][4].mean_tau.value == -1.0


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="one size"):
        position_table([rec("a", "xy", "xy"), rec("a", "xyz", "xyz")])
    with pytest.raises(ValueError, match="K x K"):
        permutation_chi2(np.ones((2, 3)))
