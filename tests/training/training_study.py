"""What the training and dashboard tests share: constants, storage fixtures, a study builder.

Imported by basename: pyproject puts tests/training on pytest's pythonpath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.catalogue import load_catalogue, read_catalogue
from annotation.simulation import simulate
from annotation.tasks_builder import build_tasks

# Few epochs at a higher learning rate than the seed's, so a test run learns something.
FAST = {"epochs": 3, "lr": 1e-2, "n_boot": 100}
ENCODER = "all-MiniLM-L6-v2"


def make_study(
    folder: Path, occupations: int = 12, images: int = 2, annotators: int = 6, seed: int = 0
) -> dict:
    """The catalogue's first ``occupations`` (3 prompts each, ``images`` items per prompt),
    tasks of 6, and synthetic annotators who rank every task once."""
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:occupations]
    path = folder / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=images, path=path)
    tasks = build_tasks(size=6, overlap=1, seed=seed)
    per_annotator = -(-tasks // annotators)
    result = simulate(annotators, per_annotator, seed=seed)
    return {"tasks": tasks, **result}


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
