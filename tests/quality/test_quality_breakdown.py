"""Agreement per occupation, within groups (small ones hidden, only counted) and between
groups."""

import json

import pytest

from annotation.stats.agreement import agreement
from annotation.stats.breakdown import (
    between_groups,
    breakdown,
    per_occupation,
    within_groups,
)
from annotation.stats.records import RankingRecord


def rec(task, annotator, order, gender=None, occupation="nurse"):
    group = {} if gender is None else {"gender": gender}
    return RankingRecord(task, annotator, occupation, tuple(order), group=group)


def test_per_occupation_is_agreement_on_that_occupations_rankings():
    records = [
        rec(1, "a", "xyz", occupation="nurse"),
        rec(1, "b", "xzy", occupation="nurse"),
        rec(2, "a", "uvw", occupation="ceo"),
        rec(2, "b", "uvw", occupation="ceo"),
    ]
    got = per_occupation(records, n_boot=0)
    assert list(got) == ["ceo", "nurse"]
    assert got["nurse"].kendall_w.value == pytest.approx(0.75)  # hand-worked in the W tests
    assert got["ceo"].kendall_w.value == pytest.approx(1.0)
    assert got["nurse"] == agreement(records[:2], n_boot=0)


def test_within_groups_uses_only_the_groups_rankings_and_hides_small_groups():
    records = [
        # women agree perfectly on task 1; the men disagree there
        rec(1, "w1", "xyz", "f"),
        rec(1, "w2", "xyz", "f"),
        rec(1, "m1", "xyz", "m"),
        rec(1, "m2", "zyx", "m"),
        rec(1, "n1", "zxy", "nonbinary"),  # a group of one: hidden at k = 2
        rec(1, "p1", "yxz", "Prefer not to say"),  # no group
        rec(1, "q1", "yzx"),  # field unanswered: no group
    ]
    shown = within_groups(records, "gender", k=2, n_boot=0)
    got = shown.groups
    assert set(got) == {"f", "m"} and (shown.hidden, shown.k) == (1, 2)
    assert got["f"].kendall_w.value == pytest.approx(1.0)
    assert got["m"].kendall_w.value == pytest.approx(0.0)
    assert got["f"].n_annotators == 2
    # the same group passes at k = 1 (but has no shared task of its own: no figure)
    one = within_groups(records, "gender", k=1, n_boot=0)
    assert one.groups["nonbinary"].n_tasks == 0 and one.hidden == 0


def test_between_groups_is_w_of_the_group_consensus_orders():
    # f's consensus: x y z (ranks 1, 2, 3). m's mean ranks: x 1.5, y 1.5, z 3 -> mid-ranks
    # (1.5, 1.5, 3). W of (1,2,3) and (1.5,1.5,3), ties corrected, hand-worked: 78 / 84.
    records = [
        rec(1, "w1", "xyz", "f"),
        rec(1, "w2", "xyz", "f"),
        rec(1, "m1", "xyz", "m"),
        rec(1, "m2", "yxz", "m"),
        rec(2, "w1", "uvw", "f"),  # only one group ranked task 2: not shared
        rec(1, "n1", "zyx", "nonbinary"),  # hidden at k = 2: takes no part
    ]
    got = between_groups(records, "gender", k=2, n_boot=0)
    assert got.groups == ("f", "m")
    assert got.agreement.n_tasks == 1
    assert got.agreement.n_rankings == 2  # two consensus orders
    assert got.agreement.n_annotators == 4
    assert got.agreement.kendall_w.value == pytest.approx(78 / 84)


def test_between_groups_of_opposed_groups_is_low_and_of_alike_groups_high():
    alike, opposed = [], []
    for t in range(6):
        items = [f"t{t}{c}" for c in "abcd"]
        for i in range(3):
            alike += [rec(t, f"f{i}", items, "f"), rec(t, f"m{i}", items, "m")]
            opposed += [rec(t, f"f{i}", items, "f"), rec(t, f"m{i}", items[::-1], "m")]
    assert between_groups(alike, "gender", k=3, n_boot=0).agreement.kendall_w.value == 1.0
    low = between_groups(opposed, "gender", k=3, n_boot=0).agreement
    assert low.kendall_w.value == pytest.approx(0.0)
    assert low.alpha_interval.value < 0


def test_breakdown_is_plain_json_with_every_part():
    people = [("a", "f"), ("b", "f"), ("c", "m"), ("d", "m")]
    records = [rec(t, a, "xyz" if g == "f" else "xzy", g) for t in (1, 2) for a, g in people]
    out = breakdown(records, ["gender"], k=3, n_boot=20, seed=1)
    json.dumps(out)
    assert out["k"] == 3
    assert out["overall"]["n_tasks"] == 2
    assert out["within_groups"] == {"gender": {}} and out["hidden_groups"] == {"gender": 2}
    assert "f" not in json.dumps(out["within_groups"])
    assert out["between_groups"]["gender"]["groups"] == ()
    between = breakdown(records, ["gender"], k=2, n_boot=0)["between_groups"]["gender"]
    assert between["groups"] == ("f", "m")
    assert between["agreement"]["kendall_w"]["value"] == pytest.approx(0.75)


def test_k_below_one_is_refused():
    with pytest.raises(ValueError, match="k must be"):
        within_groups([rec(1, "a", "xy", "f")], "gender", k=0)
