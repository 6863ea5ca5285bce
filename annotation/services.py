"""Writes of the annotation side: consent, demographics, assignment, submit.

Assignment is race-free: on PostgreSQL candidate tasks are locked with
``SELECT ... FOR UPDATE SKIP LOCKED``, so two annotators never take the one
remaining slot; SQLite serialises writers (``transaction_mode=IMMEDIATE``).
It serves quality: gold tasks are mixed into each stream at ``GOLD_RATE``
(``gold_is_due``), the occupations an annotator has seen least come first, and
excluded annotators get nothing. Each stored ranking re-applies the quality
policy to its annotator (``annotation.standing``).
"""

import math
import random
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from . import quotas, standing
from .catalogue import ensure_consent_text
from .errors import (
    AlreadyRanked,
    AnnotatorExcluded,
    ConsentRequired,
    InvalidAnswer,
    NotReserved,
    TaskNotFound,
)
from .models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Assignment,
    Consent,
    ConsentText,
    DemographicField,
    Item,
    RankedItem,
    Ranking,
    RankingTask,
    check_instruction,
)


def get_profile(user) -> AnnotatorProfile:
    """The user's annotator profile, created on first use.

    Free when the profile came with the user (``select_related("annotator")``,
    as annotation.auth does for tokens).
    """
    try:
        return user.annotator
    except AnnotatorProfile.DoesNotExist:
        profile, _ = AnnotatorProfile.objects.get_or_create(
            user=user, defaults={"quota": settings.STEREORANK["ANNOTATOR_QUOTA"]}
        )
        user.annotator = profile
        return profile


def current_consent_text() -> Subquery:
    """The newest consent text's id, as a subquery (a new version needs consent again)."""
    return Subquery(ConsentText.objects.order_by("-version").values("pk")[:1])


def consents_to_current_text(annotator) -> Exists:
    """Whether ``annotator`` (a profile or an ``OuterRef``) agreed to the newest text and
    has not withdrawn; an older version's consent still makes its rankings count
    (``selectors.counted_rankings``) but gives no new task."""
    return Exists(
        Consent.objects.active().filter(annotator=annotator, text_id=current_consent_text())
    )


def has_consent(profile: AnnotatorProfile) -> bool:
    """An active consent to the newest consent text."""
    return (
        Consent.objects.active().filter(annotator=profile, text_id=current_consent_text()).exists()
    )


@transaction.atomic
def give_consent(profile: AnnotatorProfile) -> Consent:
    """Agree to the newest consent text (the catalogue's when none exists yet)."""
    text = ensure_consent_text()
    current = profile.consents.active().first()
    if current and current.text_id == text.pk:
        return current
    if current:
        current.withdrawn_at = timezone.now()
        current.save(update_fields=["withdrawn_at"])
    return Consent.objects.create(annotator=profile, text=text)


@transaction.atomic
def withdraw_consent(profile: AnnotatorProfile) -> None:
    """End the active consent and release the annotator's reservations."""
    profile.consents.active().update(withdrawn_at=timezone.now())
    profile.assignments.all().delete()


MAX_ANSWER_LENGTH = 200


def clean_answer(field: DemographicField, value: object) -> str:
    """One answer as stored: trimmed; a choice (or "prefer not to say") in its own
    spelling whatever the case; own words only where the field allows them."""
    value = str(value).strip()
    if not value:
        return ""
    if len(value) > MAX_ANSWER_LENGTH:
        raise InvalidAnswer(f"{field.label}: at most {MAX_ANSWER_LENGTH} characters, please.")
    options = [*field.choices, DemographicField.PREFER_NOT_TO_SAY]
    same = [option for option in options if option.lower() == value.lower()]
    if same:
        return same[0]
    if field.choices and not field.allow_other:
        raise InvalidAnswer(f"'{value}' is not one of the options for {field.label}.")
    return value


def save_demographics(profile: AnnotatorProfile, answers: dict, merge: bool = False) -> None:
    """Store self-described answers, replacing the old ones (or, with ``merge``, only those
    given; a blank removes one); every field optional, unknown keys refused."""
    fields = {f.key: f for f in DemographicField.objects.filter(active=True)}
    if merge:
        kept = {k: v for k, v in profile.demographics.items() if k in fields}
        answers = {**kept, **answers}
    clean = {}
    for key, value in answers.items():
        if key not in fields:
            raise InvalidAnswer(f"Unknown demographic field '{key}'.")
        if value := clean_answer(fields[key], value):
            clean[key] = value
    profile.demographics = clean
    profile.save(update_fields=["demographics"])


def progress(profile: AnnotatorProfile) -> dict:
    return {"done": profile.rankings.count(), "quota": profile.quota}


def live_reservations(now) -> QuerySet[Assignment]:
    """Reservations that hold a slot: not expired, and not an erased annotator's (one that
    a request racing the erasure left behind; see ``annotation.erasure``)."""
    return Assignment.objects.filter(reserved_until__gt=now, annotator__erased_at__isnull=True)


