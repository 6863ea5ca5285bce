"""The embedding cache: embeddings on disk, computed once per (encoder identity, text).

A per-node cache (on a fleet each node keeps its own; nothing is lost with it but time).
Per encoder identity, a folder of shards; each is written whole to a temporary name and
``os.replace``-d into place, so concurrent writers never clash and readers never see a
partial file (a text two writers raced on is stored twice, harmlessly).

A shard (``<uuid>.emb``) is a 64-byte header (``SREMB001``, row count, dimension), the
rows' keys (SHA-256 of identity key + text, 32 bytes each) in sorted order, then their
float32 vectors in the same order. Readers memory-map it and binary-search the keys, so
a process holds no copy of the cache: its pages are the operating system's, shared by
every process of the node. In front of the shards each process keeps a bounded LRU of
the vectors it used last (``max_entries``). Shards of the earlier format (``.npz``) are
still read, into memory, until a compaction folds them in.

Compaction merges shards into one, under an exclusive ``flock`` on the folder's
``.compact.lock`` (one compactor at a time; others skip). Past ``max_shards`` a write
merges every shard but the largest (cheap: only the recent small ones are copied); the
``compact_embeddings`` command merges them all. The merged shard is in place before the
merged ones are unlinked, and only shards listed under the lock are merged, so a
concurrent writer's new shard is never lost; a reader that had mapped an unlinked shard
keeps reading it (POSIX keeps the file until unmapped), and one that finds a listed
shard gone lists the folder again before encoding anything.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import struct
import time
import uuid
import zipfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from training.ml.encoders.encoder import Encoder
from training.ml.encoders.identity import EncoderIdentity, EncoderMismatch

log = logging.getLogger(__name__)

SUFFIX, LEGACY = ".emb", ".npz"
MAGIC = b"SREMB001"
HEADER = struct.Struct("<8sQQ")  # magic, rows, dim; padded to HEADER_BYTES
HEADER_BYTES = 64
KEY = np.dtype("S32")
LOCK = ".compact.lock"
STALE_TMP_SECONDS = 60 * 60
CHUNK_ROWS = 8192  # vectors copied per step of a compaction (bounded memory)


def _text_digest(identity_key: str, text: str) -> bytes:
    return hashlib.sha256(f"{identity_key}\0{text}".encode()).digest()


class _Unreadable(Exception):
    pass


class _Shard:
    """One shard's rows, keys sorted: memory-mapped (``.emb``) or in memory (``.npz``)."""

    def __init__(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self.keys, self.vectors = keys, vectors

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def open(cls, path: Path, dim: int) -> _Shard:
        if path.suffix == LEGACY:
            try:
                with np.load(path) as data:
                    keys, vectors = data["keys"], data["vectors"]
            except FileNotFoundError:
                raise
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                raise _Unreadable(exc) from exc
            keys = np.ascontiguousarray(keys).view(KEY).reshape(-1)
            order = np.argsort(keys, kind="stable")
            return cls._checked(path, keys[order], vectors[order].astype(np.float32), dim)
        with open(path, "rb") as f:
            head = f.read(HEADER_BYTES)
            size = os.fstat(f.fileno()).st_size
        if len(head) < HEADER_BYTES or head[:8] != MAGIC:
            raise _Unreadable("not an embedding shard")
        _, rows, got_dim = HEADER.unpack_from(head)
        if size != HEADER_BYTES + rows * (KEY.itemsize + 4 * got_dim):
            raise _Unreadable(f"{size} bytes do not hold {rows} rows of dim {got_dim}")
        if rows == 0:
            return cls._checked(path, np.empty(0, KEY), np.empty((0, got_dim), np.float32), dim)
        keys = np.memmap(path, KEY, "r", offset=HEADER_BYTES, shape=(rows,))
        vectors = np.memmap(
            path, "<f4", "r", offset=HEADER_BYTES + rows * KEY.itemsize, shape=(rows, got_dim)
        )
        return cls._checked(path, keys, vectors, dim)

    @classmethod
    def _checked(cls, path: Path, keys, vectors, dim: int) -> _Shard:
        if vectors.shape[1:] != (dim,):
            raise EncoderMismatch(f"cache shard {path} has dim {vectors.shape[1:]}")
        return cls(keys, vectors)

    def find(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(hit, row)`` for each of ``wanted`` (sorted keys: a binary search each)."""
        if not len(self.keys):
            return np.zeros(len(wanted), bool), np.zeros(len(wanted), np.intp)
        rows = np.minimum(np.searchsorted(self.keys, wanted), len(self.keys) - 1)
        return self.keys[rows] == wanted, rows


def _write_shard_file(
    folder: Path, keys: np.ndarray, vector_chunks, dim: int, durable: bool = False
) -> Path:
    """A shard of sorted ``keys`` and their vectors (an iterable of row blocks), atomically;
    ``durable`` (a compaction, which then unlinks the shards it merged) fsyncs it first."""
    name = f"{uuid.uuid4().hex}{SUFFIX}"
    tmp = folder / f".{name}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(HEADER.pack(MAGIC, len(keys), dim).ljust(HEADER_BYTES, b"\0"))
            f.write(np.ascontiguousarray(keys, KEY).tobytes())
            for block in vector_chunks:
                f.write(np.ascontiguousarray(block, "<f4").tobytes())
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, folder / name)
    finally:
        tmp.unlink(missing_ok=True)
    return folder / name


class EmbeddingCache:
    """Embeddings on disk, keyed by SHA-256 of (encoder identity key, text).

    ``max_entries`` bounds the vectors this process keeps in memory (an LRU);
    ``max_shards`` is how many shards a folder may hold before a write compacts it
    (``None``: never, only ``compact``).
    """

    def __init__(self, root: Path, max_entries: int = 20_000, max_shards: int | None = 16) -> None:
        self.root = Path(root)
        self.max_entries = max(1, int(max_entries))
        self.max_shards = max_shards
        self._lru: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._shards: dict[str, dict[str, _Shard]] = {}
        self._bad: dict[str, set[str]] = {}

    def _dir(self, identity: EncoderIdentity) -> Path:
        d = self.root / identity.key
        if not d.is_dir():
            d.mkdir(parents=True, exist_ok=True)
        meta = d / "identity.json"
        if not meta.is_file():
            tmp = meta.with_name(f".{meta.name}.{uuid.uuid4().hex}.tmp")
            tmp.write_bytes(json.dumps(identity.to_dict(), indent=2).encode())
            os.replace(tmp, meta)
        return d

    def _refresh(self, identity: EncoderIdentity) -> bool:
        """Open new shards, drop vanished ones; True when a listed shard was gone."""
        open_ = self._shards.setdefault(identity.key, {})
        bad = self._bad.setdefault(identity.key, set())
        folder = self._dir(identity)
        listed = {p.name for p in folder.iterdir() if p.suffix in (SUFFIX, LEGACY)}
        listed -= {n for n in listed if n.startswith(".")}
        vanished = False
        for name in set(open_) - listed:
            del open_[name]
        for name in sorted(listed - set(open_) - bad):
            try:
                open_[name] = _Shard.open(folder / name, identity.dim)
            except FileNotFoundError:  # merged away by a compaction since the listing
                vanished = True
            except (_Unreadable, OSError, ValueError) as exc:
                log.warning("skipping unreadable embedding cache shard %s: %s", name, exc)
                bad.add(name)  # its texts are encoded again, into a new shard
        return vanished

    def _lookup(self, identity: EncoderIdentity, digests: list[bytes]) -> dict[bytes, np.ndarray]:
        wanted = np.array(digests, dtype=KEY)
        found: dict[bytes, np.ndarray] = {}
        remaining = np.ones(len(wanted), bool)
        for _attempt in range(20):  # again while compactions move rows under us
            vanished = self._refresh(identity)
            for shard in self._shards[identity.key].values():
                todo = np.flatnonzero(remaining)
                if not len(todo):
                    return found
                hit, rows = shard.find(wanted[todo])
                if hit.any():
                    vectors = np.asarray(shard.vectors[rows[hit]], dtype=np.float32)
                    for j, v in zip(todo[hit], vectors, strict=True):
                        found[digests[j]] = v
                    remaining[todo[hit]] = False
            if not vanished or not remaining.any():
                break
        return found

    def _remember(self, digest: bytes, vector: np.ndarray) -> None:
        self._lru[digest] = vector.copy()  # a row of its own: a view would keep its block
        self._lru.move_to_end(digest)
        while len(self._lru) > self.max_entries:
            self._lru.popitem(last=False)

    def _add_shard(self, identity: EncoderIdentity, digests: list[bytes], vectors: np.ndarray):
        keys = np.array(digests, dtype=KEY)
        order = np.argsort(keys, kind="stable")
        folder = self._dir(identity)
        _write_shard_file(folder, keys[order], [vectors[order]], identity.dim)
        self._refresh(identity)  # another process may have merged the new shard already
        if self.max_shards is not None and len(self._shards[identity.key]) > self.max_shards:
            self._compact(identity, keep_largest=True, wait=False)

    def compact(self, identity: EncoderIdentity) -> int:
        """Merge all of this encoder's shards into one (waits for another compactor);
        returns the number of distinct rows kept."""
        return self._compact(identity, keep_largest=False, wait=True)

    def compact_all(self) -> dict[str, int]:
        """``compact`` every encoder folder under the root: ``{identity key: rows}``."""
        result = {}
        for meta in sorted(self.root.glob("*/identity.json")):
            identity = EncoderIdentity.from_dict(json.loads(meta.read_text()))
            result[identity.key] = self.compact(identity)
        return result

    def _compact(self, identity: EncoderIdentity, *, keep_largest: bool, wait: bool) -> int:
        folder = self._dir(identity)
        with open(folder / LOCK, "a+b") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                return -1  # another process is compacting this folder
            try:
                return self._merge_locked(identity, folder, keep_largest)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _merge_locked(self, identity: EncoderIdentity, folder: Path, keep_largest: bool) -> int:
        """Merge the listed shards (all, or all but the largest); the merged shard's rows."""
        now = time.time()
        for tmp in folder.glob(".*.tmp"):  # left by a process killed mid-write
            try:
                if now - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                    tmp.unlink(missing_ok=True)
            except FileNotFoundError:
                pass
        self._refresh(identity)
        shards = dict(self._shards[identity.key])
        names = sorted(shards, key=lambda n: len(shards[n]))
        if keep_largest:
            names = names[:-1]
        if len(names) < 2 and not any(n.endswith(LEGACY) for n in names):
            return sum(len(s) for s in shards.values())
        chosen = [shards[n] for n in names]
        keys = np.concatenate([s.keys for s in chosen]) if chosen else np.empty(0, KEY)
        source = np.concatenate([np.full(len(s), i) for i, s in enumerate(chosen)])
        row = np.concatenate([np.arange(len(s)) for s in chosen])
        keys, first = np.unique(keys, return_index=True)

        def blocks():
            for start in range(0, len(first), CHUNK_ROWS):
                pick = first[start : start + CHUNK_ROWS]
                block = np.empty((len(pick), identity.dim), np.float32)
                for i, shard in enumerate(chosen):
                    mine = source[pick] == i
                    if mine.any():
                        block[mine] = shard.vectors[row[pick][mine]]
                yield block

        merged = _write_shard_file(folder, keys, blocks(), identity.dim, durable=True)
        for name in names:
            (folder / name).unlink(missing_ok=True)
            self._shards[identity.key].pop(name, None)
        self._shards[identity.key][merged.name] = _Shard.open(merged, identity.dim)
        return len(keys)

    def embed(self, encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
        """Rows for ``texts`` in order; each distinct missing text encoded once, in one call."""
        identity = encoder.identity
        digests = [_text_digest(identity.key, t) for t in texts]
        out = np.empty((len(digests), identity.dim), dtype=np.float32)
        need: dict[bytes, list[int]] = {}
        for i, d in enumerate(digests):
            v = self._lru.get(d)
            if v is None:
                need.setdefault(d, []).append(i)
            else:
                self._lru.move_to_end(d)
                out[i] = v
        if need:
            found = self._lookup(identity, list(need))
            missing = [d for d in need if d not in found]
            if missing:
                vectors = np.asarray(
                    encoder.encode([texts[need[d][0]] for d in missing]), dtype=np.float32
                )
                self._add_shard(identity, missing, vectors)
                found.update(zip(missing, vectors, strict=True))
            for d, rows in need.items():
                out[rows] = found[d]
                self._remember(d, found[d])
        return out
