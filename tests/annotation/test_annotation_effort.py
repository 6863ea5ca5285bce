"""A participant's quota and minimum scale with the question format (issue 40): the default
ones count six-card rankings' time (annotation/stats/effort.py), a study's own count its
answers as written."""

import pytest
from crowd_fakes import FakeProlific, join
from django.test import Client

from annotation.errors import NotFinished
from annotation.models.studies import Participation, Study
from annotation.participants import recruitment
from annotation.stats import effort


@pytest.mark.parametrize(
    ("question", "size", "k", "quota", "minimum"),
    [
        # 20 rankings of six at 45 s = 900 s; one ranking = 45 s (hand-worked, rounded up)
        ("rank", 6, None, 20, 1),
        ("rank", 4, None, 20, 1),  # a strict-rank study counts its own rankings
        ("rank_ties", 6, None, 18, 1),  # 50 s: 900 / 50 = 18; 45 / 50 -> 1
        ("top_k", 6, 2, 36, 2),  # 15 + 10 = 25 s: 36; 1.8 -> 2
        ("best_worst", 4, None, 60, 3),  # 15 s: 60; 3
        ("pairwise", 2, None, 150, 8),  # 6 s: 150; 7.5 -> 8
    ],
)
def test_the_default_quota_and_minimum_take_the_same_time_in_every_format(
    question, size, k, quota, minimum
):
    assert effort.answers_for(20, question, size, k, reference_size=6) == quota
    assert effort.answers_for(1, question, size, k, reference_size=6) == minimum
    if question != "rank" or size == 6:
        assert effort.minutes(quota, question, size, k) >= 15.0  # never less time than asked


def test_an_unknown_format_has_no_time():
    with pytest.raises(ValueError, match="not a question format"):
        effort.seconds_per_answer("essay", 6)


@pytest.fixture
def own_cache(settings, request):
    """Arrivals counted in a private cache: the join throttle starts at zero."""
    name = f"effort-{request.node.name}"
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": name}
    }
    settings.STEREORANK = {**settings.STEREORANK, "ANNOTATOR_QUOTA": 20, "TASK_SIZE": 6}


def _pairs_study(**fields) -> Study:
    return Study.objects.create(
        slug="pairs",
        name="Pairs",
        platform=Study.Platform.PROLIFIC,
        task_size=2,
        question_format=Study.Question.PAIRWISE,
        completion_code="C0DE",
        **fields,
    )


def _participant(study: Study) -> Participation:
    prolific = FakeProlific(study.slug)
    join(Client(REMOTE_ADDR="203.0.113.9"), prolific.link(prolific.new_participant_id()))
    return Participation.objects.get(study=study)


def test_a_pair_study_asks_a_new_participant_for_a_rankings_worth_of_pairs(db, own_cache):
    participation = _participant(_pairs_study())
    assert participation.annotator.quota == 150
    assert recruitment.minimum_work(participation) == 8
    with pytest.raises(NotFinished):  # no code for less than a ranking's time
        recruitment.complete(participation)


def test_a_quota_and_minimum_a_study_sets_count_its_own_answers(db, own_cache):
    participation = _participant(_pairs_study(tasks_per_participant=5, minimum_rankings=2))
    assert participation.annotator.quota == 5
    assert recruitment.minimum_work(participation) == 2
