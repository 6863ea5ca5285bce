"""Learning curve: eval rho against the share of a snapshot's rankings used (issue 18).

The caller trains heads on shares ``s`` (0, 1] of a snapshot's ``N`` rankings
under several seeds and measures each one's eval Spearman rho. The points are
fitted with a saturating inverse power law in the share,
``rho(s) = a - b s^(-c)`` (``scipy.optimize.curve_fit``, bounded:
``a <= 1``, ``b >= 0``, ``0 < c <= 3``), so that ``a`` is the ceiling more
rankings approach, ``rho(1)`` the fitted rho with all N rankings,
``rho(2)`` and ``rho(4)`` the projections at 2x and 4x the rankings. The gain
of 100 more rankings is the slope at N, ``100 * b c / N`` (rho per ranking
``d rho / dn = b c s^(-c-1) / N`` at ``s = 1``); the gain of doubling is
``rho(2) - rho(1) = b (1 - 2^-c)``. The gain of the next ``m`` rankings is
read off the curve itself, ``rho(1 + m / N) - rho(1)`` (``gain_next_100``,
``gain_next_500``: what a study lead asks). More rankings **stop paying** when the gain
of doubling is below ``threshold`` (0.01 by default), judged on the fit to all
points; the 95% intervals beside it come from a bootstrap over seeds (each
resample draws whole seeds with replacement, every share of a seed together,
and is refitted), reported when there are two seeds or more.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

from training.ml.errors import MLError


class LearningCurveError(MLError, ValueError):
    """Bad points, or points the curve does not fit (also a ``ValueError``)."""


BOUNDS = ([-np.inf, 0.0, 1e-3], [1.0, np.inf, 3.0])


def inverse_power_law(share, a: float, b: float, c: float):
    """``a - b * share ** -c``."""
    return a - b * np.power(share, -c)


@dataclass(frozen=True)
class CurvePoints:
    """Measured points: ``share`` (n,), ``rho`` (n,) and the ``seed`` (n,) of each."""

    share: np.ndarray
    rho: np.ndarray
    seed: np.ndarray


@dataclass(frozen=True)
class LearningCurve:
    """The fit and what it projects; ``intervals`` maps a field's name to its 95% interval."""

    a: float
    b: float
    c: float
    n_rankings: int
    rho_now: float
    rho_2x: float
    rho_4x: float
    gain_per_100: float
    gain_doubling: float
    gain_next_100: float
    gain_next_500: float
    threshold: float
    stops_paying: bool
    intervals: dict[str, tuple[float, float]] | None


def measure(
    train_and_evaluate: Callable[[float, int], float],
    shares: Sequence[float],
    seeds: Sequence[int],
) -> CurvePoints:
    """``train_and_evaluate(share, seed) -> eval rho`` at every share and seed."""
    if not shares or not seeds:
        raise LearningCurveError("measure at one share and one seed or more")
    rows = [(s, seed, float(train_and_evaluate(s, seed))) for seed in seeds for s in shares]
    share, seed, rho = (np.array(col) for col in zip(*rows, strict=True))
    return CurvePoints(share.astype(float), rho, seed)


def _fit(share: np.ndarray, rho: np.ndarray) -> np.ndarray:
    a0 = min(1.0, float(rho.max()) + 0.05)
    b0 = max(a0 - float(rho.min()), 1e-3) * float(share.min()) ** 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        params, _ = curve_fit(
            inverse_power_law, share, rho, p0=[a0, b0, 0.5], bounds=BOUNDS, maxfev=20_000
        )
    return params


def _projections(params: np.ndarray, n_rankings: int) -> dict[str, float]:
    a, b, c = params
    now = inverse_power_law(1.0, a, b, c)
    return {
        "rho_now": float(now),
        "rho_2x": float(inverse_power_law(2.0, a, b, c)),
        "rho_4x": float(inverse_power_law(4.0, a, b, c)),
        "gain_per_100": float(100.0 * b * c / n_rankings),
        "gain_doubling": float(b * (1.0 - 2.0**-c)),
        "gain_next_100": gain_next(params, n_rankings, 100),
        "gain_next_500": gain_next(params, n_rankings, 500),
    }


def gain_next(params, n_rankings: int, more: int) -> float:
    """``rho(1 + more / N) - rho(1)`` on the curve ``params = (a, b, c)``."""
    a, b, c = params
    later = inverse_power_law(1.0 + more / n_rankings, a, b, c)
    return float(later - inverse_power_law(1.0, a, b, c))


