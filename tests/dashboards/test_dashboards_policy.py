"""The retraining policy: every branch of the retrain and promotion decisions."""

import pytest

from training.errors import ScheduleError
from training.schedules import (
    ScheduleSettings,
    promotion_decision,
    retrain_decision,
)

DEFAULTS = ScheduleSettings()


def test_defaults_are_the_seed_and_the_issue():
    assert DEFAULTS.min_new_rankings == 50
    assert DEFAULTS.promotion == "manual"
    assert DEFAULTS.epochs == 12
    assert DEFAULTS.paraphrases == 8


def test_too_few_new_rankings_skips_and_says_how_many():
    d = retrain_decision(12, None, DEFAULTS)
    assert (d.decision, d.reason) == ("skip", "only 12 new rankings, need 50")
    assert retrain_decision(1, None, DEFAULTS).reason == "only 1 new ranking, need 50"


def test_a_running_retraining_skips_even_with_enough_rankings():
    d = retrain_decision(500, 7, DEFAULTS)
    assert (d.decision, d.reason) == ("skip", "a retraining is already running (run 7)")


def test_enough_rankings_retrains_at_the_threshold():
    assert retrain_decision(49, None, DEFAULTS).decision == "skip"
    assert retrain_decision(50, None, DEFAULTS).decision == "retrain"
    small = ScheduleSettings(min_new_rankings=3)
    assert retrain_decision(3, None, small).decision == "retrain"


def test_manual_promotion_keeps_the_candidate_even_when_better():
    better = {"rho_a": 0.7, "rho_b": 0.5, "diff": 0.2, "ci": [0.1, 0.3], "p_value": 0.01}
    d = promotion_decision("manual", 4, better, 3)
    assert d.decision == "keep"
    assert "manual" in d.reason and "version 4" in d.reason
    assert promotion_decision("manual", 1, None, None).decision == "keep"


def test_auto_promotes_when_there_is_no_active_version():
    d = promotion_decision("auto", 1, None, None)
    assert d.decision == "promote"
    assert "no active version" in d.reason


def test_auto_promotes_only_with_the_interval_above_zero():
    above = {"rho_a": 0.62, "rho_b": 0.55, "diff": 0.07, "ci": [0.01, 0.12], "p_value": 0.02}
    d = promotion_decision("auto", 5, above, 4)
    assert d.decision == "promote"
    assert "[+0.010, +0.120] above zero" in d.reason and "version 4" in d.reason
    straddles = {**above, "ci": [-0.02, 0.12]}
    assert promotion_decision("auto", 5, straddles, 4).decision == "keep"
    touches = {**above, "ci": [0.0, 0.12]}
    assert promotion_decision("auto", 5, touches, 4).decision == "keep"
    worse = {"rho_a": 0.4, "rho_b": 0.55, "diff": -0.15, "ci": [-0.2, -0.1], "p_value": 0.01}
    d = promotion_decision("auto", 5, worse, 4)
    assert d.decision == "keep" and "not above zero" in d.reason
    assert promotion_decision("auto", 5, {**above, "ci": None}, 4).decision == "keep"


def test_settings_from_periodic_task_kwargs():
    s = ScheduleSettings.from_kwargs({"min_new_rankings": 10, "promotion": "auto", "epochs": 2})
    assert (s.min_new_rankings, s.promotion, s.epochs, s.encoder) == (10, "auto", 2, "")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_new_rankngs": 10}, "Unknown schedule setting(s): min_new_rankngs"),
        ({"promotion": "sometimes"}, "promotion must be one of manual, auto"),
        ({"min_new_rankings": 0}, "min_new_rankings must be at least 1"),
        ({"min_new_rankings": "50"}, "min_new_rankings must be a whole number"),
        ({"epochs": True}, "epochs must be a whole number"),
        ({"include_synthetic": "yes"}, "include_synthetic must be true or false"),
        ({"encoder": 3}, "encoder must be a string"),
    ],
)
def test_bad_settings_are_refused_with_a_readable_reason(kwargs, message):
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ScheduleSettings.from_kwargs(kwargs)
