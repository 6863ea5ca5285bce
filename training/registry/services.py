"""The checkpoint registry: versions on disk and in the database, promotion and
rollback, export and import. Evaluations and paired comparison are in
``training.registry.evaluation``.

A version's files live in ``CHECKPOINT_DIR/v{N}``. They are first saved whole
into a hidden staging folder (``training.ml.checkpoints.save`` is atomic) and
fsync-ed; then, in one transaction holding the ``VersionCounter`` row lock, the
next number is taken, the folder renamed to ``v{N}`` and the row created. If
anything fails before the commit the folder is removed again. A process killed
between the rename and the commit leaves a ``v{N}`` folder without a row: the
next registration of N, and ``sweep_orphans`` (run when a gpu worker starts),
remove it under the same lock, so no folder without a row survives and no row
ever points at a missing folder.

On an object store (``training.storage.checkpoint_store``, ``STEREORANK_STORAGE=s3``) the
files are uploaded to the store in that same transaction, before the row is created,
and the folder stays in ``CHECKPOINT_DIR/.store`` as this node's copy; other nodes
fetch it from the store.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from training.errors import RegistryConflict, RegistryError, VersionNotFound, ml_refusals
from training.ml import __version__ as library_version
from training.models import Checkpoint, DatasetSnapshot, RegistryEvent, VersionCounter
from training.registry.card_markdown import threshold_of
from training.registry.sampling import queue_priorities
from training.selectors import active_checkpoint, rollback_target
from training.storage import checkpoint_store, encoders

if TYPE_CHECKING:  # the checkpoint format brings torch: imported where files are read
    from training.ml.checkpoints import Checkpoint as MLCheckpoint

STAGING = ".staging"
EXPORT_FORMATS = ("seed", "native")
README = "README.md"  # a native export's model card, as on the Hugging Face hub
STALE_STAGING_SECONDS = 6 * 60 * 60


def checkpoint_root() -> Path:
    return Path(settings.TRAINING["CHECKPOINT_DIR"])


@functools.cache
def code_version() -> str:
    """``git describe`` of the running code, else the library's version."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
        return f"{library_version}+{out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        return library_version


def _fsync_tree(folder: Path) -> None:
    for path in [*folder.iterdir(), folder]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _locked_counter() -> VersionCounter:
    """The counter row, locked for this transaction (created on first use)."""
    counter = VersionCounter.objects.select_for_update().filter(pk=1).first()
    if counter is None:
        try:
            with transaction.atomic():
                VersionCounter.objects.create(pk=1, last=0)
        except IntegrityError:
            pass  # another process created it first
        counter = VersionCounter.objects.select_for_update().get(pk=1)
    return counter


def _next_version(counter: VersionCounter) -> int:
    highest = Checkpoint.objects.aggregate(m=Max("version"))["m"] or 0
    counter.last = max(counter.last, highest) + 1
    counter.save(update_fields=["last"])
    return counter.last


def threshold_basis(files: MLCheckpoint) -> str:
    """How a checkpoint's threshold was set, from what its files record."""
    calibration = files.extra.get("calibration") or {}
    if calibration.get("basis"):
        return calibration["basis"]
    if files.extra.get("threshold_method"):  # written by ``python -m training.ml train``
        return f"{files.extra['threshold_method']}: {files.extra.get('threshold_reason', '')}"
    if files.extra.get("threshold_source"):  # a seed .pth's, at import (seed_threshold)
        return files.extra["threshold_source"]
    if files.extra.get("imported_from"):
        return (
            f"seed default {files.threshold}: imported from {files.extra['imported_from']}, "
            "which carries no threshold"
        )
    return f"{files.threshold}: not recorded with the checkpoint"


