"""Reads of the training side, one function per question (writes: the service modules).

A read of study-derived rows (snapshots, runs, checkpoints, their evaluations, events,
schedules) takes the viewer and holds only what they may see (``training.access``: a
snapshot's whole lineage); the commands, workers and the scoring service pass
``annotation.access.scope.SYSTEM``.
"""

from __future__ import annotations

from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Coalesce
from django_celery_beat.models import PeriodicTask

from annotation.access import roles, scope
from annotation.rankings.selectors import counted_rankings, erasures_after
from core.languages import GROUPING
from training.access import (
    checkpoint_filter,
    sees_schedule,
    visible_checkpoints,
    visible_runs,
    visible_snapshots,
)
from training.models import (
    Augmentation,
    Checkpoint,
    DatasetSnapshot,
    EncoderGate,
    Evaluation,
    LearningCurve,
    PerspectiveReport,
    PerspectiveSummary,
    RegistryEvent,
    RetrainDecision,
    TrainingRun,
)
from training.schedule_settings import TASK_NAME


def active_checkpoint() -> Checkpoint | None:
    """The version the platform serves, if one is active."""
    return Checkpoint.objects.filter(status=Checkpoint.Status.ACTIVE).first()


def active_version() -> int | None:
    """The active version's number alone (one indexed row, one column)."""
    return (
        Checkpoint.objects.filter(status=Checkpoint.Status.ACTIVE)
        .values_list("version", flat=True)
        .first()
    )


