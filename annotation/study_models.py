"""Models of running a study: erasure records (recruitment and quotas to come).

Kept apart from ``annotation.models`` (which imports this module so that Django
registers them) so that each concept has a home of its own.
"""

from django.db import models
from django.utils import timezone


class Erasure(models.Model):
    """That one annotator's data was erased, when, and how many rankings went with it.

    Nothing here says whose: no annotator, no pseudonym. A snapshot frozen before
    ``erased_at`` holds labels that an erased annotator's rankings helped make
    (``annotation.selectors.erasures_after``).
    """

    class Via(models.TextChoices):
        PARTICIPANT = "participant", "The participant (portal or API)"
        STAFF = "staff", "Staff, on a request received by other means"

    erased_at = models.DateTimeField(default=timezone.now, db_index=True)
    rankings_removed = models.PositiveIntegerField()
    via = models.CharField(max_length=20, choices=Via.choices)

    class Meta:
        ordering = ["-erased_at"]

    def __str__(self) -> str:
        return f"erasure of {self.erased_at:%Y-%m-%d %H:%M} ({self.rankings_removed} rankings)"
