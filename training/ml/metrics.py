"""Ranking metrics, group bootstrap intervals and the paired comparison.

* ``spearman``: Pearson correlation of average ranks (ties share their mean
  rank), i.e. ``scipy.stats.spearmanr``; NaN when either side is constant.
* ``kendall_tau``: Kendall's tau-b.
* ``pairwise_accuracy``: over all pairs with different labels, the share the
  prediction orders the same way; a tied prediction counts one half.
  ``(C + T_p / 2) / n_d`` with C concordant pairs, T_p prediction ties, n_d
  pairs with distinct labels; computed from tau-b's counts in O(n log n).
* Bootstrap: resample whole groups (an original prompt with its paraphrases)
  with replacement, ``n_boot`` times; the 95% interval is the 2.5th and 97.5th
  percentile of the statistic (NaN draws dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats


def _arrays(pred, target) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pred, dtype=np.float64).ravel()
    t = np.asarray(target, dtype=np.float64).ravel()
    if p.shape != t.shape:
        raise ValueError(f"pred has {p.size} items, target {t.size}")
    return p, t


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denom) if denom > 0 else float("nan")


def spearman(pred, target) -> float:
    """Spearman's rho with average ranks for ties (as ``scipy.stats.spearmanr``)."""
    p, t = _arrays(pred, target)
    if p.size < 2:
        return float("nan")
    return _pearson(stats.rankdata(p), stats.rankdata(t))


def spearman_resampled(pred, target, resamples: Sequence[np.ndarray]) -> np.ndarray:
    """``spearman(pred[i], target[i])`` for every index array ``i`` of ``resamples`` (of
    any lengths) at once: the draws padded with NaN into one matrix, ranked by scipy along
    its rows with the padding left out, and correlated row by row."""
    p, t = _arrays(pred, target)
    if not resamples:
        return np.zeros(0)
    lengths = np.array([len(i) for i in resamples])
    idx = np.zeros((lengths.size, lengths.max()), dtype=np.intp)
    held = np.arange(lengths.max()) < lengths[:, None]
    idx[held] = np.concatenate(resamples)
    ranks = [
        stats.rankdata(np.where(held, x[idx], np.nan), axis=1, nan_policy="omit") for x in (p, t)
    ]
    count = np.maximum(lengths, 1)[:, None]  # a draw with none of the items: no rho
    centred = [np.where(held, r - np.where(held, r, 0.0).sum(1, keepdims=True) / count, 0.0)
               for r in ranks]  # fmt: skip
    a, b = centred
    denom = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (a * b).sum(axis=1) / denom
    return np.where((denom > 0) & (lengths >= 2), rho, np.nan)


def kendall_tau(pred, target) -> float:
    """Kendall's tau-b."""
    p, t = _arrays(pred, target)
    if p.size < 2:
        return float("nan")
    return float(stats.kendalltau(p, t).statistic)


def _tied_pairs(*columns: np.ndarray) -> int:
    _, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def pairwise_accuracy(pred, target) -> float:
    """Share of distinct-label pairs ordered as the labels; prediction ties count 0.5."""
    p, t = _arrays(pred, target)
    n0 = p.size * (p.size - 1) // 2
    n_target_ties, n_pred_ties = _tied_pairs(t), _tied_pairs(p)
    n_distinct = n0 - n_target_ties
    if n_distinct == 0:
        return float("nan")
    pred_ties = n_pred_ties - _tied_pairs(p, t)  # prediction ties among distinct-label pairs
    if n0 - n_pred_ties == 0:
        c_minus_d = 0.0
    else:
        tau_b = stats.kendalltau(p, t).statistic
        c_minus_d = tau_b * np.sqrt(float(n0 - n_target_ties) * float(n0 - n_pred_ties))
    concordant = (c_minus_d + n_distinct - pred_ties) / 2
    return float((concordant + 0.5 * pred_ties) / n_distinct)


def per_occupation_spearman(pred, target, occupations: Sequence[str]) -> dict[str, float]:
    """Spearman's rho within each occupation's items."""
    p, t = _arrays(pred, target)
    occ = np.asarray(occupations)
    return {str(o): spearman(p[occ == o], t[occ == o]) for o in sorted(set(occ.tolist()))}


