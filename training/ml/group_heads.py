"""Group heads: a score per demographic group, as the pooled head plus a shrunk offset.

Model. With ``p(x)`` a version's pooled head (the DJ-PO head every run trains) and
``x`` the frozen encoder's embedding, group g's score is

    s_g(x) = p(x) + (x - mu)^T B w_g + c_g

``mu`` the mean train embedding, ``B`` ``[d, r]`` a projection shared by every group,
``w_g`` ``[r]`` and ``c_g`` the group's own: the pluralistic reward model's
``phi(x)^T B w_g`` form, read as an offset from the pooled head.

Fit, on cached embeddings, in closed form. Target: ``t_g(i) = y_g(i) - y(i)``, group g's
label of train item i minus the pooled label (both place labels in [0, 1]): what the
group sees differently from everyone. A ranking compares the items of one occupation,
so only differences within an occupation count: embeddings and targets are centred
within each (group, occupation) before the fit (else the offset spends itself on
occupations, which no ranking can see, instead of on what sets prompts apart within
one, such as the aspects a group reads the other way). Each group's ``(a_g, c_g)`` is the
ridge regression of the centred ``t_g`` on ``[x - mu, 1]`` (x centred) with penalty
``lam * (|a_g|^2 + c_g^2)``: as ``lam`` grows the offset goes to 0 and ``s_g`` to ``p``,
so every head is shrunk toward the pooled one. ``B`` and ``w_g`` are the rank-r truncated
SVD of ``A = [a_1 .. a_G]`` (``r = min(G, MAX_RANK)``; the best rank-r approximation;
exact while G <= MAX_RANK).

Penalty: chosen by grouped K-fold cross-validation (folds by the example's prompt, so
no prompt's images sit on both sides), the one of ``PENALTIES`` with the least held-out
squared error of every group's targets summed; ``cv`` records it beside the error of no
offset at all (the pooled head's own), so a card can say whether the heads earn their keep.

Disagreement, in the manner of distributional preference learning (Siththaranjan et
al., ICLR 2024: a head for the spread of people's labels, not only their mean): a ridge
regression, on ``[x - mu, 1]``, of each train item's spread of place labels over the
rankings that placed it (their standard deviation, ``SpreadTargets``), its penalty
chosen by the same grouped CV. ``disagreement(x)`` is its prediction (floored at 0):
the predicted standard deviation of people's labels for the prompt. Chosen over the
spread of the group heads by measurement (``benchmarks/groups.py``, docs/benchmarks.md):
when one group reads a prompt the other way, that prompt's labels split, while the
group means move the prompts it passes too, and a field's groups miss disagreement that
follows no demographic line. Its threshold is calibrated by a permutation null: the head
refitted with the same penalty after the spreads are shuffled among the train items
(the prompt's text then predicts nothing), ``NULL_DRAWS`` times, each item predicted by
a fit on the other prompts' folds (a head judged on prompts it has not seen, as it is
served); the threshold is the ``NULL_QUANTILE`` of those predictions. Above it, the prompt's text
predicts more disagreement than a head that knows nothing about prompts gives 19 times
in 20. ``spread`` (the annotator-weighted spread of the group heads' scores) stays for
the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

MAX_RANK = 8
FOLDS = 5
PENALTIES = tuple(float(x) for x in 10.0 ** np.arange(-2.0, 4.01, 0.5))
NULL_DRAWS = 5
NULL_QUANTILE = 0.95
TENSORS = ("mean", "basis", "weights", "offsets", "spread_weights", "spread_bias")


@dataclass(frozen=True)
class GroupTargets:
    """One group's train items (rows of the embedding table), its targets and annotators."""

    rows: np.ndarray  # int, into the embedding table
    targets: np.ndarray  # y_g(i) - y(i)
    annotators: int
    lists: np.ndarray | None = None  # each row's occupation (any label); None: one list


@dataclass(frozen=True)
class SpreadTargets:
    """Train items (rows of the embedding table), their place labels' spread (SD) and
    their prompts (the null's folds; None: in-sample)."""

    rows: np.ndarray
    spreads: np.ndarray
    prompts: np.ndarray | None = None


