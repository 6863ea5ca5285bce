"""What a crowd participant meets on day one (issue 21): the entry link as the admin
shows it, its consent page, a declined consent asked first and taken back, a new
Prolific session, logging out without a password (and the personal link to come
back), and /join/ pages without log-in or sign-up."""

import html
from urllib.parse import urlsplit

import pytest
from crowd_fakes import FakeMTurk, FakeProlific, join
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from annotation.errors import CannotReconsider
from annotation.models import Ranking
from annotation.models.studies import Participation, Study
from annotation.participants import admission, recruitment


@pytest.fixture(autouse=True)
def throttle_cache(settings, monkeypatch, request):
    """Arrivals counted in a private cache (as in test_annotation_recruitment)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"day1-{request.node.name}",
        }
    }
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "join": "100/hour"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)


@pytest.fixture
def study(db):
    return Study.objects.create(
        slug="pilot",
        name="Pilot",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="C0MPL3T3",
        screen_out_code="SCR33N",
    )


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("lab", password="pw-123456"))
    return client


def _arrive(link: str, client: Client | None = None, action: str = "agree"):
    """A browser (a new one unless given) opens the link and answers its consent page."""
    client = client or Client(REMOTE_ADDR="203.0.113.7")
    return client, join(client, link, action)


def _rank_as_shown(client: Client) -> None:
    assignment = client.get(reverse("portal:rank")).context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    client.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})


@pytest.mark.parametrize(
    "platform, tail",
    [
        (
            Study.Platform.PROLIFIC,
            "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
        ),
        (Study.Platform.MTURK, ""),
        (Study.Platform.GENERIC, "?pid={pid}"),
    ],
)
def test_the_admin_shows_the_full_entry_link_with_a_copy_button(staff, settings, platform, tail):
    settings.STEREORANK = {**settings.STEREORANK, "SITE_URL": "https://study.example.org/"}
    study = Study.objects.create(slug="pilot", name="Pilot", platform=platform)
    expected = f"https://study.example.org/join/pilot/{tail}"
    for page in (
        staff.get(reverse("admin:annotation_study_changelist")),
        staff.get(reverse("admin:annotation_study_change", args=[study.pk])),
    ):
        text = page.content.decode()
        assert f'value="{html.escape(expected)}"' in text
        assert f'data-copy="entry-link-{study.pk}"' in text
        assert "annotation/copy_link.js" in text


def test_without_a_site_url_the_entry_link_takes_the_admin_request_host(staff, settings, study):
    settings.STEREORANK = {**settings.STEREORANK, "SITE_URL": ""}
    settings.ALLOWED_HOSTS = ["lab.example.org"]
    page = staff.get(
        reverse("admin:annotation_study_changelist"), HTTP_HOST="lab.example.org", secure=True
    )
    assert "https://lab.example.org/join/pilot/?PROLIFIC_PID=" in html.unescape(
        page.content.decode()
    )


def test_the_links_as_shown_admit_participants_once_the_platform_fills_them_in(study):
    prolific_link = recruitment.entry_link(study, "https://study.example.org")
    assert prolific_link == "https://study.example.org" + FakeProlific.STUDY_URL.replace(
        "{slug}", study.slug
    )
    filled = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    assert _arrive(filled)[1].status_code == 302

    generic = Study.objects.create(slug="lab", name="Lab", platform=Study.Platform.GENERIC)
    path = urlsplit(recruitment.entry_link(generic, "https://study.example.org"))
    assert _arrive(f"{path.path}?{path.query}")[1].status_code == 400  # {pid} left in
    assert _arrive(f"{path.path}?{path.query}".replace("{pid}", "p-7"))[1].status_code == 302


def test_declining_asks_first_and_a_mistake_can_be_taken_back_until_leaving(study, make_tasks):
    make_tasks(2, 2, study=study)
    prolific = FakeProlific(study.slug)
    link = prolific.link(prolific.new_participant_id())
    client = Client(REMOTE_ADDR="203.0.113.7")
    consent = client.get(link)
    # The entry link's consent page: "I do not agree" is a link to a page that asks, not
    # a button that ends it all; nothing is recorded yet.
    assert 'name="action" value="decline"' not in consent.content.decode()
    decline = consent.context["decline"]
    assert decline.startswith(reverse("portal:join_decline", args=[study.slug]) + "?")
    page = client.get(decline)
    assert "you will not rank any images" in page.content.decode()
    assert not Participation.objects.exists()

    confirmed = client.post(link, {"action": "decline", "token": page.context["token"]})
    assert confirmed.url == reverse("portal:screened_out")
    page = client.get(reverse("portal:screened_out"))
    assert page.context["can_reconsider"] and 'id="reconsider"' in page.content.decode()
    assert client.post(reverse("portal:reconsider")).url == reverse("portal:consent")
    participation = Participation.objects.get()
    assert (participation.outcome, participation.screen_out_reason) == ("", "")
    assert participation.finished_at is None
    client.post(reverse("portal:consent"), {"action": "agree"})
    _rank_as_shown(client)
    assert Ranking.objects.filter(annotator=participation.annotator).count() == 1


def test_after_following_the_link_back_the_answer_stands(study):
    prolific = FakeProlific(study.slug)
    client, _ = _arrive(prolific.link(prolific.new_participant_id()), action="decline")
    response = client.post(reverse("portal:leave"))
    assert prolific.completion_code(response.url) == "SCR33N"
    participation = Participation.objects.get()
    assert participation.left_at is not None
    response = client.post(reverse("portal:reconsider"), follow=True)
    assert response.redirect_chain[-1][0] == reverse("portal:screened_out")
    assert "went back to the platform" in response.content.decode()
    assert 'id="reconsider"' not in response.content.decode()
    participation.refresh_from_db()
    assert participation.outcome == Participation.Outcome.SCREENED_OUT


def test_a_full_group_is_not_taken_back(study):
    arrival = recruitment.Arrival("ab" * 12, "sess", "st")
    participation = admission.enroll(study, arrival)
    recruitment.screen_out(participation, Participation.ScreenOut.GROUP_FULL)
    assert not recruitment.can_reconsider(participation)
    with pytest.raises(CannotReconsider):
        recruitment.reconsider(participation)


def test_a_finished_prolific_participant_with_a_new_session_sees_the_code_again(study, make_tasks):
    make_tasks(3, 2, study=study)
    prolific = FakeProlific(study.slug)
    pid = prolific.new_participant_id()
    client, _ = _arrive(prolific.link(pid))
    for _ in range(2):
        _rank_as_shown(client)
    assert client.get(reverse("portal:rank")).url == reverse("portal:complete")
    client.get(reverse("portal:complete"))
    session = Participation.objects.get().session_id

    # The same browser, logged out, with a new session: one POST back to the code.
    client.post(reverse("portal:logout"))
    _, response = _arrive(prolific.link(pid, session_id="new-session"), client, "continue")
    assert response.url == reverse("portal:complete")
    assert client.get(response.url).context["code"] == "C0MPL3T3"
    assert client.get(reverse("portal:rank")).url == reverse("portal:complete")  # no more tasks
    participation = Participation.objects.get()
    assert participation.session_id == session  # the finished submission keeps its id
    assert Ranking.objects.count() == 2


def test_an_mturk_worker_on_another_assignment_is_still_refused_on_a_bare_page(db):
    study = Study.objects.create(slug="hit", name="HIT", platform=Study.Platform.MTURK)
    mturk = FakeMTurk(study.slug)
    _arrive(mturk.link("A1WORKER"))
    response = _arrive(mturk.link("A1WORKER", assignment_id="A-2"))[1]
    assert response.status_code == 409


@pytest.mark.parametrize(
    "link, status",
    [
        ("/join/pilot/?STUDY_ID=s&SESSION_ID=x", 400),
        ("/join/hit/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=h", 200),
    ],
)
def test_join_pages_offer_no_log_in_or_sign_up(study, link, status):
    Study.objects.create(slug="hit", name="HIT", platform=Study.Platform.MTURK)
    response = _arrive(link)[1]
    assert response.status_code == status
    text = response.content.decode()
    assert reverse("portal:login") not in text and reverse("portal:signup") not in text


def test_a_participant_who_logs_out_is_told_to_come_back_by_the_same_link(study):
    prolific = FakeProlific(study.slug)
    client, _ = _arrive(prolific.link(prolific.new_participant_id()))
    response = client.post(reverse("portal:logout"))
    assert response.status_code == 200
    text = response.content.decode()
    assert "the same link brings you back" in text and "Prolific" in text
    # and the personal link, for another device (kept by the participant, not by us)
    link = response.context["resume_link"]
    assert link.startswith(f"http://testserver/join/{study.slug}/resume/") and link in text
    assert reverse("portal:login") not in text and reverse("portal:signup") not in text
    assert client.get(reverse("portal:home")).url.startswith(reverse("portal:login"))


def test_the_ranking_page_asks_about_an_untouched_order_and_practice_does_not(
    portal_client, make_tasks
):
    make_tasks(1, 3)
    client = portal_client()
    assert 'id="unchanged-panel"' in client.get(reverse("portal:rank")).content.decode()
    assert 'id="unchanged-panel"' not in client.get(reverse("portal:practice")).content.decode()