def task_subsample(n_tasks: int, share: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``max(1, round(share * n_tasks))`` of ``n_tasks`` tasks, drawn without
    replacement: a learning curve resamples whole tasks, so a task's rankings (all its
    annotators) stay together, as the bootstrap's unit does."""
    if n_tasks < 1 or not 0 < share <= 1:
        raise LearningCurveError(f"draw a share in (0, 1] of 1 task or more, not {share!r}")
    take = max(1, round(share * n_tasks))
    return np.sort(rng.choice(n_tasks, size=take, replace=False))


def _check(points: CurvePoints, n_rankings: int, threshold: float) -> None:
    share, rho = points.share, points.rho
    if share.ndim != 1 or share.shape != rho.shape or share.shape != points.seed.shape:
        raise LearningCurveError("share, rho and seed must be vectors of one length")
    if not (np.isfinite(share).all() and ((share > 0) & (share <= 1)).all()):
        raise LearningCurveError("every share must be in (0, 1]")
    if not (np.isfinite(rho).all() and (np.abs(rho) <= 1).all()):
        raise LearningCurveError("every rho must be a finite number in [-1, 1]")
    if np.unique(share).size < 3:
        raise LearningCurveError(
            "the curve has 3 parameters: measure at 3 different shares or more"
        )
    if not isinstance(n_rankings, int | np.integer) or n_rankings < 1:
        raise LearningCurveError(f"n_rankings must be a positive integer, not {n_rankings!r}")
    if not (isinstance(threshold, int | float) and math.isfinite(threshold) and threshold >= 0):
        raise LearningCurveError(f"threshold must be a non-negative number, not {threshold!r}")


def _resample(points: CurvePoints, rows: list[np.ndarray], n_rankings: int):
    """The projections of the fit to the points of ``rows`` (one array of indices per
    drawn seed); ``None`` when they hold fewer than 3 shares or do not fit."""
    idx = np.concatenate(rows)
    if np.unique(points.share[idx]).size < 3:
        return None
    try:
        return _projections(_fit(points.share[idx], points.rho[idx]), n_rankings)
    except RuntimeError:
        return None


def fit_learning_curve(
    points: CurvePoints,
    n_rankings: int,
    *,
    threshold: float = 0.01,
    n_boot: int = 1000,
    seed: int = 0,
) -> LearningCurve:
    """Fit ``rho(s) = a - b s^-c`` to ``points`` (N = ``n_rankings`` at share 1) and project.

    ``stops_paying`` when ``gain_doubling < threshold``. ``intervals``: 95%
    percentile intervals of the projections over ``n_boot`` resamples of whole
    seeds (``None`` with a single seed); resamples with fewer than 3 shares, or
    whose fit fails, are skipped.
    """
    _check(points, n_rankings, threshold)
    try:
        params = _fit(points.share, points.rho)
    except RuntimeError as exc:
        raise LearningCurveError(f"the learning curve did not fit these points: {exc}") from exc
    out = _projections(params, n_rankings)
    intervals = None
    seeds = np.unique(points.seed)
    if seeds.size >= 2 and n_boot > 0:
        rng = np.random.default_rng(seed)
        rows = [np.flatnonzero(points.seed == s) for s in seeds]
        draws: dict[str, list[float]] = {k: [] for k in out}
        fitted: dict[tuple[int, ...], dict[str, float] | None] = {}
        for _ in range(n_boot):
            # A resample's fit depends only on which seeds it drew (the points are the
            # same in any order), so each multiset of seeds is fitted once: with k seeds
            # there are C(2k-1, k) of them (3 for two seeds), not n_boot.
            drawn = tuple(sorted(rng.integers(0, seeds.size, seeds.size).tolist()))
            if drawn not in fitted:
                fitted[drawn] = _resample(points, [rows[i] for i in drawn], n_rankings)
            if (boot := fitted[drawn]) is not None:
                for k, v in boot.items():
                    draws[k].append(v)
        if draws["rho_now"]:
            intervals = {
                k: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5)))
                for k, v in draws.items()
            }
    return LearningCurve(
        a=float(params[0]),
        b=float(params[1]),
        c=float(params[2]),
        n_rankings=int(n_rankings),
        threshold=float(threshold),
        stops_paying=bool(out["gain_doubling"] < threshold),
        intervals=intervals,
        **out,
    )
