"""How much annotators agree on rankings: Kendall's W, Krippendorff's alpha, reliability.

Rankings come in as ``records.RankingRecord``; only tasks ranked by two or more
annotators (and holding two or more items) say anything about agreement. Inside,
a task is a *block*: an ``m x n`` array of ranks 1..n (ties as mid-ranks), one
row per ranking, columns in one fixed item order. The breakdowns
(``breakdown.py``) build blocks of their own (group consensus orders) and reuse
``agreement_from_blocks``.

Kendall's coefficient of concordance (Kendall & Babington Smith 1939; with the
ties correction as in Siegel & Castellan 1988, sec. 9.4, and R ``irr::kendall``),
``m`` rankings of ``n`` items, ``R_i`` the rank sum of item ``i``::

    S = sum_i (R_i - m (n + 1) / 2)^2
    W = 12 S / (m^2 (n^3 - n) - m sum_j T_j),   T_j = sum over ranking j's tie groups of (t^3 - t)
    chi2 = m (n - 1) W,   df = n - 1   (equal to Friedman's statistic, ties-corrected)

W is 1 when all rankings agree and 0 when the rank sums are all equal.

Krippendorff's alpha ``= 1 - D_o / D_e`` (Krippendorff 2011, "Computing
Krippendorff's alpha-reliability"), computed by the PyPI ``krippendorff``
package: units are the (task, item) pairs, raters the annotators, the value of
an item in one ranking is ``position / (K - 1)`` (the label of ``labels.py``),
at the ordinal and the interval level. Units are per task because a position
means something only within its task. When every task has the same K and the
rankings are strict, ordinal and interval alpha coincide: each value occurs
once per ranking, so all value frequencies ``n_g`` are equal and the ordinal
distance ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2`` is a constant times the
interval distance ``(c - k)^2``; they differ with mixed K or ties.

Intervals: ``bootstrap.py``, resampling whole tasks, every draw at once: blocks
of one shape are stacked (``W`` of all of them in one array operation), and
alpha's coincidence matrix is a sum over tasks, so a draw's matrix is its task
counts times the per-task matrices (one product for all draws); alpha of each
draw is then Krippendorff's formula on its matrix, as the package computes it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
from scipy import stats

from core.json import AsDict

from .bootstrap import Estimate, bootstrap_mean, count_bootstrap_columns
from .records import Annotator, RankingRecord, TaskId, rank_matrix, shared_tasks

Level = Literal["ordinal", "interval"]


@dataclass(frozen=True)
class KendallW:
    """Kendall's W for one set of rankings, with its chi-square test."""

    w: float
    chi2: float
    df: int
    p_value: float
    m: int
    n: int


def kendall_w(ranks: Sequence[Sequence[float]] | np.ndarray) -> KendallW:
    """Kendall's W (ties corrected) of ``m`` rankings (rows) of ``n`` items (columns).

    Each row holds one ranking's ranks or scores, lower = earlier; a row is
    re-ranked with mid-ranks, so equal values are ties. W is NaN when every
    ranking ties every item (the denominator is 0).
    """
    r = np.asarray(ranks, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"ranks must be a 2-D array (rankings x items), got shape {r.shape}")
    m, n = r.shape
    if m < 2 or n < 2:
        raise ValueError(f"Kendall's W needs 2 or more rankings of 2 or more items, got {m}x{n}")
    if np.isnan(r).any():
        raise ValueError("ranks hold NaN: every ranking must rank every item")
    mid = stats.rankdata(r, axis=1)
    ties = 0.0
    for row in r:
        _, t = np.unique(row, return_counts=True)
        ties += float((t**3 - t).sum())
    s = float(((mid.sum(axis=0) - m * (n + 1) / 2) ** 2).sum())
    denom = m**2 * (n**3 - n) - m * ties
    w = 12 * s / denom if denom > 0 else float("nan")
    chi2 = m * (n - 1) * w
    p = float(stats.chi2.sf(chi2, n - 1)) if not np.isnan(w) else float("nan")
    return KendallW(w=w, chi2=chi2, df=n - 1, p_value=p, m=m, n=n)


def _by_shape(blocks: Sequence[np.ndarray]) -> dict[tuple[int, int], list[int]]:
    """Block indices grouped by shape, so blocks of one shape are computed stacked."""
    shapes: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, b in enumerate(blocks):
        shapes[b.shape].append(i)
    return shapes


