"""Balanced pools: group quotas stop newcomers of a full group, kindly, race-free."""

import random
import threading
from datetime import timedelta

import pytest
from crowd_fakes import FakeProlific, join
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.assignment import quotas
from annotation.assignment.next_task import next_task
from annotation.errors import GroupFull
from annotation.models import (
    Assignment,
    DemographicField,
    GroupQuota,
    Participation,
    QuotaSeat,
    Study,
)
from annotation.participants import services
from annotation.participants.erasure import erase_annotator

PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY


@pytest.fixture
def age(db):
    return DemographicField.objects.create(
        key="age_band", label="Age band", choices=["18-24", "25-34"]
    )


def _newcomer(name: str, answers: dict | None = None):
    profile = services.get_profile(get_user_model().objects.create_user(name))
    services.give_consent(profile)
    if answers is not None:
        services.save_demographics(profile, answers)
    return profile


def _rank_one(profile) -> None:
    assignment = next_task(profile)
    services.submit_ranking(profile, assignment.task_id, assignment.shown_order)


def test_answer_groups(age):
    country = DemographicField(key="country", label="Country", choices=[])
    assert quotas.answer_group(age, "18-24") == "18-24"
    assert quotas.answer_group(age, None) == PREFER_NOT  # skipped: nothing is required
    assert quotas.answer_group(age, " Prefer not to say ") == PREFER_NOT
    assert quotas.answer_group(age, "my own words") == quotas.OTHER
    assert quotas.answer_group(country, " Wales ") == quotas.quota_group(country, "wales")
    assert quotas.quota_group(age, "Other") == quotas.OTHER


def test_a_full_group_turns_newcomers_away_and_others_go_on(age, make_tasks):
    make_tasks(6, 2, overlap=6)
    GroupQuota.objects.create(field=age, value="18-24", target=2)
    first, second = _newcomer("y1", {"age_band": "18-24"}), _newcomer("y2", {"age_band": "18-24"})
    _rank_one(first)
    _rank_one(second)
    third = _newcomer("y3", {"age_band": "18-24"})
    with pytest.raises(GroupFull, match="18-24"):
        next_task(third)
    assert not Assignment.objects.filter(annotator=third).exists()
    # the seated go on past the target; other groups and the unlimited are not stopped
    _rank_one(first)
    _rank_one(_newcomer("o1", {"age_band": "25-34"}))
    assert QuotaSeat.objects.filter(quota__value="18-24").count() == 2


def test_prefer_not_to_say_and_skipped_questions_share_their_own_quota(age, make_tasks):
    make_tasks(3, 2, overlap=6)
    GroupQuota.objects.create(field=age, value=PREFER_NOT, target=1)
    _rank_one(_newcomer("skipped"))  # never answered: counts as prefer not to say
    with pytest.raises(GroupFull):
        next_task(_newcomer("declined", {"age_band": PREFER_NOT}))
    _rank_one(_newcomer("answered", {"age_band": "25-34"}))


def test_places_free_up_on_expiry_withdrawal_and_erasure(age, make_tasks):
    make_tasks(4, 2, overlap=6)
    GroupQuota.objects.create(field=age, value="25-34", target=1)
    holder = _newcomer("holder", {"age_band": "25-34"})
    assert next_task(holder) is not None  # a live reservation holds the place
    late = _newcomer("late", {"age_band": "25-34"})
    with pytest.raises(GroupFull):
        next_task(late)
    Assignment.objects.update(reserved_until=timezone.now() - timedelta(seconds=1))
    _rank_one(late)  # the holder left before ranking: the place went back
    nxt = _newcomer("next", {"age_band": "25-34"})
    with pytest.raises(GroupFull):
        next_task(nxt)
    services.withdraw_consent(late)
    assert next_task(nxt) is not None
    erase_annotator(nxt, via="staff")
    assert not QuotaSeat.objects.filter(annotator=nxt).exists()  # the seat says the group
    assert next_task(_newcomer("last", {"age_band": "25-34"})) is not None


