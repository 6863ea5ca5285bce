"""A crowd study cannot open without what its participants are paid by (issue 37): a
Prolific or MTurk study lacking its completion or screen-out code is refused at opening,
by the command, the API and the admin, in one line naming what is missing; the codes and
an owner are given at creation, so the README's path needs no separate step (its walk, to
Prolific's completion address, is run as written by tests/project/test_project_readme.py)."""

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import ConsentText, Study
from tests.staff import make_staff


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.mark.parametrize("platform", ["prolific", "mturk"])
def test_a_crowd_study_without_its_codes_is_refused_at_opening(db, platform):
    run("create_study", "wave", "--platform", platform, "--completion-code", "C0DE")
    run("consent", "--study", "wave", "--demo")
    with pytest.raises(CommandError) as refused:
        run("study_status", "wave", "open")
    message = str(refused.value)
    assert "\n" not in message and "cannot open without its screen-out code" in message
    assert "completion code" not in message.split("without")[1]  # only what is missing
    assert Study.objects.get(slug="wave").status == "draft"
    Study.objects.filter(slug="wave").update(completion_code="", screen_out_code="")
    with pytest.raises(CommandError, match="without its completion code and screen-out code"):
        run("study_status", "wave", "open")
    Study.objects.filter(slug="wave").update(completion_code="C0DE", screen_out_code="N0PE")
    assert run("study_status", "wave", "open").strip() == "study wave is open"


def test_a_study_on_no_crowd_platform_needs_no_code(db):
    run("create_study", "lab", "--owner", make_staff("lead").get_username())
    run("consent", "--study", "lab")  # the template it starts from: its version 1
    assert [t.version for t in ConsentText.objects.filter(study__slug="lab")] == [1]
    run("consent", "--study", "lab", "--demo")
    assert [t.version for t in ConsentText.objects.filter(study__slug="lab")] == [2, 1]
    assert run("study_status", "lab", "open").strip() == "study lab is open"


def test_the_api_and_the_admin_refuse_it_too_and_the_api_takes_the_codes(db):
    lead = make_staff("lead")
    api = APIClient()
    api.force_authenticate(lead)
    made = api.post(
        "/api/staff/studies/", {"slug": "api-wave", "platform": "prolific"}, format="json"
    )
    assert made.status_code == 201 and made.json()["completion_code"] == ""
    run("consent", "--study", "api-wave", "--demo")
    refused = api.post("/api/staff/studies/api-wave/transition/", {"status": "open"}, format="json")
    assert refused.status_code == 409
    assert "completion code and screen-out code" in refused.json()["detail"]
    browser = Client()
    browser.force_login(lead)
    study = Study.objects.get(slug="api-wave")
    page = browser.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "open_studies", "_selected_action": [study.pk]},
        follow=True,
    )
    assert "cannot open without its completion code" in page.content.decode()
    assert Study.objects.get(slug="api-wave").status == "draft"
    coded = api.post(
        "/api/staff/studies/",
        {
            "slug": "api-coded",
            "platform": "prolific",
            "completion_code": "C1A2B3C4",
            "screen_out_code": "NOCONSENT",
            "screen_out_url": "http://insecure.example",
        },
        format="json",
    )
    assert coded.status_code == 400 and "https://" in coded.content.decode()
    assert not Study.objects.filter(slug="api-coded").exists()
