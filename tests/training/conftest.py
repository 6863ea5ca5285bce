"""Training test fixtures: storage and MiniLM (from training_study), a small study."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from training_study import embedding_cache, make_study, training_storage  # noqa: F401

from tests.object_store import object_store, s3_server  # noqa: F401


@pytest.fixture
def study(db, tmp_path):
    """12 occupations x 3 prompts x 2 images = 72 items, all ranked once (synthetic)."""
    return make_study(tmp_path)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="pw-123456", is_staff=True)
