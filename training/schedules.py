"""Scheduled retraining: the policy and the scheduled step (its beat task: ``training.tasks``).

A schedule is a django-celery-beat ``PeriodicTask`` running
``training.scheduled_retrain``; its settings (``ScheduleSettings``) are stored as the
task's JSON kwargs, and staff edit them as fields on the schedule's admin page
(``training.admin.ScheduleForm``), which checks them before it saves. A schedule counts
the new rankings of its studies only (``studies``: collection study slugs, the default
study when empty) since the newest snapshot of those studies, and snapshots those;
another study's rankings, and a validation study's ever, never count. Its runs start
from its ``recipe`` (``training.ml.recipes``; empty: the default one).

Each step first settles the runs this schedule started that have finished
(promotion policy: ``manual`` leaves the new version a candidate, ``auto``
promotes it only when its paired comparison against the active version on the
new snapshot has a 95% interval above zero), then decides whether to retrain.
Every decision is a ``RetrainDecision`` row with its reason.

Never two retrainings at once, by two rules:
- a step holds the retraining lock from its decision until its run is queued
  (the run's row exists, status ``queued``; its augmentation and training then
  run on the workers); a step that cannot take the lock at once records "skip"
  and returns. On PostgreSQL the lock is a session advisory lock
  (``pg_try_advisory_lock``): it works across worker processes and hosts, and
  the server drops it when the holder's connection dies, so a killed worker
  never leaves it held and no timeout has to outlast a step. On SQLite (the
  embedded mode, one machine) it is an ``flock`` on a file under ``VAR_DIR``,
  which the kernel drops when the holder dies.
- while any ``TrainingRun`` is not finished (queued included), the policy skips:
  the run itself, however long, is seen as a row, not as a held lock.
"""

import fcntl
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from annotation.errors import StudyNotFound
from annotation.models import Study
from annotation.studies import lifecycle as studies
from core.errors import StereorankError
from training import services
from training.errors import GroupsFall, ScheduleError
from training.models import RetrainDecision, TrainingRun
from training.schedule_settings import TASK_NAME, ScheduleSettings
from training.selectors import active_checkpoint
from training.snapshots.services import new_rankings_of

log = logging.getLogger(__name__)

# Arbitrary constant naming the advisory lock; any other user of
# advisory locks in this database must pick a different one.
RETRAIN_LOCK_KEY = 0x5354_5252  # "STRR"
DEFAULT_SCHEDULE = "Retrain on new rankings"


@dataclass(frozen=True)
class Decision:
    """One decision of the policy: ``retrain``, ``skip``, ``promote`` or ``keep``."""

    decision: str
    reason: str


def retrain_decision(
    new_rankings: int, running_run_id: int | None, settings: ScheduleSettings
) -> Decision:
    """Retrain only with at least M new rankings and no retraining already running."""
    if running_run_id is not None:
        return Decision("skip", f"a retraining is already running (run {running_run_id})")
    need = settings.min_new_rankings
    if new_rankings < need:
        noun = "ranking" if new_rankings == 1 else "rankings"
        return Decision("skip", f"only {new_rankings} new {noun}, need {need}")
    return Decision("retrain", f"{new_rankings} new rankings (need {need})")


def promotion_decision(
    promotion: str, version: int, comparison: dict | None, active_version: int | None
) -> Decision:
    """After a run: promote or keep the new version, by the schedule's policy.

    ``comparison`` is the paired comparison new - active on the new snapshot
    (``rho_a``, ``rho_b``, ``diff``, ``ci``, ``p_value``); None when there is no
    active version.
    """
    if promotion == "manual":
        return Decision("keep", f"promotion is manual; version {version} left as a candidate")
    if active_version is None:
        return Decision("promote", f"no active version; version {version} promoted")
    if comparison is None:
        raise ScheduleError("auto promotion against an active version needs a comparison")
    ci = comparison.get("ci")
    figures = (
        f"rho {comparison['rho_a']:.3f} vs {comparison['rho_b']:.3f} (version {active_version}), "
        f"diff {comparison['diff']:+.3f}"
    )
    if not ci:
        return Decision("keep", f"{figures}, no interval could be computed")
    interval = f"95% CI [{ci[0]:+.3f}, {ci[1]:+.3f}]"
    if ci[0] > 0:
        return Decision("promote", f"{figures}, {interval} above zero")
    return Decision("keep", f"{figures}, {interval} not above zero")


