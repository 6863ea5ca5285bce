"""The outbox's relay: send what ``core.queue.after_commit`` could not.

``relay`` runs every ``core.queue.RELAY_EVERY`` seconds from beat (``core.tasks.relay_outbox``;
beat runs wherever the workers do, ``bin/run`` included) and once when a worker starts
(``web.celery``). It takes the rows older than ``GRACE`` (younger ones are being sent by
the request that wrote them), oldest first, locked so two relays never send one row
(``SKIP LOCKED`` on PostgreSQL), and stops at the first send the broker refuses: the
rows stay, with their attempts counted, for the next relay. So once the broker is back,
every pending row goes within one relay interval. A row sent but not deleted (a crash
between the two) is sent again: every task sent through the outbox is idempotent.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from core.models import OutboxMessage
from core.queue import send_now

GRACE = timedelta(seconds=10)
BATCH = 500


def relay(grace: timedelta = GRACE, batch: int = BATCH) -> tuple[int, int]:
    """Send the pending rows older than ``grace``, at most ``batch``; (sent, left)."""
    with transaction.atomic():
        pending = OutboxMessage.objects.filter(created_at__lte=timezone.now() - grace)
        if connection.features.has_select_for_update_skip_locked:
            pending = pending.select_for_update(skip_locked=True)
        sent: list[int] = []
        for message in pending.order_by("pk")[:batch]:
            if not send_now(message.task, message.args):
                OutboxMessage.objects.filter(pk=message.pk).update(
                    attempts=F("attempts") + 1, last_error="the broker refused the send"
                )
                break
            sent.append(message.pk)
        OutboxMessage.objects.filter(pk__in=sent).delete()
    return len(sent), OutboxMessage.objects.count()
