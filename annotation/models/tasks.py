"""Ranking tasks (K items of one occupation; gold references and attention-check cards
with their invariants) and the reservations that hand them out."""

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext

from annotation.models.catalogue import Item, Occupation
from annotation.models.people import AnnotatorProfile
from annotation.models.studies import study_field
from annotation.stats.gold import GoldReference


def check_instruction(position: int, question: str = "rank", size: int = 0) -> str:
    """The text an attention-check card shows instead of a prompt (``position`` from 0),
    worded for the study's question format (``Study.Question``; ``size``: the task's cards,
    for best_worst's last place).

    Prolific's rules: an explicit instruction, no trick, nothing to remember. In the
    participant's language (read when the page is made).
    """
    if question == "best_worst":
        if position == 0:
            return gettext(
                "This card is an attention check, not a prompt to judge: "
                "please pick it as the most stereotypical card."
            )
        return gettext(
            "This card is an attention check, not a prompt to judge: "
            "please pick it as the least stereotypical card."
        )
    if question == "pairwise":
        return gettext(
            "This card is an attention check, not a prompt to judge: "
            "please choose this card (not equal)."
        )
    if question == "rank_ties":
        return gettext(
            "This card is an attention check, not a prompt to rank: "
            "please put it at position %(position)s, on its own (tied with no other card)."
        ) % {"position": position + 1}
    return gettext(
        "This card is an attention check, not a prompt to rank: "
        "please put it at position %(position)s."
    ) % {"position": position + 1}


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_gold_reference(ref) -> GoldReference:
    """``{"order": [ids]}`` or ``{"pairs": [[a, b], ...]}`` as a ``GoldReference``;
    ``ValueError`` saying what is wrong otherwise."""
    if isinstance(ref, dict) and set(ref) == {"order"} and isinstance(ref["order"], list):
        if not all(map(_is_id, ref["order"])):
            raise ValueError("a reference order lists whole-number item ids")
        return GoldReference.from_order(ref["order"])
    if isinstance(ref, dict) and set(ref) == {"pairs"} and isinstance(ref["pairs"], list):
        pairs = ref["pairs"]
        if not all(isinstance(p, list) and len(p) == 2 and all(map(_is_id, p)) for p in pairs):
            raise ValueError("keyed pairs are [a, b] lists of two whole-number item ids")
        return GoldReference.from_pairs(tuple(p) for p in pairs)
    raise ValueError('a gold reference is {"order": [ids]} or {"pairs": [[a, b], ...]}')


