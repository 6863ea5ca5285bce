"""Hyper-parameter search by grouped K-fold cross-validation inside a train split.

``search`` gets the train split only (the caller never passes eval rows: the
eval split is never used to choose) with each text's cached embedding. The
folds are scikit-learn's ``GroupKFold`` over ``group`` (the original prompt),
so a paraphrase always falls in its origin's fold. In each fold every
configuration of the grid (``training.ml.search_space``) trains at once
(``training.ml.heads``) on the other folds, and is scored by Spearman's rho on
the held-out fold's ``scored`` examples (the originals: an eval split holds no
paraphrases). Per configuration: the mean of its K fold rhos, with a 95%
interval by the Nadeau-Bengio corrected resampled t (Nadeau & Bengio 2003,
"Inference for the generalization error"): the fold scores are not independent
(their training sets overlap), so the variance of the mean is
``(1/K + n_test/n_train) * s^2`` rather than ``s^2 / K``, with ``s^2`` the
variance of the K fold rhos and ``n_test/n_train`` the ratio of held-out to
training groups (the unit of independence), and the quantile is Student's t
with K - 1 degrees of freedom.

The choice: the configuration with the highest mean CV rho (a NaN mean counts
lowest; ties go to the first in grid order).

Torch runs on ``threads`` intra-op threads (1 by default) during the search, then
as before: the steps are small, and on a shared CPU OpenMP threads spin against
each other (the seed-scale grid took 448 s at 2 threads and 18 s at 1 on a
2-core machine under load 11).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy import stats
from sklearn.model_selection import GroupKFold

from training.ml.errors import MLError
from training.ml.examples import Example
from training.ml.heads import train_heads
from training.ml.search_space import SearchSpace


class SearchError(MLError, ValueError):
    """Data a search cannot run on (too few groups for the folds; also a ``ValueError``)."""


@dataclass(frozen=True)
class ConfigScore:
    """One configuration's CV figures: each fold's rho, their mean and its 95% interval."""

    config: dict
    fold_rhos: list[float]
    mean: float
    ci: list[float] | None


@dataclass(frozen=True)
class SearchResult:
    space: dict
    folds: int
    scores: list[ConfigScore]
    chosen: int
    seconds: float
    n_examples: int
    n_groups: int

    @property
    def best(self) -> ConfigScore:
        return self.scores[self.chosen]

    def as_dict(self) -> dict:
        return asdict(self)


def grouped_folds(groups: Sequence[str], n_folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train indices, held-out indices)`` per fold; no group on both sides of a fold."""
    n_groups = len(set(groups))
    if n_groups < n_folds:
        raise SearchError(
            f"{n_folds} folds need at least {n_folds} prompts; the split has {n_groups}"
        )
    splitter = GroupKFold(n_splits=n_folds)
    return list(splitter.split(np.zeros(len(groups)), groups=np.asarray(groups)))


