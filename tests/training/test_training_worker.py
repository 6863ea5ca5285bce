"""End to end with a real Celery worker process, the real Redis and PostgreSQL.

The worker (``celery -A web worker -Q default,gpu -P solo``) is a subprocess
against this test database (rows are committed: ``transactional_db``) and the
broker in REDIS_URL; its queues are purged first. Its node name is fixed, so a
worker started after a SIGKILL is the dead one's successor on this host and
recovers its run at start-up (training/runs/recovery.py, training/runs/services.py).
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from training_study import ENCODER, FAST, make_study

from training.models import Checkpoint, TrainingRun
from training.registry.services import checkpoint_root
from training.runs.services import cancel_run, start_run
from training.snapshots.services import create_snapshot

# Worker subprocesses: they reach this test database through a PostgreSQL DATABASE_URL
# and take their tasks from the Redis broker.
pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
NODE = f"gpu-test@{socket.gethostname()}"
Status = TrainingRun.Status


def _purge_broker() -> None:
    """Empty this broker's queues and its record of unacknowledged messages."""
    import redis

    from web.celery import app

    with app.connection_for_write() as conn:
        for queue in ("default", "gpu"):
            conn.default_channel.queue_purge(queue)
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(
        "unacked", "unacked_index", "unacked_mutex"
    )


class Worker:
    """One ``celery worker`` subprocess; its log goes to a file that the test can show."""

    def __init__(self, log: Path, env: dict, node: str = NODE, beat: bool = False) -> None:
        self.log, self.env, self.proc = log, env, None
        self.node, self.beat = node, beat

    def start(self, timeout: float = 120) -> Worker:
        self.log_file = open(self.log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "web",
                "worker",
                "-Q",
                "default,gpu",
                "-P",
                "solo",
                "--concurrency",
                "1",
                "-n",
                self.node,
                *(["-B", "-s", str(self.log.with_suffix(".schedule"))] if self.beat else []),
                "--without-gossip",
                "--without-mingle",
                "--loglevel",
                "INFO",
            ],
            cwd=REPO,
            env=self.env,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        start = self.log.stat().st_size if self.log.exists() else 0
        while b" ready." not in self.log.read_bytes()[start:]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"worker did not start:\n{self.tail()}")
            time.sleep(0.2)
        return self

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.log_file.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.log_file.close()


@pytest.fixture(scope="module")
def worker_storage(tmp_path_factory):
    return tmp_path_factory.mktemp("worker")


