"""Agreement broken down: per occupation, within each demographic group, between groups.

* **Per occupation**: ``agreement.agreement`` over that occupation's tasks.
* **Within a group** (one value of one demographic field): the same figures
  over the group's own rankings only, on the tasks that two or more of its
  members ranked.
* **Between the groups of a field**: on each task ranked by members of two or
  more groups, each group's *consensus order* is its members' mean position of
  each item, re-ranked (equal means tie, at mid-rank); Kendall's W (ties
  corrected) and Krippendorff's alpha are then computed with the groups as the
  raters and these consensus orders as their rankings; W is averaged over
  those shared tasks, with a task bootstrap. High between-group W: the groups
  order the items alike; low between-group W beside high within-group W: they
  disagree. A consensus of few rankings is noisier, which pulls between-group
  W down; read it beside the within-group figures.

Privacy: a group with fewer than ``k`` distinct annotators in the records
given is hidden (``core.small_groups.keep_groups``): no figure, no name, and no
part in the between-group comparison; only how many groups of each field were
hidden is reported. Unanswered fields and "prefer not to say" form no group (as
in ``annotation/rankings/labels.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from core.json import AsDict
from core.small_groups import KeptGroups, keep_groups

from .agreement import Agreement, agreement, agreement_from_blocks
from .records import RankingRecord, group_of, shared_tasks


def _groups(records: Sequence[RankingRecord], field: str, k: int) -> KeptGroups:
    """Records per group of ``field``, the groups of ``k`` or more annotators only, and how
    many were hidden (``core.small_groups``)."""
    members: dict[str, list[RankingRecord]] = defaultdict(list)
    seen: dict[int, str | None] = {}  # an annotator's rankings usually share one dict
    for r in records:
        key = id(r.group)
        if key not in seen:
            seen[key] = group_of(r.group, field)
        value = seen[key]
        if value is not None:
            members[value].append(r)
    ordered = {value: members[value] for value in sorted(members)}
    return keep_groups(ordered, k, size=lambda rs: len({r.annotator for r in rs}))


def per_occupation(
    records: Iterable[RankingRecord], *, n_boot: int = 1000, seed: int = 0
) -> dict[str, Agreement]:
    """``{occupation: Agreement}`` over each occupation's tasks."""
    by_occ: dict[str, list[RankingRecord]] = defaultdict(list)
    for r in records:
        by_occ[r.occupation].append(r)
    return {occ: agreement(by_occ[occ], n_boot=n_boot, seed=seed) for occ in sorted(by_occ)}


def within_groups(
    records: Iterable[RankingRecord],
    field: str,
    *,
    k: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
) -> KeptGroups[Agreement]:
    """``{group: Agreement}`` from each group's own rankings, groups of ``k`` or more
    annotators only, and how many smaller ones were hidden."""
    shown = _groups(list(records), field, k)
    figures = {value: agreement(rs, n_boot=n_boot, seed=seed) for value, rs in shown.groups.items()}
    return KeptGroups(figures, shown.hidden, k)


@dataclass(frozen=True)
class BetweenGroups(AsDict):
    """Agreement of the groups' consensus orders (see the module docstring).

    ``groups``: the groups compared (``k`` or more annotators each);
    ``agreement.n_tasks``: tasks ranked by two or more of them;
    ``agreement.n_rankings``: consensus orders; ``agreement.n_annotators``: the
    annotators behind them.
    """

    field: str
    groups: tuple[str, ...]
    agreement: Agreement


def consensus_block(group_rankings: Sequence[Sequence[RankingRecord]]) -> np.ndarray:
    """One task's consensus orders: row g ranks the items by group g's mean position.

    ``group_rankings[g]``: group g's rankings of the task (all of one item set);
    ties in the means share their mid-rank.
    """
    return _consensus_blocks([group_rankings])[0]