def checkpoints(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[Checkpoint]:
    """Every version ``viewer`` may see, newest first (the model's order): a form's choices."""
    return visible_checkpoints(viewer, capability)


def checkpoint(version: int, viewer, capability: str = roles.VIEW_DATA) -> Checkpoint | None:
    """Version ``version``, if there is one ``viewer`` may see."""
    return visible_checkpoints(viewer, capability).filter(version=version).first()


def newest_checkpoint() -> Checkpoint | None:
    """The highest version, whatever its status."""
    return Checkpoint.objects.order_by("-version").first()


def lineage(viewer, oldest_first: bool = False) -> QuerySet[Checkpoint]:
    """Every version ``viewer`` may see, with its parent (the registry's table), newest
    first unless asked."""
    order = "version" if oldest_first else "-version"
    return visible_checkpoints(viewer).select_related("parent").order_by(order)


def encoder_gates(checkpoint_id: int | None = None, among=None) -> dict[int, list[dict]]:
    """Every accuracy gate's verdict and figures (not its recorded scores) by checkpoint id
    (only ``checkpoint_id``'s when given), newest first: one query for the registry page."""
    out: dict[int, list[dict]] = {}
    gates = EncoderGate.objects.all()
    if checkpoint_id is not None:
        gates = gates.filter(checkpoint_id=checkpoint_id)
    if among is not None:  # a viewer's checkpoints only
        gates = gates.filter(checkpoint__in=among)
    figures = ("rho_drift", "flips", "flip_upper", "flip_n", "n")
    rows = gates.values(
        "checkpoint_id",
        "snapshot_id",
        "backend",
        "quantization",
        "passed",
        "at",
        **{name: KeyTransform(name, "metrics") for name in figures},
    )
    for row in rows:
        out.setdefault(row["checkpoint_id"], []).append(row)
    return out


def registry_events(viewer, limit: int = 20) -> QuerySet[RegistryEvent]:
    """The latest promotions and roll-backs of versions ``viewer`` may see, newest first,
    with their versions and user."""
    events = RegistryEvent.objects.filter(checkpoint_filter(viewer, path="checkpoint"))
    return events.select_related("checkpoint", "previous", "user")[:limit]


def version_metrics(viewer, snapshot: DatasetSnapshot | None = None) -> list[dict]:
    """``{"version", "status", "metrics"}`` of every version ``viewer`` may see, oldest
    first: each version's own metrics, or with ``snapshot`` those of its evaluation there
    (versions not evaluated on it left out)."""
    if snapshot is None:
        mine = visible_checkpoints(viewer)
        rows = mine.order_by("version").values("version", "status", "metrics")
    else:
        rows = (
            Evaluation.objects.filter(snapshot=snapshot)
            .filter(checkpoint_filter(viewer, path="checkpoint"))
            .order_by("checkpoint__version")
            .values("metrics", version=F("checkpoint__version"), status=F("checkpoint__status"))
        )
    return list(rows)


def per_occupation_rho(snapshot: DatasetSnapshot, *checkpoints: Checkpoint) -> dict[int, dict]:
    """``{checkpoint id: per-occupation rho}`` of those checkpoints evaluated on ``snapshot``."""
    return dict(
        Evaluation.objects.filter(checkpoint__in=checkpoints, snapshot=snapshot).values_list(
            "checkpoint_id", "metrics__per_occupation"
        )
    )


def run(run_id: int, viewer, capability: str = roles.VIEW_DATA) -> TrainingRun | None:
    """Run ``run_id``, if there is one ``viewer`` may see (with ``capability``)."""
    return visible_runs(viewer, capability).filter(pk=run_id).first()


def activation_stack(events: list[tuple[str, int]]) -> list[int]:
    """Replay ``(action, checkpoint id)`` events, oldest first: promote pushes, rollback pops."""
    stack: list[int] = []
    for action, checkpoint_id in events:
        if action == RegistryEvent.Action.PROMOTE:
            if not stack or stack[-1] != checkpoint_id:
                stack.append(checkpoint_id)
        elif action == RegistryEvent.Action.ROLLBACK and stack:
            stack.pop()
            if not stack or stack[-1] != checkpoint_id:
                stack.append(checkpoint_id)
    return stack


def rollback_target(current: Checkpoint | None = None) -> Checkpoint | None:
    """The version a roll back would make active again; None when there is none."""
    current = current or active_checkpoint()
    if current is None:
        return None
    events = (
        RegistryEvent.objects.filter(
            action__in=[RegistryEvent.Action.PROMOTE, RegistryEvent.Action.ROLLBACK]
        )
        .order_by("id")
        .values_list("action", "checkpoint_id")
    )
    stack = activation_stack(list(events))
    if len(stack) < 2 or stack[-1] != current.pk:
        return None
    return Checkpoint.objects.get(pk=stack[-2])


def may_roll_back(viewer) -> bool:
    """Whether ``viewer`` may run both the active version and the one a roll back would
    make active (each of their lineages): a roll back changes what the platform serves."""
    current = active_checkpoint()
    target = rollback_target(current) if current else None
    wanted = [c.pk for c in (current, target) if c is not None]
    mine = visible_checkpoints(viewer, roles.RUN_STUDY).filter(pk__in=wanted)
    return mine.count() == len(wanted)


def runs(viewer) -> QuerySet[TrainingRun]:
    """The training runs ``viewer`` may see, with their checkpoint and augmentation; not
    their snapshot (its examples are large)."""
    return visible_runs(viewer).select_related("checkpoint", "augmentation")


def snapshots(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[DatasetSnapshot]:
    """The snapshots ``viewer`` may see, newest first, without their examples and group
    labels (large JSON), each with ``erasures_after``: how many annotators' data were
    erased since it was frozen."""
    # COUNT(*) over the erasures after this snapshot, as one correlated subquery.
    erased = (
        erasures_after(OuterRef("created_at"))
        .order_by()
        .annotate(n=Func(F("pk"), function="COUNT"))
        .values("n")
    )
    return (
        visible_snapshots(viewer, capability)
        .defer("examples", "group_labels")
        .prefetch_related("studies")
        .annotate(erasures_after=Coalesce(Subquery(erased, output_field=IntegerField()), 0))
        .order_by("-id")
    )


def latest_snapshot(viewer) -> DatasetSnapshot | None:
    """The newest snapshot ``viewer`` may see (without its examples), if any."""
    return snapshots(viewer).first()


def snapshot_choices(viewer, capability: str = roles.VIEW_DATA) -> QuerySet[DatasetSnapshot]:
    """The snapshots ``viewer`` may ``capability`` on, whole (examples included): an API
    field's choices, passed on to services."""
    return visible_snapshots(viewer, capability)


def snapshot(snapshot_id: int, viewer, capability: str = roles.VIEW_DATA) -> DatasetSnapshot | None:
    """Snapshot ``snapshot_id``, whole (examples included), if ``viewer`` may see it."""
    return visible_snapshots(viewer, capability).filter(pk=snapshot_id).first()


def augmentation(augmentation_id: int) -> Augmentation | None:
    """Augmentation ``augmentation_id``, if there is one."""
    return Augmentation.objects.filter(pk=augmentation_id).first()


def retrain_schedules(viewer) -> list[PeriodicTask]:
    """The beat schedules that run the retraining step and that ``viewer`` may see (every
    study they name: ``training.access.sees_schedule``), with their timing. Their studies
    are in the kwargs, a text column of JSON that the database cannot filter on, so each
    of the handful of schedules is checked here (one query each)."""
    found = PeriodicTask.objects.filter(task=TASK_NAME).select_related(
        "interval", "crontab", "solar", "clocked"
    )
    return [task for task in found if sees_schedule(viewer, _kwargs(task))]


def _kwargs(task: PeriodicTask) -> dict:
    import json

    try:
        kwargs = json.loads(task.kwargs or "{}")
    except ValueError:
        return {}
    return kwargs if isinstance(kwargs, dict) else {}


def retrain_decisions(viewer, limit: int = 50) -> QuerySet[RetrainDecision]:
    """The latest decisions of the schedules ``viewer`` may see (by name: a schedule since
    deleted, only the superuser), newest first, with their checkpoint."""
    found = RetrainDecision.objects.all()
    if not scope.is_superuser(viewer):  # a gone schedule's decisions: the installation's
        found = found.filter(schedule__in=[task.name for task in retrain_schedules(viewer)])
    return found.select_related("checkpoint")[:limit]


def common_snapshot(viewer, a: Checkpoint, b: Checkpoint) -> DatasetSnapshot | None:
    """The newest snapshot ``viewer`` may see on which both ``a`` and ``b`` were evaluated
    (whole: the comparison reads its eval split), if any."""
    both = Evaluation.objects.filter(checkpoint=b).values("snapshot_id")
    found = Evaluation.objects.filter(
        checkpoint=a, snapshot_id__in=both, snapshot__in=visible_snapshots(viewer)
    )
    evaluation = found.select_related("snapshot").order_by("-snapshot_id").first()
    return evaluation.snapshot if evaluation else None


def not_evaluated_on(snapshot: DatasetSnapshot, *checkpoints: Checkpoint) -> list[Checkpoint]:
    """The checkpoints with no evaluation on ``snapshot`` yet, in the order given."""
    done = set(
        Evaluation.objects.filter(snapshot=snapshot, checkpoint__in=checkpoints).values_list(
            "checkpoint_id", flat=True
        )
    )
    return [c for c in checkpoints if c.pk not in done]


def snapshot_studies(snapshot: DatasetSnapshot) -> list[int] | None:
    """The ids of the studies a snapshot froze; None (the default study) for one that
    records none."""
    return list(snapshot.studies.values_list("pk", flat=True)) or None


def rankings_behind(snapshot: DatasetSnapshot):
    """The rankings behind ``snapshot`` that count today (``snapshot_rankings``' rule)."""
    rankings = counted_rankings(snapshot.include_synthetic, snapshot_studies(snapshot))
    return rankings.filter(pk__lte=snapshot.last_ranking_id or 0)


def snapshot_rankings(snapshot: DatasetSnapshot) -> list[tuple[int, int, list[int], dict, str]]:
    """The rankings behind ``snapshot`` as they count today: ``(ranking id, annotator id,
    items most to least stereotypical, demographics and ``GROUPING``: language, occupation)``.

    A snapshot stores aggregated labels only; its rankings are those that count
    (``counted_rankings``, synthetic ones as the snapshot took them) with an id up
    to its ``last_ranking_id``. Read today, so a withdrawal since takes its rankings
    out (erasure) and the demographics are the annotators' current answers.
    """
    if snapshot.last_ranking_id is None:
        return []
    fields = ("id", "annotator_id", "order", "annotator__demographics", "task__occupation__name")
    rows = rankings_behind(snapshot).order_by("id").values_list(*fields, "language")
    return [
        (rid, annotator, order, {**(demographics or {}), GROUPING: language or None}, occupation)
        for rid, annotator, order, demographics, occupation, language in rows
    ]


def snapshot_task_rankings(snapshot: DatasetSnapshot) -> list[tuple[int, list[int]]]:
    """``(task id, item ids most to least stereotypical)`` of the rankings behind
    ``snapshot`` as they count today (``snapshot_rankings``' rule), oldest first."""
    if snapshot.last_ranking_id is None:
        return []
    return list(rankings_behind(snapshot).order_by("id").values_list("task_id", "order"))


def learning_curve(snapshot: DatasetSnapshot) -> LearningCurve | None:
    """The snapshot's stored learning curve, in any state, if one was asked for."""
    return LearningCurve.objects.filter(snapshot=snapshot).first()


def latest_learning_curve(viewer) -> LearningCurve | None:
    """The finished learning curve of the newest snapshot ``viewer`` may see that has one."""
    done = LearningCurve.objects.filter(
        status=LearningCurve.Status.DONE, snapshot__in=visible_snapshots(viewer)
    )
    return done.order_by("-snapshot_id").first()


def perspective_summaries(checkpoint: Checkpoint, snapshot: DatasetSnapshot) -> QuerySet:
    """The fields with a stored perspective report for this checkpoint and snapshot."""
    return PerspectiveSummary.objects.filter(checkpoint=checkpoint, snapshot=snapshot)


def perspectives_missing(checkpoint: Checkpoint, snapshot: DatasetSnapshot, fields) -> list[str]:
    """The fields among ``fields`` with no stored report for this checkpoint and snapshot."""
    done = set(perspective_summaries(checkpoint, snapshot).values_list("field", flat=True))
    return [f for f in fields if f not in done]


def perspective_reports(
    field: str, *, snapshot: DatasetSnapshot | None = None, checkpoints=None
) -> QuerySet[PerspectiveReport]:
    """Group rows of one field (with their version), optionally of one snapshot or versions."""
    rows = PerspectiveReport.objects.filter(field=field).select_related("checkpoint")
    if snapshot is not None:
        rows = rows.filter(snapshot=snapshot)
    if checkpoints is not None:
        rows = rows.filter(checkpoint__in=checkpoints)
    return rows.order_by("checkpoint__version", "group")


def perspective_reports_of(
    checkpoint: Checkpoint, snapshot: DatasetSnapshot
) -> QuerySet[PerspectiveReport]:
    """Every group row of one checkpoint's report on one snapshot, field by field."""
    return PerspectiveReport.objects.filter(checkpoint=checkpoint, snapshot=snapshot).order_by(
        "field", "group"
    )


def alignment_across_versions(
    viewer, field: str, snapshot: DatasetSnapshot | None = None
) -> list[tuple]:
    """``(version, group, alignment, annotators)`` of every computed group of ``field`` of
    the versions ``viewer`` may see, oldest version first: all on ``snapshot``, else each
    version on its own snapshot."""
    rows = PerspectiveReport.objects.filter(field=field, status=PerspectiveReport.Status.COMPUTED)
    rows = rows.filter(checkpoint_filter(viewer, path="checkpoint"))
    rows = rows.filter(snapshot__in=visible_snapshots(viewer))
    if snapshot is not None:
        rows = rows.filter(snapshot=snapshot)
    else:
        rows = rows.filter(snapshot=F("checkpoint__snapshot"))
    return list(
        rows.order_by("checkpoint__version", "group").values_list(
            "checkpoint__version", "group", "alignment", "figures__n_annotators"
        )
    )


def snapshot_annotators(snapshot: DatasetSnapshot) -> dict[int, dict]:
    """``{annotator id: demographics}`` of the annotators behind ``snapshot``'s rankings as
    they count today (``snapshot_rankings``' rule): a model card's counts, never its rows."""
    if snapshot.last_ranking_id is None:
        return {}
    rankings = counted_rankings(snapshot.include_synthetic, snapshot_studies(snapshot)).filter(
        pk__lte=snapshot.last_ranking_id
    )
    rows = rankings.order_by().values_list("annotator_id", "annotator__demographics").distinct()
    return {annotator: demographics or {} for annotator, demographics in rows}


def paraphrase_count(augmentation: Augmentation, origin_keys) -> int:
    """How many of ``augmentation``'s kept paraphrases come from ``origin_keys``."""
    return augmentation.paraphrases.filter(origin_key__in=list(origin_keys)).count()
