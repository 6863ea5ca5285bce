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

    def forward(self, embeddings: Tensor) -> Tensor:
        """``[n, dim]`` embeddings -> ``[n]`` scores."""
        return self.fc(self.dropout(embeddings)).squeeze(-1)

    def score(self, texts: Sequence[str], cache: EmbeddingCache | None = None) -> np.ndarray:
        """Scores of ``texts`` in eval mode: one batched encode (or cache lookup)."""
        emb = cache.embed(self.encoder, texts) if cache else self.encoder.encode(texts)
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                out = self(torch.from_numpy(emb).to(self.fc.weight.device))
        finally:
            self.train(was_training)
        return out.float().cpu().numpy()