def _live_assignments(now) -> Subquery:
    """Per task (``OuterRef("pk")``): how many reservations are still running."""
    live = live_reservations(now).filter(task=OuterRef("pk"))
    return Subquery(
        live.order_by().values("task").annotate(n=Count("pk")).values("n"),
        output_field=IntegerField(),
    )


def _count(rankings) -> Subquery:
    """``rankings`` (filtered on ``OuterRef``s) counted, as a subquery."""
    return Subquery(
        rankings.order_by().values("annotator").annotate(n=Count("pk")).values("n"),
        output_field=IntegerField(),
    )


def gold_phase(profile_pk: int) -> float:
    """The annotator's fixed random start in [0, 1) for ``gold_is_due``."""
    return random.Random(f"gold-phase:{profile_pk}").random()


def gold_is_due(done: int, gold_done: int, rate: float, phase: float) -> bool:
    """Whether the next task should be a gold one: systematic sampling with a random start.

    After ``n`` tasks an annotator should have met ``floor(rate * n + phase)`` gold
    tasks; the next is gold when ``gold_done`` is short of that at ``n = done + 1``.
    So the share is ``rate`` in the long run, and where the gold tasks fall differs
    between annotators (``phase``), so no fixed slot gives them away.
    """
    return gold_done < math.floor(rate * (done + 1) + phase)


def excluded_message(profile: AnnotatorProfile) -> str:
    """What an excluded annotator is told, with the recorded reason."""
    change = profile.status_changes.filter(status=AnnotatorStatus.EXCLUDED).first()
    why = f" ({change.reason})" if change else ""
    return (
        f"The quality checks excluded you from this study{why}: you will get no more tasks, "
        "and your rankings are not used. If you think this is a mistake, contact the study team."
    )


def next_task(profile: AnnotatorProfile) -> Assignment | None:
    """The annotator's reserved task (resume), or reserve a new one; None if none left.

    A fixed number of queries whatever K and the number of tasks: the annotator's
    state, the best candidate (locked), its live reservations, its items and one
    upsert of the reservation; for a newcomer, up to four more that seat them in
    their groups' quotas (``annotation.quotas``; ``GroupFull`` when one is full).
    ``AnnotatorExcluded`` for an excluded annotator.
    """
    now = timezone.now()
    mine = Ranking.objects.filter(annotator=OuterRef("pk"))
    state = (
        AnnotatorProfile.objects.filter(pk=profile.pk)
        .annotate(
            consented=consents_to_current_text(OuterRef("pk")),
            done=_count(mine),
            gold_done=_count(mine.filter(task__is_gold=True)),
            current=Subquery(
                Assignment.objects.filter(annotator=OuterRef("pk"), reserved_until__gt=now)
                .order_by("-reserved_until")
                .values("pk")[:1]
            ),
            seated=quotas.has_seat(OuterRef("pk")),
            quotas_set=quotas.any_quota(),
        )
        .values("consented", "done", "gold_done", "current", "status", "seated", "quotas_set")
        .get()
    )
    if not state["consented"]:
        raise ConsentRequired("Give consent before ranking.")
    if state["status"] == AnnotatorStatus.EXCLUDED:
        raise AnnotatorExcluded(excluded_message(profile))
    if state["current"] is not None:
        return Assignment.objects.select_related("task__occupation").get(pk=state["current"])
    done = state["done"] or 0
    if done >= profile.quota:
        return None
    rate = settings.STEREORANK["GOLD_RATE"]
    gold = gold_is_due(done, state["gold_done"] or 0, rate, gold_phase(profile.pk))
    with transaction.atomic():
        if state["quotas_set"] and not state["done"] and not state["seated"]:
            quotas.take_seats(profile, now)  # balanced pools: GroupFull if a group is full
        task = _take_task(profile, now, gold)
        if task is None:
            return None
        items = list(Item.objects.filter(task_items__task=task).select_related("prompt"))
        random.shuffle(items)
        (assignment,) = Assignment.objects.bulk_create(
            [
                Assignment(
                    task=task,
                    annotator=profile,
                    shown_order=[item.pk for item in items],
                    reserved_until=now + settings.STEREORANK["RESERVATION"],
                )
            ],
            update_conflicts=True,
            unique_fields=["task", "annotator"],
            update_fields=["shown_order", "reserved_at", "reserved_until"],
        )
    assignment.task = task
    assignment.shown_items = items
    return assignment


