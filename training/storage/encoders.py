"""Encoders on the Django side: loaded where settings say, and a quantized copy gated
before it may stand in for the fp32 encoder.

The one place Django configures ``training.ml.encoders``: encoders and the
embedding cache where ``TRAINING`` says (model directory, cache, device, hub), so
the library never guesses a directory and the two never disagree. torch is
imported on first use, not with this module. An exported copy (``backend`` onnx
or openvino, ``quantization`` none or int8) is made once in the model directory
and runs on the CPU.

The accuracy gate (``training.ml.encoders.gate``) scores a checkpoint's eval
split with its head on the fp32 encoder and on the copy; the figures, the
per-prompt scores they were computed from, and the verdict are an
``EncoderGate`` row per (checkpoint, snapshot, copy), refused ones included.
``gated_model`` puts a checkpoint's head on a copy only once that copy passed on the
version's snapshot, and scores through the same cache and encode as the gate did, so
what the gate measured is what the scorer (``scoring.serving``) serves.
Tolerances: ``TRAINING["QUANT_MAX_RHO_DRIFT"]``, ``TRAINING["QUANT_MAX_FLIP_SHARE"]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from django.conf import settings

from training.errors import QuantizationError, QuantizationRefused, RegistryError, ml_refusals
from training.models import Checkpoint, DatasetSnapshot, EncoderGate
from training.snapshots.services import EVAL, TRAIN, rows_of
from training.storage import checkpoint_store

if TYPE_CHECKING:
    from training.ml.cache import EmbeddingCache
    from training.ml.encoders.encoder import Encoder
    from training.ml.model import RewardModel


def encoder(
    name: str, device: str | None = None, *, backend: str = "torch", quantization: str = "none"
) -> Encoder:
    """The encoder ``name`` loaded (once per process) on ``device`` (default: settings);
    an exported ``backend`` always on the CPU."""
    from training.ml.encoders.loading import load_encoder

    if backend != "torch":
        device = "cpu"
    return load_encoder(
        name,
        model_dir=settings.TRAINING["MODEL_DIR"],
        device=device or settings.TRAINING["DEVICE"],
        allow_hub=settings.TRAINING["ALLOW_HUB"],
        backend=backend,
        quantization=quantization,
    )


def resolve(name: str) -> Path:
    """The folder of encoder ``name``, without loading it; ``EncoderNotFound`` if none."""
    from training.ml.encoders.resolve import resolve_encoder

    return resolve_encoder(
        name, settings.TRAINING["MODEL_DIR"], allow_hub=settings.TRAINING["ALLOW_HUB"]
    )


def embedding_cache() -> EmbeddingCache:
    """The embedding cache where ``TRAINING["EMBEDDING_CACHE"]`` says."""
    from training.ml.cache import EmbeddingCache

    t = settings.TRAINING
    return EmbeddingCache(
        t["EMBEDDING_CACHE"],
        max_entries=t["EMBEDDING_CACHE_ENTRIES"],
        max_shards=t["EMBEDDING_CACHE_MAX_SHARDS"],
    )


def _tolerances() -> dict:
    t = settings.TRAINING
    return {"max_rho_drift": t["QUANT_MAX_RHO_DRIFT"], "max_flip_share": t["QUANT_MAX_FLIP_SHARE"]}


def _copy(checkpoint: Checkpoint, backend: str, quantization: str) -> Encoder:
    if (backend, quantization) == ("torch", "none"):
        raise QuantizationError("torch/none is the fp32 encoder itself: name another backend")
    with ml_refusals(QuantizationError):
        return encoder(checkpoint.encoder_name, backend=backend, quantization=quantization)


def _checkpoint_files(checkpoint: Checkpoint):
    from training.ml.checkpoints import load as load_files

    with ml_refusals(QuantizationError, f"v{checkpoint.version}: "):
        return load_files(checkpoint_store.local_folder(checkpoint))


def run_gate(
    checkpoint: Checkpoint,
    backend: str = "onnx",
    quantization: str = "int8",
    snapshot: DatasetSnapshot | None = None,
) -> EncoderGate:
    """Gate the copy for ``checkpoint`` on ``snapshot``'s eval split (default: the one it
    was trained on), record it with the per-prompt scores it was computed from (``metrics
    ["scores"]``: eval keys, fp32 and quantized scores, labels), and raise
    ``QuantizationRefused`` if it fails."""
    from training.ml.encoders.gate import accuracy_gate, copy_threshold

    snapshot = snapshot or checkpoint.snapshot
    if snapshot is None:
        raise QuantizationError(f"v{checkpoint.version} has no snapshot: name one to gate on")
    rows = rows_of(snapshot, EVAL)
    if len(rows) < 3:
        raise QuantizationError(f"snapshot {snapshot.pk} has {len(rows)} eval examples: too few")
    copy = _copy(checkpoint, backend, quantization)
    fp32 = encoder(checkpoint.encoder_name, device="cpu")
    files = _checkpoint_files(checkpoint)
    with ml_refusals(QuantizationError, f"v{checkpoint.version}: "):
        reference_model = files.to_model(fp32)
    cache = embedding_cache()
    candidate = Gated(files.to_model(copy, allow_other_backend=True), None, cache)

    def both(texts: list[str]) -> tuple[list[float], list[float]]:
        # One encode per encoder, through the cache; the copy through Gated.score, the
        # path the scorer serves through. Recorded, so anyone can recompute the figures.
        fp = reference_model.score(texts, cache=cache)
        return [float(x) for x in fp], [float(x) for x in candidate.score(texts)]

    texts = [r["text"] for r in rows]
    fp, qu = both(texts)
    scores = {
        "keys": [r["key"] for r in rows],
        "fp32": fp,
        "quantized": qu,
        "labels": [float(r["label"]) for r in rows],
    }
    # The copy's own threshold, from the training prompts against fp32's flags; judged on
    # the gate set, which no version is trained or calibrated on.
    train_fp, train_q = both(sorted({r["text"] for r in rows_of(snapshot, TRAIN)}))
    threshold = copy_threshold(train_fp, train_q, checkpoint.threshold)
    gate_set = load_gate_set()
    gate_fp, gate_q = both(gate_set["texts"])
    catalogue_fp, catalogue_q = both(catalogue_texts())
    scores["gate_set"] = {"version": gate_set["version"], "fp32": gate_fp, "quantized": gate_q}
    scores["train"] = {"fp32": train_fp, "quantized": train_q}  # the copy's threshold's basis
    result = accuracy_gate(
        scores["fp32"],
        scores["quantized"],
        scores["labels"],
        checkpoint.threshold,
        flip_set=(gate_fp, gate_q),
        copy=threshold,
        **_tolerances(),
    )
    agreement = {
        name: float(np.mean((np.array(a) < checkpoint.threshold) == (np.array(b) < threshold)))
        for name, a, b in (("gate_set", gate_fp, gate_q), ("catalogue", catalogue_fp, catalogue_q))
    }
    metrics = {
        **result.to_dict(),
        "flag_agreement": agreement,
        "calibrated_on": len(train_fp),
        "gate_set_version": gate_set["version"],
        "scores": scores,
    }
    gate, _ = EncoderGate.objects.update_or_create(
        checkpoint=checkpoint,
        snapshot=snapshot,
        encoder_key=copy.identity.key,
        defaults={
            "backend": backend,
            "quantization": quantization,
            "encoder_identity": copy.identity.to_dict(),
            "metrics": metrics,
            "passed": result.passed,
        },
    )
    if not result.passed:
        raise QuantizationRefused(
            f"{backend}/{quantization} refused for v{checkpoint.version} on snapshot "
            f"{snapshot.pk}: " + "; ".join(result.reasons())
        )
    return gate


def within_tolerances(rho_drift: float, flip_upper: float | None) -> bool:
    """Whether a gate's recorded drift and flip rate's upper bound are within today's
    tolerances (a gate recorded before the bound, with none, is not)."""
    tol = _tolerances()
    return (
        flip_upper is not None
        and rho_drift <= tol["max_rho_drift"]
        and flip_upper <= tol["max_flip_share"]
    )


def load_gate_set() -> dict:
    """The versioned gate set (``training/ml/encoders/gate_set.json``): its version and texts."""
    path = Path(__file__).resolve().parents[1] / "ml" / "encoders" / "gate_set.json"
    data = json.loads(path.read_text())
    return {"version": data["version"], "texts": [p["text"] for p in data["prompts"]]}


def catalogue_texts() -> list[str]:
    """The packaged catalogue's prompts (the flag agreement the gate reports beside)."""
    from annotation.catalogue.loading import read_catalogue

    return [t for o in read_catalogue()["occupations"] for t in o["prompts"].values()]


