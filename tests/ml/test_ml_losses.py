import math

import pytest
import torch

from training.ml.losses import djpo_loss, listwise_loss


def _hand_listwise(s, y, t):
    q = [math.exp(v / t) for v in y]
    q = [v / sum(q) for v in q]
    z = math.log(sum(math.exp(v / t) for v in s))
    return -sum(qi * (si / t - z) for qi, si in zip(q, s, strict=True))


def test_listwise_matches_hand_computation():
    s, y = [1.0, 2.0, 0.5], [0.0, 1.0, 0.5]
    got = listwise_loss(torch.tensor([s]), torch.tensor([y]), temperature=0.5)
    assert got.item() == pytest.approx(_hand_listwise(s, y, 0.5), rel=1e-6)


def test_temperature_applies_to_labels_too():
    s, y = [1.0, 2.0, 0.5], [0.0, 1.0, 0.5]
    got = listwise_loss(torch.tensor([s]), torch.tensor([y]), temperature=2.0)
    assert got.item() == pytest.approx(_hand_listwise(s, y, 2.0), rel=1e-6)
    # scaling labels by T only would give a different value
    assert got.item() != pytest.approx(_hand_listwise([v / 2 for v in s], y, 1.0), rel=1e-3)


def test_mean_over_lists_and_djpo_mse_over_real_items():
    lists = [([0.3, -0.2, 0.9], [0.0, 0.5, 1.0]), ([1.5, 0.1], [1.0, 0.0])]
    expected_list = sum(_hand_listwise(s, y, 0.5) for s, y in lists) / 2
    sq = [(a - b) ** 2 for s, y in lists for a, b in zip(s, y, strict=True)]
    expected = expected_list + 0.01 * sum(sq) / len(sq)
    pad = 1e6  # garbage in the padding must not matter
    scores = torch.tensor([lists[0][0], lists[1][0] + [pad]])
    labels = torch.tensor([lists[0][1], lists[1][1] + [-pad]])
    mask = torch.tensor([[True, True, True], [True, True, False]])
    assert listwise_loss(scores, labels, mask).item() == pytest.approx(expected_list, rel=1e-6)
    assert djpo_loss(scores, labels, mask).item() == pytest.approx(expected, rel=1e-6)


def test_padded_batch_equals_unpadded_lists_with_gradients():
    torch.manual_seed(0)
    a, b = torch.randn(5, requires_grad=True), torch.randn(3, requires_grad=True)
    ya, yb = torch.rand(5), torch.rand(3)
    separate = (
        listwise_loss(a[None], ya[None]) + listwise_loss(b[None], yb[None])
    ) / 2 + 0.01 * torch.cat([(a - ya) ** 2, (b - yb) ** 2]).mean()
    ga, gb = torch.autograd.grad(separate, [a, b])
    scores = torch.stack([a, torch.cat([b, torch.full((2,), 50.0)])])
    labels = torch.stack([ya, torch.cat([yb, torch.zeros(2)])])
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    padded = djpo_loss(scores, labels, mask)
    pa, pb = torch.autograd.grad(padded, [a, b])
    assert padded.item() == pytest.approx(separate.item(), rel=1e-6)
    assert torch.allclose(pa, ga, atol=1e-7) and torch.allclose(pb, gb, atol=1e-7)


def test_fully_masked_list_is_ignored_and_empty_batch_rejected():
    scores, labels = torch.tensor([[0.2, 0.7], [9.0, 9.0]]), torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    mask = torch.tensor([[True, True], [False, False]])
    assert listwise_loss(scores, labels, mask).item() == pytest.approx(
        _hand_listwise([0.2, 0.7], [0.0, 1.0], 0.5), rel=1e-6
    )
    with pytest.raises(ValueError):
        listwise_loss(scores, labels, torch.zeros_like(mask))


def test_stable_for_large_scores():
    scores = torch.tensor([[1e4, -1e4, 3e4]], requires_grad=True)
    loss = djpo_loss(scores, torch.tensor([[1.0, 0.0, 0.5]]))
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(scores.grad).all()


def test_shape_mismatch_rejected():
    with pytest.raises(ValueError):
        listwise_loss(torch.zeros(2, 3), torch.zeros(2, 2))


def test_weights_of_one_are_the_unweighted_loss():
    torch.manual_seed(1)
    scores, labels = torch.randn(3, 4), torch.rand(3, 4)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)
    ones = torch.ones(3, 4)
    assert djpo_loss(scores, labels, mask, weights=ones).item() == pytest.approx(
        djpo_loss(scores, labels, mask).item(), rel=1e-7
    )


def test_weighted_loss_hand_worked():
    """List weight = mean weight of its real items; not renormalised in the batch."""
    lists = [
        ([0.3, -0.2, 0.9], [0.0, 0.5, 1.0], [2.0, 2.0, 2.0]),
        ([1.5, 0.1], [1.0, 0.0], [0.5, 1.5]),
    ]
    n_items = 5
    expected = (
        sum((sum(w) / len(w)) * _hand_listwise(s, y, 0.5) for s, y, w in lists) / 2
        + 0.01
        * sum(wi * (a - b) ** 2 for s, y, w in lists for a, b, wi in zip(s, y, w, strict=True))
        / n_items
    )
    scores = torch.tensor([lists[0][0], lists[1][0] + [0.0]])
    labels = torch.tensor([lists[0][1], lists[1][1] + [0.0]])
    weights = torch.tensor([lists[0][2], lists[1][2] + [99.0]])  # padding's weight ignored
    mask = torch.tensor([[True, True, True], [True, True, False]])
    got = djpo_loss(scores, labels, mask, weights=weights)
    assert got.item() == pytest.approx(expected, rel=1e-6)


def test_a_list_of_weight_zero_gets_no_gradient():
    scores = torch.tensor([[0.3, -0.2, 0.9], [1.5, 0.1, 0.4]], requires_grad=True)
    labels = torch.tensor([[0.0, 0.5, 1.0], [1.0, 0.0, 0.5]])
    weights = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    (grad,) = torch.autograd.grad(djpo_loss(scores, labels, weights=weights), [scores])
    assert torch.all(grad[1] == 0) and torch.any(grad[0] != 0)


def test_bad_weights_are_refused():
    s, y = torch.rand(2, 3), torch.rand(2, 3)
    with pytest.raises(ValueError, match="weights must be finite and non-negative"):
        djpo_loss(s, y, weights=torch.tensor([[1.0, -1.0, 1.0], [1.0, 1.0, 1.0]]))
    with pytest.raises(ValueError, match=r"weights \(3,\) do not match scores \(2, 3\)"):
        djpo_loss(s, y, weights=torch.ones(3))
