"""A secret opens only its owner's door (issue 43): each way a secret turns into a
participation (a join form's token, the device cookie, the resume link, a form posted
twice) is tried as an attacker holding the victim's secret would: with another crowd id,
in another study and from a browser with no cookie. Each must open nothing of the
victim's: the attacker gets the page again or a participation of their own, and the
victim's data is untouched."""

import copy
import json
from datetime import timedelta

import pytest
from crowd_fakes import FakeProlific
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.models import DemographicField
from annotation.models.studies import Participation, Study
from annotation.participants import admission
from annotation.portal import device

PLATFORM = FakeProlific("sa", study_id="5c48c3328242c632ffc0d591")
OTHER = FakeProlific("sb", study_id="5c48c3328242c632ffc0d592")


@pytest.fixture
def studies(db, make_tasks):
    made = []
    for slug in ("sa", "sb"):
        study = Study.objects.create(
            slug=slug,
            name=slug,
            platform=Study.Platform.PROLIFIC,
            tasks_per_participant=2,
            completion_code="C0DE",
        )
        make_tasks(2, 2, study=study)
        made.append(study)
    DemographicField.objects.create(key="religion", label="Religion", choices=["none", "some"])
    return made


@pytest.fixture
def victim(studies):
    """The victim joins study ``sa`` on a shared browser and answers about religion: (the
    browser, their link, the token of the form they posted)."""
    link = PLATFORM.link(FakeProlific.new_participant_id())
    browser = Client(REMOTE_ADDR="203.0.113.7")
    token = browser.get(link).context["token"]
    assert browser.post(link, {"action": "agree", "token": token}).status_code == 302
    put = browser.put(
        reverse("api-demographics"),
        json.dumps({"demographics": {"religion": "some"}}),
        content_type="application/json",
    )
    assert put.status_code == 200
    return browser, link, token


def _victims() -> Participation:
    return Participation.objects.get(annotator__demographics={"religion": "some"})


def _untouched(participation: Participation) -> None:
    """The victim's participation is still theirs alone, as they left it."""
    participation.refresh_from_db()
    assert participation.annotator.demographics == {"religion": "some"}
    assert participation.annotator.user.is_active


def _not_the_victim(client: Client, victim: Participation) -> None:
    """Whoever ``client`` is signed in as (if anyone), it is not the victim."""
    me = client.get(reverse("api-me"))
    assert me.status_code == 403 or me.json()["demographics"] == {}
    if me.status_code == 200:
        assert client.session["_auth_user_id"] != str(victim.annotator.user_id)


def _other_crowd_id() -> str:
    return PLATFORM.link(FakeProlific.new_participant_id())


def test_a_replayed_join_token_with_another_crowd_id_opens_nothing(victim):
    """The issue's replay: the victim's form token, posted by a fresh browser to its own
    link (another PROLIFIC_PID), was answered 302 and opened the victim's account."""
    _, _, token = victim
    target = _victims()
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    for action in ("agree", "continue", "decline"):
        answer = attacker.post(_other_crowd_id(), {"action": action, "token": token})
        assert answer.status_code == 400
        assert "out of date" in answer.content.decode()
        _not_the_victim(attacker, target)
    assert Participation.objects.count() == 1
    _untouched(target)


def test_a_replayed_join_token_with_the_victims_own_crowd_id_opens_nothing(victim):
    """The victim's link and form, both in the shared browser's history, replayed at once
    (inside the double-click window: the review's attack) from another browser, and from
    the victim's own browser once they logged out: the form is bound to the browser it was
    shown in (its CSRF secret, rotated at log-in), so it opens nothing."""
    browser, link, token = victim
    target = _victims()
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    for action in ("agree", "continue"):
        answer = attacker.post(link, {"action": action, "token": token})
        assert answer.status_code == 400 and "out of date" in answer.content.decode()
        _not_the_victim(attacker, target)
    browser.post(reverse("portal:logout"))
    browser.cookies.pop(device.cookie_name(target.study), None)  # a cleared device key
    answer = browser.post(link, {"action": "agree", "token": token})
    assert answer.status_code == 400
    _not_the_victim(browser, target)
    assert Participation.objects.count() == 1
    # Once the window has passed the form is spent whoever posts it (see the admission tests).
    Participation.objects.filter(pk=target.pk).update(
        started_at=timezone.now() - timedelta(seconds=admission.DOUBLE_POST_SECONDS + 1)
    )
    # The page again gives a form of its own, which makes a participation of its own.
    page = attacker.get(link)
    assert "portal/join.html" in [t.name for t in page.templates]
    assert page.context["token"] != token
    attacker.post(link, {"action": "agree", "token": page.context["token"]})
    mine = Participation.objects.exclude(pk=target.pk).get()
    assert mine.duplicate and attacker.get(reverse("api-me")).json()["demographics"] == {}
    _untouched(target)


