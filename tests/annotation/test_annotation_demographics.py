"""Demographics: answers in one's own words, choices edited one a line, the API."""

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from annotation.admin import DemographicFieldForm
from annotation.catalogue.loading import load_catalogue
from annotation.errors import InvalidAnswer
from annotation.models import ConsentText, DemographicField
from annotation.participants import services

PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY


@pytest.fixture
def gender(db):
    return DemographicField.objects.create(
        key="gender",
        label="Gender identity",
        choices=["woman", "man", "non-binary"],
        allow_other=True,
    )


def _profile(name="d"):
    profile = services.get_profile(get_user_model().objects.create_user(name))
    services.give_consent(profile)
    return profile


def test_own_words_where_allowed_choices_in_their_own_spelling(gender):
    age = DemographicField.objects.create(key="age", label="Age", choices=["18-24"])
    profile = _profile()
    services.save_demographics(profile, {"gender": "  genderfluid ", "age": "18-24"})
    assert profile.demographics == {"gender": "genderfluid", "age": "18-24"}
    services.save_demographics(profile, {"gender": "Non-Binary", "age": "Prefer Not To Say"})
    assert profile.demographics == {"gender": "non-binary", "age": PREFER_NOT}
    with pytest.raises(InvalidAnswer, match="not one of the options for Age"):
        services.save_demographics(profile, {"age": "19"})  # no own words here
    with pytest.raises(InvalidAnswer, match="at most 200"):
        services.save_demographics(profile, {"gender": "x" * 201})
    assert age.allow_other is False


def test_the_catalogue_gender_question_takes_own_words(db):
    load_catalogue()
    field = DemographicField.objects.get(key="gender_identity")
    assert field.allow_other and field.choices
    profile = _profile()
    services.save_demographics(profile, {"gender_identity": "two-spirit"})
    assert profile.demographics["gender_identity"] == "two-spirit"


def test_portal_form_offers_other_with_a_text_box(gender, portal_client):
    client = portal_client("p")
    page = client.get(reverse("portal:demographics")).content.decode()
    assert "other (in my own words)" in page and 'name="gender__other"' in page
    # "other" without words: said so, nothing saved
    response = client.post(reverse("portal:demographics"), {"gender": "__other__"})
    assert response.status_code == 200
    assert "Describe it in your own words" in response.content.decode()
    client.profile.refresh_from_db()
    assert client.profile.demographics == {}
    client.post(reverse("portal:demographics"), {"gender": "__other__", "gender__other": "agender"})
    client.profile.refresh_from_db()
    assert client.profile.demographics == {"gender": "agender"}
    # shown back as "other" with the words in the box
    form = client.get(reverse("portal:demographics")).context["form"]
    assert form.initial == {"gender": "__other__", "gender__other": "agender"}
    # a listed choice wins over stray words
    client.post(reverse("portal:demographics"), {"gender": "woman", "gender__other": "x"})
    client.profile.refresh_from_db()
    assert client.profile.demographics == {"gender": "woman"}


def test_admin_edits_choices_one_a_line(db):
    data = {
        "key": "region",
        "label": "Region",
        "help_text": "",
        "choices": "North\n\n  South  \r\nEast\n",
        "order": 1,
        "active": True,
    }
    form = DemographicFieldForm(data)
    assert form.is_valid(), form.errors
    field = form.save()
    assert field.choices == ["North", "South", "East"]
    assert DemographicFieldForm(instance=field)["choices"].value() == "North\nSouth\nEast"
    for choices, message in [
        ("A\na", "only once"),
        ("A\nPrefer not to say", "always offered"),
    ]:
        form = DemographicFieldForm({**data, "key": "k2", "choices": choices})
        assert not form.is_valid() and message in str(form.errors["choices"])
    with pytest.raises(ValidationError, match="free text already"):
        DemographicField(key="k3", label="K", choices=[], allow_other=True).full_clean()


def test_admin_page_shows_the_text_box(gender, admin_client):
    page = admin_client.get(f"/admin/annotation/demographicfield/{gender.pk}/change/")
    html = page.content.decode()
    assert "<textarea" in html and "woman\nman\nnon-binary" in html


def test_api_reads_and_updates_my_demographics(gender, annotator):
    DemographicField.objects.create(key="country", label="Country")
    api = annotator("api")
    url = reverse("api-demographics")
    body = api.get(url).json()
    assert body["demographics"] == {}
    assert {q["key"]: q["allow_other"] for q in body["questions"]} == {
        "gender": True,
        "country": False,
    }
    response = api.put(url, {"demographics": {"gender": "woman", "country": "Wales"}}, "json")
    assert response.status_code == 200 and response.json()["demographics"] == {
        "gender": "woman",
        "country": "Wales",
    }
    # PATCH changes the answers given and keeps the rest; a blank removes one
    response = api.patch(url, {"demographics": {"country": ""}}, "json")
    assert response.json()["demographics"] == {"gender": "woman"}
    response = api.patch(url, {"demographics": {"gender": "agender"}}, "json")
    assert response.json()["demographics"] == {"gender": "agender"}
    # bad input: a clear 400, nothing changed
    response = api.patch(url, {"demographics": {"shoe_size": "9"}}, "json")
    assert response.status_code == 400 and "shoe_size" in response.json()["detail"]
    assert api.put(url, {"demographics": "woman"}, "json").status_code == 400
    api.profile.refresh_from_db()
    assert api.profile.demographics == {"gender": "agender"}


def test_api_demographics_need_a_standing_consent_to_write_and_a_login(gender, annotator):
    url = reverse("api-demographics")
    assert Client().get(url).status_code in (401, 403)
    api = annotator("nocon", consent=False)
    assert api.get(url).status_code == 200  # one's own data can always be read
    response = api.put(url, {"demographics": {"gender": "man"}}, "json")
    assert response.status_code == 403
    consented = annotator("old-version")
    assert consented.patch(url, {"demographics": {"gender": "man"}}, "json").status_code == 200
    ConsentText.objects.create(version=99, text="new")
    assert consented.patch(url, {"demographics": {"gender": "man"}}, "json").status_code == 403


def test_schema_documents_my_demographics(admin_client):
    schema = admin_client.get("/api/schema/").content.decode()
    assert "/api/me/demographics/" in schema and "allow_other" in schema
    assert "/api/me/erasure/" in schema
