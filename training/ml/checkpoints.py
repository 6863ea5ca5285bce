"""The checkpoint format, and the seed's ``.pth`` export and import.

A native checkpoint is a directory of two files:

* ``head.safetensors``: ``fc.weight`` ``[1, dim]`` and ``fc.bias`` ``[1]``, float32;
* ``manifest.json``: ``format`` (``"stereorank-checkpoint"``), ``format_version``
  (1), ``head_file`` and ``head_sha256`` (SHA-256 of the head file), ``encoder``
  (the ``EncoderIdentity``), ``hyperparameters``, ``data_hash``, ``metrics``,
  ``threshold``, ``library_version`` and ``extra``. NaN metrics are written as
  ``null``.

A version trained with group heads (``training.ml.group_heads``) has a third file,
``groups.safetensors`` (``mean``, ``basis``, ``weights``, ``offsets``), and the
manifest's ``group_heads`` holds their ``meta()`` with the file's ``sha256``; a
version without them has neither. The seed's ``.pth`` holds one head: an export leaves
the group heads out.

``save`` writes into a temporary directory beside the target and renames it into
place, so a checkpoint is either complete or absent; it never overwrites.
``load`` verifies the manifest, the head's hash and shapes, and, given an
encoder, that its identity matches (``EncoderMismatch`` otherwise).

The seed format is one ``torch.save``-d state dict: ``embedding_model.*`` (the
SentenceTransformer's own state dict) plus ``fc.weight`` and ``fc.bias``, as the
model card's ``RewardModel`` has them. Export writes the key names of the
installed sentence-transformers (``embedding_model.0.model.*`` since 6.0);
import also accepts the older ``embedding_model.0.auto_model.*`` names (as in
the published ``reward_model_listwise_3.0_main.pth``) and the buffers older
transformers saved (``position_ids``), checking each against the encoder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from core.json import json_safe
from training.ml import __version__
from training.ml.calibration import SEED_THRESHOLD
from training.ml.encoders.encoder import Encoder
from training.ml.encoders.identity import EncoderIdentity, EncoderMismatch, sha256_file
from training.ml.errors import MLError
from training.ml.group_heads import GroupHeads
from training.ml.model import RewardModel

FORMAT = "stereorank-checkpoint"
FORMAT_VERSION = 1
HEAD_FILE = "head.safetensors"
MANIFEST_FILE = "manifest.json"
HEAD_KEYS = ("fc.weight", "fc.bias")
GROUPS_FILE = "groups.safetensors"
SEED_PREFIX = "embedding_model."


class CheckpointError(MLError, ValueError):
    """A checkpoint is missing, corrupt, or not in this format."""


@dataclass
class Checkpoint:
    head: dict[str, Tensor]
    encoder: EncoderIdentity
    hyperparameters: dict
    data_hash: str
    metrics: dict
    threshold: float
    library_version: str = __version__
    extra: dict = field(default_factory=dict)
    groups: GroupHeads | None = None

    def to_model(self, encoder: Encoder, *, allow_other_backend: bool = False) -> RewardModel:
        """A ``RewardModel`` in eval mode with this head; refuses another encoder.

        ``allow_other_backend`` accepts the same weights run by another backend or
        quantization: only once ``training.ml.encoders.gate`` has passed for the pair.
        """
        self.encoder.check_matches(encoder.identity, allow_other_backend=allow_other_backend)
        dropout = float(self.hyperparameters.get("dropout", 0.1))
        model = RewardModel(encoder, dropout=dropout)
        model.load_state_dict(self.head)
        model.groups = self.groups
        return model.eval()

    @classmethod
    def from_model(
        cls,
        model: RewardModel,
        *,
        hyperparameters: dict,
        data_hash: str,
        metrics: dict | None = None,
        threshold: float = SEED_THRESHOLD,
        extra: dict | None = None,
        groups: GroupHeads | None = None,
    ) -> Checkpoint:
        head = {
            k: v.detach().to("cpu", torch.float32).contiguous()
            for k, v in model.state_dict().items()
        }
        return cls(
            head=head,
            encoder=model.encoder.identity,
            hyperparameters=dict(hyperparameters),
            data_hash=data_hash,
            metrics=dict(metrics or {}),
            threshold=float(threshold),
            extra=dict(extra or {}),
            groups=groups,
        )


def _check_head(head: dict[str, Tensor], identity: EncoderIdentity, where: str) -> None:
    if set(head) != set(HEAD_KEYS):
        raise CheckpointError(f"{where}: head has keys {sorted(head)}, expected {list(HEAD_KEYS)}")
    if tuple(head["fc.weight"].shape) != (1, identity.dim) or tuple(head["fc.bias"].shape) != (1,):
        raise CheckpointError(
            f"{where}: head shapes {tuple(head['fc.weight'].shape)}, "
            f"{tuple(head['fc.bias'].shape)} do not fit encoder dim {identity.dim}"
        )


def save(checkpoint: Checkpoint, directory: Path) -> Path:
    """Write ``checkpoint`` to the new directory ``directory``, atomically."""
    directory = Path(directory)
    if directory.exists():
        raise CheckpointError(f"{directory} already exists; checkpoints are never overwritten")
    _check_head(checkpoint.head, checkpoint.encoder, "save")
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        head_path = tmp / HEAD_FILE
        save_file({k: v.contiguous() for k, v in checkpoint.head.items()}, str(head_path))
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "head_file": HEAD_FILE,
            "head_sha256": sha256_file(head_path),
            "encoder": checkpoint.encoder.to_dict(),
            "hyperparameters": checkpoint.hyperparameters,
            "data_hash": checkpoint.data_hash,
            "metrics": checkpoint.metrics,
            "threshold": checkpoint.threshold,
            "library_version": checkpoint.library_version,
            "extra": checkpoint.extra,
        }
        if checkpoint.groups is not None:
            groups_path = tmp / GROUPS_FILE
            tensors = {k: torch.from_numpy(v) for k, v in checkpoint.groups.tensors().items()}
            save_file(tensors, str(groups_path))
            manifest["group_heads"] = {
                **checkpoint.groups.meta(),
                "file": GROUPS_FILE,
                "sha256": sha256_file(groups_path),
            }
        text = json.dumps(json_safe(manifest), indent=2, sort_keys=True, allow_nan=False)
        (tmp / MANIFEST_FILE).write_text(text + "\n")
        try:
            os.rename(tmp, directory)
        except OSError as exc:
            raise CheckpointError(f"{directory} appeared while saving: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return directory


def load(directory: Path, encoder: Encoder | None = None) -> Checkpoint:
    """Read and verify a checkpoint; with ``encoder``, require a matching identity."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError as exc:
        raise CheckpointError(f"{directory} is not a checkpoint: no {MANIFEST_FILE}") from exc
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{manifest_path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{manifest_path} is not a {FORMAT} manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{manifest_path}: format_version {manifest.get('format_version')!r} is not "
            f"{FORMAT_VERSION}"
        )
    try:
        head_path = directory / manifest["head_file"]
        identity = EncoderIdentity.from_dict(manifest["encoder"])
        threshold = float(manifest["threshold"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{manifest_path} is incomplete: {exc}") from exc
    if not head_path.is_file():
        raise CheckpointError(f"{directory}: head file {head_path.name} is missing")
    actual = sha256_file(head_path)
    if actual != manifest.get("head_sha256"):
        raise CheckpointError(
            f"{head_path} has SHA-256 {actual}, the manifest says {manifest.get('head_sha256')}"
        )
    try:
        head = load_file(str(head_path))
    except (SafetensorError, OSError) as exc:
        raise CheckpointError(f"{head_path} is not a readable safetensors file: {exc}") from exc
    _check_head(head, identity, str(directory))
    checkpoint = Checkpoint(
        head=head,
        encoder=identity,
        hyperparameters=manifest.get("hyperparameters") or {},
        data_hash=str(manifest.get("data_hash", "")),
        metrics=manifest.get("metrics") or {},
        threshold=threshold,
        library_version=str(manifest.get("library_version", "")),
        extra=manifest.get("extra") or {},
        groups=_load_groups(directory, manifest.get("group_heads"), identity.dim),
    )
    if encoder is not None:
        identity.check_matches(encoder.identity)
    return checkpoint


def _load_groups(directory: Path, meta: dict | None, dim: int) -> GroupHeads | None:
    """The group heads the manifest names, verified (hash, shapes), or None."""
    if meta is None:
        return None
    path = directory / str(meta.get("file", GROUPS_FILE))
    if not path.is_file():
        raise CheckpointError(f"{directory}: group heads file {path.name} is missing")
    if sha256_file(path) != meta.get("sha256"):
        raise CheckpointError(f"{path} does not match the SHA-256 its manifest gives")
    try:
        tensors = {k: v.numpy() for k, v in load_file(str(path)).items()}
        groups = GroupHeads.from_parts(meta, tensors)
    except (SafetensorError, OSError, KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: group heads unreadable: {exc}") from exc
    if groups.mean.shape != (dim,):
        raise CheckpointError(f"{path}: group heads of dim {groups.mean.shape}, encoder {dim}")
    return groups


def export_seed_pth(checkpoint: Checkpoint, path: Path, encoder: Encoder) -> Path:
    """Write the seed's state dict (``embedding_model.*`` + head) to ``path``, atomically;
    ``encoder`` is the checkpoint's own (checked), whose weights the seed file carries."""
    checkpoint.encoder.check_matches(encoder.identity)
    state = {SEED_PREFIX + k: v.detach().cpu() for k, v in encoder.model.state_dict().items()}
    state.update({k: checkpoint.head[k].detach().cpu() for k in HEAD_KEYS})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _canonical(key: str) -> str:
    """sentence-transformers < 6 named the Transformer module's model ``auto_model``."""
    return re.sub(r"^(\d+)\.auto_model\.", r"\1.model.", key)


def import_seed_pth(path: Path, encoder: Encoder) -> Checkpoint:
    """A checkpoint from a seed ``.pth``, after checking its encoder weights are ``encoder``'s."""
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise CheckpointError(f"{path} does not exist") from exc
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a bad file
        raise CheckpointError(f"{path} is not a readable state dict: {exc}") from exc
    if not isinstance(state, dict) or not all(k in state for k in HEAD_KEYS):
        raise CheckpointError(f"{path} has no fc.weight / fc.bias: not a seed reward model")
    theirs = {
        _canonical(k[len(SEED_PREFIX) :]): v for k, v in state.items() if k.startswith(SEED_PREFIX)
    }
    if not theirs:
        raise EncoderMismatch(f"{path} holds no embedding_model.* weights to check")
    ours = {_canonical(k): v for k, v in encoder.model.state_dict().items()}
    buffers = {_canonical(k): v for k, v in encoder.model.named_buffers()}
    # buffers older transformers saved (position_ids, token_type_ids) are checked too
    ours.update({k: buffers[k] for k in theirs if k not in ours and k in buffers})
    missing, extra = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
    if missing or extra:
        raise EncoderMismatch(
            f"{path} was saved with another encoder than {encoder.identity.name!r}: "
            f"{len(missing)} key(s) missing (e.g. {missing[:2]}), {len(extra)} unexpected "
            f"(e.g. {extra[:2]})"
        )
    differing = [
        k
        for k, v in ours.items()
        if theirs[k].shape != v.shape or not torch.equal(theirs[k].to(v.dtype), v.cpu())
    ]
    if differing:
        raise EncoderMismatch(
            f"{path}: {len(differing)} encoder tensor(s) differ from {encoder.identity.name!r} "
            f"(e.g. {differing[:3]}); the file was trained on other encoder weights"
        )
    head = {k: state[k].to(torch.float32).contiguous() for k in HEAD_KEYS}
    _check_head(head, encoder.identity, str(path))
    return Checkpoint(
        head=head,
        encoder=encoder.identity,
        hyperparameters={},
        data_hash="",
        metrics={},
        threshold=SEED_THRESHOLD,
        extra={"imported_from": path.name, "source_sha256": sha256_file(path)},
    )
