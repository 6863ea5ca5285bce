"""Serving a version through its quantized copy (``scoring.serving``): refused without a
passed gate (409, the command's one line, the checker and the registry say why), served by
the gated onnx int8 copy with the gate's own scores, staff's fp32 fallback, the gate's
verdict re-read on each request, and the settings check. MiniLM, a seeded head on a
snapshot of a small synthetic study (no training)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, SystemCheckError
from django.test import Client
from django.urls import reverse
from training_study import make_study, register_head

from scoring.checks import serving_encoder
from tests.model_exports import exported_once
from tests.staff import make_staff
from training import services
from training.errors import QuantizationRefused
from training.snapshots.services import EVAL, create_snapshot, rows_of
from training.storage import encoders
from training.storage.encoders import run_gate

pytestmark = [pytest.mark.slow]
URL = "/api/score/"
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
COMMAND = "manage.py encoder_gate 1 --backend onnx --quantization int8"


def _serve(settings, backend="onnx", quantization="int8", ungated="refuse") -> None:
    settings.STEREORANK = {
        **settings.STEREORANK,
        "SCORING": {
            **settings.STEREORANK["SCORING"],
            "ENCODER_BACKEND": backend,
            "ENCODER_QUANTIZATION": quantization,
            "UNGATED": ungated,
        },
    }


def _tolerate(settings, drift: float, flips: float) -> None:
    settings.TRAINING = {
        **settings.TRAINING,
        "QUANT_MAX_RHO_DRIFT": drift,
        "QUANT_MAX_FLIP_SHARE": flips,
    }


@pytest.fixture
def staff_client(db) -> Client:
    """A browser signed in as a staff member (the registry page)."""
    client = Client()
    client.force_login(make_staff("staff"))  # owns the default study (tests/staff.py)
    return client


@pytest.fixture
def version(db, settings, tmp_path, quant_models):
    """v1, active: a seeded head on a snapshot; the onnx int8 copy in the run's model
    directory (exported once); tolerances loose enough for MiniLM int8 to pass."""
    for module in ("onnxruntime", "onnxscript"):
        __import__(module) if ON_CI else pytest.importorskip(module)
    settings.TRAINING = {**settings.TRAINING, "MODEL_DIR": quant_models}
    with exported_once(quant_models, "onnx-int8"):
        encoders.encoder("all-MiniLM-L6-v2", backend="onnx", quantization="int8")
    _tolerate(settings, 0.5, 1.0)
    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    checkpoint, _ = register_head(snapshot)
    services.promote(checkpoint, actor="test")
    return checkpoint


def _texts(checkpoint) -> list[str]:
    return [r["text"] for r in rows_of(checkpoint.snapshot, EVAL)]


def test_a_copy_without_a_passed_gate_is_refused_everywhere_with_the_command(
    version, settings, scorer_client, staff_client
):
    _serve(settings)
    answer = scorer_client.post(URL, {"prompts": ["a nurse"]}, format="json")
    assert answer.status_code == 409
    assert "has not passed the accuracy gate for v1" in answer.json()["detail"]
    assert COMMAND in answer.json()["detail"]
    with pytest.raises(CommandError, match="has not passed the accuracy gate") as refused:
        call_command("score", "a nurse")
    assert "\n" not in str(refused.value) and COMMAND in str(refused.value)
    scorer_client.force_login(scorer_client.user)
    page = scorer_client.get(reverse("scoring:check")).content.decode()
    assert 'id="serving-refused"' in page and COMMAND in page
    registry = staff_client.get(reverse("dashboards:registry")).content.decode()
    assert f"refused: run {COMMAND}" in registry and "not gated" in registry
    # A refused gate is no better: recorded, shown, and still refused.
    _tolerate(settings, 0.0, 0.0)
    with pytest.raises(QuantizationRefused, match="refused for v1"):
        run_gate(version, "onnx", "int8")
    assert scorer_client.post(URL, {"prompts": ["a nurse"]}, format="json").status_code == 409
    registry = staff_client.get(reverse("dashboards:registry")).content.decode()
    assert "onnx/int8: refused" in registry


def test_a_gated_copy_serves_the_gates_own_scores_until_its_verdict_changes(
    version, settings, scorer_client, staff_client
):
    _serve(settings)
    gate = run_gate(version, "onnx", "int8")
    texts = _texts(version)
    recorded = gate.metrics["scores"]
    assert len(texts) >= 3 and recorded["quantized"] != recorded["fp32"]
    answer = scorer_client.post(URL, {"prompts": texts}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["encoder"] == {
        "backend": "onnx",
        "quantization": "int8",
        "gate": gate.pk,
        "fallback": False,
    }
    served = [r["score"] for r in body["results"]]
    # The gate scored these prompts through the cache and the head the scorer serves by:
    # the same embeddings, the same float32 head, so the same numbers, bit for bit.
    np.testing.assert_array_equal(np.float32(served), np.float32(recorded["quantized"]))
    # it flags by its own threshold, fp32's carried onto its scale (recorded with the gate)
    own = gate.metrics["copy_threshold"]
    assert (
        body["threshold"] == own
        and "own threshold, calibrated against fp32" in (body["threshold_basis"])
    )
    assert [r["flagged"] for r in body["results"]] == [s < own for s in served]
    # On a node with an empty cache the same request re-encodes them: the same batches
    # (the same texts in the same order, sorted by length), so again the same numbers.
    settings.TRAINING = {**settings.TRAINING, "EMBEDDING_CACHE": settings.MEDIA_ROOT / "fresh"}
    from scoring.scorer import reset_scorer

    reset_scorer()
    again = scorer_client.post(URL, {"prompts": texts}, format="json").json()
    np.testing.assert_array_equal(
        np.float32([r["score"] for r in again["results"]]), np.float32(recorded["quantized"])
    )
    registry = staff_client.get(reverse("dashboards:registry")).content.decode()
    assert "onnx/int8: passed" in registry and "onnx/int8 (gated)" in registry
    assert f"drift {gate.metrics['rho_drift']:.4f}" in registry
    m = gate.metrics
    assert f"{m['flips']} of {m['flip_n']} gate-set flags flipped" in registry
    assert f"(95% upper bound {100 * m['flip_upper']:.1f}%)" in registry
    # Tolerances tightened below the recorded figures: the next request is refused, no
    # restart needed.
    _tolerate(settings, gate.metrics["rho_drift"] - 1e-9, 1.0)
    assert scorer_client.post(URL, {"prompts": texts}, format="json").status_code == 409


def test_staff_may_choose_fp32_for_an_ungated_copy_and_the_copy_takes_over_once_gated(
    version, settings, scorer_client
):
    _serve(settings, ungated="fp32")
    texts = _texts(version)
    answer = scorer_client.post(URL, {"prompts": texts}, format="json").json()
    assert answer["encoder"] == {
        "backend": "torch",
        "quantization": "none",
        "gate": None,
        "fallback": True,
    }
    fp32 = encoders.gated_model(version, device="cpu").score(texts)
    np.testing.assert_allclose([r["score"] for r in answer["results"]], fp32, atol=1e-6)
    gate = run_gate(version, "onnx", "int8")
    answer = scorer_client.post(URL, {"prompts": texts}, format="json").json()
    assert answer["encoder"]["gate"] == gate.pk and not answer["encoder"]["fallback"]
    np.testing.assert_array_equal(
        np.float32([r["score"] for r in answer["results"]]),
        np.float32(gate.metrics["scores"]["quantized"]),
    )


def test_the_plain_deployment_serves_fp32_and_says_so(version, scorer_client):
    body = scorer_client.post(URL, {"prompts": ["a nurse"]}, format="json").json()
    assert body["encoder"] == {
        "backend": "torch",
        "quantization": "none",
        "gate": None,
        "fallback": False,
    }


@pytest.mark.parametrize(
    "backend, quantization, ungated, problem",
    [
        ("tensorrt", "int8", "refuse", "unknown encoder backend 'tensorrt'"),
        ("torch", "int8", "refuse", "int8 quantization needs the onnx or openvino backend"),
        ("onnx", "int4", "refuse", "unknown quantization 'int4'"),
        ("onnx", "int8", "maybe", "UNGATED'] must be 'refuse' or 'fp32', not 'maybe'"),
    ],
)
def test_the_settings_check_names_what_is_wrong(settings, backend, quantization, ungated, problem):
    _serve(settings, backend, quantization, ungated)
    errors = serving_encoder(None)
    assert len(errors) == 1 and problem in errors[0].msg
    with pytest.raises(SystemCheckError, match="int8|UNGATED|backend|quantization"):
        call_command("check")


def test_the_settings_check_accepts_every_servable_encoder(settings):
    for backend, quantization in [("torch", "none"), ("onnx", "int8"), ("openvino", "none")]:
        for ungated in ("refuse", "fp32"):
            _serve(settings, backend, quantization, ungated)
            assert serving_encoder(None) == []


def test_a_gated_openvino_copy_serves_the_gates_own_scores_bit_for_bit(
    version, settings, scorer_client, quant_models
):
    """The copy the benchmark serves (OpenVINO int8, NNCF-calibrated): the same promise as
    ONNX, from the cache the gate filled and from a fresh one."""
    for module in ("openvino", "nncf"):
        __import__(module) if ON_CI else pytest.importorskip(module)
    _serve(settings, "openvino", "int8")
    with exported_once(quant_models, "openvino-int8"):  # tests/ml exports the same copy
        gate = run_gate(version, "openvino", "int8")
    texts, recorded = _texts(version), np.float32(gate.metrics["scores"]["quantized"])
    body = scorer_client.post(URL, {"prompts": texts}, format="json").json()
    assert body["encoder"]["backend"] == "openvino" and body["encoder"]["gate"] == gate.pk
    np.testing.assert_array_equal(np.float32([r["score"] for r in body["results"]]), recorded)
    settings.TRAINING = {**settings.TRAINING, "EMBEDDING_CACHE": settings.MEDIA_ROOT / "fresh"}
    from scoring.scorer import reset_scorer

    reset_scorer()
    again = scorer_client.post(URL, {"prompts": texts}, format="json").json()
    np.testing.assert_array_equal(np.float32([r["score"] for r in again["results"]]), recorded)
