"""Contract details: consent withdrawal through the API, query flags, throttling
scopes, and the export command's refusals."""

import io
import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle

from annotation.models import Assignment, Ranking
from annotation.rankings.exports import pseudonym


def rank(client) -> dict:
    task = client.post("/api/tasks/next/").json()
    order = [i["id"] for i in task["items"]]
    response = client.post(f"/api/tasks/{task['id']}/ranking/", {"order": order}, format="json")
    assert response.status_code == 201
    return task


def export(staff, query: str = "") -> list[dict]:
    response = staff.get(f"/api/export/rankings/?format=jsonl{query}")
    assert response.status_code == 200
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_consent_withdrawal_through_the_api(make_tasks, annotator):
    make_tasks(3)
    alice = annotator("alice")
    rank(alice)
    reserved = alice.post("/api/tasks/next/").json()
    staff = annotator("boss", staff=True)
    assert [r["annotator"] for r in export(staff)] == [pseudonym(alice.profile.user_id)]

    assert alice.delete("/api/me/consent/").status_code == 204
    assert alice.get("/api/me/").json()["consent"] is False
    refused = alice.post("/api/tasks/next/")
    assert refused.status_code == 403 and "consent" in refused.json()["detail"].lower()
    order = [i["id"] for i in reserved["items"]]
    response = alice.post(f"/api/tasks/{reserved['id']}/ranking/", {"order": order}, format="json")
    assert response.status_code == 403
    assert not Assignment.objects.filter(annotator=alice.profile).exists()
    assert Ranking.objects.count() == 1, "the stored ranking stays, but is not exported"
    assert export(staff) == []

    assert alice.post("/api/me/consent/").status_code == 201
    assert alice.post("/api/tasks/next/").status_code == 200
    assert len(export(staff)) == 1


def test_export_flags_are_validated(make_tasks, annotator):
    make_tasks(2)
    rank(annotator("robot", synthetic=True))
    staff = annotator("boss", staff=True)
    assert export(staff) == []
    assert len(export(staff, "&include_synthetic=true")) == 1
    assert export(staff, "&include_synthetic=false") == []
    response = staff.get("/api/export/rankings/?include_synthetic=perhaps")
    assert response.status_code == 400 and "include_synthetic" in response.json()["detail"]


@pytest.fixture
def strict_throttles(settings, monkeypatch, request):
    """Two requests a minute per scope, counted in a private local-memory cache (its own
    LOCATION: on SQLite the default cache is local memory too, shared with other tests)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"throttles-{request.node.name}",
        }
    }
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"auth": "2/min", "submit": "2/min"})


def test_auth_endpoint_is_throttled(annotator, strict_throttles):
    annotator("ann")
    client = APIClient()
    statuses = [
        client.post("/api/auth/token/", {"username": "ann", "password": "wrong"}).status_code
        for _ in range(3)
    ]
    assert statuses == [400, 400, 429]


def test_submit_is_throttled_but_next_task_is_not(make_tasks, annotator, strict_throttles):
    make_tasks(1)
    client = annotator("ann")
    task = client.post("/api/tasks/next/").json()
    url = f"/api/tasks/{task['id']}/ranking/"
    statuses = [client.post(url, {"order": "bad"}, format="json").status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
    assert client.post("/api/tasks/next/").status_code == 200


def test_bad_login_is_a_readable_400(annotator):
    annotator("ann")
    response = APIClient().post("/api/auth/token/", {"username": "ann", "password": "nope"})
    assert response.status_code == 400
    assert "credentials" in json.dumps(response.json()).lower()


def test_export_command_refuses_a_missing_folder_and_replaces_atomically(
    make_tasks, annotator, tmp_path
):
    make_tasks(1)
    rank(annotator("alice"))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("export_rankings", "--out", str(tmp_path / "nowhere" / "x.jsonl"))
    out = tmp_path / "rankings.jsonl"
    out.write_text("old contents\n")
    call_command("export_rankings", "--out", str(out), stdout=io.StringIO())
    assert json.loads(out.read_text())["task"] and "old contents" not in out.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["rankings.jsonl"], "no temporary left"
