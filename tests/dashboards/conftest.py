"""Fixtures of the dashboard tests: staff and annotator browsers, real rankings."""

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.assignment.next_task import next_task
from annotation.participants import services
from tests.staff import make_staff
from training.models import Checkpoint, Evaluation


@pytest.fixture
def staff_client(db) -> Client:
    """A browser signed in as a staff member who owns the default study (tests/staff.py)."""
    user = make_staff("staff")
    client = Client()
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def annotator_client(db) -> Client:
    """A browser signed in as an annotator (not staff)."""
    user = get_user_model().objects.create_user("annie", password="pw-123456")
    services.give_consent(services.get_profile(user))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def rank():
    """rank(profile, n): the annotator ranks n tasks through the services, in shown order."""

    def do(profile, n: int) -> None:
        for _ in range(n):
            assignment = next_task(profile)
            assert assignment is not None, "no task left to rank"
            services.submit_ranking(profile, assignment.task_id, list(assignment.shown_order))

    return do


# Checkpoints in a tmp folder, MiniLM on the CPU, images in a tmp MEDIA_ROOT: the
# training tests' own fixtures, reused rather than repeated.
from training_study import (  # noqa: E402, F401
    ENCODER,
    embedding_cache,
    make_study,
    training_storage,
)


@pytest.fixture
def study(db, tmp_path):
    """12 occupations x 3 prompts x 2 images = 72 items in 12 tasks, ranked (synthetic)."""
    return make_study(tmp_path)


@pytest.fixture
def registry_rows(study):
    """registry_rows(noise=[...]) -> (snapshot, [checkpoints]): one version per noise level,
    each evaluated on the snapshot with predictions = label + seeded noise (ORM rows)."""
    from core.json import json_safe
    from training.ml.metrics import evaluate
    from training.snapshots.services import EVAL, create_snapshot, rows_of

    snapshot = create_snapshot(include_synthetic=True)
    rows = rows_of(snapshot, EVAL)

    def make(noise: list[float], active: int | None = None, start: int = 1):
        made = []
        for i, level in enumerate(noise):
            rng = np.random.default_rng(i + start)
            labels = np.array([r["label"] for r in rows])
            scores = labels + rng.normal(0.0, level, size=labels.size)
            metrics = evaluate(
                scores,
                labels,
                [r["group"] for r in rows],
                [r["occupation"] for r in rows],
                n_boot=200,
            )
            metrics = json_safe(metrics)
            version = start + i
            checkpoint = Checkpoint.objects.create(
                version=version,
                status=Checkpoint.Status.ACTIVE if version == active else "candidate",
                path=f"/nonexistent/v{version}",
                head_sha256="0" * 64,
                encoder_name=ENCODER,
                encoder_identity={"name": ENCODER},
                snapshot=snapshot,
                threshold=0.12,
                metrics=metrics,
            )
            Evaluation.objects.create(
                checkpoint=checkpoint,
                snapshot=snapshot,
                metrics=metrics,
                predictions={r["key"]: float(s) for r, s in zip(rows, scores, strict=True)},
            )
            made.append(checkpoint)
        return snapshot, made

    return make
