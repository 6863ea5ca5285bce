"""The commands' contract: what they print, and one line saying why when they refuse."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from training_study import FAST

from training.models import Checkpoint, DatasetSnapshot, RegistryEvent, TrainingRun
from training.runs.services import execute_run, start_run

pytestmark = pytest.mark.slow


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.fixture
def versions(study):
    snapshot_id = int(run("snapshot", "--include-synthetic"))
    snapshot = DatasetSnapshot.objects.get(pk=snapshot_id)
    for seed in (0, 1):
        execute_run(start_run(snapshot, hyperparameters={**FAST, "seed": seed}, enqueue=False).pk)
    return snapshot


def test_registry_commands(versions, tmp_path):
    listing = run("checkpoints").splitlines()
    assert listing[0].split()[:3] == ["version", "status", "rho"]
    assert [line.split()[:2] for line in listing[1:]] == [["v1", "candidate"], ["v2", "candidate"]]
    assert run("promote", "1") == "v1 is active\n"
    assert run("promote", "2", "--reason", "better on eval") == "v2 is active\n"
    # the reason given, then the group check's words (every field, none falls)
    reason = RegistryEvent.objects.order_by("-id").first().reason
    assert reason.startswith("better on eval; ") and "falls by more than 0.02" in reason
    assert run("rollback") == "v1 is active\n"
    # The history names the command and who ran it, never "the schedule".
    actors = list(RegistryEvent.objects.order_by("id").values_list("actor", flat=True))
    assert [a.split(" (")[0] for a in actors] == ["manage.py promote"] * 2 + ["manage.py rollback"]
    assert all(a.endswith(")") and "(" in a for a in actors)
    compared = run("compare", "1", "2")
    assert f"snapshot {versions.pk}, {versions.eval_count} eval items" in compared
    assert "diff (v1 - v2)" in compared and "95% CI [" in compared
    occupation = next(r["occupation"] for r in versions.examples if r["split"] == "eval")
    assert any(line.startswith(occupation) for line in compared.splitlines())
    pth = tmp_path / "out" / "v1.pth"
    assert run("export_checkpoint", "1", "--format", "seed", "--out", str(pth)).strip() == str(pth)
    imported = run("import_checkpoint", str(pth), "--encoder", "all-MiniLM-L6-v2").strip()
    assert imported == "3" and Checkpoint.objects.get(version=3).source == str(pth)
    native = tmp_path / "v2-native"
    run("export_checkpoint", "2", "--format", "native", "--out", str(native))
    assert run("import_checkpoint", str(native), "--format", "native").strip() == "4"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["promote", "99"], "there is no version 99"),
        (["rollback"], "no version is active; nothing to roll back"),
        (["compare", "1", "99"], "there is no version"),
        (["train", "--snapshot", "999"], "there is no snapshot 999"),
        (["augment", "--snapshot", "999"], "there is no snapshot 999"),
        (["export_checkpoint", "7", "--out", "/tmp/x.pth"], "there is no version 7"),
        (["import_checkpoint", "/no/such.pth", "--encoder", "all-MiniLM-L6-v2"], "does not exist"),
        (["snapshot"], "no rankings to snapshot"),
    ],
)
def test_refusals_are_one_line(db, args, message):
    with pytest.raises(CommandError, match=message) as info:
        run(*args)
    assert "\n" not in str(info.value)
    assert not TrainingRun.objects.exists() and not Checkpoint.objects.exists()


def test_train_refuses_a_bad_configuration_and_queues_nothing(study):
    snapshot_id = run("snapshot", "--include-synthetic").strip()
    with pytest.raises(CommandError, match="unknown encoder: encoder 'nope/nope' not found"):
        run("train", "--snapshot", snapshot_id, "--encoder", "nope/nope")
    with pytest.raises(CommandError, match="epochs=0 is out of range"):
        run("train", "--snapshot", snapshot_id, "--epochs", "0")
    assert not TrainingRun.objects.exists()
