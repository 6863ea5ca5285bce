"""Quality in the annotation flow: what counts, assignment, the policy after each submit."""

import math
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from annotation.assignment.next_task import is_due, next_task, pacing_phase
from annotation.errors import AnnotatorExcluded, InvalidAnswer, StatusConflict
from annotation.models import AnnotatorStatus, Assignment, RankingTask, StatusChange
from annotation.participants import services
from annotation.quality import standing
from annotation.rankings.labels import item_labels
from annotation.rankings.selectors import (
    CONSENT_WITHDRAWN,
    EXCLUDED,
    GOLD,
    SYNTHETIC,
    counted_rankings,
    label_rows,
    left_out_rankings,
)

pytestmark = pytest.mark.django_db


def ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


def make_gold(task, order=None, pairs=None) -> RankingTask:
    ref = {"order": order} if order is not None else {"pairs": pairs}
    RankingTask.objects.filter(pk=task.pk).update(is_gold=True, gold_reference=ref)
    task.refresh_from_db()
    return task


def make_check(task, card: int, position: int) -> RankingTask:
    RankingTask.objects.filter(pk=task.pk).update(check_item=card, check_position=position)
    task.refresh_from_db()
    return task


def exclude(profile, reason="test") -> None:
    standing._move(profile, AnnotatorStatus.EXCLUDED, reason)


@pytest.fixture
def no_gold(settings):
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0}


# --- the rankings that count ---------------------------------------------------------


def test_counted_rankings_leave_out_excluded_annotators_and_gold_tasks(
    make_tasks, annotator, store_ranking
):
    t1, t2, t3 = make_tasks(3, k=3, overlap=5)
    make_gold(t3, order=ids(t3))
    good, warned, bad = (annotator(n).profile for n in ("good", "warned", "bad"))
    synthetic = annotator("syn", synthetic=True).profile
    gone = annotator("gone").profile
    for p in (good, warned, bad, synthetic, gone):
        for t in (t1, t2, t3):
            store_ranking(p, t, ids(t)[::-1], shown=ids(t))
    standing._move(warned, AnnotatorStatus.WARNED, "test")
    exclude(bad)
    services.withdraw_consent(gone)

    counted = counted_rankings()
    assert {(r.annotator.user.username, r.task_id) for r in counted} == {
        (n, t.pk) for n in ("good", "warned") for t in (t1, t2)
    }
    assert counted_rankings(include_synthetic=True).filter(annotator=synthetic).count() == 2
    left = Counter()
    for row in left_out_rankings(include_synthetic=False, last_ranking_id=None):
        left[row["reason"]] += row["rankings"]
    # Every ranking is counted or left out for exactly one reason, the first that applies.
    assert left == {CONSENT_WITHDRAWN: 3, EXCLUDED: 3, SYNTHETIC: 3, GOLD: 2}
    assert counted.count() + sum(left.values()) == 15


def test_label_rows_drop_the_check_card_and_close_up_the_positions(
    make_tasks, annotator, store_ranking
):
    (task,) = make_tasks(1, k=4)
    a, b, card, c = ids(task)
    make_check(task, card, position=2)
    store_ranking(annotator("ann").profile, task, [a, b, card, c])
    rows = label_rows()
    assert [(r.item_id, r.position) for r in rows] == [(a, 0), (b, 1), (c, 2)]
    # K is 3 without the card: labels 0, 1/2, 1 (not 0, 1/3, 1).
    assert item_labels(rows) == {a: 0.0, b: 0.5, c: 1.0}


# --- assignment ------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [0.1, 0.15, 0.25, 1 / 3])
def test_is_due_at_the_rate_with_a_random_start(rate):
    starts = set()
    for phase in (0.0, 0.3, 0.61, 0.99):
        gold = 0
        for done in range(60):
            if is_due(done, gold, rate, phase):
                gold += 1
            # After n tasks, floor(rate * n + phase) of them were gold (the definition).
            assert gold == math.floor(rate * (done + 1) + phase)
        first = next(n for n in range(60) if math.floor(rate * (n + 1) + phase) == 1)
        starts.add(first)
    assert len(starts) > 1, "where the first gold task falls depends on the phase"
    assert not is_due(0, 0, 0.0, 0.99)


