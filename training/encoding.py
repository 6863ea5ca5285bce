"""The one place Django configures ``training.ml``: encoders and the embedding cache
where settings say (``TRAINING``: model directory, cache, device, hub), so the
library never guesses a directory and the two never disagree. torch is imported
on first use, not with this module. An exported copy (``backend`` onnx or
openvino, ``quantization`` none or int8) is made once in the model directory and
runs on the CPU; serving a checkpoint's head on one goes through the accuracy
gate (``training.quantization.gated_model``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from training.ml.cache import EmbeddingCache
    from training.ml.encoders import Encoder


def encoder(
    name: str, device: str | None = None, *, backend: str = "torch", quantization: str = "none"
) -> Encoder:
    """The encoder ``name`` loaded (once per process) on ``device`` (default: settings);
    an exported ``backend`` always on the CPU."""
    from training.ml.encoders import load_encoder

    if backend != "torch":
        device = "cpu"
    return load_encoder(
        name,
        model_dir=settings.TRAINING["MODEL_DIR"],
        device=device or settings.TRAINING["DEVICE"],
        allow_hub=settings.TRAINING["ALLOW_HUB"],
        backend=backend,
        quantization=quantization,
    )


def resolve(name: str) -> Path:
    """The folder of encoder ``name``, without loading it; ``EncoderNotFound`` if none."""
    from training.ml.encoders import resolve_encoder

    return resolve_encoder(
        name, settings.TRAINING["MODEL_DIR"], allow_hub=settings.TRAINING["ALLOW_HUB"]
    )


def embedding_cache() -> EmbeddingCache:
    from training.ml.cache import EmbeddingCache

    return EmbeddingCache(settings.TRAINING["EMBEDDING_CACHE"])