@pytest.fixture(scope="module")
def worker_process(django_db_setup, worker_storage, embedding_cache):
    """One worker for the module (restarted by ``worker`` after a test killed it)."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
        "STEREORANK_CHECKPOINT_DIR": str(worker_storage / "checkpoints"),
        "STEREORANK_EMBEDDING_CACHE": str(embedding_cache),
        "STEREORANK_ENCODER": ENCODER,
        "STEREORANK_DEVICE": "cpu",
        "STEREORANK_MEDIA_ROOT": str(worker_storage / "media"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    _purge_broker()
    w = Worker(worker_storage / "worker.log", env).start()
    yield w
    w.stop()
    _purge_broker()


def _settle(worker: Worker, timeout: float = 120) -> None:
    """Drop the follow-ups a test left queued (a new version queues its perspective report
    and the sampler's update) and wait for the task in hand: a solo worker answers
    ``inspect`` only between tasks. The test database is then flushed under no running
    task (TRUNCATE against a task's row locks was a deadlock)."""
    from web.celery import app

    _purge_broker()
    inspect = app.control.inspect(destination=[NODE], timeout=1)
    deadline = time.monotonic() + timeout
    while worker.proc.poll() is None and time.monotonic() < deadline:
        active, reserved = inspect.active(), inspect.reserved()
        if active and reserved and not active.get(NODE) and not reserved.get(NODE):
            return
        time.sleep(0.2)
    if worker.proc.poll() is None:
        raise AssertionError(f"the worker was still busy after {timeout} s\n{worker.tail()}")


@pytest.fixture
def worker(worker_process, transactional_db, settings, worker_storage):
    """The live worker, sharing this process's checkpoint folder (emptied per test); idle
    again before the test's rows are flushed."""
    shutil.rmtree(worker_storage / "checkpoints", ignore_errors=True)
    settings.TRAINING = {**settings.TRAINING, "CHECKPOINT_DIR": worker_storage / "checkpoints"}
    if worker_process.proc.poll() is not None:
        worker_process.start()
    yield worker_process
    _settle(worker_process)


def wait_for(predicate, timeout: float = 120, what: str = "", worker: Worker | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}\n{worker.tail() if worker else ''}")


def run_status(run_id: int) -> TrainingRun:
    return TrainingRun.objects.get(pk=run_id)


def command(*args) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().split()


def test_the_whole_loop_through_the_worker(worker, tmp_path):
    make_study(tmp_path, occupations=20, images=3)  # 180 items: an eval split of 36
    (snapshot_id,) = command("snapshot", "--include-synthetic")
    (augmentation_id,) = command("augment", "--snapshot", snapshot_id, "--n", "2", "--wait")
    run_a, version_a = command(
        "train",
        "--snapshot",
        snapshot_id,
        "--epochs",
        "4",
        "--lr",
        "0.01",
        "--augmentation",
        augmentation_id,
        "--wait",
    )
    a = Checkpoint.objects.get(version=int(version_a))
    assert a.run_id == int(run_a) and a.snapshot_id == int(snapshot_id)
    assert a.metrics["spearman"] > 0.3, a.metrics
    assert a.metrics["spearman_ci"][0] > 0, f"eval rho does not beat chance: {a.metrics}"
    augmentation = a.run.augmentation
    assert augmentation.pk == int(augmentation_id) and augmentation.paraphrases.exists()
    assert augmentation.stats["kept"] == augmentation.paraphrases.count()
    assert a.run.history and len(a.run.history) == 4
    assert command("promote", version_a) == [f"v{version_a}", "is", "active"]
    # the second run asks for its own augmentation: augment, then train, chained on the worker
    run_b, version_b = command(
        "train",
        "--snapshot",
        snapshot_id,
        "--epochs",
        "2",
        "--lr",
        "0.01",
        "--seed",
        "7",
        "--paraphrases",
        "1",
        "--wait",
    )
    b = Checkpoint.objects.get(version=int(version_b))
    assert b.parent == a and b.run_id == int(run_b)
    assert b.run.augmentation.n == 1 and b.run.augmentation.status == "done"
    assert 0 < b.run.augmentation.paraphrases.count() <= b.run.snapshot.example_count
    out = io.StringIO()
    call_command("compare", version_a, version_b, stdout=out)
    text = out.getvalue()
    assert f"v{version_a}: rho {a.metrics['spearman']:.3f}" in text
    assert "95% CI [" in text and "p = " in text
    listing = io.StringIO()
    call_command("checkpoints", stdout=listing)
    assert f"v{version_a}  active" in listing.getvalue()


def test_sigkill_mid_training_then_a_new_worker_retries_the_run(worker, tmp_path):
    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 80, "n_boot": 0})
    wait_for(lambda: run_status(run.pk).epoch >= 1, what="training to start", worker=worker)
    killed_pid = worker.proc.pid
    worker.kill()
    held = run_status(run.pk)
    assert held.status == Status.TRAINING and held.worker_pid == killed_pid
    assert not Checkpoint.objects.exists() and not list(checkpoint_root().glob("v*"))
    worker.start()  # the successor recovers the run at start-up
    done = wait_for(
        lambda: (r := run_status(run.pk)).is_finished and r,
        timeout=300,
        what="the retry",
        worker=worker,
    )
    assert done.status == Status.DONE, done.error
    assert (
        done.attempts == 2 and "was lost during training; retrying (attempt 2 of 2)" in done.error
    )
    assert done.worker_pid != killed_pid
    (ckpt,) = Checkpoint.objects.all()
    assert ckpt.run_id == run.pk
    assert sorted(p.name for p in checkpoint_root().glob("v*")) == [f"v{ckpt.version}"]
    assert Path(ckpt.path).is_dir() and Path(ckpt.path, "manifest.json").is_file()


