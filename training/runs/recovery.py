"""Who holds a training run, and what happens when the holder is lost.

A run is claimed by a conditional UPDATE ``queued -> embedding`` that also bumps
``attempts``; every later write of that attempt is conditional on the same
``attempts`` (``runs._Attempt``), so a task delivered twice trains once, and a
worker that was written off as lost cannot overwrite the attempt that replaced it.

Lost workers (decision): a run held by a worker that died (SIGKILL, OOM, a preempted
node, a replaced container) is retried (up to ``MAX_ATTEMPTS``), then failed with the
reason. Its holder is lost, whatever name a replacement worker gets, when:

- the holder's own heartbeat (``node:<its node name>``, beaten every 15 s by every
  worker's daemon thread, so a long step on a live worker keeps it) has been seen
  missing by the sweep for ``WORKER_LOST_AFTER`` seconds. A heartbeat is missing when
  none was beaten in the last two beats; the sweep notes when it first saw that
  (``TrainingRun.holder_missing_since``) and clears the note when the holder beats
  again. A sweep that cannot read the heartbeats (Redis down) writes nothing off and
  forgets what it noted, so Redis down, or back with its keys gone, never makes a live
  worker look lost;
- its pid is gone on its own node (checked only by a worker of that node name, at
  start: a pid means nothing on another host);
- the run's own heartbeat is older than ``STALE_AFTER`` (30 minutes), the backstop.

The sweep (``recover_lost_runs``) runs from beat every ``SWEEP_EVERY`` seconds (10) on
the default queue and when a gpu worker starts, so a dead worker's run is retried within
about two heartbeats + ``WORKER_LOST_AFTER`` + two sweeps (30 + 60 + 20 s); a
redelivered message (Redis visibility timeout) that finds its run held by a lost worker
does the same, and one that finds its run finished or claimed again leaves it alone.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from core.heartbeats import read_nodes
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


def _dead_on_this_node(run: TrainingRun, node: str | None) -> bool:
    return (
        bool(node)
        and run.worker == node
        and run.worker_pid != os.getpid()
        and (not _pid_alive(run.worker_pid))
    )


def is_lost(run: TrainingRun, node: str | None, now: datetime | None = None) -> bool:
    """Is the worker holding ``run`` gone by what this process can tell without the
    heartbeats? (its process on this node, or the run's own heartbeat past the backstop)"""
    if run.status not in TrainingRun.ACTIVE_STATUSES:
        return False
    now = now or timezone.now()
    stale = timedelta(seconds=settings.TRAINING_RUNS["STALE_AFTER"])
    if run.heartbeat_at is None or now - run.heartbeat_at > stale:
        return True
    return _dead_on_this_node(run, node)


def holder_missing(runs: list[TrainingRun], now: datetime | None = None) -> list[TrainingRun]:
    """The runs among ``runs`` whose holder's own heartbeat has been missing for
    ``WORKER_LOST_AFTER``; notes (or clears) when each was first seen missing. Nothing
    when the heartbeats cannot be read: then every note is forgotten."""
    now = now or timezone.now()
    held = [run for run in runs if run.worker]
    if not held:
        return []
    try:
        beats = read_nodes({run.worker for run in held})
    except Exception as exc:  # noqa: BLE001 - unknown is not missing
        log.warning("lost-run sweep: heartbeats unreadable (%r); nothing written off", exc)
        TrainingRun.objects.filter(pk__in=[r.pk for r in held]).update(holder_missing_since=None)
        return []
    fresh = 2 * settings.HEALTH["HEARTBEAT_SECONDS"]
    limit = timedelta(seconds=settings.TRAINING_RUNS["WORKER_LOST_AFTER"])
    lost = []
    for run in held:
        beating = time.time() - beats.get(run.worker, 0.0) <= fresh
        mine = TrainingRun.objects.filter(pk=run.pk, attempts=run.attempts, worker=run.worker)
        if beating:
            if run.holder_missing_since is not None:
                mine.update(holder_missing_since=None)
        elif run.holder_missing_since is None:
            mine.update(holder_missing_since=now)
        elif now - run.holder_missing_since >= limit:
            lost.append(run)
    return lost


def write_off(run: TrainingRun) -> str:
    """Requeue a lost run for one more attempt, or fail it; returns the new status."""
    most = settings.TRAINING_RUNS["MAX_ATTEMPTS"]
    retry = run.attempts < most
    what = f"worker {run.worker or '?'} (pid {run.worker_pid}) was lost during {run.status}"
    fields = (
        {
            "status": Status.QUEUED,
            "error": f"{what}; retrying (attempt {run.attempts + 1} of {most})",
        }
        if retry
        else {
            "status": Status.FAILED,
            "error": f"{what} on attempt {run.attempts} of {most}; not retried again",
            "finished_at": timezone.now(),
        }
    )
    TrainingRun.objects.filter(pk=run.pk, status=run.status, attempts=run.attempts).update(
        worker="", worker_pid=None, holder_missing_since=None, **fields
    )
    log.warning("run %s: %s; now %s", run.pk, what, fields["status"])
    return fields["status"]


def claim(run_id: int, node: str) -> tuple[TrainingRun | None, str]:
    """Take a queued run for this process; ``(None, why)`` when it is not to be trained here.
    A retried run keeps its earlier attempts' history (each entry names its attempt)."""
    for _ in range(2):
        claimed = TrainingRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
            status=Status.EMBEDDING,
            worker=node,
            worker_pid=os.getpid(),
            heartbeat_at=timezone.now(),
            holder_missing_since=None,
            started_at=timezone.now(),
            attempts=F("attempts") + 1,
            epoch=0,
        )
        run = TrainingRun.objects.filter(pk=run_id).first()
        if run is None:
            return None, f"there is no run {run_id}"
        if claimed:
            return run, "claimed"
        if run.is_finished:
            return None, f"run {run_id} is already {run.status}"
        if not is_lost(run, node) and not holder_missing([run]):
            return None, f"run {run_id} is {run.status} on {run.worker}"
        if write_off(run) != Status.QUEUED:
            return None, f"run {run_id} failed: its worker was lost again"
    return None, f"run {run_id} could not be claimed"
