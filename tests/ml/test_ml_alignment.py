"""Alignment measures, checked against scipy, a Monte Carlo sampler and hand-worked cases."""

import itertools
import json
import math
from collections import defaultdict

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import jensenshannon

from training.ml.alignment import (
    RankedList,
    alignment,
    first_choice_distributions,
    jensen_shannon_distance,
    plackett_luce_position_marginals,
    position_distributions,
    wasserstein_1,
)
from training.ml.alignment_report import paired_alignment, paired_per_prompt, perspective_report

T = 0.5


def _brute_pl(scores, t=T):
    """P[i, p] by the product formula, one order at a time (first draw -> position K-1)."""
    k = len(scores)
    w = [math.exp(s / t) for s in scores]
    p = np.zeros((k, k))
    for order in itertools.permutations(range(k)):
        prob = 1.0
        for step, item in enumerate(order):
            prob *= w[item] / sum(w[j] for j in order[step:])
        for step, item in enumerate(order):
            p[item, k - 1 - step] += prob
    return p


def _ranking(rid, annotator, items, group, occupation="nurse"):
    return RankedList(rid, annotator, tuple(items), group, occupation)


# --- Plackett-Luce -------------------------------------------------------------


@pytest.mark.parametrize("k", range(1, 9))
def test_marginals_are_doubly_stochastic(k):
    scores = np.random.default_rng(k).normal(size=(3, k))
    p = plackett_luce_position_marginals(scores, T)
    assert p.shape == (3, k, k)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(p.sum(axis=2), 1.0, atol=1e-12)


def test_equal_scores_give_uniform_positions():
    np.testing.assert_allclose(plackett_luce_position_marginals([0.7] * 5, T), 0.2, atol=1e-12)


def test_two_items_hand_worked_sigmoid():
    s1, s2 = 0.9, 0.2
    first = 1 / (1 + math.exp(-(s1 - s2) / T))  # P(item 1 drawn first = least stereotypical)
    expected = np.array([[1 - first, first], [first, 1 - first]])
    np.testing.assert_allclose(plackett_luce_position_marginals([s1, s2], T), expected)


@pytest.mark.parametrize("k", [3, 5, 7])
def test_marginals_equal_the_product_formula(k):
    scores = np.random.default_rng(10 + k).uniform(-1, 1, k)
    np.testing.assert_allclose(
        plackett_luce_position_marginals(scores, T), _brute_pl(scores), atol=1e-12
    )


@pytest.mark.parametrize("k", range(1, 9))
def test_the_drawn_sets_recursion_equals_every_order_enumerated(k):
    """The fast path (2^K sets drawn so far) against the K! orders summed in log space."""
    from training.ml.alignment import _marginals_by_drawn_sets, _marginals_in_log_space

    z = np.random.default_rng(20 + k).normal(scale=4.0, size=(40, k))
    np.testing.assert_allclose(
        _marginals_by_drawn_sets(np.exp(z - z.max())), _marginals_in_log_space(z), atol=1e-12
    )


def test_marginals_match_monte_carlo_plackett_luce_sampling():
    rng = np.random.default_rng(0)
    scores = np.array([0.1, 0.8, -0.3, 0.4])
    n, k = 200_000, scores.size
    # sequential draws without replacement, weights exp(s / T) among the items left
    left = np.ones((n, k), dtype=bool)
    counts = np.zeros((k, k))
    weights = np.exp(scores / T)
    for step in range(k):
        w = np.where(left, weights, 0.0)
        cum = np.cumsum(w / w.sum(axis=1, keepdims=True), axis=1)
        drawn = np.minimum((cum < rng.random((n, 1))).sum(axis=1), k - 1)
        left[np.arange(n), drawn] = False
        np.add.at(counts, (drawn, k - 1 - step), 1)
    # 5 standard errors of a proportion at worst (p = 0.5)
    np.testing.assert_allclose(
        plackett_luce_position_marginals(scores, T), counts / n, atol=5 * 0.5 / math.sqrt(n)
    )


