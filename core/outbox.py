"""The outbox's relay: send what ``core.queue.after_commit`` could not.

``relay`` runs every ``core.queue.RELAY_EVERY`` seconds from beat (``core.tasks.relay_outbox``;
beat runs wherever the workers do, ``bin/run`` included) and once when a worker starts
(``web.celery``). It takes the rows older than ``GRACE`` (younger ones are being sent by
the request that wrote them), oldest first, locked so two relays never send one row
(``SKIP LOCKED`` on PostgreSQL; on SQLite no transaction stays open across a send, see
``_relay_unlocked``), and stops at the first send the broker refuses: the
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
    if connection.features.has_select_for_update_skip_locked:
        sent = _relay_locked(grace, batch)
    else:
        sent = _relay_unlocked(grace, batch)
    return sent, OutboxMessage.objects.count()


def _pending(grace: timedelta):
    return OutboxMessage.objects.filter(created_at__lte=timezone.now() - grace).order_by("pk")


def _refused(message: OutboxMessage) -> None:
    OutboxMessage.objects.filter(pk=message.pk).update(
        attempts=F("attempts") + 1, last_error="the broker refused the send"
    )


def _relay_locked(grace: timedelta, batch: int) -> int:
    """PostgreSQL: the rows locked (``SKIP LOCKED``) while they are sent, so two relays never
    send one row; row locks hold up no other writer."""
    with transaction.atomic():
        sent: list[int] = []
        for message in _pending(grace).select_for_update(skip_locked=True)[:batch]:
            if not send_now(message.task, message.args):
                _refused(message)
                break
            sent.append(message.pk)
        OutboxMessage.objects.filter(pk__in=sent).delete()
    return len(sent)


def _relay_unlocked(grace: timedelta, batch: int) -> int:
    """SQLite (the embedded mode): no transaction is held across a send, since SQLite's one
    write lock would hold up every other writer (the portal's submits) for as long as the
    broker takes; each sent row is deleted on its own. Two relays at once may send a row
    twice, which the outbox allows (its tasks are idempotent)."""
    sent = 0
    for message in list(_pending(grace)[:batch]):
        if not send_now(message.task, message.args):
            _refused(message)
            break
        OutboxMessage.objects.filter(pk=message.pk).delete()
        sent += 1
    return sent
