"""Does the order a task is shown in leak into the order it is submitted in?

Each task is shown in a random order (per annotator), so with no position bias
a ranking read in shown order is a uniformly random permutation (rankingQ,
Atsusaka & Kim, Political Analysis). Three reads, per task
size K (rankings without a known shown order, and K < 2, are left out; so are rankings with
a tier of several items, issue 40: tied places are not a permutation, and the tests below
rest on one. A format with ties finds its careless answers by the untouched rate of each
annotator, ``gold.annotator_quality``, where calling everything equal counts as untouched):

1. **Shown x final table**: ``table[s][f]`` counts the items shown at position
   ``s`` that were submitted at position ``f``. Test: ``scipy.stats.
   chi2_contingency(table, correction=False)``, chosen over ``chisquare``
   against uniform because it gives the right degrees of freedom, (K - 1)^2,
   directly: every ranking fills each row and each column once, so the margins
   are all n (the number of rankings), the expected count is the uniform n / K
   in every cell, and only (K - 1)^2 cells are free (``chisquare`` on the K^2
   cells would count K^2 - 1). One correction: a ranking is a permutation, not
   K independent items. The covariance of a uniform random permutation matrix is
   ``(H kron H) / (K - 1)`` with ``H = I - J / K`` (the first-order summary of
   permutation data, Diaconis 1988, *Group representations in probability and
   statistics*, ch. 8), so under no bias Pearson's X^2 tends to
   ``K / (K - 1) * chi2((K - 1)^2)``, not ``chi2((K - 1)^2)``. We report
   ``chi2 = X^2 (K - 1) / K`` against ``chi2((K - 1)^2)``; uncorrected, the test
   rejects about 16% of unbiased data at the 5% level (see the tests).
2. **Untouched rate**: share of rankings submitted exactly in the shown order,
   against ``1 / K!`` with ``scipy.stats.binomtest`` (one-sided, ``greater``:
   the fault to find is keeping the shown order).
3. **Shown-final Kendall tau**: per ranking, ``tau = sum_{i<j} sign(s_i - s_j)
   sign(f_i - f_j) / (K (K - 1) / 2)`` over its items' shown and final positions
   (no ties, so tau-a = tau-b); its mean, 0 under no bias, with a bootstrap
   interval resampling annotators (all draws at once, ``bootstrap.count_bootstrap``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from core.json import AsDict

from .bootstrap import Estimate, count_bootstrap
from .records import Annotator, RankingRecord


@dataclass(frozen=True)
class PositionBias(AsDict):
    """Position-bias figures for the rankings of one task size ``k``.

    ``table[s][f]``: items shown at ``s`` submitted at ``f``. ``pearson_x2``:
    scipy's ``chi2_contingency`` statistic; ``chi2 = pearson_x2 (k - 1) / k``
    with ``df = (k - 1)^2`` and ``p_value`` (module docstring). ``untouched_p_value``:
    one-sided binomial test of ``n_untouched`` against ``untouched_expected = 1 / k!``.
    ``mean_tau``: mean shown-final Kendall tau with its interval.
    """

    k: int
    n_rankings: int
    table: list[list[int]]
    pearson_x2: float
    chi2: float
    df: int
    p_value: float
    n_untouched: int
    untouched_rate: float
    untouched_expected: float
    untouched_p_value: float
    mean_tau: Estimate


def shown_final_positions(record: RankingRecord) -> tuple[np.ndarray, np.ndarray]:
    """Shown and final position of each item, in the order the items were shown."""
    final = record.positions()
    return np.arange(record.k), np.array([final[item] for item in record.shown_order])


def final_by_shown(records: Sequence[RankingRecord]) -> np.ndarray:
    """``(rankings, K)``: row r, column s, the final position of the item ranking r showed
    at position s (rankings of one size K, each with a shown order)."""
    sizes = {r.k for r in records}
    if len(sizes) != 1:
        raise ValueError(f"position_table needs rankings of one size, got sizes {sorted(sizes)}")
    for r in records:
        if not r.shown_order:
            raise ValueError(f"ranking of task {r.task_id!r} has no shown order")
    rows = [[r.positions()[item] for item in r.shown_order] for r in records]
    return np.array(rows, dtype=np.int64).reshape(len(records), sizes.pop())


def position_table(records: Sequence[RankingRecord]) -> np.ndarray:
    """The ``K x K`` shown x final count table of rankings of one size K."""
    return _table(final_by_shown(records))


def _table(final: np.ndarray) -> np.ndarray:
    k = final.shape[1]
    cells = (np.arange(k)[None, :] * k + final).ravel()
    return np.bincount(cells, minlength=k * k).reshape(k, k).astype(np.int64)


def _taus(final: np.ndarray) -> np.ndarray:
    """``shown_final_tau`` of every row of ``final_by_shown``: shown positions rise along
    a row, so each pair i < j counts ``-sign(final_i - final_j)``."""
    k = final.shape[1]
    i, j = np.triu_indices(k, 1)
    return -np.sign(final[:, i] - final[:, j]).sum(axis=1) / (k * (k - 1) / 2)


def permutation_chi2(table: np.ndarray) -> tuple[float, float, int, float]:
    """``(pearson_x2, chi2, df, p_value)`` of a shown x final table (module docstring)."""
    table = np.asarray(table)
    k = table.shape[0]
    if table.shape != (k, k) or k < 2:
        raise ValueError(f"need a K x K table with K >= 2, got shape {table.shape}")
    x2 = float(stats.chi2_contingency(table, correction=False).statistic)
    chi2 = x2 * (k - 1) / k
    df = (k - 1) ** 2
    return x2, chi2, df, float(stats.chi2.sf(chi2, df))


def shown_final_tau(record: RankingRecord) -> float:
    """Kendall tau between the shown and the final positions of one ranking's items."""
    shown, final = shown_final_positions(record)
    k = record.k
    if k < 2:
        raise ValueError("tau needs two or more items")
    upper = np.triu_indices(k, 1)
    signs = np.sign(shown[:, None] - shown[None, :]) * np.sign(final[:, None] - final[None, :])
    return float(signs[upper].sum() / (k * (k - 1) / 2))


