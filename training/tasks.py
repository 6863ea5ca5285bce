"""Celery tasks: thin wrappers that take ids and call the services.

``train_run`` and ``evaluate_checkpoint`` go to the ``gpu`` queue; the others to
``default`` (``web/celery.py``), ``perspective_report`` included (a report over every
ranking, its items scored once: it must not block training). Services queue tasks by name
(``core.queue``), so no service imports this module. torch and the model code are imported
inside the tasks, never at worker start, so a forking pool's parent never
touches CUDA. When a worker that consumes the ``gpu`` queue starts, it removes
orphaned checkpoint folders and recovers runs its dead predecessor held
(``training.runs.services`` explains the policy).
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from training.schedule_settings import TASK_NAME

log = logging.getLogger(__name__)


@shared_task(
    name="training.tasks.train_run",
    acks_late=True,
    reject_on_worker_lost=True,
    # Past the run's own soft limit (checked between steps), for prefork pools.
    soft_time_limit=settings.TRAINING_RUNS["SOFT_TIME_LIMIT"] + 120,
    time_limit=settings.TRAINING_RUNS["SOFT_TIME_LIMIT"] + 600,
)
def train_run(run_id: int) -> str:
    """Train one run (idempotent: a run already claimed or finished is left alone)."""
    from training.runs.services import execute_run

    return execute_run(run_id, train_run.request.hostname)


@shared_task(name="training.tasks.dispatch_run", acks_late=True)
def dispatch_run(run_id: int, task_id: str | None, after_augmentation: int | None) -> bool:
    """Send a started run on to the gpu queue (from the outbox: idempotent, a run no longer
    queued is left alone)."""
    from training.runs.dispatch import dispatch_run as dispatch

    return dispatch(run_id, task_id, after_augmentation)


@shared_task(name="training.tasks.augment_snapshot", acks_late=True, reject_on_worker_lost=True)
def augment_snapshot(augmentation_id: int, encoder: str | None = None) -> dict:
    """Paraphrase a snapshot (idempotent: a finished augmentation is reused)."""
    from training.runs.augmentation import run_augmentation

    augmentation = run_augmentation(augmentation_id, encoder)
    return {"augmentation": augmentation.pk, "status": augmentation.status}


@shared_task(name="training.tasks.generate_images", acks_late=True, reject_on_worker_lost=True)
def generate_images(study_id: int, images_per_prompt: int) -> dict:
    """A validation study's missing images from the image generator (idempotent: the
    images it has are skipped)."""
    from training.image_generation import generate_images as generate

    return generate(study_id, images_per_prompt)


@shared_task(name="training.tasks.evaluate_checkpoint", acks_late=True)
def evaluate_checkpoint(checkpoint_id: int, snapshot_id: int) -> int:
    """Score a checkpoint on a snapshot's eval split (once; reused after)."""
    from training.models import Checkpoint, DatasetSnapshot
    from training.registry.evaluation import evaluate

    evaluation = evaluate(
        Checkpoint.objects.get(pk=checkpoint_id), DatasetSnapshot.objects.get(pk=snapshot_id)
    )
    return evaluation.pk


@shared_task(name="training.tasks.perspective_report", acks_late=True)
def perspective_report(
    checkpoint_id: int, snapshot_id: int, fields: list[str] | None = None
) -> list[str]:
    """Compute and store a checkpoint's perspective report on a snapshot (what is missing
    only: stored fields are reused); returns the fields now stored."""
    from training.models import Checkpoint, DatasetSnapshot
    from training.perspectives.services import compute_reports

    summaries = compute_reports(
        Checkpoint.objects.get(pk=checkpoint_id),
        DatasetSnapshot.objects.get(pk=snapshot_id),
        fields,
    )
    return [s.field for s in summaries]


@shared_task(name="training.tasks.update_priorities", acks_late=True)
def update_priorities(study_id: int) -> dict:
    """An ``active`` study's task priorities from the current head
    (``training.registry.sampling``)."""
    from training.registry.sampling import update_priorities as update

    result = update(study_id)
    return {"study": study_id, "version": result.version, "basis": result.basis}


@shared_task(name=TASK_NAME, bind=True, acks_late=True)
def scheduled_retrain(self, **kwargs) -> list[dict]:
    """Celery beat entry point (``training.schedules``); settings are the PeriodicTask's kwargs."""
    from training.schedules import run_schedule

    name = kwargs.pop("schedule", None)
    # Beat names the PeriodicTask in a message header: a request attribute in a
    # worker, inside ``request.headers`` when applied eagerly.
    headers = self.request.headers or {}
    beat_name = self.request.get("periodic_task_name") or headers.get("periodic_task_name")
    decisions = run_schedule(beat_name or name or "manual run", kwargs)
    return [{"id": d.pk, "decision": d.decision, "reason": d.reason} for d in decisions]


@worker_ready.connect
def recover_on_start(sender, **kwargs) -> None:
    """A gpu worker starting up cleans after dead predecessors (see the module doc)."""
    queues = {q.name for q in sender.task_consumer.queues} if sender.task_consumer else set()
    if "gpu" not in queues:
        return
    from django.db import transaction

    from training.registry.services import sweep_orphans
    from training.runs.services import recover_lost_runs

    removed = sweep_orphans()
    with transaction.atomic():
        requeued = recover_lost_runs(sender.hostname)
    if removed or requeued:
        log.warning("gpu worker start: removed %s, requeued runs %s", removed, requeued)


@shared_task(name="training.tasks.sweep_lost_runs")
def sweep_lost_runs() -> list[int]:
    """Beat's lost-run sweep (default queue, every ``SWEEP_EVERY`` s): runs whose holder
    is gone are retried or failed (``training.runs.recovery``); the requeued ids."""
    from django.db import transaction

    from training.runs.services import recover_lost_runs

    with transaction.atomic():
        return recover_lost_runs()


@shared_task(name="training.tasks.learning_curve", acks_late=True)
def learning_curve(curve_id: int) -> str:
    """Compute a queued learning curve (default queue; a finished one is left as it is)."""
    from training.runs.learning_curves import run_queued

    return run_queued(curve_id)
