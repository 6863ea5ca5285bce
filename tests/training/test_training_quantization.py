"""Quantized encoders on the Django side: the gate recorded and enforced, the command, and
the augmentation filter on an int8 copy; the gate's figures recomputed here with scipy from
the scores it recorded (never from a second int8 encode)."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.stats import binomtest, rankdata, spearmanr
from training_study import ENCODER, FAST

from tests.model_exports import exported_once
from training.errors import QuantizationError, QuantizationRefused
from training.models import Checkpoint, EncoderGate
from training.runs.augmentation import request_augmentation, run_augmentation
from training.runs.services import execute_run, start_run
from training.snapshots.services import EVAL, create_snapshot, rows_of
from training.storage import encoders
from training.storage.encoders import gated_model, run_gate

pytestmark = [pytest.mark.slow]
ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


@pytest.fixture
def quant_settings(settings, tmp_path, quant_models):
    """The [quant] extra (required on CI), the model directory shared by the run."""
    for module in ("onnxruntime", "onnxscript"):
        __import__(module) if ON_CI else pytest.importorskip(module)
    settings.TRAINING = {
        **settings.TRAINING,
        "MODEL_DIR": quant_models,
        # Fresh per test: each test encodes its eval split once, into its own cache.
        "EMBEDDING_CACHE": tmp_path / "embeddings",
        "QUANT_MAX_RHO_DRIFT": 0.01,
        "QUANT_MAX_FLIP_SHARE": 0.02,
    }
    return settings


@pytest.fixture
def version(study, quant_settings):
    """v1, its threshold moved between the fp32 and int8 scores of the prompt they differ
    most on, so that its flags flip (and any other that straddles it).

    The scores are the head on each encoder through the embedding cache the gate reads:
    every text is encoded once per encoder, here, and the gate scores those same
    embeddings (an int8 embedding depends on its batch-mates and on the CPU, so two
    encodes need not agree)."""
    from training.ml.checkpoints import load

    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    execute_run(run.pk, "node-a")
    checkpoint = Checkpoint.objects.get(version=1)
    texts = [r["text"] for r in rows_of(snapshot, EVAL)]
    files = load(checkpoint.path)
    with exported_once(quant_settings.TRAINING["MODEL_DIR"], "onnx-int8"):
        copy = encoders.encoder(ENCODER, backend="onnx", quantization="int8")
    cache = encoders.embedding_cache()
    ref = files.to_model(encoders.encoder(ENCODER, device="cpu")).score(texts, cache=cache)
    quant = files.to_model(copy, allow_other_backend=True).score(texts, cache=cache)
    i = int(np.argmax(np.abs(ref - quant)))
    assert ref[i] != quant[i]
    threshold = (float(ref[i]) + float(quant[i])) / 2
    Checkpoint.objects.filter(pk=checkpoint.pk).update(threshold=threshold)
    checkpoint.refresh_from_db()
    flips = int(np.sum((ref < threshold) != (quant < threshold)))
    assert flips >= texts.count(texts[i]) >= 1
    checkpoint.scores = texts, ref, quant, copy, flips
    return checkpoint


def _recomputed(m: dict) -> dict:
    """The gate's figures recomputed with scipy and numpy from the scores it recorded: rank
    figures on the eval split, the copy's threshold from the training prompts' line, flips
    on the gate set, their bound by scipy's exact binomial interval."""
    ref, quant, labels = (np.array(m["scores"][k]) for k in ("fp32", "quantized", "labels"))
    t = m["threshold"]
    slope, intercept = np.polyfit(
        m["scores"]["train"]["fp32"], m["scores"]["train"]["quantized"], 1
    )
    copy = intercept + slope * t
    gate_fp, gate_q = (np.array(m["scores"]["gate_set"][k]) for k in ("fp32", "quantized"))
    flips = int(np.sum((gate_fp < t) != (gate_q < copy)))
    rho_fp32, rho_quant = spearmanr(ref, labels).statistic, spearmanr(quant, labels).statistic
    rank_rho = np.corrcoef(rankdata(ref), rankdata(quant))[0, 1]
    upper = binomtest(flips, len(gate_fp)).proportion_ci(0.90, method="exact").high
    return {
        "n": len(ref),
        "rank_rho": rank_rho,
        "rho_fp32": rho_fp32,
        "rho_quantized": rho_quant,
        "rho_drift": max(1 - rank_rho, abs(rho_quant - rho_fp32)),
        "copy_threshold": copy,
        "flips": flips,
        "flip_n": len(gate_fp),
        "flip_share": flips / len(gate_fp),
        "flip_upper": upper,
        "max_abs_diff": float(np.max(np.abs(ref - quant))),
    }


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
    texts, ref, quant, copy, _ = version.scores
    _tolerate(quant_settings, 0.5, 1.0)
    with pytest.raises(QuantizationRefused, match="has not passed the accuracy gate"):
        gated_model(version, "onnx", "int8")
    gate = run_gate(version, "onnx", "int8")
    encoded = copy.texts_encoded
    run_gate(version, "onnx", "int8")
    assert copy.texts_encoded == encoded  # a second gate encodes nothing: all cached
    gate.refresh_from_db()
    assert gate.passed and gate.encoder_key == copy.identity.key
    assert gate.snapshot_id == version.snapshot_id
    assert gate.encoder_identity["backend"] == "onnx"
    m = gate.metrics
    # The recorded scores are the ones of the eval split, and the figures are theirs.
    eval_rows = rows_of(version.snapshot, EVAL)
    assert m["scores"]["keys"] == [r["key"] for r in eval_rows]
    assert m["scores"]["labels"] == pytest.approx([r["label"] for r in eval_rows])
    np.testing.assert_array_equal(m["scores"]["fp32"], ref)
    np.testing.assert_array_equal(m["scores"]["quantized"], quant)
    assert m["scores"]["gate_set"]["version"] == m["gate_set_version"] == 1
    expected = _recomputed(m)
    assert m["n"] == expected["n"] == len(texts) and m["threshold"] == version.threshold
    assert m["flip_n"] == 400 and m["calibrated_on"] == len(m["scores"]["train"]["fp32"])
    for key in ("rank_rho", "rho_fp32", "rho_quantized", "rho_drift", "flip_share"):
        assert m[key] == pytest.approx(expected[key], abs=1e-12), key
    assert m["copy_threshold"] == pytest.approx(expected["copy_threshold"], abs=1e-9)
    assert m["flip_upper"] == pytest.approx(expected["flip_upper"], rel=1e-9)
    assert m["flips"] == expected["flips"]
    assert m["max_abs_diff"] == pytest.approx(expected["max_abs_diff"], abs=1e-12)
    assert 0 <= m["flag_agreement"]["catalogue"] <= 1 and m["passed"] is True

    gated = gated_model(version, "onnx", "int8")
    assert gated.model.encoder.identity == copy.identity and gated.gate == gate
    scored = gated.model.score(texts, cache=encoders.embedding_cache())
    np.testing.assert_array_equal(scored, quant)  # the gated copy's own (cached) embeddings
    np.testing.assert_array_equal(gated.score(texts), quant)  # the gate's path, served
    fp32 = gated_model(version)
    assert fp32.model.encoder.identity.backend == "torch" and fp32.gate is None
    # Tolerances tightened later, below the recorded bound: it no longer opens serving.
    _tolerate(quant_settings, 0.5, m["flip_upper"] * 0.99)
    with pytest.raises(QuantizationRefused, match="current tolerances"):
        gated_model(version, "onnx", "int8")


