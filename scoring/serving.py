"""Which encoder serves a version: the deployment's setting, the accuracy gate, the fallback.

``STEREORANK["SCORING"]["ENCODER_BACKEND"]`` / ``["ENCODER_QUANTIZATION"]`` name the
encoder every version is served by (``torch``/``none``: the fp32 encoder it was trained
with; ``onnx`` or ``openvino`` with ``none`` or ``int8``: an exported copy). A copy serves
a version only once it passed the accuracy gate for that version on the version's
snapshot (``training.storage.encoders.gated_model``), and then scores through the gate's own
path, so the gate's figures are what users get. Without a passed gate the version is
refused (``EncoderNotGated``, naming ``manage.py encoder_gate``) unless
``["UNGATED"]`` is ``fp32``: staff's explicit choice to serve it by the fp32 encoder.
Every answer says which encoder served it (``ServedEncoder``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from scoring.errors import EncoderNotGated
from training.errors import QuantizationRefused
from training.models import Checkpoint
from training.storage import encoders

if TYPE_CHECKING:
    from training.ml.cache import EmbeddingCache

UNGATED = ("refuse", "fp32")


@dataclass(frozen=True)
class ServedEncoder:
    """The encoder a loaded version scores with: ``gate`` is the ``EncoderGate`` id that
    opened a copy (None for fp32), ``key`` the copy's identity key, ``fallback`` true when
    fp32 serves because the configured copy is not gated."""

    backend: str
    quantization: str
    gate: int | None = None
    key: str | None = None
    fallback: bool = False

    @property
    def label(self) -> str:
        return f"{self.backend}/{self.quantization}"

    def to_dict(self) -> dict:
        """What the API's answers carry under ``encoder``."""
        return {
            "backend": self.backend,
            "quantization": self.quantization,
            "gate": self.gate,
            "fallback": self.fallback,
        }


FP32 = ServedEncoder("torch", "none")


def configured() -> tuple[str, str]:
    """The (backend, quantization) this deployment serves versions by."""
    scoring = settings.STEREORANK["SCORING"]
    return scoring["ENCODER_BACKEND"], scoring["ENCODER_QUANTIZATION"]


def exported() -> bool:
    """Whether the deployment serves through an exported copy rather than fp32 torch."""
    return configured() != ("torch", "none")


def load(
    row: Checkpoint, device: str, cache: EmbeddingCache
) -> tuple[encoders.Gated, ServedEncoder]:
    """Version ``row`` on the configured encoder, scoring through ``cache``: the gated copy,
    or fp32 (``device``) when so configured or, past a refused gate, when staff chose the
    fp32 fallback."""
    backend, quantization = configured()
    if not exported():
        return encoders.gated_model(row, device=device, cache=cache), FP32
    try:
        gated = encoders.gated_model(row, backend, quantization, cache=cache)
    except QuantizationRefused as refused:
        if settings.STEREORANK["SCORING"]["UNGATED"] != "fp32":
            raise EncoderNotGated(str(refused)) from refused
        key = encoders.encoder(row.encoder_name, backend=backend, quantization=quantization)
        served = ServedEncoder("torch", "none", key=key.identity.key, fallback=True)
        return encoders.gated_model(row, device=device, cache=cache), served
    key = gated.model.encoder.identity.key
    return gated, ServedEncoder(backend, quantization, gated.gate.pk, key)


def still_served(row_id: int, snapshot_id: int | None, served: ServedEncoder) -> bool:
    """Whether ``served`` is still what the gate allows (one query for a copy, none for
    fp32): a gate re-run and refused, tolerances tightened, or a copy gated since the
    fallback was loaded, all make the scorer load the version again."""
    if served.key is None:
        return True
    return encoders.current_gate(row_id, snapshot_id, served.key) == served.gate


def describe(checkpoint: Checkpoint, gates: list[dict]) -> dict:
    """For the registry page: ``gates`` (``training.selectors.encoder_gates`` rows of this
    version) kept to the version's snapshot, each with ``within`` (today's tolerances),
    and which encoder serves the version now
    (``serves``) or the command that would let it be served (``refused``)."""
    mine = [
        {
            **g,
            "within": encoders.within_tolerances(g["rho_drift"], g.get("flip_upper")),
            "flip_upper_pct": None if g.get("flip_upper") is None else 100 * g["flip_upper"],
        }
        for g in gates
        if checkpoint.snapshot_id is None or g["snapshot_id"] == checkpoint.snapshot_id
    ]
    backend, quantization = configured()
    opened = any(
        g["passed"] and g["within"] and (g["backend"], g["quantization"]) == configured()
        for g in mine
    )
    serves, refused = "", ""
    if not exported():
        serves = "torch/none (fp32)"
    elif opened:
        serves = f"{backend}/{quantization} (gated)"
    elif settings.STEREORANK["SCORING"]["UNGATED"] == "fp32":
        serves = f"torch/none (fp32 fallback: {backend}/{quantization} not gated)"
    else:
        refused = (
            f"refused: run manage.py encoder_gate {checkpoint.version} "
            f"--backend {backend} --quantization {quantization}"
        )
    return {"gates": mine, "serves": serves, "refused": refused}
