"""Rankings -> item labels, for all annotators or one demographic group.

An item's label from one ranking of K items is ``position / (K - 1)`` (0 = most
stereotypical, 1 = least); its label is the mean over the rankings that contain
it; a group label uses only that group's rankings. The functions over rows are
pure; ``annotation.selectors.label_rows`` is the one query that feeds them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .models import DemographicField


@dataclass(frozen=True)
class LabelRow:
    """One item's place in one ranking, with the ranking annotator's demographics."""

    ranking_id: int
    item_id: int
    position: int
    demographics: dict


def _ranking_sizes(rows: Sequence[LabelRow]) -> dict[int, int]:
    sizes: dict[int, int] = defaultdict(int)
    for r in rows:
        sizes[r.ranking_id] += 1
    return sizes


def item_labels(rows: Iterable[LabelRow]) -> dict[int, float]:
    """``{item_id: mean position / (K - 1)}`` over the rankings in ``rows``.

    K is the number of rows of each ranking; a ranking of one item says nothing
    about order and is ignored.
    """
    rows = list(rows)
    sizes = _ranking_sizes(rows)
    sums: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    for r in rows:
        k = sizes[r.ranking_id]
        if k < 2:
            continue
        sums[r.item_id] += r.position / (k - 1)
        counts[r.item_id] += 1
    return {item: sums[item] / counts[item] for item in sorted(counts)}


def group_labels(rows: Iterable[LabelRow], fields: Sequence[str]) -> dict[str, dict[str, dict]]:
    """``{field: {value: {item_id: label}}}``, each from that group's rankings only.

    Unanswered fields and "prefer not to say" form no group.
    """
    rows = list(rows)
    out: dict[str, dict[str, dict]] = {}
    for field in fields:
        # All rows of a ranking share its annotator, so a group takes whole rankings.
        by_value: dict[str, list[LabelRow]] = defaultdict(list)
        for r in rows:
            value = r.demographics.get(field)
            if not isinstance(value, str) or not value.strip():
                continue
            if value.strip().lower() == DemographicField.PREFER_NOT_TO_SAY:
                continue
            by_value[value.strip()].append(r)
        groups = {value: item_labels(by_value[value]) for value in sorted(by_value)}
        out[field] = groups
    return out
