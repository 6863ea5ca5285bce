"""Doors besides the entry link (issue 31), tried as an attacker would: signing up where
signup is closed, asking for the completion code before the study's minimum work,
submitting to a task reserved for someone else. Each must be refused and say nothing
it should not."""

import re

import pytest
from crowd_fakes import FakeProlific, join
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.assignment.next_task import next_task
from annotation.errors import NotFinished
from annotation.models import AnnotatorProfile, Ranking
from annotation.models.studies import Participation, Study, default_study
from annotation.participants import recruitment

PASSWORD = "a-Long-pass-987"
NEW_ACCOUNT = {"username": "walk-in", "password1": PASSWORD, "password2": PASSWORD}


@pytest.fixture
def participant(db, settings):
    """join(tasks, minimum) -> a browser that joined a new Prolific study and agreed."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "d"}
    }

    def make(make_tasks, tasks: int, minimum: int = 1) -> Client:
        study = Study.objects.create(
            slug="wave-1",
            name="Wave 1",
            platform=Study.Platform.PROLIFIC,
            tasks_per_participant=3,
            minimum_rankings=minimum,
            completion_code="PAIDC0DE",
        )
        if tasks:
            make_tasks(tasks, 2, study=study)
        browser = Client(REMOTE_ADDR="203.0.113.7")
        prolific = FakeProlific(study.slug)
        assert join(browser, prolific.link(prolific.new_participant_id())).status_code == 302
        return browser

    return make


def test_signup_is_closed_by_default(client, db):
    page = client.get(reverse("portal:signup"))
    assert page.status_code == 403 and 'id="signup-form"' not in page.content.decode()
    assert "Sign-up is closed" in page.content.decode()
    assert client.post(reverse("portal:signup"), NEW_ACCOUNT).status_code == 403
    assert not get_user_model().objects.filter(username="walk-in").exists()
    # The header offers no sign-up either.
    login = client.get(reverse("portal:login")).content.decode()
    assert f'<a href="{reverse("portal:signup")}">Sign up</a>' not in login


@pytest.mark.parametrize(
    "query, status",
    [("", 403), ("?study=wave-1", 403), ("?study=no-such-study", 403), ("?study=lab", 302)],
)
def test_signup_admits_only_to_an_open_study_whose_owner_opened_it(client, db, query, status):
    Study.objects.create(slug="wave-1", name="W", platform="prolific")  # signup off
    Study.objects.create(slug="lab", name="Lab", platform="generic", open_signup=True)
    Study.objects.create(
        slug="shut", name="S", platform="generic", open_signup=True, status=Study.Status.CLOSED
    )
    assert client.post(reverse("portal:signup") + "?study=shut", NEW_ACCOUNT).status_code == 403
    response = client.post(reverse("portal:signup") + query, NEW_ACCOUNT)
    assert response.status_code == status
    made = AnnotatorProfile.objects.filter(user__username="walk-in")
    assert [p.study.slug for p in made] == (["lab"] if status == 302 else [])


def test_the_header_offers_signup_where_the_default_study_takes_it(client, db):
    # Made here if missing: a transactional test before this one on its worker flushed
    # the migration's default study away.
    study = Study.objects.filter(pk=default_study().pk)
    study.update(open_signup=False, status=Study.Status.OPEN)
    closed = client.get(reverse("portal:login")).content.decode()
    assert "Sign up</a>" not in closed  # the header's link, nor the page's (issue 37)
    assert reverse("portal:signup") not in closed and "Create an account" not in closed
    assert "joined by the link the researchers sent you" in closed
    study.update(open_signup=True)
    login = client.get(reverse("portal:login")).content.decode()
    assert f'<a href="{reverse("portal:signup")}">Sign up</a>' in login
    assert "Create an account</a>" in login
    assert client.get(reverse("portal:signup")).status_code == 200


def test_no_completion_code_after_zero_rankings(participant, make_tasks):
    browser = participant(make_tasks, tasks=0)  # nothing to rank at all
    assert browser.get(reverse("portal:rank")).url == reverse("portal:complete")
    response = browser.get(reverse("portal:complete"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("portal:home")
    text = response.content.decode()
    assert "PAIDC0DE" not in text and "comes after 1 ranked task (you have ranked 0)" in text
    assert Participation.objects.get().outcome == Participation.Outcome.TAKING_PART


def test_no_completion_code_before_the_studys_minimum(participant, make_tasks):
    browser = participant(make_tasks, tasks=1, minimum=2)  # one task for a minimum of two
    assignment = browser.get(reverse("portal:rank")).context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    browser.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})
    response = browser.get(reverse("portal:complete"), follow=True)
    assert "PAIDC0DE" not in response.content.decode()
    participation = Participation.objects.get()
    with pytest.raises(NotFinished):  # the service refuses too, whoever calls it
        recruitment.complete(participation)
    assert participation.outcome == Participation.Outcome.TAKING_PART


def test_the_minimum_never_exceeds_the_quota(participant, make_tasks):
    browser = participant(make_tasks, tasks=3, minimum=50)
    for _ in range(3):
        assignment = browser.get(reverse("portal:rank")).context["assignment"]
        order = ",".join(map(str, assignment.shown_order))
        browser.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})
    assert browser.get(reverse("portal:complete")).context["code"] == "PAIDC0DE"


def _ids_in(text: str, ids) -> list[int]:
    return [i for i in ids if re.search(rf"\b{i}\b", text)]


def test_a_submit_to_another_annotators_task_answers_without_its_items(
    make_tasks, annotator, portal_client
):
    make_tasks(1, 4, overlap=2)
    owner = annotator("owner")
    reserved = next_task(owner.profile)
    items = reserved.shown_order
    attacker = annotator("attacker")
    url = reverse("api-ranking", args=[reserved.task_id])
    for order in ([items[0]], [999_999, 999_998], items):  # probing, then the right guess
        response = attacker.post(url, {"order": order}, format="json")
        assert response.status_code == 403, response.content
        assert "not reserved for you" in response.json()["detail"]
        assert _ids_in(response.content.decode(), items) == [], response.content
    assert attacker.post(url, {"order": "x"}, format="json").status_code == 400
    # The portal's form says the same, and shows none of the task's items.
    browser = portal_client("walker")
    page = browser.post(
        reverse("portal:rank"), {"task_id": reserved.task_id, "order": "1"}, follow=True
    )
    messages = [str(m) for m in page.context["messages"]]
    assert any("not reserved for you" in m for m in messages)
    assert all(_ids_in(m, items) == [] for m in messages)
    assert not Ranking.objects.exists()
