"""Split-half reliability (``annotation.stats.split_half``) against hand-worked cases and
scipy: one task of two rankings has one split (its halves swap), two such tasks have two
splits, enumerated here; ties count by their places."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from scipy import stats

from annotation.stats.records import RankingRecord
from annotation.stats.split_half import split_half
from annotation.stats.tiers import flatten, places


def record(task, annotator, tiers):
    tiers = tuple(tuple(t) for t in tiers)
    return RankingRecord(task, annotator, "nurse", tuple(flatten(tiers)), tiers=tiers)


def brown(r: float) -> float:
    return 2 * r / (1 + r)


def labels(tiers, items):
    at = places(tuple(tuple(t) for t in tiers))
    return [at[i] / (len(items) - 1) for i in items]


def test_one_task_of_two_rankings_is_their_stepped_up_correlation():
    one = [["a"], ["b", "c"], ["d"], ["e"]]
    two = [["b"], ["a"], ["c"], ["e"], ["d"]]
    got = split_half([record(1, "x", one), record(1, "y", two)], splits=10, n_boot=0)
    items = list("abcde")
    r = stats.pearsonr(labels(one, items), labels(two, items)).statistic
    assert got.value == pytest.approx(brown(r)) and got.n == 1


def test_two_tasks_average_their_enumerated_splits():
    rankings = {
        1: ([["a"], ["b"], ["c"]], [["a"], ["c"], ["b"]], [["a", "b"], ["c"]]),
        2: ([["d"], ["e"], ["f"]], [["d"], ["e", "f"]], [["e"], ["d"], ["f"]]),
    }
    records = [record(t, n, r) for t, three in rankings.items() for n, r in enumerate(three)]
    # each task's three rankings: one alone in a half, two in the other: 9 splits, equally likely
    values = []
    for alone in product(range(3), repeat=2):
        a, b = [], []
        for three, one in zip(rankings.values(), alone, strict=True):
            items = sorted(flatten(three[0]))
            rest = [labels(r, items) for n, r in enumerate(three) if n != one]
            a += labels(three[one], items)
            b += list(np.mean(rest, axis=0))
        values.append(brown(stats.pearsonr(a, b).statistic))
    got = split_half(records, splits=4000, n_boot=0, seed=3)
    assert got.value == pytest.approx(np.mean(values), abs=0.01)
    assert max(values) - min(values) > 0.1  # the splits differ: the mean is not one split


def test_the_interval_is_a_seeded_task_bootstrap_around_the_estimate():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=(30, 4))
    records = []
    for task in range(30):
        for annotator in range(3):
            noisy = truth[task] + rng.normal(scale=0.7, size=4)
            records.append(record(task, annotator, [[i] for i in np.argsort(noisy)]))
    got = split_half(records, splits=50, n_boot=300, seed=1)
    assert got.ci_low < got.value < got.ci_high and got.n == 30 and got.n_boot == 300
    assert split_half(records, splits=50, n_boot=300, seed=1) == got
    # a noisier crowd is less reliable
    noisier = []
    for task in range(30):
        for annotator in range(3):
            noisy = truth[task] + rng.normal(scale=3.0, size=4)
            noisier.append(record(task, annotator, [[i] for i in np.argsort(noisy)]))
    assert split_half(noisier, splits=50, n_boot=0).value < got.value


def test_tasks_ranked_once_say_nothing():
    got = split_half([record(1, "x", [["a"], ["b"], ["c"]])], n_boot=10)
    assert np.isnan(got.value) and got.ci_low is None and got.n == 0
