"""The one Celery app. Queues: ``default`` (augmentation, the retraining schedule, the
perspective and quality reports, the active sampler's priorities) and ``gpu`` (training,
evaluation); tasks are routed by name in ``task_routes``."""

import os

from celery import Celery
from celery.signals import beat_init, worker_ready, worker_shutdown
from django.conf import settings
from kombu import Queue

from core.heartbeats import node_component
from core.queue import RELAY_EVERY
from web.heartbeat import start_heartbeat, stop_heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")

app = Celery("stereorank")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_queues=[Queue("default"), Queue("gpu")],
    task_default_queue="default",
    task_routes={
        "training.tasks.train_run": {"queue": "gpu"},
        "training.tasks.evaluate_checkpoint": {"queue": "gpu"},
    },
    # Long work: acknowledge after the task ran, so a killed worker's task is
    # delivered again; take one message at a time.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_track_started=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    # The outbox's relay (core.outbox): what a send after a commit could not hand over.
    beat_schedule={
        "relay-outbox": {"task": "core.tasks.relay_outbox", "schedule": RELAY_EVERY},
        # Runs whose gpu worker died, whatever name its replacement has (training/runs/recovery.py).
        "sweep-lost-runs": {
            "task": "training.tasks.sweep_lost_runs",
            "schedule": float(settings.TRAINING_RUNS["SWEEP_EVERY"]),
        },
    },
)
app.autodiscover_tasks()


# Workers and beat write heartbeats for /healthz (web/heartbeat.py; web/health.py reads them).
@worker_ready.connect
def _worker_heartbeat(sender, **kwargs) -> None:
    """A ready worker beats for each queue it consumes (for /healthz) and under its own
    node name (for the lost-run sweep: the name a training run records as its holder)."""
    queues = sorted(q.name for q in sender.task_consumer.queues) if sender.task_consumer else []
    start_heartbeat([f"worker:{q}" for q in queues] + [node_component(sender.hostname)])


@worker_ready.connect
def _relay_outbox(sender, **kwargs) -> None:
    """A worker that starts sends what the outbox holds (a broker that was down)."""
    from core.outbox import relay

    relay()


@beat_init.connect
def _beat_heartbeat(sender, **kwargs) -> None:
    """Beat beats once started: ``celery beat``, or embedded in a worker (``worker -B``,
    bin/run: Celery sends ``beat_init`` in the forked beat process too)."""
    start_heartbeat(["beat"])


@worker_shutdown.connect
def _stop_heartbeat(sender, **kwargs) -> None:
    stop_heartbeat()


# Once a day: expired sessions and log-in attempts past their cool-off are deleted
# (annotation.participants.traces.forget_expired; docs/privacy.md says how long each is kept).
FORGET_EXPIRED_EVERY = 24 * 60 * 60
app.conf.beat_schedule = {
    **(app.conf.beat_schedule or {}),
    "forget-expired": {
        "task": "annotation.tasks.forget_expired",
        "schedule": FORGET_EXPIRED_EVERY,
    },
}
