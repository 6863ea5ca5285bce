"""Small groups hidden: the one k-anonymity rule of every figure about a group.

A group is one value of one demographic field (``annotation.stats.records.group_of``).
Wherever the platform computes, shows or exports a group's figures (the progress,
quality, perspective and validation pages and their charts, the staff API, the model
card, a snapshot's group labels, the exports of aggregates), the group is kept only
when ``k`` or more distinct annotators stand behind it (``STEREORANK_GROUP_K``,
default 5). A smaller group is left out whole: no figure, no name, no count of its
own; the surface says only how many groups it hid (``hidden_note``), so nobody learns
that a group of one exists, nor what its member answered.

Pure Python (no Django): the statistics libraries below the apps
(``annotation.stats``, ``training.ml``) call it as the pages do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class KeptGroups(Generic[V]):
    """The groups of ``k`` or more annotators (name -> whatever was given for it, in the
    given order) and how many groups below ``k`` were hidden."""

    groups: dict[str, V]
    hidden: int
    k: int

    @property
    def note(self) -> str:
        """What the surface says of the hidden groups (``hidden_note``)."""
        return hidden_note(self.hidden, self.k)


def keep_groups(
    groups: Mapping[str, V], k: int, size: Callable[[V], int | None] | None = None
) -> KeptGroups[V]:
    """The groups of ``k`` or more annotators and the number hidden.

    ``size(value)``: how many distinct annotators stand behind the group (default: the
    value is that number); ``None`` for a group already known to be below ``k`` whose
    size was not kept (a stored suppression): hidden. A group of no annotator (a choice
    nobody gave) is no group: left out and not counted. ``ValueError`` for ``k < 1``.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    kept: dict[str, V] = {}
    hidden = 0
    for name, value in groups.items():
        n = value if size is None else size(value)
        if n is not None and n >= k:
            kept[name] = value
        elif n is None or n > 0:
            hidden += 1
    return KeptGroups(kept, hidden, k)


def hidden_note(hidden: int, k: int) -> str:
    """``"2 groups below k = 5 hidden"``; empty when none was hidden."""
    if not hidden:
        return ""
    return f"{hidden} group{'s' if hidden != 1 else ''} below k = {k} hidden"