def register(
    files: MLCheckpoint,
    *,
    run=None,
    snapshot: DatasetSnapshot | None = None,
    parent: Checkpoint | None = None,
    source: str = "",
    in_transaction=None,
) -> Checkpoint:
    """Store ``files`` as the next version; ``in_transaction(checkpoint)`` commits with it."""
    root = checkpoint_root()
    staging_root = root / STAGING
    staging_root.mkdir(parents=True, exist_ok=True)
    from training.ml.checkpoints import MANIFEST_FILE
    from training.ml.checkpoints import save as save_files

    staged = save_files(files, staging_root / uuid.uuid4().hex)
    _fsync_tree(staged)
    final: Path | None = None
    uploaded: int | None = None
    try:
        with transaction.atomic():
            version = _next_version(_locked_counter())
            if checkpoint_store.enabled():
                path = checkpoint_store.upload(staged, version)
                uploaded = version
                final = checkpoint_store.cache_root() / f"v{version}"
            else:
                final = root / f"v{version}"
                path = str(final)
            if final.exists():  # left by a process killed before its commit: no row owns it
                shutil.rmtree(final)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staged, final)
            _fsync_tree(final.parent)
            manifest = json.loads((final / MANIFEST_FILE).read_text())
            checkpoint = Checkpoint.objects.create(
                version=version,
                run=run,
                parent=parent,
                path=path,
                head_sha256=manifest["head_sha256"],
                encoder_name=files.encoder.name,
                encoder_identity=files.encoder.to_dict(),
                hyperparameters=files.hyperparameters,
                snapshot=snapshot,
                data_hash=files.data_hash,
                code_version=code_version(),
                threshold=files.threshold,
                threshold_basis=threshold_basis(files),
                metrics=manifest["metrics"],
                source=source,
            )
            if in_transaction is not None:
                in_transaction(checkpoint)
            queue_priorities()  # the active studies' priorities from the new head, on commit
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        if final is not None and not Checkpoint.objects.filter(path=path).exists():
            shutil.rmtree(final, ignore_errors=True)
            if uploaded is not None:
                checkpoint_store.delete(uploaded)
        raise
    return checkpoint


def sweep_orphans(now: float | None = None) -> list[str]:
    """Remove ``v{N}`` folders no row owns (here and on the object store) and stale
    staging folders; returns what went."""
    root = checkpoint_root()
    removed = []
    now = time.time() if now is None else now
    with transaction.atomic():
        _locked_counter()
        owned = set(Checkpoint.objects.values_list("path", flat=True))
        for folder in [*root.glob("v*"), *checkpoint_store.cache_root().glob("v*")]:
            number = folder.name[1:]
            stored = checkpoint_store.store_path(int(number)) if number.isdigit() else ""
            if folder.is_dir() and str(folder) not in owned and stored not in owned:
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder.name)
        if checkpoint_store.enabled():
            versions = Checkpoint.objects.filter(path__startswith=checkpoint_store.PREFIX)
            removed += checkpoint_store.sweep(set(versions.values_list("version", flat=True)))
    for folder in (root / STAGING).glob("*"):
        if now - folder.stat().st_mtime > STALE_STAGING_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"{STAGING}/{folder.name}")
    return removed


def get_version(version: int) -> Checkpoint:
    try:
        return Checkpoint.objects.get(version=version)
    except Checkpoint.DoesNotExist:
        raise VersionNotFound(f"there is no version {version}") from None


def actor_name(user, actor: str) -> str:
    """Who acts on the registry, in words: the user's name, else what the caller says
    (a command, a schedule); one of the two is required, so history never guesses."""
    if user is not None:
        return user.get_username()
    if not actor:
        raise TypeError("a registry change needs a user or an actor")
    return actor


def _activate(target: Checkpoint, action: str, user, actor: str, reason: str) -> RegistryEvent:
    current = Checkpoint.objects.select_for_update().filter(status=Checkpoint.Status.ACTIVE).first()
    if current is not None:
        current.status = Checkpoint.Status.ARCHIVED
        current.save(update_fields=["status"])
    target.status = Checkpoint.Status.ACTIVE
    target.save(update_fields=["status"])
    queue_priorities()  # on commit: the active studies' priorities from this head
    return RegistryEvent.objects.create(
        action=action,
        checkpoint=target,
        previous=current,
        user=user,
        actor=actor_name(user, actor),
        reason=reason,
    )


UNCHECKED = object()


def promote(checkpoint: Checkpoint, user=None, reason="", actor="", checked_against=UNCHECKED):
    """Make ``checkpoint`` the active version (the former active is archived), recorded;
    refused if ``checked_against`` (the active version a group check compared it with, or
    None) is no longer the active one."""
    with transaction.atomic():
        _locked_counter()  # one registry change at a time
        now = active_checkpoint()
        if checked_against is not UNCHECKED and now != checked_against:
            raise RegistryConflict("another version became active during the group check")
        target = Checkpoint.objects.get(pk=checkpoint.pk)
        if target.status == Checkpoint.Status.ACTIVE:
            raise RegistryConflict(f"v{target.version} is already active")
        _activate(target, RegistryEvent.Action.PROMOTE, user, actor, reason)
    return target