def kendall_ws(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """``kendall_w(b).w`` of every block (each ``m x n``, m, n >= 2), stacked by shape."""
    out = np.empty(len(blocks))
    for (m, n), idx in _by_shape(blocks).items():
        r = np.stack([blocks[i] for i in idx])
        mid = stats.rankdata(r, axis=-1)
        equal = (r[..., :, None] == r[..., None, :]).sum(axis=-1)
        ties = (equal.astype(np.float64) ** 2 - 1).sum(axis=(1, 2))  # sum of t^3 - t
        s = ((mid.sum(axis=1) - m * (n + 1) / 2) ** 2).sum(axis=1)
        denom = m**2 * (n**3 - n) - m * ties
        with np.errstate(divide="ignore", invalid="ignore"):
            out[idx] = np.where(denom > 0, 12 * s / denom, np.nan)
    return out


def _blocks(records: Iterable[RankingRecord]) -> dict[TaskId, list[RankingRecord]]:
    return {t: rs for t, rs in shared_tasks(records).items() if rs[0].k >= 2}


def _values(block: np.ndarray) -> np.ndarray:
    """Ranks 1..n -> ``(rank - 1) / (n - 1)`` in [0, 1] (position / (K - 1))."""
    return (block - 1) / (block.shape[1] - 1)


def alpha_from_blocks(
    blocks: Sequence[np.ndarray], level: Level, *, n_boot: int = 1000, seed: int = 0
) -> Estimate:
    """Krippendorff's alpha over the blocks' (task, item) units, task-bootstrapped.

    Each block becomes a units x values count table (``value_counts`` of the
    ``krippendorff`` package: how many rankings put the item at each value); a
    bootstrap draw stacks the tables of the drawn tasks.
    """
    return alphas_from_blocks(blocks, (level,), n_boot=n_boot, seed=seed)[0]


def alphas_from_blocks(
    blocks: Sequence[np.ndarray], levels: Sequence[Level], *, n_boot: int = 1000, seed: int = 0
) -> list[Estimate]:
    """``alpha_from_blocks`` at each of ``levels``, from one set of tables and draws (the
    levels differ only in the distance: a draw's coincidences serve them all)."""
    for level in levels:
        if level not in ("ordinal", "interval"):
            raise ValueError(f"level must be 'ordinal' or 'interval', got {level!r}")
    if not blocks:
        return [Estimate(float("nan"), None, None, 0, n_boot) for _ in levels]
    values = [_values(np.asarray(b, dtype=np.float64)) for b in blocks]
    domain = np.unique(np.concatenate([v.ravel() for v in values]))
    if domain.size < 2:
        return [Estimate(float("nan"), None, None, len(blocks), n_boot) for _ in levels]
    units, sizes = value_counts(values, domain)
    found = [
        float(krippendorff.alpha(value_counts=units, value_domain=domain, level_of_measurement=lv))
        for lv in levels
    ]
    per_task = _task_coincidences(units, sizes).reshape(len(blocks), -1)
    v = domain.size

    def statistic(counts: np.ndarray) -> np.ndarray:
        o = (counts @ per_task).reshape(-1, v, v)
        return np.stack([alpha_of_coincidences(o, domain, lv) for lv in levels], axis=1)

    return count_bootstrap_columns(len(blocks), found, statistic, n_boot=n_boot, seed=seed)


def value_counts(values: Sequence[np.ndarray], domain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every block's units x values count table (a unit: one column, an item of the task),
    stacked in block order, and each block's number of units; blocks of one shape are
    counted at once."""
    sizes = np.array([v.shape[1] for v in values])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    units = np.zeros((int(sizes.sum()), domain.size))
    for (_, n), idx in _by_shape(values).items():
        stacked = np.stack([values[i] for i in idx])  # (blocks, m, n)
        code = np.searchsorted(domain, stacked)
        rows = starts[idx][:, None, None] + np.arange(n)[None, None, :]  # unit of each cell
        flat = (np.broadcast_to(rows, code.shape) * domain.size + code).ravel()
        counts = np.bincount(flat, minlength=units.size)
        units += counts.reshape(units.shape)
    return units, sizes


def task_coincidences(tables: Sequence[np.ndarray]) -> np.ndarray:
    """``(tasks, V, V)``: each task's coincidence matrix, ``sum over its units u of
    (c_u c_u^T - diag(c_u)) / (m_u - 1)`` (``c_u``: the unit's value counts, ``m_u``
    their sum; the package's ``_coincidences``, units of one rating left out)."""
    return _task_coincidences(np.vstack(tables), np.array([t.shape[0] for t in tables]))


def _task_coincidences(units: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    m = units.sum(axis=1)
    keep = m >= 2
    task_of = np.repeat(np.arange(len(sizes)), sizes)[keep]
    c, m = units[keep], m[keep]
    per_unit = c[:, :, None] * c[:, None, :]
    idx = np.arange(c.shape[1])
    per_unit[:, idx, idx] -= c
    per_unit /= (m - 1)[:, None, None]
    out = np.zeros((len(sizes), c.shape[1], c.shape[1]))
    np.add.at(out, task_of, per_unit)
    return out


def alpha_of_coincidences(o: np.ndarray, domain: np.ndarray, level: Level) -> np.ndarray:
    """Krippendorff's alpha ``1 - sum(o d) / sum(e d)`` of each ``(V, V)`` coincidence
    matrix in ``o`` (``(draws, V, V)``): ``n_v`` its margins, ``e`` the expected
    coincidences ``(n_v n_v^T - diag(n_v)) / (n - 1)``, ``d`` the level's distance
    (ordinal: ``(sum_{g=c}^{k} n_g - (n_c + n_k) / 2)^2``; interval: ``(v_c - v_k)^2``)."""
    n_v = o.sum(axis=1)
    n = n_v.sum(axis=1)
    idx = np.arange(domain.size)
    e = n_v[:, :, None] * n_v[:, None, :]
    e[:, idx, idx] -= n_v
    e /= (n - 1)[:, None, None]
    if level == "interval":
        d = ((domain[:, None] - domain[None, :]) ** 2)[None]
    else:
        lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
        cum = np.cumsum(n_v, axis=1)
        between = cum[:, hi] - cum[:, lo] + n_v[:, lo]
        d = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    return 1 - (o * d).sum(axis=(1, 2)) / (e * d).sum(axis=(1, 2))


@dataclass(frozen=True)
class Agreement(AsDict):
    """Agreement over a set of tasks: mean W and alpha (ordinal, interval), with intervals.

    ``n_tasks``: tasks with two or more rankings; ``n_rankings`` and
    ``n_annotators``: those of these tasks.
    """

    n_tasks: int
    n_rankings: int
    n_annotators: int
    kendall_w: Estimate
    alpha_ordinal: Estimate
    alpha_interval: Estimate


def agreement_from_blocks(
    blocks: Sequence[np.ndarray], n_annotators: int, *, n_boot: int = 1000, seed: int = 0
) -> Agreement:
    """Mean W over blocks, alpha ordinal and interval, each with a task-bootstrap interval."""
    blocks = [np.asarray(b, dtype=np.float64) for b in blocks]
    ordinal, interval = alphas_from_blocks(
        blocks, ("ordinal", "interval"), n_boot=n_boot, seed=seed
    )
    return Agreement(
        n_tasks=len(blocks),
        n_rankings=sum(b.shape[0] for b in blocks),
        n_annotators=n_annotators,
        kendall_w=bootstrap_mean(kendall_ws(blocks), n_boot=n_boot, seed=seed),
        alpha_ordinal=ordinal,
        alpha_interval=interval,
    )


def agreement(records: Iterable[RankingRecord], *, n_boot: int = 1000, seed: int = 0) -> Agreement:
    """Agreement of the tasks with two or more rankings among ``records``.

    Overall W is the mean of the per-task W (tasks weigh the same, whatever their
    number of rankings); its interval and alpha's resample whole tasks.
    """
    tasks = _blocks(records)
    blocks = [np.asarray(rank_matrix(rs)[1]) for rs in tasks.values()]
    annotators = {r.annotator for rs in tasks.values() for r in rs}
    return agreement_from_blocks(blocks, len(annotators), n_boot=n_boot, seed=seed)


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair along the last axis (``scipy.stats.spearmanr``:
    Pearson's r of the mid-ranks); NaN where ``y``'s row is constant."""
    rx, ry = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx**2).sum(axis=-1) * (ry**2).sum(axis=-1))
    constant = np.ptp(y, axis=-1) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(constant, np.nan, (rx * ry).sum(axis=-1) / den)


@dataclass(frozen=True)
class Reliability:
    """An annotator's mean Spearman rho with the leave-one-out consensus.

    ``n_tasks``: shared tasks where rho was defined (the others' consensus was
    not constant); ``rho`` is NaN when there is none.
    """

    annotator: Annotator
    rho: float
    n_tasks: int


def annotator_reliability(records: Iterable[RankingRecord]) -> dict[Annotator, Reliability]:
    """Each annotator's agreement with the others, averaged over their shared tasks.

    On a task ranked by ``m >= 2`` annotators, annotator ``j``'s consensus is the
    mean position of each item over the other ``m - 1`` rankings;
    ``rho_j = spearmanr(positions_j, consensus_j)`` (``scipy.stats.spearmanr``,
    ties at mid-rank). The score is the mean of ``rho_j`` over the annotator's
    tasks. Every annotator in ``records`` is reported, with ``n_tasks = 0`` and
    NaN when they share no task.
    """
    records = list(records)
    rhos: dict[Annotator, list[float]] = defaultdict(list)
    tasks = list(_blocks(records).values())
    blocks = [np.asarray(rank_matrix(rankings)[1], dtype=np.float64) for rankings in tasks]
    for (m, _), idx in _by_shape(blocks).items():
        block = np.stack([blocks[i] for i in idx])  # (tasks, m, n)
        consensus = (block.sum(axis=1, keepdims=True) - block) / (m - 1)
        rho = _spearman_rows(block, consensus)
        for t, i in enumerate(idx):
            for j, r in enumerate(tasks[i]):
                if not np.isnan(rho[t, j]):
                    rhos[r.annotator].append(float(rho[t, j]))
    out = {}
    for a in dict.fromkeys(r.annotator for r in records):
        values = rhos.get(a, [])
        rho = float(np.mean(values)) if values else float("nan")
        out[a] = Reliability(annotator=a, rho=rho, n_tasks=len(values))
    return out
