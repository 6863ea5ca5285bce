"""Assignment's ordering seam: ``uniform`` is today's order, another plugs in by name."""

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from annotation.assignment.next_task import ORDERINGS, next_task
from annotation.participants import services

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_gold(settings):
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0}


def _rank(profile, task_pk=None):
    reservation = next_task(profile)
    assert task_pk is None or reservation.task_id == task_pk
    services.submit_ranking(profile, reservation.task_id, reservation.shown_order)


def test_uniform_takes_the_task_with_fewest_rankings_not_the_oldest(make_tasks, annotator, no_gold):
    older, newer = make_tasks(2, k=3, overlap=3)
    _rank(annotator("a").profile, older.pk)  # a tie: the oldest first
    assert next_task(annotator("b").profile).task_id == newer.pk  # 0 rankings before 1


def test_the_least_seen_occupation_comes_before_fewer_rankings(make_tasks, annotator, no_gold):
    (nurse,) = make_tasks(1, k=3, overlap=3)
    first_ceo, second_ceo = make_tasks(2, k=3, overlap=3, occupation="ceo")
    _rank(annotator("x").profile, nurse.pk)  # nurse: 1 ranking, each ceo task: 0
    profile = annotator("ann").profile
    _rank(profile, first_ceo.pk)  # fewest rankings first while ann has seen nothing
    assert next_task(profile).task_id == nurse.pk  # unseen nurse beats a ceo with 0 rankings
    assert second_ceo.ranking_count == 0


def test_a_registered_ordering_is_used_by_name_at_the_same_query_count(
    make_tasks, annotator, no_gold, monkeypatch
):
    tasks = make_tasks(4, k=3)
    monkeypatch.setitem(ORDERINGS, "newest", lambda mine: [F("id").desc()])
    first, second = annotator("a").profile, annotator("b").profile
    with CaptureQueriesContext(connection) as uniform:
        assert next_task(first).task_id == tasks[0].pk
    with CaptureQueriesContext(connection) as newest:
        assert next_task(second, ordering="newest").task_id == tasks[-1].pk
    assert len(newest) == len(uniform)


def _ranked(profile, task):
    """A ranking stored as submit_ranking stores it (the task's count too), no reservation."""
    from annotation.models import Ranking, RankingTask

    order = list(task.task_items.values_list("item_id", flat=True))
    Ranking.objects.create(task=task, annotator=profile, order=order, shown_order=order)
    RankingTask.objects.filter(pk=task.pk).update(ranking_count=F("ranking_count") + 1)


def test_uniform_counts_how_often_each_occupation_was_seen(make_tasks, annotator, no_gold):
    first_nurse, second_nurse, third_nurse = make_tasks(3, k=3, overlap=3)
    first_ceo, second_ceo = make_tasks(2, k=3, overlap=3, occupation="ceo")
    profile = annotator("ann").profile
    for task in (first_nurse, second_nurse, first_ceo):
        _ranked(profile, task)  # seen: nurse twice, ceo once
    _ranked(annotator("x").profile, second_ceo)  # the ceo task has more rankings
    # ceo (seen once) before nurse (seen twice), whatever the rankings: a count, not a flag.
    assert next_task(profile).task_id == second_ceo.pk
    assert third_nurse.ranking_count == 0


def test_active_takes_the_highest_priority_then_the_uniform_order(make_tasks, annotator, no_gold):
    from annotation.models import RankingTask

    low, high, unscored, other = make_tasks(4, k=3)
    for task, priority in ((low, 1.0), (high, 3.0), (other, 2.0)):
        RankingTask.objects.filter(pk=task.pk).update(priority=priority)
    taken = [next_task(annotator(name).profile, ordering="active").task_id for name in "abcd"]
    assert taken == [high.pk, other.pk, low.pk, unscored.pk]  # one slot each (overlap 1)


def test_active_costs_what_uniform_costs(make_tasks, annotator, no_gold):
    from annotation.models import RankingTask

    tasks = make_tasks(5, k=3)
    next_task(annotator("warm").profile, ordering="active")  # compiled once per process
    RankingTask.objects.filter(pk=tasks[2].pk).update(priority=5.0)
    with CaptureQueriesContext(connection) as uniform:
        next_task(annotator("a").profile)
    with CaptureQueriesContext(connection) as active:
        assert next_task(annotator("b").profile, ordering="active").task_id == tasks[2].pk
    assert len(active) == len(uniform)


def _pace(settings, **rates):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "GOLD_RATE": 0.0,
        "CHECK_RATE": 0.0,
        "AGREEMENT_RATE": 0.0,
        **rates,
    }


