"""Reads of the training side, one function per question (writes: the service modules)."""

from __future__ import annotations

from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.selectors import erasures_after

from .models import Checkpoint, DatasetSnapshot, Evaluation, TrainingRun


def active_checkpoint() -> Checkpoint | None:
    """The version the platform serves, if one is active."""
    return Checkpoint.objects.filter(status=Checkpoint.Status.ACTIVE).first()


def runs() -> QuerySet[TrainingRun]:
    """Training runs with their checkpoint; not their snapshot (its examples are large)."""
    return TrainingRun.objects.select_related("checkpoint")


def snapshots() -> QuerySet[DatasetSnapshot]:
    """Snapshots newest first, without their examples and group labels (large JSON), each
    with ``erasures_after``: how many annotators' data were erased since it was frozen."""
    # COUNT(*) over the erasures after this snapshot, as one correlated subquery.
    erased = (
        erasures_after(OuterRef("created_at"))
        .order_by()
        .annotate(n=Func(F("pk"), function="COUNT"))
        .values("n")
    )
    return (
        DatasetSnapshot.objects.defer("examples", "group_labels")
        .annotate(erasures_after=Coalesce(Subquery(erased, output_field=IntegerField()), 0))
        .order_by("-id")
    )


def latest_snapshot() -> DatasetSnapshot | None:
    return snapshots().first()


def not_evaluated_on(snapshot: DatasetSnapshot, *checkpoints: Checkpoint) -> list[Checkpoint]:
    """The checkpoints with no evaluation on ``snapshot`` yet, in the order given."""
    done = set(
        Evaluation.objects.filter(snapshot=snapshot, checkpoint__in=checkpoints).values_list(
            "checkpoint_id", flat=True
        )
    )
    return [c for c in checkpoints if c.pk not in done]
