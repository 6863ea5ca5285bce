"""The accuracy gate: may a quantized encoder serve a head trained on fp32 embeddings?

On one eval split, with the checkpoint's head on both encoders, scores ``r``
(fp32 origin) and ``q`` (the other backend), labels ``y`` and threshold ``t``:

- ``rank_rho = spearman(r, q)``: how much of the fp32 order the copy keeps;
- ``rho_change = spearman(q, y) - spearman(r, y)``: the headline metric's move;
- ``rho_drift = max(1 - rank_rho, |rho_change|)``;
- ``flip_share = mean(1[r_i < t] != 1[q_i < t_q])``: prompts whose flag flips, on the
  flip set (the versioned gate set, ``gate_set.json``: 400 occupation prompts no version
  is trained or calibrated on; else the same eval split), with ``t_q`` the copy's own
  threshold (``copy_threshold``: fp32's carried onto the copy's scale by a line fitted on
  training prompts, so a systematic offset of the copy's scores does not become flips);
- ``flip_upper``: the one-sided 95% Clopper-Pearson upper bound of the flip rate,
  ``Beta.ppf(0.95, flips + 1, n - flips)`` (1 when every prompt flips).

It passes when ``rho_drift <= max_rho_drift`` and ``flip_upper <= max_flip_share``: the
flip rate on prompts like the gate set's is below the tolerance with 95% confidence, not
merely observed below it (with no flip at all, a 2% tolerance needs 149 prompts).
``near_threshold`` says where flips come from: with ``sigma`` the SD of the copy's
offset-corrected error ``(q - t_q) - (r - t)`` over the flip set, the prompts whose fp32
score lies within ``2 sigma`` of the threshold, how many flipped, and the flip rate a
normal error of that SD predicts for them, ``mean Phi(-|r - t| / sigma)``.
Spearman is ``scipy.stats.spearmanr`` (ties ranked by their average).

``drift_interval`` says how precisely one eval split measures the drift: a
bootstrap over the split's distinct prompts (an eval split holds several items per
prompt, all scored alike, so items are not independent).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import beta, norm, spearmanr

from training.ml.encoders.identity import EncoderError


class GateRefused(EncoderError):
    """The quantized encoder moves the scores more than the tolerances allow."""


@dataclass(frozen=True)
class GateResult:
    """The gate's figures, its tolerances and its verdict."""

    n: int
    threshold: float
    rank_rho: float
    rho_fp32: float | None
    rho_quantized: float | None
    rho_change: float | None
    rho_drift: float
    flips: int
    flip_share: float
    max_abs_diff: float
    max_rho_drift: float
    max_flip_share: float
    flip_n: int = 0  # prompts in the flip set
    flip_upper: float = 1.0
    copy_threshold: float = 0.0
    near_threshold: dict | None = None

    @property
    def passed(self) -> bool:
        return self.rho_drift <= self.max_rho_drift and self.flip_upper <= self.max_flip_share

    def reasons(self) -> list[str]:
        """Why it failed, one string per tolerance exceeded (empty when it passed)."""
        out = []
        if self.rho_drift > self.max_rho_drift:
            out.append(f"Spearman drift {self.rho_drift:.4f} > {self.max_rho_drift:.4f}")
        if self.flip_upper > self.max_flip_share:
            out.append(
                f"{self.flips} of {self.flip_n} flags flip: the flip rate's 95% upper bound "
                f"{self.flip_upper:.2%} > {self.max_flip_share:.2%} (fp32 threshold "
                f"{self.threshold:.4f}, the copy's {self.copy_threshold:.4f})"
            )
        return out

    def to_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}

    def check(self, what: str = "the quantized encoder") -> None:
        """Raise ``GateRefused`` naming every tolerance exceeded."""
        if not self.passed:
            raise GateRefused(f"{what} fails the accuracy gate: " + "; ".join(self.reasons()))


def _rho(a: np.ndarray, b: np.ndarray) -> float | None:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def _tolerance(value: float, name: str) -> float:
    value = float(value)
    if not 0 <= value <= 1 or math.isnan(value):
        raise ValueError(f"{name} must be in [0, 1], not {value!r}")
    return value


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    """The one-sided ``level`` Clopper-Pearson upper bound of a rate seen ``k`` times in ``n``."""
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, not k={k}, n={n}")
    return 1.0 if k == n else float(beta.ppf(level, k + 1, n - k))


def copy_threshold(reference, quantized, threshold: float) -> float:
    """The copy's threshold: fp32's ``threshold`` carried onto the copy's scale by the
    least-squares line ``q ~ a + b r`` over these (training) prompts, ``a + b * threshold``:
    the copy's systematic offset and scale near the threshold, not its prompt-by-prompt
    noise. (Choosing the cut that best reproduces fp32's flags on the few training prompts
    near the threshold was measured too: it fits their noise and flipped more gate-set
    prompts than the shared threshold, 18 of 400 against 4 on MiniLM int8.)"""
    r, q = (np.asarray(a, dtype=np.float64).ravel() for a in (reference, quantized))
    if len(r) != len(q) or len(r) < 2:
        raise ValueError("reference and quantized must hold two or more scores of one length")
    if np.ptp(r) == 0:
        return float(threshold + np.mean(q - r))
    slope, intercept = np.polyfit(r, q, 1)
    return float(intercept + slope * threshold)