def test_a_replacement_under_another_name_retries_the_run(worker, tmp_path, worker_storage):
    """A pod replaced: the dead worker's node name never comes back. The replacement's
    beat sweeps (every second here, with a 3 s limit and 1 s heartbeats, for the test's
    time; 20 s, 60 s and 15 s by default) and retries the run, within two minutes."""
    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 80, "n_boot": 0})
    wait_for(lambda: run_status(run.pk).epoch >= 1, what="training to start", worker=worker)
    worker.kill()
    fast = {
        "STEREORANK_HEARTBEAT_SECONDS": "1",
        "STEREORANK_WORKER_LOST_AFTER": "3",
        "STEREORANK_RUN_SWEEP_EVERY": "1",
    }
    renamed = f"gpu-replacement@{socket.gethostname()}"
    replacement = Worker(worker_storage / "replacement.log", {**worker.env, **fast}, renamed, True)
    replacement.start()
    try:
        wait_for(
            lambda: run_status(run.pk).attempts == 2,
            timeout=120,
            what="the retry, within two minutes",
            worker=replacement,
        )
        done = wait_for(
            lambda: (r := run_status(run.pk)).is_finished and r,
            timeout=300,
            what="the retried run",
            worker=replacement,
        )
    finally:
        replacement.stop()
    assert done.status == Status.DONE, done.error
    assert done.worker == renamed and done.attempts == 2
    assert f"worker {NODE} (pid" in done.error and "retrying (attempt 2 of 2)" in done.error
    assert {h["attempt"] for h in done.history} == {1, 2}  # the lost attempt's epochs kept
    (ckpt,) = Checkpoint.objects.all()
    assert ckpt.run_id == run.pk
    assert sorted(p.name for p in checkpoint_root().glob("v*")) == [f"v{ckpt.version}"]


def test_a_duplicate_delivery_trains_once(worker, tmp_path):
    from training.tasks import train_run

    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 2}, enqueue=False)
    first, second = train_run.delay(run.pk), train_run.delay(run.pk)
    results = sorted([first.get(timeout=180), second.get(timeout=180)])
    assert results == ["done: v1", f"run {run.pk} is already done"]
    assert Checkpoint.objects.count() == 1 and run_status(run.pk).attempts == 1


def test_cancel_while_the_worker_trains(worker, tmp_path):
    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 300, "n_boot": 0})
    wait_for(lambda: run_status(run.pk).epoch >= 1, what="training to start", worker=worker)
    cancel_run(run_status(run.pk))
    done = wait_for(lambda: (r := run_status(run.pk)).is_finished and r, what="the cancel")
    assert done.status == Status.CANCELLED and done.epoch < 300
    assert not Checkpoint.objects.exists() and not list(checkpoint_root().glob("v*"))


def test_a_queued_learning_curve_is_computed_by_the_worker(worker, tmp_path):
    from training.models import LearningCurve

    make_study(tmp_path, occupations=12, images=4)  # 24 tasks
    (snapshot_id,) = command("snapshot", "--include-synthetic")
    out = io.StringIO()
    call_command("learning_curve", snapshot_id, "--draws", "2", "--queue", stdout=out)
    assert out.getvalue().strip() == f"learning curve of snapshot {snapshot_id} queued"
    curve = wait_for(
        lambda: LearningCurve.objects.filter(snapshot_id=snapshot_id, status="done").first(),
        what="the learning curve",
        worker=worker,
    )
    assert len(curve.points) == 20 and curve.fit["gain_next_500"] is not None
    assert "training.tasks.learning_curve" in worker.tail()
    # stored: asking again prints it rather than queueing a second one
    out = io.StringIO()
    call_command("learning_curve", snapshot_id, "--queue", stdout=out)
    assert "500 more rankings would" in out.getvalue()
