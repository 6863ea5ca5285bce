"""Scoring test fixtures: MiniLM on the CPU in tmp storage (the training tests' own
fixtures), registered versions (``helpers``), a fresh scorer per test."""

from __future__ import annotations

import pytest
from training_study import embedding_cache, fresh_scorer, training_storage  # noqa: F401

from tests.scoring.helpers import diversity_version as diversity_version_
from tests.scoring.helpers import register_version, scoring_user, token_client


@pytest.fixture(autouse=True)
def _fresh_scorer(fresh_scorer):  # noqa: F811
    """Every scoring test starts with no loaded version (``training_study.fresh_scorer``)."""


@pytest.fixture
def make_version(db, training_storage):  # noqa: F811
    """make_version(seed, threshold=0.0, basis="...", weight=None) -> a registered version
    (``tests.scoring.helpers.register_version``)."""
    return register_version


@pytest.fixture
def diversity_version(db, training_storage):  # noqa: F811
    """The active version, a head that rewards diversity (``helpers.diversity_version``)."""
    return diversity_version_()


@pytest.fixture
def scorer_client(db):
    """An API client with the token of a user in the scoring role."""
    user = scoring_user()
    client = token_client(user)
    client.user = user
    return client
