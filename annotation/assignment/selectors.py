"""Reads of the catalogue and the tasks: what holds a task's slots, what an assignment
shows, and the staff API's lists (each a fixed number of queries whatever its length;
each takes the viewer and holds only the studies they may read: ``annotation.access``).

Reads of annotators and their rankings are in ``annotation.rankings.selectors``.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from annotation.access import scope
from annotation.assignment import blinding
from annotation.models import (
    Assignment,
    Item,
    Occupation,
    Ranking,
    RankingTask,
    TaskItem,
    check_instruction,
)
from core.ids import as_id


def live_reservations(now) -> QuerySet[Assignment]:
    """Reservations that hold a slot: not expired, and not an erased annotator's (one that
    a request racing the erasure left behind; see ``annotation.participants.erasure``)."""
    return Assignment.objects.filter(reserved_until__gt=now, annotator__erased_at__isnull=True)


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
    card shows its instruction instead of the prompt, and is otherwise alike), the id it
    is shown and sent back under and its image's URL path: the item's id and file on a
    task showing prompts, an opaque name of the annotator's own on a blinded one
    (``annotation.assignment.blinding``)."""

    item: Item
    text: str
    name: int
    src: str


def _condition_texts(item_ids: list[int]) -> dict[int, str]:
    from annotation.models.validation import ConditionImage

    return dict(
        ConditionImage.objects.filter(item_id__in=item_ids).values_list("item_id", "prompt__text")
    )


def shown_cards(assignment: Assignment) -> list[Card]:
    """The assignment's cards in the order shown (no query beyond ``shown_items`` but for a
    validation task that shows its conditions' texts): each card's text is what the task's
    ``card_text`` says, "" on a blinded card; a blinded task's cards carry the annotator's
    own names for them (``blinding``)."""
    task = assignment.task
    items = shown_items(assignment)
    mode = task.card_text
    texts = _condition_texts([i.pk for i in items]) if mode == task.CardText.CONDITION else {}

    def text(item: Item) -> str:
        if item.pk == task.check_item_id:
            study = task.study  # a check card only: its format words the instruction
            return check_instruction(task.check_position, study.question_format, len(items))
        if mode == task.CardText.NONE:
            return ""
        return texts.get(item.pk, "") if texts else item.prompt.text

    if not blinding.blinded(task):
        return [Card(item, text(item), item.pk, item.image.url) for item in items]
    names = blinding.names(task, assignment.annotator_id, [item.pk for item in items])
    return [
        Card(item, text(item), name, blinding.card_path(name))
        for item, name in zip(items, names, strict=True)
    ]


def card_item(annotator, name: int) -> Item | None:
    """The item ``annotator`` sees as ``name`` on a blinded task they hold now (a live
    reservation); None for a name of anyone else, of a task no longer theirs, or of no card."""
    held = (
        live_reservations(timezone.now())
        .filter(annotator=annotator)
        .exclude(task__card_text=RankingTask.CardText.PROMPT)
        .values_list("shown_order", flat=True)
    )
    for shown in held:
        for item_id in shown:
            if blinding.card_name(annotator.pk, item_id) == name:
                return Item.objects.filter(pk=item_id).first()
    return None


def _by_occupation(queryset: QuerySet, occupation: str | None, field: str) -> QuerySet:
    """Filter on an occupation given as a slug or an id (digits); all when empty."""
    if not occupation:
        return queryset
    if occupation.isdigit():  # an id, or no occupation at all
        return queryset.filter(**{f"{field}_id": as_id(occupation) or 0})
    return queryset.filter(**{f"{field}__slug": occupation})


def occupations_with_prompts(viewer) -> QuerySet[Occupation]:
    """The catalogue as ``viewer`` may read it: occupations with their prompts (originals
    and paraphrases), each only if ``scope.visible_prompts`` holds it (or one of it)."""
    prompts = scope.visible_prompts(viewer).order_by("prompt_type", "id")
    return scope.visible_occupations(viewer).prefetch_related(Prefetch("prompts", queryset=prompts))