def test_the_command_refuses_above_tolerance_and_records_it(version, quant_settings):
    _tolerate(quant_settings, 0.0, 0.0)
    refused = r"onnx/int8 refused for v1.*of 400 flags flip: the flip rate's 95% upper bound"
    with pytest.raises(CommandError, match=refused):
        _command("1", "--backend", "onnx", "--quantization", "int8")
    gate = EncoderGate.objects.get()
    flips = gate.metrics["flips"]
    assert not gate.passed and gate.metrics["flip_n"] == 400
    with pytest.raises(QuantizationRefused):
        gated_model(version, "onnx", "int8")
    _tolerate(quant_settings, 0.5, 1.0)
    out = _command("1")  # onnx/int8 by default
    assert "v1 onnx/int8 on snapshot" in out and "passed" in out
    assert f"{flips} of 400 gate-set flags flipped" in out and "flags agree with fp32's" in out
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
    with exported_once(quant_settings.TRAINING["MODEL_DIR"], "onnx-int8"):
        copy = encoders.encoder(ENCODER, backend="onnx", quantization="int8")
    assert augmentation.stats["filter_encoder_backend"] == "onnx/int8"
    assert augmentation.stats["filter_encoder_key"] == copy.identity.key
    # Kept cosines are the copy's, within int8 noise of the fp32 encoder's own.
    fp32 = encoders.encoder(ENCODER, device="cpu").model
    origin = {r["key"]: r["text"] for r in snapshot.examples}
    rows = list(augmentation.paraphrases.order_by("id")[:20])
    assert rows
    a = fp32.encode([origin[p.origin_key] for p in rows], normalize_embeddings=True)
    b = fp32.encode([p.text for p in rows], normalize_embeddings=True)
    np.testing.assert_allclose([p.cosine for p in rows], (a * b).sum(1), atol=0.03)


def test_library_errors_become_the_projects_with_their_message():
    from core.errors import http_status
    from training.errors import ml_refusals
    from training.ml.checkpoints import CheckpointError

    refused = pytest.raises(QuantizationError, match=r"^v3: damaged$")
    with refused as info, ml_refusals(QuantizationError, "v3: "):
        raise CheckpointError("damaged")
    assert isinstance(info.value.__cause__, CheckpointError) and http_status(info.value) == 400
    with pytest.raises(KeyError), ml_refusals(QuantizationError):  # not the library's: a bug
        raise KeyError("x")