def _take_task(
    profile: AnnotatorProfile, now, gold: bool = False, tries: int = 20
) -> RankingTask | None:
    """Lock the best task this annotator has not ranked: a gold task first when one is
    due (``gold``), then the occupation they have seen least, then the open task
    furthest from its overlap.

    Gold tasks ignore overlap (everyone may rank them). The best candidate is
    locked in the query that finds it (PostgreSQL skips rows other transactions
    hold); an ordinary task's live reservations are then counted again in a
    statement of their own, so a reservation committed meanwhile is seen.
    """
    mine = Ranking.objects.filter(annotator=profile)
    open_slot = Q(
        is_gold=False,
        ranking_count__lt=F("overlap"),
        live__lt=F("overlap") - F("ranking_count"),
    )
    candidates = (
        RankingTask.objects.select_related("occupation")
        .exclude(Exists(mine.filter(task=OuterRef("pk"))))
        .annotate(
            live=Coalesce(_live_assignments(now), 0),
            seen=Coalesce(_count(mine.filter(task__occupation=OuterRef("occupation"))), 0),
        )
        .filter(open_slot | Q(is_gold=True) if gold else open_slot)
        .order_by(*(["-is_gold"] if gold else []), "seen", "ranking_count", "live", "id")
    )
    if connection.features.has_select_for_update_skip_locked:
        candidates = candidates.select_for_update(skip_locked=True, of=("self",))
    tried: list[int] = []
    for _ in range(tries):
        task = candidates.exclude(pk__in=tried).first()
        if task is None or task.is_gold:
            return task
        live = live_reservations(now).filter(task=task).count()
        if task.ranking_count + live < task.overlap:
            return task
        tried.append(task.pk)
    return None


def shown_items(assignment: Assignment) -> list[Item]:
    """The assignment's items (with prompts) in the order shown to the annotator."""
    cached = getattr(assignment, "shown_items", None)
    if cached is None:
        by_id = Item.objects.select_related("prompt").in_bulk(assignment.shown_order)
        cached = assignment.shown_items = [by_id[i] for i in assignment.shown_order]
    return cached


@dataclass(frozen=True)
class Card:
    """One card as an annotator sees it: the item and its text (an attention-check
    card shows its instruction instead of the prompt, and is otherwise alike)."""

    item: Item
    text: str


def shown_cards(assignment: Assignment) -> list[Card]:
    """The assignment's cards in the order shown (no query beyond ``shown_items``)."""
    task = assignment.task
    return [
        Card(
            item,
            check_instruction(task.check_position)
            if item.pk == task.check_item_id
            else item.prompt.text,
        )
        for item in shown_items(assignment)
    ]


def submit_ranking(
    profile: AnnotatorProfile, task_id: int, order: list, seconds_spent: float | None = None
) -> tuple[Ranking, bool]:
    """Store a ranking of a task reserved by this annotator; (ranking, created).

    Idempotent: the same order submitted again returns the stored ranking. The
    task row is locked first, so a submit racing its own retry stores one ranking.
    A new ranking re-applies the quality policy to the annotator (``standing``).
    """
    if profile.status == AnnotatorStatus.EXCLUDED:
        raise AnnotatorExcluded(excluded_message(profile))
    with transaction.atomic():
        task = RankingTask.objects.select_for_update().filter(pk=task_id).first()
        if task is None:
            raise TaskNotFound(f"Task {task_id} does not exist.")
        existing = Ranking.objects.filter(task=task, annotator=profile).first()
        if existing:
            if validate_order(order, set(existing.shown_order)) == existing.order:
                return existing, False
            raise AlreadyRanked("You already ranked this task differently.")
        assignment = _locked_reservation(task, profile)
        if assignment is None:
            # Say what is wrong with the order first (400), then that it is not reserved.
            validate_order(order, set(task.task_items.values_list("item_id", flat=True)))
            raise NotReserved("This task is not reserved for you; ask for the next task.")
        order = validate_order(order, set(assignment.shown_order))
        if task.ranking_count >= task.overlap and not task.is_gold:
            raise AlreadyRanked("This task already has all the rankings it needs.")
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
    standing.apply_policy(profile)
    return ranking, True


def _locked_reservation(task: RankingTask, profile: AnnotatorProfile) -> Assignment | None:
    """The annotator's live reservation of ``task``, row-locked, none once erased: an erasure
    then waits for this submit and deletes its ranking, or this submit finds nothing."""
    return (
        Assignment.objects.select_for_update(of=("self",))
        .filter(
            task=task,
            annotator=profile,
            annotator__erased_at__isnull=True,
            reserved_until__gt=timezone.now(),
        )
        .first()
    )


def validate_order(order, item_ids: set[int]) -> list[int]:
    """An order must be exactly a permutation of the task's item ids."""
    if not isinstance(order, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in order
    ):
        raise InvalidAnswer("The order must be a list of item ids (integers).")
    if len(set(order)) != len(order):
        raise InvalidAnswer("Each item may appear only once in the order.")
    missing, foreign = item_ids - set(order), set(order) - item_ids
    if missing or foreign:
        parts = []
        if missing:
            parts.append(f"missing items {sorted(missing)}")
        if foreign:
            parts.append(f"items not in this task {sorted(foreign)}")
        raise InvalidAnswer(
            f"The order must rank exactly this task's {len(item_ids)} items: {'; '.join(parts)}."
        )
    return order