def _mean_occupation_spearman(p, t, occ) -> float:
    values = [v for v in per_occupation_spearman(p, t, occ).values() if not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")


def _mean_occupation_resampled(p, t, occ, resamples: Sequence[np.ndarray]) -> np.ndarray:
    """``_mean_occupation_spearman`` of every draw: each occupation's rho over the draws at
    once (``spearman_resampled`` on the draws' items of it), then the mean of those a draw
    has (NaN where it has none)."""
    per_occupation = []
    for name in sorted(set(occ.tolist())):
        mine = occ == name
        per_occupation.append(spearman_resampled(p, t, [i[mine[i]] for i in resamples]))
    rho = np.array(per_occupation).T  # (draws, occupations)
    means = []
    for row in rho:
        values = row[~np.isnan(row)]
        means.append(float(np.mean(values)) if values.size else float("nan"))
    return np.array(means)


def _group_resamples(groups: Sequence[str], n_boot: int, seed: int) -> list[np.ndarray]:
    """``n_boot`` index arrays, each a resample of whole groups with replacement."""
    g = np.asarray(groups)
    names, inverse = np.unique(g, return_inverse=True)
    members = [np.flatnonzero(inverse == i) for i in range(len(names))]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(n_boot, len(names)))
    return [np.concatenate([members[j] for j in row]) for row in draws]


def _ci(values: Sequence[float]) -> list[float] | None:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return None
    lo, hi = np.percentile(v, [2.5, 97.5])
    return [float(lo), float(hi)]


def evaluate(
    pred,
    target,
    groups: Sequence[str],
    occupations: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """All metrics, each with a 95% group-bootstrap interval (``None`` if ``n_boot=0``)."""
    p, t = _arrays(pred, target)
    occ = np.asarray(occupations)
    if len(groups) != p.size or occ.size != p.size:
        raise ValueError("pred, target, groups and occupations must have one entry per item")
    statistics: dict[str, Callable] = {
        "spearman": lambda i: spearman(p[i], t[i]),
        "mean_occupation_spearman": lambda i: _mean_occupation_spearman(p[i], t[i], occ[i]),
        "kendall_tau": lambda i: kendall_tau(p[i], t[i]),
        "pairwise_accuracy": lambda i: pairwise_accuracy(p[i], t[i]),
    }
    # the rank correlations of every draw at once (each equal to its one-draw value)
    at_once: dict[str, Callable] = {
        "spearman": lambda draws: spearman_resampled(p, t, draws),
        "mean_occupation_spearman": lambda draws: _mean_occupation_resampled(p, t, occ, draws),
    }
    everything = np.arange(p.size)
    resamples = _group_resamples(groups, n_boot, seed) if n_boot > 0 else []
    out: dict = {}
    for name, fn in statistics.items():
        out[name] = fn(everything)
        if not resamples:
            out[f"{name}_ci"] = None
        elif name in at_once:
            out[f"{name}_ci"] = _ci(at_once[name](resamples))
        else:
            out[f"{name}_ci"] = _ci([fn(i) for i in resamples])
    out["per_occupation"] = per_occupation_spearman(p, t, occ)
    out["n_items"] = int(p.size)
    out["n_groups"] = len(set(groups))
    out["n_boot"] = n_boot
    return out


def bootstrap_p_value(diffs) -> float:
    """Two-sided: ``2 * min(P(diff* <= 0), P(diff* >= 0))``, ``(k + 1) / (n + 1)``, capped at 1."""
    d = np.asarray(diffs, dtype=np.float64)
    d = d[~np.isnan(d)]
    if d.size == 0:
        return float("nan")
    tail = min((d <= 0).sum(), (d >= 0).sum())
    return float(min(1.0, 2 * (tail + 1) / (d.size + 1)))


def paired_comparison(
    pred_a, pred_b, target, groups: Sequence[str], *, n_boot: int = 1000, seed: int = 0
) -> dict:
    """Is A's Spearman higher than B's on the same items? Paired group bootstrap.

    ``diff = rho_a - rho_b``; each draw resamples groups once and scores both on
    it. ``p_value`` is two-sided: ``2 * min(P(diff* <= 0), P(diff* >= 0))`` with
    the usual ``(k + 1) / (n + 1)`` correction, capped at 1.
    """
    a, t = _arrays(pred_a, target)
    b, _ = _arrays(pred_b, target)
    if len(groups) != t.size:
        raise ValueError("groups must have one entry per item")
    rho_a, rho_b = spearman(a, t), spearman(b, t)
    diffs = np.array(
        [
            spearman(a[i], t[i]) - spearman(b[i], t[i])
            for i in _group_resamples(groups, n_boot, seed)
        ]
    )
    diffs = diffs[~np.isnan(diffs)]
    p_value = bootstrap_p_value(diffs)
    return {
        "rho_a": rho_a,
        "rho_b": rho_b,
        "diff": rho_a - rho_b,
        "ci": _ci(diffs),
        "p_value": p_value,
        "n_items": int(t.size),
        "n_boot": n_boot,
    }
