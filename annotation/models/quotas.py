"""Group quotas: how many annotators each group of a demographic field may hold in a
study, and the seats that count against them (``annotation.assignment.quotas``)."""

from django.core.exceptions import ValidationError
from django.db import models

from annotation.models.studies import study_field


class GroupQuota(models.Model):
    """How many annotators one group (answer) of a demographic field may hold in one study.

    ``value`` is one of the field's choices, "prefer not to say" (which also holds
    those who skipped the question: no answer is ever required), or "other" (answers
    in the annotator's own words); for a free-text field, an answer (case ignored).
    Groups without a quota are not limited.
    """

    study = study_field("quotas")
    field = models.ForeignKey(
        "annotation.DemographicField", on_delete=models.CASCADE, related_name="quotas"
    )
    value = models.CharField(max_length=200)
    target = models.PositiveIntegerField(help_text="Annotators this group may hold.")

    class Meta:
        ordering = ["field__order", "field__key", "value"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "field", "value"], name="one_quota_per_group_per_study"
            )
        ]

    def __str__(self) -> str:
        return f"{self.field.label}: {self.value} ({self.target})"

    def clean(self) -> None:
        allowed = self.field.quota_values() if self.field_id else None
        if allowed is not None and self.value not in allowed:
            raise ValidationError({"value": f"Use one of: {', '.join(sorted(allowed))}."})


class QuotaSeat(models.Model):
    """An annotator's place in a group quota, taken with their first task. It counts
    while their consent stands and they have ranked, or hold a reservation."""

    quota = models.ForeignKey(GroupQuota, on_delete=models.CASCADE, related_name="seats")
    annotator = models.ForeignKey(
        "annotation.AnnotatorProfile", on_delete=models.CASCADE, related_name="quota_seats"
    )
    taken_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["quota", "annotator"], name="one_seat_per_quota")
        ]
