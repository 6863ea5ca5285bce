"""Quantized encoders on the Django side: the gate recorded and enforced, the command, and
the augmentation filter on an int8 copy; figures checked against ranks computed here."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.stats import rankdata
from training_study import ENCODER, FAST

from training import encoding
from training.augmentation import request_augmentation, run_augmentation
from training.errors import QuantizationError, QuantizationRefused
from training.evaluation import eval_arrays
from training.models import Checkpoint, EncoderGate
from training.quantization import gated_model, run_gate
from training.runs import execute_run, start_run
from training.snapshots import create_snapshot

pytestmark = [pytest.mark.slow]
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture
def quant_settings(settings, tmp_path, tmp_path_factory):
    """The [quant] extra (required on CI), a model directory shared by the session."""
    for module in ("onnxruntime", "onnxscript"):
        __import__(module) if ON_CI else pytest.importorskip(module)
    model_dir = tmp_path_factory.getbasetemp() / "quant-models"
    model_dir.mkdir(exist_ok=True)
    settings.TRAINING = {
        **settings.TRAINING,
        "MODEL_DIR": model_dir,
        # Fresh per test: an int8 (dynamic) embedding depends slightly on its batch-mates,
        # so the scores below are computed on the batch the cache will encode.
        "EMBEDDING_CACHE": tmp_path / "embeddings",
        "QUANT_MAX_RHO_DRIFT": 0.01,
        "QUANT_MAX_FLIP_SHARE": 0.02,
    }
    return settings


@pytest.fixture
def version(study, quant_settings):
    """v1, its threshold moved between the fp32 and int8 scores of the prompt they differ
    most on, so that its flags flip (and any other that straddles it); with scores
    computed here independently: the head on SentenceTransformer.encode and on the
    copy's output."""
    from training.ml.checkpoints import load

    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    execute_run(run.pk, "node-a")
    checkpoint = Checkpoint.objects.get(version=1)
    _, rows = eval_arrays(snapshot)
    texts = [r["text"] for r in rows]
    distinct = list(dict.fromkeys(texts))  # what the cache encodes, in one call
    row = [distinct.index(t) for t in texts]
    head = load(checkpoint.path).head
    w, b = head["fc.weight"].numpy().ravel(), float(head["fc.bias"].numpy()[0])
    fp32 = encoding.encoder(ENCODER, device="cpu").model.encode(distinct, convert_to_numpy=True)
    copy = encoding.encoder(ENCODER, backend="onnx", quantization="int8")
    ref, quant = (fp32 @ w + b)[row], (copy.encode(distinct) @ w + b)[row]
    i = int(np.argmax(np.abs(ref - quant)))
    assert ref[i] != quant[i]
    threshold = (ref[i] + quant[i]) / 2
    Checkpoint.objects.filter(pk=checkpoint.pk).update(threshold=threshold)
    checkpoint.refresh_from_db()
    flips = int(np.sum((ref < threshold) != (quant < threshold)))
    assert flips >= texts.count(texts[i]) >= 1
    checkpoint.scores = texts, ref, quant, copy, flips
    return checkpoint


def _command(*args) -> str:
    out = io.StringIO()
    call_command("encoder_gate", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _tolerate(settings, drift: float, flips: float) -> None:
    settings.TRAINING = {
        **settings.TRAINING,
        "QUANT_MAX_RHO_DRIFT": drift,
        "QUANT_MAX_FLIP_SHARE": flips,
    }


def test_a_passed_gate_is_recorded_and_opens_serving_within_todays_tolerances(
    version, quant_settings
):
    texts, ref, quant, copy, flips = version.scores
    _tolerate(quant_settings, 0.5, flips / len(texts))  # inclusive: exactly the share passes
    with pytest.raises(QuantizationRefused, match="has not passed the accuracy gate"):
        gated_model(version, "onnx", "int8")
    gate = run_gate(version, "onnx", "int8")
    assert gate.passed and gate.encoder_key == copy.identity.key
    assert gate.snapshot_id == version.snapshot_id
    assert gate.encoder_identity["backend"] == "onnx"
    m = gate.metrics
    assert m["n"] == len(texts) and m["threshold"] == version.threshold
    assert m["rank_rho"] == pytest.approx(np.corrcoef(rankdata(ref), rankdata(quant))[0, 1])
    assert m["flips"] == flips and m["flip_share"] == pytest.approx(flips / len(texts))
    assert m["max_abs_diff"] == pytest.approx(np.max(np.abs(ref - quant)), abs=1e-5)
    assert m["passed"] is True

    model = gated_model(version, "onnx", "int8")
    assert model.encoder.identity == copy.identity
    np.testing.assert_allclose(model.score(texts), quant, atol=1e-4)
    assert gated_model(version).encoder.identity.backend == "torch"
    # Tolerances tightened later: the recorded figures no longer open serving.
    _tolerate(quant_settings, 0.5, (flips - 0.5) / len(texts))
    with pytest.raises(QuantizationRefused, match="current tolerances"):
        gated_model(version, "onnx", "int8")


def test_the_command_refuses_above_tolerance_and_records_it(version, quant_settings):
    texts, flips = version.scores[0], version.scores[4]
    _tolerate(quant_settings, 0.0, 0.0)
    refused = rf"onnx/int8 refused for v1.*{flips} of {len(texts)} flags flip"
    with pytest.raises(CommandError, match=refused):
        _command("1", "--backend", "onnx", "--quantization", "int8")
    gate = EncoderGate.objects.get()
    assert not gate.passed and gate.metrics["flips"] == flips
    with pytest.raises(QuantizationRefused):
        gated_model(version, "onnx", "int8")
    _tolerate(quant_settings, 0.5, flips / len(texts))
    out = _command("1")  # onnx/int8 by default
    assert "v1 onnx/int8 on snapshot" in out and "passed" in out and f"{flips} flags flipped" in out
    gate = EncoderGate.objects.get()  # the same row, now passed
    assert gate.passed
    with pytest.raises(QuantizationError, match="fp32 encoder itself"):
        run_gate(version, "torch", "none")
    with pytest.raises(QuantizationError, match="unknown encoder backend"):
        run_gate(version, "tensorrt", "int8")
    with pytest.raises(CommandError, match="invalid choice"):
        _command("1", "--backend", "torch")


def test_the_augmentation_filter_runs_on_the_backend_settings_name(study, quant_settings):
    quant_settings.TRAINING = {
        **quant_settings.TRAINING,
        "AUGMENT_ENCODER_BACKEND": "onnx",
        "AUGMENT_ENCODER_QUANTIZATION": "int8",
    }
    snapshot = create_snapshot(include_synthetic=True)
    augmentation, _ = request_augmentation(snapshot, "offline", n=2)
    augmentation = run_augmentation(augmentation.pk, ENCODER)
    copy = encoding.encoder(ENCODER, backend="onnx", quantization="int8")
    assert augmentation.stats["filter_encoder_backend"] == "onnx/int8"
    assert augmentation.stats["filter_encoder_key"] == copy.identity.key
    # Kept cosines are the copy's, within int8 noise of the fp32 encoder's own.
    fp32 = encoding.encoder(ENCODER, device="cpu").model
    origin = {r["key"]: r["text"] for r in snapshot.examples}
    rows = list(augmentation.paraphrases.order_by("id")[:20])
    assert rows
    a = fp32.encode([origin[p.origin_key] for p in rows], normalize_embeddings=True)
    b = fp32.encode([p.text for p in rows], normalize_embeddings=True)
    np.testing.assert_allclose([p.cosine for p in rows], (a * b).sum(1), atol=0.03)
