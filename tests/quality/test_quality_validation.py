"""Validation-study statistics: checked against scipy, a hand-worked case and simulations."""

import json
import statistics
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from annotation.stats import power, validation_sim
from annotation.stats.validation import (
    ValidationDataError,
    ValidationRecord,
    cluster_bootstrap,
    effect_sizes,
    study,
    welch_from_summary,
)
from annotation.stats.validation_report import report


def _planted(seed=1, **kw):
    sim = validation_sim.simulate(np.random.default_rng(seed), **{"effect": 0.6, **kw})
    return validation_sim.records(sim)


def _ranking(annotator, task, optimised, original, occupation="nurse", k=None):
    """Records of one ranking from the ranks (1..K) of each condition's images."""
    k = k or len(optimised) + len(original)
    return [
        ValidationRecord(annotator, occupation, task, condition, rank - 1, k)
        for condition, ranks in (("optimised", optimised), ("original", original))
        for rank in ranks
    ]


# The hand-worked study: K = 4, two images per condition; (optimised ranks, original ranks).
TINY = {
    ("A", "t1"): ((4, 3), (2, 1)),  # optimised above both originals: 4 of 4 pairs
    ("A", "t2"): ((4, 1), (3, 2)),  # 2 of 4
    ("B", "t1"): ((3, 2), (4, 1)),  # 2 of 4
    ("B", "t2"): ((2, 1), (4, 3)),  # 0 of 4
    ("C", "t1"): ((4, 2), (3, 1)),  # 3 of 4
}


def _tiny():
    return [r for (a, t), (opt, orig) in TINY.items() for r in _ranking(a, t, opt, orig)]


def test_card_summary_statistics_give_its_welch_test():
    # The DJ-PO card: unoptimised M = 2.55 (SD 0.63), optimised M = 4.45 (SD 1.03), n = 20 each,
    # "t(31.34) = 7.02" from unrounded data.
    w = welch_from_summary(2.55, 0.63, 20, 4.45, 1.03, 20)
    assert w.t == pytest.approx(7.04, abs=0.05)
    assert w.df == pytest.approx(31.5, abs=0.2)
    assert w.p < 0.001
    assert w.text() == f"t({w.df:.2f}) = 7.04, p < .001"
    se = np.sqrt(0.63**2 / 20 + 1.03**2 / 20)
    assert (w.ci_low, w.ci_high) == pytest.approx(
        1.9 + np.array([-1, 1]) * stats.t.ppf(0.975, w.df) * se
    )


def test_welch_df_from_summary_matches_scipy_on_raw_data():
    rng = np.random.default_rng(3)
    a, b = rng.normal(3, 0.5, 12), rng.normal(4, 1.2, 17)
    raw = stats.ttest_ind(b, a, equal_var=False)
    w = welch_from_summary(a.mean(), a.std(ddof=1), 12, b.mean(), b.std(ddof=1), 17)
    assert (w.t, w.df, w.p) == pytest.approx((raw.statistic, raw.df, raw.pvalue), rel=1e-10)
    ci = raw.confidence_interval(0.95)
    assert (w.difference, w.ci_low, w.ci_high) == pytest.approx(
        (b.mean() - a.mean(), ci.low, ci.high)
    )


def test_report_tests_match_scipy_on_the_exported_annotator_means():
    records = _planted()
    rep = report(records, k=3, n_boot=200, seed=0)
    # The export, recomputed from the records with plain Python.
    ranks = {}
    for r in records:
        ranks.setdefault((r.annotator, r.condition), []).append(r.position + 1)
    for row in rep["annotators"]:
        for c in ("original", "optimised"):
            assert row["mean_rank"][c] == pytest.approx(
                statistics.mean(ranks[(row["annotator"], c)])
            )
    orig = np.array([row["mean_rank"]["original"] for row in rep["annotators"]])
    opt = np.array([row["mean_rank"]["optimised"] for row in rep["annotators"]])
    w = stats.ttest_ind(opt, orig, equal_var=False)
    assert [rep["welch"][x] for x in ("t", "df", "p")] == pytest.approx(
        [w.statistic, w.df, w.pvalue]
    )
    p = stats.ttest_rel(opt, orig)
    assert [rep["paired_t"][x] for x in ("t", "df", "p")] == pytest.approx(
        [p.statistic, p.df, p.pvalue]
    )
    d = opt - orig
    half = stats.t.ppf(0.975, 19) * d.std(ddof=1) / np.sqrt(20)
    assert (rep["paired_t"]["ci_low"], rep["paired_t"]["ci_high"]) == pytest.approx(
        (d.mean() - half, d.mean() + half)
    )
    wx = stats.wilcoxon(opt, orig)
    assert [rep["wilcoxon"]["statistic"], rep["wilcoxon"]["p"]] == pytest.approx(
        [wx.statistic, wx.pvalue]
    )
    for c, means in (("original", orig), ("optimised", opt)):
        s = rep["per_condition"][c]
        assert (s["n"], s["mean"], s["sd"]) == pytest.approx(
            (20, statistics.mean(means), statistics.stdev(means))
        )
        low, high = stats.t.interval(0.95, 19, loc=means.mean(), scale=stats.sem(means))
        assert (s["ci_low"], s["ci_high"]) == pytest.approx((low, high))
    assert rep["effect_size"]["d_z"]["value"] == pytest.approx(
        (opt - orig).mean() / (opt - orig).std(ddof=1)
    )
    json.dumps(rep, allow_nan=False)


