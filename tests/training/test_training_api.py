"""The staff training API: staff only, 201 on creation, 400 with a readable message."""

import pytest
from rest_framework.test import APIClient
from training_study import FAST

from tests.queued import queued
from training import services
from training.models import Checkpoint, DatasetSnapshot, Evaluation, TrainingRun
from training.runs.services import execute_run


def snapshot_of_2():
    return Checkpoint.objects.get(version=2).snapshot


@pytest.fixture
def staff_client(staff):
    client = APIClient()
    client.force_authenticate(staff)
    return client


def test_only_staff_may_use_it(annotator):
    client = annotator("alice")
    for url in ("/api/training/runs/", "/api/training/checkpoints/", "/api/training/snapshots/"):
        assert client.get(url).status_code == 403
    assert APIClient().post("/api/training/snapshots/").status_code in (401, 403)


def test_snapshot_errors_are_400_with_the_reason(staff_client):
    r = staff_client.post("/api/training/snapshots/", {"include_synthetic": True}, format="json")
    assert r.status_code == 409 and "no rankings" in r.json()["detail"]
    r = staff_client.post("/api/training/snapshots/", {"eval_fraction": 2}, format="json")
    assert r.status_code == 400 and "eval_fraction" in r.json()
    assert not DatasetSnapshot.objects.exists()


@pytest.mark.slow
def test_start_train_cancel_promote_compare(
    staff_client, study, staff, django_capture_on_commit_callbacks
):
    r = staff_client.post("/api/training/snapshots/", {"include_synthetic": True}, format="json")
    assert r.status_code == 201, r.json()
    snap = r.json()
    assert snap["example_count"] == 72 and "examples" not in snap
    bad = staff_client.post(
        "/api/training/runs/", {"snapshot": snap["id"], "encoder": "nope/x"}, format="json"
    )
    assert bad.status_code == 400 and "unknown encoder" in bad.json()["detail"]
    bad = staff_client.post(
        "/api/training/runs/",
        {"snapshot": snap["id"], "hyperparameters": {"lr": 0}},
        format="json",
    )
    assert bad.status_code == 400 and "lr=0 is out of range" in bad.json()["detail"]
    assert not TrainingRun.objects.exists()
    ids = []
    for seed in (0, 1, 2):
        r = staff_client.post(
            "/api/training/runs/",
            {"snapshot": snap["id"], "hyperparameters": {**FAST, "seed": seed}},
            format="json",
        )
        assert r.status_code == 201 and r.json()["status"] == "queued"
        ids.append(r.json()["id"])
    assert TrainingRun.objects.get(pk=ids[0]).created_by == staff
    cancelled = staff_client.post(f"/api/training/runs/{ids[2]}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = staff_client.post(f"/api/training/runs/{ids[2]}/cancel/")
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]
    assert TrainingRun.objects.get(pk=ids[2]).cancelled_by == staff
    for run_id in ids[:2]:
        execute_run(run_id, "node-a")
    detail = staff_client.get(f"/api/training/runs/{ids[0]}/").json()
    assert detail["status"] == "done" and detail["checkpoint"] == 1 and detail["progress"] == 1.0
    listed = staff_client.get("/api/training/checkpoints/").json()
    assert [c["version"] for c in listed] == [2, 1]
    assert staff_client.post("/api/training/checkpoints/1/promote/").json()["status"] == "active"
    r = staff_client.post("/api/training/checkpoints/1/promote/")
    assert r.status_code == 409 and r.json()["detail"] == "v1 is already active"
    missing = staff_client.post("/api/training/checkpoints/9/promote/")
    assert missing.status_code == 404 and missing.json() == {"detail": "Not found."}
    # the group check: its reports are queued, never computed in the request (409)
    with django_capture_on_commit_callbacks() as callbacks:
        r = staff_client.post(
            "/api/training/checkpoints/2/promote/", {"reason": "x"}, format="json"
        )
    assert r.status_code == 409 and r.json()["detail"].startswith("reports computing: "), r.json()
    assert {name for name, _ in queued(callbacks)} == {"training.tasks.perspective_report"}
    assert Checkpoint.objects.get(version=2).status == "candidate"
    for version in (1, 2):
        services.compute_reports(Checkpoint.objects.get(version=version), snapshot_of_2())
    r = staff_client.post("/api/training/checkpoints/2/promote/", {"force": True}, format="json")
    assert r.status_code == 400 and "needs a reason" in r.json()["detail"]
    r = staff_client.post(
        "/api/training/checkpoints/2/promote/", {"reason": "x", "force": True}, format="json"
    )
    assert r.status_code == 200 and r.json()["status"] == "active"
    r = staff_client.post("/api/training/checkpoints/rollback/")
    assert r.json()["version"] == 1 and Checkpoint.objects.get(version=1).status == "active"
    r = staff_client.get("/api/training/checkpoints/compare/", {"a": 1, "b": 2})
    assert r.status_code == 200 and r.json()["snapshot"] == snap["id"]
    assert set(r.json()) >= {"rho_a", "rho_b", "diff", "ci", "p_value", "per_occupation_a"}
    assert staff_client.get("/api/training/checkpoints/compare/", {"a": 1}).status_code == 400
    # On a newer snapshot: queued on the gpu worker, never scored inside the request.
    newer = staff_client.post(
        "/api/training/snapshots/", {"include_synthetic": True, "seed": 5}, format="json"
    ).json()["id"]
    with django_capture_on_commit_callbacks() as callbacks:
        r = staff_client.get(
            "/api/training/checkpoints/compare/", {"a": 1, "b": 2, "snapshot": newer}
        )
    assert r.status_code == 202 and r.json()["pending"] == [1, 2], r.json()
    assert [name for name, _ in queued(callbacks)] == ["training.tasks.evaluate_checkpoint"] * 2
    assert not Evaluation.objects.filter(snapshot_id=newer).exists()
