"""The prompt checker page's gate and markup (the browser drives it in tests/browser)."""

from django.test import Client
from django.urls import reverse

from tests.scoring.helpers import scoring_user


def test_anonymous_visitors_are_sent_to_log_in(db):
    response = Client().get("/check/")
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('portal:login')}?next=/check/"


def test_annotators_are_refused_with_how_to_get_the_role(portal_client):
    response = portal_client("ann").get("/check/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "needs the scoring role" in html and "manage.py grant_scoring ann" in html
    assert 'id="check-form"' not in html and "check.js" not in html


def test_the_scoring_role_gets_the_form_with_its_limits(db, settings):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SCORING": {**settings.STEREORANK["SCORING"], "MAX_PROMPTS": 7, "MAX_CHARS": 99},
    }
    client = Client()
    client.force_login(scoring_user())
    html = client.get("/check/").content.decode()
    assert 'data-max-prompts="7"' in html and 'data-max-chars="99"' in html
    assert '<label for="prompts">' in html and 'id="check-status" role="status"' in html
    assert 'data-score-url="/api/score/"' in html and "scoring/check.js" in html
