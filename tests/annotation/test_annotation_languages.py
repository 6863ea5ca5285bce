"""A participant's language (issue 39): chosen by the entry link's ``lang``, their earlier
choice, the browser's Accept-Language among the study's languages, then the study's
default; kept on the participation, recorded with each ranking and exported; Arabic right
to left; a study's languages refused in one line when a catalogue is missing."""

from __future__ import annotations

import io
import json
import re

import pytest
from crowd_fakes import FakeProlific, join
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Ranking, Study
from annotation.models.studies import Participation
from annotation.portal.languages import choose
from annotation.rankings.exports import pair_rows, ranking_rows


@pytest.mark.parametrize(
    "requested, kept, accept, expected",
    [
        ("ar", "nl", "nl", "ar"),  # the link's lang first
        ("xx", "", "nl-BE,nl;q=0.9,en;q=0.5", "nl"),  # unknown: the browser's, by primary tag
        ("de", "", "de,fr;q=0.8", "nl"),  # not offered, nothing the browser asks: the default
        ("", "ar", "nl", "ar"),  # the earlier choice before the browser's
        ("", "", "fr,en;q=0.3", "en"),  # the first offered the browser accepts
        ("", "", "", "nl"),
    ],
)
def test_the_order_of_choice(requested, kept, accept, expected):
    assert choose(requested, kept, accept, ["nl", "en", "ar"]) == expected


@pytest.fixture
def study(db, make_tasks):
    study = Study.objects.create(
        slug="multi",
        name="Multi",
        platform=Study.Platform.PROLIFIC,
        completion_code="C0DE",
        screen_out_code="OUT",
        languages=["nl", "en", "ar"],
    )
    make_tasks(2, 3, study=study)
    return study


def _html(response) -> str:
    return response.content.decode()


def test_a_dutch_browser_reads_the_path_in_dutch_and_ranks_in_it(study):
    link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    browser = Client(HTTP_ACCEPT_LANGUAGE="nl-NL,nl;q=0.9")
    consent = browser.get(link)
    page = _html(consent)
    assert '<html lang="nl" dir="ltr">' in page and "Ik stem in" in page
    assert consent["Content-Language"] == "nl"
    # the switch: every language named in itself, the crowd ids kept in each link
    names = re.findall(r'<a href="([^"]+)" lang="(\w+)" hreflang="\w+"[^>]*>([^<]+)</a>', page)
    assert [(code, name) for _, code, name in names] == [
        ("nl", "Nederlands"),
        ("en", "English"),
        ("ar", "العربية"),
    ]
    assert all("PROLIFIC_PID=" in href and f"lang={code}" in href for href, code, _ in names)
    assert join(browser, link).status_code == 302
    participation = Participation.objects.get(study=study)
    assert participation.language == "nl"
    home = _html(browser.get(reverse("portal:home")))
    assert "Uw voortgang" in home and "Beginnen met rangschikken" in home
    assignment = browser.get(reverse("portal:rank")).context["assignment"]
    order = ",".join(map(str, assignment.shown_order))
    browser.post(reverse("portal:rank"), {"task_id": assignment.task_id, "order": order})
    assert Ranking.objects.get().language == "nl"
    (row,) = ranking_rows(include_synthetic=True, study=study)
    assert row["portal_language"] == "nl"
    pairs = list(pair_rows(include_synthetic=True, study=study))
    assert {p["portal_language"] for p in pairs} == {"nl"}
    # it says something of a person: only where their answers may go
    (row,) = ranking_rows(include_synthetic=True, study=study, demographics=False)
    assert "portal_language" not in row


def test_lang_ar_reads_right_to_left_and_the_switch_keeps_the_choice(study):
    prolific = FakeProlific(study.slug)
    link = prolific.link(prolific.new_participant_id())
    browser = Client(HTTP_ACCEPT_LANGUAGE="nl")
    page = _html(browser.get(link + "&lang=ar"))
    assert '<html lang="ar" dir="rtl">' in page and "أوافق" in page
    assert join(browser, link + "&lang=ar").status_code == 302
    assert Participation.objects.get().language == "ar"
    # without lang, the kept choice wins over the browser's Dutch
    assert '<html lang="ar" dir="rtl">' in _html(browser.get(reverse("portal:home")))
    # the switch moves it to English, and it stays
    assert "Your progress" in _html(browser.get(reverse("portal:home") + "?lang=en"))
    assert Participation.objects.get().language == "en"
    assert '<html lang="en" dir="ltr">' in _html(browser.get(reverse("portal:consent")))
    # an unknown or unoffered lang is no error: the kept choice stands
    for value in ("xx", "de", "<script>"):
        response = browser.get(reverse("portal:home") + f"?lang={value}")
        assert response.status_code == 200 and '<html lang="en"' in _html(response)


def test_staff_pages_stay_english(study, settings):
    from tests.staff import make_staff

    staff = Client(HTTP_ACCEPT_LANGUAGE="nl")
    staff.force_login(make_staff("lead", study))
    page = staff.get(reverse("dashboards:progress"))
    assert page.status_code == 200 and "Content-Language" not in page


