"""Adaptive overlap, the rule: a task whose rankings disagree gets one more annotator.

A task earns one more ranking when all its slots are filled, the two or more rankings
that count have a Kendall's W below ``cut`` (they disagree: W is 1 when every
ranking is the same order, about 1/m for m random ones) and its overlap is below
``cap``. As annotation tools do for items with disagreement (Label Studio's
overlap, Prolific's re-collection), so the labels of contested tasks rest on more
rankings, never more than ``cap``. Pure: the service (``annotation.assignment.overlap``) reads
and writes.
"""

from __future__ import annotations

import math

import numpy as np

from .agreement import kendall_w


def task_agreement(orders: list[list[int]]) -> float:
    """Kendall's W of one task's rankings (each the same items, most stereotypical
    first); NaN for fewer than 2 rankings or items."""
    if len(orders) < 2 or len(orders[0]) < 2:
        return math.nan
    items = sorted(orders[0])
    ranks = np.array([[order.index(i) for i in items] for order in orders], dtype=float)
    return kendall_w(ranks).w


def one_more(w: float, overlap: int, *, full: bool, cut: float, cap: int) -> bool:
    """Whether a task gets one more annotator: ``full`` (every slot ranked), its
    agreement ``w`` (NaN: not measured) below ``cut``, its overlap below ``cap``."""
    return full and not math.isnan(w) and w < cut and overlap < cap
