"""The schedule for real: celery beat (DatabaseScheduler) and a worker process, with
Redis and PostgreSQL, take a study from rankings to an automatically promoted version."""

import json
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection
from django_celery_beat.models import IntervalSchedule, PeriodicTask
from training_study import ENCODER, make_study

from tests.training.test_training_worker import REPO, Worker, _purge_broker, wait_for
from training.models import Checkpoint, RetrainDecision, TrainingRun

# Beat and worker subprocesses: this test database through a PostgreSQL DATABASE_URL,
# tasks through the Redis broker.
pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture
def services_env(transactional_db, tmp_path, embedding_cache) -> dict:
    """Environment of the beat and worker subprocesses: this test database, this broker."""
    import os

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
        "STEREORANK_CHECKPOINT_DIR": str(tmp_path / "checkpoints"),
        "STEREORANK_EMBEDDING_CACHE": str(embedding_cache),
        "STEREORANK_ENCODER": ENCODER,
        "STEREORANK_DEVICE": "cpu",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def test_beat_retrains_on_new_rankings_and_auto_promotes(services_env, tmp_path):
    make_study(tmp_path)  # 12 synthetic rankings
    every, _ = IntervalSchedule.objects.get_or_create(every=2, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(
        name="every two seconds",
        task="training.scheduled_retrain",
        interval=every,
        kwargs=json.dumps(
            {
                "min_new_rankings": 5,
                "promotion": "auto",
                "encoder": ENCODER,
                "epochs": 2,
                "paraphrases": 0,
                "include_synthetic": True,
            }
        ),
    )
    _purge_broker()
    worker = Worker(tmp_path / "worker.log", services_env).start()
    beat_log = (tmp_path / "beat.log").open("wb")
    beat = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "web",
            "beat",
            "--loglevel",
            "INFO",
            "--pidfile=",
            "-s",
            str(tmp_path / "beat-schedule"),
        ],
        cwd=REPO,
        env=services_env,
        stdout=beat_log,
        stderr=subprocess.STDOUT,
    )
    try:
        promoted = wait_for(
            lambda: RetrainDecision.objects.filter(
                schedule="every two seconds", decision="promote"
            ).first(),
            timeout=300,
            what="a promote decision",
            worker=worker,
        )
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        beat_log.close()
        worker.stop()
        _purge_broker()
    [retrain] = RetrainDecision.objects.filter(decision="retrain")
    assert retrain.schedule == "every two seconds" and retrain.reason == "12 new rankings (need 5)"
    run = TrainingRun.objects.get()
    assert run == retrain.run and run.status == "done" and run.epochs == 2
    assert promoted.run == run and promoted.checkpoint == run.checkpoint
    assert promoted.reason == f"no active version; version {run.checkpoint.version} promoted"
    assert Checkpoint.objects.get(status="active") == run.checkpoint
    # the ticks while it trained saw the run and skipped; none started a second one
    skipped = RetrainDecision.objects.filter(decision="skip").values_list("reason", flat=True)
    assert all("already running" in r or "new rankings, need 5" in r for r in skipped), skipped
