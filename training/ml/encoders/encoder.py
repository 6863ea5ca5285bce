"""A loaded encoder: a frozen SentenceTransformer with its identity, and the device it runs on.

The base of every backend: ``training.ml.encoders.exported.ExportedEncoder``
runs an ONNX or OpenVINO copy behind the same ``encode``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from training.ml.encoders.identity import EncoderError, EncoderIdentity


def pick_device(requested: str = "auto") -> str:
    """``requested`` checked against the hardware; ``auto`` is cuda, then mps, then cpu."""
    if requested != "auto":
        if requested.startswith("cuda") and not torch.cuda.is_available():
            raise EncoderError(f"device {requested!r} requested but CUDA is not available")
        if requested == "mps" and not torch.backends.mps.is_available():
            raise EncoderError("device 'mps' requested but MPS is not available")
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


class Encoder:
    """A loaded, frozen SentenceTransformer with its identity.

    ``encode_calls`` and ``texts_encoded`` count the work done, for tests and
    benchmarks.
    """

    def __init__(self, model, identity: EncoderIdentity, device: str) -> None:
        self.model = model
        self.identity = identity
        self.device = device
        self.encode_calls = 0
        self.texts_encoded = 0

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Raw embeddings, float32 ``[n, dim]``, through SentenceTransformer's batching."""
        texts = list(texts)
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        if not texts:
            return np.zeros((0, self.identity.dim), dtype=np.float32)
        with torch.inference_mode():
            out = self.model.encode(
                texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(out, dtype=np.float32)
