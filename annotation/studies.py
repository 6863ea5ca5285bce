"""Studies: the unit a lab runs (``study_models.Study``): found by slug or defaulted,
created, moved through their lifecycle, and their progress.

Everything a study owns (items, tasks, consent and instruction versions, quotas,
participants) names it; a command or service given no study works on the default
one (slug ``default``), so a lab that never creates a second study never names one.
"""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from .errors import InvalidStudy, StudyConflict, StudyNotFound
from .models import AnnotatorProfile
from .selectors import consent_stands
from .study_models import DEFAULT_STUDY_SLUG, Study, default_study_pk


def default_study() -> Study:
    """The default study, made when missing (``study_models.default_study_pk``)."""
    return Study.objects.get(pk=default_study_pk())


def resolve(slug: str | None) -> Study:
    """The study with this slug (the default one for None); ``StudyNotFound`` otherwise."""
    if slug is None or slug == DEFAULT_STUDY_SLUG:
        return default_study()
    found = Study.objects.filter(slug=slug).first()
    if found is None:
        raise StudyNotFound(f"There is no study {slug!r}.")
    return found


def task_size(study: Study) -> int:
    """Items per task: the study's own, else ``STEREORANK_TASK_SIZE``."""
    return study.task_size or settings.STEREORANK["TASK_SIZE"]


def overlap(study: Study) -> int:
    """Rankings per task: the study's own, else ``STEREORANK_TASK_OVERLAP``."""
    return study.overlap or settings.STEREORANK["TASK_OVERLAP"]


def set_sampler(study: Study, sampler: str) -> Study:
    """Switch how the study's open tasks are ordered (``Study.Sampler``). Saved through
    ``save``, so the training side hears it and computes an ``active`` study's
    priorities once this commits (``training.apps``); until then, the uniform order."""
    if sampler not in Study.Sampler.values:
        raise ValueError(f"sampler must be one of {', '.join(Study.Sampler.values)}")
    study.sampler = sampler
    study.save(update_fields=["sampler"])
    return study


def create_study(
    slug: str,
    kind: str = Study.Kind.COLLECTION,
    *,
    name: str = "",
    task_size: int | None = None,
    overlap: int | None = None,
    platform: str = Study.Platform.GENERIC,
) -> Study:
    """A new study, a ``draft`` until staff open it; ``InvalidStudy`` saying what is wrong,
    ``StudyConflict`` when the slug is taken."""
    study = Study(
        slug=slug,
        name=name or slug,
        kind=kind,
        status=Study.Status.DRAFT,
        platform=platform,
        task_size=task_size,
        overlap=overlap,
    )
    if Study.objects.filter(slug=slug).exists():
        raise StudyConflict(f"A study {slug!r} exists already.")
    try:
        study.full_clean()
    except ValidationError as error:
        problems = "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items()
        )
        raise InvalidStudy(f"Cannot create study {slug!r}: {problems}") from None
    try:
        with transaction.atomic():
            study.save()
    except IntegrityError:
        raise StudyConflict(f"A study {slug!r} exists already.") from None
    return study


def transition(study: Study, status: str) -> Study:
    """Move the study to ``status`` along ``Study.TRANSITIONS`` (draft -> open -> closed
    -> open or archived); ``StudyConflict`` for any other move. Conditional on the
    status read, so two staff moving one study at once cannot both win."""
    if status not in Study.Status.values:
        raise InvalidStudy(f"{status!r} is not a status; use one of {', '.join(Study.Status)}.")
    if status not in Study.TRANSITIONS[Study.Status(study.status)]:
        allowed = ", ".join(Study.TRANSITIONS[Study.Status(study.status)]) or "nothing"
        raise StudyConflict(
            f"Study {study.slug!r} is {study.status}: it can move to {allowed}, not {status}."
        )
    moved = Study.objects.filter(pk=study.pk, status=study.status).update(status=status)
    if not moved:
        raise StudyConflict(f"Study {study.slug!r} changed meanwhile; reload and try again.")
    study.status = status
    return study


def _count(queryset) -> Subquery:
    return Coalesce(
        Subquery(
            queryset.order_by().values("study").annotate(n=Count("pk")).values("n"),
            output_field=IntegerField(),
        ),
        0,
    )


def progress() -> list[dict]:
    """Per study (newest first): slug, name, kind, status, participants (non-staff
    annotators whose consent stands), tasks, slots, rankings and complete tasks (gold
    tasks, which ignore overlap, left out); one query."""
    participants = AnnotatorProfile.objects.filter(
        consent_stands("pk"), study=OuterRef("pk"), user__is_staff=False
    )
    ordinary = Q(tasks__is_gold=False)
    rows = Study.objects.annotate(
        participants=_count(participants),
        n_tasks=Count("tasks", filter=ordinary),
        slots=Sum("tasks__overlap", filter=ordinary, default=0),
        rankings=Sum("tasks__ranking_count", filter=ordinary, default=0),
        complete=Count("tasks", filter=ordinary & Q(tasks__ranking_count__gte=F("tasks__overlap"))),
    ).values(
        "slug", "name", "kind", "status", "participants", "n_tasks", "slots", "rankings", "complete"
    )
    return list(rows)