def test_gold_tasks_are_mixed_in_at_the_rate_and_ignore_overlap(
    make_tasks, annotator, settings, store_ranking
):
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.25}
    make_tasks(12, k=3)
    golds = [make_gold(t, order=ids(t)) for t in make_tasks(4, k=3, occupation="chef")]
    other = annotator("other").profile
    store_ranking(other, golds[0], ids(golds[0]))  # gold tasks have overlap 1: now "full"
    profile = annotator("ann").profile
    profile.quota = 12
    profile.save()
    served = []
    while (assignment := next_task(profile)) is not None:
        gold = assignment.task.is_gold
        served.append(gold)
        # Gold tasks in their reference order, so the policy has nothing to say.
        order = ids(assignment.task) if gold else assignment.shown_order[::-1]
        services.submit_ranking(profile, assignment.task_id, order)
    phase = pacing_phase(profile.user.username)
    expected = [
        math.floor(0.25 * (n + 1) + phase) > math.floor(0.25 * n + phase) for n in range(12)
    ]
    assert served == expected and sum(served) == 3
    assert RankingTask.objects.get(pk=golds[0].pk).ranking_count >= 1


def test_assignment_prefers_the_occupations_seen_least(make_tasks, annotator, no_gold):
    for name in ("ceo", "nurse", "pilot"):
        make_tasks(3, k=3, occupation=name)
    profile = annotator("ann").profile
    seen = []
    for _ in range(6):
        assignment = next_task(profile)
        seen.append(assignment.task.occupation.name)
        services.submit_ranking(profile, assignment.task_id, assignment.shown_order[::-1])
    assert sorted(seen[:3]) == ["ceo", "nurse", "pilot"]
    assert sorted(seen[3:]) == ["ceo", "nurse", "pilot"]


def test_excluded_annotators_get_no_task_and_are_told_why(make_tasks, annotator, no_gold):
    (task,) = make_tasks(1, k=3)
    client = annotator("ann")
    assignment = next_task(client.profile)
    exclude(client.profile, "gold score -1.00 below 0.3 after 3 gold tasks")
    assert not Assignment.objects.filter(annotator=client.profile).exists()
    with pytest.raises(AnnotatorExcluded, match="gold score -1.00"):
        next_task(client.profile)
    response = client.post(reverse("api-next-task"))
    assert response.status_code == 403
    assert "excluded you from this study" in response.json()["detail"]
    response = client.post(
        reverse("api-ranking", args=[task.pk]), {"order": assignment.shown_order}, format="json"
    )
    assert response.status_code == 403


