"""The answers a study's question format accepts (issue 40): an answer checked as tiers
(``annotation.stats.tiers``, the representation every consumer reads) against its task's
items and its study's format (``Study.Question``; which formats fit a task size:
``annotation.models.studies.question_refusal``).
"""

from __future__ import annotations

from django.utils.translation import gettext

from annotation.errors import InvalidAnswer
from annotation.models import Study
from annotation.stats.tiers import Tiers, flatten, is_strict, strict

Question = Study.Question


def check_order_shape(order) -> list[int]:
    """An order is a list of distinct item ids (integers), whatever the task."""
    if not isinstance(order, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in order
    ):
        raise InvalidAnswer(gettext("The order must be a list of item ids (integers)."))
    if len(set(order)) != len(order):
        raise InvalidAnswer(gettext("Each item may appear only once in the order."))
    return order


def validate_order(order, item_ids: set[int]) -> list[int]:
    """An order must be exactly a permutation of the task's item ids (which the message
    names: call it only with a task the caller may see)."""
    check_order_shape(order)
    if problems := _coverage(set(order), item_ids):
        raise InvalidAnswer(
            gettext("The order must rank exactly this task's %(count)s items: %(problems)s.")
            % {"count": len(item_ids), "problems": problems}
        )
    return order


def _coverage(given: set[int], item_ids: set[int]) -> str:
    """What an answer misses of the task's items and holds beyond them ("" when neither)."""
    missing, foreign = item_ids - given, given - item_ids
    parts = []
    if missing:
        parts.append(gettext("missing items %(ids)s") % {"ids": sorted(missing)})
    if foreign:
        parts.append(gettext("items not in this task %(ids)s") % {"ids": sorted(foreign)})
    return "; ".join(parts)


def parse(answer) -> list[list]:
    """The shape of an answer: a list of tiers, each a non-empty list of item ids
    (integers), no id twice. ``InvalidAnswer`` says what is wrong."""
    if not isinstance(answer, list) or not answer:
        raise InvalidAnswer(gettext("The tiers must be a non-empty list of lists of item ids."))
    for tier in answer:
        if not isinstance(tier, list) or not tier:
            raise InvalidAnswer(gettext("Each tier must be a non-empty list of item ids."))
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in tier):
            raise InvalidAnswer(gettext("Item ids must be integers."))
    flat = flatten(answer)
    if len(set(flat)) != len(flat):
        raise InvalidAnswer(gettext("Each item may appear only once in the tiers."))
    return answer


def is_order(answer) -> bool:
    """A flat list of ids (an order), not a list of tiers."""
    return isinstance(answer, list) and not any(isinstance(a, list) for a in answer)


def check_shape(answer) -> None:
    """An order or tiers, well formed whatever the task (``InvalidAnswer`` if not)."""
    check_order_shape(answer) if is_order(answer) else parse(answer)


def validate(answer, item_ids: set[int], question: str, k: int | None = None) -> Tiers:
    """An answer's tiers, checked against the task's items and the study's format: each
    item exactly once, and the format's own rule. ``answer`` is tiers, or an order (a
    strict ranking's tiers of one). ``InvalidAnswer`` names the rule broken (and the
    task's items: call it only with a task the caller may see)."""
    if is_order(answer):
        return _format_rule(strict(validate_order(answer, item_ids)), len(item_ids), question, k)
    if (
        question == Question.BEST_WORST
        and isinstance(answer, list)
        and len(answer) >= 2
        and answer[0] == answer[-1]
    ):
        raise InvalidAnswer(gettext("The most and the least stereotypical card must differ."))
    tiers = parse(answer)
    if problems := _coverage(set(flatten(tiers)), item_ids):
        raise InvalidAnswer(
            gettext("The answer must place exactly this task's %(count)s items: %(problems)s.")
            % {"count": len(item_ids), "problems": problems}
        )
    return _format_rule(tuple(tuple(t) for t in tiers), len(item_ids), question, k)


def _format_rule(tiers: Tiers, n: int, question: str, k: int | None) -> Tiers:
    sizes = [len(t) for t in tiers]
    if question == Question.RANK and not is_strict(tiers):
        raise InvalidAnswer(gettext("This study asks for a strict order: no two cards may tie."))
    if question == Question.TOP_K and sizes != [1] * k + [n - k]:
        raise InvalidAnswer(
            gettext("Rank exactly the top %(k)s cards, one at a time; the rest stay together.")
            % {"k": k}
        )
    if question == Question.BEST_WORST and sizes != [1, n - 2, 1]:
        raise InvalidAnswer(
            gettext("Pick one most and one least stereotypical card; the rest stay together.")
        )
    return tiers
