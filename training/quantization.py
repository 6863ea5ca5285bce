"""Quantized encoders put to work: the accuracy gate run and recorded, and a checkpoint
served on a copy only once that copy passed it.

The gate (``training.ml.quant_gate``) scores a checkpoint's eval split with its
head on the fp32 encoder and on the copy; the figures and verdict are an
``EncoderGate`` row per (checkpoint, snapshot, copy), refused ones included.
Tolerances: ``TRAINING["QUANT_MAX_RHO_DRIFT"]``, ``TRAINING["QUANT_MAX_FLIP_SHARE"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from training import encoding
from training.errors import QuantizationError, QuantizationRefused
from training.evaluation import eval_arrays
from training.models import Checkpoint, DatasetSnapshot, EncoderGate

if TYPE_CHECKING:
    from training.ml.encoders import Encoder
    from training.ml.model import RewardModel


def _tolerances() -> dict:
    t = settings.TRAINING
    return {"max_rho_drift": t["QUANT_MAX_RHO_DRIFT"], "max_flip_share": t["QUANT_MAX_FLIP_SHARE"]}


def _copy(checkpoint: Checkpoint, backend: str, quantization: str) -> Encoder:
    from training.ml.encoders import EncoderError

    if (backend, quantization) == ("torch", "none"):
        raise QuantizationError("torch/none is the fp32 encoder itself: name another backend")
    try:
        return encoding.encoder(checkpoint.encoder_name, backend=backend, quantization=quantization)
    except EncoderError as exc:
        raise QuantizationError(str(exc)) from exc


def _checkpoint_files(checkpoint: Checkpoint):
    from training.ml.checkpoints import CheckpointError
    from training.ml.checkpoints import load as load_files

    try:
        return load_files(Path(checkpoint.path))
    except CheckpointError as exc:
        raise QuantizationError(f"v{checkpoint.version}: {exc}") from exc


def run_gate(
    checkpoint: Checkpoint,
    backend: str = "onnx",
    quantization: str = "int8",
    snapshot: DatasetSnapshot | None = None,
) -> EncoderGate:
    """Gate the copy for ``checkpoint`` on ``snapshot``'s eval split (default: the one it
    was trained on), record it, and raise ``QuantizationRefused`` if it fails."""
    from training.ml.encoders import EncoderError
    from training.ml.quant_gate import accuracy_gate

    snapshot = snapshot or checkpoint.snapshot
    if snapshot is None:
        raise QuantizationError(f"v{checkpoint.version} has no snapshot: name one to gate on")
    _, rows = eval_arrays(snapshot)
    if len(rows) < 3:
        raise QuantizationError(f"snapshot {snapshot.pk} has {len(rows)} eval examples: too few")
    copy = _copy(checkpoint, backend, quantization)
    fp32 = encoding.encoder(checkpoint.encoder_name, device="cpu")
    files = _checkpoint_files(checkpoint)
    try:
        reference_model = files.to_model(fp32)
    except EncoderError as exc:
        raise QuantizationError(f"v{checkpoint.version}: {exc}") from exc
    candidate_model = files.to_model(copy, allow_other_backend=True)  # measured, not served
    cache = encoding.embedding_cache()
    texts = [r["text"] for r in rows]
    result = accuracy_gate(
        reference_model.score(texts, cache=cache),
        candidate_model.score(texts, cache=cache),
        [r["label"] for r in rows],
        checkpoint.threshold,
        **_tolerances(),
    )
    gate, _ = EncoderGate.objects.update_or_create(
        checkpoint=checkpoint,
        snapshot=snapshot,
        encoder_key=copy.identity.key,
        defaults={
            "backend": backend,
            "quantization": quantization,
            "encoder_identity": copy.identity.to_dict(),
            "metrics": result.to_dict(),
            "passed": result.passed,
        },
    )
    if not result.passed:
        raise QuantizationRefused(
            f"{backend}/{quantization} refused for v{checkpoint.version} on snapshot "
            f"{snapshot.pk}: " + "; ".join(result.reasons())
        )
    return gate


def passed_gate(checkpoint: Checkpoint, copy: Encoder) -> EncoderGate | None:
    """The newest gate ``copy`` passed for ``checkpoint`` within today's tolerances."""
    tol = _tolerances()
    for gate in EncoderGate.objects.filter(
        checkpoint=checkpoint, encoder_key=copy.identity.key, passed=True
    ):
        m = gate.metrics
        if m["rho_drift"] <= tol["max_rho_drift"] and m["flip_share"] <= tol["max_flip_share"]:
            return gate
    return None


def gated_model(
    checkpoint: Checkpoint, backend: str = "torch", quantization: str = "none"
) -> RewardModel:
    """``checkpoint``'s reward model on the encoder ``backend``/``quantization``: the fp32
    one as trained, or a copy that passed the gate for it (else ``QuantizationRefused``)."""
    files = _checkpoint_files(checkpoint)
    if (backend, quantization) == ("torch", "none"):
        return files.to_model(encoding.encoder(checkpoint.encoder_name))
    copy = _copy(checkpoint, backend, quantization)
    if passed_gate(checkpoint, copy) is None:
        raise QuantizationRefused(
            f"{backend}/{quantization} has not passed the accuracy gate for "
            f"v{checkpoint.version} within the current tolerances: run manage.py encoder_gate "
            f"{checkpoint.version} --backend {backend} --quantization {quantization}"
        )
    return files.to_model(copy, allow_other_backend=True)
