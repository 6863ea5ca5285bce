"""Gold tasks, attention checks and the per-annotator quality summary (the pure part).

* A **gold reference** is a set of keyed pairs ``(a, b)``: "a is more
  stereotypical than b", i.e. a good ranking puts ``a`` before ``b``. A full
  reference order keys all its pairs; a partial one only some (e.g. the
  stereotypical prompt before the diverse one).
* **Gold score** of a ranking: Kendall's tau (Kendall 1938, "A new measure of
  rank correlation") restricted to the keyed pairs::

      score = (concordant - discordant) / keyed pairs present

  "present": both items are in the ranking. 1 = every keyed pair kept, -1 =
  every one reversed, about 0 for a random order; a keyed pair ranked equal (one
  tier, ``tiers.py``) is neither kept nor reversed. An annotator's gold score is the
  mean over their gold tasks.
* An **attention check** is an instructional card inside a task ("this is a
  check: put this card first"); it passes iff the card is alone in its tier and that
  tier starts at the instructed position (Prolific's rules: an explicit instruction,
  no memory needed). The instruction fits each format (``annotation.models.tasks``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.json import AsDict

from .records import Annotator, ItemId, RankingRecord, TaskId
from .tiers import Tiers


@dataclass(frozen=True)
class GoldReference:
    """Keyed pairs ``(a, b)``: ``a`` ranks before (more stereotypical than) ``b``."""

    pairs: frozenset[tuple[ItemId, ItemId]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", frozenset(tuple(p) for p in self.pairs))
        if not self.pairs:
            raise ValueError("a gold reference needs at least one keyed pair")
        for a, b in self.pairs:
            if a == b:
                raise ValueError(f"keyed pair ({a!r}, {b!r}) pairs an item with itself")
            if (b, a) in self.pairs:
                raise ValueError(f"keyed pairs ({a!r}, {b!r}) and ({b!r}, {a!r}) contradict")

    @classmethod
    def from_order(cls, order: Sequence[ItemId]) -> GoldReference:
        """A full reference: every pair of ``order`` (most -> least stereotypical) keyed."""
        if len(set(order)) != len(order):
            raise ValueError(f"reference order repeats an item: {tuple(order)!r}")
        return cls(frozenset((a, b) for i, a in enumerate(order) for b in order[i + 1 :]))

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[ItemId, ItemId]]) -> GoldReference:
        """A partial reference from its keyed pairs."""
        return cls(frozenset(tuple(p) for p in pairs))


def gold_score(order: Sequence[ItemId] | Mapping[ItemId, float], reference: GoldReference) -> float:
    """``(concordant - discordant) / present`` over the reference's keyed pairs, of a
    strict ``order`` or of ``{item: place}`` (``RankingRecord.positions``: ties).

    Raises ``ValueError`` when no keyed pair has both items in ``order``.
    """
    position = order if isinstance(order, Mapping) else {i: p for p, i in enumerate(order)}
    present = [(a, b) for a, b in reference.pairs if a in position and b in position]
    if not present:
        raise ValueError(f"no keyed pair of the gold reference is in the ranking {tuple(order)!r}")
    concordant = sum(1 for a, b in present if position[a] < position[b])
    discordant = sum(1 for a, b in present if position[a] > position[b])
    return (concordant - discordant) / len(present)


@dataclass(frozen=True)
class AttentionCheck:
    """An instructional card ``item`` that the annotator is told to put at ``position``."""

    item: ItemId
    position: int

    def __post_init__(self) -> None:
        if self.position < 0:
            raise ValueError(f"an attention check's position must be >= 0, got {self.position}")

    def passed(self, order: Sequence[ItemId], tiers: Tiers | None = None) -> bool:
        """True iff the card is at the instructed position of ``order`` and, with
        ``tiers`` (a ranking with ties), alone in its tier."""
        if self.item not in order:
            raise ValueError(f"attention check card {self.item!r} is not in {tuple(order)!r}")
        if self.position >= len(order):
            raise ValueError(
                f"attention check position {self.position} is past a task of {len(order)} cards"
            )
        if tiers is not None and (self.item,) not in tiers:
            return False
        return order[self.position] == self.item


@dataclass(frozen=True)
class AnnotatorQuality(AsDict):
    """One annotator's quality figures (NaN where there is nothing to measure).

    ``gold_score``: mean over ``n_gold`` gold tasks. ``check_pass_rate``:
    ``1 - n_checks_failed / n_checks``. ``median_seconds``: over the rankings
    with a time. ``untouched_rate``: ``n_untouched / n_with_shown_order``, over the
    answers the untouched rule reads (``_untouched_judged``); ``untouched_chance``: the
    mean of ``untouched_chance`` over those answers.
    """

    annotator: Annotator
    n_rankings: int
    n_gold: int
    gold_score: float
    n_checks: int
    n_checks_failed: int
    check_pass_rate: float
    median_seconds: float
    n_with_shown_order: int
    n_untouched: int
    untouched_rate: float
    untouched_chance: float = 0.0
    n_all_equal: int = 0  # of ``n_untouched``: everything in one tier


def untouched_chance(record: RankingRecord) -> float:
    """The probability that an answer of this record's shape (its tiers' sizes) is the
    shown order by chance: ``prod(size!) / K!``; 0 for everything in one tier, which no
    judgement of several different images gives by chance (a pair's "equal" enters the
    rule only when every answer is "equal": ``annotator_quality``)."""
    sizes = [len(t) for t in record.tiered()]
    if len(sizes) < 2:
        return 0.0
    return math.prod(math.factorial(s) for s in sizes) / math.factorial(record.k)


def _equal_pair(record: RankingRecord) -> bool:
    return record.k == 2 and len(record.tiered()) == 1


def _untouched_judged(records: list[RankingRecord]) -> list[RankingRecord]:
    """The answers the untouched rule reads: those with a known shown order, less a pair's
    "equal", a judgement the format offers (a careful person says it of close images),
    unless every such answer is "equal", the careless pattern it stands for."""
    known = [r for r in records if r.untouched is not None]
    strict = [r for r in known if not _equal_pair(r)]
    return strict if strict else known


def _ratio(num: float, den: int) -> float:
    return num / den if den else float("nan")


def annotator_quality(
    records: Iterable[RankingRecord],
    gold: Mapping[TaskId, GoldReference] | None = None,
    checks: Mapping[TaskId, AttentionCheck] | None = None,
) -> dict[Annotator, AnnotatorQuality]:
    """``{annotator: AnnotatorQuality}`` from their rankings, the gold tasks and the checks.

    ``gold`` and ``checks`` are keyed by task id; a ranking of a task found there
    is scored or checked. Every ranking counts for time and the untouched rate.
    """
    gold, checks = gold or {}, checks or {}
    mine: dict[Annotator, list[RankingRecord]] = defaultdict(list)
    for r in records:
        mine[r.annotator].append(r)
    out = {}
    for annotator, rs in mine.items():
        scores = [gold_score(r.positions(), gold[r.task_id]) for r in rs if r.task_id in gold]
        results = [checks[r.task_id].passed(r.order, r.tiers) for r in rs if r.task_id in checks]
        seconds = [r.seconds for r in rs if r.seconds is not None]
        judged = _untouched_judged(rs)
        known = [r.untouched for r in judged]
        chances = [untouched_chance(r) for r in judged]
        failed = results.count(False)
        out[annotator] = AnnotatorQuality(
            annotator=annotator,
            n_rankings=len(rs),
            n_gold=len(scores),
            gold_score=_ratio(sum(scores), len(scores)),
            n_checks=len(results),
            n_checks_failed=failed,
            check_pass_rate=_ratio(len(results) - failed, len(results)),
            median_seconds=float(statistics.median(seconds)) if seconds else float("nan"),
            n_with_shown_order=len(known),
            n_untouched=sum(known),
            untouched_rate=_ratio(sum(known), len(known)),
            untouched_chance=_ratio(sum(chances), len(chances)),
            n_all_equal=sum(len(r.tiered()) == 1 for r in judged),
        )
    return out
