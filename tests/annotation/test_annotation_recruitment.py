"""Recruitment by entry link, against fakes of the crowd platforms (crowd_fakes.py says
why they are fakes and what they mimic)."""

import hashlib
import hmac
import logging

import pytest
from crowd_fakes import FakeMTurk, FakeProlific, join
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from annotation.assignment.next_task import next_task
from annotation.models import AnnotatorProfile, Ranking
from annotation.models.studies import Participation, Study
from annotation.participants import admission, recruitment, services
from annotation.participants.erasure import erase_annotator


@pytest.fixture
def throttle_cache(settings, monkeypatch, request):
    """Arrivals counted in a private cache (see test_annotation_contract.strict_throttles)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"join-{request.node.name}",
        }
    }
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "join": "100/hour"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    return rates


@pytest.fixture
def prolific_study(db, throttle_cache):
    return Study.objects.create(
        slug="wave-1",
        name="Stereotypes, wave 1",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="C0MPL3T3",
        screen_out_code="SCR33N",
    )


def _arrive(
    link: str, client: Client | None = None, ip: str = "203.0.113.7", action="agree", **headers
):
    """A browser (a new one unless given) opens the link and answers its consent page."""
    client = client or Client(REMOTE_ADDR=ip, **headers)
    return client, join(client, link, action)


def test_prolific_participant_ranks_to_the_quota_and_leaves_with_the_code(
    prolific_study, make_tasks
):
    make_tasks(3, 2, study=prolific_study)
    prolific = FakeProlific(prolific_study.slug)
    pid = prolific.new_participant_id()
    client, response = _arrive(prolific.link(pid))
    assert response.status_code == 302 and response.url == reverse("portal:demographics")

    participation = Participation.objects.get()
    assert not participation.duplicate and participation.annotator.consents.exists()
    user = participation.annotator.user
    assert user.username.startswith("p-") and not user.has_usable_password()
    assert participation.annotator.quota == 2
    # the Prolific id is kept only as HMAC-SHA256("prolific:<id>") under the settings key
    key = settings.STEREORANK["EXTERNAL_ID_KEY"].encode()
    expected = hmac.new(key, f"prolific:{pid}".encode(), hashlib.sha256).hexdigest()
    assert participation.external_id_hash == expected
    with connection.cursor() as cursor:  # nowhere in the participant's rows
        cursor.execute("SELECT * FROM annotation_participation")
        assert pid not in repr(cursor.fetchall())
    assert pid not in repr(get_user_model().objects.filter(pk=user.pk).values().get())

    # Not done yet: the completion page sends back to ranking instead of giving the code.
    assert client.get(reverse("portal:complete")).url == reverse("portal:rank")

    for _ in range(2):
        page = client.get(reverse("portal:rank"))
        assignment = page.context["assignment"]
        order = ",".join(map(str, assignment.shown_order))
        client.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})
    response = client.get(reverse("portal:rank"))  # quota reached
    assert response.url == reverse("portal:complete")
    page = client.get(response.url)
    assert "C0MPL3T3" in page.content.decode()
    assert prolific.completion_code(page.context["link"]) == "C0MPL3T3"
    participation.refresh_from_db()
    assert participation.outcome == Participation.Outcome.COMPLETED


def test_running_out_of_tasks_also_completes(prolific_study, make_tasks):
    make_tasks(1, 2, study=prolific_study)
    prolific = FakeProlific(prolific_study.slug)
    client, _ = _arrive(prolific.link(prolific.new_participant_id()))
    assignment = client.get(reverse("portal:rank")).context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    client.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})
    assert client.get(reverse("portal:rank")).url == reverse("portal:complete")
    assert client.get(reverse("portal:complete")).context["code"] == "C0MPL3T3"


def test_the_same_link_and_another_prolific_session_resume_on_the_same_browser(
    prolific_study, make_tasks
):
    make_tasks(2, 2, study=prolific_study)
    prolific = FakeProlific(prolific_study.slug)
    pid = prolific.new_participant_id()
    browser, _ = _arrive(prolific.link(pid))
    # The same browser, the same link: straight to the portal (its session).
    assert browser.get(prolific.link(pid)).url == reverse("portal:home")
    # Logged out, then another Prolific session (the earlier one returned or timed out)
    # after 0 of 2 tasks: one POST back into the same participation, under the new
    # session id (issue 21).
    browser.post(reverse("portal:logout"))
    link = prolific.link(pid, session_id="another-session")
    page = browser.get(link)
    assert page.status_code == 200 and "portal/join_back.html" in [t.name for t in page.templates]
    response = _arrive(link, browser, action="continue")[1]
    assert response.status_code == 302 and response.url == reverse("portal:home")
    assert browser.get(reverse("portal:rank")).context["done"] == 0
    participation = Participation.objects.get()
    assert participation.session_id == "another-session"
    assert AnnotatorProfile.objects.count() == 1


def test_declining_consent_screens_out_with_the_screen_out_code(prolific_study):
    prolific = FakeProlific(prolific_study.slug)
    pid = prolific.new_participant_id()
    client, response = _arrive(prolific.link(pid), action="decline")
    assert response.url == reverse("portal:screened_out")
    page = client.get(response.url)
    assert "SCR33N" in page.content.decode()
    assert prolific.completion_code(page.context["link"]) == "SCR33N"
    # No way round it: consent, the link again and the completion page all lead back.
    assert client.get(reverse("portal:consent")).url == reverse("portal:screened_out")
    assert client.get(reverse("portal:complete")).url == reverse("portal:screened_out")
    assert _arrive(prolific.link(pid), client)[1].url == reverse("portal:screened_out")
    participation = Participation.objects.get()
    assert participation.screen_out_reason == Participation.ScreenOut.DECLINED_CONSENT
    assert not participation.annotator.consents.exists()


def test_new_participants_are_rate_limited_per_ip_and_logged(
    prolific_study, throttle_cache, caplog
):
    throttle_cache["join"] = "2/hour"
    prolific = FakeProlific(prolific_study.slug)
    pids = [prolific.new_participant_id() for _ in range(4)]
    first, response = _arrive(prolific.link(pids[0]))
    assert response.status_code == 302
    assert _arrive(prolific.link(pids[1]))[1].status_code == 302
    with caplog.at_level(logging.WARNING, logger="annotation.participants.recruitment"):
        # A forged X-Forwarded-For does not make a new client (no proxy is configured).
        _, response = _arrive(prolific.link(pids[2]), HTTP_X_FORWARDED_FOR="198.51.100.1")
    assert response.status_code == 429
    assert AnnotatorProfile.objects.count() == 2
    [record] = [
        r
        for r in caplog.records
        if r.name == "annotation.participants.recruitment" and r.levelname == "WARNING"
    ]
    assert "wave-1" in record.getMessage() and "203.0.113.7" not in record.getMessage()
    # Returning participants are not new: they still get in; another network too.
    first.post(reverse("portal:logout"))
    assert _arrive(prolific.link(pids[0]), first, action="continue")[1].status_code == 302
    assert _arrive(prolific.link(pids[3]), ip="192.0.2.44")[1].status_code == 302
    assert AnnotatorProfile.objects.count() == 3


@pytest.mark.parametrize(
    "query",
    [
        "?STUDY_ID=s&SESSION_ID=x",  # no participant id
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID=s&SESSION_ID=x",  # placeholder left
        "?PROLIFIC_PID=" + "a" * 201 + "&STUDY_ID=s&SESSION_ID=x",
    ],
)
def test_a_broken_link_says_so_and_creates_nobody(prolific_study, query):
    _, response = _arrive(f"/join/{prolific_study.slug}/{query}")
    assert response.status_code == 400
    assert not AnnotatorProfile.objects.exists()


def test_a_closed_or_unknown_study_admits_nobody_new(prolific_study):
    prolific = FakeProlific(prolific_study.slug)
    started = prolific.new_participant_id()
    browser, _ = _arrive(prolific.link(started))
    Study.objects.filter(pk=prolific_study.pk).update(status=Study.Status.CLOSED)
    _, response = _arrive(prolific.link(prolific.new_participant_id()))
    assert response.status_code == 403 and "closed" in response.content.decode()
    assert _arrive("/join/no-such-study/?pid=1")[1].status_code == 404
    assert AnnotatorProfile.objects.count() == 1
    # who started may come back to finish (on their browser), not a second device
    assert _arrive(prolific.link(started), browser)[1].status_code == 302
    assert _arrive(prolific.link(started))[1].status_code == 403


def test_mturk_preview_creates_nobody_and_a_worker_gets_in(db, throttle_cache):
    study = Study.objects.create(slug="hit", name="HIT", platform=Study.Platform.MTURK)
    mturk = FakeMTurk(study.slug)
    _, response = _arrive(mturk.preview_link())
    assert response.status_code == 200 and "preview" in response.content.decode()
    assert not AnnotatorProfile.objects.exists()
    _, response = _arrive(mturk.link("A1WORKER"))
    assert response.status_code == 302
    participation = Participation.objects.get()
    assert participation.session_id == "A-A1WORKER"
    assert participation.platform_study_id == mturk.hit_id
    # the same worker on another assignment (another HIT of the study): once only
    assert _arrive(mturk.link("A1WORKER", assignment_id="A-2"))[1].status_code == 409


def test_generic_pid_link_and_exit_links(db, throttle_cache):
    study = Study.objects.create(
        slug="lab",
        name="Lab",
        platform=Study.Platform.GENERIC,
        completion_code="DONE",
        completion_url="https://example.org/finish?code={code}",
    )
    browser, response = _arrive("/join/lab/?pid=p-001")
    assert response.status_code == 302
    # the same browser again: resumed (no platform session to match)
    assert _arrive("/join/lab/?pid=p-001", browser)[1].status_code == 302
    assert AnnotatorProfile.objects.count() == 1
    assert recruitment.exit_link(study, "DONE", study.completion_url) == (
        "https://example.org/finish?code=DONE"
    )
    assert recruitment.exit_link(study, "DONE", "") == ""  # nowhere to send: code only
    prolific = Study(platform=Study.Platform.PROLIFIC)
    assert recruitment.exit_link(prolific, "X1", "") == (
        "https://app.prolific.com/submissions/complete?cc=X1"
    )


def test_enrolling_with_the_same_secret_twice_gives_one_annotator(prolific_study):
    arrival = recruitment.Arrival("5f0e" * 6, "sess", "study")
    secret = admission.new_secret()
    first = admission.enroll(prolific_study, arrival, secret)
    second = admission.enroll(prolific_study, arrival, secret)  # a double click, say
    assert first.pk == second.pk and AnnotatorProfile.objects.count() == 1
    assert first.secret_hash == admission.secret_hash(secret) != secret
    # Without the secret, the same crowd id is another participation, marked a duplicate.
    other = admission.enroll(prolific_study, arrival)
    assert other.pk != first.pk and other.duplicate and not first.duplicate


def test_erasure_deletes_the_external_ids(prolific_study, make_tasks):
    make_tasks(1, 2, study=prolific_study)
    prolific = FakeProlific(prolific_study.slug)
    pid = prolific.new_participant_id()
    _arrive(prolific.link(pid))
    assignment = next_task(Participation.objects.get().annotator)
    profile = assignment.annotator
    services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
    erase_annotator(profile, via="participant")
    assert not Participation.objects.exists() and not Ranking.objects.exists()
    # The id is forgotten with the rest: the same link now starts afresh, no duplicate.
    _arrive(prolific.link(pid))
    participation = Participation.objects.get()
    assert participation.annotator_id != profile.pk and not participation.duplicate
