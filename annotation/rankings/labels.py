"""Rankings -> item labels, for all annotators or one demographic group.

An item's label from one ranking of K items is ``place / (K - 1)`` (0 = most stereotypical,
1 = least; its place is its position, or its tier's mean position when it was ranked equal
with others: ``annotation.stats.tiers``); its label is the mean over the rankings that
contain it, or, with reliability weights (``quality.weights``, off by default), the mean
weighted by each ranking's annotator; a group label uses only that group's rankings,
unweighted. The functions over rows are pure; ``annotation.rankings.selectors.label_rows``
is the one query that feeds them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from annotation.stats.records import RankingRecord, group_of
from annotation.stats.tiers import flatten, from_tier_index
from core.small_groups import keep_groups


@dataclass(frozen=True)
class LabelRow:
    """One item's place in one ranking, with the ranking annotator's demographics (and,
    for reliability weights, the annotator's user id and the task)."""

    ranking_id: int
    item_id: int
    position: float  # the item's place (``annotation.stats.tiers.places``)
    demographics: dict
    annotator: int | None = None
    task_id: int | None = None


def _ranking_sizes(rows: Sequence[LabelRow]) -> dict[int, int]:
    sizes: dict[int, int] = defaultdict(int)
    for r in rows:
        sizes[r.ranking_id] += 1
    return sizes


def item_labels(
    rows: Iterable[LabelRow], weights: Mapping[int | None, float] | None = None
) -> dict[int, float]:
    """``{item_id: mean position / (K - 1)}`` over the rankings in ``rows``.

    K is the number of rows of each ranking; a ranking of one item says nothing
    about order and is ignored. With ``weights`` (``{annotator: weight >= 0}``,
    1 for an annotator not in it) the mean is weighted by each ranking's
    annotator; an item whose rankings all weigh 0 keeps its unweighted mean.
    """
    rows = list(rows)
    sizes = _ranking_sizes(rows)
    sums: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    weighted: dict[int, float] = defaultdict(float)
    totals: dict[int, float] = defaultdict(float)
    for r in rows:
        k = sizes[r.ranking_id]
        if k < 2:
            continue
        label = r.position / (k - 1)
        sums[r.item_id] += label
        counts[r.item_id] += 1
        if weights is not None:
            w = weights.get(r.annotator, 1.0)
            weighted[r.item_id] += w * label
            totals[r.item_id] += w
    return {
        item: weighted[item] / totals[item] if totals[item] > 0 else sums[item] / counts[item]
        for item in sorted(counts)
    }


def ranking_records(rows: Iterable[LabelRow]) -> list[RankingRecord]:
    """The rankings of ``rows`` as quality records (task, annotator, order), for
    ``quality.weights``: the same rankings, and the same check cards left out, as
    the labels they weigh."""
    by_ranking: dict[int, list[LabelRow]] = defaultdict(list)
    for r in rows:
        by_ranking[r.ranking_id].append(r)
    out = []
    for _, ranked in sorted(by_ranking.items()):
        tiers = from_tier_index({r.item_id: r.position for r in ranked})
        out.append(
            RankingRecord(
                task_id=ranked[0].task_id,
                annotator=ranked[0].annotator,
                occupation="",
                order=tuple(flatten(tiers)),
                tiers=tiers,
            )
        )
    return out


def group_labels(
    rows: Iterable[LabelRow], fields: Sequence[str], k: int = 1
) -> dict[str, dict[str, dict]]:
    """``{field: {value: {item_id: label}}}``, each from that group's rankings only, for
    groups of ``k`` or more annotators (``LabelRow.annotator``): a smaller group's labels
    are its few members' own answers.

    Unanswered fields and "prefer not to say" form no group (``group_of``). Never
    reliability-weighted: weights measure agreement with everyone's consensus, and
    would pull each group's labels toward the majority's, the very effect the
    perspective reports measure.
    """
    rows = list(rows)
    out: dict[str, dict[str, dict]] = {}
    for field in fields:
        # All rows of a ranking share its annotator, so a group takes whole rankings.
        by_value: dict[str, list[LabelRow]] = defaultdict(list)
        for r in rows:
            value = group_of(r.demographics, field)
            if value is not None:
                by_value[value].append(r)
        ordered = {value: by_value[value] for value in sorted(by_value)}
        shown = keep_groups(ordered, k, size=lambda rs: len({r.annotator for r in rs}))
        out[field] = {value: item_labels(rs) for value, rs in shown.groups.items()}
    return out
