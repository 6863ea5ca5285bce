"""Gold scores, attention checks and the per-annotator summary, by hand."""

import math

import numpy as np
import pytest
from scipy import stats

from annotation.stats.gold import AttentionCheck, GoldReference, annotator_quality, gold_score
from annotation.stats.records import RankingRecord


def test_full_reference_keys_every_pair_and_scores_like_kendalls_tau():
    ref = GoldReference.from_order("abc")
    assert ref.pairs == {("a", "b"), ("a", "c"), ("b", "c")}
    assert gold_score("abc", ref) == 1.0
    assert gold_score("cba", ref) == -1.0
    # a c b: (a,b) and (a,c) kept, (b,c) reversed -> (2 - 1) / 3
    assert gold_score("acb", ref) == pytest.approx(1 / 3)
    rng = np.random.default_rng(0)
    reference = list(range(7))
    full = GoldReference.from_order(reference)
    for _ in range(10):
        order = list(rng.permutation(7))
        tau = stats.kendalltau([order.index(i) for i in reference], reference).statistic
        assert gold_score(order, full) == pytest.approx(tau)


def test_partial_reference_counts_only_the_keyed_pairs_present():
    ref = GoldReference.from_pairs([("stereo", "diverse"), ("stereo", "neutral"), ("q", "r")])
    assert gold_score(["diverse", "neutral", "stereo"], ref) == -1.0
    # (stereo, diverse) kept, (stereo, neutral) reversed; (q, r) not in the ranking
    assert gold_score(["neutral", "stereo", "diverse"], ref) == 0.0
    assert gold_score(["stereo", "x", "diverse"], ref) == 1.0


def test_bad_references_are_refused():
    with pytest.raises(ValueError, match="contradict"):
        GoldReference.from_pairs([("a", "b"), ("b", "a")])
    with pytest.raises(ValueError, match="itself"):
        GoldReference.from_pairs([("a", "a")])
    with pytest.raises(ValueError, match="at least one"):
        GoldReference.from_pairs([])
    with pytest.raises(ValueError, match="repeats"):
        GoldReference.from_order("aba")
    with pytest.raises(ValueError, match="no keyed pair"):
        gold_score("xyz", GoldReference.from_pairs([("a", "b")]))


def test_attention_check_passes_iff_the_card_is_where_instructed():
    check = AttentionCheck("card", 0)
    assert check.passed(["card", "x", "y"])
    assert not check.passed(["x", "card", "y"])
    assert AttentionCheck("card", 2).passed(["x", "y", "card"])
    with pytest.raises(ValueError, match="not in"):
        check.passed(["x", "y"])
    with pytest.raises(ValueError, match="past a task"):
        AttentionCheck("card", 3).passed(["card", "x", "y"])
    with pytest.raises(ValueError, match=">= 0"):
        AttentionCheck("card", -1)


def test_annotator_summary_by_hand():
    def rec(task, order, shown=(), seconds=None, who="ann"):
        return RankingRecord(task, who, "nurse", tuple(order), tuple(shown), seconds)

    records = [
        rec("g1", "abc", "cab", 10.0),  # gold, score 1
        rec("g2", "acb", "acb", 30.0),  # gold, score 1/3; untouched
        rec("c1", "kxy", "xyk", 20.0),  # check passed
        rec("c2", "xky", "xky", None),  # check failed; untouched
        rec("t1", "xyz", "zyx", 50.0),
        rec("t2", "xyz"),  # imported: no shown order, no time
        rec("t1", "zyx", "xyz", 5.0, who="other"),
    ]
    gold = {"g1": GoldReference.from_order("abc"), "g2": GoldReference.from_order("abc")}
    checks = {"c1": AttentionCheck("k", 0), "c2": AttentionCheck("k", 0)}
    got = annotator_quality(records, gold, checks)
    q = got["ann"]
    assert q.n_rankings == 6
    assert q.n_gold == 2 and q.gold_score == pytest.approx((1 + 1 / 3) / 2)
    assert q.n_checks == 2 and q.n_checks_failed == 1 and q.check_pass_rate == 0.5
    assert q.median_seconds == 25.0  # median of 10, 30, 20, 50
    assert q.n_with_shown_order == 5 and q.n_untouched == 2
    assert q.untouched_rate == pytest.approx(0.4)
    other = got["other"]
    assert other.n_gold == 0 and math.isnan(other.gold_score) and math.isnan(other.check_pass_rate)
    assert other.untouched_rate == 0.0 and other.median_seconds == 5.0
    assert q.as_dict()["annotator"] == "ann"
