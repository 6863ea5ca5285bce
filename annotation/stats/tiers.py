"""A ranking as tiers, on plain values: the one representation of every question format
(issue 40). Pure functions, no Django: the quality library reads rankings through them.

A ranking is an ordered list of **tiers**, each a set of items judged equal, from most
stereotypical to least. A strict ranking is K tiers of one item; ``rank_ties`` lets a
tier hold several; ``top_k`` is k tiers of one, then one tier of the rest; ``best_worst``
is a most-stereotypical tier of one, a middle tier of the rest and a least-stereotypical
tier of one; ``pairwise`` is a 2-item task answered with two tiers of one, or one tier of
both ("equal").

An item's **place** is its tier's mean position, counting from 0: the items of earlier
tiers, plus half of the others in its own tier (the mid-rank of Spearman's and Kendall's
tie corrections). A strict ranking's places are its positions, so every label computed
from places is the label computed from positions before tiers existed.

How a ranking stores them (``annotation.models.rankings``): ``RankedItem.position`` is the
item's **tier index** (a strict ranking's tier index is its position, so rankings stored
before tiers are single-item tiers, unchanged); ``Ranking.order`` is the flat order, tier
after tier; ``Ranking.tiers`` holds the tiers only when one holds more than one item.
``annotation.rankings.tiers`` checks an answer against a study's format.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable, Mapping, Sequence
from itertools import accumulate, groupby

Tiers = tuple[tuple[Hashable, ...], ...]


def strict(order: Iterable[Hashable]) -> Tiers:
    """A strict order as tiers of one."""
    return tuple((item,) for item in order)


def flatten(tiers: Sequence[Sequence[Hashable]]) -> list:
    """The items tier after tier (``Ranking.order``)."""
    return [item for tier in tiers for item in tier]


def is_strict(tiers: Sequence[Sequence[Hashable]]) -> bool:
    return all(len(tier) == 1 for tier in tiers)


def of_ranking(order: Sequence[Hashable], tiers: Sequence[Sequence[Hashable]] | None) -> Tiers:
    """A stored ranking's tiers (``Ranking.order`` and ``Ranking.tiers``)."""
    return strict(order) if tiers is None else tuple(tuple(t) for t in tiers)


def untouched(order: Sequence[Hashable], shown: Sequence[Hashable], tiers) -> bool:
    """Answered without judging: the flat order is the shown one (a tier's items are kept
    in shown order), or every item in one tier (``tiers``: None for a strict ranking)."""
    return list(order) == list(shown) or (tiers is not None and len(tiers) == 1)


def places(tiers: Sequence[Sequence[Hashable]]) -> dict[Hashable, float]:
    """``{item: its tier's mean position}``, from 0 (module docstring)."""
    out: dict[Hashable, float] = {}
    before = 0
    for tier in tiers:
        middle = before + (len(tier) - 1) / 2
        for item in tier:
            out[item] = middle
        before += len(tier)
    return out


def closed_places(tier_indexes: Sequence[int]) -> list[float]:
    """The places of items whose tier indexes are ``tier_indexes`` (sorted ascending),
    the gaps closed: what is left of a ranking once an item is taken out."""
    out: list[float] = []
    for _, group in groupby(tier_indexes):
        size = len(list(group))
        out.extend([len(out) + (size - 1) / 2] * size)
    return out


def tier_index(tiers: Sequence[Sequence[Hashable]]) -> dict[Hashable, int]:
    """``{item: the index of its tier}`` (``RankedItem.position``)."""
    return {item: i for i, tier in enumerate(tiers) for item in tier}


def from_tier_index(index: Mapping[Hashable, int], shown: Sequence[Hashable] = ()) -> Tiers:
    """Tiers from ``{item: tier index}``; within a tier, items in ``shown`` order first."""
    at = {item: i for i, item in enumerate(shown)}
    ordered = sorted(index, key=lambda item: (index[item], at.get(item, len(at)), str(item)))
    tiers: list[list] = []
    last = None
    for item in ordered:
        if not tiers or index[item] != last:
            tiers.append([])
            last = index[item]
        tiers[-1].append(item)
    return tuple(tuple(t) for t in tiers)


def without(tiers: Sequence[Sequence[Hashable]], item: Hashable) -> Tiers:
    """The tiers with ``item`` taken out (an attention-check card), empty tiers dropped."""
    return tuple(t for t in (tuple(i for i in tier if i != item) for tier in tiers) if t)


def within(tiers: Sequence[Sequence[Hashable]], items: Container[Hashable]) -> Tiers:
    """The tiers with only ``items`` kept (one split's items of a ranking), empty tiers
    dropped."""
    return tuple(t for t in (tuple(i for i in tier if i in items) for tier in tiers) if t)


def pairs(tiers: Sequence[Sequence[Hashable]]) -> list[tuple[Hashable, Hashable]]:
    """Every (more, less) stereotypical pair the tiers state; none within a tier."""
    starts = [0, *accumulate(len(t) for t in tiers)]
    flat = flatten(tiers)
    return [
        (better, worse)
        for i, tier in enumerate(tiers)
        for better in tier
        for worse in flat[starts[i + 1] :]
    ]