def test_balanced_design_makes_welch_sqrt2_times_the_paired_t():
    # Each ranking's ranks add up to K(K+1)/2, so an annotator's two means add up to K + 1.
    rep = report(_planted(), n_boot=0)
    assert rep["between_condition_correlation"] == pytest.approx(-1)
    assert rep["welch"]["t"] == pytest.approx(np.sqrt(2) * rep["paired_t"]["t"])


def test_hand_worked_effect_sizes_and_probability_of_superiority():
    s = study(_tiny())
    # Annotator means (optimised, original): A (3, 2), B (2, 3), C (3, 2): differences 1, -1, 1.
    # d_z = (1/3) / sqrt(4/3); pooled SD = sqrt(1/3) so d_pooled = (1/3) / sqrt(1/3).
    e = effect_sizes(s, n_boot=0)
    assert e["d_z"].value == pytest.approx(np.sqrt(3) / 6)
    assert e["d_pooled"].value == pytest.approx(1 / np.sqrt(3))
    assert e["d_z"].ci_low is None
    b = cluster_bootstrap(s, n_boot=0)
    assert b["probability_of_superiority"].value == pytest.approx(11 / 20)
    # Over images: optimised 26 / 10, original 24 / 10 (A and B ranked two tasks, C one).
    assert b["difference"].value == pytest.approx(0.2)
    assert b["mean_rank"]["optimised"].value == pytest.approx(2.6)
    assert b["mean_rank"]["original"].value == pytest.approx(2.4)


def test_probability_of_superiority_is_the_mann_whitney_share():
    sim = validation_sim.simulate(np.random.default_rng(5), effect=0.4, annotators=6, k=8)
    b = cluster_bootstrap(study(validation_sim.records(sim)), n_boot=0)
    u = [
        stats.mannwhitneyu(t, o).statistic
        for t, o in zip(
            sim.treatment_ranks.reshape(-1, 4), sim.baseline_ranks.reshape(-1, 4), strict=True
        )
    ]
    assert b["probability_of_superiority"].value == pytest.approx(np.mean(u) / 16)


def test_bootstrap_interval_covers_the_planted_truth_and_excludes_zero():
    records = _planted(seed=11, effect=0.5, annotator_sd=0.3, occupation_sd=0.2)
    # The truth at effect 0.5 (no spread): a very large study.
    big = validation_sim.simulate(np.random.default_rng(99), effect=0.5, annotators=4000)
    base, treat = big.annotator_means()
    truth = (treat - base).mean()
    b = cluster_bootstrap(study(records), n_boot=2000, seed=4)
    assert 0 < b["difference"].ci_low < truth < b["difference"].ci_high
    assert b == cluster_bootstrap(study(records), n_boot=2000, seed=4)
    assert b != cluster_bootstrap(study(records), n_boot=2000, seed=5)


def test_bootstrap_width_matches_the_annotator_standard_error_with_one_occupation():
    sim = validation_sim.simulate(
        np.random.default_rng(2), effect=0.5, annotators=40, occupations=1, annotator_sd=0.5
    )
    base, treat = sim.annotator_means()
    d = (treat - base)[0]
    se = d.std(ddof=0) / np.sqrt(d.size)
    b = cluster_bootstrap(study(validation_sim.records(sim)), n_boot=4000, seed=0)
    assert b["difference"].ci_high - b["difference"].ci_low == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_per_occupation_finds_the_occupation_where_the_optimiser_failed():
    good = _planted(seed=2, effect=1.0, rankings=9, occupations=9)
    bad = validation_sim.records(
        validation_sim.simulate(np.random.default_rng(3), effect=-1.0, rankings=3, occupations=1)
    )
    bad = [replace(r, occupation="failing", task_id=f"failing-{r.task_id}") for r in bad]
    occ = report(good + bad, n_boot=500)["per_occupation"]
    assert occ["failing"]["difference"]["ci_high"] < 0
    assert occ["failing"]["n_annotators"] == 20 and occ["failing"]["n_rankings"] == 60
    assert all(f["difference"]["value"] > 0 for name, f in occ.items() if name != "failing")
    assert occ["failing"]["paired_t"]["q"] < 0.05


