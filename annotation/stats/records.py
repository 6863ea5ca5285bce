"""The one input type of the quality library: a ranking as plain values.

A caller (selector, importer, test) turns whatever it stores into
``RankingRecord``s; every function in ``annotation.stats`` reads only these.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .tiers import Tiers, flatten, is_strict, places, strict, untouched

ItemId = Hashable
TaskId = Hashable
Annotator = Hashable

# The answer that forms no group (``DemographicField.PREFER_NOT_TO_SAY`` is this one).
PREFER_NOT_TO_SAY = "prefer not to say"


def group_of(demographics: Mapping, field: str) -> str | None:
    """An annotator's group for ``field``: the stripped answer; None when unanswered or
    "prefer not to say" (no group). The one rule, so labels, agreement breakdowns and
    perspective reports agree on groups."""
    value = demographics.get(field)
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    return None if value.lower() == PREFER_NOT_TO_SAY else value


@dataclass(frozen=True)
class RankingRecord:
    """One annotator's ranking of one task.

    ``order``: the task's item ids from most stereotypical (position 0) to least
    (position K - 1), tier after tier. ``shown_order``: the same ids in the order they
    were shown, or empty when unknown (imported data). ``seconds``: time spent, if known.
    ``group``: the annotator's demographics, ``{field: value}``. ``tiers``: the items
    judged equal, grouped (``tiers.py``), when the ranking has ties; None: strict.
    ``items``: the set of items ranked (set on creation).
    """

    task_id: TaskId
    annotator: Annotator
    occupation: str
    order: tuple[ItemId, ...]
    shown_order: tuple[ItemId, ...] = ()
    seconds: float | None = None
    group: Mapping[str, str | None] = field(default_factory=dict)
    tiers: Tiers | None = None

    def __post_init__(self) -> None:
        if self.tiers is not None:
            tiers = tuple(tuple(t) for t in self.tiers)
            object.__setattr__(self, "tiers", None if is_strict(tiers) else tiers)
            if flatten(tiers) != list(self.order):
                where = f"ranking of task {self.task_id!r} by {self.annotator!r}"
                raise ValueError(f"{where}: order {self.order!r} is not its tiers {tiers!r}")
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "shown_order", tuple(self.shown_order))
        items = frozenset(self.order)
        object.__setattr__(self, "items", items)
        if (
            not self.order
            or len(items) != len(self.order)
            or (
                self.shown_order
                and (len(self.shown_order) != len(self.order) or set(self.shown_order) != items)
            )
        ):
            self._invalid()
        if self.seconds is not None and not self.seconds >= 0:
            where = f"ranking of task {self.task_id!r} by {self.annotator!r}"
            raise ValueError(f"{where}: seconds must be >= 0, got {self.seconds!r}")

    def _invalid(self) -> None:
        where = f"ranking of task {self.task_id!r} by {self.annotator!r}"
        if not self.order:
            raise ValueError(f"{where}: order is empty")
        if len(set(self.order)) != len(self.order):
            raise ValueError(f"{where}: order repeats an item: {self.order!r}")
        if self.shown_order:
            raise ValueError(
                f"{where}: shown_order {self.shown_order!r} is not a reordering of "
                f"order {self.order!r}"
            )

    @property
    def k(self) -> int:
        """Number of items ranked."""
        return len(self.order)

    def positions(self) -> dict[ItemId, float]:
        """``{item: place}`` (0 = most stereotypical; items judged equal share their
        tier's mean position: ``tiers.places``), computed once (the breakdowns read a
        ranking's positions many times over; do not change it)."""
        cached = self.__dict__.get("_positions")
        if cached is None:
            if self.tiers is None:
                cached = {item: i for i, item in enumerate(self.order)}
            else:
                cached = places(self.tiers)
            object.__setattr__(self, "_positions", cached)
        return cached

    def tiered(self) -> Tiers:
        """The ranking's tiers (tiers of one for a strict ranking)."""
        return strict(self.order) if self.tiers is None else self.tiers

    @property
    def untouched(self) -> bool | None:
        """Answered without judging: submitted in the shown order (a tier's items are kept
        in shown order), or everything in one tier (all equal); ``None`` when the shown
        order is unknown."""
        return untouched(self.order, self.shown_order, self.tiers) if self.shown_order else None


def by_task(records: Iterable[RankingRecord]) -> dict[TaskId, list[RankingRecord]]:
    """Group rankings by task, checking each task's rankings are of one item set.

    Raises ``ValueError`` when two rankings of one task hold different items or
    one annotator ranked a task twice (both would make W and alpha meaningless).
    """
    tasks: dict[TaskId, list[RankingRecord]] = defaultdict(list)
    for r in records:
        tasks[r.task_id].append(r)
    for task_id, rankings in tasks.items():
        items = rankings[0].items
        annotators = [r.annotator for r in rankings]
        if any(r.items != items for r in rankings):
            raise ValueError(f"task {task_id!r}: its rankings do not hold the same items")
        if len(set(annotators)) != len(annotators):
            raise ValueError(f"task {task_id!r}: an annotator ranked it more than once")
    return dict(tasks)


def shared_tasks(
    records: Iterable[RankingRecord], min_rankings: int = 2
) -> dict[TaskId, list[RankingRecord]]:
    """The tasks with at least ``min_rankings`` rankings (the agreement subset); the
    others are counted, not grouped (most tasks of a study have one ranking)."""
    records = list(records)
    n = Counter(r.task_id for r in records)
    return by_task(r for r in records if n[r.task_id] >= max(min_rankings, 1))


def rank_matrix(rankings: Sequence[RankingRecord]) -> tuple[list[ItemId], list[list[int]]]:
    """Items (in the first ranking's order) and each ranking's ranks 1..K of them."""
    items = list(rankings[0].order)
    rows = []
    for r in rankings:
        pos = r.positions()
        rows.append([pos[item] + 1 for item in items])
    return items, rows
