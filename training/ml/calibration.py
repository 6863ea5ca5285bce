"""The flagging threshold: a prompt scoring below it is called stereotypical.

Method (per checkpoint, on held-out scores): fit a Gaussian kernel density
estimate (``scipy.stats.gaussian_kde``, Scott's bandwidth) to the scores of
stereotypical prompts and one to the scores of all other prompts; evaluate both
on a 2,048-point grid over the score range; find each density's mode; the
threshold is the first point, walking from the stereotypical mode towards the
other mode, where the two densities cross (linearly interpolated between grid
points). It is undefined, and the seed's ``SEED_THRESHOLD = 0.12`` is returned
with the reason, when either class has fewer than two distinct scores, when the
stereotypical mode is not below the other mode (the model does not separate
them), or when the densities do not cross between the modes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import stats

SEED_THRESHOLD = 0.12
GRID_POINTS = 2048

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Calibration:
    threshold: float
    method: str  # "kde-crossing" or "seed-default"
    reason: str


def calibrate(scores, is_stereotypical) -> Calibration:
    """The KDE crossing threshold, or the seed default with why (see module doc)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    flags = np.asarray(is_stereotypical, dtype=bool).ravel()
    if s.shape != flags.shape:
        raise ValueError("scores and is_stereotypical must have the same length")
    stereo, other = s[flags], s[~flags]
    if np.unique(stereo).size < 2 or np.unique(other).size < 2:
        return _fallback("each class needs at least two distinct scores for a KDE")
    grid = np.linspace(s.min(), s.max(), GRID_POINTS)
    f_s, f_o = stats.gaussian_kde(stereo)(grid), stats.gaussian_kde(other)(grid)
    i_s, i_o = int(np.argmax(f_s)), int(np.argmax(f_o))
    if i_s >= i_o:
        return _fallback("the stereotypical scores' mode is not below the others' mode")
    diff = f_s[i_s : i_o + 1] - f_o[i_s : i_o + 1]
    crossings = np.flatnonzero((diff[:-1] > 0) & (diff[1:] <= 0))
    if crossings.size == 0:
        return _fallback("the densities do not cross between their modes")
    k = int(crossings[0])
    x0, x1 = grid[i_s + k], grid[i_s + k + 1]
    d0, d1 = diff[k], diff[k + 1]
    threshold = x0 + (x1 - x0) * d0 / (d0 - d1)
    return Calibration(float(threshold), "kde-crossing", "densities cross between the modes")


def _fallback(reason: str) -> Calibration:
    log.warning("threshold calibration fell back to %s: %s", SEED_THRESHOLD, reason)
    return Calibration(SEED_THRESHOLD, "seed-default", reason)


def calibrate_threshold(scores, is_stereotypical) -> float:
    """The calibrated threshold (``SEED_THRESHOLD`` when undefined; see ``calibrate``)."""
    return calibrate(scores, is_stereotypical).threshold
