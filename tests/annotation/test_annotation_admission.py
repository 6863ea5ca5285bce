"""Who may come in (issue 31): a participation's own secret is its key, the crowd id only
a recorded attribute. Each test tries a door as an attacker holding someone's crowd id
(or a forged key) would, and asserts the refusal; the owner's side (the same browser
comes back, a double click, participations from before secrets) beside them."""

import copy
import json
import threading
from urllib.parse import parse_qsl, urlsplit

import pytest
from crowd_fakes import FakeProlific, join
from django.db import connection
from django.http import HttpRequest
from django.test import Client
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from annotation.assignment.next_task import next_task
from annotation.models import DemographicField, Ranking
from annotation.models.studies import Participation, Study
from annotation.participants import admission, recruitment, services
from annotation.portal import device


@pytest.fixture(autouse=True)
def throttle_cache(settings, monkeypatch, request):
    """Arrivals counted in a private cache (as in test_annotation_recruitment)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"admission-{request.node.name}",
        }
    }
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "join": "100/hour"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)


@pytest.fixture
def study(db, make_tasks):
    study = Study.objects.create(
        slug="wave-1",
        name="Wave 1",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="C0DE",
    )
    make_tasks(3, 2, study=study)
    DemographicField.objects.create(key="religion", label="Religion", choices=["none", "some"])
    return study


@pytest.fixture
def victim(study):
    """A participant who joined on their own browser, answered about their religion and
    ranked one task: (their browser, their Prolific id)."""
    pid = FakeProlific.new_participant_id()
    browser = Client(REMOTE_ADDR="203.0.113.7")
    assert join(browser, _link(study, pid)).status_code == 302
    put = browser.put(
        reverse("api-demographics"),
        json.dumps({"demographics": {"religion": "some"}}),
        content_type="application/json",
    )
    assert put.status_code == 200
    profile = Participation.objects.get().annotator
    assignment = next_task(profile)
    services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
    return browser, pid


PLATFORM = FakeProlific("wave-1", study_id="5c48c3328242c632ffc0d591")


def _link(study: Study, pid: str, session: str | None = None) -> str:
    """The participant's link, as Prolific fills it in (one submission per participant)."""
    return PLATFORM.link(pid, session)


def _held(client: Client, study: Study) -> str:
    """The secret a browser's cookie holds for ``study``, read as the portal reads it."""
    request = HttpRequest()
    request.COOKIES = {name: morsel.value for name, morsel in client.cookies.items()}
    return device.held_secret(request, study)


def _query(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query))


def _first(study: Study) -> Participation:
    return Participation.objects.get(study=study, duplicate=False)


def test_a_get_to_the_entry_link_logs_no_one_in(study, victim):
    _, pid = victim
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    page = attacker.get(_link(study, pid))
    assert page.status_code == 200 and page.context["token"]  # the consent page, only
    assert "portal/join.html" in [t.name for t in page.templates]
    assert "some" not in page.content.decode()
    for door in (reverse("api-me"), reverse("api-demographics")):
        assert attacker.get(door).status_code == 403
    assert attacker.get(reverse("portal:home")).url.startswith(reverse("portal:login"))
    assert attacker.get(reverse("portal:demographics")).status_code == 302
    assert Participation.objects.count() == 1
    # Nor does a scripted POST without the page's form: the page again, nobody made.
    response = attacker.post(_link(study, pid), {"action": "agree"})
    assert response.status_code == 302 and response.url == _link(study, pid)
    assert attacker.get(reverse("api-me")).status_code == 403
    assert Participation.objects.count() == 1


def test_a_second_device_with_the_same_crowd_id_sees_nothing_of_the_first(study, victim):
    _, pid = victim
    first = _first(study)
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    response = join(attacker, _link(study, pid))
    assert response.url == reverse("portal:demographics")  # a new, empty participation

    second = Participation.objects.get(duplicate=True)
    assert second.pk != first.pk and second.annotator_id != first.annotator_id
    assert second.external_id_hash == first.external_id_hash  # recorded, for the researcher
    me = attacker.get(reverse("api-me")).json()
    assert me["demographics"] == {} and me["progress"]["done"] == 0
    assert attacker.get(reverse("api-demographics")).json()["demographics"] == {}
    assert attacker.get(reverse("portal:home")).context["done"] == 0
    # Erasing "one's own data" from there erases the duplicate, never the first.
    assert attacker.post(reverse("api-erasure"), content_type="application/json").status_code == 204
    first.refresh_from_db()
    assert first.annotator.demographics == {"religion": "some"}
    assert Ranking.objects.filter(annotator=first.annotator).count() == 1
    assert not Participation.objects.filter(pk=second.pk).exists()


