"""The exclusion rule at the edges of each of its lines."""

import pytest

from annotation.stats.gold import AnnotatorQuality
from annotation.stats.policy import EXCLUDED, OK, WARNED, Policy

NAN = float("nan")


def quality(gold=NAN, n_gold=0, checks=0, failed=0, untouched=0, shown=0):
    return AnnotatorQuality(
        annotator="ann",
        n_rankings=max(shown, n_gold + checks),
        n_gold=n_gold,
        gold_score=gold,
        n_checks=checks,
        n_checks_failed=failed,
        check_pass_rate=(checks - failed) / checks if checks else NAN,
        median_seconds=20.0,
        n_with_shown_order=shown,
        n_untouched=untouched,
        untouched_rate=untouched / shown if shown else NAN,
    )


def status(**kw):
    return Policy().decide(quality(**kw)).status


def test_a_new_annotator_is_ok():
    decision = Policy().decide(quality())
    assert decision.status == OK and decision.reasons == ()


@pytest.mark.parametrize(
    ("gold", "n_gold", "expected"),
    [
        (0.29, 3, EXCLUDED),  # below the line with enough gold tasks
        (-1.0, 10, EXCLUDED),
        (0.3, 3, WARNED),  # at the line
        (0.39, 3, WARNED),  # within the 0.1 margin
        (0.4, 3, OK),  # at the margin's end
        (0.29, 2, WARNED),  # below the line, too few gold tasks
        (-1.0, 1, WARNED),
        (1.0, 1, OK),
    ],
)
def test_gold_score_line(gold, n_gold, expected):
    assert status(gold=gold, n_gold=n_gold) == expected


@pytest.mark.parametrize(
    ("failed", "expected"), [(0, OK), (1, WARNED), (2, EXCLUDED), (3, EXCLUDED)]
)
def test_failed_checks_line(failed, expected):
    assert status(checks=4, failed=failed) == expected


@pytest.mark.parametrize(
    ("untouched", "shown", "expected"),
    [
        (3, 5, EXCLUDED),  # more than half of 5
        (6, 10, EXCLUDED),
        (5, 10, WARNED),  # exactly half: at the line
        (2, 5, OK),  # 40%: at the margin's end
        (9, 20, WARNED),  # 45%: within 10 points
        (3, 4, WARNED),  # more than half, but before 5 rankings
        (1, 1, WARNED),
        (0, 4, OK),
    ],
)
def test_untouched_line(untouched, shown, expected):
    assert status(untouched=untouched, shown=shown) == expected


def test_status_is_the_worst_and_every_reason_is_given():
    decision = Policy().decide(
        quality(gold=0.35, n_gold=4, checks=3, failed=2, untouched=0, shown=6)
    )
    assert decision.status == EXCLUDED
    assert len(decision.reasons) == 2
    assert "gold score 0.35 within 0.1 of 0.3" in decision.reasons
    assert "2 of 3 attention checks failed (limit 2)" in decision.reasons
    assert decision.as_dict() == {"status": EXCLUDED, "reasons": decision.reasons}


def test_margins_of_zero_keep_only_too_little_evidence_warnings():
    strict = Policy(gold_warn_margin=0, untouched_warn_margin=0)
    assert strict.decide(quality(gold=0.3, n_gold=3)).status == OK
    assert strict.decide(quality(untouched=5, shown=10)).status == OK
    assert strict.decide(quality(gold=0.2, n_gold=1)).status == WARNED


def test_thresholds_are_configurable():
    lenient = Policy(gold_min_score=0.0, gold_min_tasks=5, max_failed_checks=3)
    assert lenient.decide(quality(gold=0.05, n_gold=5)).status == WARNED
    assert lenient.decide(quality(gold=-0.1, n_gold=5)).status == EXCLUDED
    assert lenient.decide(quality(checks=3, failed=1)).status == OK
    assert lenient.decide(quality(checks=3, failed=2)).status == WARNED
    one_strike = Policy(max_failed_checks=1)
    assert one_strike.decide(quality(checks=3, failed=1)).status == EXCLUDED


def test_bad_policies():
    with pytest.raises(ValueError, match="gold_min_tasks must be >= 1"):
        Policy(gold_min_tasks=0)
    with pytest.raises(ValueError, match="untouched_max_rate"):
        Policy(untouched_max_rate=1.5)
    with pytest.raises(ValueError, match="gold_warn_margin"):
        Policy(gold_warn_margin=-0.1)


@pytest.mark.parametrize(
    ("k", "n", "chance"),
    [
        (4, 5, 0.5),
        (16, 20, 0.5),
        (3, 5, 1 / 720),
        (0, 4, 0.5),
        (5, 9, 1 / 12),
        (600, 1100, 1 / 720),
        (1100, 1400, 0.5),
        (560, 1040, 0.01),
    ],
)
def test_the_chance_tail_is_the_binomial_survival_function(k, n, chance):
    from scipy.stats import binom

    from annotation.stats.policy import chance_tail

    assert chance_tail(k, n, chance) == pytest.approx(
        binom.sf(k - 1, n, chance), rel=1e-9, abs=1e-15
    )
