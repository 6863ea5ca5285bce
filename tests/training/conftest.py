"""Fixtures for the training pipeline: tmp storage, MiniLM as the encoder, a small study."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from training_study import ENCODER, make_study


@pytest.fixture(scope="session")
def embedding_cache(tmp_path_factory):
    """One embedding cache for the session: each text is encoded once across tests."""
    return tmp_path_factory.mktemp("embeddings")


@pytest.fixture(autouse=True)
def training_storage(settings, tmp_path, embedding_cache, monkeypatch):
    """Checkpoints in a tmp folder, MiniLM on the CPU, images in a tmp MEDIA_ROOT."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    settings.TRAINING = {
        **settings.TRAINING,
        "CHECKPOINT_DIR": tmp_path / "checkpoints",
        "EMBEDDING_CACHE": embedding_cache,
        "DEFAULT_ENCODER": ENCODER,
        "DEVICE": "cpu",
        "PARAPHRASE_BACKEND": "offline",
    }
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.TRAINING


@pytest.fixture
def study(db, tmp_path):
    """12 occupations x 3 prompts x 2 images = 72 items, all ranked once (synthetic)."""
    return make_study(tmp_path)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="pw-123456", is_staff=True)
