"""Reliability weights and weighted labels, against hand-worked cases and a direct sum."""

import numpy as np
import pytest

from annotation.rankings.labels import LabelRow, item_labels, ranking_records
from annotation.stats.agreement import annotator_reliability
from annotation.stats.weights import ESTIMATED, TOO_FEW, reliability_weights
from tests.quality.test_quality_agreement import random_study, rec


def _study_with_a_contrarian():
    # a, b and d rank x y z on three tasks; c ranks z y x; e ranks one task only.
    records = []
    for task in (1, 2, 3):
        records += [rec(task, who, "xyz") for who in "abd"] + [rec(task, "c", "zyx")]
    return records + [rec(1, "e", "xyz")]


def test_weights_hand_case_contrarian_counts_nothing_and_the_unknown_get_the_median():
    weights = reliability_weights(_study_with_a_contrarian(), min_tasks=3)
    # a's consensus on each task (b, c, d and on task 1 e): x 2/3 (1/2), y 1, z 4/3 (3/2),
    # the order a gave: rho 1. c's consensus is x y z, c gave z y x: rho -1 -> weight 0.
    for who in "abd":
        assert weights[who].weight == pytest.approx(1.0) and weights[who].basis == ESTIMATED
    assert weights["c"].rho == pytest.approx(-1.0)
    assert weights["c"].weight == 0.0 and weights["c"].shared_tasks == 3
    # e shares one task: too few; the median of (1, 1, 1, 0) is 1.
    assert weights["e"].basis == TOO_FEW and weights["e"].shared_tasks == 1
    assert weights["e"].weight == pytest.approx(1.0)


def test_weights_are_max_zero_rho_or_the_median_against_a_direct_computation():
    records = random_study(3, n_tasks=24, annotators=9, per_task=3, noise=2.5)
    # a few annotators with under 3 shared tasks
    records += [rec(100 + i, f"late-{i}", order) for i, order in enumerate(["abcdef", "fedcba"])]
    records += [rec(100, "late-2", "badcfe")]
    reliability = annotator_reliability(records)
    known = {a: max(0.0, r.rho) for a, r in reliability.items() if r.n_tasks >= 3}
    assert 0 < len(known) < len(reliability)  # both branches are exercised
    median = float(np.median(list(known.values())))
    got = reliability_weights(records, min_tasks=3)
    assert set(got) == set(reliability)
    for annotator, weight in got.items():
        assert weight.weight == pytest.approx(known.get(annotator, median), abs=1e-12)
        assert weight.basis == (ESTIMATED if annotator in known else TOO_FEW)


def test_nobody_with_enough_shared_tasks_weighs_one_and_min_tasks_is_checked():
    weights = reliability_weights([rec(1, "a", "xyz"), rec(2, "b", "zyx")], min_tasks=3)
    assert {w.weight for w in weights.values()} == {1.0}
    with pytest.raises(ValueError, match="min_tasks must be at least 1"):
        reliability_weights([], min_tasks=0)


def test_weighted_item_labels_hand_case():
    rows = [
        LabelRow(1, 10, 0, {"g": "x"}, annotator=7),
        LabelRow(1, 11, 1, {"g": "x"}, annotator=7),
        LabelRow(1, 12, 2, {"g": "x"}, annotator=7),
        LabelRow(2, 10, 2, {"g": "y"}, annotator=8),
        LabelRow(2, 11, 1, {"g": "y"}, annotator=8),
        LabelRow(2, 12, 0, {"g": "y"}, annotator=8),
    ]
    # item 10: (1.0 * 0 + 0.5 * 1) / 1.5 = 1/3; item 12: (1.0 * 1 + 0.5 * 0) / 1.5 = 2/3
    labels = item_labels(rows, {7: 1.0, 8: 0.5})
    assert labels == pytest.approx({10: 1 / 3, 11: 0.5, 12: 2 / 3})
    assert item_labels(rows) == pytest.approx({10: 0.5, 11: 0.5, 12: 0.5})
    # An annotator missing from the weights counts 1; all-zero weights keep the plain mean.
    assert item_labels(rows, {8: 0.5}) == pytest.approx(labels)
    assert item_labels(rows, {7: 0.0, 8: 0.0}) == pytest.approx(item_labels(rows))
    # A ranking of one item says nothing about order, weighted or not.
    single = [*rows, LabelRow(3, 10, 0, {}, annotator=9)]
    assert item_labels(single, {7: 1.0, 8: 0.5, 9: 5.0}) == pytest.approx(labels)


def test_ranking_records_are_the_label_rows_rankings_in_position_order():
    rows = [
        LabelRow(5, 12, 1, {}, annotator=1, task_id=9),
        LabelRow(5, 10, 0, {}, annotator=1, task_id=9),
        LabelRow(6, 10, 1, {}, annotator=2, task_id=9),
        LabelRow(6, 12, 0, {}, annotator=2, task_id=9),
    ]
    records = ranking_records(rows)
    assert [(r.task_id, r.annotator, r.order) for r in records] == [
        (9, 1, (10, 12)),
        (9, 2, (12, 10)),
    ]