def column_spearman(pred: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman's rho of each column of ``pred`` ``[n, H]`` against ``target`` ``[n]``
    (average ranks for ties, as ``metrics.spearman``); NaN for a constant column."""
    rp = stats.rankdata(pred, axis=0)
    rt = stats.rankdata(target)
    rp = rp - rp.mean(axis=0)
    rt = rt - rt.mean()
    denom = np.sqrt((rp * rp).sum(axis=0) * (rt * rt).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, (rp * rt[:, None]).sum(axis=0) / denom, np.nan)


def corrected_interval(
    fold_scores: Sequence[float], test_train_ratio: float, confidence: float = 0.95
) -> list[float] | None:
    """Nadeau-Bengio interval of the mean fold score: ``mean +- t * sqrt((1/K + r) s^2)``."""
    v = np.asarray(fold_scores, dtype=np.float64)
    if v.size < 2 or np.isnan(v).any():
        return None
    k = v.size
    half = stats.t.ppf((1 + confidence) / 2, k - 1) * math.sqrt(
        (1 / k + test_train_ratio) * v.var(ddof=1)
    )
    return [float(v.mean() - half), float(v.mean() + half)]


def choose(means: Sequence[float]) -> int:
    """The index of the highest mean (NaN lowest; the first on ties)."""
    m = np.asarray(means, dtype=np.float64)
    return int(np.argmax(np.where(np.isnan(m), -np.inf, m)))


def search(
    examples: Sequence[Example],
    embeddings: np.ndarray,
    space: SearchSpace | None = None,
    *,
    scored: Sequence[bool] | None = None,
    seed: int = 0,
    dropout: float = 0.1,
    occupations_per_batch: int = 1,
    device: str = "cpu",
    threads: int | None = 1,
    on_progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SearchResult:
    """Score every configuration of ``space`` by grouped K-fold CV on ``examples``.

    ``embeddings`` ``[n, d]`` is each example's cached embedding, in order.
    ``scored`` marks the examples a held-out fold is scored on (default all).
    ``on_progress(done, total)`` after each epoch of each fold (total = folds x
    the longest configuration's epochs); ``should_stop`` as in ``train``;
    ``threads=None`` leaves torch's thread count alone.
    """
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _search(
            examples,
            embeddings,
            space or SearchSpace(),
            scored,
            seed,
            dropout,
            occupations_per_batch,
            device,
            on_progress,
            should_stop,
        )
    finally:
        torch.set_num_threads(before)


def _search(
    examples,
    embeddings,
    space,
    scored,
    seed,
    dropout,
    occupations_per_batch,
    device,
    on_progress,
    should_stop,
) -> SearchResult:
    started = time.perf_counter()
    n = len(examples)
    if embeddings.shape[0] != n:
        raise ValueError(f"{embeddings.shape[0]} embeddings for {n} examples")
    scored_mask = np.ones(n, dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
    groups = [e.group for e in examples]
    folds = grouped_folds(groups, space.folds)
    configs = space.configs()
    table = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32)).to(device)
    labels = torch.tensor([e.label for e in examples], dtype=torch.float32, device=device)
    weights = None
    if any(e.weight != 1.0 for e in examples):
        weights = torch.tensor([e.weight for e in examples], dtype=torch.float32, device=device)
    max_epochs = max(c["epochs"] for c in configs)
    total = space.folds * max_epochs
    rhos = np.full((space.folds, len(configs)), np.nan)
    ratios = []
    for f, (train_idx, held_idx) in enumerate(folds):
        held_idx = held_idx[scored_mask[held_idx]]
        ratios.append(len({groups[i] for i in held_idx}) / len({groups[i] for i in train_idx}))
        rows = torch.from_numpy(train_idx).to(device)

        def progress(epoch: int, _epochs: int, f: int = f) -> None:
            if on_progress is not None:
                on_progress(f * max_epochs + epoch, total)

        w, b = train_heads(
            table[rows],
            labels[rows],
            [examples[i].occupation for i in train_idx],
            configs,
            weights=None if weights is None else weights[rows],
            seed=seed,
            dropout=dropout,
            occupations_per_batch=occupations_per_batch,
            on_epoch=progress,
            should_stop=should_stop,
        )
        with torch.no_grad():
            pred = (table[torch.from_numpy(held_idx).to(device)] @ w.T + b).cpu().numpy()
        rhos[f] = column_spearman(pred, np.array([examples[i].label for i in held_idx]))
    ratio = float(np.mean(ratios))
    scores = [
        ConfigScore(
            config=config,
            fold_rhos=[float(r) for r in rhos[:, j]],
            mean=float(rhos[:, j].mean()),
            ci=corrected_interval(rhos[:, j], ratio),
        )
        for j, config in enumerate(configs)
    ]
    return SearchResult(
        space=space.to_dict(),
        folds=space.folds,
        scores=scores,
        chosen=choose([s.mean for s in scores]),
        seconds=time.perf_counter() - started,
        n_examples=n,
        n_groups=len(set(groups)),
    )
