"""The core's one Celery task: the outbox relay (``core.outbox``), fired by beat."""

from celery import shared_task

from core.outbox import relay


@shared_task(name="core.tasks.relay_outbox", ignore_result=True)
def relay_outbox() -> tuple[int, int]:
    """Send the outbox's pending rows; (sent, left)."""
    return relay()
