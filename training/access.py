"""Which snapshots, runs and checkpoints (and the rows that hang on them) a viewer may see:
by the snapshot's lineage, filtered in the query on ``annotation.access``'s one queryset.

A snapshot pools studies (``DatasetSnapshot.studies``): a viewer sees it only when they
may ``capability`` in every study it froze (its labels average all of them; one study's
member must not read the others' through it). A snapshot that records none froze the
default study (``selectors.snapshot_studies``). A run, a checkpoint, an evaluation, a
gate, a learning curve is its snapshot's; a checkpoint with no snapshot (an imported seed)
is no study's data: every staff member with a role that allows ``capability`` in some
study sees it. A retraining schedule is its studies' (``ScheduleSettings.studies``; none:
the default study). The active scoring model serves the public scoring API whoever
trained it: that is not study data. ``LineageScopedAdmin`` applies the same to the
admin's pages of these records.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q, QuerySet

from annotation.access import roles, scope
from annotation.access.admin import NoOracle
from annotation.models.studies import DEFAULT_STUDY_SLUG
from core.admin import ReadOnlyAdmin
from training.models import Checkpoint, DatasetSnapshot, TrainingRun


def visible_snapshots(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[DatasetSnapshot]:
    """The snapshots every study of which ``viewer`` may ``capability`` in."""
    if scope.is_superuser(viewer):
        return DatasetSnapshot.objects.all()
    studies = scope.visible_studies(viewer, capability)
    lineage = DatasetSnapshot.studies.through.objects.filter(datasetsnapshot_id=OuterRef("pk"))
    hidden = lineage.exclude(study_id__in=studies.values("pk"))
    recorded = Q(Exists(lineage))
    if studies.filter(slug=DEFAULT_STUDY_SLUG).exists():
        recorded |= ~Q(Exists(lineage))  # none recorded: the default study's
    return DatasetSnapshot.objects.filter(recorded & ~Q(Exists(hidden)))


def visible_runs(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[TrainingRun]:
    """The runs of ``visible_snapshots``."""
    return TrainingRun.objects.filter(snapshot__in=visible_snapshots(viewer, capability))


def checkpoint_filter(viewer, capability: str = roles.VIEW_DATA, path: str = "") -> Q:
    """The condition on a checkpoint (at lookup ``path``, "" for the checkpoint itself)
    that ``viewer`` may see it: its snapshot visible, or none and a role somewhere."""
    prefix = f"{path}__" if path else ""
    mine = Q(**{f"{prefix}snapshot__in": visible_snapshots(viewer, capability)})
    if scope.has_any(viewer, capability):
        mine |= Q(**{f"{prefix}snapshot__isnull": True})
    return mine


def visible_checkpoints(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[Checkpoint]:
    """The checkpoints ``viewer`` may see (``checkpoint_filter``)."""
    return Checkpoint.objects.filter(checkpoint_filter(viewer, capability))


def schedule_studies(kwargs: dict) -> list[str]:
    """The slugs of the studies a retraining schedule's kwargs name (none: the default)."""
    named = kwargs.get("studies") if isinstance(kwargs, dict) else None
    if isinstance(named, str):
        named = [named]
    return list(named or []) or [DEFAULT_STUDY_SLUG]


def sees_schedule(viewer, kwargs: dict, capability: str = roles.VIEW_DATA) -> bool:
    """Whether ``viewer`` may ``capability`` in every study a schedule's kwargs name."""
    wanted = set(schedule_studies(kwargs))
    seen = scope.visible_studies(viewer, capability).filter(slug__in=wanted)
    return seen.count() == len(wanted)


class LineageScopedAdmin(NoOracle, ReadOnlyAdmin):
    """The admin of a pipeline record: the viewer sees it when its snapshot (at
    ``snapshot_path``) and its checkpoint (at ``checkpoint_path``; "" for a checkpoint
    itself) are theirs; another's is neither listed nor found (404). Read only."""

    snapshot_path: str | None = "snapshot"
    checkpoint_path: str | None = None

    def visible(self, request) -> Q:
        mine = Q()
        if self.snapshot_path is not None:
            mine &= Q(**{f"{self.snapshot_path}__in": visible_snapshots(request.user)})
        if self.checkpoint_path is not None:
            mine &= checkpoint_filter(request.user, path=self.checkpoint_path)
        return mine

    def get_queryset(self, request):
        return super().get_queryset(request).filter(self.visible(request))

    def has_module_permission(self, request) -> bool:
        return scope.has_any(request.user, roles.VIEW_DATA)

    def has_view_permission(self, request, obj=None) -> bool:
        if obj is None:
            return self.has_module_permission(request)
        return self.get_queryset(request).filter(pk=obj.pk).exists()