def test_a_quota_added_mid_study_never_stops_someone_who_already_ranked(age, make_tasks):
    make_tasks(4, 2, overlap=6)
    veteran = _newcomer("veteran", {"age_band": "18-24"})
    _rank_one(veteran)
    GroupQuota.objects.create(field=age, value="18-24", target=0)
    _rank_one(veteran)
    with pytest.raises(GroupFull):
        next_task(_newcomer("newbie", {"age_band": "18-24"}))


def test_quota_values_are_checked_against_the_field(age):
    GroupQuota(field=age, value="18-24", target=1).full_clean()
    GroupQuota(field=age, value=PREFER_NOT, target=1).full_clean()
    with pytest.raises(ValidationError, match="Use one of"):
        GroupQuota(field=age, value="18-25", target=1).full_clean()
    free = DemographicField.objects.create(key="country", label="Country")
    GroupQuota(field=free, value="Wales", target=1).full_clean()


def test_a_participant_of_a_full_group_gets_the_screen_out_code(age, make_tasks, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "q"}
    }
    study = Study.objects.create(
        slug="s", name="S", platform=Study.Platform.PROLIFIC, screen_out_code="FULL1"
    )
    make_tasks(2, 2, overlap=6, study=study)
    GroupQuota.objects.create(study=study, field=age, value="18-24", target=0)
    prolific = FakeProlific(study.slug)
    client = Client()
    join(client, prolific.link(prolific.new_participant_id()))
    client.post(reverse("portal:demographics"), {"age_band": "18-24"})
    response = client.get(reverse("portal:rank"))
    assert response.url == reverse("portal:screened_out")
    page = client.get(response.url)
    assert "all the participants we need who answered as you did" in page.content.decode()
    assert prolific.completion_code(page.context["link"]) == "FULL1"
    assert Participation.objects.get().screen_out_reason == "group_full"
    assert client.get(reverse("portal:complete")).url == reverse("portal:screened_out")


def test_an_annotator_of_a_full_group_is_told_kindly(age, make_tasks, portal_client):
    make_tasks(2, 2)
    GroupQuota.objects.create(field=age, value=PREFER_NOT, target=0)
    client = portal_client("walkin")
    response = client.get(reverse("portal:rank"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("portal:home")
    assert "Thank you for your interest" in response.content.decode()


def _first_task_queries(name: str, n_tasks: int, make_tasks) -> int:
    make_tasks(n_tasks, 3, overlap=50)
    profile = _newcomer(name, {"age_band": "18-24"})
    with CaptureQueriesContext(connection) as queries:
        assert next_task(profile) is not None
    return len(queries)


def test_first_task_query_count_is_constant_with_quotas(age, make_tasks):
    GroupQuota.objects.create(field=age, value="18-24", target=100)
    GroupQuota.objects.create(field=age, value="25-34", target=100)
    small = _first_task_queries("a", 2, make_tasks)
    for i in range(5):
        _rank_one(_newcomer(f"filler{i}", {"age_band": "18-24"}))
    assert _first_task_queries("b", 20, make_tasks) == small


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_newcomers_racing_for_the_last_places_never_overfill(make_tasks):
    age = DemographicField.objects.create(key="age_band", label="Age", choices=["18-24"])
    make_tasks(10, 3, overlap=20)
    GroupQuota.objects.create(field=age, value="18-24", target=3)
    people = [_newcomer(f"n{i}", {"age_band": "18-24"}) for i in range(12)]
    got, full, errors = [], [], []
    lock = threading.Lock()
    barrier = threading.Barrier(len(people))

    def arrive(profile):
        try:
            barrier.wait()
            assignment = next_task(profile)
            order = list(assignment.shown_order)
            random.Random(profile.pk).shuffle(order)
            services.submit_ranking(profile, assignment.task_id, order)
            with lock:
                got.append(profile.pk)
        except GroupFull:
            with lock:
                full.append(profile.pk)
        except Exception as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=arrive, args=(p,)) for p in people]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(got) == 3 and len(full) == 9
    assert QuotaSeat.objects.count() == 3
    [row] = quotas.quota_fill(timezone.now())
    assert (row["filled"], row["target"]) == (3, 3)
