"""The REST contract: next task, submit, me, exports; validation and access."""

import csv
import io
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import DemographicField, RankedItem, Ranking, RankingTask
from annotation.rankings.exports import pseudonym


def next_task(client):
    return client.post("/api/tasks/next/")


def submit(client, task_id, order):
    return client.post(f"/api/tasks/{task_id}/ranking/", {"order": order}, format="json")


def test_token_auth_round_trip(make_tasks, annotator):
    from rest_framework.test import APIClient

    make_tasks(1)
    annotator("ann")
    client = APIClient()
    token = client.post("/api/auth/token/", {"username": "ann", "password": "pw-123456"}).json()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token['token']}")
    assert next_task(client).status_code == 200
    assert APIClient().post("/api/tasks/next/").status_code in (401, 403)


def test_next_task_requires_consent(make_tasks, annotator):
    make_tasks(1)
    client = annotator("ann", consent=False)
    response = next_task(client)
    assert response.status_code == 403
    assert "consent" in response.json()["detail"].lower()


def test_next_task_shape_and_resume(make_tasks, annotator):
    (task,) = make_tasks(1, k=6)
    client = annotator("ann")
    body = next_task(client).json()
    assert body["id"] == task.pk and body["occupation"] == "nurse"
    assert sorted(i["id"] for i in body["items"]) == sorted(
        task.task_items.values_list("item_id", flat=True)
    )
    assert all(i["image_url"].startswith("http") and i["prompt"] for i in body["items"])
    assert body["reserved_until"]
    assert next_task(client).json()["items"] == body["items"], "resume shows the same order"


def test_submit_then_idempotent_resubmit(make_tasks, annotator):
    make_tasks(2)
    client = annotator("ann")
    task = next_task(client).json()
    order = [i["id"] for i in task["items"]][::-1]
    first = submit(client, task["id"], order)
    assert first.status_code == 201
    again = submit(client, task["id"], order)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    assert Ranking.objects.count() == 1 and RankedItem.objects.count() == 3
    assert RankingTask.objects.get(pk=task["id"]).ranking_count == 1
    assert submit(client, task["id"], order[::-1]).status_code == 409
    ranking = Ranking.objects.get()
    assert ranking.order == order and ranking.shown_order == [i["id"] for i in task["items"]]


@pytest.mark.parametrize(
    "bad", ["not a list", [1, 2], ["a", "b", "c"], "duplicate", "foreign", [True, False, True]]
)
def test_non_permutations_are_400_and_store_nothing(make_tasks, annotator, bad):
    make_tasks(1)
    client = annotator("ann")
    task = next_task(client).json()
    ids = [i["id"] for i in task["items"]]
    order = {"duplicate": [ids[0], ids[0], ids[1]], "foreign": ids[:2] + [999999]}.get(
        bad if isinstance(bad, str) else "", bad
    )
    response = submit(client, task["id"], order)
    assert response.status_code == 400
    assert response.json()["detail"]
    assert Ranking.objects.count() == 0


def test_task_reserved_by_another_annotator_is_refused(make_tasks, annotator):
    make_tasks(1)
    alice, bob = annotator("alice"), annotator("bob")
    task = next_task(alice).json()
    assert next_task(bob).status_code == 204, "the only slot is reserved"
    response = submit(bob, task["id"], [i["id"] for i in task["items"]])
    assert response.status_code == 403
    assert Ranking.objects.count() == 0


def test_never_more_rankings_than_overlap(make_tasks, annotator):
    make_tasks(1, overlap=2)
    clients = [annotator(f"a{i}") for i in range(3)]
    got = [next_task(c) for c in clients]
    assert [r.status_code for r in got] == [200, 200, 204]
    for client, response in zip(clients[:2], got[:2], strict=True):
        task = response.json()
        # Reversed: the shown order kept would (rightly) warn the annotator.
        order = [i["id"] for i in reversed(task["items"])]
        assert submit(client, task["id"], order).status_code == 201
    assert next_task(clients[2]).status_code == 204
    assert RankingTask.objects.get().ranking_count == 2


def test_me_shows_only_self(make_tasks, annotator):
    make_tasks(1)
    alice = annotator("alice")
    alice.profile.demographics = {"age_band": "25-34"}
    alice.profile.save()
    bob = annotator("bob")
    me = bob.get("/api/me/").json()
    assert me["username"] == "bob" and me["demographics"] == {}
    assert me["consent"] is True and me["progress"] == {"done": 0, "quota": 20}
    assert "25-34" not in json.dumps(me)


