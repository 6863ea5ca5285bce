"""32 annotators asking for and submitting tasks at once: SKIP LOCKED rows on PostgreSQL,
one writer at a time (IMMEDIATE transactions) on SQLite; never overfilled, nothing lost."""

import random
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F

from annotation.assignment.next_task import next_task
from annotation.models import Ranking, RankingTask
from annotation.participants import services


@pytest.mark.django_db(transaction=True)
def test_concurrent_assignment_never_overfills_and_loses_nothing(make_tasks):
    make_tasks(10, k=4, overlap=2)
    profiles = []
    for i in range(32):
        profile = services.get_profile(get_user_model().objects.create_user(f"c{i}"))
        services.give_consent(profile)
        profiles.append(profile)
    stored: list[int] = []
    errors: list[Exception] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(profiles))

    def work(profile):
        rng = random.Random(profile.pk)
        try:
            barrier.wait()
            while (assignment := next_task(profile)) is not None:
                order = list(assignment.shown_order)
                rng.shuffle(order)
                ranking, created = services.submit_ranking(profile, assignment.task_id, order)
                again, created_again = services.submit_ranking(profile, assignment.task_id, order)
                assert created and not created_again and again.pk == ranking.pk
                with lock:
                    stored.append(ranking.pk)
        except Exception as error:  # collected and asserted on below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(p,)) for p in profiles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(stored) == len(set(stored)) == 20, "10 tasks x overlap 2, each stored once"
    assert Ranking.objects.count() == 20
    assert not RankingTask.objects.filter(ranking_count__gt=F("overlap")).exists()
    for task in RankingTask.objects.all():
        assert task.rankings.count() == task.ranking_count == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_assignment_with_gold_tasks_and_the_policy(make_tasks, settings):
    """Gold tasks (ignoring overlap) mixed in at a high rate, the policy applied after
    every submit (random orders: some annotators get excluded on the way)."""
    from annotation.errors import AnnotatorExcluded

    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.3}
    make_tasks(8, k=4, overlap=2)
    for task in make_tasks(3, k=4, occupation="chef"):
        order = list(task.items.order_by("id").values_list("id", flat=True))
        RankingTask.objects.filter(pk=task.pk).update(is_gold=True, gold_reference={"order": order})
    profiles = []
    for i in range(24):
        profile = services.get_profile(get_user_model().objects.create_user(f"g{i}"))
        services.give_consent(profile)
        profiles.append(profile)
    errors: list[Exception] = []
    barrier = threading.Barrier(len(profiles))

    def work(profile):
        rng = random.Random(profile.pk)
        try:
            barrier.wait()
            while (assignment := next_task(profile)) is not None:
                order = list(assignment.shown_order)
                rng.shuffle(order)
                services.submit_ranking(profile, assignment.task_id, order)
        except AnnotatorExcluded:
            pass
        except Exception as error:  # collected and asserted on below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(p,)) for p in profiles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    for task in RankingTask.objects.filter(is_gold=False):
        assert task.rankings.count() == task.ranking_count == 2
    gold = Ranking.objects.filter(task__is_gold=True)
    assert gold.count() > 3, "gold tasks are ranked by more annotators than their overlap"
    for task in RankingTask.objects.filter(is_gold=True):
        assert task.rankings.count() == task.ranking_count
