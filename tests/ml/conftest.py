"""Fixtures for the reward-model core: offline settings, one real MiniLM per session."""

from __future__ import annotations

import importlib.metadata

import pytest

from training.ml.encoders.loading import load_encoder
from training.ml.encoders.resolve import MPNET_PARTS
from training.ml.synthetic import synthetic_examples


@pytest.fixture(scope="session", autouse=True)
def offline(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    yield
    mp.undo()


@pytest.fixture(scope="session")
def minilm():
    return load_encoder("all-MiniLM-L6-v2", device="cpu")


@pytest.fixture(scope="session")
def small_examples():
    """6 occupations x 3 types x 4 originals x 3 variants = 216 texts."""
    return synthetic_examples(n_occupations=6, prompts_per_type=4, variants=3, seed=1)


@pytest.fixture(scope="session")
def seed_model_dir(tmp_path_factory):
    """An empty model directory for the seed encoder's parts; skip without its part packages."""
    try:
        for name in MPNET_PARTS:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the seed encoder's parts are not installed (requirements/seed-encoder.txt)")
    return tmp_path_factory.mktemp("models")