def test_exports_are_staff_only_pseudonymous_and_exclude_synthetic(make_tasks, annotator):
    DemographicField.objects.create(key="age_band", label="Age", choices=["25-34"])
    make_tasks(2)
    real, robot = annotator("real"), annotator("robot", synthetic=True)
    real.profile.demographics = {"age_band": "25-34"}
    real.profile.save()
    for client in (real, robot):
        task = next_task(client).json()
        # Reversed: the shown order kept would (rightly) warn the annotator.
        order = [i["id"] for i in reversed(task["items"])]
        assert submit(client, task["id"], order).status_code == 201
    assert real.get("/api/export/rankings/").status_code == 403
    staff = annotator("boss", staff=True)
    rows = [
        json.loads(line)
        for line in b"".join(
            staff.get("/api/export/rankings/?format=jsonl").streaming_content
        ).splitlines()
    ]
    assert len(rows) == 1
    assert rows[0]["annotator"] == pseudonym(real.profile.user_id) != "real"
    assert "real" not in json.dumps(rows)
    assert {"task", "annotator", "order", "shown_order", "created_at"} <= set(rows[0])
    assert rows[0]["demographics"] == {"age_band": "25-34"}
    with_synthetic = b"".join(
        staff.get("/api/export/rankings/?format=csv&include_synthetic=1").streaming_content
    ).decode()
    table = list(csv.DictReader(io.StringIO(with_synthetic)))
    assert len(table) == 2 and "age_band" in table[0]
    pairs = [
        json.loads(line)
        for line in b"".join(
            staff.get("/api/export/pairs/?format=jsonl").streaming_content
        ).splitlines()
    ]
    assert len(pairs) == 3, "3 items give 3 chosen/rejected pairs"
    order = rows[0]["order"]
    assert (pairs[0]["rejected_item"], pairs[0]["chosen_item"]) == (order[0], order[1])
    assert staff.get("/api/export/rankings/?format=xml").status_code == 400


# Token auth with the profile (1), the annotator's state (1), the best task, locked (1),
# its live reservations (1), its items (1), upsert the reservation (1). (With group
# quotas, a newcomer's first task costs up to four more: test_annotation_quotas.)
NEXT_QUERIES = 6
# Token auth (1), lock the task (1), reservation with any existing ranking (1), ranking (1),
# its items' positions (1), the task's count (1), release the reservation (1), the
# rankings the quality policy reads (1; its status did not change: no write).
SUBMIT_QUERIES = 8


def _queries(name, make_tasks, annotator, n, k):
    """(next-task, submit) queries for a token-authenticated annotator, without
    the transaction's BEGIN/COMMIT (which not every backend shows)."""
    from rest_framework.test import APIClient

    from annotation.accounts import tokens

    make_tasks(n, k=k)
    client = APIClient()
    _, token = tokens.issue(annotator(name).profile.user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    def count(context):
        return sum(
            q["sql"].split()[0].upper() not in {"BEGIN", "COMMIT", "SAVEPOINT", "RELEASE"}
            for q in context.captured_queries
        )

    with CaptureQueriesContext(connection) as nxt:
        task = next_task(client).json()
    with CaptureQueriesContext(connection) as sub:
        # Reversed: the shown order kept would (rightly) warn the annotator.
        order = [i["id"] for i in reversed(task["items"])]
        assert submit(client, task["id"], order).status_code == 201
    return count(nxt), count(sub)


def test_query_counts_do_not_grow_with_k_or_tasks(make_tasks, annotator):
    small = _queries("a", make_tasks, annotator, n=2, k=3)
    large = _queries("b", make_tasks, annotator, n=20, k=6)
    assert small == large == (NEXT_QUERIES, SUBMIT_QUERIES)


def test_schema_documents_the_contract(admin_client):
    schema = admin_client.get("/api/schema/").content.decode()
    for path in (
        "/api/tasks/next/",
        "/api/tasks/{task_id}/ranking/",
        "/api/me/",
        "/api/export/rankings/",
        "/api/export/pairs/",
        "/api/auth/token/",
    ):
        assert path in schema
