"""The staff read-only API: access, shapes, filters, constant query counts, and no
annotator reading another's rankings or demographics anywhere in the API."""

import re

import pytest
import yaml
from rest_framework.test import APIClient

from annotation.models import Occupation, Prompt, PromptType, Ranking
from annotation.rankings.exports import pseudonym
from tests.schema_helpers import served_schema

STAFF_LISTS = [
    "/api/staff/occupations/",
    "/api/staff/items/",
    "/api/staff/tasks/",
    "/api/staff/rankings/",
]


def rank_one(client) -> dict:
    """Ask for the next task and submit it reversed; the task as served."""
    task = client.post("/api/tasks/next/").json()
    order = [i["id"] for i in task["items"]][::-1]
    assert (
        client.post(
            f"/api/tasks/{task['id']}/ranking/", {"order": order}, format="json"
        ).status_code
        == 201
    )
    return task


@pytest.mark.parametrize("path", STAFF_LISTS)
def test_annotators_get_403_and_anonymous_401(make_tasks, annotator, path):
    (task,) = make_tasks(1)
    client = annotator("ann")
    assert client.get(path).status_code == 403
    assert client.get(f"{path}{task.pk}/").status_code == 403
    assert APIClient().get(path).status_code in (401, 403)


def test_staff_read_shapes(make_tasks, annotator):
    tasks = make_tasks(2, k=3, overlap=2)
    alice = annotator("alice")
    served = rank_one(alice)
    staff = annotator("boss", staff=True)

    occupations = staff.get("/api/staff/occupations/").json()
    assert occupations["count"] == 1
    (nurse,) = occupations["results"]
    assert nurse["slug"] == "nurse" and len(nurse["prompts"]) == 1 + 6
    assert {p["prompt_type"] for p in nurse["prompts"]} == {"neutral"}
    assert sum(p["origin"] is None for p in nurse["prompts"]) == 1

    items = staff.get("/api/staff/items/").json()
    assert items["count"] == 6
    item = items["results"][0]
    assert item["occupation"] == "nurse" and item["prompt"]["text"]
    assert item["image_url"].startswith("http")

    body = staff.get(f"/api/staff/tasks/{served['id']}/").json()
    assert body["ranking_count"] == 1 and body["overlap"] == 2
    assert sorted(body["items"]) == sorted(i["id"] for i in served["items"])
    assert staff.get("/api/staff/tasks/").json()["count"] == len(tasks)

    (ranking,) = staff.get("/api/staff/rankings/").json()["results"]
    stored = Ranking.objects.get()
    assert ranking["annotator"] == pseudonym(alice.profile.user_id)
    assert ranking["order"] == stored.order == [i["id"] for i in served["items"]][::-1]
    assert ranking["shown_order"] == [i["id"] for i in served["items"]]
    assert ranking["task"] == served["id"] and ranking["synthetic"] is False
    assert {"seconds_spent", "created_at"} <= set(ranking)
    assert "demographics" not in ranking and "alice" not in str(ranking)
    assert staff.get("/api/staff/rankings/999999/").status_code == 404


def test_staff_filters(make_tasks, annotator):
    first, second = make_tasks(2, k=3)
    pilot = Occupation.objects.create(name="pilot", slug="pilot")
    Prompt.objects.create(occupation=pilot, prompt_type=PromptType.DIVERSE, text="A pilot")
    rank_one(annotator("alice"))
    rank_one(annotator("robot", synthetic=True))
    staff = annotator("boss", staff=True)

    def count(path):
        response = staff.get(path)
        assert response.status_code == 200, response.content
        return response.json()["count"]

    assert count("/api/staff/tasks/?occupation=pilot") == 0
    assert count(f"/api/staff/tasks/?occupation={first.occupation_id}") == 2
    assert count("/api/staff/items/?occupation=nurse&prompt_type=neutral") == 6
    assert count("/api/staff/items/?prompt_type=diverse") == 0
    assert count(f"/api/staff/rankings/?task={second.pk}") == 1
    assert count("/api/staff/rankings/?occupation=nurse") == 2
    assert count("/api/staff/rankings/?synthetic=false") == 1
    assert count("/api/staff/rankings/?synthetic=true") == 1
    for bad in (
        "/api/staff/rankings/?task=abc",
        "/api/staff/items/?prompt_type=weird",
        "/api/staff/rankings/?synthetic=maybe",
    ):
        response = staff.get(bad)
        assert response.status_code == 400 and response.json()["detail"]


@pytest.mark.parametrize(
    "query",
    [
        "/api/staff/rankings/?task=",
        "/api/staff/rankings/?synthetic=",
        "/api/export/rankings/?include_synthetic=",
    ],
)
def test_an_empty_typed_parameter_is_a_400_not_ignored(annotator, query):
    # Found by schemathesis: `?task=` (not an integer) was taken as no filter at all.
    response = annotator("boss", staff=True).get(query)
    assert response.status_code == 400
    name = query.rsplit("?", 1)[1].rstrip("=")
    assert response.json()["detail"].startswith(f"{name}: '' is not")


