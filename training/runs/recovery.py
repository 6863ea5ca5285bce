"""Who holds a training run, and what happens when the holder is lost.

A run is claimed by a conditional UPDATE ``queued -> embedding`` that also bumps
``attempts``; every later write of that attempt is conditional on the same
``attempts`` (``runs._Attempt``), so a task delivered twice trains once, and a
worker that was written off as lost cannot overwrite the attempt that replaced it.

Lost workers (decision): a run held by a worker that died (SIGKILL, OOM, lost
node) is retried once, then failed with the reason. It is detected two ways:
when a gpu worker starts (``worker_ready``) it recovers runs held by a dead
process of its own node name (same host name, pid gone) and runs whose
heartbeat is older than ``TRAINING_RUNS["STALE_AFTER"]``; and a redelivered
message (Redis visibility timeout) that finds its run held by such a worker
does the same. The first gives a prompt retry after a restart without a short
visibility timeout, which would redeliver long healthy runs.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from training.models import TrainingRun

log = logging.getLogger(__name__)
Status = TrainingRun.Status


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_lost(run: TrainingRun, node: str, now=None) -> bool:
    """Is the worker holding ``run`` gone? (its process on this node, or a stale heartbeat)"""
    if run.status not in TrainingRun.ACTIVE_STATUSES:
        return False
    now = now or timezone.now()
    stale = timedelta(seconds=settings.TRAINING_RUNS["STALE_AFTER"])
    if run.heartbeat_at is None or now - run.heartbeat_at > stale:
        return True
    return run.worker == node and run.worker_pid != os.getpid() and not _pid_alive(run.worker_pid)


def write_off(run: TrainingRun) -> str:
    """Requeue a lost run for one more attempt, or fail it; returns the new status."""
    retry = run.attempts < settings.TRAINING_RUNS["MAX_ATTEMPTS"]
    what = f"worker {run.worker or '?'} (pid {run.worker_pid}) was lost during {run.status}"
    fields = (
        {"status": Status.QUEUED, "error": f"attempt {run.attempts}: {what}; retried"}
        if retry
        else {
            "status": Status.FAILED,
            "error": f"{what} on attempt {run.attempts}; not retried again",
            "finished_at": timezone.now(),
        }
    )
    TrainingRun.objects.filter(pk=run.pk, status=run.status, attempts=run.attempts).update(
        worker="", worker_pid=None, **fields
    )
    log.warning("run %s: %s; now %s", run.pk, what, fields["status"])
    return fields["status"]


def claim(run_id: int, node: str) -> tuple[TrainingRun | None, str]:
    """Take a queued run for this process; ``(None, why)`` when it is not to be trained here."""
    for _ in range(2):
        claimed = TrainingRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
            status=Status.EMBEDDING,
            worker=node,
            worker_pid=os.getpid(),
            heartbeat_at=timezone.now(),
            started_at=timezone.now(),
            attempts=F("attempts") + 1,
            epoch=0,
            history=[],
        )
        run = TrainingRun.objects.filter(pk=run_id).first()
        if run is None:
            return None, f"there is no run {run_id}"
        if claimed:
            return run, "claimed"
        if run.is_finished:
            return None, f"run {run_id} is already {run.status}"
        if not is_lost(run, node):
            return None, f"run {run_id} is {run.status} on {run.worker}"
        if write_off(run) != Status.QUEUED:
            return None, f"run {run_id} failed: its worker was lost again"
    return None, f"run {run_id} could not be claimed"