def test_groups_under_k_annotators_are_hidden_and_counted():
    sim = validation_sim.simulate(np.random.default_rng(4), effect=0.5)
    records = validation_sim.records(
        sim,
        groups={"age_band": ["18-24", "18-24", "18-24", "65+"], "gender": ["prefer not to say"]},
    )
    out = report(records, k=6, n_boot=100)
    groups = out["per_group"]
    assert "65+" not in groups["age_band"] and "65+" not in json.dumps(out)
    assert out["hidden_groups"] == {"age_band": 1, "gender": 0} and out["group_k"] == 6
    assert groups["age_band"]["18-24"]["n_annotators"] == 15
    assert groups["gender"] == {}  # "prefer not to say" forms no group
    assert report(records, k=5, n_boot=100)["per_group"]["age_band"]["65+"]["n_annotators"] == 5


def test_power_matches_the_textbook_sample_sizes_and_a_monte_carlo():
    # Cohen (1988): d = 0.5, alpha 0.05 two-sided, 80%: 34 pairs paired, 64 per group unpaired.
    assert power.paired(0.5, 20).n_needed == 34
    assert power.welch(0.5, 1.0, 1.0, 20).n_needed == 64
    assert power.paired(0.0, 20).n_needed is None
    rng = np.random.default_rng(0)
    p = stats.ttest_1samp(rng.normal(0.5, 1.0, (4000, 20)), 0, axis=1).pvalue
    ci = stats.binomtest(int((p < 0.05).sum()), 4000).proportion_ci()
    assert ci.low < power.paired(0.5, 20).achieved < ci.high


def test_simulated_rankings_are_plackett_luce():
    # Gumbel noise, two images: the treated one ranks higher with probability logistic(effect).
    sim = validation_sim.simulate(np.random.default_rng(0), effect=0.7, annotators=20000, k=2)
    share = (sim.treatment_ranks > sim.baseline_ranks).mean()
    assert share == pytest.approx(1 / (1 + np.exp(-0.7)), abs=0.01)
    null = validation_sim.simulate(np.random.default_rng(1), annotators=5000, k=6)
    assert null.treatment_ranks.mean() == pytest.approx(3.5, abs=0.02)


@pytest.mark.parametrize(
    "records, message",
    [
        (_ranking("A", "t1", (2,), (1,))[:1], "the records hold \\['optimised'\\]"),
        (_ranking("A", "t1", (2,), (1,)) + [ValidationRecord("A", "n", "t1", "x", 0, 2)], "'x'"),
        (_ranking("A", "t1", (4, 3), (2, 1))[:3], "positions \\[1, 2, 3\\]"),
        (_ranking("A", "t1", (4, 3), (2, 1))[:3] + _ranking("A", "t1", (1,), (), k=6), "disagree"),
        (_ranking("A", "t1", (4, 3, 2), (1,)), "equal numbers"),
        (_ranking("A", "t1", (2,), (1,)) + _ranking("A", "t2", (4, 3), (2, 1)), "K = \\[2, 4\\]"),
    ],
)
def test_bad_input_raises_a_clear_error(records, message):
    with pytest.raises(ValidationDataError, match=message):
        study(records)


def test_bad_records_and_parameters_are_refused():
    with pytest.raises(ValidationDataError, match="position 4 is not in 0..K-1 for K = 4"):
        ValidationRecord("A", "nurse", "t1", "optimised", 4, 4)
    assert issubclass(ValidationDataError, ValueError)
    one = _ranking("A", "t1", (2,), (1,))
    with pytest.raises(ValidationDataError, match="1 annotator"):
        report(one)
    records = _planted()
    with pytest.raises(ValidationDataError, match="n_boot must be >= 0"):
        report(records, n_boot=-1)
    with pytest.raises(ValidationDataError, match="k must be >= 1"):
        report(records, k=0, n_boot=0)
    flipped = [replace(records[0], group={"age_band": "65+"})] + records[1:]
    with pytest.raises(ValidationDataError, match="disagree on their group"):
        report(flipped, n_boot=0)
