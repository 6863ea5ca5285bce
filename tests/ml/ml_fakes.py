"""Encoder stand-ins for the reward-model tests."""

from __future__ import annotations

import hashlib

import numpy as np

from training.ml.encoders.identity import EncoderIdentity


class CountingEncoder:
    """Wraps an encoder and records every call and what it returned, to count encoding work."""

    def __init__(self, inner):
        self.inner = inner
        self.identity = inner.identity
        self.model = inner.model
        self.device = inner.device
        self.calls: list[list[str]] = []
        self.outputs: list[np.ndarray] = []
        self.encode_calls = 0
        self.texts_encoded = 0

    def encode(self, texts, batch_size: int = 64):
        texts = list(texts)
        self.calls.append(texts)
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        out = self.inner.encode(texts, batch_size)
        self.outputs.append(out)
        return out


class FakeEncoder:
    """Deterministic pseudo-embeddings from a hash of the text; no model."""

    def __init__(self, dim: int = 8, weight_sha256: str = "f" * 64):
        self.identity = EncoderIdentity("fake", None, weight_sha256, dim, 32, False)
        self.device = "cpu"
        self.encode_calls = 0
        self.texts_encoded = 0

    def vector(self, text: str) -> np.ndarray:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        return np.random.default_rng(seed).standard_normal(self.identity.dim).astype(np.float32)

    def encode(self, texts, batch_size: int = 64):
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        return np.stack([self.vector(t) for t in texts]).reshape(len(texts), self.identity.dim)
