"""Sending a queued run to the workers.

``start_run`` and the lost-run recovery write a ``DISPATCH`` row in the outbox
(``core.queue.after_commit``) with the run, so a run started while the broker is down is
sent when it returns rather than left queued. ``dispatch_run`` (a task on the default
queue) sends a run still queued on to the gpu queue, after its augmentation when that has
yet to run; a second relay finds it no longer queued, or ``claim`` trains it once.
Tasks are named, not imported: ``training.tasks`` calls this module, not the reverse.
"""

from __future__ import annotations

import logging

from kombu.exceptions import OperationalError

from core import queue
from training.models import TrainingRun

log = logging.getLogger(__name__)

DISPATCH = "training.tasks.dispatch_run"
"""The task that sends a queued run on (``dispatch_run``): it goes through the outbox, so a
run started while the broker is down is sent when the broker returns, not left queued."""


def dispatch_run(
    run_id: int, task_id: str | None = None, after_augmentation: int | None = None
) -> bool:
    """Send a run that is still queued (``enqueue_run``); False for one that is not (it was
    cancelled, or a relay sent it twice and it is already trained: ``claim`` trains it once),
    and for one whose send failed (its dispatch goes back in the outbox, for the relay)."""
    if not TrainingRun.objects.filter(pk=run_id, status=TrainingRun.Status.QUEUED).exists():
        return False
    try:
        enqueue_run(run_id, task_id, after_augmentation)
    except (OperationalError, OSError):  # the broker went away since it gave us this task
        # Back in the outbox: its message is acknowledged once this returns, so a failed
        # send here would otherwise leave the run queued with nothing to send it.
        queue.after_commit(DISPATCH, run_id, task_id, after_augmentation)
        log.warning("run %s: the broker refused it; its dispatch is back in the outbox", run_id)
        return False
    return True


def enqueue_run(
    run_id: int, task_id: str | None = None, after_augmentation: int | None = None
) -> None:
    """Send the run to the gpu queue, after its augmentation when that has yet to run."""
    train = queue.task("training.tasks.train_run", run_id)
    if after_augmentation is None:
        train.apply_async(task_id=task_id)
    else:
        augment = queue.task(
            "training.tasks.augment_snapshot", after_augmentation, encoder_for_run(run_id)
        )
        (augment | train.set(task_id=task_id)).apply_async()


def encoder_for_run(run_id: int) -> str:
    return TrainingRun.objects.values_list("encoder", flat=True).get(pk=run_id)