def test_create_study_takes_languages_and_refuses_one_without_a_catalogue(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_study", "wave-nl", "--languages", "nl,en", stdout=out, stderr=err)
    assert Study.objects.get(slug="wave-nl").languages == ["nl", "en"]
    assert "the nl catalogue is unreviewed" in err.getvalue()
    with pytest.raises(CommandError) as refused:
        call_command("create_study", "wave-xx", "--languages", "en,xx", stdout=io.StringIO())
    message = str(refused.value)
    assert "\n" not in message and "xx" in message and "en, nl, ar" in message
    assert not Study.objects.filter(slug="wave-xx").exists()


def test_the_staff_api_takes_languages(db):
    from rest_framework.test import APIClient

    from tests.staff import make_staff

    api = APIClient()
    api.force_authenticate(make_staff("lead"))
    made = api.post("/api/staff/studies/", {"slug": "api-ar", "languages": ["ar"]}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["languages"] == ["ar"]
    bad = api.post("/api/staff/studies/", {"slug": "api-x", "languages": ["zz"]}, format="json")
    assert bad.status_code == 400 and "zz" in json.dumps(bad.json())
    assert not Study.objects.filter(slug="api-x").exists()


def test_the_quality_report_groups_by_language_under_the_small_group_rule(
    db, make_tasks, annotator, store_ranking, settings
):
    from annotation.quality.report import quality_report

    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.0, "GROUP_K": 2}
    tasks = make_tasks(2, 3, overlap=5)
    speakers = {"ann": "nl", "ben": "nl", "cat": "ar"}  # two Dutch, one Arabic
    for name, language in speakers.items():
        profile = annotator(name).profile
        for task in tasks:
            items = list(task.items.order_by("id").values_list("id", flat=True))
            store_ranking(profile, task, items)
        Ranking.objects.filter(annotator=profile).update(language=language)
    agreement = quality_report(n_boot=0)["agreement"]
    # the Dutch pair is a group of 2 (k): shown; the lone Arabic reader is hidden, counted
    assert set(agreement["within_groups"]["portal_language"]) == {"nl"}
    assert agreement["hidden_groups"]["portal_language"] == 1


def test_no_language_outlives_its_request_or_reaches_other_pages(study, db):
    """From an attack review: the language is the portal's only, for one request."""
    from django.contrib.sessions.models import Session
    from django.utils import translation

    link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    browser = Client(HTTP_ACCEPT_LANGUAGE="nl")
    assert "Ik stem in" in _html(browser.get(link + "&lang=nl"))
    assert translation.get_language() == "en-us" or translation.get_language() == "en"
    assert not Session.objects.exists()  # an anonymous choice lives in the URL, not a session
    join(browser, link + "&lang=nl")
    admin = _html(browser.get("/admin/login/"))
    assert '<html lang="en"' in admin and "Gebruikersnaam" not in admin
    health = browser.get("/healthz")
    assert "Content-Language" not in health
    missing = browser.get("/join/no-such-study/?pid=x")
    assert missing.status_code == 404 and '<html lang="en"' in _html(missing)
    assert "Content-Language" not in missing


def test_another_studys_link_reads_in_that_studys_languages(study, db, make_tasks):
    """A participant of one study who opens another's link: that study's languages, and
    their own participation keeps its language."""
    english_only = Study.objects.create(
        slug="english-only", name="E", platform=Study.Platform.PROLIFIC, languages=["en"]
    )
    make_tasks(1, 3, study=english_only)
    browser = Client()
    join(browser, FakeProlific(english_only.slug).link(FakeProlific.new_participant_id()))
    mine = Participation.objects.get(study=english_only)
    other = FakeProlific(study.slug).link(FakeProlific.new_participant_id()) + "&lang=ar"
    page = _html(browser.get(other))
    assert '<html lang="ar" dir="rtl">' in page and 'id="languages"' in page
    mine.refresh_from_db()
    assert mine.language == "en"


def test_the_participant_api_answers_in_the_participant_language(study):
    """A refusal of the participant API (a bad order, a field DRF finds missing) is in the
    language of the participant's participation; without one, English."""
    from rest_framework.test import APIClient

    from annotation.accounts import tokens

    answers, clients = {}, {}
    for n, accept in enumerate(("nl", "en")):
        browser = Client(HTTP_ACCEPT_LANGUAGE=accept, REMOTE_ADDR=f"203.0.113.{40 + n}")
        link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
        join(browser, link)
        user = Participation.objects.filter(study=study).latest("started_at").annotator.user
        api = clients[accept] = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {tokens.issue(user)[1]}")
        task = api.post("/api/tasks/next/").json()
        bad = api.post(f"/api/tasks/{task['id']}/ranking/", {"order": [0]}, format="json")
        lacking = api.post(f"/api/tasks/{task['id']}/ranking/", {}, format="json")
        assert (bad.status_code, lacking.status_code) == (400, 400)
        answers[accept] = (bad.json()["detail"], lacking.content.decode())
    assert answers["nl"][0].startswith("De volgorde moet precies de 3 items van deze taak")
    assert "ontbrekende items" in answers["nl"][0]
    assert answers["en"][0].startswith("The order must rank exactly this task's 3 items")
    assert "Dit veld is vereist" in answers["nl"][1]  # DRF's own message, its catalogue's
    # The Dutch participant's language stays with their request: the next caller on the
    # same thread, who is nobody, is refused in English.
    assert clients["nl"].post("/api/tasks/next/").status_code == 200
    refused = APIClient().post("/api/tasks/next/")
    assert refused.status_code == 403, refused.content
    assert refused.json()["detail"] == "Authentication credentials were not provided."
    assert "This field is required" in answers["en"][1]
