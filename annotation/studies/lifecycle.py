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

from annotation.access import roles, scope
from annotation.errors import CrowdCodesMissing, InvalidStudy, StudyConflict, StudyNotFound
from annotation.models import AnnotatorProfile
from annotation.models.studies import DEFAULT_STUDY_SLUG, Study, default_languages, default_study
from annotation.participants import content
from annotation.rankings.selectors import consent_stands


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


def quality_off(gold_per_occupation: int, checks_per_occupation: int) -> list[str]:
    """What a study's quality settings turn off: "gold tasks", "attention-check tasks"."""
    kinds = (("gold tasks", gold_per_occupation), ("attention-check tasks", checks_per_occupation))
    return [kind for kind, per_occupation in kinds if per_occupation == 0]


def _quality_refusal(gold_per_occupation: int, checks_per_occupation: int, reason: str) -> str:
    """Why these quality settings cannot be recorded ("" when they can)."""
    if gold_per_occupation < 0 or checks_per_occupation < 0:
        return "gold_per_occupation and checks_per_occupation must not be negative"
    off = quality_off(gold_per_occupation, checks_per_occupation)
    if off and not reason:
        return (
            f"turning {' and '.join(off)} off needs a reason (quality_off_reason): they "
            "are how the quality policy finds careless annotators"
        )
    if reason and not off:
        return "quality_off_reason is for turning gold or attention-check tasks off (a count of 0)"
    return ""


def planned_quality(
    study: Study,
    gold_per_occupation: int | None = None,
    checks_per_occupation: int | None = None,
    reason: str | None = None,
) -> tuple[int, int, str]:
    """The study's quality settings once these are applied (None: keep the study's):
    gold and check tasks per occupation and the reason they are off. A reason recorded
    before stands (unless another is given) while nothing more is turned off; turning a
    kind off needs a reason given now; with both on, no reason."""
    gold = study.gold_per_occupation if gold_per_occupation is None else gold_per_occupation
    checks = study.checks_per_occupation if checks_per_occupation is None else checks_per_occupation
    before = quality_off(study.gold_per_occupation, study.checks_per_occupation)
    off = quality_off(gold, checks)
    if reason is not None:
        return gold, checks, reason.strip()
    kept = off and set(off) <= set(before)
    return gold, checks, study.quality_off_reason.strip() if kept else ""


def set_quality(
    study: Study,
    *,
    gold_per_occupation: int | None = None,
    checks_per_occupation: int | None = None,
    reason: str | None = None,
) -> Study:
    """Record how many gold and attention-check tasks ``build_tasks`` makes per occupation
    (``planned_quality``). Turning either off (0) needs a reason, recorded in
    ``quality_off_reason``; turning both back on clears it. ``InvalidStudy`` saying what is
    missing, and nothing written."""
    gold, checks, why = planned_quality(study, gold_per_occupation, checks_per_occupation, reason)
    refusal = _quality_refusal(gold, checks, why)
    if refusal:
        raise InvalidStudy(f"Study {study.slug!r}: {refusal}.")
    study.gold_per_occupation, study.checks_per_occupation = gold, checks
    study.quality_off_reason = why
    study.save(update_fields=["gold_per_occupation", "checks_per_occupation", "quality_off_reason"])
    return study


