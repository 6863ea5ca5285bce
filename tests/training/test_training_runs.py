"""Training runs in this process on the test database: real MiniLM, real files."""

import os
from datetime import timedelta

import pytest
from django.utils import timezone
from training_study import FAST

from training.errors import RunError
from training.models import Checkpoint, Evaluation, TrainingRun
from training.registry.services import checkpoint_root
from training.runs import services as runs
from training.runs.services import cancel_run, execute_run, start_run
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.slow
Status = TrainingRun.Status


@pytest.fixture
def snapshot(study):
    return create_snapshot(include_synthetic=True)


def test_a_run_trains_to_a_registered_checkpoint_with_its_lineage(snapshot, training_storage):
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    assert run.status == Status.QUEUED and run.epochs == 3
    assert execute_run(run.pk, "node-a") == "done: v1"
    run.refresh_from_db()
    assert (run.status, run.epoch, run.attempts, run.error) == (Status.DONE, 3, 1, "")
    assert [h["epoch"] for h in run.history] == [1, 2, 3]
    assert all(h["loss"] > 0 and -1 <= h["rho"] <= 1 for h in run.history)
    ckpt = run.checkpoint
    assert ckpt.version == 1 and ckpt.status == Checkpoint.Status.CANDIDATE
    assert ckpt.snapshot == snapshot and ckpt.parent is None
    assert ckpt.encoder_identity["name"].endswith("all-MiniLM-L6-v2")
    assert ckpt.hyperparameters["lr"] == FAST["lr"] and ckpt.code_version
    assert ckpt.metrics["spearman"] > 0.3  # prompt types are learnable from the text
    assert (
        ckpt.metrics["spearman_ci"][0] < ckpt.metrics["spearman"] < ckpt.metrics["spearman_ci"][1]
    )
    assert os.path.isdir(ckpt.path) and ckpt.path.endswith("/v1")
    assert sorted(os.listdir(ckpt.path)) == ["head.safetensors", "manifest.json"]
    evaluation = Evaluation.objects.get(checkpoint=ckpt, snapshot=snapshot)
    assert len(evaluation.predictions) == snapshot.eval_count
    assert evaluation.metrics["spearman"] == pytest.approx(ckpt.metrics["spearman"], abs=1e-6)


def test_a_second_delivery_trains_nothing(snapshot):
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    execute_run(run.pk, "node-a")
    assert execute_run(run.pk, "node-a") == f"run {run.pk} is already done"
    assert Checkpoint.objects.count() == 1
    run.refresh_from_db()
    assert run.attempts == 1


def test_a_run_held_by_a_live_worker_is_left_alone(snapshot):
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    TrainingRun.objects.filter(pk=run.pk).update(
        status=Status.TRAINING,
        worker="other",
        worker_pid=1,
        heartbeat_at=timezone.now(),
        attempts=1,
    )
    assert execute_run(run.pk, "node-a") == f"run {run.pk} is training on other"
    assert not Checkpoint.objects.exists()


def test_a_run_of_a_dead_worker_is_retried_once_then_failed(snapshot, settings):
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    dead_pid = 2**22 + 12345  # above pid_max on Linux: no such process
    TrainingRun.objects.filter(pk=run.pk).update(
        status=Status.TRAINING,
        worker="node-a",
        worker_pid=dead_pid,
        heartbeat_at=timezone.now(),
        attempts=1,
        epoch=1,
        history=[{"epoch": 1, "loss": 0.5, "rho": 0.1}],  # the lost attempt's first epoch
    )
    assert execute_run(run.pk, "node-a") == "done: v1"
    run.refresh_from_db()
    assert run.attempts == 2 and "was lost during training; retrying (attempt 2 of 2)" in run.error
    # The lost attempt's epoch is kept, marked; the card and the page read attempt 2's.
    assert [(h["attempt"], h["epoch"]) for h in run.history] == [(1, 1), (2, 1)]
    assert run.attempt_history == run.history[1:] and run.epoch == 1
    # a second loss (stale heartbeat, another node) fails it with the reason
    run2 = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    TrainingRun.objects.filter(pk=run2.pk).update(
        status=Status.EMBEDDING,
        worker="node-b",
        worker_pid=os.getpid(),
        attempts=2,
        heartbeat_at=timezone.now() - timedelta(seconds=settings.TRAINING_RUNS["STALE_AFTER"] + 1),
    )
    assert "failed" in execute_run(run2.pk, "node-a")
    run2.refresh_from_db()
    assert run2.status == Status.FAILED and "not retried again" in run2.error
    assert Checkpoint.objects.count() == 1


def test_cancel_during_training_ends_cancelled_without_checkpoint(snapshot, monkeypatch):
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 8}, enqueue=False)
    original = runs._Attempt.on_epoch

    def cancel_after_first_epoch(self, report):
        original(self, report)
        cancel_run(TrainingRun.objects.get(pk=self.run_id))

    monkeypatch.setattr(runs._Attempt, "on_epoch", cancel_after_first_epoch)
    monkeypatch.setattr(runs, "CANCEL_POLL_SECONDS", 0.0)
    assert execute_run(run.pk, "node-a") == "cancelled"
    run.refresh_from_db()
    assert run.status == Status.CANCELLED and run.epoch == 1 and run.cancel_requested
    assert not Checkpoint.objects.exists()
    assert not list(checkpoint_root().glob("v*"))


def test_cancelling_a_queued_run_is_immediate_and_a_finished_one_refused(snapshot):
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    assert cancel_run(run).status == Status.CANCELLED
    assert execute_run(run.pk, "node-a") == f"run {run.pk} is already cancelled"
    with pytest.raises(RunError, match="already cancelled"):
        cancel_run(run)


def test_soft_time_limit_fails_the_run_with_the_reason(snapshot, settings):
    settings.TRAINING_RUNS = {**settings.TRAINING_RUNS, "SOFT_TIME_LIMIT": 0}
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    assert execute_run(run.pk, "node-a") == "failed"
    run.refresh_from_db()
    assert run.status == Status.FAILED and "soft time limit of 0 s exceeded" in run.error
    assert not Checkpoint.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"encoder": "no-such/encoder"}, "unknown encoder: encoder 'no-such/encoder' not found"),
        ({"hyperparameters": {"lr": -1}}, "bad hyper-parameter: lr=-1 is out of range"),
        ({"hyperparameters": {"learning_rate": 1}}, "bad hyper-parameters: .*learning_rate"),
        ({"epochs": 0}, "epochs=0 is out of range"),
        ({"paraphrases": 8, "backend": "nope"}, "unknown backend 'nope'"),
    ],
)
def test_bad_configuration_is_refused_and_nothing_is_made(snapshot, kwargs, message):
    with pytest.raises(RunError, match=message):
        start_run(snapshot, enqueue=False, **kwargs)
    assert not TrainingRun.objects.exists()