def _fill(make_tasks, annotator, n: int, k: int, tag: str) -> None:
    make_tasks(n, k=k, overlap=3)
    for i in range(3):
        client = annotator(f"{tag}{i}")
        for _ in range(min(n, 3)):
            rank_one(client)


@pytest.mark.parametrize(
    ("path", "queries"),
    [
        ("/api/staff/occupations/", 3),
        ("/api/staff/items/", 2),
        ("/api/staff/tasks/", 3),
        ("/api/staff/rankings/", 2),
    ],
)
def test_staff_lists_run_constant_queries(
    make_tasks, annotator, django_assert_num_queries, path, queries
):
    """count + page (+ one prefetch), whatever the number of rows or K."""
    staff = annotator("boss", staff=True)
    _fill(make_tasks, annotator, n=1, k=3, tag="small")
    with django_assert_num_queries(queries):
        small = staff.get(path).json()
    _fill(make_tasks, annotator, n=12, k=6, tag="large")
    with django_assert_num_queries(queries):
        large = staff.get(path).json()
    assert large["count"] > small["count"] or path.endswith("occupations/")
    assert len(str(large)) > len(str(small))


def test_schema_lists_the_staff_endpoints(admin_client):
    schema = yaml.safe_load(admin_client.get("/api/schema/").content)
    for path in STAFF_LISTS:
        assert path in schema["paths"] and f"{path}{{id}}/" in schema["paths"]
    params = {p["name"] for p in schema["paths"]["/api/staff/rankings/"]["get"]["parameters"]}
    assert {"occupation", "task", "synthetic", "limit", "offset"} <= params


def test_no_annotator_reads_another_annotators_data_anywhere(make_tasks, annotator):
    """Every GET path in the schema, as annotator bob: alice's rankings, pseudonym,
    username and demographics never appear."""
    make_tasks(2, k=3)
    alice = annotator("alice")
    alice.profile.demographics = {"age_band": "secret-band-77", "ethnicity": "secret-eth-42"}
    alice.profile.save()
    rank_one(alice)
    ranking = Ranking.objects.get()
    bob = annotator("bob")
    secrets = ["secret-band-77", "secret-eth-42", pseudonym(alice.profile.user_id), '"alice"']
    schema = served_schema()
    reached = 0
    for path, operations in schema["paths"].items():
        if "get" not in operations or path == "/api/schema/":
            continue
        url = re.sub(r"\{[^}]+\}", str(ranking.pk), path)
        for query in ("", "?format=jsonl", "?format=csv&include_synthetic=1"):
            response = bob.get(url + query)
            if response.status_code == 200:
                reached += 1
                body = (
                    b"".join(response.streaming_content) if response.streaming else response.content
                ).decode()
                for secret in secrets:
                    assert secret not in body, f"{url}{query} shows alice's {secret}"
            else:
                assert response.status_code in (403, 404), (url, response.status_code)
    assert reached >= 1, "bob reads at least his own /api/me/"


def test_staff_reinstate_an_excluded_annotator_with_a_reason(annotator, client):
    from annotation.models import AnnotatorProfile, AnnotatorStatus, StatusChange

    ann = annotator("ann").profile
    AnnotatorProfile.objects.filter(pk=ann.pk).update(status=AnnotatorStatus.EXCLUDED)
    url = f"/api/staff/annotators/{pseudonym(ann.user_id)}/reinstate/"
    staff = annotator("boss", staff=True)
    assert annotator("other").post(url, {"reason": "x"}, format="json").status_code == 403
    assert APIClient().post(url, {"reason": "x"}, format="json").status_code in (401, 403)

    r = staff.post(url, {"reason": "  "}, format="json")
    assert r.status_code == 400 and "Say why the annotator is reinstated" in r.json()["detail"]
    r = staff.post(url, {}, format="json")
    assert r.status_code == 400 and "reason" in r.json()
    r = staff.post(
        "/api/staff/annotators/a-000000000000/reinstate/", {"reason": "x"}, format="json"
    )
    assert r.status_code == 404 and "No annotator has the pseudonym" in r.json()["detail"]
    r = staff.post("/api/staff/annotators/°ÿ/reinstate/", {"reason": "x"}, format="json")
    assert r.status_code == 404 and "is not a pseudonym" in r.json()["detail"]  # fuzz-found 500
    assert not StatusChange.objects.exists()

    r = staff.post(url, {"reason": "appeal upheld: the gold task was ambiguous"}, format="json")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["annotator"] == pseudonym(ann.user_id) and body["by"] == "boss"
    assert (body["previous"], body["status"]) == ("excluded", "ok")
    ann.refresh_from_db()
    change = StatusChange.objects.get()
    assert ann.status == AnnotatorStatus.OK and change.by == staff.profile.user
    assert change.reason == "appeal upheld: the gold task was ambiguous"

    r = staff.post(url, {"reason": "again"}, format="json")
    assert r.status_code == 409 and "nothing to reinstate" in r.json()["detail"]
    schema = served_schema()
    assert "post" in schema["paths"]["/api/staff/annotators/{name}/reinstate/"]
