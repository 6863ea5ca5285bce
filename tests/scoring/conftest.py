"""Scoring test fixtures: MiniLM on the CPU in tmp storage (the training tests' own
fixtures), registered versions with seeded random heads, a fresh scorer per test."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from training_study import ENCODER, embedding_cache, training_storage  # noqa: F401

from scoring import roles
from scoring.scorer import reset_scorer

PROMPTS = [
    "Generate an image of a CEO",
    "A photo of an elderly nurse in a wheelchair",
    "a pilot",
    "Generate an image of a nurse: a young slim woman in a white uniform",
]


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

    def make(seed: int, threshold: float = 0.0, basis: str = "test basis"):
        encoder = encoding.encoder(ENCODER, device="cpu")
        model = RewardModel(encoder)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            model.fc.weight.copy_(torch.randn(model.fc.weight.shape, generator=generator) * 0.05)
            model.fc.bias.fill_(0.01 * seed)
        files = Files.from_model(
            model,
            hyperparameters={"dropout": 0.1},
            data_hash="",
            threshold=threshold,
            extra={"calibration": {"basis": basis}},
        )
        return register(files, source=f"test seed {seed}")

    return make


def scoring_user(name: str = "scorer", grant: bool = True):
    user = get_user_model().objects.create_user(name, password="pw-123456")
    if grant:
        roles.grant(user)
    return user


@pytest.fixture
def scorer_client(db):
    """An API client with the token of a user in the scoring role."""
    user = scoring_user()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    client.user = user
    return client
