"""The DJ-PO loss: a listwise ranking loss plus a small MSE term.

Shapes: ``scores``, ``labels`` and ``mask`` are ``[lists, items]`` (a 1-D input is
one list); ``mask`` is True where an item is real, so lists of different lengths
are padded to one tensor. Lists with no real item are ignored.

Weights (balanced runs, ``training/snapshots/steering.py``): ``weights`` ``[lists, items]``
are importance weights with mean 1 over the training set. An item's weight
multiplies its MSE term; a list's weight ``W_l`` (the mean weight of its real
items) multiplies its listwise term:
``L = sum_l W_l * L_list_l / n_lists + alpha * sum_i w_i * (s_i - y_i)^2 / n_items``.
Not renormalised within a batch, so that over an epoch each example counts in
proportion to its weight (with one list per batch a per-batch mean would cancel
them). Without weights (all 1) this is the unweighted loss exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _prepare(scores: Tensor, labels: Tensor, mask: Tensor | None, weights: Tensor | None = None):
    if scores.shape != labels.shape:
        raise ValueError(f"scores {tuple(scores.shape)} and labels {tuple(labels.shape)} differ")
    if weights is not None and weights.shape != scores.shape:
        raise ValueError(
            f"weights {tuple(weights.shape)} do not match scores {tuple(scores.shape)}"
        )
    if scores.dim() == 1:
        scores, labels = scores.unsqueeze(0), labels.unsqueeze(0)
        mask = None if mask is None else mask.unsqueeze(0)
        weights = None if weights is None else weights.unsqueeze(0)
    if scores.dim() != 2:
        raise ValueError(f"expected [lists, items], got {tuple(scores.shape)}")
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    mask = mask.to(dtype=torch.bool, device=scores.device)
    if mask.shape != scores.shape:
        raise ValueError(f"mask {tuple(mask.shape)} does not match scores {tuple(scores.shape)}")
    labels = labels.to(dtype=scores.dtype, device=scores.device)
    keep = mask.any(dim=1)
    if not keep.any():
        raise ValueError("no real item in the batch")
    if weights is None:
        return scores[keep], labels[keep], mask[keep], None
    weights = weights.to(dtype=scores.dtype, device=scores.device)
    if (weights[mask] < 0).any() or not torch.isfinite(weights[mask]).all():
        raise ValueError("weights must be finite and non-negative")
    return scores[keep], labels[keep], mask[keep], weights[keep]


def listwise_loss(
    scores: Tensor,
    labels: Tensor,
    mask: Tensor | None = None,
    temperature: float = 0.5,
    weights: Tensor | None = None,
) -> Tensor:
    """Mean over lists of ``L = -sum_i softmax(y / T)_i * log softmax(s / T)_i``
    (each list's term times its weight ``W_l`` when ``weights`` are given).

    Softmaxes run over the real items of each list only; the log-softmax keeps it
    stable for large scores. Returns a scalar.
    """
    scores, labels, mask, weights = _prepare(scores, labels, mask, weights)
    neg_inf = torch.finfo(scores.dtype).min
    log_p = torch.log_softmax((scores / temperature).masked_fill(~mask, neg_inf), dim=1)
    q = torch.softmax((labels / temperature).masked_fill(~mask, neg_inf), dim=1)
    per_list = -(q * log_p).masked_fill(~mask, 0.0).sum(dim=1)
    if weights is None:
        return per_list.mean()
    list_weight = weights.masked_fill(~mask, 0.0).sum(dim=1) / mask.sum(dim=1)
    return (list_weight * per_list).mean()


def djpo_loss(
    scores: Tensor,
    labels: Tensor,
    mask: Tensor | None = None,
    temperature: float = 0.5,
    alpha: float = 0.01,
    weights: Tensor | None = None,
) -> Tensor:
    """``listwise_loss(s, y) + alpha * mean((s - y)^2)``, the mean over real items only
    (each item's square times its weight when ``weights`` are given)."""
    listwise = listwise_loss(scores, labels, mask, temperature, weights)
    scores, labels, mask, weights = _prepare(scores, labels, mask, weights)
    squares = (scores - labels) ** 2
    if weights is not None:
        squares = weights * squares
    return listwise + alpha * squares[mask].mean()
