"""A new consent version asks for consent again before the next task."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.assignment.next_task import next_task
from annotation.errors import ConsentRequired
from annotation.models import ConsentText
from annotation.participants import services
from annotation.rankings import selectors


def _consenting(name: str):
    profile = services.get_profile(get_user_model().objects.create_user(name, password="pw-1234"))
    services.give_consent(profile)
    return profile


@pytest.mark.django_db
def test_a_new_consent_version_blocks_the_next_task_until_agreed_again(make_tasks):
    make_tasks(3, 2)
    profile = _consenting("a")
    first = next_task(profile)
    services.submit_ranking(profile, first.task_id, first.shown_order)
    newest = ConsentText.objects.first()
    ConsentText.objects.create(version=newest.version + 1, text="Now also: erasure.")

    assert not selectors.has_consent(profile)
    with pytest.raises(ConsentRequired):
        next_task(profile)
    # the consent given to the earlier version still stands: its rankings count
    assert selectors.counted_rankings().filter(annotator=profile).count() == 1

    services.give_consent(profile)
    assert selectors.has_consent(profile)
    assert next_task(profile) is not None
    assert profile.consents.active().get().text.version == newest.version + 1


@pytest.mark.django_db
def test_portal_sends_an_annotator_back_to_consent_with_the_reason(portal_client, make_tasks):
    make_tasks(2, 2)
    client = portal_client("p")
    assert client.get(reverse("portal:rank")).status_code == 200
    ConsentText.objects.create(version=ConsentText.objects.first().version + 1, text="Version two.")
    response = client.get(reverse("portal:rank"))
    assert response.status_code == 302 and response.url == reverse("portal:consent")
    page = client.get(reverse("portal:consent")).content.decode()
    assert "Version two." in page and "has changed" in page
    client.post(reverse("portal:consent"), {"action": "agree"})
    assert client.get(reverse("portal:rank")).status_code == 200
