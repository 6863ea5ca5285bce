import numpy as np
import pytest

from training.ml.calibration import SEED_THRESHOLD, calibrate, calibrate_threshold


def test_crossing_of_two_equal_width_gaussians_is_the_midpoint():
    rng = np.random.default_rng(0)
    stereo, other = rng.normal(0.0, 0.2, 4000), rng.normal(1.0, 0.2, 2000)
    scores = np.concatenate([stereo, other])
    flags = np.r_[np.ones(4000, bool), np.zeros(2000, bool)]
    cal = calibrate(scores, flags)
    assert cal.method == "kde-crossing"
    assert cal.threshold == pytest.approx(0.5, abs=0.03)


def test_unequal_widths_cross_nearer_the_narrow_one():
    rng = np.random.default_rng(1)
    stereo, other = rng.normal(0.0, 0.1, 3000), rng.normal(1.0, 0.4, 3000)
    flags = np.r_[np.ones(3000, bool), np.zeros(3000, bool)]
    # analytic crossing of N(0, .1) and N(1, .4) between the modes
    x = np.linspace(0, 1, 100001)
    f = np.exp(-(x**2) / 0.02) / 0.1 - np.exp(-((x - 1) ** 2) / 0.32) / 0.4
    analytic = x[np.argmax(f <= 0)]
    got = calibrate_threshold(np.concatenate([stereo, other]), flags)
    assert got == pytest.approx(analytic, abs=0.03) and got < 0.5


@pytest.mark.parametrize(
    "scores, flags",
    [
        ([1.0, 1.1, 1.2, 0.0, 0.1, 0.2], [1, 1, 1, 0, 0, 0]),  # stereotypical scores higher
        ([0.1, 0.1, 0.5, 0.6], [1, 1, 0, 0]),  # one distinct stereotypical score
        ([], []),
    ],
)
def test_undefined_falls_back_to_the_seed_threshold(scores, flags):
    cal = calibrate(scores, flags)
    assert cal.threshold == SEED_THRESHOLD and cal.method == "seed-default" and cal.reason
