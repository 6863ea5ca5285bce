"""The Bradley-Terry fit over the pairs tiers state (annotation/stats/pair_fit.py): checked
against choix (an independent implementation of the same penalised likelihood), a
hand-worked case, and the counting score it must agree with on clean data."""

import math
import random

import choix
import numpy as np
import pytest
from scipy.stats import spearmanr

from annotation.stats.pair_fit import bradley_terry, fitted_labels
from annotation.stats.tiers import pairs, places
from annotation.studies import answering


def test_two_items_match_the_closed_form():
    # a beat b 3 times (a less stereotypical: its tier is later), b beat a once.
    answers = [[["b"], ["a"]]] * 3 + [[["a"], ["b"]]]
    theta = bradley_terry(answers, alpha=1e-9)
    # Unpenalised MLE of two items: theta_a - theta_b = log(3 / 1), centred.
    assert theta["a"] - theta["b"] == pytest.approx(math.log(3), abs=1e-4)
    assert theta["a"] + theta["b"] == pytest.approx(0, abs=1e-6)


def test_tiers_match_choix_on_the_pairs_they_state():
    rng = random.Random(3)
    items = list(range(12))
    latent = {i: rng.gauss(0, 1) for i in items}
    answers = []
    for _ in range(300):
        shown = rng.sample(items, 4)
        perceived = {i: latent[i] + rng.gauss(0, 0.7) for i in shown}
        # best-worst answers: the most stereotypical (lowest), the middle tier, the least
        answers.append(answering.from_scores(perceived, "best_worst", None))
    alpha = 0.05
    ours = bradley_terry(answers, alpha=alpha)
    # choix: (winner, loser) with the winner the less stereotypical item, the same penalty
    data = [(less, more) for tiers in answers for more, less in pairs(tiers)]
    theirs = choix.opt_pairwise(len(items), data, alpha=alpha, method="BFGS", tol=1e-10)
    assert np.allclose([ours[i] for i in items], theirs, atol=1e-4)


def test_a_tier_adds_no_pair_so_an_all_equal_answer_leaves_the_fit_unchanged():
    answers = [[["a"], ["b"], ["c"]], [["a"], ["c"], ["b"]]]
    with_equal = [*answers, [["a", "b", "c"]]]
    assert bradley_terry(with_equal) == pytest.approx(bradley_terry(answers))


def test_an_item_that_always_wins_stays_finite_and_orders_first():
    answers = [[["c"], ["b"], ["a"]]] * 5
    theta = bradley_terry(answers)
    assert all(math.isfinite(t) for t in theta.values())
    assert theta["a"] > theta["b"] > theta["c"]


def test_fitted_labels_read_on_the_place_labels_scale():
    rng = random.Random(5)
    items = list(range(20))
    latent = {i: i / 19 for i in items}
    answers = []
    for _ in range(400):
        shown = rng.sample(items, 4)
        perceived = {i: latent[i] + rng.gauss(0, 0.15) for i in shown}
        answers.append(answering.from_scores(perceived, "best_worst", None))
    fitted = fitted_labels(answers, bradley_terry(answers))
    counting: dict[int, list[float]] = {}
    for tiers in answers:
        for item, place in places(tiers).items():
            counting.setdefault(item, []).append(place / 3)
    count = {i: np.mean(v) for i, v in counting.items()}
    assert all(0 < v < 1 for v in fitted.values())
    # the same direction and scale as the counting score, ordered as the latent truth
    assert spearmanr([fitted[i] for i in items], [count[i] for i in items]).statistic > 0.95
    assert spearmanr([fitted[i] for i in items], items).statistic > 0.95
    assert np.mean(list(fitted.values())) == pytest.approx(0.5, abs=0.02)


def test_a_non_positive_prior_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        bradley_terry([[["a"], ["b"]]], alpha=0)
