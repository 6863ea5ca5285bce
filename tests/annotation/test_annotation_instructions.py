"""Instructions (versioned, staff-edited, the catalogue's wording by default) and the
practice task, whose orders are checked against the reference and never stored."""

import json

import pytest
from django.urls import reverse

from annotation.catalogue.loading import load_catalogue, read_catalogue
from annotation.models import Assignment, Instructions, Item, RankedItem, Ranking
from annotation.models.studies import default_study_pk
from annotation.portal.practice import REFERENCE_TYPES, practice_task


@pytest.fixture
def two_occupations(db, media_root, tmp_path):
    """The catalogue's first two occupations, one placeholder image per prompt."""
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:2]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=1, path=path)
    return catalogue


def test_the_instructions_page_shows_the_catalogues_wording_until_staff_publish_another(
    portal_client,
):
    entry = read_catalogue()["instructions"]
    client = portal_client()
    page = client.get(reverse("portal:instructions")).content.decode()
    assert f"Instructions, version {entry['version']}" in page
    first_paragraph = entry["text"].split("\n\n")[0]
    assert first_paragraph in page
    assert "Worked example" in entry["text"]
    Instructions.objects.create(version=entry["version"] + 1, text="Newer wording.\n\nTwo.")
    page = client.get(reverse("portal:instructions")).content.decode()
    assert "<p>Newer wording.</p>" in page and first_paragraph not in page


def test_loading_the_catalogue_stores_its_instructions_once(two_occupations, tmp_path):
    load_catalogue(path=tmp_path / "catalogue.json")  # a second time
    assert list(Instructions.objects.values_list("version", flat=True)) == [
        two_occupations["instructions"]["version"]
    ]


def test_staff_publish_a_new_version_in_the_admin(client, django_user_model, portal_client):
    staff = django_user_model.objects.create_superuser("admin", password="pw-123456")
    client.force_login(staff)
    response = client.post(
        reverse("admin:annotation_instructions_add"),
        {"study": default_study_pk(), "language": "en", "version": 7, "text": "Seventh version."},
    )
    assert response.status_code == 302
    page = portal_client().get(reverse("portal:instructions")).content.decode()
    assert "Instructions, version 7" in page and "Seventh version." in page


def test_home_offers_the_instructions_before_the_first_task_only(portal_client):
    client = portal_client()
    assert b'id="read-instructions"' in client.get(reverse("portal:home")).content
    client.get(reverse("portal:instructions"))
    assert b'id="read-instructions"' not in client.get(reverse("portal:home")).content


def test_the_practice_task_has_one_item_per_prompt_type_shown_out_of_order(two_occupations):
    task = practice_task()
    first = min(o["name"] for o in two_occupations["occupations"])
    assert task.occupation.name == first
    assert [i.prompt.prompt_type for i in task.reference] == REFERENCE_TYPES
    assert all(i.prompt.origin_id is None for i in task.reference)
    assert [i.pk for i in task.shown] != [i.pk for i in task.reference]
    assert sorted(i.pk for i in task.shown) == sorted(i.pk for i in task.reference)


def _counts() -> tuple[int, int, int]:
    return Ranking.objects.count(), RankedItem.objects.count(), Assignment.objects.count()


def test_practice_feedback_is_checked_against_the_reference_and_never_stored(
    two_occupations, portal_client
):
    task = practice_task()
    stereo, neutral, diverse = (i.pk for i in task.reference)
    client = portal_client(consent=False)  # practice needs no consent: nothing is kept
    before = _counts()
    page = client.get(reverse("portal:practice")).content.decode()
    assert page.count('class="rank-card"') == 3
    assert f'value="{diverse},{stereo},{neutral}"' in page  # shown: the last type first

    # Worked by hand: [S, D, N] against the reference [S, N, D] has S in place only.
    response = client.post(reverse("portal:practice"), {"order": f"{stereo},{diverse},{neutral}"})
    html = response.content.decode()
    assert "1 of 3 images are where the reference puts them." in html
    assert html.count('class="in-place"') == 1 and html.count('class="moved"') == 2
    assert f'value="{stereo},{diverse},{neutral}"' in html  # the cards keep the chosen order

    response = client.post(reverse("portal:practice"), {"order": f"{stereo},{neutral},{diverse}"})
    assert "Your order matches the reference." in response.content.decode()
    assert _counts() == before == (0, 0, 0)


@pytest.mark.parametrize("order", ["", "1,2", "x,y,z"])
def test_a_bad_practice_order_is_refused_readably(two_occupations, portal_client, order):
    response = portal_client().post(reverse("portal:practice"), {"order": order})
    html = response.content.decode()
    assert response.status_code == 200 and 'class="message error"' in html
    assert "feedback-h" not in html and Ranking.objects.count() == 0


def test_practice_without_items_says_so(portal_client):
    assert not Item.objects.exists()
    page = portal_client().get(reverse("portal:practice")).content.decode()
    assert "No practice task is available yet." in page