def items(viewer, occupation: str | None = None, prompt_type: str | None = None) -> QuerySet[Item]:
    """The items of the studies ``viewer`` may read, with their prompts and occupations,
    by id; of one occupation (slug or id) and prompt type when given."""
    found = scope.in_scope(Item.objects.select_related("prompt__occupation"), viewer)
    found = found.order_by("id")
    found = _by_occupation(found, occupation, "prompt__occupation")
    if prompt_type:
        found = found.filter(prompt__prompt_type=prompt_type)
    return found


def tasks(viewer, occupation: str | None = None) -> QuerySet[RankingTask]:
    """The ranking tasks of the studies ``viewer`` may read, with their occupations and
    item links, by id; of one occupation (slug or id) when given."""
    links = TaskItem.objects.only("task_id", "item_id").order_by("id")
    found = RankingTask.objects.select_related("occupation").prefetch_related(
        Prefetch("task_items", queryset=links)
    )
    found = scope.in_scope(found, viewer)
    return _by_occupation(found.order_by("id"), occupation, "occupation")


def rankings(
    viewer,
    occupation: str | None = None,
    task: int | None = None,
    synthetic: bool | None = None,
) -> QuerySet[Ranking]:
    """The rankings of the studies ``viewer`` may read, with their annotators and tasks, by
    id; of one occupation (slug or id), one task, only synthetic or only real annotators'
    when given."""
    found = Ranking.objects.select_related("annotator", "task__occupation").order_by("id")
    found = scope.in_scope(found, viewer, path="task__study")
    found = _by_occupation(found, occupation, "task__occupation")
    if task is not None:
        found = found.filter(task_id=task)
    if synthetic is not None:
        found = found.filter(annotator__is_synthetic=synthetic)
    return found


@dataclass(frozen=True)
class SamplerInputs:
    """What the active sampler reads of one study (``training.registry.sampling``), item ids only.

    ``open_tasks``: task id -> (occupation name, item ids) of the open ordinary tasks
    (not gold, a slot left), an attention-check card left out (its place is instructed,
    so it tells nothing); ``rankings``: the orders of the rankings that count (most
    stereotypical first), check cards left out; ``texts``: item id -> prompt text;
    ``coverage``: rankings that count per occupation name.
    """

    open_tasks: dict[int, tuple[str, list[int]]]
    rankings: list[list[int]]
    texts: dict[int, str]
    coverage: dict[str, int]


def sampler_inputs(study_id: int) -> SamplerInputs:
    """The sampler's inputs for one study, in four queries whatever its size."""
    from django.db.models import F

    from annotation.rankings.selectors import counted_rankings

    open_tasks: dict[int, tuple[str, list[int]]] = {}
    rows = (
        TaskItem.objects.filter(
            task__study_id=study_id,
            task__is_gold=False,
            task__ranking_count__lt=F("task__overlap"),
        )
        .exclude(item_id=F("task__check_item_id"))
        .order_by("task_id", "id")
        .values_list("task_id", "task__occupation__name", "item_id")
    )
    for task_id, occupation, item_id in rows:
        open_tasks.setdefault(task_id, (occupation, []))[1].append(item_id)
    counted = counted_rankings(include_synthetic=True).filter(task__study_id=study_id)
    rankings, coverage = [], {}
    for order, card, occupation in counted.values_list(
        "order", "task__check_item_id", "task__occupation__name"
    ):
        rankings.append([i for i in order if i != card])
        coverage[occupation] = coverage.get(occupation, 0) + 1
    wanted = {i for _, ids in open_tasks.values() for i in ids} | {i for r in rankings for i in r}
    texts = dict(Item.objects.filter(pk__in=wanted).values_list("pk", "prompt__text"))
    return SamplerInputs(open_tasks, rankings, texts, coverage)