def test_scores_far_apart_stay_exact():
    # item 0 is drawn first for sure; the others then follow Plackett-Luce among themselves
    p = plackett_luce_position_marginals([1000.0, 0.0, 10.0, 3.0], 1.0)
    np.testing.assert_allclose(p[0], [0, 0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(p[1:, :3], _brute_pl([0.0, 10.0, 3.0], 1.0), atol=1e-12)


def test_higher_score_lands_toward_least_stereotypical():
    p = plackett_luce_position_marginals([0.0, 2.0, 1.0], T)
    assert p[1, 2] > p[2, 2] > p[0, 2]
    assert p[0, 0] > p[2, 0] > p[1, 0]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="K = 9 is more than 8"):
        plackett_luce_position_marginals(np.zeros(9), T)
    with pytest.raises(ValueError, match="temperature"):
        plackett_luce_position_marginals([0.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="finite"):
        plackett_luce_position_marginals([0.0, np.nan], T)
    with pytest.raises(ValueError, match="twice"):
        _ranking(1, "x", ["a", "a"], "g")


# --- distances ---------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 6, 8])
def test_wasserstein_equals_scipy(n):
    rng = np.random.default_rng(n)
    p, q = rng.dirichlet(np.ones(n), 20), rng.dirichlet(np.ones(n), 20)
    support = np.arange(n)
    expected = [
        stats.wasserstein_distance(support, support, a, b) for a, b in zip(p, q, strict=True)
    ]
    np.testing.assert_allclose(wasserstein_1(p, q), expected, atol=1e-12)
    np.testing.assert_allclose(alignment(p, q), 1 - np.array(expected) / (n - 1), atol=1e-12)
    assert wasserstein_1([1, 0, 0, 0], [0, 0, 0, 1]) == pytest.approx(3.0)


@pytest.mark.parametrize("n", [2, 4, 7])
def test_jensen_shannon_equals_scipy(n):
    rng = np.random.default_rng(100 + n)
    p, q = rng.dirichlet(np.ones(n), 20), rng.dirichlet(np.ones(n), 20)
    p[0] = np.eye(n)[0]  # a zero entry
    expected = [jensenshannon(a, b, base=2) for a, b in zip(p, q, strict=True)]
    np.testing.assert_allclose(jensen_shannon_distance(p, q), expected, atol=1e-12)
    assert jensen_shannon_distance([1, 0], [0, 1]) == pytest.approx(1.0)


def test_distributions_must_be_distributions():
    with pytest.raises(ValueError, match="sum to 1"):
        wasserstein_1([0.5, 0.2], [0.5, 0.5])
    with pytest.raises(ValueError, match="share a shape"):
        jensen_shannon_distance([1.0], [0.5, 0.5])


# --- alignment, hand-worked ----------------------------------------------------


def test_alignment_is_one_when_the_model_reproduces_the_group():
    # 24 annotators, one per order of 4 prompts: every prompt is uniform over positions,
    # and so is the model with equal scores
    items = ["a", "b", "c", "d"]
    rankings = [
        _ranking(n, f"ann{n}", order, "g") for n, order in enumerate(itertools.permutations(items))
    ]
    prompt = {i: i.upper() for i in items}
    flat = perspective_report(rankings, prompt, dict.fromkeys(items, 0.3), k=5, n_boot=50)
    g = flat.groups[0]
    assert g.alignment == pytest.approx(1.0, abs=1e-12)
    assert g.first_choice_js == pytest.approx(0.0, abs=1e-6)
    steep = perspective_report(rankings, prompt, {"a": 0, "b": 1, "c": 2, "d": 3}, k=5, n_boot=0)
    assert steep.groups[0].alignment < 0.8


def test_two_item_group_matched_then_reversed():
    # 3 of 4 annotators put a last (least stereotypical): group P(a at 1) = 3/4
    rankings = [_ranking(n, f"ann{n}", ["b", "a"], "g") for n in range(3)]
    rankings.append(_ranking(3, "ann3", ["a", "b"], "g"))
    prompt = {"a": "A", "b": "B"}
    gap = T * math.log(3)  # sigmoid(gap / T) = 3/4
    matched = perspective_report(rankings, prompt, {"a": gap, "b": 0.0}, k=4, n_boot=0)
    assert matched.groups[0].alignment == pytest.approx(1.0, abs=1e-12)
    reversed_ = perspective_report(rankings, prompt, {"a": 0.0, "b": gap}, k=4, n_boot=0)
    # group [1/4, 3/4] vs model [3/4, 1/4]: W1 = 1/2 on one step
    assert reversed_.groups[0].alignment == pytest.approx(0.5)


def _baseline_case():
    g = [_ranking(1, "g1", "abc", "G"), _ranking(2, "g2", "abc", "G")]
    h = [_ranking(3, "h1", "cba", "H"), _ranking(4, "h2", "abc", "H")]
    return g + h, {i: i for i in "abc"}, {"a": 0.0, "b": 0.5, "c": 1.0}


def test_human_baseline_and_divergence_hand_worked():
    rankings, prompt, scores = _baseline_case()
    # an H annotator on prompts G never saw is not behind G's baseline
    rankings.append(_ranking(5, "h3", "xy", "H", occupation="pilot"))
    prompt |= {"x": "x", "y": "y"}
    scores |= {"x": 0.0, "y": 1.0}
    report = perspective_report(rankings, prompt, scores, k=2, n_boot=0)
    g = next(x for x in report.groups if x.group == "G")
    # a: G [1,0,0] vs rest [1/2,0,1/2] -> W1 = 1, A = 1/2; b: equal -> 1; c: as a -> 1/2
    assert g.human_baseline == pytest.approx(2 / 3)
    assert (g.baseline_prompts, g.baseline_annotators, g.baseline_rankings) == (3, 2, 2)
    (div,) = report.divergence
    assert (div.group_a, div.group_b, div.n_prompts) == ("G", "H", 3)
    assert div.value == pytest.approx(1 / 3)


def test_groups_under_k_are_not_computed_and_baseline_needs_k_others():
    rankings, prompt, scores = _baseline_case()
    rankings.append(_ranking(5, "g3", "bac", "G"))
    report = perspective_report(rankings, prompt, scores, k=3, n_boot=0)
    assert [g.group for g in report.groups] == ["G"]
    assert report.fewer_than_k == ["H"]
    assert "H" not in json.dumps(report.to_dict()["groups"])
    # the rest (H) has 2 annotators, under k: no baseline figure
    g = report.groups[0]
    assert math.isnan(g.human_baseline) and g.baseline_prompts == 0 and g.human_baseline_ci is None
    assert perspective_report(rankings, prompt, scores, k=4, n_boot=0).groups == []


def test_unknown_items_and_inconsistent_occupations_are_refused():
    rankings, prompt, scores = _baseline_case()
    with pytest.raises(ValueError, match="no score for item 'c'"):
        perspective_report(rankings, prompt, {"a": 0, "b": 1}, k=1)
    with pytest.raises(ValueError, match="has no prompt"):
        perspective_report(rankings, {"a": "a"}, scores, k=1)
    other = [*rankings, _ranking(9, "z", "ab", "H", occupation="pilot")]
    with pytest.raises(ValueError, match="two occupations"):
        perspective_report(other, prompt, scores, k=1)


def test_first_choice_among_the_prompts_under_study():
    rankings = [_ranking(1, "x", "abc", "G"), _ranking(2, "y", "cab", "G")]
    scores = {"a": 0.0, "b": 1.0, "c": 3.0}
    fc = first_choice_distributions(rankings, {i: i for i in "abc"}, scores, prompts={"a", "b"})
    options, human, model = fc["nurse"]
    # within {a, b}: b is last in both rankings; the model chooses by softmax(s / T)
    assert options == ["a", "b"]
    np.testing.assert_allclose(human, [0.0, 1.0])
    np.testing.assert_allclose(model, [1 / (1 + math.exp(2)), 1 / (1 + math.exp(-2))])


# --- against an independent computation on random data -------------------------


def _random_study(seed=0, groups=("a", "b", "c"), per_group=6):
    rng = np.random.default_rng(seed)
    occupations = ["nurse", "ceo", "pilot", "chef"]
    item_prompt, catalogue = {}, defaultdict(list)
    for occ in occupations:
        for p in range(6):
            for i in range(int(rng.integers(1, 3))):
                item_prompt[f"{occ}-{p}-{i}"] = f"{occ}-{p}"
                catalogue[occ].append(f"{occ}-{p}-{i}")
    rankings, n = [], 0
    for g, group in enumerate(groups):
        bias = np.linspace(-1, 1, 6) * (g - 1)  # groups order prompts differently
        for a in range(per_group):
            for occ in occupations:
                k = int(rng.integers(3, 6))
                items = list(rng.choice(catalogue[occ], size=k, replace=False))
                key = [bias[int(i.split("-")[1])] + rng.normal() for i in items]
                order = [items[j] for j in np.argsort(key)]
                rankings.append(RankedList(n, f"{group}{a}", tuple(order), group, occ))
                n += 1
    scores = {i: float(rng.normal()) for i in item_prompt}
    return rankings, item_prompt, scores


def _placements(rankings, item_prompt, prompt):
    """Where the prompt's items landed, as labels p / (K - 1)."""
    return [
        p / (len(r.items) - 1)
        for r in rankings
        for p, i in enumerate(r.items)
        if item_prompt[i] == prompt
    ]


def _scipy_alignment(rankings, item_prompt, scores, prompt):
    """1 - W1 on [0, 1] by scipy between the placements and the brute-force PL marginals."""
    mv, mw = [], []
    for r in rankings:
        k = len(r.items)
        pl = _brute_pl([scores[i] for i in r.items])
        for p, i in enumerate(r.items):
            if item_prompt[i] == prompt:
                mv += list(np.arange(k) / (k - 1))
                mw += list(pl[p])
    human = _placements(rankings, item_prompt, prompt)
    return 1 - stats.wasserstein_distance(human, mv, None, mw)


def test_report_equals_scipy_on_random_mixed_k_data():
    rankings, item_prompt, scores = _random_study()
    report = perspective_report(rankings, item_prompt, scores, k=5, n_boot=200, seed=1)
    assert [g.group for g in report.groups] == ["a", "b", "c"]
    per_occupation = {}
    for g in report.groups:
        mine = [r for r in rankings if r.group == g.group]
        rest = [r for r in rankings if r.group != g.group]
        prompts = sorted({item_prompt[i] for r in mine for i in r.items})
        a = {p: _scipy_alignment(mine, item_prompt, scores, p) for p in prompts}
        assert g.alignment == pytest.approx(np.mean(list(a.values())), abs=1e-9)
        assert g.alignment_ci[0] <= g.alignment <= g.alignment_ci[1]
        assert (g.n_annotators, g.n_rankings, g.n_prompts) == (6, len(mine), len(prompts))
        by_occ = defaultdict(list)
        for p, v in a.items():
            by_occ[p.split("-")[0]].append(v)
        per_occupation[g.group] = {o: np.mean(v) for o, v in by_occ.items()}
        # human baseline: the group against everyone else, on shared prompts
        base = []
        for p in prompts:
            if other := _placements(rest, item_prompt, p):
                own = _placements(mine, item_prompt, p)
                base.append(1 - stats.wasserstein_distance(own, other))
        assert g.human_baseline == pytest.approx(np.mean(base), abs=1e-9)
        assert g.baseline_prompts == len(base)
        # first choice per occupation, Jensen-Shannon by scipy
        js = []
        for occ in by_occ:
            h, m = defaultdict(float), defaultdict(float)
            for r in (r for r in mine if r.occupation == occ):
                h[item_prompt[r.items[-1]]] += 1
                z = np.exp(np.array([scores[i] for i in r.items]) / T)
                for i, v in zip(r.items, z / z.sum(), strict=True):
                    m[item_prompt[i]] += v
            keys = sorted(m)
            js.append(jensenshannon([h[x] for x in keys], [m[x] for x in keys], base=2))
        assert g.first_choice_js == pytest.approx(np.mean(js), abs=1e-9)
        # rank agreement with the group's labels (mean p / (K - 1))
        lab = defaultdict(list)
        for r in mine:
            for p, i in enumerate(r.items):
                lab[i].append(p / (len(r.items) - 1))
        items = sorted(lab)
        rho = stats.spearmanr([scores[i] for i in items], [np.mean(lab[i]) for i in items])
        assert g.spearman == pytest.approx(rho.statistic, abs=1e-9)
        assert g.n_items == len(items)
    blocks = sorted(set.intersection(*(set(v) for v in per_occupation.values())))
    expected = stats.friedmanchisquare(*([per_occupation[g][o] for o in blocks] for g in "abc"))
    assert report.friedman.statistic == pytest.approx(expected.statistic, abs=1e-9)
    assert report.friedman.p_value == pytest.approx(expected.pvalue, abs=1e-9)
    assert report.friedman.occupations == blocks
    json.dumps(report.to_dict())


def test_friedman_needs_three_groups():
    rankings, item_prompt, scores = _random_study(groups=("a", "b"))
    assert perspective_report(rankings, item_prompt, scores, k=5, n_boot=0).friedman is None


def test_prompts_under_study_keep_their_full_rankings_as_context():
    rankings, item_prompt, scores = _random_study(seed=3)
    every = position_distributions(rankings, item_prompt, scores)
    some = sorted(set(item_prompt.values()))[::3]
    part = position_distributions(rankings, item_prompt, scores, prompts=set(some))
    assert part.prompts == some
    rows = [every.prompts.index(p) for p in some]
    np.testing.assert_allclose(part.model, every.model[rows])
    np.testing.assert_allclose(part.human, every.human[rows])


def test_bootstrap_intervals_are_seeded():
    rankings, item_prompt, scores = _random_study(seed=2)
    one = perspective_report(rankings, item_prompt, scores, k=5, n_boot=100, seed=7)
    two = perspective_report(rankings, item_prompt, scores, k=5, n_boot=100, seed=7)
    assert one == two
    assert (
        perspective_report(rankings, item_prompt, scores, k=5, n_boot=0).groups[0].alignment_ci
        is None
    )


# --- paired comparison -----------------------------------------------------------


def test_paired_alignment_of_a_steered_against_a_reversed_head():
    rankings, item_prompt, _ = _random_study(seed=4)
    mine = [r for r in rankings if r.group == "c"]
    labels = defaultdict(list)
    for r in mine:
        for p, i in enumerate(r.items):
            labels[i].append(p / (len(r.items) - 1))
    steered = {i: 3 * float(np.mean(labels.get(i, [0.5]))) for i in item_prompt}
    reversed_ = {i: -s for i, s in steered.items()}
    res = paired_alignment(rankings, item_prompt, steered, reversed_, "c", k=5, n_boot=300)
    alone = [
        perspective_report(rankings, item_prompt, s, k=5, n_boot=0).groups[2].alignment
        for s in (steered, reversed_)
    ]
    assert (res.alignment_a, res.alignment_b) == pytest.approx(alone, abs=1e-12)
    assert res.diff == pytest.approx(alone[0] - alone[1])
    assert 0 < res.ci[0] <= res.diff <= res.ci[1]
    assert res.p_value < 0.01
    same = paired_alignment(rankings, item_prompt, steered, steered, "c", k=5, n_boot=50)
    assert same.diff == 0 and same.ci == [0.0, 0.0] and same.p_value == 1.0
    with pytest.raises(ValueError, match="fewer than k = 7"):
        paired_alignment(rankings, item_prompt, steered, reversed_, "c", k=7)


def test_paired_per_prompt_hand_worked():
    """Shared prompts x, y: differences 0.5 and 0; a resample of two prompts has mean 0
    (y twice, probability 1/4), 0.25 (one of each, 1/2) or 0.5 (x twice, 1/4), so the
    2.5th and 97.5th percentiles are 0 and 0.5 and both tails hold a quarter."""
    a = {"x": 1.0, "y": 0.5, "only-a": 0.0}
    b = {"x": 0.5, "y": 0.5, "only-b": 1.0}
    diff, ci, p_value, n = paired_per_prompt(a, b, n_boot=4000, seed=1)
    assert (diff, n) == (0.25, 2)
    assert ci == [0.0, 0.5]
    assert p_value == pytest.approx(2 * 0.25, abs=0.04)
    assert paired_per_prompt({"x": 1.0}, {"y": 1.0}, n_boot=10)[3] == 0


def test_per_prompt_alignment_is_kept_and_averages_to_the_figure():
    rankings, item_prompt, scores = _random_study(seed=2)
    report = perspective_report(rankings, item_prompt, scores, k=5, n_boot=0)
    for g in report.groups:
        assert len(g.per_prompt) == g.n_prompts
        assert np.mean(list(g.per_prompt.values())) == pytest.approx(g.alignment, abs=1e-12)
