"""What a public dataset release may hold, as a consent version says it (issue 42): "no"
unless a version says otherwise, published from a file with the other fields, checked, and
shown to the participant on the consent page in their language."""

from __future__ import annotations

import io
import json

import pytest
from crowd_fakes import FakeProlific
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.errors import InvalidAnswer
from annotation.models import ConsentText, DemographicField, Study
from annotation.participants import consent
from annotation.studies.lifecycle import default_study

pytestmark = pytest.mark.django_db
ALLOWED = {"release_rankings": True, "release_demographics": ["age_band"]}


@pytest.fixture
def fields(settings):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 7}
    nl = {"nl": {"label": "Leeftijdsgroep"}}
    DemographicField.objects.create(key="age_band", label="Age band", translations=nl)
    DemographicField.objects.create(key="religion", label="Religion")


def test_a_version_says_no_unless_it_says_otherwise(fields):
    study = default_study()
    before, _ = consent.publish(study, {"controller": "Lab"})
    assert before.release_terms() == {"rankings": False, "demographics": [], "free_text": False}
    after, created = consent.publish(study, ALLOWED)
    assert created and after.version == before.version + 1
    assert after.release_terms() == {"rankings": True, "demographics": ["age_band"],
                                     "free_text": False}  # fmt: skip
    assert after.controller == "Lab"  # the other fields carried over
    assert consent.publish(study, ALLOWED) == (after, False)  # nothing new


@pytest.mark.parametrize(
    "values, refusal",
    [
        ({"release_rankings": "yes"}, "true or false"),
        ({"release_rankings": True, "release_demographics": "age_band"}, "a list of"),
        ({"release_rankings": True, "release_demographics": ["shoe_size"]}, "shoe_size"),
        ({"release_demographics": ["age_band"]}, "only with the rankings"),
        ({"release_free_text": True}, "only with the rankings"),
        ({"release_everything": True}, "Unknown consent field"),
    ],
)
def test_a_bad_release_field_is_refused_and_nothing_written(fields, values, refusal):
    study = default_study()
    consent.publish(study, {"controller": "Lab"})
    count = ConsentText.objects.count()
    with pytest.raises(InvalidAnswer, match=refusal):
        consent.publish(study, values)
    assert ConsentText.objects.count() == count


def test_the_consent_command_publishes_and_shows_the_release_fields(fields, tmp_path):
    path = tmp_path / "consent.json"
    path.write_text(json.dumps({**ALLOWED, "release_free_text": False}))
    out = io.StringIO()
    call_command("consent", "--file", str(path), stdout=out)
    assert "a public release may hold: rankings yes; answers age_band; own words no" in (
        out.getvalue()
    )
    path.write_text(json.dumps({"release_rankings": 1}))
    with pytest.raises(CommandError, match="release_rankings: true or false"):
        call_command("consent", "--file", str(path), stdout=io.StringIO())


def test_the_consent_page_shows_what_a_release_may_hold(fields, portal_client):
    client = portal_client("reader", consent=False)
    page = client.get(reverse("portal:consent")).content.decode()
    assert 'id="consent-release-rankings"' in page and "Never published" in page
    assert "consent-release-answers" not in page  # nothing more to say when rankings stay
    consent.publish(default_study(), ALLOWED)
    page = client.get(reverse("portal:consent")).content.decode()
    assert "copies already downloaded cannot be reached" in page
    assert "at least 7 people in the dataset share: Age band." in page
    assert "Religion" not in page
    assert 'id="consent-release-own-words">Never published.' in page


def test_the_release_terms_read_in_the_participants_language(fields, make_tasks):
    study = Study.objects.create(
        slug="multi", name="Multi", platform=Study.Platform.PROLIFIC, completion_code="C0DE",
        screen_out_code="OUT", languages=["nl", "en"],
    )  # fmt: skip
    make_tasks(1, 3, study=study)
    text, _ = consent.publish(study, {**ALLOWED, "text": "Doe mee."}, language="nl")
    assert consent.released_answers(text, "nl") == ["Leeftijdsgroep"]
    assert consent.released_answers(text, None) == ["Age band"]
    link = FakeProlific(study.slug).link(FakeProlific.new_participant_id())
    page = Client(HTTP_ACCEPT_LANGUAGE="nl").get(link).content.decode()
    assert "Wat een openbare dataset mag bevatten" in page
    assert "minstens 7 mensen in de dataset delen: Leeftijdsgroep." in page
