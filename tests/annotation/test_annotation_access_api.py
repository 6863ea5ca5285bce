"""Who may see what through the staff API (issue 30): the members and access-log API
(owners only), exports with and without the demographics permission (each logged), a
study created through the API owned by its maker, a viewer's aggregate-only reports.
Each door tried as the wrong member: another study's owner, a researcher, a viewer."""

import json

import pytest
from rest_framework.test import APIClient

from annotation.access.models import AccessLogEntry, StudyMembership
from annotation.models import DemographicField, Study
from annotation.participants import services
from tests.staff import make_staff

pytestmark = pytest.mark.django_db


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def study_a(make_tasks, annotator, store_ranking):
    """Study alpha with one ranking by an annotator who answered a demographic question."""
    study = Study.objects.create(slug="alpha", name="Alpha", platform="generic")
    DemographicField.objects.create(key="country", label="Country", allow_other=True)
    (task,) = make_tasks(1, k=3, study=study)
    ann = annotator("ann").profile
    ann.study = study
    ann.save()
    services.save_demographics(ann, {"country": "Atlantis-only-ann"})
    store_ranking(ann, task, [link.item_id for link in task.task_items.all()])
    return study


def test_owners_manage_members_and_no_one_else(study_a):
    owner = _client(make_staff("own", study_a, role="owner"))
    researcher = _client(make_staff("res", study_a, role="researcher"))
    stranger = _client(make_staff("stranger", Study.objects.create(slug="b", name="B")))
    make_staff("newbie", study_a, role="viewer")
    url = "/api/staff/studies/alpha/members/"

    listed = owner.get(url).json()
    assert [m["username"] for m in listed] == ["own", "res", "newbie"]
    assert researcher.get(url).status_code == 403  # a member, not an owner
    assert stranger.get(url).status_code == 404  # not a member: no such study for them
    assert stranger.get("/api/staff/studies/no-such/members/").json() == stranger.get(url).json()

    grant = {"username": "newbie", "role": "researcher", "demographics": True}
    assert researcher.post(url, grant, format="json").status_code == 403
    changed = owner.post(url, grant, format="json")
    assert changed.status_code == 200 and changed.json()["demographics"] is True
    assert changed.json()["granted_by"] == "own"
    refused = owner.post(url, {**grant, "role": "viewer"}, format="json")
    assert refused.status_code == 400 and "aggregate reports only" in refused.json()["detail"]
    unknown = owner.post(url, {**grant, "username": "ghost"}, format="json")
    assert unknown.status_code == 404
    assert owner.delete(f"{url}newbie/").status_code == 204
    assert owner.delete(f"{url}newbie/").status_code == 404
    assert researcher.delete(f"{url}own/").status_code == 403
    last = owner.delete(f"{url}own/")
    assert last.status_code == 400 and "last owner" in last.json()["detail"]


def test_an_export_without_the_demographics_permission_has_no_answers(study_a):
    plain = _client(make_staff("res", study_a, role="researcher", demographics=False))
    allowed = _client(make_staff("demo", study_a, role="researcher", demographics=True))
    for client in (plain, allowed):
        assert client.get("/api/export/rankings/?study=alpha").status_code == 200
    rows = b"".join(plain.get("/api/export/rankings/?study=alpha").streaming_content)
    (row,) = [json.loads(line) for line in rows.decode().splitlines()]
    assert "demographics" not in row and "Atlantis" not in rows.decode()
    csv = b"".join(plain.get("/api/export/rankings/?study=alpha&format=csv").streaming_content)
    assert "country" not in csv.decode().splitlines()[0] and "Atlantis" not in csv.decode()
    pairs = b"".join(plain.get("/api/export/pairs/?study=alpha").streaming_content).decode()
    assert pairs and "demographics" not in pairs and "Atlantis" not in pairs
    rows = b"".join(allowed.get("/api/export/rankings/?study=alpha").streaming_content)
    assert json.loads(rows.decode().splitlines()[0])["demographics"] == {
        "country": "Atlantis-only-ann"
    }
    # each export is in the study's access log, with or without demographics
    whats = list(AccessLogEntry.objects.order_by("id").values_list("username", "what"))
    assert whats[0] == ("res", "rankings export (jsonl, without demographics)")
    assert ("demo", "rankings export (jsonl, with demographics)") in whats
    assert ("res", "pairs export (jsonl, without demographics)") in whats


def test_exports_of_another_study_and_for_a_viewer_are_refused(study_a):
    viewer = _client(make_staff("view", study_a, role="viewer"))
    stranger = _client(make_staff("stranger", Study.objects.create(slug="b", name="B")))
    assert viewer.get("/api/export/rankings/?study=alpha").status_code == 403
    for path in ("/api/export/rankings/?study=alpha", "/api/export/pairs/?study=alpha"):
        refused = stranger.get(path)
        assert refused.status_code == 404 and refused.json() == {"detail": "Not found."}
    assert not AccessLogEntry.objects.exists()


def test_the_access_log_is_for_the_studys_owners(study_a):
    owner = _client(make_staff("own", study_a))
    researcher = _client(make_staff("res", study_a, role="researcher"))
    researcher.get("/api/export/rankings/?study=alpha")
    entries = owner.get("/api/staff/studies/alpha/access-log/").json()["results"]
    assert [(e["username"], e["action"], e["surface"]) for e in entries] == [
        ("res", "export", "api")
    ]
    assert researcher.get("/api/staff/studies/alpha/access-log/").status_code == 403
    outsider = _client(make_staff("out", Study.objects.create(slug="b", name="B")))
    assert outsider.get("/api/staff/studies/alpha/access-log/").status_code == 404


def test_a_study_made_through_the_api_is_owned_by_its_maker(study_a):
    lab = make_staff("lab", study_a, role="researcher")
    made = _client(lab).post("/api/staff/studies/", {"slug": "wave-9"}, format="json")
    assert made.status_code == 201
    (membership,) = StudyMembership.objects.filter(study__slug="wave-9")
    assert (membership.user, membership.role) == (lab, "owner")
    listed = [s["slug"] for s in _client(lab).get("/api/staff/studies/").json()]
    assert sorted(listed) == ["alpha", "wave-9"]  # not the default study: no role there


def test_a_viewer_reads_the_aggregates_without_the_annotator_table(study_a):
    from annotation.quality import store

    store.refresh(False, 0, study_a)  # the stored report, as the worker makes it
    viewer = _client(make_staff("view", study_a, role="viewer"))
    researcher = _client(make_staff("res", study_a, role="researcher"))
    seen = viewer.get("/api/staff/quality/?study=alpha&n_boot=0").json()
    assert seen["n_rankings"] == 1 and seen["annotators"] == []
    full = researcher.get("/api/staff/quality/?study=alpha&n_boot=0").json()
    assert len(full["annotators"]) == 1
    assert viewer.get("/api/staff/rankings/").json()["count"] == 0  # rows: none
    assert researcher.get("/api/staff/rankings/").json()["count"] == 1
