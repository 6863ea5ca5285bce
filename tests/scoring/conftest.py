"""Scoring test fixtures: MiniLM on the CPU in tmp storage (the training tests' own
fixtures), registered versions with seeded random heads, a fresh scorer per test."""

from __future__ import annotations

import numpy as np
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from training_study import ENCODER, embedding_cache, training_storage  # noqa: F401

from scoring.scorer import reset_scorer
from tests.scoring.helpers import scoring_user


@pytest.fixture(autouse=True)
def fresh_scorer():
    """No loaded version survives from one test to the next (settings differ)."""
    reset_scorer()
    yield
    reset_scorer()


@pytest.fixture
def make_version(db, training_storage):  # noqa: F811
    """make_version(seed, threshold=0.0, basis="...") -> a registered Checkpoint row whose
    head is MiniLM's size, drawn from N(0, 0.05) with ``seed``."""
    import torch

    from training import encoding
    from training.ml.checkpoints import Checkpoint as Files
    from training.ml.model import RewardModel
    from training.registry import register

    def make(seed: int, threshold: float = 0.0, basis: str = "test basis", weight=None):
        encoder = encoding.encoder(ENCODER, device="cpu")
        model = RewardModel(encoder)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            model.fc.weight.copy_(torch.randn(model.fc.weight.shape, generator=generator) * 0.05)
            model.fc.bias.fill_(0.01 * seed)
            if weight is not None:  # a given direction, no bias
                model.fc.weight.copy_(torch.as_tensor(weight, dtype=torch.float32).reshape(1, -1))
                model.fc.bias.zero_()
        files = Files.from_model(
            model,
            hyperparameters={"dropout": 0.1},
            data_hash="",
            threshold=threshold,
            extra={"calibration": {"basis": basis}},
        )
        return register(files, source=f"test seed {seed}")

    return make


@pytest.fixture
def diversity_version(make_version):
    """The active version: a head along the mean difference of the catalogue's diverse and
    other prompts (MiniLM), threshold at the midpoint of the two means (as the optimiser's
    own test), so that rewrites adding diversity can pass."""
    from annotation.catalogue import read_catalogue
    from training import encoding
    from training import services as training_services

    prompts = [
        (kind, text) for o in read_catalogue()["occupations"] for kind, text in o["prompts"].items()
    ]
    vectors = encoding.encoder(ENCODER, device="cpu").encode([t for _, t in prompts])
    diverse = np.array([kind == "diverse" for kind, _ in prompts])
    w = vectors[diverse].mean(axis=0) - vectors[~diverse].mean(axis=0)
    threshold = float((vectors[diverse] @ w).mean() + (vectors[~diverse] @ w).mean()) / 2
    checkpoint = make_version(0, threshold=threshold, basis="midpoint of the means", weight=w)
    training_services.promote(checkpoint, actor="test")
    return checkpoint


@pytest.fixture
def scorer_client(db):
    """An API client with the token of a user in the scoring role."""
    user = scoring_user()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    client.user = user
    return client
