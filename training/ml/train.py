"""Train the reward model's head on cached embeddings (a recipe of ``training.ml.recipes``).

Each distinct text (train and eval) is embedded once, through the cache, in one
batched call; the epochs then run on the embedding tensor. Each step is one
batch of ``occupations_per_batch`` lists, a list being all the training items
of one occupation (the seed's grouping: one occupation per batch); the order of
occupations is shuffled every epoch by a generator seeded with ``seed``.
AdamW, then ``CosineAnnealingLR(T_max=epochs)`` stepped once per epoch.
``on_epoch`` gets each epoch's loss and eval metrics (a progress bar);
``should_stop`` returning True between two steps cancels the run
(``TrainingCancelled``). The global torch RNG (head initialisation, dropout) is
seeded with ``seed`` inside ``torch.random.fork_rng``, so runs are reproducible
on CPU and the caller's RNG state is left untouched.

``embedding_mode="reencode"`` is the seed's way, kept to measure against: every
step re-encodes its batch's texts through the encoder (as the model card's
``forward`` does), and every evaluation re-encodes the eval texts. It draws the
same random numbers in the same order, so it reaches the same weights up to the
float noise of encoding texts in different batches.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import torch

from training.ml.cache import EmbeddingCache
from training.ml.encoders.encoder import Encoder, pick_device
from training.ml.errors import MLError
from training.ml.losses import djpo_loss
from training.ml.metrics import evaluate
from training.ml.model import RewardModel
from training.ml.recipes import RECIPES, SEED, recipe

_SEED = RECIPES[SEED]


@dataclass
class TrainConfig:
    """The seed recipe's hyper-parameters as defaults; ``n_boot`` is for the final evaluation.

    ``recipe`` names the recipe the values started from (``from_recipe``); overrides
    show in the values themselves.
    """

    epochs: int = _SEED["epochs"]
    lr: float = _SEED["lr"]
    weight_decay: float = _SEED["weight_decay"]
    temperature: float = _SEED["temperature"]
    alpha: float = _SEED["alpha"]
    dropout: float = _SEED["dropout"]
    seed: int = 0
    occupations_per_batch: int = _SEED["occupations_per_batch"]
    device: str = "auto"
    n_boot: int = 1000
    recipe: str = SEED

    @classmethod
    def from_recipe(cls, name: str, **overrides) -> TrainConfig:
        """Recipe ``name``'s values with ``overrides`` on top; ``ValueError`` if unknown."""
        return cls(**{**recipe(name), **overrides, "recipe": name})

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first hyper-parameter out of its range."""
        checks = {
            "epochs": self.epochs >= 1,
            "lr": math.isfinite(self.lr) and self.lr > 0,
            "weight_decay": math.isfinite(self.weight_decay) and self.weight_decay >= 0,
            "temperature": math.isfinite(self.temperature) and self.temperature > 0,
            "alpha": math.isfinite(self.alpha) and self.alpha >= 0,
            "dropout": 0 <= self.dropout < 1,
            "occupations_per_batch": self.occupations_per_batch >= 1,
            "n_boot": self.n_boot >= 0,
            "recipe": self.recipe in RECIPES,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"{name}={getattr(self, name)!r} is out of range")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class EpochReport:
    epoch: int
    epochs: int
    loss: float
    eval_metrics: dict | None


@dataclass
class TrainResult:
    model: RewardModel
    history: list[EpochReport]
    metrics: dict | None
    encode_calls: int
    texts_encoded: int


class TrainingCancelled(MLError):
    """``should_stop`` returned True between two steps."""


def occupation_lists(occupations: Sequence[str]) -> list[list[int]]:
    """The indices of each occupation's items, occupations in sorted order (the loss's lists)."""
    by_occ: dict[str, list[int]] = {}
    for i, occupation in enumerate(occupations):
        by_occ.setdefault(occupation, []).append(i)
    return [by_occ[o] for o in sorted(by_occ)]


def padded(lists: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``lists`` of indices as one ``[lists, width]`` index tensor and its mask of real items."""
    width = max(len(x) for x in lists)
    idx = torch.zeros((len(lists), width), dtype=torch.long)
    mask = torch.zeros((len(lists), width), dtype=torch.bool)
    for r, items in enumerate(lists):
        idx[r, : len(items)] = torch.tensor(items)
        mask[r, : len(items)] = True
    return idx, mask