# --- the scheduled step ----------------------------------------------------------------------


def running_run_id() -> int | None:
    """The oldest training run not yet finished (queued counts as running)."""
    return (
        TrainingRun.objects.exclude(status__in=TrainingRun.FINISHED_STATUSES)
        .order_by("id")
        .values_list("id", flat=True)
        .first()
    )


@contextmanager
def retrain_lock() -> Iterator[bool]:
    """Try to take the retraining lock without waiting; yields whether it is held."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [RETRAIN_LOCK_KEY])
            held = cursor.fetchone()[0]
        try:
            yield held
        finally:
            if held:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [RETRAIN_LOCK_KEY])
        return
    path = Path(django_settings.VAR_DIR) / "retrain.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _record(schedule: str, decision: Decision, **links) -> RetrainDecision:
    log.info("schedule %s: %s: %s", schedule, decision.decision, decision.reason)
    return RetrainDecision.objects.create(
        schedule=schedule, decision=decision.decision, reason=decision.reason, **links
    )


def _unsettled_runs(schedule: str) -> list[TrainingRun]:
    """Finished runs this schedule started that have no promote/keep decision yet."""
    settled = RetrainDecision.objects.filter(run=OuterRef("pk"), decision__in=["promote", "keep"])
    return list(
        TrainingRun.objects.filter(
            decisions__schedule=schedule,
            decisions__decision="retrain",
            status__in=TrainingRun.FINISHED_STATUSES,
        )
        .exclude(Exists(settled))
        .select_related("checkpoint", "snapshot")
        .distinct()
        .order_by("id")
    )


def settle_run(schedule: str, run: TrainingRun, settings: ScheduleSettings) -> RetrainDecision:
    """Apply the promotion policy to one finished run of this schedule."""
    if run.status != TrainingRun.Status.DONE:
        why = f": {run.error}" if run.error else ""
        return _record(schedule, Decision("keep", f"run {run.pk} {run.status}{why}"), run=run)
    checkpoint = run.checkpoint
    current = active_checkpoint()
    links = {"run": run, "checkpoint": checkpoint, "snapshot_id": run.snapshot_id}
    if current is not None and current.pk == checkpoint.pk:
        decision = Decision("keep", f"version {checkpoint.version} is already active")
        return _record(schedule, decision, **links)
    comparison = None
    if settings.promotion == "auto" and current is not None:
        try:
            # The active version is scored on the candidate's snapshot first (once: stored),
            # or the comparison would need an evaluation nothing else makes.
            services.evaluate(current, run.snapshot)
            comparison = services.compare(checkpoint, current, run.snapshot)
        except StereorankError as error:  # settled as kept: staff can still promote by hand
            reason = f"version {checkpoint.version} not compared with {current.version}: {error}"
            return _record(schedule, Decision("keep", reason), **links)
    decision = promotion_decision(
        settings.promotion, checkpoint.version, comparison, current.version if current else None
    )
    if decision.decision == "promote" and current is not None and settings.group_fields:
        decision = _group_decision(decision, checkpoint, current, run.snapshot, settings)
    if decision.decision == "promote":
        try:  # the group check every promotion runs (every field), reports computed here
            services.promote(checkpoint, reason=decision.reason, actor=f"schedule {schedule}")
        except GroupsFall as error:
            decision = Decision("keep", f"{decision.reason}, but {error}")
    return _record(schedule, decision, **links)


def _group_decision(
    pooled: Decision, checkpoint, current, snapshot, settings: ScheduleSettings
) -> Decision:
    """The pooled decision to promote, kept unless a group of ``group_fields`` falls."""
    from training.perspectives.group_check import group_losses, verdict

    try:
        checked, losses = group_losses(
            checkpoint, current, snapshot, settings.group_fields, settings.group_margin
        )
    except StereorankError as error:
        return Decision("keep", f"{pooled.reason}, but the groups were not checked: {error}")
    words = verdict(checked, losses, settings.group_margin, current.version)
    if losses:
        return Decision("keep", f"{pooled.reason}, but {words}")
    return Decision("promote", f"{pooled.reason}; {words}")


def schedule_studies(settings: ScheduleSettings) -> list[Study]:
    """The schedule's studies (the default one when it names none); ``ScheduleError`` for
    a slug that names no study or a validation study (its rankings never train)."""
    found = [studies.resolve(slug) for slug in settings.studies or (None,)]
    validation = [s.slug for s in found if s.kind == Study.Kind.VALIDATION]
    if validation:
        raise ScheduleError(f"studies: {', '.join(validation)} is a validation study.")
    return found


def _start_retraining(
    schedule: str, settings: ScheduleSettings, why: Decision, scope: list[Study]
) -> RetrainDecision:
    """Snapshot the schedule's studies and queue the run (its augmentation first, when
    asked for)."""
    try:
        # One transaction: a run that cannot start leaves no snapshot behind, so
        # its rankings still count as new at the next tick.
        with transaction.atomic():
            snapshot = services.create_snapshot(
                include_synthetic=settings.include_synthetic, studies=scope
            )
            run = services.start_run(
                snapshot,
                encoder=settings.encoder or None,
                recipe=settings.recipe or None,
                epochs=settings.epochs,
                paraphrases=settings.paraphrases,
                search=settings.search or None,
            )
    except StereorankError as error:  # the services' refusals: recorded, then the task fails
        reason = f"{why.reason}, but the retraining could not start: {error}"
        _record(schedule, Decision("skip", reason))
        raise
    return _record(schedule, why, snapshot=snapshot, run=run)


def scheduled_step(schedule: str, settings: ScheduleSettings) -> list[RetrainDecision]:
    """One beat tick: settle this schedule's finished runs, then retrain or skip."""
    with retrain_lock() as held:
        if not held:
            busy = Decision("skip", "another scheduled step holds the retraining lock")
            return [_record(schedule, busy)]
        decisions = [settle_run(schedule, r, settings) for r in _unsettled_runs(schedule)]
        try:
            scope = schedule_studies(settings)
        except (ScheduleError, StudyNotFound) as error:
            unusable = Decision("skip", f"the schedule's studies are unusable: {error}")
            return [*decisions, _record(schedule, unusable)]
        new = new_rankings_of(scope, settings.include_synthetic)
        decision = retrain_decision(new, running_run_id(), settings)
        if decision.decision != "retrain":
            return [*decisions, _record(schedule, decision)]
        return [*decisions, _start_retraining(schedule, settings, decision, scope)]


