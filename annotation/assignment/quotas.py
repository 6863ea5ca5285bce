"""Balanced pools: target numbers of annotators per group of a demographic field.

An annotator's group in a field is their answer (``answer_group``): a choice;
"prefer not to say", which also holds whoever skipped the question (no answer is
ever required, so "prefer not to say" has a quota of its own); "other" for an
answer in their own words; for a free-text field, the answer with case ignored.

A newcomer (no ranking yet, no seat) takes a seat in every quota that matches
their groups when they are given their first task, inside ``assignment.next_task``'s
transaction: the matching quota rows are locked (``SELECT ... FOR UPDATE``; SQLite
serialises writers), their occupied seats counted, and ``GroupFull`` raised if any
is full. Two newcomers of one group therefore never take its last place together.
A seat is occupied while its annotator's consent stands and they have ranked or
hold a live reservation: someone who leaves before ranking their first task frees
the place when the reservation expires, and a withdrawal or erasure frees it too.
Annotators who ranked before a quota existed are never turned away by it.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Exists, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotation.errors import GroupFull
from annotation.models import (
    AnnotatorProfile,
    Assignment,
    DemographicField,
    GroupQuota,
    QuotaSeat,
    Ranking,
)
from annotation.rankings.selectors import consent_stands

PREFER_NOT = DemographicField.PREFER_NOT_TO_SAY
OTHER = DemographicField.OTHER


def answer_group(field: DemographicField, answer: object) -> str:
    """The group an answer falls in (see the module docstring)."""
    value = answer.strip() if isinstance(answer, str) else ""
    if not value or value.lower() == PREFER_NOT:
        return PREFER_NOT
    if field.choices:
        return value if value in field.choices else OTHER
    return value.casefold()


def quota_group(field: DemographicField, value: str) -> str:
    """The group a quota's ``value`` names, on the same scale as ``answer_group``."""
    value = value.strip()
    if value.lower() in (PREFER_NOT, OTHER):
        return value.lower()
    return value if field.choices else value.casefold()


def matching_quotas(quotas: list[GroupQuota], demographics: dict) -> list[GroupQuota]:
    """The quotas whose group the annotator is in (pure; fields come with the quotas)."""
    return [
        q
        for q in quotas
        if answer_group(q.field, demographics.get(q.field.key)) == quota_group(q.field, q.value)
    ]


def occupied_seats(now: datetime) -> QuerySet[QuotaSeat]:
    """Seats that count: consent stands, and a ranking or a live reservation."""
    annotator = OuterRef("annotator")
    return QuotaSeat.objects.filter(
        consent_stands(),
        Exists(Ranking.objects.filter(annotator=annotator))
        | Exists(Assignment.objects.filter(annotator=annotator, reserved_until__gt=now)),
    )


def take_seats(profile: AnnotatorProfile, now: datetime) -> list[QuotaSeat]:
    """Seat a newcomer in their groups' quotas, or ``GroupFull``; call inside the
    transaction that reserves their first task. At most four queries, whatever the
    number of quotas, annotators or tasks."""
    quotas = GroupQuota.objects.select_related("field").filter(
        field__active=True, study_id=profile.study_id
    )
    mine = matching_quotas(list(quotas), profile.demographics or {})
    if not mine:
        return []
    # Lock in id order (no deadlock between newcomers), then count with the rows held;
    # the targets are read again under the lock.
    targets = dict(
        GroupQuota.objects.select_for_update()
        .filter(pk__in=[q.pk for q in mine])
        .order_by("pk")
        .values_list("pk", "target")
    )
    filled = dict(
        occupied_seats(now)
        .filter(quota__in=list(targets))
        .exclude(annotator=profile)
        .values("quota")
        .annotate(n=Count("pk"))
        .values_list("quota", "n")
    )
    full = [q for q in mine if filled.get(q.pk, 0) >= targets[q.pk]]
    if full:
        q = full[0]
        raise GroupFull(
            "Thank you for your interest. We already have all the participants we need "
            f"who answered “{q.value}” to “{q.field.label}”, so that every group is heard "
            "equally; there are no tasks for you in this study."
        )
    return QuotaSeat.objects.bulk_create(
        [QuotaSeat(quota=q, annotator=profile) for q in mine], ignore_conflicts=True
    )


def quota_fill(now: datetime, study=None) -> list[dict]:
    """Every quota (of ``study``, a study or its id, when given) with its occupied seats
    (one query): study, field label, value, target, filled."""
    filled = (
        occupied_seats(now)
        .filter(quota=OuterRef("pk"))
        .order_by()
        .values("quota")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = GroupQuota.objects.filter(**({} if study is None else {"study": study}))
    rows = rows.annotate(filled=Coalesce(Subquery(filled, output_field=IntegerField()), 0))
    return list(
        rows.values("pk", "study__slug", "field__label", "field__key", "value", "target", "filled")
    )


def has_seat(annotator) -> Exists:
    """Whether ``annotator`` (a profile or an ``OuterRef``) holds a seat in any quota."""
    return Exists(QuotaSeat.objects.filter(annotator=annotator))


def any_quota(study) -> Exists:
    """Whether ``study`` (a study, its id or an ``OuterRef``) has a quota of an active field
    (so that a study without quotas pays nothing)."""
    return Exists(GroupQuota.objects.filter(field__active=True, study=study))
