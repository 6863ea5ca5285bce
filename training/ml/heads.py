"""Many heads trained at once on cached embeddings: one batch of configurations.

``train_heads`` trains H ``Linear(d -> 1)`` heads, one per configuration (lr,
epochs, alpha, temperature, weight decay), exactly as ``training.ml.train``
trains one: the same seed gives every head the same initialisation (a
``RewardModel``'s, drawn after ``torch.manual_seed(seed)``), the same order of
occupations each epoch and the same dropout mask each step, because none of
them depends on the configuration. So one dropout draw per step serves all
heads; the scores are ``[H, lists, items]``; each head's DJ-PO loss uses its own
temperature and alpha (the loss of ``training.ml.losses``, batched over heads);
the heads' losses are summed, so one backward pass gives every head its own
gradient; AdamW (torch's update, written for a batch of heads with a learning
rate and weight decay each) steps them all; a head's cosine schedule runs over
its own epochs, and a head whose epochs are done stops moving (its learning rate
is 0), so at the end each holds the weights the one-head trainer would return,
up to float noise (checked in ``tests/ml/test_ml_search.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional

from training.ml.train import TrainingCancelled, occupation_lists, padded

BETAS = (0.9, 0.999)  # torch.optim.AdamW's defaults, as the one-head trainer uses them
EPS = 1e-8


def batched_djpo_loss(
    scores: Tensor,
    labels: Tensor,
    mask: Tensor,
    temperature: Tensor,
    alpha: Tensor,
    weights: Tensor | None = None,
) -> Tensor:
    """``djpo_loss`` of each head: scores ``[H, lists, items]``, labels/mask/weights
    ``[lists, items]``, temperature and alpha ``[H]``; returns ``[H]``.

    Every list must hold at least one real item (``occupation_lists`` makes no empty one).
    """
    t = temperature[:, None, None]
    neg_inf = torch.finfo(scores.dtype).min
    log_p = torch.log_softmax((scores / t).masked_fill(~mask, neg_inf), dim=-1)
    q = torch.softmax((labels / t).masked_fill(~mask, neg_inf), dim=-1)
    per_list = -(q * log_p).masked_fill(~mask, 0.0).sum(dim=-1)  # [H, lists]
    squares = (scores - labels) ** 2
    if weights is not None:
        list_weight = weights.masked_fill(~mask, 0.0).sum(dim=-1) / mask.sum(dim=-1)
        per_list = per_list * list_weight
        squares = squares * weights
    mse = squares.masked_fill(~mask, 0.0).sum(dim=(-2, -1)) / mask.sum()
    return per_list.mean(dim=-1) + alpha * mse


def cosine_lr(lr: Tensor, epochs: Tensor, epoch: int) -> Tensor:
    """``CosineAnnealingLR(T_max=epochs)``'s rate in 0-based ``epoch``; 0 once a head is done."""
    rate = lr * (1 + torch.cos(math.pi * epoch / epochs)) / 2
    return torch.where(epoch < epochs, rate, torch.zeros_like(rate))


def train_heads(
    embeddings: Tensor,
    labels: Tensor,
    occupations: Sequence[str],
    configs: Sequence[dict],
    *,
    weights: Tensor | None = None,
    seed: int = 0,
    dropout: float = 0.1,
    occupations_per_batch: int = 1,
    on_epoch: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[Tensor, Tensor]:
    """Train one head per config on ``embeddings`` ``[n, d]``; returns ``(W [H, d], b [H])``.

    ``configs``: dicts with ``lr``, ``epochs``, ``alpha``, ``temperature`` and
    ``weight_decay``. ``on_epoch(epoch, epochs)`` after each epoch (up to the
    longest head's); ``should_stop()`` True between two steps raises
    ``TrainingCancelled``. The caller's RNG state is left untouched.
    """
    if not configs:
        raise ValueError("no configurations to train")
    device, dtype = embeddings.device, embeddings.dtype

    def column(key: str) -> Tensor:
        return torch.tensor([float(c[key]) for c in configs], dtype=dtype, device=device)

    lr, epochs, wd = column("lr"), column("epochs"), column("weight_decay")
    temperature, alpha = column("temperature"), column("alpha")
    n_epochs = int(epochs.max().item())
    lists = occupation_lists(occupations)
    fork_devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=fork_devices, device_type="cuda"):
        torch.manual_seed(seed)
        order_rng = torch.Generator().manual_seed(seed)
        first = nn.Linear(embeddings.shape[1], 1)  # the one-head trainer's initialisation
        w = first.weight.detach().to(device, dtype).repeat(len(configs), 1).requires_grad_()
        b = first.bias.detach().to(device, dtype).repeat(len(configs)).requires_grad_()
        state = {p: (torch.zeros_like(p), torch.zeros_like(p)) for p in (w, b)}
        step = 0
        for epoch in range(n_epochs):
            rate = cosine_lr(lr, epochs, epoch)
            order = torch.randperm(len(lists), generator=order_rng).tolist()
            for start in range(0, len(order), occupations_per_batch):
                if should_stop is not None and should_stop():
                    raise TrainingCancelled(f"stopped in epoch {epoch + 1}")
                idx, mask = padded([lists[j] for j in order[start : start + occupations_per_batch]])
                idx, mask = idx.to(device), mask.to(device)
                x = functional.dropout(embeddings[idx], dropout, training=True)
                scores = (x.reshape(-1, x.shape[-1]) @ w.T).T.reshape(-1, *idx.shape)
                scores = scores + b[:, None, None]
                loss = batched_djpo_loss(
                    scores,
                    labels[idx],
                    mask,
                    temperature,
                    alpha,
                    None if weights is None else weights[idx],
                ).sum()
                w.grad = b.grad = None
                loss.backward()
                step += 1
                with torch.no_grad():
                    _adamw_step(w, b, state, rate, wd, step)
            if on_epoch is not None:
                on_epoch(epoch + 1, n_epochs)
    return w.detach(), b.detach()


def _adamw_step(w: Tensor, b: Tensor, state: dict, rate: Tensor, wd: Tensor, step: int) -> None:
    """torch's AdamW update with a learning rate and weight decay per head."""
    beta1, beta2 = BETAS
    bias1, bias2 = 1 - beta1**step, math.sqrt(1 - beta2**step)
    for p, per_head in ((w, rate[:, None]), (b, rate)):
        decay = (wd * rate)[:, None] if p.dim() == 2 else wd * rate
        m, v = state[p]
        p.mul_(1 - decay)
        m.lerp_(p.grad, 1 - beta1)
        v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
        p.sub_(per_head / bias1 * m / (v.sqrt() / bias2 + EPS))
