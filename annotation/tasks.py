"""The annotation side's Celery tasks (the ``default`` queue): thin, plain arguments in."""

from __future__ import annotations

from celery import shared_task


@shared_task(
    name="annotation.tasks.refresh_quality_report", acks_late=True, reject_on_worker_lost=True
)
def refresh_quality_report(include_synthetic: bool, n_boot: int) -> float:
    """Compute and store the quality report of that kind if the data moved on; returns the
    seconds the stored report took to compute."""
    from .quality_store import refresh

    return refresh(include_synthetic, n_boot).seconds


@shared_task(name="annotation.tasks.adapt_overlap", acks_late=True)
def adapt_overlap(task_id: int) -> bool:
    """One more annotator for a task whose rankings disagree (``annotation.overlap``)."""
    from .overlap import adapt

    return adapt(task_id)
