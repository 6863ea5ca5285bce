"""Checkpoints on an object store, for a fleet of nodes that share no filesystem.

With ``STORAGES["checkpoints"]`` set (``STEREORANK_STORAGE=s3``, web/storage_settings.py)
a version's two files (``head.safetensors``, ``manifest.json``) are uploaded to
``v{N}/`` on that storage by ``training.registry.services.register``, inside the transaction that
holds the version counter's lock and creates the row: a row is committed only once its
files are on the store. A registration killed between the upload and the commit leaves
``v{N}/`` without a row; the next registration of N overwrites it and ``sweep`` (under
the same lock) removes it. The row's ``path`` is then ``store:v{N}``.

Any node reads a version through ``local_folder``: local rows as they are, store rows
fetched once into ``CHECKPOINT_DIR/.store/v{N}`` (a per-node cache), the head's SHA-256
checked against the row before the folder is renamed into place, so a damaged or
replaced object is refused rather than scored with.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages

from training.errors import RegistryError

ALIAS = "checkpoints"
PREFIX = "store:"
CACHE = ".store"
HEAD_FILE = "head.safetensors"  # as training.ml.checkpoints (kept torch-free here)
MANIFEST_FILE = "manifest.json"
FILES = (HEAD_FILE, MANIFEST_FILE)


def enabled() -> bool:
    """Whether new versions go to the object store."""
    return ALIAS in settings.STORAGES


def _storage():
    return storages[ALIAS]


def store_path(version: int) -> str:
    return f"{PREFIX}v{version}"


def is_stored(path: str) -> bool:
    return path.startswith(PREFIX)


def upload(folder: Path, version: int) -> str:
    """Put a saved checkpoint folder's files at ``v{version}/``; returns the row's path."""
    storage = _storage()
    for name in FILES:
        with open(folder / name, "rb") as f:
            storage.save(f"v{version}/{name}", File(f, name=name))
    return store_path(version)


def delete(version: int) -> None:
    storage = _storage()
    for name in FILES:
        storage.delete(f"v{version}/{name}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    return Path(settings.TRAINING["CHECKPOINT_DIR"]) / CACHE


def _complete(folder: Path, head_sha256: str) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return False
    return manifest.get("head_sha256") == head_sha256 and (folder / HEAD_FILE).is_file()


def local_folder(checkpoint) -> Path:
    """A folder on this node holding ``checkpoint``'s files (fetched once from the store);
    ``RegistryError`` when the store lacks them or their head is not the row's."""
    if not is_stored(checkpoint.path):
        return Path(checkpoint.path)
    version, expected = checkpoint.version, checkpoint.head_sha256
    target = cache_root() / f"v{version}"
    if _complete(target, expected):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".v{version}.", dir=target.parent))
    try:
        storage = _storage()
        for name in FILES:
            try:
                with storage.open(f"v{version}/{name}", "rb") as src, open(tmp / name, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except FileNotFoundError:
                raise RegistryError(f"v{version}: {name} is missing from the store") from None
        got = _sha256(tmp / HEAD_FILE)
        if got != expected:
            raise RegistryError(
                f"v{version}: the stored head's SHA-256 is {got[:12]}..., "
                f"the registry recorded {expected[:12]}...; refusing it"
            )
        if target.exists():  # a stale or damaged copy: replaced whole
            shutil.rmtree(target, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:  # another process of this node fetched it first
            if not _complete(target, expected):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def sweep(owned_versions: set[int]) -> list[str]:
    """Remove ``v{N}/`` folders on the store that no row owns (call under the counter lock)."""
    storage = _storage()
    removed = []
    folders, _ = storage.listdir("")
    for folder in folders:
        number = folder.removeprefix("v")
        if folder.startswith("v") and number.isdigit() and int(number) not in owned_versions:
            delete(int(number))
            removed.append(f"{PREFIX}{folder}")
    return removed
