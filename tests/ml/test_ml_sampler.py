"""The active sampler: Plackett-Luce Fisher information, Laplace precision, D-optimal picks.

The references are independent of the module's covariance formula: the Fisher
information is ``E[g g^T]`` over all K! orders, ``g`` the gradient of the
log-likelihood taken by torch autograd; the precision is autograd's Hessian.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from training.ml.errors import MLError
from training.ml.sampler import (
    Candidate,
    SamplerError,
    d_optimal_priorities,
    laplace_precision,
    pl_fisher,
    pl_kernel,
)


def _log_likelihood(x: torch.Tensor, w: torch.Tensor, draw_order, t: float) -> torch.Tensor:
    """log P(draw order) = sum_j u_{pi_j} - logsumexp(u_{pi_j..}), u = X w / T."""
    u = (x @ w / t)[list(draw_order)]
    return sum(u[j] - torch.logsumexp(u[j:], 0) for j in range(len(draw_order) - 1))


def _brute_force_fisher(x: np.ndarray, w: np.ndarray, t: float) -> tuple[np.ndarray, float]:
    """sum over all K! orders of P(pi) g g^T, g = d log P / dw by autograd; and sum P(pi)."""
    xt = torch.tensor(x, dtype=torch.float64)
    fisher, total = np.zeros((x.shape[1], x.shape[1])), 0.0
    for order in itertools.permutations(range(x.shape[0])):
        wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
        ll = _log_likelihood(xt, wt, order, t)
        (g,) = torch.autograd.grad(ll, wt)
        p = float(torch.exp(ll.detach()))
        fisher += p * np.outer(g.numpy(), g.numpy())
        total += p
    return fisher, total


def test_fisher_matches_brute_force_score_outer_product_on_a_hand_sized_case():
    x = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, 0.5]])  # K = 3, d = 2
    w = np.array([0.7, -0.4])
    expected, total = _brute_force_fisher(x, w, 0.5)
    assert total == pytest.approx(1.0, abs=1e-12)  # the 6 orders are all there is
    np.testing.assert_allclose(pl_fisher(x, w, temperature=0.5), expected, rtol=1e-10, atol=1e-12)
    # the utilities are X w / T and the information about w scales as 1 / T^2
    np.testing.assert_allclose(
        pl_fisher(x, 2 * w, temperature=1.0) * 4, pl_fisher(x, w, temperature=0.5), rtol=1e-12
    )


def test_subset_recursion_equals_the_enumeration_over_720_orders():
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(6, 4)), rng.normal(size=4)
    expected, _ = _brute_force_fisher(x, w, 0.5)
    np.testing.assert_allclose(pl_fisher(x, w), expected, rtol=1e-9, atol=1e-12)


def test_kernel_rows_sum_to_zero_so_the_bias_carries_no_information():
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(5, 3)), rng.normal(size=3)
    a = pl_kernel((x @ w)[None])[0]
    np.testing.assert_allclose(a.sum(axis=1), 0.0, atol=1e-12)
    # a bias column of ones is invisible: its row and column of the Fisher are zero
    with_bias = np.hstack([x, np.ones((5, 1))])
    f = pl_fisher(with_bias, np.append(w, 3.0))
    np.testing.assert_allclose(f[:, -1], 0.0, atol=1e-12)
    assert np.linalg.matrix_rank(pl_fisher(rng.normal(size=(3, 6)), rng.normal(size=6))) == 2


def test_laplace_precision_is_prior_plus_the_hessian_of_the_observed_rankings():
    rng = np.random.default_rng(5)
    emb, w = rng.normal(size=(9, 3)), rng.normal(size=3)
    rankings = [[0, 1, 2, 3, 4, 5], [8, 2, 6, 7, 0, 3], [4, 1, 8], [7]]  # stored order
    got = laplace_precision(rankings, emb, w, prior=2.0, temperature=0.5)
    xt = torch.tensor(emb)

    def nll(wt):
        # the stored order is most stereotypical first: the draw order is its reverse
        return -sum(_log_likelihood(xt, wt, r[::-1], 0.5) for r in rankings if len(r) > 1)

    hessian = torch.autograd.functional.hessian(nll, torch.tensor(w)).numpy()
    np.testing.assert_allclose(got, hessian + 2.0 * np.eye(3), rtol=1e-10)
    # a matrix prior is added as it is
    prior = np.diag([1.0, 2.0, 3.0])
    np.testing.assert_allclose(
        laplace_precision(rankings, emb, w, prior=prior), hessian + prior, rtol=1e-10
    )


def _tasks(rng, n, k=6, d=4, occupation="nurse"):
    return [Candidate(rng.normal(size=(k, d)), occupation) for _ in range(n)]


def test_gains_equal_the_log_det_difference_computed_directly():
    rng = np.random.default_rng(6)
    d = 5
    tasks = _tasks(rng, 7, d=d)
    w = rng.normal(size=d)
    root = rng.normal(size=(d, d))
    precision = root @ root.T + np.eye(d)
    got = d_optimal_priorities(tasks, precision, w, batch=0, exploration=0.0).gain
    base = np.linalg.slogdet(precision)[1]
    expected = [np.linalg.slogdet(precision + pl_fisher(t.embeddings, w))[1] - base for t in tasks]
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_greedy_batch_moves_past_a_duplicate_of_the_task_already_handed_out():
    e1 = np.array([[3.0, 0.0], [0.0, 0.0], [-3.0, 0.0]])
    e2 = np.array([[0.0, 2.6], [0.0, 0.0], [0.0, -2.6]])
    tasks = [Candidate(e1, "a"), Candidate(e1.copy(), "a"), Candidate(e2, "a")]
    w, precision = np.zeros(2), np.eye(2)
    by_gain = d_optimal_priorities(tasks, precision, w, batch=0, exploration=0.0)
    assert by_gain.gain[0] == by_gain.gain[1] > by_gain.gain[2]  # ungreedy: the duplicate next
    assert list(np.argsort(-by_gain.priority, kind="stable")) == [0, 1, 2]
    greedy = d_optimal_priorities(tasks, precision, w, batch=2, exploration=0.0)
    assert list(np.argsort(-greedy.priority)) == [0, 2, 1]


def test_a_batch_of_every_task_hands_each_out_once():
    rng = np.random.default_rng(7)
    tasks = _tasks(rng, 12)
    got = d_optimal_priorities(tasks, np.eye(4), rng.normal(size=4), batch=12, exploration=0.2)
    assert sorted(got.priority.tolist()) == list(range(1, 13))
    assert got.explored.sum() == 2  # floor(12 * 0.2)


def test_exploration_covers_every_occupation_within_its_share():
    rng = np.random.default_rng(8)
    big = [Candidate(5 * rng.normal(size=(6, 4)), "ceo") for _ in range(10)]
    small = [Candidate(0.01 * rng.normal(size=(6, 4)), f"occ{i}") for i in range(4) for _ in (0, 1)]
    tasks, w = big + small, rng.normal(size=4)
    top = lambda got: {tasks[i].occupation for i in np.argsort(-got.priority)[:10]}  # noqa: E731
    without = d_optimal_priorities(tasks, np.eye(4), w, batch=10, exploration=0.0)
    assert top(without) == {"ceo"}  # the gain alone never leaves the big tasks
    got = d_optimal_priorities(tasks, np.eye(4), w, batch=10, exploration=0.5)
    assert top(got) == {"ceo", "occ0", "occ1", "occ2", "occ3"}
    assert got.explored.sum() == 5
    # an occupation already well covered is not where exploration goes first
    covered = d_optimal_priorities(
        tasks, np.eye(4), w, batch=4, exploration=0.25, coverage={"ceo": 0, "occ0": 9}
    )
    (explored,) = np.flatnonzero(covered.explored)
    assert tasks[explored].occupation in {"occ1", "occ2", "occ3"}


def test_same_seed_same_priorities():
    rng = np.random.default_rng(9)
    tasks = [Candidate(rng.normal(size=(6, 4)), f"o{i % 5}") for i in range(30)]
    w = rng.normal(size=4)
    runs = [
        d_optimal_priorities(tasks, np.eye(4), w, batch=10, exploration=0.5, rng=s).priority
        for s in (1, 1, 2, 3, 4)
    ]
    np.testing.assert_array_equal(runs[0], runs[1])
    assert any(not np.array_equal(runs[0], r) for r in runs[2:])  # the seed is used


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: pl_fisher(np.ones((3, 2)), np.ones(3)), "d = 2"),
        (lambda: pl_fisher(np.ones((3, 2)), np.ones(2), temperature=0), "temperature"),
        (lambda: pl_kernel(np.zeros((1, 13))), "K = 13"),
        (lambda: laplace_precision([[0, 0, 1]], np.ones((3, 2)), np.ones(2)), "twice"),
        (lambda: laplace_precision([[0, 5]], np.ones((3, 2)), np.ones(2)), "outside"),
        (lambda: laplace_precision([[0, 1]], np.ones((3, 2)), np.ones(2), prior=0), "prior"),
        (
            lambda: d_optimal_priorities(
                [Candidate(np.ones((3, 2)), "a")], -np.eye(2), np.ones(2), batch=1
            ),
            "positive definite",
        ),
        (
            lambda: d_optimal_priorities(
                [Candidate(np.ones((3, 2)), "a"), Candidate(np.ones((4, 2)), "a")],
                np.eye(2),
                np.ones(2),
                batch=1,
            ),
            "same",
        ),
        (
            lambda: d_optimal_priorities([], np.eye(2), np.ones(2), batch=1, exploration=1.5),
            "exploration",
        ),
        (lambda: d_optimal_priorities([], np.eye(2), np.ones(2), batch=-1), "batch"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(call, message):
    with pytest.raises(SamplerError, match=message) as caught:
        call()
    assert isinstance(caught.value, MLError) and isinstance(caught.value, ValueError)
