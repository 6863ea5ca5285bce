"""The scheduled retraining step on the real database: decisions, promotion, the lock."""

import json
import subprocess
import sys
import threading

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django_celery_beat.models import PeriodicTask
from training_study import ENCODER

from training.errors import RunError, ScheduleError
from training.models import Checkpoint, DatasetSnapshot, RegistryEvent, RetrainDecision, TrainingRun
from training.schedules import (
    DEFAULT_SCHEDULE,
    ScheduleSettings,
    scheduled_step,
)
from training.snapshots.services import create_snapshot
from training.tasks import scheduled_retrain

# Small thresholds and no paraphrases so the steps stay quick; the study has 12 rankings.
FAST = ScheduleSettings(
    min_new_rankings=3, encoder=ENCODER, epochs=1, paraphrases=0, include_synthetic=True
)


def decisions(schedule: str = "s") -> list[tuple[str, str]]:
    return list(
        RetrainDecision.objects.filter(schedule=schedule)
        .order_by("id")
        .values_list("decision", "reason")
    )


def test_setup_schedule_creates_a_disabled_hourly_task_once(db, capsys):
    call_command("setup_schedule")
    task = PeriodicTask.objects.get(name=DEFAULT_SCHEDULE)
    assert task.task == "training.scheduled_retrain" and not task.enabled
    assert (task.interval.every, task.interval.period) == (60, "minutes")
    assert ScheduleSettings.from_kwargs(json.loads(task.kwargs)) == ScheduleSettings()
    assert "created (disabled" in capsys.readouterr().out
    task.kwargs = json.dumps({"min_new_rankings": 10, "promotion": "auto"})
    task.save()
    call_command("setup_schedule", "--every", "5")
    task.refresh_from_db()
    assert json.loads(task.kwargs)["promotion"] == "auto"  # staff's edit is kept
    assert "left unchanged" in capsys.readouterr().out
    with pytest.raises(CommandError, match="at least one minute"):
        call_command("setup_schedule", "--every", "0")


def test_setup_schedule_takes_a_recipe_and_refuses_an_unknown_one(db, capsys):
    call_command("setup_schedule", "--recipe", "seed")
    task = PeriodicTask.objects.get(name=DEFAULT_SCHEDULE)
    assert json.loads(task.kwargs)["recipe"] == "seed"
    assert ScheduleSettings.from_kwargs(json.loads(task.kwargs)) == ScheduleSettings(recipe="seed")
    assert "recipe" in task.description and "edited as fields" in task.description
    task.delete()
    with pytest.raises(CommandError, match="recipe must be one of standard, seed"):
        call_command("setup_schedule", "--recipe", "fancy")
    assert not PeriodicTask.objects.filter(name=DEFAULT_SCHEDULE).exists()


def test_an_unknown_recipe_is_refused_naming_the_known_ones():
    assert ScheduleSettings.from_kwargs({}).recipe == ""  # the default recipe
    assert ScheduleSettings.from_kwargs({"recipe": "seed"}).recipe == "seed"
    with pytest.raises(ScheduleError) as refused:
        ScheduleSettings.from_kwargs({"recipe": "fancy"})
    assert str(refused.value) == (
        "recipe must be one of standard, seed (empty: the default, standard), not 'fancy'."
    )


def test_a_schedule_with_the_seed_recipe_starts_a_run_of_the_seed_recipe(study):
    from training.ml.recipes import recipe

    seeded = ScheduleSettings(**{**FAST.__dict__, "recipe": "seed"})
    [decision] = scheduled_step("s", seeded)
    assert decision.decision == "retrain"
    hyper = decision.run.hyperparameters
    # the seed recipe's values, the schedule's epochs on top, the recipe's name recorded
    assert hyper["recipe"] == "seed" and hyper["epochs"] == 1 == decision.run.epochs
    assert {k: hyper[k] for k in recipe("seed") if k != "epochs"} == {
        k: v for k, v in recipe("seed").items() if k != "epochs"
    }
    assert hyper["lr"] == 1e-5
    # a schedule that names none starts the default recipe's run (lr 1e-2)
    TrainingRun.objects.all().delete()
    RetrainDecision.objects.all().delete()
    DatasetSnapshot.objects.all().delete()
    [default] = scheduled_step("t", FAST)
    assert default.run.hyperparameters["recipe"] == "standard"
    assert default.run.hyperparameters["lr"] == 1e-2


