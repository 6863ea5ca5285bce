"""Cluster bootstrap intervals and the ``Estimate`` every figure is reported as.

Rankings of one task (and the positions within one ranking) are not
independent, so intervals resample whole clusters (tasks, or annotators) with
replacement, ``n_boot`` times, from ``numpy.random.default_rng(seed)``; the 95%
interval is the 2.5th and 97.5th percentile of the statistic over the draws
(percentile bootstrap, Efron & Tibshirani 1993, ch. 13), NaN draws dropped.
The same seed gives the same interval.

``resampled_counts`` and ``count_bootstrap`` draw all resamples at once: a draw is
how many times it takes each cluster (a ``draws x clusters`` count matrix), so a
statistic that is a sum over clusters (Kendall's W mean, alpha's coincidences, the
mean tau) is one matrix product for every draw instead of a Python call per draw.
They take the same draws as ``cluster_bootstrap`` with the same seed (one
``rng.integers(0, n, (n_boot, n))``) up to ``MAX_CELLS`` draws x clusters; past that
the draws come in blocks of rows, the same distribution from another stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from core.json import AsDict

T = TypeVar("T")

MAX_CELLS = 1 << 22  # draws x clusters drawn at once (about 100 MB of working arrays)


@dataclass(frozen=True)
class Estimate(AsDict):
    """A point estimate with its 95% bootstrap interval.

    ``n``: the clusters (tasks, unless said otherwise) it rests on. ``ci_low`` and
    ``ci_high`` are ``None`` when ``n_boot`` is 0 or every draw was undefined.
    """

    value: float
    ci_low: float | None
    ci_high: float | None
    n: int
    n_boot: int


def _check(n_boot: int) -> None:
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")


def percentile_interval(draws: Sequence[float] | np.ndarray) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the defined draws, or ``None``."""
    v = np.asarray(draws, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return None
    lo, hi = np.percentile(v, [2.5, 97.5])
    return float(lo), float(hi)


def _estimate(value: float, draws, n: int, n_boot: int) -> Estimate:
    ci = percentile_interval(draws) if n_boot > 0 and n > 0 else None
    return Estimate(float(value), ci[0] if ci else None, ci[1] if ci else None, n, n_boot)


def bootstrap_mean(values: Sequence[float], *, n_boot: int = 1000, seed: int = 0) -> Estimate:
    """Mean of per-cluster values (NaN ones left out) with a resampled-clusters interval."""
    _check(n_boot)
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return Estimate(float("nan"), None, None, 0, n_boot)
    rng = np.random.default_rng(seed)
    draws = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    return _estimate(v.mean(), draws, int(v.size), n_boot)


def cluster_bootstrap(
    clusters: Sequence[T],
    statistic: Callable[[Sequence[T]], float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate:
    """``statistic(clusters)`` with an interval from resampling whole clusters."""
    _check(n_boot)
    if not clusters:
        return Estimate(float("nan"), None, None, 0, n_boot)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(clusters), size=(n_boot, len(clusters)))
    draws = [statistic([clusters[j] for j in row]) for row in rows]
    return _estimate(statistic(clusters), draws, len(clusters), n_boot)


def resampled_counts(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """Each draw's count of every cluster: ``(draws, n)`` int arrays, ``n_boot`` rows in
    all, each row a resample of ``n`` clusters with replacement (module docstring)."""
    _check(n_boot)
    rng = np.random.default_rng(seed)
    step = max(1, MAX_CELLS // max(n, 1))
    for start in range(0, n_boot, step):
        rows = min(step, n_boot - start)
        drawn = rng.integers(0, n, size=(rows, n))
        drawn += np.arange(rows)[:, None] * n
        yield np.bincount(drawn.ravel(), minlength=rows * n).reshape(rows, n)


def count_bootstrap(
    n: int,
    value: float,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Estimate:
    """``value`` (the statistic of the ``n`` clusters as they are) with an interval from
    ``statistic(counts)``: ``counts`` is a ``(draws, n)`` float array of how often each
    draw takes each cluster; it returns the ``(draws,)`` statistics."""
    (estimate,) = count_bootstrap_columns(
        n, [value], lambda counts: statistic(counts)[:, None], n_boot=n_boot, seed=seed
    )
    return estimate


def count_bootstrap_columns(
    n: int,
    values: Sequence[float],
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> list[Estimate]:
    """``count_bootstrap`` of several statistics from the same draws: ``statistic(counts)``
    returns ``(draws, len(values))``, one column per statistic."""
    _check(n_boot)
    if n == 0:
        return [Estimate(float("nan"), None, None, 0, n_boot) for _ in values]
    with np.errstate(divide="ignore", invalid="ignore"):
        parts = [statistic(c.astype(np.float64)) for c in resampled_counts(n, n_boot, seed)]
    draws = np.concatenate(parts) if parts else np.empty((0, len(values)))
    return [_estimate(v, draws[:, i], n, n_boot) for i, v in enumerate(values)]