def current_gate(checkpoint_id: int, snapshot_id: int | None, encoder_key: str) -> int | None:
    """The id of the newest gate that copy ``encoder_key`` passed for the checkpoint, on its
    snapshot (on any, for a version without one), within today's tolerances; one query that
    reads two figures, not the recorded scores (the scorer asks it on every request)."""
    gates = EncoderGate.objects.filter(
        checkpoint_id=checkpoint_id, encoder_key=encoder_key, passed=True
    )
    if snapshot_id is not None:
        gates = gates.filter(snapshot_id=snapshot_id)
    for pk, drift, upper in gates.values_list("pk", "metrics__rho_drift", "metrics__flip_upper"):
        if within_tolerances(drift, upper):
            return pk
    return None


def passed_gate(checkpoint: Checkpoint, copy: Encoder) -> EncoderGate | None:
    """The newest gate ``copy`` passed for ``checkpoint`` on its snapshot within today's
    tolerances."""
    pk = current_gate(checkpoint.pk, checkpoint.snapshot_id, copy.identity.key)
    return None if pk is None else EncoderGate.objects.get(pk=pk)


@dataclass(frozen=True)
class Gated:
    """A checkpoint's reward model on the encoder it may be served by, and the gate that
    allowed it (None for the fp32 encoder); ``score`` is the gate's own path: the head on
    the encoder's embeddings through the embedding cache."""

    model: RewardModel
    gate: EncoderGate | None
    cache: EmbeddingCache

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """Scores of ``texts``, exactly as ``run_gate`` scored the eval split."""
        return self.model.score(list(texts), cache=self.cache)


