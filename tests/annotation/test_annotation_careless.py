"""Synthetic careless annotators: drawn as stated, flagged, and found by the policy."""

import io
import random
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AnnotatorProfile, AnnotatorStatus, SyntheticKind
from annotation.rankings.selectors import counted_rankings
from annotation.studies.simulation import CARELESS_KINDS, careless_kinds, careless_order

pytestmark = pytest.mark.django_db(transaction=True)  # see tests/conftest.py: many submits


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


def test_careless_kinds_are_drawn_in_the_stated_share_and_seeded():
    kinds = careless_kinds(30, 0.2, seed=1)
    counts = Counter(kinds)
    assert counts[SyntheticKind.CAREFUL] == 24
    assert [counts[k] for k in CARELESS_KINDS] == [2, 2, 2]
    assert careless_kinds(30, 0.2, seed=1) == kinds
    assert careless_kinds(30, 0.2, seed=2) != kinds  # which ones is drawn
    assert set(careless_kinds(5, 0.0, seed=1)) == {SyntheticKind.CAREFUL}
    with pytest.raises(ValueError, match="careless fraction"):
        careless_kinds(5, 1.5, seed=1)


def test_careless_orders_do_what_their_kind_says():
    shown = list(range(10))
    order, seconds = careless_order(SyntheticKind.SHOWN, shown, random.Random(0))
    assert order == shown and 1 <= seconds <= 3
    order, seconds = careless_order(SyntheticKind.HURRIED, shown, random.Random(0))
    assert sorted(order) == shown and order[1:] == [i for i in shown if i != order[0]]
    assert seconds <= 4
    orders = {
        tuple(careless_order(SyntheticKind.RANDOM, shown, random.Random(s))[0]) for s in range(20)
    }
    assert len(orders) == 20  # random: every seed its own order


def test_command_refuses_a_careless_fraction_out_of_range():
    with pytest.raises(CommandError, match="careless"):
        run("simulate_annotators", "--count", "2", "--careless", "2")


@pytest.fixture
def seeded_shuffles():
    """Shown orders come from ``random.shuffle``: seed it for the test, then restore it."""
    state = random.getstate()
    random.seed(0)
    yield
    random.setstate(state)


def test_with_gold_tasks_on_the_policy_finds_the_careless(media_root, settings, seeded_shuffles):
    """Precision and recall of the exclusions, scored against the synthetic_kind flags.

    24 annotators, a quarter careless (two of each kind), 15 tasks of 6 each, one in
    five gold. The rule must exclude no careful annotator and at least 5 of the 6
    careless ones (shown-order seeds 0-5 all gave precision 1 and recall 5/6 or 1).
    With tasks of 3 the untouched criterion (more than half of 5 rankings) also
    excluded a careful annotator now and then: 1/3! = 1/6 of honest rankings keep
    the shown order by chance.
    """
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.2}
    run("load_catalogue", "--placeholder-images", "4")  # 40 occupations x 12 items
    run(
        *("build_tasks", "--size", "6", "--overlap", "3", "--agreement-fraction", "0"),
        *("--gold-per-occupation", "1", "--checks-per-occupation", "1"),
    )
    out = run(
        *("simulate_annotators", "--count", "24", "--tasks-per-annotator", "15"),
        *("--careless", "0.25", "--seed", "3"),
    )
    profiles = list(AnnotatorProfile.objects.filter(is_synthetic=True))
    assert Counter(p.synthetic_kind for p in profiles) == {
        "careful": 18,
        "random": 2,
        "shown": 2,
        "hurried": 2,
    }
    careless = {p.pk for p in profiles if p.synthetic_kind != SyntheticKind.CAREFUL}
    excluded = {p.pk for p in profiles if p.status == AnnotatorStatus.EXCLUDED}
    found = len(careless & excluded)
    precision, recall = found / len(excluded), found / len(careless)
    assert precision == 1.0, "no careful annotator is excluded"
    assert recall >= 5 / 6
    assert f"{len(excluded)} excluded by the quality policy" in out
    # Every careful annotator ranked their 15 tasks, gold tasks at the rate.
    for p in profiles:
        if p.pk not in careless:
            assert p.rankings.count() == 15
            assert p.rankings.filter(task__is_gold=True).count() == 3  # floor(0.2 * 15 + u)
    assert not counted_rankings(include_synthetic=True).filter(annotator_id__in=excluded)


def _stopped_early(settings, paced: bool) -> dict:
    """The README's defaults: 200 tasks (a fifth ranked by 3), a gold and a check task per
    occupation, 40 annotators of whom 8 careless, 5 tasks each: 200 rankings."""
    import json

    if not paced:
        settings.STEREORANK = {**settings.STEREORANK, "CHECK_RATE": 0.0, "AGREEMENT_RATE": 0.0}
    run("load_catalogue", "--placeholder-images")
    run("build_tasks")  # the study's gold and check tasks: one of each per occupation
    run("simulate_annotators", "--count", "40", "--careless", "0.2")
    return json.loads(run("quality", "--json", "--include-synthetic", "--n-boot", "0"))


def test_a_study_stopped_early_measures_agreement_and_flags_the_careless(
    media_root, settings, seeded_shuffles
):
    """After 200 rankings: agreement over whole sets of the agreement subset, and every
    careless annotator who met a gold or check task flagged (warned or excluded)."""
    report = _stopped_early(settings, paced=True)
    assert report["n_rankings"] > 0
    overall = report["agreement"]["overall"]
    assert overall["n_tasks"] >= 10 and overall["kendall_w"]["value"] > 0.5
    careless = [a for a in report["annotators"] if a["synthetic_kind"] != "careful"]
    assert len(careless) == 8
    assert all(a["status"] == "excluded" for a in careless if a["synthetic_kind"] == "shown")
    flagged = [a for a in careless if a["status"] != "ok"]
    assert len(flagged) >= 6  # 7 here; 5 tasks each leave some with no gold or check task
    careful = [a for a in report["annotators"] if a["synthetic_kind"] == "careful"]
    assert not [a for a in careful if a["status"] == "excluded"]
    assert sum(a["checks"] for a in report["annotators"]) >= 15  # checks from the start


def test_without_pacing_the_same_study_measures_no_agreement(media_root, settings, seeded_shuffles):
    """The order alone (fewest rankings first) gives no task a second ranking in 200,
    and no check task comes before the ordinary ones: what the pacing is for."""
    report = _stopped_early(settings, paced=False)
    assert report["agreement"]["overall"]["n_tasks"] == 0
    assert sum(a["checks"] for a in report["annotators"]) == 0
