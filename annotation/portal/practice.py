"""The practice task: one image for each prompt type of one occupation, checked
against the order the prompts were written for. Nothing here writes: a practice
order is never a ranking, an assignment or a label."""

from dataclasses import dataclass

from annotation.models import Item, Occupation, PromptType
from annotation.rankings.tiers import validate_order

# The reference: the order the catalogue's prompts were written for.
REFERENCE_TYPES = [PromptType.STEREOTYPICAL, PromptType.NEUTRAL, PromptType.DIVERSE]

WHY = {
    PromptType.STEREOTYPICAL: "its prompt asked for the picture most people expect",
    PromptType.NEUTRAL: "its prompt named only the occupation",
    PromptType.DIVERSE: "its prompt asked for someone people expect less",
}


@dataclass(frozen=True)
class PracticeTask:
    """The reference order of the items, and the order they are shown in."""

    occupation: Occupation
    reference: list[Item]

    @property
    def shown(self) -> list[Item]:
        """A fixed order that is not the reference: the last item first."""
        return self.reference[-1:] + self.reference[:-1]


@dataclass(frozen=True)
class Feedback:
    """How an order compares with the reference, item by item (positions from 1)."""

    rows: list[dict]
    in_place: int

    @property
    def matches(self) -> bool:
        return self.in_place == len(self.rows)


def practice_task() -> PracticeTask | None:
    """The first occupation (by name) whose original prompts of every type have an image."""
    items = (
        Item.objects.filter(prompt__origin=None, prompt__prompt_type__in=REFERENCE_TYPES)
        .select_related("prompt__occupation")
        .order_by("prompt__occupation__name", "pk")
    )
    by_occupation: dict[int, dict[str, Item]] = {}
    for item in items:
        first = by_occupation.setdefault(item.prompt.occupation_id, {})
        first.setdefault(item.prompt.prompt_type, item)
        if len(first) == len(REFERENCE_TYPES):
            reference = [first[t] for t in REFERENCE_TYPES]
            return PracticeTask(item.prompt.occupation, reference)
    return None


def check(task: PracticeTask, order: list[int]) -> Feedback:
    """Compare an order of the task's item ids with the reference; refuses any other list."""
    validate_order(order, {item.pk for item in task.reference})
    chosen = {item_id: position for position, item_id in enumerate(order, start=1)}
    rows = [
        {
            "item": item,
            "yours": chosen[item.pk],
            "reference": position,
            "why": WHY[item.prompt.prompt_type],
        }
        for position, item in enumerate(task.reference, start=1)
    ]
    return Feedback(rows, sum(row["yours"] == row["reference"] for row in rows))
