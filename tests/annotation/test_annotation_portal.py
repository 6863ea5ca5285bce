"""The portal pages with Django's test client: gating, demographics, ranking."""

import json

from django.contrib.auth import get_user_model

from annotation import services
from annotation.models import ConsentText, DemographicField, Ranking


def test_pages_require_consent_then_rank(client, make_tasks):
    (task,) = make_tasks(1)
    ConsentText.objects.create(version=1, text="Consent text v1")
    DemographicField.objects.create(key="age_band", label="Age", choices=["25-34", "35-44"])
    user = get_user_model().objects.create_user("ann", password="pw-123456")
    client.force_login(user)
    assert client.get("/rank/").url == "/consent/"
    assert "Consent text v1" in client.get("/consent/").content.decode()
    assert client.post("/consent/", {"action": "agree"}).url == "/demographics/"
    page = client.get("/demographics/").content.decode()
    assert "Prefer not to say" in page
    assert client.post("/demographics/", {"age_band": "25-34"}).url == "/"
    assert services.get_profile(user).demographics == {"age_band": "25-34"}
    page = client.get("/rank/").content.decode()
    ids = list(task.task_items.values_list("item_id", flat=True))
    assert all(f'data-id="{i}"' in page for i in ids)
    bad = client.post(f"/rank/{task.pk}/", {"order": json.dumps(ids[:1])})
    assert bad.status_code == 400 and "exactly" in bad.content.decode()
    assert client.post(f"/rank/{task.pk}/", {"order": json.dumps(ids)}).url == "/rank/"
    assert Ranking.objects.get().order == ids
    assert "1</strong> of 20" in client.get("/").content.decode()


def test_signup_leads_to_consent(client, db):
    response = client.post("/signup/", {"username": "newbie", "password1": "a-Long-pass-42",
                                        "password2": "a-Long-pass-42"})
    assert response.url == "/consent/"
    assert client.get("/").url == "/consent/"
