"""A Bradley-Terry fit over the pairs that answers state: a model-based item score beside
the counting score every format's label already is (issue 40).

**The likelihood.** Each answer is broken into the pairs its tiers state
(``annotation.stats.tiers.pairs``: every item of an earlier tier against every item of a
later one; no pair within a tier), and each pair, the less stereotypical item ``w`` over
the more stereotypical ``l``, contributes ``log sigmoid(theta_w - theta_l)``. So a tier
of several items (a tie, best-worst's middle, top-k's rest, a pair answered "equal")
adds no term of its own: its items are compared only with the items outside it. This is
"full rank-breaking" of a Plackett-Luce answer into Bradley-Terry pairs (Azari Soufiani,
Chen, Parkes & Xia, "Computing Parametric Ranking Models via Rank-Breaking", ICML 2014:
consistent for the Plackett-Luce parameters of strict rankings). The pairs of one answer
are not independent, so it is a composite likelihood: the estimate is sound, its
curvature is not a standard error, and none is reported.

**The prior.** ``alpha * sum(theta ** 2)`` (a Gaussian prior, choix's ``opt_pairwise``
convention) keeps an item that always won or always lost finite and sets the origin (the
estimate has mean 0). Maximised by L-BFGS with the analytic gradient; pairs met several
times are counted once with their count, so the cost is in distinct pairs.

**On the labels' scale** (``fitted_labels``): an item's fitted label is, over the answers
it was in, the mean over the other items shown with it of ``sigmoid(theta_i - theta_j)``,
the fitted chance that it is judged the less stereotypical. A place label is the same
mean of observed outcomes (a tie counting one half), so the two read on one scale, and
``fitted_labels`` can stand in for ``place / (K - 1)`` wherever a label is read.

Direction, as every label: higher = judged less stereotypical (more diverse).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np
from scipy import optimize, special, stats

from annotation.stats.tiers import pairs, places

Tiers = Sequence[Sequence[Hashable]]

DEFAULT_ALPHA = 0.01


def _indexed_pairs(answers: Sequence[Tiers]) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Items in order of first appearance, and the distinct (winner, loser) index pairs
    with their counts (the winner is the less stereotypical item)."""
    index: dict[Hashable, int] = {}
    for tiers in answers:
        for tier in tiers:
            for item in tier:
                index.setdefault(item, len(index))
    n = len(index)
    codes = [index[less] * n + index[more] for tiers in answers for more, less in pairs(tiers)]
    if not codes:
        empty = np.zeros(0, dtype=np.int64)
        return list(index), empty, empty, empty
    distinct, counts = np.unique(np.asarray(codes, dtype=np.int64), return_counts=True)
    return list(index), distinct // n, distinct % n, counts.astype(float)


def bradley_terry(answers: Iterable[Tiers], alpha: float = DEFAULT_ALPHA) -> dict[Hashable, float]:
    """``{item: theta}``, the penalised maximum-likelihood fit (module docstring).

    ``answers``: each one answer's tiers, most stereotypical first. ``alpha`` > 0."""
    if alpha <= 0:
        raise ValueError("alpha must be above 0 (the prior keeps the fit finite)")
    answers = list(answers)
    items, win, lose, count = _indexed_pairs(answers)
    n = len(items)
    if n == 0:
        return {}

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = theta[win] - theta[lose]
        value = float(count @ np.logaddexp(0.0, -margin) + alpha * theta @ theta)
        pull = count * special.expit(-margin)  # d(-log sigmoid(m)) / dm = -sigmoid(-m)
        grad = 2 * alpha * theta
        grad -= np.bincount(win, weights=pull, minlength=n)
        grad += np.bincount(lose, weights=pull, minlength=n)
        return value, grad

    result = optimize.minimize(
        objective, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-8}
    )
    return dict(zip(items, (float(t) for t in result.x), strict=True))


def fitted_labels(answers: Iterable[Tiers], theta: dict[Hashable, float]) -> dict[Hashable, float]:
    """``{item: its fitted label}`` on the place labels' scale (module docstring)."""
    sums: dict[Hashable, float] = {}
    seen: dict[Hashable, int] = {}
    for tiers in answers:
        shown = [item for tier in tiers for item in tier]
        if len(shown) < 2:
            continue
        values = np.array([theta[item] for item in shown])
        chance = special.expit(values[:, None] - values[None, :])
        mean = (chance.sum(axis=1) - 0.5) / (len(shown) - 1)  # the diagonal's sigmoid(0)
        for item, value in zip(shown, mean, strict=True):
            sums[item] = sums.get(item, 0.0) + float(value)
            seen[item] = seen.get(item, 0) + 1
    return {item: sums[item] / seen[item] for item in sums}


def counting_labels(answers: Iterable[Tiers]) -> dict[Hashable, float]:
    """``{item: the mean of place / (K - 1)}`` over its answers: the label every format
    feeds (``annotation.rankings.labels``), for best-worst the counting score (most minus
    least over appearances) rescaled."""
    sums: dict[Hashable, float] = {}
    seen: dict[Hashable, int] = {}
    for tiers in answers:
        at = places(tiers)
        if len(at) < 2:
            continue
        for item, place in at.items():
            sums[item] = sums.get(item, 0.0) + place / (len(at) - 1)
            seen[item] = seen.get(item, 0) + 1
    return {item: sums[item] / seen[item] for item in sums}


def against_counting(answers: Iterable[Tiers]) -> dict:
    """How far the fit moves the items from the counting score: Spearman's rho between
    the fitted and the counting labels over the items answered twice or more (the quality
    report's ``item_scores``). Near 1: the snapshot's counting labels lose nothing the fit
    would find; lower: some items' scores lean on whom they met."""
    answers = list(answers)
    counting = counting_labels(answers)
    fitted = fitted_labels(answers, bradley_terry(answers))
    seen: dict[Hashable, int] = {}
    for tiers in answers:
        for tier in tiers:
            for item in tier:
                seen[item] = seen.get(item, 0) + 1
    items = [i for i in counting if seen[i] >= 2]
    rho = float("nan")
    if len(items) >= 3:
        rho = float(stats.spearmanr([counting[i] for i in items], [fitted[i] for i in items])[0])
    return {"items": len(items), "spearman_fit_vs_counting": rho}