@pytest.mark.parametrize("ordering", ["uniform", "active"])
def test_a_due_agreement_slot_finishes_a_started_set_first(
    make_tasks, annotator, settings, ordering
):
    from annotation.models import RankingTask

    plain = make_tasks(3, k=3)
    fresh, started = make_tasks(2, k=3, overlap=3, occupation="ceo")
    RankingTask.objects.filter(pk=plain[0].pk).update(priority=9.0)
    _ranked(annotator("x").profile, started)
    _pace(settings, AGREEMENT_RATE=0.999)  # due from the first task (phase >= 0.001)
    assert next_task(annotator("a").profile, ordering=ordering).task_id == started.pk
    _pace(settings)  # not due: the ordering's own choice (a tie under uniform: the oldest)
    assert next_task(annotator("b").profile, ordering=ordering).task_id == plain[0].pk
    assert fresh.ranking_count == 0


def test_a_due_check_slot_takes_an_attention_check_task(make_tasks, annotator, settings):
    from annotation.models import RankingTask

    tasks = make_tasks(3, k=3)
    card = tasks[2].task_items.first().item_id
    RankingTask.objects.filter(pk=tasks[2].pk).update(check_item_id=card, check_position=0)
    _pace(settings, CHECK_RATE=0.999)
    assert next_task(annotator("a").profile).task_id == tasks[2].pk
    _pace(settings)
    assert next_task(annotator("b").profile).task_id == tasks[0].pk


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_tasks_locked_by_a_priority_write_are_waited_for_not_reported_gone(
    make_tasks, annotator, settings
):
    """The sampler writes a study's priorities in one transaction, holding every task row:
    a next-task request then skips them all (SKIP LOCKED), and must wait once for the
    write to commit instead of answering that nothing is left."""
    import threading
    import time

    import psycopg
    from django.db import connection as django_connection

    _pace(settings)
    (task,) = make_tasks(1, k=3)
    profile = annotator("a").profile
    db = django_connection.settings_dict
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=db["NAME"],
    ) as writer:
        writer.execute("UPDATE annotation_rankingtask SET priority = 1 WHERE id = %s", [task.pk])

        def commit_later():
            time.sleep(0.5)
            writer.commit()

        threading.Thread(target=commit_later).start()
        started = time.monotonic()
        reservation = next_task(profile, ordering="active")
        assert reservation is not None and reservation.task_id == task.pk
        assert time.monotonic() - started >= 0.4  # it waited for the writer


def test_live_reservations_count_as_they_stand_now(make_tasks, annotator, no_gold):
    """A candidate's live count is the reservations not expired at ``now`` (counted here in
    Python): one that expires stops counting with nothing written, an erased annotator's
    never counts, and a task whose open slots are all reserved is not offered."""
    from datetime import timedelta

    from django.db import transaction
    from django.utils import timezone

    from annotation.assignment.next_task import _candidates
    from annotation.models import Assignment

    full, half, expired, free = make_tasks(4, k=3, overlap=2)
    others = [annotator(f"other{i}").profile for i in range(6)]
    now = timezone.now()
    held = {full: [now + timedelta(minutes=5)] * 2, half: [now + timedelta(minutes=5)]}
    held[expired] = [now + timedelta(seconds=30), now - timedelta(seconds=1)]
    for task, ends in held.items():
        for end in ends:
            Assignment.objects.create(
                task=task, annotator=others.pop(), shown_order=[], reserved_until=end
            )
    erased = Assignment.objects.get(task=half).annotator
    me = annotator("me").profile

    def live_at(when):
        with transaction.atomic():
            rows = _candidates(me, me.study_id, when, "uniform", None).values_list("pk", "live")
            return dict(rows)

    def expected(when):
        live = Assignment.objects.filter(reserved_until__gt=when, annotator__erased_at=None)
        counts = {t.pk: live.filter(task=t).count() for t in (full, half, expired, free)}
        return {pk: n for pk, n in counts.items() if n < 2}

    assert live_at(now) == expected(now) == {half.pk: 1, expired.pk: 1, free.pk: 0}
    later = now + timedelta(minutes=1)  # the 30 s reservation has expired: nothing written
    assert live_at(later) == expected(later) == {half.pk: 1, expired.pk: 0, free.pk: 0}
    past = now + timedelta(minutes=6)  # every reservation has expired: the full task is back
    assert live_at(past) == {full.pk: 0, half.pk: 0, expired.pk: 0, free.pk: 0}
    erased.erased_at = now
    erased.save(update_fields=["erased_at"])
    assert live_at(now)[half.pk] == 0 == expected(now)[half.pk]
    assert next(iter(live_at(now))) == half.pk  # fewest live first, then the oldest
