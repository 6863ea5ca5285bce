"""The vectorised bootstraps (all draws at once) against the loop versions they replaced:
the same seeded draws give the same intervals; W, alpha and rho per draw or per block
equal scipy's and the ``krippendorff`` package's, computed one at a time."""

import krippendorff
import numpy as np
import pytest
from scipy import stats

from annotation.stats import bootstrap
from annotation.stats.agreement import (
    alpha_from_blocks,
    annotator_reliability,
    kendall_w,
    kendall_ws,
)
from annotation.stats.bootstrap import cluster_bootstrap, count_bootstrap, resampled_counts
from annotation.stats.records import RankingRecord, rank_matrix, shared_tasks


def study(seed, n_tasks=40, sizes=(4, 6), per_task=(2, 3, 4)):
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_tasks):
        k, m = int(rng.choice(sizes)), int(rng.choice(per_task))
        truth = rng.normal(0, 1, k)
        for a in rng.choice(15, m, replace=False):
            order = np.argsort(truth + rng.normal(0, 1.5, k))
            out.append(RankingRecord(t, f"a{a}", "nurse", tuple(f"t{t}i{i}" for i in order)))
    return out


def blocks_of(records):
    return [np.asarray(rank_matrix(rs)[1], dtype=float) for rs in shared_tasks(records).values()]


def test_counts_are_the_loop_versions_draws():
    rows = np.random.default_rng(7).integers(0, 9, size=(50, 9))
    (counts,) = resampled_counts(9, 50, 7)
    assert counts.shape == (50, 9) and (counts.sum(axis=1) == 9).all()
    for row, c in zip(rows, counts, strict=True):
        assert (np.bincount(row, minlength=9) == c).all()


def test_count_bootstrap_equals_cluster_bootstrap_on_a_seeded_mean():
    rng = np.random.default_rng(3)
    clusters = [list(rng.normal(size=int(rng.integers(1, 6)))) for _ in range(25)]
    loop = cluster_bootstrap(
        clusters, lambda drawn: float(np.mean([x for c in drawn for x in c])), n_boot=400, seed=5
    )
    sums = np.array([sum(c) for c in clusters])
    sizes = np.array([len(c) for c in clusters], dtype=float)
    fast = count_bootstrap(25, loop.value, lambda w: (w @ sums) / (w @ sizes), n_boot=400, seed=5)
    assert (fast.ci_low, fast.ci_high) == pytest.approx((loop.ci_low, loop.ci_high), abs=1e-12)


def test_past_max_cells_the_draws_come_in_blocks_of_the_same_distribution(monkeypatch):
    monkeypatch.setattr(bootstrap, "MAX_CELLS", 40)
    parts = list(resampled_counts(10, 23, 1))
    assert [p.shape for p in parts] == [(4, 10)] * 5 + [(3, 10)]
    assert all((p.sum(axis=1) == 10).all() for p in parts)


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_interval_equals_krippendorff_per_draw(level):
    blocks = blocks_of(study(11))
    fast = alpha_from_blocks(blocks, level, n_boot=200, seed=2)
    values = [(b - 1) / (b.shape[1] - 1) for b in blocks]
    domain = np.unique(np.concatenate([v.ravel() for v in values]))

    def table(v):
        t = np.zeros((v.shape[1], domain.size))
        for row in v:
            t[np.arange(v.shape[1]), np.searchsorted(domain, row)] += 1
        return t

    def alpha(drawn):
        return krippendorff.alpha(
            value_counts=np.vstack(drawn), value_domain=domain, level_of_measurement=level
        )

    loop = cluster_bootstrap([table(v) for v in values], alpha, n_boot=200, seed=2)
    assert fast.value == pytest.approx(loop.value, abs=1e-12)
    assert (fast.ci_low, fast.ci_high) == pytest.approx((loop.ci_low, loop.ci_high), abs=1e-9)


def test_stacked_w_equals_one_at_a_time_with_ties():
    rng = np.random.default_rng(4)
    blocks = [
        rng.integers(0, 3, size=(int(rng.integers(2, 5)), 5)).astype(float) for _ in range(30)
    ]
    blocks += blocks_of(study(1))
    expected = [kendall_w(b).w for b in blocks]
    assert kendall_ws(blocks) == pytest.approx(expected, abs=1e-12, nan_ok=True)


def test_reliability_equals_scipys_spearmanr_one_task_at_a_time():
    records = study(9)
    rhos = {}
    for rs in shared_tasks(records).values():
        block = np.asarray(rank_matrix(rs)[1], dtype=float)
        for j, r in enumerate(rs):
            consensus = (block.sum(axis=0) - block[j]) / (len(rs) - 1)
            if np.ptp(consensus) > 0:
                rho = stats.spearmanr(block[j], consensus).statistic
                rhos.setdefault(r.annotator, []).append(rho)
    got = annotator_reliability(records)
    for a, values in rhos.items():
        assert got[a].rho == pytest.approx(np.mean(values), abs=1e-12)
        assert got[a].n_tasks == len(values)
