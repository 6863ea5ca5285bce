"""How a synthetic annotator answers a task in its study's question format (issue 40).

A careful annotator perceives a score per card (``simulation.latent_order``'s model:
lower = more stereotypical) and answers the format from it (``from_scores``):

* ``rank``: every card in order of its score;
* ``rank_ties``: the same order, with neighbours whose scores differ by less than
  ``TIE_MARGIN`` called equal (a chain of close cards becomes one tier);
* ``top_k``: the k lowest scores in order, the rest together;
* ``best_worst``: the lowest and the highest, the rest together;
* ``pairwise``: the lower of the two first, or "equal" within ``TIE_MARGIN``.

An attention-check card is put where its instruction says (``check_positions``: always a
place the format can state), alone in its tier. Careless annotators answer the format from
a random or the shown order (``from_order``); the ``equal`` kind calls every card equal
where the format allows it (rank_ties, pairwise) and keeps the shown order elsewhere.

The seconds a careful answer takes (``careful_seconds``) are drawn around the planning
figures of ``annotation.stats.effort`` (45 s a ranking of six, 15 s a best-worst task of
four, 6 s a pair ...): an assumption, not a measurement.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from annotation.stats import effort
from annotation.stats.effort import BEST_WORST, PAIRWISE, RANK_TIES, TOP_K
from annotation.stats.tiers import Tiers, strict

TIE_MARGIN = 0.05


def _place_card(order: list[int], card: int | None, position: int | None) -> list[int]:
    order = [i for i in order if i != card]
    if card is not None:
        order.insert(min(position or 0, len(order)), card)
    return order


def from_order(
    order: Sequence[int],
    question: str,
    k: int | None = None,
    ties: Sequence[bool] = (),
) -> Tiers:
    """A strict ``order`` as the format's answer; ``ties[i]``: card i and i + 1 are close
    (rank_ties and pairwise call them equal)."""
    order = list(order)
    n = len(order)
    if question == TOP_K:
        return (*strict(order[:k]), tuple(order[k:]))
    if question == BEST_WORST:
        return ((order[0],), tuple(order[1:-1]), (order[-1],))
    if question in (RANK_TIES, PAIRWISE):
        tiers: list[list[int]] = [[order[0]]]
        for i in range(1, n):
            if i - 1 < len(ties) and ties[i - 1]:
                tiers[-1].append(order[i])
            else:
                tiers.append([order[i]])
        return tuple(tuple(t) for t in tiers)
    return strict(order)


def from_scores(
    scores: Mapping[int, float],
    question: str,
    k: int | None = None,
    card: int | None = None,
    position: int | None = None,
) -> Tiers:
    """A careful annotator's answer from the scores they perceive (module docstring)."""
    order = _place_card(sorted(scores, key=lambda pk: (scores[pk], pk)), card, position)
    ties = [
        card not in (a, b) and abs(scores[a] - scores[b]) < TIE_MARGIN
        for a, b in zip(order, order[1:], strict=False)
    ]
    return from_order(order, question, k, ties)


def careless(
    kind: str, shown: list[int], question: str, k: int | None, rng: random.Random
) -> tuple[Tiers, float]:
    """A careless annotator's answer of the shown cards and the seconds it took (kinds:
    ``annotation.models.SyntheticKind``)."""
    order = list(shown)
    if kind == "equal" and question in (RANK_TIES, PAIRWISE):
        return (tuple(order),), round(rng.uniform(1.0, 3.0), 1)
    if kind == "random":
        order = sorted(order)  # a seeded order whatever the (random) shown order
        rng.shuffle(order)
        return from_order(order, question, k), round(rng.uniform(2.0, 4.0) * len(order), 1)
    if kind == "hurried":
        order.insert(0, order.pop(rng.randrange(len(order))))
        return from_order(order, question, k), round(rng.uniform(1.0, 4.0), 1)
    if kind in ("shown", "equal"):
        return from_order(order, question, k), round(rng.uniform(1.0, 3.0), 1)
    raise ValueError(f"not a careless kind: {kind!r}")


def careful_seconds(question: str, cards: int, rng: random.Random, k: int | None = None) -> float:
    """The seconds a careful answer takes: the planning figure of its format
    (``annotation.stats.effort``) with a quarter of it as spread, at least 2."""
    mean = effort.seconds_per_answer(question, cards, k)
    return round(max(2.0, rng.gauss(mean, mean / 4)), 1)
