"""Stored reports: what a worker computed, with the version of the data it describes."""

from django.db import models

from .study_models import Study, default_study_pk


class QualityReport(models.Model):
    """A study's quality report of one kind (synthetic annotators in or out, bootstrap
    draws), as ``annotation.quality_report`` computed it from the study's data at
    ``data_version`` (``annotation.quality_store``). One row per study and kind, replaced
    by each refresh; erasing an annotator deletes them all (they name annotators by pseudonym)."""

    # Derived data: it goes with its study.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="quality_reports", default=default_study_pk
    )
    include_synthetic = models.BooleanField()
    n_boot = models.PositiveIntegerField()
    data_version = models.CharField(max_length=200)
    computed_at = models.DateTimeField()
    seconds = models.FloatField(help_text="How long the computation took.")
    report = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "include_synthetic", "n_boot"],
                name="one_quality_report_per_study_and_kind",
            )
        ]

    def __str__(self) -> str:
        return f"quality report ({self.n_boot} draws) of {self.computed_at:%Y-%m-%d %H:%M}"