def test_the_victims_own_browser_comes_back_to_its_data(study, victim):
    browser, pid = victim
    first = _first(study)
    assert browser.get(_link(study, pid)).url == reverse("portal:home")  # its session
    browser.post(reverse("portal:logout"))
    page = browser.get(_link(study, pid, "session-2"))  # its cookie: one POST back
    assert "portal/join_back.html" in [t.name for t in page.templates]
    assert join(browser, _link(study, pid, "session-2"), "continue").url == reverse("portal:home")
    assert browser.get(reverse("api-demographics")).json()["demographics"] == {"religion": "some"}
    assert Participation.objects.get().pk == first.pk


def test_a_key_of_another_crowd_id_opens_nothing(study, victim):
    """A shared computer: the victim's browser, another person's link."""
    browser, _ = victim
    first = _first(study)
    other = FakeProlific.new_participant_id()
    page = browser.get(_link(study, other))  # logged in as the victim: not straight on
    assert "portal/join.html" in [t.name for t in page.templates]
    browser.post(reverse("portal:logout"))
    assert join(browser, _link(study, other)).url == reverse("portal:demographics")
    mine = browser.get(reverse("api-me")).json()
    assert mine["demographics"] == {} and mine["progress"]["done"] == 0
    newcomer = Participation.objects.exclude(pk=first.pk).get()
    assert not newcomer.duplicate and newcomer.external_id_hash != first.external_id_hash


def test_forged_keys_open_nothing(study, victim):
    browser, pid = victim
    first = _first(study)
    secret = _held(browser, study)  # the victim's, as the browser holds it
    assert admission.secret_hash(secret) == first.secret_hash
    attacker = Client(REMOTE_ADDR="198.51.100.9")
    # The victim's secret as a join form's token: not one this server signed.
    arrival = recruitment.parse_arrival(study.platform, _query(_link(study, pid)))
    for token in (secret, "x", admission.form_token(study, arrival, "b" * 32) + "0"):
        response = attacker.post(_link(study, pid), {"action": "continue", "token": token})
        assert response.status_code == 400
    # A cookie that was not signed here (the bare secret, or a changed signature).
    signed = browser.cookies[device.cookie_name(study)].value
    for value in (secret, signed[:-1] + ("A" if signed[-1] != "A" else "B")):
        attacker.cookies[device.cookie_name(study)] = value
        page = attacker.get(_link(study, pid))
        assert "portal/join.html" in [t.name for t in page.templates]
    # A made-up resume link opens nothing; the real one only after a POST.
    made_up = reverse("portal:resume", args=[study.slug, admission.new_secret()])
    assert attacker.get(made_up).status_code == 404
    assert attacker.post(made_up).status_code == 404
    real = reverse("portal:resume", args=[study.slug, secret])
    assert attacker.get(real).status_code == 200
    assert attacker.get(reverse("api-me")).status_code == 403
    assert Participation.objects.count() == 1


def test_the_resume_link_brings_the_participant_back_on_another_device(study, victim):
    browser, _ = victim
    link = browser.get(reverse("portal:home")).context["resume_link"]
    assert link.startswith("http://testserver/join/wave-1/resume/")
    laptop = Client(REMOTE_ADDR="192.0.2.1")
    response = laptop.post(link.removeprefix("http://testserver"))
    assert response.url == reverse("portal:home")
    assert laptop.get(reverse("api-demographics")).json()["demographics"] == {"religion": "some"}
    assert _held(laptop, study) == _held(browser, study)