def gated_model(
    checkpoint: Checkpoint,
    backend: str = "torch",
    quantization: str = "none",
    device: str | None = None,
    cache: EmbeddingCache | None = None,
) -> Gated:
    """``checkpoint``'s reward model on the encoder ``backend``/``quantization``: the fp32
    one as trained (on ``device``), or a copy that passed the gate for it on the version's
    snapshot (else ``QuantizationRefused``, naming the command that gates it); scored
    through ``cache`` (default: a new handle on the settings' embedding cache)."""
    cache = cache or embedding_cache()
    if (backend, quantization) == ("torch", "none"):  # as trained: nothing to translate
        from training.ml.checkpoints import load as load_files

        fp32 = encoder(checkpoint.encoder_name, device=device)
        folder = checkpoint_store.local_folder(checkpoint)
        return Gated(load_files(folder, fp32).to_model(fp32), None, cache)
    files = _checkpoint_files(checkpoint)
    copy = _copy(checkpoint, backend, quantization)
    gate = passed_gate(checkpoint, copy)
    if gate is None:
        on = f" on snapshot {checkpoint.snapshot_id}" if checkpoint.snapshot_id else ""
        raise QuantizationRefused(
            f"{backend}/{quantization} has not passed the accuracy gate for "
            f"v{checkpoint.version}{on} within the current tolerances: run manage.py "
            f"encoder_gate {checkpoint.version} --backend {backend} --quantization {quantization}"
        )
    return Gated(files.to_model(copy, allow_other_backend=True), gate, cache)


def load_model(checkpoint: Checkpoint):
    """The version's ``RewardModel`` on its encoder (settings' device), for scoring;
    ``RegistryError`` when its files are missing or do not match the encoder."""
    from training.ml.checkpoints import load as load_files

    loaded = encoder(checkpoint.encoder_name)
    with ml_refusals(RegistryError, f"v{checkpoint.version}: "):
        return load_files(checkpoint_store.local_folder(checkpoint), loaded).to_model(loaded)
