"""The registry on the test database: versions, files, promote/rollback, compare, export/import."""

import os
import threading
from pathlib import Path

import pytest
from django.db import IntegrityError, connection, transaction
from training_study import FAST

from training.errors import EvaluationPending, RegistryError
from training.ml.checkpoints import load as load_files
from training.models import Checkpoint, Evaluation, RegistryEvent
from training.registry import services as registry
from training.registry.evaluation import compare, evaluate
from training.registry.services import (
    checkpoint_root,
    export_checkpoint,
    import_checkpoint,
    promote,
    register,
    rollback,
    sweep_orphans,
)
from training.runs.services import execute_run, start_run
from training.selectors import activation_stack, rollback_target
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.slow
Status = Checkpoint.Status


@pytest.fixture
def two_versions(study):
    snapshot = create_snapshot(include_synthetic=True)
    for seed in (0, 1):
        run = start_run(snapshot, hyperparameters={**FAST, "seed": seed}, enqueue=False)
        execute_run(run.pk, "node-a")
    return snapshot, Checkpoint.objects.get(version=1), Checkpoint.objects.get(version=2)


def test_activation_stack_replays_promotions_and_rollbacks():
    P, R = RegistryEvent.Action.PROMOTE, RegistryEvent.Action.ROLLBACK
    assert activation_stack([(P, 1), (P, 2), (P, 3)]) == [1, 2, 3]
    assert activation_stack([(P, 1), (P, 2), (P, 3), (R, 2)]) == [1, 2]
    assert activation_stack([(P, 1), (P, 2), (R, 1), (P, 3)]) == [1, 3]
    assert activation_stack([(P, 1), (P, 1)]) == [1]


def test_promote_and_rollback_keep_one_active_and_record_who(two_versions, staff):
    _, v1, v2 = two_versions
    assert rollback_target() is None  # nothing active
    promote(v1, user=staff, reason="first")
    assert rollback_target() is None  # nothing before it
    promote(v2, reason="better", actor="manage.py promote (ops)")
    assert rollback_target() == v1
    v1.refresh_from_db()
    assert (v1.status, Checkpoint.objects.get(version=2).status) == (Status.ARCHIVED, Status.ACTIVE)
    with pytest.raises(RegistryError, match="v2 is already active"):
        promote(v2, user=staff)
    with pytest.raises(TypeError, match="needs a user or an actor"):
        promote(v1)
    assert rollback(user=staff, reason="regression").version == 1
    assert list(Checkpoint.objects.order_by("version").values_list("status", flat=True)) == [
        Status.ACTIVE,
        Status.ARCHIVED,
    ]
    assert rollback_target() is None
    with pytest.raises(RegistryError, match="v1 has no earlier active version"):
        rollback(actor="schedule nightly")
    events = list(RegistryEvent.objects.order_by("id"))
    assert [
        (e.action, e.checkpoint.version, e.previous and e.previous.version) for e in events
    ] == [
        ("promote", 1, None),
        ("promote", 2, 1),
        ("rollback", 1, 2),
    ]
    assert events[0].user == staff and events[2].reason == "regression" and events[1].user is None
    assert [e.actor for e in events] == [staff.username, "manage.py promote (ops)", staff.username]
    # the database refuses a second active version whatever the code does
    with pytest.raises(IntegrityError), transaction.atomic():
        Checkpoint.objects.filter(version=2).update(status=Status.ACTIVE)


def test_a_new_run_records_the_active_version_as_parent(two_versions):
    snapshot, v1, _ = two_versions
    promote(v1, actor="test")
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    execute_run(run.pk, "node-a")
    run.refresh_from_db()
    assert run.checkpoint.parent == v1
    assert load_files(Path(run.checkpoint.path)).extra["parent_version"] == 1


