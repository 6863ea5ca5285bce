"""The lost-run sweep (issue 38): a run's holder is lost when its own heartbeat has been
seen missing for WORKER_LOST_AFTER, whatever name its replacement has; a live worker
whose step blocks is never written off; with the heartbeats unreadable nothing is; a
message redelivered after a retry leaves the run alone. Heartbeats are written to the
real ``health`` cache (Redis on CI) as a worker's thread writes them."""

import time
from datetime import timedelta

import pytest
from django.core.cache import caches
from django.utils import timezone
from training_study import empty_snapshot

from core.heartbeats import heartbeat_key, node_component
from core.models import OutboxMessage
from training.models import TrainingRun
from training.runs.recovery import claim
from training.runs.services import recover_lost_runs
from training.tasks import sweep_lost_runs

Status = TrainingRun.Status


def beat(node: str, ago: float = 0.0) -> None:
    """``node``'s heartbeat thread, ``ago`` seconds ago."""
    caches["health"].set(heartbeat_key(node_component(node)), time.time() - ago, timeout=300)


def forget(node: str) -> None:
    caches["health"].delete(heartbeat_key(node_component(node)))


@pytest.fixture
def held(db):
    """A run in training on worker ``gpu@old-pod`` (another host: its pid means nothing
    here), its own heartbeat 10 minutes old (a long step), under the 30-minute backstop."""
    snapshot = empty_snapshot()
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        encoder="enc",
        hyperparameters={},
        epochs=50,
        status=Status.TRAINING,
        worker="gpu@old-pod",
        worker_pid=1,
        attempts=1,
        epoch=7,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
    )
    forget("gpu@old-pod")
    yield run
    forget("gpu@old-pod")


def _age_note(run: TrainingRun, seconds: float) -> None:
    """The sweep's note, as if taken ``seconds`` ago (time passing between sweeps)."""
    TrainingRun.objects.filter(pk=run.pk).update(
        holder_missing_since=timezone.now() - timedelta(seconds=seconds)
    )


def test_a_holder_gone_under_any_name_is_retried_after_the_limit(held, settings):
    limit = settings.TRAINING_RUNS["WORKER_LOST_AFTER"]
    beat("gpu@old-pod", ago=3 * settings.HEALTH["HEARTBEAT_SECONDS"])  # its last beat
    assert sweep_lost_runs() == []  # seen missing once: noted, nothing written off
    held.refresh_from_db()
    assert held.status == Status.TRAINING and held.holder_missing_since is not None
    _age_note(held, limit - 5)
    assert sweep_lost_runs() == []  # not for the whole limit yet
    _age_note(held, limit)
    assert sweep_lost_runs() == [held.pk]
    held.refresh_from_db()
    assert held.status == Status.QUEUED and held.worker == ""
    assert held.error == (
        "worker gpu@old-pod (pid 1) was lost during training; retrying (attempt 2 of 2)"
    )
    # Sent on through the outbox, as every run is; the runs page says what happened.
    assert OutboxMessage.objects.filter(task="training.tasks.dispatch_run").exists()
    from web.dashboards.runs import run_row

    assert "was lost during training; retrying (attempt 2 of 2)" in run_row(held)["error"]


def test_a_live_worker_whose_step_blocks_is_never_written_off(held, settings):
    """The run's own heartbeat is 10 minutes old (embedding a large snapshot), but the
    worker's thread beats: sweep after sweep, past the limit, it keeps its run."""
    for _ in range(3):
        beat("gpu@old-pod")
        assert recover_lost_runs() == []
        _age_note(held, 10 * settings.TRAINING_RUNS["WORKER_LOST_AFTER"])  # a stale note
        beat("gpu@old-pod")
        assert recover_lost_runs() == []
        held.refresh_from_db()
        assert held.status == Status.TRAINING and held.holder_missing_since is None


def test_nothing_is_written_off_while_the_heartbeats_cannot_be_read(held, settings):
    limit = settings.TRAINING_RUNS["WORKER_LOST_AFTER"]
    assert recover_lost_runs() == []  # missing: noted
    _age_note(held, 2 * limit)
    working = settings.CACHES["health"]
    settings.CACHES = {
        **settings.CACHES,
        "health": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens: Redis down
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        },
    }
    assert recover_lost_runs() == []
    held.refresh_from_db()
    assert held.status == Status.TRAINING and held.holder_missing_since is None  # forgotten
    # Redis back with its keys gone: missing again, but only noted, from now.
    settings.CACHES = {**settings.CACHES, "health": working}
    assert recover_lost_runs() == []
    held.refresh_from_db()
    assert held.status == Status.TRAINING and held.holder_missing_since is not None


def test_the_backstop_and_the_dead_pid_on_its_own_node_still_count(held, settings):
    beat("gpu@old-pod")
    TrainingRun.objects.filter(pk=held.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.TRAINING_RUNS["STALE_AFTER"] + 1)
    )
    assert recover_lost_runs() == [held.pk]  # beating, yet silent on its run for 30 min
    other = TrainingRun.objects.create(
        snapshot=held.snapshot,
        encoder="enc",
        hyperparameters={},
        epochs=5,
        status=Status.EMBEDDING,
        worker="gpu@here",
        worker_pid=2**22 + 12345,  # above pid_max: no such process
        attempts=1,
        heartbeat_at=timezone.now(),
    )
    beat("gpu@here")
    assert recover_lost_runs() == []  # beat's sweep judges no pid
    assert recover_lost_runs("gpu@here") == [other.pk]  # a gpu worker of that name does


def test_a_message_redelivered_after_a_retry_leaves_the_run_alone(held, settings):
    _age_note(held, settings.TRAINING_RUNS["WORKER_LOST_AFTER"])
    assert recover_lost_runs() == [held.pk]
    run, why = claim(held.pk, "gpu@new-pod")  # the retry's delivery
    assert why == "claimed" and run.attempts == 2
    beat("gpu@new-pod")
    # The dead worker's message, redelivered hours later to yet another worker.
    assert claim(held.pk, "gpu@third") == (None, f"run {held.pk} is embedding on gpu@new-pod")
    TrainingRun.objects.filter(pk=held.pk).update(status=Status.DONE)
    assert claim(held.pk, "gpu@third") == (None, f"run {held.pk} is already done")
    forget("gpu@new-pod")