class RankingTask(models.Model):
    """One occupation, K items of one study, ranked by ``overlap`` annotators.

    ``priority`` orders the open tasks under the ``active`` sampler (higher first);
    0 until the sampler has scored the task.

    A *gold* task (``is_gold``) carries a reference, ``{"order": [ids]}`` (most to
    least stereotypical, every pair keyed) or ``{"pairs": [[a, b], ...]}`` (only
    these pairs keyed: a before b); it ignores overlap and never feeds labels.
    A task may hold an *attention check*: ``check_item``, one of its cards, shows
    ``check_instruction(check_position)`` instead of its prompt; that card never
    feeds labels. Gold tasks hold no check (each measures one thing).

    ``card_text`` says what text a card shows: its prompt (collection studies), nothing
    (a blinded validation task) or its condition's text (a validation study that
    shows prompts; ``annotation.validation.building``).
    """

    class CardText(models.TextChoices):
        PROMPT = "prompt", "The item's prompt"
        NONE = "none", "Nothing (blinded)"
        CONDITION = "condition", "The condition's text"

    study = study_field("tasks")
    occupation = models.ForeignKey(Occupation, on_delete=models.PROTECT, related_name="tasks")
    items = models.ManyToManyField(Item, through="TaskItem", related_name="tasks")
    overlap = models.PositiveSmallIntegerField(default=1)
    # Denormalised count of stored rankings, kept by services.submit_ranking under
    # a row lock; lets assignment order by "furthest from overlap" cheaply.
    ranking_count = models.PositiveIntegerField(default=0)
    # Written by the training side's sampler (training/registry/sampling.py) for an ``active``
    # study: higher is handed out sooner; assignment's ``active`` ordering reads it.
    priority = models.FloatField(default=0.0, db_index=True)
    is_gold = models.BooleanField(default=False, db_index=True)
    gold_reference = models.JSONField(null=True, blank=True)
    card_text = models.CharField(max_length=20, choices=CardText.choices, default=CardText.PROMPT)
    check_item = models.ForeignKey(
        Item, null=True, blank=True, on_delete=models.PROTECT, related_name="checks"
    )
    check_position = models.PositiveSmallIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="overlap_at_least_one"),
            # Gold and attention-check tasks are open to every annotator (assignment's
            # OPEN_TO_ALL); any other task holds at most its overlap.
            models.CheckConstraint(
                condition=Q(is_gold=True)
                | Q(check_item__isnull=False)
                | Q(ranking_count__lte=models.F("overlap")),
                name="never_more_rankings_than_overlap",
            ),
            models.CheckConstraint(
                condition=Q(is_gold=False, gold_reference__isnull=True)
                | Q(is_gold=True, gold_reference__isnull=False),
                name="gold_task_has_a_reference",
            ),
            models.CheckConstraint(
                condition=Q(check_item__isnull=True, check_position__isnull=True)
                | Q(check_item__isnull=False, check_position__isnull=False, is_gold=False),
                name="check_has_card_and_position_and_no_gold",
            ),
        ]
        indexes = [
            # The open tasks only: assignment's candidate query reads these, so its cost
            # follows the open tasks, not every task a study has finished.
            models.Index(
                fields=["study", "id"],
                condition=Q(is_gold=False, ranking_count__lt=models.F("overlap")),
                name="open_task",
            )
        ]

    def __str__(self) -> str:
        return f"task {self.pk} ({self.occupation})"

    def reference(self) -> GoldReference:
        """The gold reference as the quality library reads it; ``ValueError`` if malformed."""
        return parse_gold_reference(self.gold_reference)

    def clean(self) -> None:
        """A gold reference names this task's items; a check card is one of its cards."""
        errors, referred = {}, set()
        if self.is_gold:
            try:
                referred = {i for pair in self.reference().pairs for i in pair}
            except ValueError as error:
                errors["gold_reference"] = str(error)
        elif self.gold_reference is not None:
            errors["gold_reference"] = "Only a gold task has a reference."
        if (self.check_item_id is None) != (self.check_position is None):
            errors["check_position"] = "An attention check needs both its card and its position."
        if self.check_item_id is not None and self.is_gold:
            errors["check_item"] = "A gold task holds no attention check."
        if errors or self.pk is None:
            if errors:
                raise ValidationError(errors)
            return
        items = set(self.task_items.values_list("item_id", flat=True))
        if referred - items:
            errors["gold_reference"] = f"Items {sorted(referred - items)} are not in this task."
        if self.check_item_id is not None:
            if self.check_item_id not in items:
                errors["check_item"] = "The check card must be one of this task's items."
            if self.check_position >= len(items):
                errors["check_position"] = f"Position must be below the task's {len(items)} cards."
        if errors:
            raise ValidationError(errors)


class TaskItem(models.Model):
    task = models.ForeignKey(RankingTask, on_delete=models.CASCADE, related_name="task_items")
    item = models.ForeignKey(Item, on_delete=models.PROTECT, related_name="task_items")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "item"], name="unique_task_item")]


class Assignment(models.Model):
    """A reservation of a task for one annotator until ``reserved_until``."""

    # No index of its own: (task, annotator) and (task, reserved_until) lead with it, and
    # each index is one more write on every reservation (the portal's hot path).
    task = models.ForeignKey(
        RankingTask, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    annotator = models.ForeignKey(
        AnnotatorProfile, on_delete=models.CASCADE, related_name="assignments"
    )
    shown_order = models.JSONField(help_text="Item ids in the order they are shown.")
    reserved_at = models.DateTimeField(auto_now_add=True)
    reserved_until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "annotator"], name="one_assignment_per_pair")
        ]
        indexes = [models.Index(fields=["task", "reserved_until"])]
