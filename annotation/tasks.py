"""The annotation side's Celery tasks (the ``default`` queue): thin, plain arguments in."""

from __future__ import annotations

from celery import shared_task


@shared_task(
    name="annotation.tasks.refresh_quality_report", acks_late=True, reject_on_worker_lost=True
)
def refresh_quality_report(
    include_synthetic: bool, n_boot: int, study_id: int | None = None
) -> float:
    """Compute and store the study's quality report of that kind (the default study's for
    a message queued before reports were per study) if its data moved on; returns the
    seconds the stored report took to compute."""
    from annotation.models.studies import Study, default_study_pk
    from annotation.quality.store import refresh

    study = Study.objects.get(pk=study_id or default_study_pk())
    return refresh(include_synthetic, n_boot, study).seconds


@shared_task(name="annotation.tasks.adapt_overlap", acks_late=True)
def adapt_overlap(task_id: int) -> bool:
    """One more annotator for a task whose rankings disagree (``annotation.assignment.overlap``)."""
    from annotation.assignment.overlap import adapt

    return adapt(task_id)


@shared_task(name="annotation.tasks.forget_expired", acks_late=True)
def forget_expired() -> dict:
    """Delete expired sessions and log-in attempts past their cool-off (daily, by beat:
    ``annotation.participants.traces.forget_expired``); how many of each went."""
    from annotation.participants.traces import forget_expired as forget

    return forget()
