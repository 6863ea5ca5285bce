"""Reads of the annotation side, one function per question.

"The rankings that count" is answered here and only here (``counted_rankings``):
labels, snapshots, exports and the retraining schedule all read through it.
"""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Sum

from .labels import LabelRow
from .models import AnnotatorProfile, Consent, Occupation, RankedItem, Ranking
from .study_models import Erasure


def counted_rankings(include_synthetic: bool = False) -> QuerySet[Ranking]:
    """The rankings that count: their annotator's consent stands (a withdrawal takes
    them out), and synthetic annotators' only when asked for."""
    consented = Consent.objects.active().filter(annotator=OuterRef("annotator"))
    rankings = Ranking.objects.filter(Exists(consented))
    if not include_synthetic:
        rankings = rankings.filter(annotator__is_synthetic=False)
    return rankings


def label_rows(include_synthetic: bool = False) -> list[LabelRow]:
    """Every ranked item of the rankings that count, with the annotator's demographics
    (one query; the input of ``labels.item_labels`` and ``labels.group_labels``)."""
    values = (
        RankedItem.objects.filter(ranking__in=counted_rankings(include_synthetic))
        .order_by("ranking_id", "position")
        .values_list("ranking_id", "item_id", "position", "ranking__annotator__demographics")
    )
    return [LabelRow(rid, iid, pos, demo or {}) for rid, iid, pos, demo in values]


def counted_rankings_after(last_ranking_id: int | None, include_synthetic: bool = False) -> int:
    """How many rankings that count were stored after ``last_ranking_id`` (all when None)."""
    rankings = counted_rankings(include_synthetic)
    if last_ranking_id is not None:
        rankings = rankings.filter(pk__gt=last_ranking_id)
    return rankings.count()


def annotators() -> QuerySet[AnnotatorProfile]:
    """Annotator profiles: staff accounts rank only to try the portal and are left out."""
    return AnnotatorProfile.objects.filter(user__is_staff=False)


def active_annotators() -> QuerySet[AnnotatorProfile]:
    """Annotators whose consent stands (any version): not withdrawn, not erased."""
    return annotators().filter(Exists(Consent.objects.active().filter(annotator=OuterRef("pk"))))


def annotator_status_counts() -> dict[str, int]:
    """How many human annotators (staff left out) are active, withdrawn or erased (one query).

    Withdrawn: gave consent once, none stands now, data kept. Erased: data gone.
    """
    stands = Exists(Consent.objects.active().filter(annotator=OuterRef("pk")))
    gave = Exists(Consent.objects.filter(annotator=OuterRef("pk")))
    return (
        annotators()
        .filter(is_synthetic=False)
        .aggregate(
            active=Count("pk", filter=Q(stands)),
            withdrawn=Count("pk", filter=Q(gave, ~stands, erased_at__isnull=True)),
            erased=Count("pk", filter=Q(erased_at__isnull=False)),
        )
    )


def erasures_after(moment) -> QuerySet[Erasure]:
    """Erasures since ``moment`` (a snapshot's ``created_at``): their annotators' rankings
    are in what was frozen then, and in nothing built afterwards."""
    return Erasure.objects.filter(erased_at__gt=moment)


def occupation_progress() -> list[dict]:
    """Per occupation: tasks, rankings, filled overlap slots and complete tasks (one query)."""
    rows = (
        Occupation.objects.annotate(
            n_tasks=Count("tasks"),
            slots=Sum("tasks__overlap", default=0),
            rankings=Sum("tasks__ranking_count", default=0),
            complete=Count("tasks", filter=Q(tasks__ranking_count__gte=F("tasks__overlap"))),
        )
        .order_by("name")
        .values("name", "n_tasks", "slots", "rankings", "complete")
    )
    return list(rows)


def annotator_progress(page: int | str | None, per_page: int = 50) -> Page:
    """One page of active annotators (staff, withdrawn and erased left out) with ``done``
    rankings, most active first (one query plus a count); rows are dicts of user id,
    username, quota, done, synthetic."""
    profiles = (
        active_annotators()
        .annotate(done=Count("rankings"))
        .order_by("is_synthetic", "-done", "user__username")
        .values("user_id", "user__username", "quota", "done", "is_synthetic")
    )
    return Paginator(profiles, per_page).get_page(page)
