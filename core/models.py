"""The outbox: a task to send once the transaction that wrote it commits.

``core.queue.after_commit`` writes a row in the caller's transaction, so the work to
follow is committed with the data it follows or not at all. The row is sent after the
commit and deleted once the broker took it; a send that fails (the broker down) leaves it
for ``core.outbox.relay`` (every ``core.queue.RELAY_EVERY`` seconds from beat, and when a worker
starts). Every task sent this way is idempotent, so a row relayed twice is harmless.
"""

from django.db import models
from django.utils import timezone


class OutboxMessage(models.Model):
    task = models.CharField(max_length=200, help_text="The Celery task's name.")
    args = models.JSONField(default=list, blank=True, help_text="Its positional arguments.")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Relays that failed.")
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.task}{tuple(self.args)}"