def create_study(
    slug: str,
    kind: str = Study.Kind.COLLECTION,
    *,
    name: str = "",
    task_size: int | None = None,
    overlap: int | None = None,
    platform: str = Study.Platform.GENERIC,
    gold_per_occupation: int = 1,
    checks_per_occupation: int = 1,
    quality_off_reason: str = "",
    completion_code: str = "",
    completion_url: str = "",
    screen_out_code: str = "",
    screen_out_url: str = "",
    languages: list[str] | None = None,
    question_format: str = Study.Question.RANK,
    question_k: int | None = None,
) -> Study:
    """A new study, a ``draft`` until staff open it; ``InvalidStudy`` saying what is wrong
    (gold or attention-check tasks off without a reason, a link that is not https, a
    question format that does not fit the task size, among it), ``StudyConflict`` when the
    slug is taken."""
    reason = quality_off_reason.strip()
    study = Study(
        slug=slug,
        name=name or slug,
        kind=kind,
        status=Study.Status.DRAFT,
        platform=platform,
        task_size=task_size,
        overlap=overlap,
        gold_per_occupation=gold_per_occupation,
        checks_per_occupation=checks_per_occupation,
        quality_off_reason=reason,
        completion_code=completion_code.strip(),
        completion_url=completion_url.strip(),
        screen_out_code=screen_out_code.strip(),
        screen_out_url=screen_out_url.strip(),
        languages=languages or default_languages(),
        question_format=question_format,
        question_k=question_k,
    )
    if Study.objects.filter(slug=slug).exists():
        raise StudyConflict(f"A study {slug!r} exists already.")
    refusal = _quality_refusal(gold_per_occupation, checks_per_occupation, reason)
    if refusal:
        raise InvalidStudy(f"Cannot create study {slug!r}: {refusal}.")
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


CROWD_PLATFORMS = (Study.Platform.PROLIFIC, Study.Platform.MTURK)


def require_codes(study: Study) -> None:
    """``CrowdCodesMissing`` naming what a crowd-platform study lacks to open: a participant
    who finishes needs the completion code to be paid, one screened out the screen-out
    code (or the platform pays no one)."""
    if study.platform not in CROWD_PLATFORMS:
        return
    missing = [
        label
        for label, value in (
            ("completion code", study.completion_code),
            ("screen-out code", study.screen_out_code),
        )
        if not value.strip()
    ]
    if missing:
        raise CrowdCodesMissing(
            f"Study {study.slug!r} ({study.get_platform_display()}) cannot open without its "
            f"{' and '.join(missing)} (create_study --completion-code/--screen-out-code, or "
            "the study's admin page)."
        )


def transition(study: Study, status: str) -> Study:
    """Move the study to ``status`` along ``Study.TRANSITIONS`` (draft -> open -> closed
    -> open or archived); ``StudyConflict`` for any other move, ``StudyNotReady`` for
    an opening while one of its languages lacks its content (``content.require_ready``).
    Conditional on the status read, so two staff moving one study at once cannot both
    win."""
    if status not in Study.Status.values:
        raise InvalidStudy(f"{status!r} is not a status; use one of {', '.join(Study.Status)}.")
    if status not in Study.TRANSITIONS[Study.Status(study.status)]:
        allowed = ", ".join(Study.TRANSITIONS[Study.Status(study.status)]) or "nothing"
        raise StudyConflict(
            f"Study {study.slug!r} is {study.status}: it can move to {allowed}, not {status}."
        )
    if status == Study.Status.OPEN:
        require_codes(study)
        content.require_ready(study)  # one line per language naming what it lacks
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


def progress(viewer) -> list[dict]:
    """Per study ``viewer`` has a role in (newest first): slug, name, kind, status,
    participants (non-staff annotators whose consent stands), tasks, slots, rankings and
    complete tasks (gold tasks, which ignore overlap, left out); one query."""
    participants = AnnotatorProfile.objects.filter(
        consent_stands("pk"), study=OuterRef("pk"), user__is_staff=False
    )
    ordinary = Q(tasks__is_gold=False)
    rows = (
        scope.visible_studies(viewer, roles.ANY_ROLE)
        .annotate(
            participants=_count(participants),
            n_tasks=Count("tasks", filter=ordinary),
            slots=Sum("tasks__overlap", filter=ordinary, default=0),
            rankings=Sum("tasks__ranking_count", filter=ordinary, default=0),
            complete=Count(
                "tasks", filter=ordinary & Q(tasks__ranking_count__gte=F("tasks__overlap"))
            ),
        )
        .values(
            "slug",
            "name",
            "kind",
            "status",
            "participants",
            "n_tasks",
            "slots",
            "rankings",
            "complete",
        )
    )
    return list(rows)
