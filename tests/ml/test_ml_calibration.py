import numpy as np
import pytest

from training.ml.calibration import SEED_THRESHOLD, calibrate


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
    got = calibrate(np.concatenate([stereo, other]), flags).threshold
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


def _first_root_above_stereo_mode(stereo, other) -> float:
    """Independent: brentq on scipy's two KDEs, bracketed on a fine grid."""
    from scipy import optimize, stats

    f_s, f_o = stats.gaussian_kde(stereo), stats.gaussian_kde(other)
    x = np.linspace(min(stereo.min(), other.min()), max(stereo.max(), other.max()), 40001)
    above = x[x >= x[np.argmax(f_s(x))]]
    d = f_s(above) - f_o(above)
    k = int(np.flatnonzero((d[:-1] > 0) & (d[1:] <= 0))[0])
    return optimize.brentq(lambda v: f_s(v)[0] - f_o(v)[0], above[k], above[k + 1])


def test_a_bimodal_other_class_crosses_past_its_neutral_mode():
    """Neutral prompts just above the stereotypical ones, diverse far above: the others'
    mode is the narrow neutral peak, and the crossing lies past it (it used to fall back)."""
    rng = np.random.default_rng(2)
    stereo = rng.normal(0.0, 0.12, 40)
    other = np.concatenate([rng.normal(0.15, 0.04, 40), rng.normal(0.6, 0.08, 40)])
    flags = np.r_[np.ones(40, bool), np.zeros(80, bool)]
    cal = calibrate(np.concatenate([stereo, other]), flags)
    assert cal.method == "kde-crossing", cal.reason
    assert cal.threshold == pytest.approx(_first_root_above_stereo_mode(stereo, other), abs=2e-3)
    assert (cal.n_stereotypical, cal.n_other) == (40, 80)
    assert cal.basis == "KDE crossing of 40 stereotypical vs 80 other prompts"


def test_others_denser_at_the_stereotypical_mode_fall_back_with_why():
    """A wide stereotypical spread under a narrow other peak: no equal-prior boundary."""
    stereo = np.linspace(-1.0, 1.0, 21)
    other = np.r_[np.linspace(-0.05, 0.05, 20), 0.2]
    flags = np.r_[np.ones(21, bool), np.zeros(21, bool)]
    cal = calibrate(np.concatenate([stereo, other]), flags)
    assert cal.threshold == SEED_THRESHOLD and cal.method == "seed-default"
    assert cal.reason == "other prompts are denser than stereotypical ones at their mode"
    assert (
        cal.basis
        == f"seed default {SEED_THRESHOLD}: {cal.reason} (21 stereotypical vs 21 other prompts)"
    )


def test_flag_figures_hand_worked():
    """Flagged below 0.3: items 1-3; stereotypical: 1, 2 and 4. TP 2 of 3 flagged, 2 of 3
    stereotypical: precision = recall = F1 = 2/3; nothing flagged: no precision."""
    from training.ml.calibration import flag_figures

    f = flag_figures([0.0, 0.1, 0.2, 0.5, 0.6], [1, 1, 0, 1, 0], 0.3, n_boot=200)
    assert (f["n_prompts"], f["n_stereotypical"], f["n_flagged"]) == (5, 3, 3)
    assert f["precision"] == f["recall"] == f["f1"] == pytest.approx(2 / 3)
    assert f["precision_ci"][0] <= 2 / 3 <= f["precision_ci"][1]
    # resampled by cluster: one cluster holding every prompt makes every draw the sample
    one = flag_figures([0.0, 0.1, 0.2, 0.5, 0.6], [1, 1, 0, 1, 0], 0.3, clusters=["a"] * 5)
    assert one["clusters"] == 1 and one["precision_ci"] == pytest.approx([2 / 3, 2 / 3])
    none = flag_figures([0.5, 0.6], [1, 0], 0.3, n_boot=50)
    assert none["precision"] is None and none["recall"] == 0.0 and none["f1"] == 0.0
    with pytest.raises(ValueError, match="same length"):
        flag_figures([0.1], [1, 0], 0.3)
