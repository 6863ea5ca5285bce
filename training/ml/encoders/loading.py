"""Load an encoder, frozen, once per process: the torch original or an exported copy.

``load_encoder`` resolves the folder (``training.ml.encoders.resolve``), then
runs it with SentenceTransformer (``torch``) or, for ``onnx``/``openvino``,
exports a copy once into the model directory and runs that on the CPU
(``training.ml.encoders.exported``). The embedding cache is ``training.ml.cache``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from training.ml.encoders.encoder import Encoder, pick_device
from training.ml.encoders.exported import load_exported
from training.ml.encoders.identity import EncoderError, EncoderIdentity, check_backend
from training.ml.encoders.resolve import ALIASES, resolve_encoder, weights_sha256


def _identity_for(name: str, folder: Path, model) -> EncoderIdentity:
    modules = json.loads((folder / "modules.json").read_text())
    normalize = any(m.get("type", "").endswith(".Normalize") for m in modules)
    revision = folder.name if folder.parent.name == "snapshots" else None
    return EncoderIdentity(
        name=name,
        revision=revision,
        weight_sha256=weights_sha256(name, folder),
        dim=int(model.get_embedding_dimension()),
        max_seq_length=int(model.max_seq_length),
        normalize=normalize,
    )


_LOADED: dict[tuple, Encoder] = {}


def load_encoder(
    name_or_path: str,
    *,
    model_dir: Path | None = None,
    device: str = "auto",
    allow_hub: bool = False,
    backend: str = "torch",
    quantization: str = "none",
    calibration_texts: Sequence[str] | None = None,
) -> Encoder:
    """Resolve and load an encoder, frozen, in eval mode; one object per (name, dir,
    device, backend, quantization).

    ``backend`` onnx or openvino (``quantization`` none or int8) runs a copy
    exported once from the local weights into ``model_dir``, on the CPU
    (``training.ml.encoders.exported``; OpenVINO int8 calibrates on ``calibration_texts``).
    """
    check_backend(backend, quantization)
    if backend != "torch":
        if device not in ("auto", "cpu"):
            raise EncoderError(f"the {backend} backend runs on the CPU, not {device!r}")
        device = "cpu"
    device = pick_device(device)
    # An alias and its full name are one encoder (one identity): loaded once, not twice.
    name = ALIASES.get(name_or_path, name_or_path)
    cache_key = (name, str(model_dir), device, backend, quantization)
    if cache_key in _LOADED:
        return _LOADED[cache_key]
    folder = resolve_encoder(name_or_path, model_dir, allow_hub=allow_hub)
    if Path(name_or_path).expanduser().is_dir():
        name = str(folder)
    if backend != "torch":

        def origin() -> Encoder:
            return load_encoder(
                name_or_path, model_dir=model_dir, device="cpu", allow_hub=allow_hub
            )

        encoder = load_exported(
            name, folder, model_dir, backend, quantization, origin, calibration_texts
        )
    else:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(folder), device=device, local_files_only=True)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        encoder = Encoder(model, _identity_for(name, folder, model), device)
    _LOADED[cache_key] = encoder
    return encoder
