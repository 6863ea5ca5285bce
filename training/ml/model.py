"""The reward model: the seed's architecture over a frozen encoder.

``score = fc(dropout(embedding)).squeeze(-1)``, ``Dropout(0.1)``, ``Linear(dim -> 1)``;
higher = more diverse. Only the head is a parameter of this module; the
encoder is held beside it, frozen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from training.ml.cache import EmbeddingCache
from training.ml.encoders.encoder import Encoder


class RewardModel(nn.Module):
    """Frozen encoder, ``Dropout``, ``Linear(dim, 1)``; state dict ``fc.weight``, ``fc.bias``."""

    def __init__(self, encoder: Encoder, dropout: float = 0.1) -> None:
        super().__init__()
        self.encoder = encoder  # a plain attribute: not part of the state dict
        self.fc = nn.Linear(encoder.identity.dim, 1)
        self.dropout = nn.Dropout(p=dropout)
        self.groups = None  # training.ml.group_heads.GroupHeads of a version trained with them

    def forward(self, embeddings: Tensor) -> Tensor:
        """``[n, dim]`` embeddings -> ``[n]`` scores."""
        return self.fc(self.dropout(embeddings)).squeeze(-1)

    def score(self, texts: Sequence[str], cache: EmbeddingCache | None = None) -> np.ndarray:
        """Scores of ``texts`` in eval mode: one batched encode (or cache lookup)."""
        return self.score_embeddings(self.embed(texts, cache))

    def embed(self, texts: Sequence[str], cache: EmbeddingCache | None = None) -> np.ndarray:
        """The frozen encoder's embeddings of ``texts`` (through ``cache`` when given)."""
        return cache.embed(self.encoder, texts) if cache else self.encoder.encode(texts)

    def score_groups(
        self, texts: Sequence[str], cache: EmbeddingCache | None = None, group: str | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``(scores, disagreement)`` from one encode: the pooled head's scores, or group
        ``group``'s (``KeyError`` for one it has no head for), and the spread of the group
        heads' scores (None for a version without group heads)."""
        emb = self.embed(texts, cache)
        scores = self.score_embeddings(emb)
        if self.groups is None:
            if group is not None:
                raise KeyError("this version has no group heads")
            return scores, None
        if group is not None:
            scores = scores + self.groups.offsets_for(emb)[self.groups.index(group)]
        return scores, self.groups.disagreement(emb).astype(np.float32)

    def score_embeddings(self, emb: np.ndarray) -> np.ndarray:
        """The pooled head on ``[n, dim]`` embeddings, in eval mode."""
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                out = self(torch.from_numpy(emb).to(self.fc.weight.device))
        finally:
            self.train(was_training)
        return out.float().cpu().numpy()