def test_too_few_new_rankings_is_a_recorded_skip(study):
    create_snapshot(include_synthetic=True)
    [decision] = scheduled_step("s", FAST)
    assert (decision.decision, decision.reason) == ("skip", "only 0 new rankings, need 3")
    assert not TrainingRun.objects.exists()


def test_enough_rankings_snapshot_and_queue_a_run_then_the_next_step_skips(study):
    [decision] = scheduled_step("s", FAST)
    assert decision.decision == "retrain" and decision.reason == "12 new rankings (need 3)"
    run = decision.run
    assert run.status == TrainingRun.Status.QUEUED and run.epochs == 1 and run.encoder == ENCODER
    assert decision.snapshot == run.snapshot and run.snapshot.ranking_count == 12
    [again] = scheduled_step("s", FAST)
    assert (again.decision, again.reason) == (
        "skip",
        f"a retraining is already running (run {run.pk})",
    )
    assert TrainingRun.objects.count() == 1


def test_synthetic_rankings_do_not_count_unless_asked(study):
    settings = ScheduleSettings(**{**FAST.__dict__, "include_synthetic": False})
    [decision] = scheduled_step("s", settings)
    assert (decision.decision, decision.reason) == ("skip", "only 0 new rankings, need 3")


def test_a_run_that_cannot_start_is_recorded_and_leaves_no_snapshot(study):
    bad = ScheduleSettings(**{**FAST.__dict__, "encoder": "no-such-encoder-anywhere"})
    with pytest.raises(RunError, match="unknown encoder"):
        scheduled_step("s", bad)
    [(decision, reason)] = decisions()
    assert decision == "skip" and "could not start: unknown encoder" in reason
    assert not DatasetSnapshot.objects.exists() and not TrainingRun.objects.exists()


def test_beat_task_takes_its_settings_from_kwargs_and_its_name_from_the_header(study):
    kwargs = {k: v for k, v in FAST.__dict__.items()}
    result = scheduled_retrain.apply(kwargs=kwargs, headers={"periodic_task_name": "nightly"})
    assert result.successful(), result.traceback
    assert [d["decision"] for d in result.result] == ["retrain"]
    assert decisions("nightly")[0][0] == "retrain"
    failed = scheduled_retrain.apply(kwargs={"promotion": "sometimes"})
    assert failed.failed() and isinstance(failed.result, ScheduleError)
    [(decision, reason)] = decisions("manual run")
    assert decision == "skip" and "settings are unusable: promotion must be one of" in reason


def finished_run(snapshot, checkpoint, status="done", schedule="s") -> TrainingRun:
    """A run of this schedule that produced ``checkpoint`` (ORM rows, as the worker leaves them)."""
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        encoder=ENCODER,
        hyperparameters={},
        epochs=1,
        epoch=1,
        status=status,
        error="" if status == "done" else "CUDA out of memory",
    )
    if checkpoint is not None:
        Checkpoint.objects.filter(pk=checkpoint.pk).update(run=run)
    RetrainDecision.objects.create(
        schedule=schedule, decision="retrain", reason="test", run=run, snapshot=snapshot
    )
    return run


SETTLE_ONLY = ScheduleSettings(min_new_rankings=1000, include_synthetic=True, promotion="auto")


def test_auto_promotes_a_clearly_better_version(registry_rows, settings):
    # rows without files: no perspective report can score them, so the group check is off
    # here (its doors: tests/training/test_training_group_promotion.py)
    settings.STEREORANK = {**settings.STEREORANK, "PROMOTION_GROUP_CHECK": False}
    snapshot, (active, better) = registry_rows([1.0, 0.02], active=1)
    finished_run(snapshot, better)
    settled, skipped = scheduled_step("s", SETTLE_ONLY)
    assert settled.decision == "promote" and settled.checkpoint == better
    assert "above zero" in settled.reason and "version 1" in settled.reason
    assert skipped.decision == "skip"
    better.refresh_from_db()
    active.refresh_from_db()
    assert (better.status, active.status) == ("active", "archived")
    event = RegistryEvent.objects.get(checkpoint=better)
    assert event.action == "promote" and event.user is None and event.actor == "schedule s"
    # settled once: the next step only skips
    assert [d.decision for d in scheduled_step("s", SETTLE_ONLY)] == ["skip"]


def test_auto_keeps_a_version_that_is_not_better(registry_rows):
    snapshot, (active, worse) = registry_rows([0.02, 1.0], active=1)
    finished_run(snapshot, worse)
    settled, _ = scheduled_step("s", SETTLE_ONLY)
    assert settled.decision == "keep" and "not above zero" in settled.reason
    worse.refresh_from_db()
    assert worse.status == "candidate"
    assert Checkpoint.objects.get(status="active") == active
    assert not RegistryEvent.objects.exists()


