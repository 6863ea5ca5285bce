"""Training test fixtures: storage and MiniLM (from training_study), a small study."""

from __future__ import annotations

import pytest
from training_study import embedding_cache, make_study, training_storage  # noqa: F401

from tests.object_store import object_store, s3_server  # noqa: F401
from tests.staff import make_staff


@pytest.fixture
def study(db, tmp_path):
    """12 occupations x 3 prompts x 2 images = 72 items, all ranked once (synthetic)."""
    return make_study(tmp_path)


@pytest.fixture
def staff(db):
    """A staff member who owns the default study (tests/staff.py)."""
    return make_staff("staff")