def _usable(records: Iterable[RankingRecord]) -> dict[int, list[RankingRecord]]:
    per_k: dict[int, list[RankingRecord]] = defaultdict(list)
    for r in records:
        if r.shown_order and r.k >= 2 and r.tiers is None:
            per_k[r.k].append(r)
    return dict(sorted(per_k.items()))


def _figures(
    rankings: Sequence[RankingRecord], final: np.ndarray, mean_tau: Estimate
) -> PositionBias:
    k = rankings[0].k
    table = _table(final)
    x2, chi2, df, p = permutation_chi2(table)
    n = len(rankings)
    untouched = int((final == np.arange(k)).all(axis=1).sum())
    expected = 1 / math.factorial(k)
    binom = stats.binomtest(untouched, n, expected, alternative="greater")
    return PositionBias(
        k=k,
        n_rankings=n,
        table=table.tolist(),
        pearson_x2=x2,
        chi2=chi2,
        df=df,
        p_value=p,
        n_untouched=untouched,
        untouched_rate=untouched / n,
        untouched_expected=expected,
        untouched_p_value=float(binom.pvalue),
        mean_tau=mean_tau,
    )


def position_bias(
    records: Iterable[RankingRecord], *, n_boot: int = 1000, seed: int = 0
) -> dict[int, PositionBias]:
    """``{K: PositionBias}`` over all annotators; tau's interval resamples annotators."""
    out = {}
    for k, rankings in _usable(records).items():
        final = final_by_shown(rankings)
        taus = _taus(final)
        index: dict[Annotator, int] = {}
        annotator = np.array([index.setdefault(r.annotator, len(index)) for r in rankings])
        # a draw's mean tau: its annotators' tau sums over their ranking counts
        sums = np.bincount(annotator, weights=taus, minlength=len(index))
        counts = np.bincount(annotator, minlength=len(index)).astype(np.float64)
        tau = count_bootstrap(
            len(sums),
            float(sums.sum() / counts.sum()),
            lambda drawn, sums=sums, counts=counts: (drawn @ sums) / (drawn @ counts),
            n_boot=n_boot,
            seed=seed,
        )
        out[k] = _figures(rankings, final, tau)
    return out