def near_threshold(reference, quantized, threshold: float, copy: float) -> dict:
    """Where flips come from (module doc): the prompts within 2 sigma of the threshold."""
    r, q = (np.asarray(a, dtype=np.float64).ravel() for a in (reference, quantized))
    error = (q - copy) - (r - threshold)
    sigma = float(np.std(error))
    distance = np.abs(r - threshold)
    near = distance < 2 * sigma if sigma > 0 else np.zeros(len(r), dtype=bool)
    flips = (r < threshold) != (q < copy)
    expected = float(np.mean(norm.cdf(-distance[near] / sigma))) if near.any() else 0.0
    return {
        "sigma": sigma,
        "within": 2 * sigma,
        "n": int(near.sum()),
        "flips": int(flips[near].sum()),
        "expected_flip_rate": expected,
    }


def accuracy_gate(
    reference: np.ndarray,
    quantized: np.ndarray,
    labels: np.ndarray,
    threshold: float,
    *,
    max_rho_drift: float,
    max_flip_share: float,
    flip_set: tuple | None = None,
    copy: float | None = None,
    level: float = 0.95,
) -> GateResult:
    """Compare fp32 ``reference`` and ``quantized`` scores of one eval split (module doc);
    flips are counted on ``flip_set`` (fp32 and copy scores of the gate set; default the
    eval split) at fp32's ``threshold`` and the copy's own ``copy`` (default the same)."""
    r, q, y = (np.asarray(a, dtype=np.float64).ravel() for a in (reference, quantized, labels))
    if not len(r) == len(q) == len(y):
        raise ValueError(f"scores and labels differ in length: {len(r)}, {len(q)}, {len(y)}")
    if len(r) < 3:
        raise ValueError(f"the gate needs at least 3 prompts, not {len(r)}")
    if not (np.isfinite(r).all() and np.isfinite(q).all() and np.isfinite(y).all()):
        raise ValueError("scores and labels must be finite")
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, not {threshold!r}")
    rank_rho = _rho(r, q)
    if rank_rho is None:
        rank_rho = 1.0 if np.array_equal(r, q) else 0.0
    rho_fp32, rho_quantized = _rho(r, y), _rho(q, y)
    change = None
    if rho_fp32 is not None and rho_quantized is not None:
        change = rho_quantized - rho_fp32
    copy = float(threshold) if copy is None else float(copy)
    fr, fq = (r, q) if flip_set is None else (np.asarray(a, np.float64).ravel() for a in flip_set)
    if len(fr) != len(fq) or len(fr) < 1 or not (np.isfinite(fr).all() and np.isfinite(fq).all()):
        raise ValueError("the flip set's scores must be finite, non-empty and of one length")
    flips = int(np.sum((fr < threshold) != (fq < copy)))
    return GateResult(
        n=len(r),
        threshold=float(threshold),
        rank_rho=rank_rho,
        rho_fp32=rho_fp32,
        rho_quantized=rho_quantized,
        rho_change=change,
        rho_drift=max(1.0 - rank_rho, abs(change or 0.0)),
        flips=flips,
        flip_share=flips / len(fr),
        max_abs_diff=float(np.max(np.abs(r - q))),
        max_rho_drift=_tolerance(max_rho_drift, "max_rho_drift"),
        max_flip_share=_tolerance(max_flip_share, "max_flip_share"),
        flip_n=len(fr),
        flip_upper=clopper_pearson_upper(flips, len(fr), level),
        copy_threshold=copy,
        near_threshold=near_threshold(fr, fq, threshold, copy),
    )


def _drift(r: np.ndarray, q: np.ndarray, y: np.ndarray) -> float | None:
    rank_rho, rho_r, rho_q = _rho(r, q), _rho(r, y), _rho(q, y)
    if rank_rho is None or rho_r is None or rho_q is None:
        return None
    return max(1.0 - rank_rho, abs(rho_q - rho_r))


def drift_interval(
    reference: np.ndarray,
    quantized: np.ndarray,
    labels: np.ndarray,
    groups: list[str],
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """The percentile bootstrap interval of ``rho_drift`` (module doc), resampling whole
    ``groups`` (one per row: its prompt text) with replacement; resamples where a rank
    correlation is undefined (constant scores) are left out. Deterministic by ``seed``."""
    r, q, y = (np.asarray(a, dtype=np.float64).ravel() for a in (reference, quantized, labels))
    if not len(r) == len(q) == len(y) == len(groups):
        raise ValueError("scores, labels and groups differ in length")
    names, index = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
    if len(names) < 3:
        raise ValueError(f"the interval needs at least 3 groups, not {len(names)}")
    rows = [np.flatnonzero(index == g) for g in range(len(names))]
    rng = np.random.default_rng(seed)
    drifts = []
    for _ in range(n_boot):
        take = np.concatenate([rows[g] for g in rng.integers(0, len(names), len(names))])
        d = _drift(r[take], q[take], y[take])
        if d is not None:
            drifts.append(d)
    if not drifts:
        raise ValueError("no resample had varying scores: the interval is undefined")
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(drifts, [tail, 100 - tail])
    return float(low), float(high)