def test_a_join_token_of_one_study_opens_nothing_in_another(victim, studies):
    _, link, token = victim
    target = _victims()
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    pid = dict(p.split("=") for p in link.split("?")[1].split("&"))["PROLIFIC_PID"]
    answer = attacker.post(OTHER.link(pid), {"action": "agree", "token": token})
    assert answer.status_code == 400
    _not_the_victim(attacker, target)
    assert not Participation.objects.filter(study=studies[1]).exists()
    _untouched(target)


def test_a_double_click_still_makes_one_participation(studies):
    """The owner's side: the second post of one form, sent before the first one's answer
    came back (so without its cookie), reaches the same participation."""
    link = _other_crowd_id()
    browser = Client(REMOTE_ADDR="203.0.113.7")
    token = browser.get(link).context["token"]
    second_click = Client(REMOTE_ADDR="203.0.113.7")
    second_click.cookies = copy.deepcopy(browser.cookies)  # the page's, as the first post
    first = browser.post(link, {"action": "agree", "token": token})
    second = second_click.post(link, {"action": "agree", "token": token})
    assert first.status_code == second.status_code == 302
    only = Participation.objects.get()
    assert second_click.session["_auth_user_id"] == str(only.annotator.user_id)


def test_the_device_cookie_opens_only_its_own_crowd_id_and_study(victim, studies):
    browser, link, _ = victim
    target = _victims()
    cookie = browser.cookies[device.cookie_name(studies[0])].value
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    attacker.cookies[device.cookie_name(studies[0])] = cookie
    other = _other_crowd_id()
    page = attacker.get(other)  # not the returning browser's page
    assert "portal/join.html" in [t.name for t in page.templates]
    assert attacker.post(other, {"action": "continue"}).url == other
    _not_the_victim(attacker, target)
    # The same cookie under the other study's name: nothing there either.
    attacker.cookies[device.cookie_name(studies[1])] = cookie
    pid = dict(p.split("=") for p in link.split("?")[1].split("&"))["PROLIFIC_PID"]
    assert attacker.post(OTHER.link(pid), {"action": "continue"}).status_code == 302
    _not_the_victim(attacker, target)
    assert Participation.objects.count() == 1
    _untouched(target)


def test_the_resume_link_opens_only_its_own_crowd_id_and_study(victim, studies):
    browser, link, _ = victim
    target = _victims()
    resume = browser.get(reverse("portal:home")).context["resume_link"]
    path = resume.removeprefix("http://testserver")
    secret = path.rstrip("/").rsplit("/", 1)[1]
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    query = _other_crowd_id().split("?", 1)[1]
    for door in (
        f"{path}?{query}",  # the link with another crowd id
        reverse("portal:resume", args=["sb", secret]),  # another study
    ):
        assert attacker.get(door).status_code == 404
        assert attacker.post(door).status_code == 404
        _not_the_victim(attacker, target)
    # With its own crowd id, or none (the participant's bookmark), from a browser with no
    # cookie: the participant's own key opens their participation, after a POST.
    own = link.split("?", 1)[1]
    for door in (f"{path}?{own}", path):
        laptop = Client(REMOTE_ADDR="192.0.2.1")
        assert laptop.post(door).url == reverse("portal:home")
        assert laptop.get(reverse("api-me")).json()["demographics"] == {"religion": "some"}
    _untouched(target)
