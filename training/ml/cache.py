"""The embedding cache: embeddings on disk, computed once per (encoder identity, text).

It stores, per encoder identity, ``.npz`` shards (``keys``: the SHA-256 of
identity key + text, ``vectors``: float32 rows). Every write is a new shard
written to a temporary name and ``os.replace``-d into place, so concurrent
writers never clash and readers never see a partial file; a text two writers
raced on is stored twice, harmlessly. An unreadable shard (a damaged disk, a
stray file) is logged and skipped; its texts are encoded again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.ml.encoders.encoder import Encoder
from training.ml.encoders.identity import EncoderIdentity, EncoderMismatch

log = logging.getLogger(__name__)


def _text_digest(identity_key: str, text: str) -> bytes:
    return hashlib.sha256(f"{identity_key}\0{text}".encode()).digest()


class EmbeddingCache:
    """Embeddings on disk, keyed by SHA-256 of (encoder identity key, text).

    Layout: ``<root>/<identity.key>/identity.json`` and ``<uuid>.npz`` shards,
    each holding ``keys`` (``[n, 32]`` uint8 digests) and ``vectors``
    (``[n, dim]`` float32). Shards are added whole; only ``compact`` removes any.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
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
