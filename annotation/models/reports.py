"""Stored reports: what a worker computed, with the version of the data it describes."""

from django.db import models

from annotation.models.studies import Study, default_study_pk


class QualityReport(models.Model):
    """A study's quality report of one kind (synthetic annotators in or out, bootstrap
    draws), as ``annotation.quality.report`` computed it from the study's data at
    ``data_version`` (``annotation.quality.store``). One row per study and kind, replaced
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


class QualityAnnotatorRow(models.Model):
    """One annotator's row of a stored quality report (``quality_report.ANNOTATOR_COLUMNS``
    and more, in ``row``), kept beside the report rather than inside its JSON so that a
    page or the API reads the rows it shows, in any order, and not every annotator's;
    the sortable figures are columns (``None`` where undefined)."""

    report = models.ForeignKey(QualityReport, on_delete=models.CASCADE, related_name="rows")
    position = models.PositiveIntegerField(help_text="Its place in pseudonym order.")
    tasks = models.IntegerField()
    gold_score = models.FloatField(null=True)
    check_pass_rate = models.FloatField(null=True)
    consensus_rho = models.FloatField(null=True)
    median_seconds = models.FloatField(null=True)
    untouched_rate = models.FloatField(null=True)
    status = models.CharField(max_length=20)
    row = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["report", "position"], name="one_row_per_place")
        ]

    def __str__(self) -> str:
        return f"{self.row.get('pseudonym', '?')} in {self.report}"
