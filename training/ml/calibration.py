"""The flagging threshold: a prompt scoring below it is called stereotypical.

Method (per checkpoint, as the model card: "determined via KDE on training
distribution"): fit a Gaussian kernel density estimate (``scipy.stats.gaussian_kde``,
Scott's bandwidth) f_s to the scores of stereotypical prompts and f_o to the
scores of all other prompts; evaluate both on a 2,048-point grid over the score
range; the threshold is the first point above the stereotypical mode where
f_s falls to f_o (f_s > f_o just below, f_s <= f_o there; linearly interpolated
between grid points): the equal-prior decision boundary nearest the
stereotypical prompts. The crossing may lie past the others' mode: "other" mixes
neutral and diverse prompts, and its mode is often the neutral peak close to the
stereotypical one, so the crossing is not bounded by it.

It is undefined, and the seed's ``SEED_THRESHOLD = 0.12`` is returned with the
reason, when either class has fewer than two distinct scores, when the
stereotypical mode is not below the others' mode (the model does not separate
them), when other prompts are denser than stereotypical ones at the
stereotypical mode, or when the densities never cross above it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import stats

SEED_THRESHOLD = 0.12
GRID_POINTS = 2048
KDE = "kde-crossing"
SEED_DEFAULT = "seed-default"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Calibration:
    threshold: float
    method: str  # KDE or SEED_DEFAULT
    reason: str
    n_stereotypical: int = 0
    n_other: int = 0

    @property
    def basis(self) -> str:
        """How the threshold was set, in one line a person can read."""
        counts = f"{self.n_stereotypical} stereotypical vs {self.n_other} other prompts"
        if self.method == KDE:
            return f"KDE crossing of {counts}"
        return f"seed default {SEED_THRESHOLD}: {self.reason} ({counts})"


def calibrate(scores, is_stereotypical) -> Calibration:
    """The KDE crossing threshold, or the seed default with why (see module doc)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    flags = np.asarray(is_stereotypical, dtype=bool).ravel()
    if s.shape != flags.shape:
        raise ValueError("scores and is_stereotypical must have the same length")
    stereo, other = s[flags], s[~flags]
    counts = {"n_stereotypical": int(stereo.size), "n_other": int(other.size)}
    if np.unique(stereo).size < 2 or np.unique(other).size < 2:
        return _fallback("each class needs at least two distinct scores for a KDE", counts)
    grid = np.linspace(s.min(), s.max(), GRID_POINTS)
    f_s, f_o = stats.gaussian_kde(stereo)(grid), stats.gaussian_kde(other)(grid)
    i_s, i_o = int(np.argmax(f_s)), int(np.argmax(f_o))
    if i_s >= i_o:
        return _fallback("the stereotypical scores' mode is not below the others' mode", counts)
    diff = f_s[i_s:] - f_o[i_s:]
    if diff[0] <= 0:
        return _fallback("other prompts are denser than stereotypical ones at their mode", counts)
    crossings = np.flatnonzero((diff[:-1] > 0) & (diff[1:] <= 0))
    if crossings.size == 0:
        return _fallback("the densities never cross above the stereotypical mode", counts)
    k = int(crossings[0])
    x0, x1 = grid[i_s + k], grid[i_s + k + 1]
    d0, d1 = diff[k], diff[k + 1]
    threshold = x0 + (x1 - x0) * d0 / (d0 - d1)
    return Calibration(
        float(threshold), KDE, "the densities cross above the stereotypical mode", **counts
    )


def flag_figures(
    scores,
    is_stereotypical,
    threshold: float,
    *,
    clusters=None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """The flag's precision, recall and F1 against the prompt type (flagged: ``score <
    threshold``; positive: stereotypical), each with a 95% percentile bootstrap interval
    that resamples whole ``clusters`` (one label per prompt, e.g. its occupation: prompts
    of one occupation are not independent; default: each prompt its own); draws where a
    figure is undefined are left out (no interval when fewer than 20 remain). A figure with
    no denominator (nothing flagged, no stereotypical prompt) is None."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    truth = np.asarray(is_stereotypical, dtype=bool).ravel()
    if s.shape != truth.shape:
        raise ValueError("scores and is_stereotypical must have the same length")
    flagged = s < threshold
    labels = np.arange(s.size) if clusters is None else np.asarray(clusters, dtype=object)
    _, cluster = np.unique(labels.astype(str), return_inverse=True)
    members = [np.flatnonzero(cluster == c) for c in range(cluster.max() + 1)] if s.size else []
    rng = np.random.default_rng(seed)
    draws = [np.arange(s.size)] + [
        np.concatenate([members[c] for c in rng.integers(0, len(members), len(members))])
        for _ in range(n_boot)
    ]
    values: dict[str, list[float]] = {"precision": [], "recall": [], "f1": []}
    for idx in draws:
        tp = float(np.sum(flagged[idx] & truth[idx]))
        n_flagged, n_true = float(flagged[idx].sum()), float(truth[idx].sum())
        values["precision"].append(tp / n_flagged if n_flagged else np.nan)
        values["recall"].append(tp / n_true if n_true else np.nan)
        values["f1"].append(2 * tp / (n_flagged + n_true) if n_flagged + n_true else np.nan)
    out = {
        "threshold": float(threshold),
        "n_prompts": int(s.size),
        "n_stereotypical": int(truth.sum()),
        "n_flagged": int(flagged.sum()),
        "n_boot": n_boot,
        "clusters": int(len(members)),
    }
    for name, series in values.items():
        point, boot = series[0], np.array(series[1:])
        boot = boot[~np.isnan(boot)]
        out[name] = None if np.isnan(point) else float(point)
        out[f"{name}_ci"] = (
            [float(q) for q in np.percentile(boot, [2.5, 97.5])] if boot.size >= 20 else None
        )
    return out


def _fallback(reason: str, counts: dict) -> Calibration:
    log.warning("threshold calibration fell back to %s: %s", SEED_THRESHOLD, reason)
    return Calibration(SEED_THRESHOLD, SEED_DEFAULT, reason, **counts)