def test_auto_promotes_when_nothing_is_active_and_manual_never_does(registry_rows):
    snapshot, (first, second) = registry_rows([0.1, 0.02])
    finished_run(snapshot, first)
    manual = ScheduleSettings(**{**SETTLE_ONLY.__dict__, "promotion": "manual"})
    settled, _ = scheduled_step("s", manual)
    assert settled.decision == "keep" and "manual" in settled.reason
    finished_run(snapshot, second, schedule="t")
    settled, _ = scheduled_step("t", SETTLE_ONLY)
    assert (settled.decision, settled.reason) == (
        "promote",
        "no active version; version 2 promoted",
    )
    assert Checkpoint.objects.get(status="active") == second


def test_a_failed_run_is_kept_with_its_error(registry_rows):
    snapshot, _ = registry_rows([0.1])
    run = finished_run(snapshot, None, status="failed")
    settled, _ = scheduled_step("s", SETTLE_ONLY)
    assert settled.decision == "keep" and settled.run == run
    assert settled.reason == f"run {run.pk} failed: CUDA out of memory"


@pytest.fixture
def purge_queues():
    """Runs queued by committed transactions send real messages; take them back after."""
    yield
    from web.celery import app

    app.control.purge()


@pytest.mark.redis  # the run it starts is queued on the real broker, then purged
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_steps_start_one_retraining(tmp_path, purge_queues):
    from training_study import make_study

    make_study(tmp_path)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def step(name: str) -> None:
        try:
            barrier.wait(timeout=10)
            scheduled_step(name, FAST)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=step, args=(n,)) for n in ("one", "two")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    made = list(RetrainDecision.objects.values_list("decision", "reason"))
    assert sorted(d for d, _ in made) == ["retrain", "skip"], made
    assert TrainingRun.objects.count() == 1 and DatasetSnapshot.objects.count() == 1
    [(_, why)] = [m for m in made if m[0] == "skip"]
    assert why in {
        "another scheduled step holds the retraining lock",
        f"a retraining is already running (run {TrainingRun.objects.get().pk})",
    }


def test_a_fresh_worker_process_finds_the_beat_task_by_its_name():
    code = (
        "import django; django.setup(); from web.celery import app; "
        "app.loader.import_default_modules(); print(sorted(app.tasks))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "'training.scheduled_retrain'" in out


def test_on_sqlite_the_lock_is_a_file_lock_one_holder_at_a_time(monkeypatch, settings, tmp_path):
    from training.schedules import retrain_lock

    settings.VAR_DIR = tmp_path
    monkeypatch.setattr(connection, "vendor", "sqlite")
    with retrain_lock() as first, retrain_lock() as second:
        assert (first, second) == (True, False)
    with retrain_lock() as again:
        assert again is True  # released on exit
    assert (tmp_path / "retrain.lock").exists()


@pytest.mark.django_db(transaction=True)
def test_a_second_connection_cannot_take_the_lock_while_it_is_held(settings, tmp_path):
    """The advisory lock on PostgreSQL, the file lock (in a tmp VAR_DIR) on SQLite."""
    from training.schedules import retrain_lock

    settings.VAR_DIR = tmp_path

    seen: list[bool] = []

    def other() -> None:
        try:
            with retrain_lock() as held:
                seen.append(held)
        finally:
            connection.close()

    with retrain_lock() as held:
        assert held
        t = threading.Thread(target=other)
        t.start()
        t.join(timeout=30)
    t = threading.Thread(target=other)
    t.start()
    t.join(timeout=30)
    assert seen == [False, True]


@pytest.mark.slow
def test_a_comparison_that_fails_is_a_recorded_keep_not_a_stuck_step(registry_rows):
    from training.models import Evaluation

    snapshot, (active, candidate) = registry_rows([0.5, 0.02], active=1)
    Evaluation.objects.filter(checkpoint=active).delete()  # must be scored; its files are gone
    finished_run(snapshot, candidate)
    settled, skipped = scheduled_step("s", SETTLE_ONLY)
    assert settled.decision == "keep" and settled.checkpoint == candidate
    assert settled.reason.startswith("version 2 not compared with 1: ")
    assert skipped.decision == "skip"
    assert Checkpoint.objects.get(status="active") == active