def test_the_same_form_posted_twice_makes_one_participation(study):
    link = _link(study, FakeProlific.new_participant_id())
    browser = Client(REMOTE_ADDR="203.0.113.7")
    token = browser.get(link).context["token"]
    # The second click's request, sent before the first answer (and its cookies) came:
    # with the page's cookies, as the first.
    second_click = Client(REMOTE_ADDR="203.0.113.7")
    second_click.cookies = copy.deepcopy(browser.cookies)
    first = browser.post(link, {"action": "agree", "token": token})
    second = second_click.post(link, {"action": "agree", "token": token})
    assert first.status_code == second.status_code == 302
    assert Participation.objects.count() == 1 and not Participation.objects.get().duplicate


def test_a_participation_from_before_secrets_keeps_its_session_and_gets_a_key(study):
    pid = FakeProlific.new_participant_id()
    participation = admission.enroll(study, recruitment.Arrival(pid, "s-1", "st"))
    Participation.objects.filter(pk=participation.pk).update(secret_hash=None)  # as migrated
    services.give_consent(participation.annotator)
    browser = Client()
    browser.force_login(participation.annotator.user)  # its session from before the upgrade
    response = browser.get(_link(study, pid, "s-1"))
    assert response.url == reverse("portal:home")  # seamless
    participation.refresh_from_db()
    assert participation.secret_hash == admission.secret_hash(_held(browser, study))
    # From any other browser its crowd id is no key: a duplicate, as for everyone.
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert join(elsewhere, _link(study, pid, "s-1")).url == reverse("portal:demographics")
    assert Participation.objects.filter(duplicate=True).count() == 1


def test_duplicates_are_flagged_for_the_researcher_in_the_admin(study, victim, admin_client):
    _, pid = victim
    join(Client(REMOTE_ADDR="198.51.100.9"), _link(study, pid))
    duplicate = Participation.objects.get(duplicate=True)
    page = admin_client.get(reverse("admin:annotation_participation_changelist"), {"duplicate": 1})
    assert page.status_code == 200
    assert list(page.context["cl"].result_list) == [duplicate]
    assert (
        "secret_hash"
        not in admin_client.get(
            reverse("admin:annotation_participation_change", args=[duplicate.pk])
        ).content.decode()
    )


@pytest.mark.django_db(transaction=True)
def test_devices_racing_with_one_crowd_id_make_one_first_participation():
    """Two clicks of one form and two other devices, at once: one participation for the
    form, the first of the crowd id whoever wins, the others duplicates; no error."""
    study = Study.objects.create(slug="race", name="Race", platform=Study.Platform.PROLIFIC)
    arrival = recruitment.Arrival(FakeProlific.new_participant_id(), "s-1", "st")
    form = admission.new_secret()
    secrets = [form, form, admission.new_secret(), admission.new_secret()]
    made: dict[int, int] = {}
    errors: list[Exception] = []
    barrier = threading.Barrier(len(secrets))

    def arrive(i: int) -> None:
        try:
            barrier.wait()
            made[i] = admission.enroll(study, arrival, secrets[i]).pk
        except Exception as error:  # collected and asserted on below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=arrive, args=(i,)) for i in range(len(secrets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert made[0] == made[1] and len({made[0], made[2], made[3]}) == 3
    assert Participation.objects.filter(study=study, duplicate=False).count() == 1
    assert Participation.objects.filter(study=study, duplicate=True).count() == 2


def test_duplicates_are_flagged_in_the_exports(study, victim, make_tasks, store_ranking):
    from annotation.rankings.exports import pseudonym, ranking_rows

    _, pid = victim
    join(Client(REMOTE_ADDR="198.51.100.9"), _link(study, pid))
    first = Participation.objects.get(study=study, duplicate=False).annotator
    second = Participation.objects.get(study=study, duplicate=True).annotator
    (task,) = make_tasks(1, k=3, overlap=2, study=study)
    order = list(task.task_items.values_list("item_id", flat=True))
    for profile in (first, second):
        store_ranking(profile, task, order)
    flags = {row["annotator"]: row["duplicate"] for row in ranking_rows(study=study)}
    assert flags == {pseudonym(first.user_id): False, pseudonym(second.user_id): True}