def run_schedule(schedule: str, kwargs: dict) -> list[RetrainDecision]:
    """One tick of ``schedule`` with its PeriodicTask kwargs; unusable settings are
    recorded as a skip, then raised."""
    try:
        settings = ScheduleSettings.from_kwargs(kwargs)
    except ScheduleError as error:
        _record(schedule, Decision("skip", f"the schedule's settings are unusable: {error}"))
        raise
    return scheduled_step(schedule, settings)


def ensure_default_schedule(
    every_minutes: int = 60, enabled: bool = False, recipe: str = ""
) -> tuple[PeriodicTask, bool]:
    """Create the default schedule (disabled, hourly, the default settings but ``recipe``)
    unless one of that name exists; ``ScheduleError`` for an unknown recipe.

    An existing schedule is left exactly as staff edited it; (task, created).
    """
    if every_minutes < 1:
        raise ScheduleError("The interval must be at least one minute.")
    schedule = ScheduleSettings.from_kwargs({"recipe": recipe})
    with transaction.atomic():
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=every_minutes, period=IntervalSchedule.MINUTES
        )
        return PeriodicTask.objects.get_or_create(
            name=DEFAULT_SCHEDULE,
            defaults={
                "task": TASK_NAME,
                "interval": interval,
                "kwargs": json.dumps(asdict(schedule), indent=1),
                "enabled": enabled,
                "description": (
                    "Snapshot, augment and train when enough new rankings of its studies "
                    "arrived. Its settings are edited as fields on this page: studies, new "
                    "rankings before retraining, encoder, recipe, epochs, paraphrases, "
                    "synthetic annotators, recipe search, promotion (manual or auto) and "
                    "the groups auto promotion checks."
                ),
            },
        )