def train(
    train_examples: Sequence,
    encoder: Encoder,
    config: TrainConfig | None = None,
    *,
    eval_examples: Sequence | None = None,
    cache: EmbeddingCache | None = None,
    on_epoch: Callable[[EpochReport], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    embedding_mode: Literal["cached", "reencode"] = "cached",
) -> TrainResult:
    """Train a ``RewardModel`` head; see the module doc for the recipe."""
    config = config or TrainConfig()
    config.validate()
    if not train_examples:
        raise ValueError("no training examples")
    device = pick_device(config.device)
    calls0, texts0 = encoder.encode_calls, encoder.texts_encoded
    eval_examples = list(eval_examples or [])
    train_texts = [e.text for e in train_examples]
    eval_texts = [e.text for e in eval_examples]
    labels = torch.tensor([e.label for e in train_examples], dtype=torch.float32, device=device)
    weights = None  # the unweighted loss exactly, unless some example weighs other than 1
    if any(e.weight != 1.0 for e in train_examples):
        weights = torch.tensor(
            [e.weight for e in train_examples], dtype=torch.float32, device=device
        )

    if embedding_mode == "cached":
        distinct = list(dict.fromkeys(train_texts + eval_texts))
        vectors = cache.embed(encoder, distinct) if cache else encoder.encode(distinct)
        table = torch.from_numpy(vectors).to(device)
        row = {t: i for i, t in enumerate(distinct)}
        train_table = table[torch.tensor([row[t] for t in train_texts], device=device)]
        eval_rows = torch.tensor([row[t] for t in eval_texts], dtype=torch.long, device=device)

        def batch_embeddings(idx: torch.Tensor) -> torch.Tensor:
            return train_table[idx.to(device)]

        def eval_embeddings() -> torch.Tensor:
            return table[eval_rows]
    elif embedding_mode == "reencode":

        def batch_embeddings(idx: torch.Tensor) -> torch.Tensor:
            flat = encoder.encode([train_texts[i] for i in idx.flatten().tolist()])
            return torch.from_numpy(flat).to(device).reshape(*idx.shape, -1)

        def eval_embeddings() -> torch.Tensor:
            return torch.from_numpy(encoder.encode(eval_texts)).to(device)
    else:
        raise ValueError(f"unknown embedding_mode {embedding_mode!r}")

    def eval_metrics(model: RewardModel, n_boot: int) -> dict | None:
        if not eval_examples:
            return None
        model.eval()
        with torch.no_grad():
            pred = model(eval_embeddings()).cpu().numpy()
        model.train()
        return evaluate(
            pred,
            np.array([e.label for e in eval_examples]),
            [e.group for e in eval_examples],
            [e.occupation for e in eval_examples],
            n_boot=n_boot,
            seed=config.seed,
        )

    lists = occupation_lists([e.occupation for e in train_examples])
    per_batch = config.occupations_per_batch
    fork_devices = [torch.device(device)] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=fork_devices, device_type="cuda"):
        torch.manual_seed(config.seed)
        order_rng = torch.Generator().manual_seed(config.seed)
        model = RewardModel(encoder, dropout=config.dropout).to(device)
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
        history = []
        model.train()
        for epoch in range(1, config.epochs + 1):
            order = torch.randperm(len(lists), generator=order_rng).tolist()
            losses = []
            for start in range(0, len(order), per_batch):
                if should_stop is not None and should_stop():
                    raise TrainingCancelled(f"stopped in epoch {epoch}")
                idx, mask = padded([lists[j] for j in order[start : start + per_batch]])
                mask = mask.to(device)
                scores = model(batch_embeddings(idx))
                loss = djpo_loss(
                    scores,
                    labels[idx.to(device)],
                    mask,
                    temperature=config.temperature,
                    alpha=config.alpha,
                    weights=None if weights is None else weights[idx.to(device)],
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            scheduler.step()
            report = EpochReport(
                epoch, config.epochs, float(np.mean(losses)), eval_metrics(model, 0)
            )
            history.append(report)
            if on_epoch is not None:
                on_epoch(report)
        model.eval()
        final = eval_metrics(model, config.n_boot)
        model.eval()
    return TrainResult(
        model=model,
        history=history,
        metrics=final,
        encode_calls=encoder.encode_calls - calls0,
        texts_encoded=encoder.texts_encoded - texts0,
    )
