"""What the training and dashboard tests share: constants, storage fixtures, a study builder.

Imported by basename: pyproject puts tests/training on pytest's pythonpath."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotation.catalogue.loading import load_catalogue, read_catalogue
from annotation.studies.simulation import simulate
from annotation.studies.tasks_builder import build_tasks

# Few epochs at a higher learning rate than the seed's, so a test run learns something.
FAST = {"epochs": 3, "lr": 1e-2, "n_boot": 100}
ENCODER = "all-MiniLM-L6-v2"


def empty_snapshot():
    """A snapshot with no labels: what a test of runs needs when nothing is trained."""
    from training.models import DatasetSnapshot

    return DatasetSnapshot.objects.create(
        ranking_count=0,
        content_hash="0" * 64,
        example_count=0,
        train_count=0,
        eval_count=0,
        examples=[],
    )


def make_study(
    folder: Path,
    occupations: int = 12,
    images: int = 2,
    annotators: int = 6,
    seed: int = 0,
    study=None,
) -> dict:
    """The catalogue's first ``occupations`` (3 prompts each, ``images`` items per prompt),
    tasks of 6, and synthetic annotators who rank every task once, in ``study`` (default:
    the default study)."""
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:occupations]
    path = folder / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=images, path=path, study=study)
    tasks = build_tasks(size=6, overlap=1, seed=seed, study=study)
    per_annotator = -(-tasks // annotators)
    result = simulate(annotators, per_annotator, seed=seed, study=study)
    return {"tasks": tasks, **result}


@pytest.fixture
def fresh_scorer():
    """No loaded version survives from one test to the next (settings differ, and every
    test's database numbers its versions from 1). Autouse where a conftest imports it."""
    from scoring.scorer import reset_scorer

    reset_scorer()
    yield
    reset_scorer()


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


def make_perspective_study(folder: Path, annotators: int = 15, overlap: int = 4) -> dict:
    """12 occupations x 3 prompts x 2 images in tasks of 6 ranked ``overlap`` times by
    synthetic annotators whose ``age_band`` is then set: two thirds ``18-24``, three
    ``25-34``, the rest "prefer not to say" (the report reads demographics as they stand)."""
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:12]
    path = folder / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=2, path=path)
    tasks = build_tasks(size=6, overlap=overlap, seed=0)
    simulate(annotators, -(-tasks * overlap // annotators), seed=0)
    from annotation.models import AnnotatorProfile

    profiles = list(AnnotatorProfile.objects.filter(is_synthetic=True).order_by("user__username"))
    bands = {}
    for n, profile in enumerate(profiles):
        cut = 2 * len(profiles) // 3
        band = "18-24" if n < cut else "25-34" if n < cut + 3 else None
        profile.demographics = {"age_band": band or "prefer not to say"}
        profile.save(update_fields=["demographics"])
        bands[profile.pk] = band
    return {"tasks": tasks, "bands": bands}


def register_head(snapshot, seed: int = 0, hyperparameters: dict | None = None):
    """A version with a seeded random head (no training) on ``snapshot``; returns
    ``(checkpoint, model)``, the in-memory model to score with independently."""
    import torch

    from training.ml.checkpoints import Checkpoint as MLCheckpoint
    from training.ml.model import RewardModel
    from training.registry.services import register
    from training.storage import encoders

    torch.manual_seed(seed)
    model = RewardModel(encoders.encoder(ENCODER, device="cpu")).eval()
    with torch.no_grad():
        model.fc.weight.mul_(20.0)  # scores spread enough for positions to differ
    files = MLCheckpoint.from_model(
        model,
        hyperparameters={"temperature": 0.5, "dropout": 0.1, **(hyperparameters or {})},
        data_hash="",
    )
    return register(files, snapshot=snapshot), model
