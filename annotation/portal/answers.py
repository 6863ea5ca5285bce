"""What a portal page posts, as an answer (issue 40): the ranking page's order (and, in a
study with ties, the cards marked "same as the card above"), or the choice page's picks
(top k, most and least, a pair). Pure: the fields say which page posted them, and
``annotation.rankings.tiers.validate`` then checks the answer against the task's items
and its study's format, so a tampered or half-filled form is a 400-style message, never
a ranking of another shape.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.utils.translation import gettext

from annotation.errors import InvalidAnswer

EQUAL = "equal"
CHOICE_PAGES = ("top_k", "best_worst", "pairwise")


def ids(raw: str):
    """A comma-separated list of ids as integers; the raw text when it is not (the
    validator refuses it with its own message)."""
    try:
        return [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        return raw


def _one(post: Mapping, name: str) -> int:
    try:
        return int(post.get(name, ""))
    except ValueError:
        raise InvalidAnswer(gettext("Choose a card for every question on the page.")) from None


def from_post(post: Mapping) -> list:
    """The answer a form posted: an order, or tiers (module docstring)."""
    cards = ids(post.get("cards", ""))
    if "most" in post or "least" in post:  # best-worst
        most, least = _one(post, "most"), _one(post, "least")
        if most == least:
            raise InvalidAnswer(gettext("The most and the least stereotypical card must differ."))
        return [[most], [c for c in cards if c not in (most, least)], [least]]
    if "choice" in post:  # a pair
        if post["choice"] == EQUAL:
            return [cards]
        chosen = _one(post, "choice")
        return [[chosen], [c for c in cards if c != chosen]]
    picks = sorted(name for name in post if name.startswith("pick_"))
    if picks:  # top k: pick_1 .. pick_k
        chosen = [_one(post, f"pick_{n}") for n in range(1, len(picks) + 1)]
        if len(set(chosen)) != len(chosen):
            raise InvalidAnswer(gettext("Choose a different card for each place."))
        return [*([c] for c in chosen), [c for c in cards if c not in chosen]]
    order = ids(post.get("order", ""))
    tied = ids(",".join(post.getlist("tied")))  # the cards "as stereotypical as the one before"
    if not tied or not isinstance(order, list):
        return order
    if not isinstance(tied, list):
        return tied  # not ids: the validator refuses it with its own message
    tiers: list[list[int]] = []
    for item in order:
        if tiers and item in tied:
            tiers[-1].append(item)
        else:
            tiers.append([item])
    return tiers
