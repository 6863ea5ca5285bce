"""Cluster bootstrap intervals and the ``Estimate`` every figure is reported as.

Rankings of one task (and the positions within one ranking) are not
independent, so intervals resample whole clusters (tasks, or annotators) with
replacement, ``n_boot`` times, from ``numpy.random.default_rng(seed)``; the 95%
interval is the 2.5th and 97.5th percentile of the statistic over the draws
(percentile bootstrap, Efron & Tibshirani 1993, ch. 13), NaN draws dropped.
The same seed gives the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from core.json import AsDict

T = TypeVar("T")


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
