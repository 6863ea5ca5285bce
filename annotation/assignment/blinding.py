"""Blinded cards: what a participant sees of a blinded task names no image.

A task is blinded when its cards do not show the item's own prompt (``RankingTask.card_text``
``none`` or ``condition``): every task of a validation study, whose images come from two
conditions the participant must not be able to tell apart. Each card of such a task is shown
under a name of the participant's own, ``card_name``: a 48-bit number from an HMAC (the
project's secret key) of the annotator's and the item's ids. So the page, the API, the
image's URL and the order sent back carry no item id (item ids follow the import, condition
by condition), no stored file name and no condition; two participants see different names
for one image, so they cannot compare notes either. The order of the cards is the
reservation's own shuffle (``next_task``), their labels "Image A", "Image B"... follow it.

The server maps names back: ``items_of_order`` (a submitted order, inside the submit's
transaction: the reservation's shown items are the only names it knows) and
``selectors.card_item`` (the image behind a name, among the images of the participant's
live reservations only: anyone else's name is a 404, as a name that does not exist).

Collection studies keep their item ids and ``/media/`` URLs (decision): their cards show
the item's prompt, so an id tells a participant nothing the card does not; their images
stay static files a CDN or S3 serves, not images read through Django for every card of
thousands of participants; and the API's clients of collection studies keep the ids they
were given. Should a collection study ever show cards without prompts, its tasks are
blinded by the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.urls import reverse
from django.utils.crypto import salted_hmac

from annotation.errors import InvalidAnswer
from annotation.models import RankingTask

SALT = "stereorank.blinding.card"


def blinded(task: RankingTask) -> bool:
    """Whether the task's cards are shown under opaque names (module docstring)."""
    return task.card_text != RankingTask.CardText.PROMPT


def card_name(annotator_id: int, item_id: int) -> int:
    """The name under which ``annotator_id`` sees ``item_id``: 48 bits of an HMAC."""
    digest = salted_hmac(SALT, f"{annotator_id}:{item_id}", algorithm="sha256").digest()
    return int.from_bytes(digest[:6], "big")


def card_path(name: int) -> str:
    """The URL path of a named card's image (served by ``annotation.api.cards``)."""
    return reverse("api-card", args=[name])


def names(task: RankingTask, annotator_id: int, item_ids: Iterable[int]) -> list[int]:
    """The ids a participant is shown for ``item_ids``: card names on a blinded task."""
    if not blinded(task):
        return list(item_ids)
    return [card_name(annotator_id, i) for i in item_ids]


def _ints(order) -> bool:
    return isinstance(order, list) and all(
        isinstance(n, int) and not isinstance(n, bool) for n in order
    )


def items_of_order(task: RankingTask, annotator_id: int, order, shown: Sequence[int]):
    """The item ids a submitted ``order`` ranks. On a blinded task: the participant's card
    names, every one of the ``shown`` items once, become their items; the items' own ids
    (the server's own callers: simulations, imports) are taken as they are; anything else
    is an ``InvalidAnswer`` that names no item. Other tasks' orders are returned unchanged
    (``annotation.rankings.tiers.validate`` checks them)."""
    if not blinded(task):
        return order
    by_name = {card_name(annotator_id, i): i for i in shown}
    if _ints(order) and len(order) == len(by_name):
        if set(order) == set(by_name):
            return [by_name[n] for n in order]
        if set(order) == set(shown):
            return order
    raise InvalidAnswer(
        f"The order must rank exactly this task's {len(by_name)} images, each once, by the "
        "ids the task gave them."
    )
