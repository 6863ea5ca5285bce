"""The admin and a person's data (found by the attack review): no changelist lookup
through their answers, and their rows leave only through erasure, which leaves nothing."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import AnnotatorProfile, Erasure, Ranking
from annotation.participants import services
from tests.staff import make_staff

pytestmark = pytest.mark.django_db

PROFILES = reverse("admin:annotation_annotatorprofile_changelist")


@pytest.fixture
def alice(annotator, make_tasks, store_ranking):
    profile = annotator("alice").profile
    services.save_demographics(profile, {})
    AnnotatorProfile.objects.filter(pk=profile.pk).update(demographics={"country": "Atlantis"})
    (task,) = make_tasks(1, k=3)
    store_ranking(profile, task, list(task.task_items.values_list("item_id", flat=True)))
    return profile


def _as(role: str, demographics: bool) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(make_staff(f"{role}-{demographics}", role=role, demographics=demographics))
    return client


@pytest.mark.parametrize("demographics", [False, True])
@pytest.mark.parametrize(
    "lookup",
    ["demographics__country", "demographics__country__startswith", "demographics__icontains"],
)
def test_no_changelist_lookup_reads_the_answers(alice, lookup, demographics):
    client = _as("owner", demographics)
    assert client.get(PROFILES).status_code == 200
    probe = client.get(PROFILES, {lookup: "Atlan" if "contains" in lookup else "A"})
    assert probe.status_code == 400 and b"alice" not in probe.content


def test_a_person_is_erased_from_the_admin_never_deleted(alice):
    client = _as("researcher", False)
    delete = reverse("admin:annotation_annotatorprofile_delete", args=[alice.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    ranking = Ranking.objects.get(annotator=alice)
    assert (
        client.post(
            reverse("admin:annotation_ranking_delete", args=[ranking.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert AnnotatorProfile.objects.filter(pk=alice.pk, erased_at__isnull=True).exists()

    action = {"action": "erase_selected", "_selected_action": [alice.pk]}
    assert client.post(PROFILES, action).status_code == 302
    alice.refresh_from_db()
    assert alice.erased_at is not None and alice.demographics == {}
    assert not Ranking.objects.filter(annotator=alice).exists()
    assert Erasure.objects.get().via == Erasure.Via.STAFF