def test_the_portal_tells_an_excluded_annotator_plainly(make_tasks, portal_client):
    make_tasks(1, k=3)
    client = portal_client()
    exclude(client.profile, "2 of 2 attention checks failed (limit 2)")
    response = client.get(reverse("portal:rank"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("portal:home")
    html = response.content.decode()
    assert "excluded you from this study" in html and "attention checks failed" in html
    assert 'id="start-ranking"' not in html


def test_check_card_shows_its_instruction_in_the_api_and_nothing_else_differs(
    make_tasks, annotator, no_gold
):
    (task,) = make_tasks(1, k=3)
    card = ids(task)[1]
    make_check(task, card, position=0)
    client = annotator("ann")
    body = client.post(reverse("api-next-task")).json()
    texts = {i["id"]: i["prompt"] for i in body["items"]}
    assert "attention check" in texts[card] and "position 1" in texts[card]
    assert all("attention check" not in t for i, t in texts.items() if i != card)
    assert all(set(i) == {"id", "prompt", "image_url"} for i in body["items"])
    assert set(body) == {"id", "occupation", "items", "reserved_until"}  # no gold/check flag


# --- the policy after each submit ----------------------------------------------------


def test_keeping_the_shown_order_warns_then_excludes(make_tasks, annotator, no_gold):
    make_tasks(6, k=3)
    profile = annotator("ann").profile
    statuses = []
    for _ in range(5):
        assignment = next_task(profile)
        services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
        profile.refresh_from_db()
        statuses.append(profile.status)
    # Untouched on every ranking: above one half from the first, with evidence at 5.
    assert statuses == ["warned"] * 4 + ["excluded"]
    history = list(StatusChange.objects.filter(annotator=profile).order_by("id"))
    assert [(c.previous, c.status, c.by) for c in history] == [
        ("ok", "warned", None),
        ("warned", "excluded", None),
    ]
    assert "5 of 5 rankings submitted in the shown order" in history[1].reason
    with pytest.raises(AnnotatorExcluded):
        next_task(profile)


def test_reversed_gold_tasks_exclude_and_staff_reinstate_with_a_fresh_start(
    make_tasks, annotator, store_ranking, no_gold
):
    golds = [make_gold(t, order=ids(t)) for t in make_tasks(4, k=3)]
    profile = annotator("ann").profile
    for task in golds[:3]:
        order = ids(task)[::-1]
        store_ranking(profile, task, order, shown=[order[1], order[0], order[2]])
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.EXCLUDED
    assert "gold score -1.00 below 0.3 after 3 gold tasks" in profile.status_changes.first().reason

    staff = get_user_model().objects.create_user("boss", is_staff=True)
    with pytest.raises(InvalidAnswer):
        standing.reinstate(profile, staff, "  ")
    with pytest.raises(StatusConflict):
        standing.reinstate(profile, profile.user, "I am not staff")
    change = standing.reinstate(profile, staff, "Misread the instructions; spoke to them.")
    assert (change.previous, change.status, change.by) == ("excluded", "ok", staff)
    with pytest.raises(StatusConflict):
        standing.reinstate(profile, staff, "again")
    # Afresh: one more reversed gold task is one, not four (warned, not excluded).
    order = ids(golds[3])[::-1]
    store_ranking(profile, golds[3], order, shown=[order[2], order[0], order[1]])
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.WARNED
    assert "after 1 of 3 gold tasks" in profile.status_changes.first().reason


def test_failed_attention_checks_exclude_and_the_policy_never_lifts_it(
    make_tasks, annotator, store_ranking, no_gold
):
    tasks = [make_check(t, ids(t)[0], position=2) for t in make_tasks(3, k=3)]
    profile = annotator("ann").profile
    for task in tasks[:2]:
        a, b, c = ids(task)
        store_ranking(profile, task, [a, b, c], shown=[b, a, c])  # card first, not third
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.EXCLUDED
    assert "2 of 2 attention checks failed" in profile.status_changes.first().reason
    profile.status_changes.all().delete()
    assert standing.apply_policy(profile) is None  # still excluded: staff lift it, not the rule
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.EXCLUDED


def test_a_passed_check_and_a_kept_gold_order_leave_the_annotator_ok(
    make_tasks, annotator, store_ranking, no_gold
):
    (task,) = make_tasks(1, k=3)
    a, b, c = ids(task)
    check = make_check(task, c, position=0)
    (gold,) = [make_gold(t, pairs=[[ids(t)[0], ids(t)[2]]]) for t in make_tasks(1, k=3)]
    profile = annotator("ann").profile
    store_ranking(profile, check, [c, a, b], shown=[a, b, c])
    g = ids(gold)
    store_ranking(profile, gold, [g[0], g[2], g[1]], shown=[g[1], g[0], g[2]])
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.OK and not profile.status_changes.exists()


def test_policy_overrides_come_from_settings(make_tasks, annotator, store_ranking, settings):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "GOLD_RATE": 0.0,
        "QUALITY_POLICY": {"max_failed_checks": 1},
    }
    (task,) = make_tasks(1, k=3)
    a, b, c = ids(task)
    make_check(task, a, position=2)
    profile = annotator("ann").profile
    store_ranking(profile, task, [a, b, c], shown=[b, c, a])
    profile.refresh_from_db()
    assert profile.status == AnnotatorStatus.EXCLUDED
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_POLICY": {"max_failed_checks": 0}}
    with pytest.raises(ImproperlyConfigured, match="max_failed_checks must be >= 1"):
        standing.policy()
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_POLICY": {"gold_minimum": 1}}
    with pytest.raises(ImproperlyConfigured, match="gold_minimum"):
        standing.policy()


def test_a_malformed_gold_reference_is_logged_and_not_scored(
    make_tasks, annotator, store_ranking, no_gold, caplog
):
    (task,) = make_tasks(1, k=3)
    RankingTask.objects.filter(pk=task.pk).update(is_gold=True, gold_reference={"order": "abc"})
    profile = annotator("ann").profile
    with caplog.at_level("WARNING", logger="annotation.rankings.selectors"):
        store_ranking(profile, task, ids(task)[::-1], shown=ids(task))
    assert f"gold task {task.pk} is not scored" in caplog.text
    assert standing.decide(profile).status == AnnotatorStatus.OK
