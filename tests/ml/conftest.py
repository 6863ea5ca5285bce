"""Fixtures for the reward-model core: one real MiniLM per session, fake encoders."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from training.ml.data import synthetic_examples
from training.ml.encoders import EncoderIdentity, load_encoder


@pytest.fixture(scope="session", autouse=True)
def offline(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.delenv("STEREORANK_ALLOW_HUB", raising=False)
    mp.delenv("STEREORANK_DEVICE", raising=False)
    mp.setenv("STEREORANK_EMBEDDING_CACHE", str(tmp_path_factory.mktemp("embeddings")))
    yield
    mp.undo()


@pytest.fixture(scope="session")
def minilm():
    return load_encoder("all-MiniLM-L6-v2", device="cpu")


@pytest.fixture(scope="session")
def small_examples():
    """6 occupations x 3 types x 4 originals x 3 variants = 216 texts."""
    return synthetic_examples(n_occupations=6, prompts_per_type=4, variants=3, seed=1)


class CountingEncoder:
    """Wraps an encoder and records every call, to count encoding work."""

    def __init__(self, inner):
        self.inner = inner
        self.identity = inner.identity
        self.model = inner.model
        self.device = inner.device
        self.calls: list[list[str]] = []
        self.encode_calls = 0
        self.texts_encoded = 0

    def encode(self, texts, batch_size: int = 64):
        texts = list(texts)
        self.calls.append(texts)
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        return self.inner.encode(texts, batch_size)


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
