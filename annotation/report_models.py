"""Stored reports: what a worker computed, with the version of the data it describes."""

from django.db import models


class QualityReport(models.Model):
    """The quality report of one kind (synthetic annotators in or out, bootstrap draws),
    as ``annotation.quality_report`` computed it from the data at ``data_version``
    (``annotation.quality_store``). One row per kind, replaced by each refresh; erasing
    an annotator deletes them all (they name annotators by pseudonym)."""

    include_synthetic = models.BooleanField()
    n_boot = models.PositiveIntegerField()
    data_version = models.CharField(max_length=200)
    computed_at = models.DateTimeField()
    seconds = models.FloatField(help_text="How long the computation took.")
    report = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["include_synthetic", "n_boot"], name="one_quality_report_per_kind"
            )
        ]

    def __str__(self) -> str:
        return f"quality report ({self.n_boot} draws) of {self.computed_at:%Y-%m-%d %H:%M}"
