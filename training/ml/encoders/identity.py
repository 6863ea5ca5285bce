"""What an embedding depends on: the encoder identity, and the errors of encoders.

An ``EncoderIdentity`` travels with every cached embedding and every
checkpoint; its ``key`` names the cache folder and is checked when a head is
put on an encoder.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from training.ml.errors import MLError

BACKENDS = ("torch", "onnx", "openvino")
QUANTIZATIONS = ("none", "int8")
WEIGHT_FIELDS = ("weight_sha256", "dim", "max_seq_length", "normalize")
RUNTIME_FIELDS = ("backend", "quantization", "artifact_sha256")


class EncoderError(MLError, ValueError):
    """Base class: an encoder could not be resolved, verified or matched."""


class EncoderNotFound(EncoderError):
    """No local copy of the encoder, and nothing allowed to fetch one."""


class EncoderHashMismatch(EncoderError):
    """The encoder's weights are not the ones its name promises."""


class EncoderMismatch(EncoderError):
    """Embeddings or a checkpoint belong to a different encoder."""


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
    another name or folder share their cache and checkpoints. An exported copy
    (``backend`` onnx/openvino, ``quantization`` none/int8) adds those two and the
    hash of its exported files to the key; the plain torch fp32 identity hashes
    exactly what it did before they existed, so old caches and checkpoints (whose
    identities lack the fields and read as torch/none) keep their keys.
    """

    name: str
    revision: str | None
    weight_sha256: str
    dim: int
    max_seq_length: int
    normalize: bool
    backend: str = "torch"
    quantization: str = "none"
    artifact_sha256: str | None = None

    @property
    def exported(self) -> bool:
        """Whether this is an ONNX/OpenVINO copy rather than the torch fp32 original."""
        return (self.backend, self.quantization) != ("torch", "none")

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.exported:  # written as before the fields existed
            for f in RUNTIME_FIELDS:
                d.pop(f)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> EncoderIdentity:
        try:
            artifact = d.get("artifact_sha256")
            identity = cls(
                name=str(d["name"]),
                revision=None if d.get("revision") is None else str(d["revision"]),
                weight_sha256=str(d["weight_sha256"]),
                dim=int(d["dim"]),
                max_seq_length=int(d["max_seq_length"]),
                normalize=bool(d["normalize"]),
                backend=str(d.get("backend", "torch")),
                quantization=str(d.get("quantization", "none")),
                artifact_sha256=None if artifact is None else str(artifact),
            )
            check_backend(identity.backend, identity.quantization)
        except (KeyError, TypeError, ValueError) as exc:
            raise EncoderError(f"invalid encoder identity {d!r}: {exc}") from exc
        return identity

    @property
    def key(self) -> str:
        content = [self.weight_sha256, self.dim, self.max_seq_length, self.normalize]
        if self.exported:
            content += [self.backend, self.quantization, self.artifact_sha256]
        return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]

    def mismatches(
        self, other: EncoderIdentity, fields: Sequence[str] = WEIGHT_FIELDS + RUNTIME_FIELDS
    ) -> list[str]:
        """The content fields on which ``other`` differs, as readable strings."""
        return [
            f"{f}: {getattr(self, f)!r} != {getattr(other, f)!r}"
            for f in fields
            if getattr(self, f) != getattr(other, f)
        ]

    def check_matches(
        self,
        other: EncoderIdentity,
        what: str = "checkpoint",
        *,
        allow_other_backend: bool = False,
    ) -> None:
        """Raise ``EncoderMismatch`` unless ``other`` embeds exactly as this one.

        ``allow_other_backend`` accepts the same weights run by another backend or
        quantization; pass it only once the accuracy gate
        (``training.ml.encoders.gate``) has passed for this pair.
        """
        fields = WEIGHT_FIELDS if allow_other_backend else WEIGHT_FIELDS + RUNTIME_FIELDS
        diffs = self.mismatches(other, fields)
        if diffs:
            hint = ""
            if not allow_other_backend and not self.mismatches(other, WEIGHT_FIELDS):
                hint = " (same weights, another backend: serve it only through the accuracy gate)"
            raise EncoderMismatch(
                f"{what} was made with encoder {self.name!r} but the encoder given is "
                f"{other.name!r}; they differ in " + "; ".join(diffs) + hint
            )


def check_backend(backend: str, quantization: str) -> None:
    """``EncoderError`` unless (backend, quantization) is one this library can run."""
    if backend not in BACKENDS:
        raise EncoderError(f"unknown encoder backend {backend!r}: use {', '.join(BACKENDS)}")
    if quantization not in QUANTIZATIONS:
        raise EncoderError(f"unknown quantization {quantization!r}: use {', '.join(QUANTIZATIONS)}")
    if backend == "torch" and quantization != "none":
        raise EncoderError("int8 quantization needs the onnx or openvino backend")