def between_groups(
    records: Iterable[RankingRecord],
    field: str,
    *,
    k: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
) -> BetweenGroups:
    """W and alpha of the group consensus orders on tasks two or more groups ranked
    (``consensus_block`` of each, computed for all tasks at once: ``_consensus_blocks``)."""
    records = list(records)
    kept = _groups(records, field, k).groups
    tasks, annotators = [], set()
    if len(kept) >= 2:  # else no task is ranked by two groups
        group_by_record = {id(r): g for g, rs in kept.items() for r in rs}
        for rankings in shared_tasks(records).values():
            per_group: dict[str, list[RankingRecord]] = defaultdict(list)
            for r in rankings:
                if id(r) in group_by_record:
                    per_group[group_by_record[id(r)]].append(r)
            if len(per_group) < 2 or rankings[0].k < 2:
                continue
            tasks.append([per_group[g] for g in sorted(per_group)])
            annotators.update(r.annotator for rs in per_group.values() for r in rs)
    blocks = _consensus_blocks(tasks)
    result = agreement_from_blocks(blocks, len(annotators), n_boot=n_boot, seed=seed)
    return BetweenGroups(field=field, groups=tuple(kept), agreement=result)


def _consensus_blocks(tasks: Sequence[Sequence[Sequence[RankingRecord]]]) -> list[np.ndarray]:
    """``consensus_block`` of every task, the same numbers: each group's position sums
    accumulated in ranking order (``np.add.at``) over its count is ``mean(axis=0)``, and
    blocks of one shape are mid-ranked in one call."""
    rows: dict[int, list[list[int]]] = defaultdict(list)  # by K: every ranking's positions
    segment: dict[int, list[int]] = defaultdict(list)  # by K: its (task, group) row
    where = []  # per task: K, its first group's row, its number of groups
    used: dict[int, int] = defaultdict(int)  # by K: rows so far
    for groups in tasks:
        items = groups[0][0].order
        n = len(items)
        first = used[n]
        used[n] += len(groups)
        for g, rankings in enumerate(groups):
            for r in rankings:
                position = r.positions()
                rows[n].append([position[i] for i in items])
                segment[n].append(first + g)
        where.append((n, first, len(groups)))
    means = {}
    for n, positions in rows.items():
        seg = np.array(segment[n])
        sums = np.zeros((used[n], n))
        np.add.at(sums, seg, np.array(positions, dtype=float))
        means[n] = sums / np.bincount(seg)[:, None]
    blocks: list[np.ndarray] = [np.empty(0)] * len(where)
    shapes: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (n, _, m) in enumerate(where):
        shapes[(m, n)].append(i)
    for (m, n), idx in shapes.items():
        stacked = np.stack([means[n][where[i][1] : where[i][1] + m] for i in idx])
        for i, block in zip(idx, stats.rankdata(stacked, axis=-1), strict=True):
            blocks[i] = block
    return blocks


def breakdown(
    records: Iterable[RankingRecord],
    fields: Sequence[str],
    *,
    k: int = 5,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """Everything as plain dicts: overall, per occupation, and per field within/between.

    ``{"overall": ..., "per_occupation": {occ: ...}, "within_groups": {field: {group:
    ...}}, "hidden_groups": {field: n}, "between_groups": {field: ...}, "k": k}``: groups
    of ``k`` or more annotators only, ``hidden_groups`` counting the smaller ones; every
    agreement is ``Agreement.as_dict()``.
    """
    records = list(records)
    opts = {"n_boot": n_boot, "seed": seed}
    group_opts = {"k": k, **opts}
    within = {f: within_groups(records, f, **group_opts) for f in fields}
    return {
        "overall": agreement(records, **opts).as_dict(),
        "per_occupation": {o: a.as_dict() for o, a in per_occupation(records, **opts).items()},
        "within_groups": {
            f: {g: a.as_dict() for g, a in shown.groups.items()} for f, shown in within.items()
        },
        "hidden_groups": {f: shown.hidden for f, shown in within.items()},
        "between_groups": {f: between_groups(records, f, **group_opts).as_dict() for f in fields},
        "k": k,
    }
