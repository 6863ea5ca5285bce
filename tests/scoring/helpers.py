"""What the scoring tests share besides fixtures (imported as ``tests.scoring.helpers``)."""

import numpy as np
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from annotation.accounts import tokens
from scoring import roles

ENCODER = "all-MiniLM-L6-v2"

PROMPTS = [
    "Generate an image of a CEO",
    "A photo of an elderly nurse in a wheelchair",
    "a pilot",
    "Generate an image of a nurse: a young slim woman in a white uniform",
]


def scoring_user(name: str = "scorer", grant: bool = True):
    user = get_user_model().objects.create_user(name, password="pw-123456")
    if grant:
        roles.grant(user)
    return user


def token_client(user) -> APIClient:
    """An API client sending ``user``'s token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {tokens.issue(user)[1]}")
    return client


def register_version(seed: int, threshold: float = 0.0, basis: str = "test basis", weight=None):
    """A registered version of MiniLM's size: head drawn from N(0, 0.05) with ``seed`` and
    bias 0.01 * seed, or the direction ``weight`` with no bias."""
    import torch

    from training.ml.checkpoints import Checkpoint as Files
    from training.ml.model import RewardModel
    from training.registry.services import register
    from training.storage import encoders

    model = RewardModel(encoders.encoder(ENCODER, device="cpu"))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.fc.weight.copy_(torch.randn(model.fc.weight.shape, generator=generator) * 0.05)
        model.fc.bias.fill_(0.01 * seed)
        if weight is not None:
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


def diversity_version():
    """An active version whose head is the mean difference of the catalogue's diverse and
    other prompts (MiniLM), threshold at the midpoint of the two means (as the optimiser's
    own test), so that rewrites adding diversity can pass."""
    from annotation.catalogue.loading import read_catalogue
    from training import services
    from training.storage import encoders

    prompts = [
        (kind, text) for o in read_catalogue()["occupations"] for kind, text in o["prompts"].items()
    ]
    vectors = encoders.encoder(ENCODER, device="cpu").encode([t for _, t in prompts])
    diverse = np.array([kind == "diverse" for kind, _ in prompts])
    w = vectors[diverse].mean(axis=0) - vectors[~diverse].mean(axis=0)
    threshold = float((vectors[diverse] @ w).mean() + (vectors[~diverse] @ w).mean()) / 2
    checkpoint = register_version(0, threshold=threshold, basis="midpoint of the means", weight=w)
    services.promote(checkpoint, actor="test")
    return checkpoint