def _centred(x: np.ndarray, t: np.ndarray, lists: np.ndarray | None):
    """``x`` and ``t`` less their means within each list (module doc)."""
    if lists is None:
        return x - x.mean(axis=0), t - t.mean()
    _, inverse = np.unique(lists, return_inverse=True)
    counts = np.bincount(inverse)[:, None]
    x_means = np.zeros((counts.shape[0], x.shape[1]))
    np.add.at(x_means, inverse, x)
    t_means = np.bincount(inverse, weights=t) / counts[:, 0]
    return x - (x_means / counts)[inverse], t - t_means[inverse]


def _subset(g: GroupTargets, keep: np.ndarray) -> GroupTargets:
    return GroupTargets(
        g.rows[keep], g.targets[keep], g.annotators, None if g.lists is None else g.lists[keep]
    )


@dataclass
class GroupHeads:
    """Fitted heads of one demographic field (module doc); arrays are float32 numpy."""

    field: str
    groups: list[str]
    sizes: list[int]  # annotators per group, in ``groups``' order
    penalty: float
    threshold: float  # disagreement above it: "people disagree about this prompt"
    mean: np.ndarray  # [d]
    basis: np.ndarray  # [d, r]
    weights: np.ndarray  # [G, r]
    offsets: np.ndarray  # [G]
    spread_weights: np.ndarray  # [d], the disagreement head
    spread_bias: np.ndarray  # [1]
    cv: dict = field(default_factory=dict)

    def offsets_for(self, embeddings: np.ndarray) -> np.ndarray:
        """``[G, n]``: each group's offset from the pooled score, ``s_g - p``."""
        x = np.asarray(embeddings, dtype=np.float32) - self.mean
        return ((x @ self.basis) @ self.weights.T + self.offsets).T

    def disagreement(self, embeddings: np.ndarray) -> np.ndarray:
        """``[n]``: the predicted spread (SD) of people's labels (module doc)."""
        x = np.asarray(embeddings, dtype=np.float32) - self.mean
        return np.maximum(x @ self.spread_weights + self.spread_bias[0], 0.0)

    def group_spread(self, embeddings: np.ndarray) -> np.ndarray:
        """``[n]``: the annotator-weighted spread of the group heads' scores."""
        return spread(self.offsets_for(embeddings), self.shares)

    @property
    def shares(self) -> np.ndarray:
        sizes = np.asarray(self.sizes, dtype=np.float64)
        return sizes / sizes.sum()

    def index(self, value: str) -> int:
        """The position of group ``value``; ``KeyError`` naming the known ones."""
        try:
            return self.groups.index(value)
        except ValueError:
            raise KeyError(f"{self.field} has no group head {value!r}") from None

    def tensors(self) -> dict[str, np.ndarray]:
        return {name: np.ascontiguousarray(getattr(self, name), np.float32) for name in TENSORS}

    def meta(self) -> dict:
        """What the manifest keeps beside the tensors."""
        return {
            "field": self.field,
            "groups": list(self.groups),
            "sizes": [int(s) for s in self.sizes],
            "penalty": float(self.penalty),
            "rank": int(self.basis.shape[1]),
            "threshold": float(self.threshold),
            "cv": self.cv,
        }

    def summary(self) -> dict:
        """The figures a card shows: groups with their sizes, the penalties and errors."""
        spread = self.cv.get("spread", {})
        return {
            "field": self.field,
            "groups": [
                {"group": g, "annotators": n} for g, n in zip(self.groups, self.sizes, strict=True)
            ],
            "penalty": self.penalty,
            "cv_error": self.cv.get("error"),
            "pooled_cv_error": self.cv.get("pooled_error"),
            "disagreement_penalty": spread.get("penalty"),
            "disagreement_threshold": self.threshold,
            "special_category_choices": self.cv.get("special_category_choices", []),
        }

    @classmethod
    def from_parts(cls, meta: Mapping, tensors: Mapping[str, np.ndarray]) -> GroupHeads:
        """Rebuilt from ``meta()`` and ``tensors()``; ``ValueError`` if they do not fit."""
        arrays = {name: np.asarray(tensors[name], np.float32) for name in TENSORS}
        n_groups, dim = len(meta["groups"]), arrays["mean"].shape[0]
        shapes = {
            "basis": (dim, int(meta["rank"])),
            "weights": (n_groups, int(meta["rank"])),
            "offsets": (n_groups,),
            "spread_weights": (dim,),
            "spread_bias": (1,),
        }
        for name, shape in shapes.items():
            if arrays[name].shape != shape:
                raise ValueError(f"group heads: {name} is {arrays[name].shape}, expected {shape}")
        if len(meta["sizes"]) != n_groups:
            raise ValueError("group heads: one size per group")
        return cls(
            field=str(meta["field"]),
            groups=[str(g) for g in meta["groups"]],
            sizes=[int(s) for s in meta["sizes"]],
            penalty=float(meta["penalty"]),
            threshold=float(meta["threshold"]),
            cv=dict(meta.get("cv") or {}),
            **arrays,
        )


