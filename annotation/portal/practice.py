"""The practice task: one image for each prompt type of one occupation, checked
against the order the prompts were written for. Nothing here writes: a practice
order is never a ranking, an assignment or a label."""

from dataclasses import dataclass

from annotation.models import Item, Occupation, PromptType, Study
from annotation.rankings.tiers import validate
from annotation.stats.tiers import places
from annotation.studies.answering import from_order

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
    question: str = Study.Question.RANK

    @property
    def k(self) -> int | None:
        """top_k's k in practice: one of the three images."""
        return 1 if self.question == Study.Question.TOP_K else None

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


def practice_task(question: str = Study.Question.RANK) -> PracticeTask | None:
    """The first occupation (by name) whose original prompts of every type have an image,
    asked in ``question`` (a pair: its stereotypical and its diverse image)."""
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
            if question == Study.Question.PAIRWISE:
                reference = [reference[0], reference[-1]]
            return PracticeTask(item.prompt.occupation, reference, question)
    return None


def check(task: PracticeTask, answer: list) -> Feedback:
    """Compare an answer (an order, or tiers in the task's format) with the reference's
    answer in that format, image by image, by their places; refuses any other answer."""
    ids = [item.pk for item in task.reference]
    tiers = validate(answer, set(ids), task.question, task.k)
    yours, reference = places(tiers), places(from_order(ids, task.question, task.k))
    rows = [
        {
            "item": item,
            "yours": yours[item.pk] + 1,
            "reference": reference[item.pk] + 1,
            "why": WHY[item.prompt.prompt_type],
        }
        for item in task.reference
    ]
    return Feedback(rows, sum(row["yours"] == row["reference"] for row in rows))
