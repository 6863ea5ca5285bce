"""Erasures while others rank, on PostgreSQL: no ranking of an erased annotator
survives, no slot is lost or counted twice, and the freed slots are filled."""

import random
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotation.assignment.next_task import next_task
from annotation.errors import AnnotationError
from annotation.models import Ranking, RankingTask
from annotation.participants import services
from annotation.participants.erasure import erase_annotator


def _rank_until_done(profile, rng) -> None:
    """Rank like a careful annotator: a random order, never the shown one (the position
    bias policy would exclude someone who kept it in 3 of 5 rankings, a 1-in-6 chance
    at K=3 that made this test fail now and then)."""
    while (assignment := next_task(profile)) is not None:
        shown = list(assignment.shown_order)
        order = shown.copy()
        rng.shuffle(order)
        if order == shown:
            order = shown[1:] + shown[:1]
        services.submit_ranking(profile, assignment.task_id, order)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_erasures_racing_submits_leave_counts_exact(make_tasks):
    make_tasks(12, k=3, overlap=2)
    profiles = []
    for i in range(10):
        profile = services.get_profile(get_user_model().objects.create_user(f"r{i}"))
        services.give_consent(profile)
        profiles.append(profile)
    victims, others = profiles[:3], profiles[3:]
    unexpected: list[Exception] = []
    started = threading.Barrier(len(profiles) + 1)

    def annotate(profile):
        try:
            started.wait()
            _rank_until_done(profile, random.Random(profile.pk))
        except AnnotationError as error:  # an erased annotator is refused: expected
            if profile not in victims:
                unexpected.append(error)
        except Exception as error:
            unexpected.append(error)
        finally:
            connection.close()

    def erase():
        try:
            started.wait()
            for victim in victims:
                erase_annotator(victim, via="staff")
        except Exception as error:
            unexpected.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=annotate, args=(p,)) for p in profiles]
    threads.append(threading.Thread(target=erase))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert unexpected == []

    assert not Ranking.objects.filter(annotator__in=victims).exists()
    for victim in victims:
        victim.refresh_from_db()
        assert victim.erased_at is not None and victim.demographics == {}
    for task in RankingTask.objects.all():
        assert task.ranking_count == task.rankings.count() <= task.overlap
    # Slots the victims gave back go to the others (who may have finished before).
    for profile in others:
        _rank_until_done(profile, random.Random(0))
    assert {t.ranking_count for t in RankingTask.objects.all()} == {2}
