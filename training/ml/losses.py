"""The DJ-PO loss: a listwise ranking loss plus a small MSE term.

Shapes: ``scores``, ``labels`` and ``mask`` are ``[lists, items]`` (a 1-D input is
one list); ``mask`` is True where an item is real, so lists of different lengths
are padded to one tensor. Lists with no real item are ignored.
"""

from __future__ import annotations

import torch
from torch import Tensor


def _prepare(scores: Tensor, labels: Tensor, mask: Tensor | None):
    if scores.shape != labels.shape:
        raise ValueError(f"scores {tuple(scores.shape)} and labels {tuple(labels.shape)} differ")
    if scores.dim() == 1:
        scores, labels = scores.unsqueeze(0), labels.unsqueeze(0)
        mask = None if mask is None else mask.unsqueeze(0)
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
    return scores[keep], labels[keep], mask[keep]


def listwise_loss(
    scores: Tensor, labels: Tensor, mask: Tensor | None = None, temperature: float = 0.5
) -> Tensor:
    """Mean over lists of ``L = -sum_i softmax(y / T)_i * log softmax(s / T)_i``.

    Softmaxes run over the real items of each list only; the log-softmax keeps it
    stable for large scores. Returns a scalar.
    """
    scores, labels, mask = _prepare(scores, labels, mask)
    neg_inf = torch.finfo(scores.dtype).min
    log_p = torch.log_softmax((scores / temperature).masked_fill(~mask, neg_inf), dim=1)
    q = torch.softmax((labels / temperature).masked_fill(~mask, neg_inf), dim=1)
    per_list = -(q * log_p).masked_fill(~mask, 0.0).sum(dim=1)
    return per_list.mean()


def djpo_loss(
    scores: Tensor,
    labels: Tensor,
    mask: Tensor | None = None,
    temperature: float = 0.5,
    alpha: float = 0.01,
) -> Tensor:
    """``listwise_loss(s, y) + alpha * mean((s - y)^2)``, the mean over real items only."""
    listwise = listwise_loss(scores, labels, mask, temperature)
    scores, labels, mask = _prepare(scores, labels, mask)
    mse = ((scores - labels) ** 2)[mask].mean()
    return listwise + alpha * mse
