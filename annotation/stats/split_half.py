"""Split-half reliability of item scores, for any question format (issue 40).

How reproducible the labels are: the rankings of every task ranked two or more times are
split at random into two halves (each task's rankings shuffled, the first ``m // 2`` one
half, the rest the other); each (task, item) unit gets a score from each half, the mean of
its label ``place / (K - 1)`` there (``tiers.places``: ties and every format alike); the
two halves' scores are correlated (Pearson's r over the units) and the correlation of a
half is stepped up to the whole by Spearman-Brown, ``r_sb = 2 r / (1 + r)`` (Spearman
1910, Brown 1910). The estimate is the mean of ``r_sb`` over ``splits`` random splits (100,
as Kiritchenko & Mohammad 2017 report it for best-worst scaling); its 95% interval is the
task-cluster percentile bootstrap (``bootstrap.count_bootstrap``), each draw resampling
tasks and splitting them once, so it holds both the sampling and the split's variation.

Units are (task, item) pairs, as for Krippendorff's alpha (``agreement``): an item's place
means something within its task. Tasks ranked once say nothing of reproducibility and are
left out; so is a unit with no score in one half (never, as each half holds a ranking of
every shared task).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from .bootstrap import Estimate, count_bootstrap
from .records import RankingRecord, rank_matrix, shared_tasks

DRAWS_AT_ONCE = 64  # splits (or draws) whose halves are held at once (memory: x units)


def _blocks(records: Iterable[RankingRecord]) -> list[np.ndarray]:
    """Each shared task's labels, ``m x K`` (rankings x items, in one item order)."""
    out = []
    for rankings in shared_tasks(records).values():
        k = rankings[0].k
        if k >= 2:
            _, ranks = rank_matrix(rankings)
            out.append((np.asarray(ranks, dtype=np.float64) - 1) / (k - 1))
    return out


def _halves(
    blocks: list[np.ndarray], rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each draw's two half-scores of every unit, ``(draws, units)`` each, and each unit's
    task index: blocks of one shape split together (one random key per ranking)."""
    by_shape: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, block in enumerate(blocks):
        by_shape[block.shape].append(i)
    a, b, task = [], [], []
    for (m, k), index in by_shape.items():
        stack = np.stack([blocks[i] for i in index])  # (t, m, k)
        order = rng.random((draws, len(index), m)).argsort(axis=-1).argsort(axis=-1)
        first = (order < m // 2).astype(np.float64)  # (draws, t, m)
        a.append((np.einsum("dtm,tmk->dtk", first, stack) / (m // 2)).reshape(draws, -1))
        rest = 1.0 - first
        b.append((np.einsum("dtm,tmk->dtk", rest, stack) / (m - m // 2)).reshape(draws, -1))
        task.append(np.repeat(np.asarray(index), k))
    return np.concatenate(a, axis=1), np.concatenate(b, axis=1), np.concatenate(task)


def _stepped_up(a: np.ndarray, b: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Spearman-Brown of each row's (weighted) Pearson r between ``a`` and ``b``."""
    w = np.ones_like(a) if w is None else w
    total = w.sum(axis=1, keepdims=True)
    da = a - (w * a).sum(axis=1, keepdims=True) / total
    db = b - (w * b).sum(axis=1, keepdims=True) / total
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (w * da * db).sum(axis=1) / np.sqrt((w * da**2).sum(axis=1) * (w * db**2).sum(axis=1))
        return np.where(r > -1, 2 * r / (1 + r), np.nan)


def split_half(
    records: Iterable[RankingRecord], *, splits: int = 100, n_boot: int = 1000, seed: int = 0
) -> Estimate:
    """Split-half reliability (module docstring); ``n``: the shared tasks it rests on. NaN
    with fewer than two shared tasks' units or no variation in a half."""
    blocks = _blocks(records)
    if not blocks or sum(b.shape[1] for b in blocks) < 3:
        return Estimate(float("nan"), None, None, len(blocks), n_boot)
    rng, values = np.random.default_rng(seed), []
    for start in range(0, splits, DRAWS_AT_ONCE):  # the splits' halves a batch at a time
        a, b, _ = _halves(blocks, rng, min(DRAWS_AT_ONCE, splits - start))
        values.append(_stepped_up(a, b))
    value = float(np.nanmean(np.concatenate(values))) if splits else float("nan")
    split_rng = np.random.default_rng(seed + 1)

    def statistic(counts: np.ndarray) -> np.ndarray:
        out = []
        for start in range(0, len(counts), DRAWS_AT_ONCE):
            rows = counts[start : start + DRAWS_AT_ONCE]
            a, b, task = _halves(blocks, split_rng, len(rows))
            out.append(_stepped_up(a, b, rows[:, task]))
        return np.concatenate(out)

    return count_bootstrap(len(blocks), value, statistic, n_boot=n_boot, seed=seed)
