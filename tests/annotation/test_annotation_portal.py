"""The portal's server-rendered views, through the Django test client."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from django.utils.html import escape

from annotation.models import Assignment, ConsentText, DemographicField, Ranking, Study
from annotation.models.studies import default_study_pk
from annotation.participants import services
from annotation.rankings import selectors
from tests.second_factor_helpers import verify_session


def test_anonymous_users_go_to_login(client):
    response = client.get(reverse("portal:home"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("portal:login"))


@pytest.mark.parametrize("name", ["portal:home", "portal:demographics", "portal:rank"])
def test_pages_redirect_to_consent_without_consent(portal_client, name):
    client = portal_client(consent=False)
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response.url == reverse("portal:consent")


def test_signup_logs_in_and_asks_for_consent(client, db):
    Study.objects.filter(pk=default_study_pk()).update(open_signup=True)  # its owner's choice
    ConsentText.objects.create(version=3, text="Consent text number three.")
    response = client.post(
        reverse("portal:signup"),
        {"username": "newbie", "password1": "a-Long-pass-987", "password2": "a-Long-pass-987"},
    )
    assert response.status_code == 302
    assert response.url == reverse("portal:consent")
    page = client.get(reverse("portal:consent"))
    assert b"Consent text number three." in page.content
    response = client.post(reverse("portal:consent"), {"action": "agree"})
    assert response.url == reverse("portal:demographics")
    profile = services.get_profile(get_user_model().objects.get(username="newbie"))
    assert selectors.has_consent(profile)
    assert profile.consents.get().text.version == 3


def test_withdraw_consent_gates_again(portal_client):
    client = portal_client()
    client.post(reverse("portal:withdraw"), {"choice": "stop"})
    assert not selectors.has_consent(client.profile)
    assert client.get(reverse("portal:home")).url == reverse("portal:consent")


def test_demographics_saved(portal_client):
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    DemographicField.objects.create(key="country", label="Country")
    DemographicField.objects.create(key="age", label="Age", choices=["18-30"], order=9)
    DemographicField.objects.create(key="old", label="Old", active=False)
    client = portal_client()
    page = client.get(reverse("portal:demographics"))
    assert b"prefer not to say" in page.content
    assert b"Old" not in page.content
    response = client.post(
        reverse("portal:demographics"),
        {"gender": "woman", "country": "ignored", "country__prefer_not": "on", "age": ""},
    )
    assert response.status_code == 302
    client.profile.refresh_from_db()
    assert client.profile.demographics == {"gender": "woman", "country": "prefer not to say"}


def test_demographics_refuses_unknown_choice(portal_client):
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    client = portal_client()
    response = client.post(reverse("portal:demographics"), {"gender": "robot"})
    assert response.status_code == 200
    client.profile.refresh_from_db()
    assert client.profile.demographics == {}


def test_rank_page_shows_the_reserved_task_and_post_stores_ranking(portal_client, make_tasks):
    tasks = make_tasks(2, k=3)
    client = portal_client()
    page = client.get(reverse("portal:rank"))
    assert page.status_code == 200
    assignment = Assignment.objects.get(annotator=client.profile)
    html = page.content.decode()
    positions = [html.index(f'data-item-id="{i}"') for i in assignment.shown_order]
    assert positions == sorted(positions)  # shown in the assignment's order
    # Resuming shows the same reservation.
    client.get(reverse("portal:rank"))
    assert Assignment.objects.filter(annotator=client.profile).count() == 1

    order = list(reversed(assignment.shown_order))
    response = client.post(
        reverse("portal:rank"),
        {"task_id": assignment.task_id, "order": ",".join(map(str, order)), "seconds_spent": "4.5"},
    )
    assert response.status_code == 302
    assert response.url == reverse("portal:rank")
    ranking = Ranking.objects.get(annotator=client.profile)
    assert ranking.order == order
    assert ranking.seconds_spent == 4.5
    assert selectors.progress(client.profile)["done"] == 1
    assert ranking.task_id in {t.pk for t in tasks}


def test_rank_post_with_a_bad_order_stores_nothing(portal_client, make_tasks):
    make_tasks(1, k=3)
    client = portal_client()
    client.get(reverse("portal:rank"))
    assignment = Assignment.objects.get(annotator=client.profile)
    response = client.post(
        reverse("portal:rank"),
        {"task_id": assignment.task_id, "order": str(assignment.shown_order[0])},
        follow=True,
    )
    assert not Ranking.objects.exists()
    assert b"missing items" in response.content


def test_rank_redirects_home_when_no_task_left(portal_client, db):
    client = portal_client()
    response = client.get(reverse("portal:rank"))
    assert response.url == reverse("portal:home")


def _portal_queries(portal_client, make_tasks, name, n, k):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_tasks(n, k=k)
    client = portal_client(name)
    with CaptureQueriesContext(connection) as page:
        assert client.get(reverse("portal:rank")).status_code == 200
    assignment = Assignment.objects.get(annotator=client.profile)
    order = ",".join(map(str, assignment.shown_order))
    with CaptureQueriesContext(connection) as post:
        response = client.post(
            reverse("portal:rank"), {"task_id": assignment.task_id, "order": order}
        )
    assert response.status_code == 302 and Ranking.objects.filter(annotator=client.profile)
    return len(page), len(post)


def test_rank_page_and_submit_run_constant_queries(portal_client, make_tasks):
    small = _portal_queries(portal_client, make_tasks, "a", n=2, k=3)
    large = _portal_queries(portal_client, make_tasks, "b", n=20, k=6)
    assert small == large


def _log_in(client, username: str, staff: bool):
    get_user_model().objects.create_user(username, password="pw-123456", is_staff=staff)
    return client.post(reverse("portal:login"), {"username": username, "password": "pw-123456"})


def test_staff_land_on_the_dashboards_after_logging_in(client, db):
    response = _log_in(client, "boss", staff=True)
    assert response.status_code == 302
    assert response.url == reverse("dashboards:progress")
    # Already logged in: the log-in page sends them on, to the dashboards too.
    assert client.get(reverse("portal:login")).url == reverse("dashboards:progress")


def test_annotators_land_on_the_portal_home_after_logging_in(client, db):
    response = _log_in(client, "ann", staff=False)
    assert response.url == reverse("portal:home")


def test_a_next_parameter_still_wins_for_staff(client, db):
    get_user_model().objects.create_user("boss", password="pw-123456", is_staff=True)
    response = client.post(
        reverse("portal:login") + "?next=/dashboards/runs/",
        {"username": "boss", "password": "pw-123456"},
    )
    assert response.url == "/dashboards/runs/"


def test_dashboards_link_back_to_the_portal_and_log_out_by_post(client, db):
    _log_in(client, "boss", staff=True)
    verify_session(client, get_user_model().objects.get(username="boss"))  # its code given
    page = client.get(reverse("dashboards:progress")).content.decode()
    assert f'href="{reverse("portal:home")}"' in page
    logout = reverse("portal:logout")
    assert f'<form method="post" action="{logout}"' in page
    assert client.post(logout).url == reverse("portal:login")
    assert client.get(reverse("dashboards:progress")).status_code == 302  # logged out


def test_the_portal_links_staff_to_the_dashboards_only(portal_client, db):
    dashboards = f'href="{reverse("dashboards:progress")}"'.encode()
    annotator = portal_client("ann")
    assert dashboards not in annotator.get(reverse("portal:home")).content
    staff = portal_client("boss")
    staff.profile.user.is_staff = True
    staff.profile.user.save()
    staff.force_login(staff.profile.user)  # staff now: a log-in with the second factor
    assert dashboards in staff.get(reverse("portal:home")).content


def _catalogue_consent() -> dict:
    import json

    from annotation.catalogue.loading import CATALOGUE

    return json.loads(CATALOGUE.read_text(encoding="utf-8"))["consent"]


def test_consent_page_without_a_stored_text_shows_the_catalogues_wording(portal_client):
    client = portal_client(consent=False)
    ConsentText.objects.all().delete()
    page = client.get(reverse("portal:consent"))
    expected = _catalogue_consent()
    first_paragraph = expected["text"].split("\n\n")[0]
    assert escape(first_paragraph) in page.content.decode()
    assert page.context["version"] == 1  # the study's first version, whatever the wording's


def test_consenting_before_the_catalogue_is_loaded_agrees_to_the_catalogues_text(db):
    user = get_user_model().objects.create_user("early", password="pw-123456")
    consent = services.give_consent(services.get_profile(user))
    expected = _catalogue_consent()
    assert (consent.text.version, consent.text.text) == (1, expected["text"])