def rollback(user=None, reason: str = "", actor: str = "") -> Checkpoint:
    """Re-activate the version that was active before the current one; returns it."""
    with transaction.atomic():
        _locked_counter()
        current = active_checkpoint()
        if current is None:
            raise RegistryConflict("no version is active; nothing to roll back")
        target = rollback_target(current)
        if target is None:
            raise RegistryConflict(
                f"v{current.version} has no earlier active version to roll back to"
            )
        _activate(target, RegistryEvent.Action.ROLLBACK, user, actor, reason)
    return target


def card_path(seed_pth: Path) -> Path:
    """Where a seed ``.pth`` export's model card goes: beside it, ``v1.pth`` -> ``v1.md``."""
    return Path(seed_pth).with_suffix(".md")


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def export_checkpoint(checkpoint: Checkpoint, fmt: str, out: Path, card: str = "") -> Path:
    """Write a version as the seed's ``.pth`` or as a native folder, atomically; ``card``
    (a model card, ``training.registry.card``) goes into the folder as ``README.md``, or
    beside the ``.pth`` (``card_path``)."""
    from training.ml.checkpoints import export_seed_pth
    from training.ml.checkpoints import load as load_files

    out = Path(out)
    if fmt == "seed":
        encoder = encoders.encoder(checkpoint.encoder_name, device="cpu")
        files = load_files(checkpoint_store.local_folder(checkpoint), encoder)
        path = export_seed_pth(files, out, encoder)
        if card:
            _write_atomically(card_path(path), card)
        return path
    if fmt == "native":
        if out.exists():
            raise RegistryError(f"{out} already exists")
        folder = checkpoint_store.local_folder(checkpoint)
        load_files(folder)  # verify before copying
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        try:
            shutil.copytree(folder, tmp / "copy")
            if card:
                (tmp / "copy" / README).write_text(card, encoding="utf-8")
            os.rename(tmp / "copy", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return out
    raise RegistryError(f"unknown format {fmt!r}: use seed or native")


def seed_threshold(files: MLCheckpoint, path: Path, given: float | None) -> MLCheckpoint:
    """A seed ``.pth`` carries no threshold: ``given`` (``--threshold``), else the one the
    model card beside it states (``card_path``: an export's own), else the seed's default;
    the files with that threshold and where it came from."""
    if given is not None:
        if not math.isfinite(given):
            raise RegistryError(f"--threshold must be a number, not {given}")
        source = f"{given!r}: given at import of {path.name}"
    else:
        card = card_path(path)
        stated = threshold_of(card.read_text(encoding="utf-8")) if card.is_file() else None
        if stated is None:
            return files
        given, source = stated, f"{stated!r}: from the model card beside it ({card.name})"
    return dataclasses.replace(
        files, threshold=given, extra={**files.extra, "threshold_source": source}
    )


def import_checkpoint(
    path: Path,
    fmt: str = "seed",
    encoder: str | None = None,
    user=None,
    actor: str = "",
    threshold: float | None = None,
    calibrate_on: DatasetSnapshot | None = None,
) -> Checkpoint:
    """Register a seed ``.pth`` (checked against the encoder; its threshold as
    ``seed_threshold`` finds it) or a native folder as a version; ``calibrate_on`` a
    snapshot: its threshold calibrated on the snapshot's train split and its flag judged
    on the eval split instead, as a run's (``evaluation.calibrate_and_judge``)."""
    from training.ml.checkpoints import import_seed_pth
    from training.ml.checkpoints import load as load_files

    path = Path(path)
    actor = actor_name(user, actor)
    with ml_refusals(RegistryError):
        if fmt == "seed":
            name = encoder or settings.TRAINING["DEFAULT_ENCODER"]
            files = import_seed_pth(path, encoders.encoder(name, device="cpu"))
            files = seed_threshold(files, path, threshold)
        elif threshold is not None:
            raise RegistryError("--threshold is for a seed .pth: a native folder has its own")
        elif fmt == "native":
            files = load_files(path)
        else:
            raise RegistryError(f"unknown format {fmt!r}: use seed or native")
        if calibrate_on is not None:
            if threshold is not None:
                raise RegistryError("--threshold or --calibrate-on, not both")
            from training.registry.evaluation import calibrated

            files = calibrated(files, calibrate_on)

    def record(checkpoint: Checkpoint) -> None:
        RegistryEvent.objects.create(
            action=RegistryEvent.Action.IMPORT,
            checkpoint=checkpoint,
            user=user,
            actor=actor,
            reason=path.name,
        )

    return register(files, source=str(path), in_transaction=record)