def test_compare_on_the_common_snapshot_and_on_a_newer_one(two_versions):
    snapshot, v1, v2 = two_versions
    r = compare(v1, v2, n_boot=200)
    e1, e2 = (Evaluation.objects.get(checkpoint=c, snapshot=snapshot) for c in (v1, v2))
    assert r["snapshot"] == snapshot.pk and r["n_items"] == snapshot.eval_count
    assert r["rho_a"] == pytest.approx(e1.metrics["spearman"])
    assert r["rho_b"] == pytest.approx(e2.metrics["spearman"])
    assert r["diff"] == pytest.approx(r["rho_a"] - r["rho_b"])
    assert r["ci"][0] <= r["diff"] <= r["ci"][1] and 0 < r["p_value"] <= 1
    assert set(r["per_occupation_a"]) == {
        row["occupation"] for row in snapshot.examples if row["split"] == "eval"
    }
    # an old model re-evaluated on today's data (a newer snapshot with a new split):
    # compare never scores; it names what is missing, evaluate (the gpu task) scores.
    newer = create_snapshot(include_synthetic=True, seed=5)
    with pytest.raises(EvaluationPending, match="v1 and v2 not evaluated on snapshot") as pending:
        compare(v1, v2, snapshot=newer, n_boot=50)
    for checkpoint in pending.value.checkpoints:
        evaluate(checkpoint, newer, n_boot=50)
    r2 = compare(v1, v2, snapshot=newer, n_boot=50)
    assert r2["snapshot"] == newer.pk and r2["n_items"] == newer.eval_count
    assert Evaluation.objects.filter(snapshot=newer).count() == 2
    assert compare(v1, v2, snapshot=newer, n_boot=50)["rho_a"] == r2["rho_a"]  # reused
    assert Evaluation.objects.count() == 4


def test_compare_without_a_common_snapshot_says_so(two_versions, tmp_path):
    _, v1, _ = two_versions
    native = export_checkpoint(v1, "native", tmp_path / "v1-native")
    v3 = import_checkpoint(native, fmt="native", actor="test")
    with pytest.raises(RegistryError, match="never evaluated on the same snapshot"):
        compare(v1, v3)


def test_seed_pth_export_and_import_round_trip(two_versions, tmp_path):
    _, v1, _ = two_versions
    pth = export_checkpoint(v1, "seed", tmp_path / "v1.pth")
    assert pth.is_file()
    v3 = import_checkpoint(pth, fmt="seed", encoder="all-MiniLM-L6-v2", actor="test")
    assert v3.version == 3 and v3.run is None and v3.status == Status.CANDIDATE
    assert v3.head_sha256 == v1.head_sha256  # the same head weights, bit for bit
    assert RegistryEvent.objects.get(checkpoint=v3).action == "import"
    assert Path(v3.path).name == "v3"


def test_importing_a_bad_file_makes_nothing(two_versions, tmp_path):
    bad = tmp_path / "bad.pth"
    bad.write_bytes(b"not a state dict")
    with pytest.raises(RegistryError, match="not a readable state dict"):
        import_checkpoint(bad, fmt="seed", encoder="all-MiniLM-L6-v2", actor="test")
    with pytest.raises(RegistryError, match="unknown format"):
        import_checkpoint(bad, fmt="onnx", actor="test")
    assert Checkpoint.objects.count() == 2
    assert sorted(p.name for p in checkpoint_root().glob("v*")) == ["v1", "v2"]


def test_a_failure_inside_the_registration_leaves_no_folder_and_no_row(two_versions):
    _, v1, _ = two_versions
    files = load_files(Path(v1.path))

    def explode(checkpoint):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        register(files, in_transaction=explode)
    assert Checkpoint.objects.count() == 2
    assert sorted(p.name for p in checkpoint_root().glob("v*")) == ["v1", "v2"]
    assert not list((checkpoint_root() / registry.STAGING).iterdir())
    # the number was not burnt into a visible gap: the next version is 3
    assert register(files).version == 3


def test_a_folder_left_by_a_killed_registration_is_swept(two_versions):
    _, v1, _ = two_versions
    orphan = checkpoint_root() / "v3"
    orphan.mkdir()
    (orphan / "manifest.json").write_text("{}")
    assert sweep_orphans() == ["v3"]
    assert not orphan.exists() and (checkpoint_root() / "v1").is_dir()
    # and a registration that meets one replaces it
    orphan.mkdir()
    v3 = register(load_files(Path(v1.path)))
    assert v3.version == 3 and load_files(Path(v3.path)).data_hash == v1.data_hash


@pytest.mark.django_db(transaction=True)
def test_concurrent_registrations_get_distinct_consecutive_versions(study):
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    execute_run(run.pk, "node-a")
    files = load_files(Path(Checkpoint.objects.get().path))
    versions, errors = [], []

    def worker():
        try:
            versions.append(register(files).version)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(versions) == [2, 3, 4, 5, 6, 7]
    assert sorted(os.listdir(checkpoint_root())) == [".staging"] + [f"v{n}" for n in range(1, 8)]
