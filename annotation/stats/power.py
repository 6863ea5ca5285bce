"""Power of the two-sided t-tests, from scipy's noncentral t (no statsmodels).

The test statistic under an effect follows a noncentral t with the test's
degrees of freedom ``df`` and noncentrality ``nc``; the two-sided test at
level ``alpha`` rejects when ``|T| > t_crit = t.ppf(1 - alpha / 2, df)``, so::

    power = P(T > t_crit) + P(T < -t_crit),   T ~ nct(df, nc)

* **Paired t** (one-sample t on ``n`` differences with standardised mean
  ``d_z = mean(d) / sd(d)``): ``df = n - 1``, ``nc = d_z * sqrt(n)``.
* **Welch** (``n`` per group, SDs ``sd1`` and ``sd2``, difference ``delta``):
  ``nc = delta / sqrt((sd1^2 + sd2^2) / n)``, ``df`` the Welch-Satterthwaite
  degrees of freedom at that ``n``. This is the usual approximation (as
  G*Power's); it assumes the groups independent.

These are the formulas statsmodels' ``TTestPower`` and ``TTestIndPower`` use;
statsmodels is not installed here and scipy gives the same numbers. The
sample size needed is the smallest ``n`` whose power reaches the target,
found by evaluating every ``n`` from 2 to ``max_n`` at once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Power:
    """Achieved power at the study's ``n`` and the ``n`` needed for ``target`` power.

    ``effect``: ``d_z`` for the paired test, the raw difference in means for Welch.
    ``n_needed`` is ``None`` when no ``n`` up to ``max_n`` reaches ``target``
    (for instance when the effect is 0); for Welch ``n`` counts annotators per condition.
    """

    test: str
    effect: float
    n: int
    achieved: float
    target: float
    alpha: float
    n_needed: int | None

    def as_dict(self) -> dict:
        """Plain dict (for JSON)."""
        return asdict(self)


def _two_sided(nc: np.ndarray, df: np.ndarray, alpha: float) -> np.ndarray:
    crit = stats.t.ppf(1 - alpha / 2, df)
    # P(T < -crit) as P(-T > crit), -T ~ nct(df, -nc): scipy's nct.cdf returns NaN far out
    # in the lower tail (e.g. df 38, nc 9-12), its sf does not.
    return stats.nct.sf(crit, df, nc) + stats.nct.sf(crit, df, -nc)


def _check(alpha: float, target: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < target < 1:
        raise ValueError(f"target power must be in (0, 1), got {target}")


def welch_df(sd1, n1, sd2, n2):
    """Welch-Satterthwaite degrees of freedom (works on arrays)."""
    v1, v2 = np.square(sd1) / n1, np.square(sd2) / n2
    return (v1 + v2) ** 2 / (v1**2 / (n1 - 1) + v2**2 / (n2 - 1))


def paired_power(d_z, n, *, alpha: float = 0.05):
    """Power of the two-sided paired t-test with ``n`` pairs and effect ``d_z`` (arrays too)."""
    n = np.asarray(n, dtype=np.float64)
    return _two_sided(np.asarray(d_z) * np.sqrt(n), n - 1, alpha)


def welch_power(delta, sd1, sd2, n, *, alpha: float = 0.05):
    """Power of the two-sided Welch test with ``n`` per group (arrays too)."""
    n = np.asarray(n, dtype=np.float64)
    se = np.sqrt((np.square(sd1) + np.square(sd2)) / n)
    return _two_sided(np.asarray(delta) / se, welch_df(sd1, n, sd2, n), alpha)


def _needed(power_at: np.ndarray, ns: np.ndarray, target: float) -> int | None:
    reached = np.flatnonzero(power_at >= target)
    return int(ns[reached[0]]) if reached.size else None


def paired(
    d_z: float, n: int, *, alpha: float = 0.05, target: float = 0.8, max_n: int = 10_000
) -> Power:
    """Achieved power of the paired t-test and the pairs needed for ``target`` power."""
    _check(alpha, target)
    ns = np.arange(2, max_n + 1)
    need = _needed(paired_power(d_z, ns, alpha=alpha), ns, target) if np.isfinite(d_z) else None
    achieved = float(paired_power(d_z, n, alpha=alpha)) if n >= 2 else np.nan
    return Power("paired t", float(d_z), int(n), achieved, target, alpha, need)


def welch(
    delta: float,
    sd1: float,
    sd2: float,
    n: int,
    *,
    alpha: float = 0.05,
    target: float = 0.8,
    max_n: int = 10_000,
) -> Power:
    """Achieved power of Welch's test (``n`` per group) and the ``n`` per group needed."""
    _check(alpha, target)
    ns = np.arange(2, max_n + 1)
    finite = np.isfinite([delta, sd1, sd2]).all() and sd1 + sd2 > 0
    need = _needed(welch_power(delta, sd1, sd2, ns, alpha=alpha), ns, target) if finite else None
    achieved = float(welch_power(delta, sd1, sd2, n, alpha=alpha)) if n >= 2 and finite else np.nan
    return Power("Welch t", float(delta), int(n), achieved, target, alpha, need)