def spread(offsets: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Weighted standard deviation over groups (axis 0) of ``offsets`` ``[G, n]``."""
    offsets = np.asarray(offsets, dtype=np.float64)
    centre = shares @ offsets
    return np.sqrt(np.maximum(shares @ (offsets - centre) ** 2, 0.0))


def _design(x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _ridge_path(z: np.ndarray, t: np.ndarray, penalties: Sequence[float]) -> np.ndarray:
    """``[len(penalties), d + 1]``: ridge coefficients of ``t`` on ``z`` for each penalty
    (one thin SVD serves them all)."""
    u, s, vt = np.linalg.svd(z, full_matrices=False)
    ut = u.T @ t
    lam = np.asarray(penalties, dtype=np.float64)[:, None]
    return (s / (s**2 + lam) * ut) @ vt


def _folds(prompts: Sequence[str], k: int, seed: int) -> np.ndarray:
    """A fold number per row; all rows of one prompt share a fold (seeded)."""
    distinct = sorted(set(prompts))
    order = np.random.default_rng(seed).permutation(len(distinct))
    fold_of = {distinct[j]: i % k for i, j in enumerate(order)}
    return np.array([fold_of[p] for p in prompts])


def choose_penalty(
    embeddings: np.ndarray,
    prompts: Sequence[str],
    targets: Mapping[str, GroupTargets],
    *,
    folds: int = FOLDS,
    seed: int = 0,
) -> dict:
    """Grouped K-fold CV over ``PENALTIES`` (module doc): ``{"penalty", "error",
    "pooled_error", "errors", "folds"}``, errors as held-out mean squared errors."""
    x = np.asarray(embeddings, dtype=np.float64)
    fold = _folds(prompts, folds, seed)
    errors = np.zeros(len(PENALTIES))
    pooled = 0.0
    count = 0
    for g in targets.values():
        for f in range(folds):
            test = fold[g.rows] == f
            if not test.any() or test.all():
                continue
            fit_part, held_part = _subset(g, ~test), _subset(g, test)
            xf, tf = _centred(x[fit_part.rows], fit_part.targets, fit_part.lists)
            xh, th = _centred(x[held_part.rows], held_part.targets, held_part.lists)
            coef = _ridge_path(_design(xf), tf, PENALTIES)
            held = xh @ coef[:, :-1].T  # [n_test, P]; within a list the intercept cancels
            errors += ((held - th[:, None]) ** 2).sum(axis=0)
            pooled += float((th**2).sum())
            count += int(test.sum())
    if count == 0:
        raise ValueError("cross-validation needs group labels on more than one prompt")
    best = int(np.argmin(errors))
    return {
        "penalty": PENALTIES[best],
        "error": float(errors[best] / count),
        "pooled_error": pooled / count,
        "errors": {f"{p:g}": float(e / count) for p, e in zip(PENALTIES, errors, strict=True)},
        "folds": folds,
    }


def _offsets(x: np.ndarray, targets: Sequence[GroupTargets], penalty: float):
    """``A`` ``[d, G]`` and ``c`` ``[G]`` of each group's ridge fit on centred data
    (module doc); ``c`` is 0 up to float noise, as centred targets have mean 0."""
    coefs = np.stack(
        [
            _ridge_path(_design(xc), tc, [penalty])[0]
            for xc, tc in (_centred(x[g.rows], g.targets, g.lists) for g in targets)
        ]
    )
    return coefs[:, :-1].T, coefs[:, -1]


def _spread_head(x, rows, spreads, penalty: float, mu) -> tuple[np.ndarray, float]:
    """``(w, b)`` with ``disagreement = (x - mu) w + b``: the ridge fit of the centred
    spreads on the centred embeddings (as the CV judged it), the mean added back unpenalized."""
    xs = x[rows]
    centre = xs.mean(axis=0)
    w = _ridge_path(xs - centre, spreads - spreads.mean(), [penalty])[0]
    return w, float(spreads.mean() - (centre - mu) @ w)


def _held_out(x, spreads: SpreadTargets, values, penalty: float, mu, fold) -> np.ndarray:
    """Predictions of a head fitted on ``values`` (a shuffle: the null) for items it did not
    see: each fold's from the other folds' fit (all items' in-sample without prompts)."""
    if fold is None:
        w, b = _spread_head(x, spreads.rows, values, penalty, mu)
        return (x[spreads.rows] - mu) @ w + b
    out = np.empty(len(values))
    for f in np.unique(fold):
        test = fold == f
        w, b = _spread_head(x, spreads.rows[~test], values[~test], penalty, mu)
        out[test] = (x[spreads.rows[test]] - mu) @ w + b
    return out


def choose_spread_penalty(
    embeddings: np.ndarray, prompts: Sequence[str], spreads: SpreadTargets, *, seed: int = 0
) -> dict:
    """``choose_penalty`` for the disagreement head (its targets as one group)."""
    return choose_penalty(
        embeddings, prompts, {"": GroupTargets(spreads.rows, spreads.spreads, 0)}, seed=seed
    )


def fit(
    embeddings: np.ndarray,
    targets: Mapping[str, GroupTargets],
    spreads: SpreadTargets,
    *,
    field: str,
    penalty: float,
    spread_penalty: float,
    cv: dict | None = None,
    seed: int = 0,
) -> GroupHeads:
    """Group heads and the disagreement head on ``embeddings`` ``[n, d]`` (the train
    items' table) at their penalties, with the disagreement threshold (module doc)."""
    if len(targets) < 2:
        raise ValueError("group heads need at least two groups")
    x = np.asarray(embeddings, dtype=np.float64)
    names = sorted(targets)
    groups = [targets[n] for n in names]
    used = np.unique(np.concatenate([g.rows for g in groups] + [spreads.rows]))
    mu = x[used].mean(axis=0)
    a, c = _offsets(x, groups, penalty)
    rank = min(len(groups), MAX_RANK)
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    basis, weights = u[:, :rank], (s[:rank, None] * vt[:rank]).T
    spread_w, spread_b = _spread_head(x, spreads.rows, spreads.spreads, spread_penalty, mu)
    rng = np.random.default_rng(seed)
    fold = _folds(list(spreads.prompts), FOLDS, seed) if spreads.prompts is not None else None
    null = [
        _held_out(x, spreads, rng.permutation(spreads.spreads), spread_penalty, mu, fold)
        for _ in range(NULL_DRAWS)
    ]
    return GroupHeads(
        field=field,
        groups=names,
        sizes=[g.annotators for g in groups],
        penalty=float(penalty),
        threshold=float(np.quantile(np.concatenate(null), NULL_QUANTILE)),
        mean=mu.astype(np.float32),
        basis=basis.astype(np.float32),
        weights=weights.astype(np.float32),
        offsets=c.astype(np.float32),
        spread_weights=spread_w.astype(np.float32),
        spread_bias=np.array([spread_b], dtype=np.float32),
        cv=dict(cv or {}),
    )
