"""Adaptive overlap, the rule: a task whose rankings disagree gets one more annotator.

A task earns one more ranking when all its slots are filled, the two or more rankings
that count have a Kendall's W below ``cut`` (they disagree: W is 1 when every
ranking is the same order, about 1/m for m random ones) and its overlap is below
``cap``. As annotation tools do for items with disagreement (Label Studio's
overlap, Prolific's re-collection), so the labels of contested tasks rest on more
rankings, never more than ``cap``. Pure: the service (``annotation.assignment.overlap``) reads
and writes.

Answers with ties (issue 40) count by their places (``tiers.places``: W's tie correction).
On a pair answered without "equal", W is the squared majority margin, ``((a - b) / m)^2``
for ``a`` and ``b`` answers for each side: 1 when everyone agrees, 0 when they split
evenly; the same ``cut`` then asks one more answer of a pair whose answers split closer
than about 85/15 at the default cut of 0.5 (a margin of 0.71). An "equal" is a tie, and W's
tie correction counts it (two answers for one side and one "equal": W = 2/3).
"""

from __future__ import annotations

import math

import numpy as np

from .agreement import kendall_w
from .tiers import flatten, places, strict


def task_agreement(orders: list[list]) -> float:
    """Kendall's W of one task's rankings (each the same items, most stereotypical first:
    an order, or tiers: lists of items judged equal); NaN for fewer than 2 rankings or
    items."""
    ranked = [strict(o) if not o or not isinstance(o[0], list | tuple) else o for o in orders]
    if len(ranked) < 2 or len(flatten(ranked[0])) < 2:
        return math.nan
    items = sorted(flatten(ranked[0]))
    ranks = np.array([[places(r)[i] for i in items] for r in ranked], dtype=float)
    return kendall_w(ranks).w


def one_more(w: float, overlap: int, *, full: bool, cut: float, cap: int) -> bool:
    """Whether a task gets one more annotator: ``full`` (every slot ranked), its
    agreement ``w`` (NaN: not measured) below ``cut``, its overlap below ``cap``."""
    return full and not math.isnan(w) and w < cut and overlap < cap
