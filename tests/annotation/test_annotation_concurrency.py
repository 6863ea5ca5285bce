"""32 annotators asking for and submitting tasks at once: SKIP LOCKED rows on PostgreSQL,
one writer at a time (IMMEDIATE transactions) on SQLite; never overfilled, nothing lost."""

import random
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import F

from annotation import services
from annotation.models import Ranking, RankingTask


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
            while (assignment := services.next_task(profile)) is not None:
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
