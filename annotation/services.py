"""Writes of the annotation side: consent, demographics, assignment, submit.

Assignment is race-free: on PostgreSQL candidate tasks are locked with
``SELECT ... FOR UPDATE SKIP LOCKED``, so two annotators never take the one
remaining slot; SQLite serialises writers (``transaction_mode=IMMEDIATE``).
"""

import random

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from .models import (
    AnnotatorProfile,
    Assignment,
    Consent,
    ConsentText,
    DemographicField,
    RankedItem,
    Ranking,
    RankingTask,
)

DEFAULT_CONSENT = (
    "I agree to rank images of occupations by how stereotypical they are. My rankings and "
    "the demographics I choose to share are used, pseudonymously, to train and evaluate a "
    "reward model. I can withdraw at any time."
)


class AssignmentError(Exception):
    """A request the annotator may not make now; ``status`` is the HTTP status."""

    def __init__(self, message: str, status: int = 409):
        super().__init__(message)
        self.message = message
        self.status = status


def get_profile(user) -> AnnotatorProfile:
    profile, _ = AnnotatorProfile.objects.get_or_create(
        user=user, defaults={"quota": settings.STEREORANK["ANNOTATOR_QUOTA"]}
    )
    return profile


def has_consent(profile: AnnotatorProfile) -> bool:
    return profile.consents.filter(withdrawn_at__isnull=True).exists()


@transaction.atomic
def give_consent(profile: AnnotatorProfile) -> Consent:
    """Agree to the newest consent text (creating version 1 if none exists)."""
    text = ConsentText.objects.first() or ConsentText.objects.create(
        version=1, text=DEFAULT_CONSENT
    )
    current = profile.consents.filter(withdrawn_at__isnull=True).first()
    if current and current.text_id == text.pk:
        return current
    if current:
        current.withdrawn_at = timezone.now()
        current.save(update_fields=["withdrawn_at"])
    return Consent.objects.create(annotator=profile, text=text)


def withdraw_consent(profile: AnnotatorProfile) -> None:
    profile.consents.filter(withdrawn_at__isnull=True).update(withdrawn_at=timezone.now())
    profile.assignments.all().delete()


def save_demographics(profile: AnnotatorProfile, answers: dict) -> None:
    """Store self-described answers; every field optional, unknown keys refused."""
    fields = {f.key: f for f in DemographicField.objects.filter(active=True)}
    clean = {}
    for key, value in answers.items():
        if key not in fields:
            raise ValidationError(f"Unknown demographic field '{key}'.")
        value = str(value).strip()
        if not value:
            continue
        choices = fields[key].choices
        if choices and value not in choices and value != DemographicField.PREFER_NOT_TO_SAY:
            raise ValidationError(f"'{value}' is not one of the options for {fields[key].label}.")
        clean[key] = value
    profile.demographics = clean
    profile.save(update_fields=["demographics"])


def progress(profile: AnnotatorProfile) -> dict:
    return {"done": profile.rankings.count(), "quota": profile.quota}


def next_task(profile: AnnotatorProfile) -> Assignment | None:
    """The annotator's reserved task (resume), or reserve a new one; None if none left."""
    if not has_consent(profile):
        raise AssignmentError("Give consent before ranking.", status=403)
    now = timezone.now()
    current = (
        profile.assignments.filter(reserved_until__gt=now)
        .select_related("task__occupation")
        .first()
    )
    if current:
        return current
    if profile.rankings.count() >= profile.quota:
        return None
    with transaction.atomic():
        live = Count("assignments", filter=Q(assignments__reserved_until__gt=now), distinct=True)
        candidates = (
            RankingTask.objects.exclude(rankings__annotator=profile)
            .annotate(live=live)
            .filter(ranking_count__lt=F("overlap"))
            .filter(live__lt=F("overlap") - F("ranking_count"))
            .order_by("ranking_count", "live", "id")
            .values_list("id", flat=True)
        )
        for task_id in candidates[:20]:
            task = _lock_task(task_id)
            if task is None:
                continue
            taken = task.ranking_count + task.assignments.filter(reserved_until__gt=now).count()
            if taken >= task.overlap:
                continue
            shown = list(task.task_items.values_list("item_id", flat=True))
            random.shuffle(shown)
            Assignment.objects.filter(task=task, annotator=profile).delete()
            return Assignment.objects.create(
                task=task,
                annotator=profile,
                shown_order=shown,
                reserved_until=now + settings.STEREORANK["RESERVATION"],
            )
    return None


def _lock_task(task_id: int) -> RankingTask | None:
    """Lock one task row; on PostgreSQL skip it if another transaction holds it."""
    tasks = RankingTask.objects.select_related("occupation")
    if connection.features.has_select_for_update_skip_locked:
        return tasks.select_for_update(skip_locked=True, of=("self",)).filter(pk=task_id).first()
    return tasks.filter(pk=task_id).first()


def submit_ranking(
    profile: AnnotatorProfile, task_id: int, order: list, seconds_spent: float | None = None
) -> tuple[Ranking, bool]:
    """Store a ranking of a task reserved by this annotator; (ranking, created).

    Idempotent: the same order submitted again returns the stored ranking.
    """
    with transaction.atomic():
        task = RankingTask.objects.select_for_update().filter(pk=task_id).first()
        if task is None:
            raise AssignmentError(f"Task {task_id} does not exist.", status=404)
        existing = Ranking.objects.filter(task=task, annotator=profile).first()
        item_ids = set(task.task_items.values_list("item_id", flat=True))
        order = validate_order(order, item_ids)
        if existing:
            if existing.order == order:
                return existing, False
            raise AssignmentError("You already ranked this task differently.", status=409)
        assignment = Assignment.objects.filter(
            task=task, annotator=profile, reserved_until__gt=timezone.now()
        ).first()
        if assignment is None:
            raise AssignmentError("This task is not reserved for you; ask for the next task.", 403)
        if task.ranking_count >= task.overlap:
            raise AssignmentError("This task already has all the rankings it needs.", status=409)
        ranking = Ranking.objects.create(
            task=task,
            annotator=profile,
            order=order,
            shown_order=assignment.shown_order,
            seconds_spent=seconds_spent,
        )
        shown_at = {item_id: i for i, item_id in enumerate(assignment.shown_order)}
        RankedItem.objects.bulk_create(
            RankedItem(
                ranking=ranking, item_id=item_id, position=i, shown_position=shown_at[item_id]
            )
            for i, item_id in enumerate(order)
        )
        RankingTask.objects.filter(pk=task.pk).update(ranking_count=F("ranking_count") + 1)
        assignment.delete()
    return ranking, True


def validate_order(order, item_ids: set[int]) -> list[int]:
    """An order must be exactly a permutation of the task's item ids."""
    if not isinstance(order, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in order
    ):
        raise ValidationError("The order must be a list of item ids (integers).")
    if len(set(order)) != len(order):
        raise ValidationError("Each item may appear only once in the order.")
    missing, foreign = item_ids - set(order), set(order) - item_ids
    if missing or foreign:
        parts = []
        if missing:
            parts.append(f"missing items {sorted(missing)}")
        if foreign:
            parts.append(f"items not in this task {sorted(foreign)}")
        raise ValidationError(
            f"The order must rank exactly this task's {len(item_ids)} items: {'; '.join(parts)}."
        )
    return order
