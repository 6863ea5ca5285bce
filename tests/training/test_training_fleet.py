"""A fleet: training on one node, scoring on another, sharing only PostgreSQL, Redis and
the object store (moto's S3 server, tests/object_store.py).

Node A is a real Celery worker process (``-Q default,gpu``) with checkpoint, media and
embedding folders of its own; node B is ``manage.py score --json`` in a subprocess with
other, empty ones. Nothing but the database URL, the broker URL and the store's settings
is common to them; this test process only queues work and reads rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection
from test_training_worker import REPO, Worker, _purge_broker, wait_for
from training_study import ENCODER, FAST, make_study

from training.ml.checkpoints import load as load_files
from training.models import Checkpoint, TrainingRun
from training.runs.services import start_run
from training.snapshots.services import create_snapshot

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]
PROMPTS = ["A photo of a nurse", "A CEO of any gender and ethnicity at work", "An engineer"]


def _node_env(folder, store_env: dict) -> dict:
    """What one node of the fleet is given: the shared services and folders of its own."""
    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEREORANK_")}
    return {
        **env,
        **store_env,
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        "CELERY_RESULT_BACKEND": settings.CELERY_RESULT_BACKEND,
        "STEREORANK_EMBEDDED": "true",
        "STEREORANK_VAR_DIR": str(folder / "var"),
        "STEREORANK_CHECKPOINT_DIR": str(folder / "checkpoints"),
        "STEREORANK_EMBEDDING_CACHE": str(folder / "embeddings"),
        "STEREORANK_MEDIA_ROOT": str(folder / "media"),
        "STEREORANK_MODEL_DIR": str(folder / "models"),
        "STEREORANK_ENCODER": ENCODER,
        "STEREORANK_DEVICE": "cpu",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


@pytest.fixture
def node_a(transactional_db, tmp_path, s3_server, object_store):
    folder = tmp_path / "node-a"
    folder.mkdir()
    _purge_broker()
    worker = Worker(folder / "worker.log", _node_env(folder, s3_server.env(object_store)))
    worker.folder = folder
    yield worker.start()
    worker.stop()
    _purge_broker()


def test_a_version_trained_on_node_a_is_scored_on_node_b(
    node_a, tmp_path, s3_server, object_store, settings
):
    # This process is neither node: its checkpoint folder is one more empty one.
    settings.TRAINING = {**settings.TRAINING, "CHECKPOINT_DIR": tmp_path / "queuer"}
    make_study(tmp_path, occupations=8)
    images = s3_server.keys(object_store, "media/")
    assert len(images) == 8 * 3 * 2, "the catalogue's images are on the store"
    snapshot = create_snapshot(include_synthetic=True)
    run = start_run(snapshot, hyperparameters={**FAST, "seed": 3})
    run = wait_for(
        lambda: TrainingRun.objects.filter(pk=run.pk, status__in=["done", "failed"]).first(),
        timeout=300,
        what="node A's run",
        worker=node_a,
    )
    assert run.status == "done", (run.error, node_a.tail())
    checkpoint = Checkpoint.objects.get(run=run)
    assert checkpoint.path == f"store:v{checkpoint.version}"
    assert s3_server.keys(object_store, "checkpoints/") == [
        f"checkpoints/v{checkpoint.version}/head.safetensors",
        f"checkpoints/v{checkpoint.version}/manifest.json",
    ]
    on_a = node_a.folder / "checkpoints" / ".store" / f"v{checkpoint.version}"
    assert on_a.is_dir() and not (tmp_path / "queuer").exists()

    folder_b = tmp_path / "node-b"
    folder_b.mkdir()
    env_b = _node_env(folder_b, s3_server.env(object_store))
    score = subprocess.run(
        [sys.executable, "manage.py", "score", "--json", "--version", str(checkpoint.version)]
        + PROMPTS,
        cwd=REPO,
        env=env_b,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert score.returncode == 0, score.stderr[-3000:]
    body = json.loads(score.stdout)
    assert body["version"] == checkpoint.version
    assert [r["prompt"] for r in body["results"]] == PROMPTS
    # Node B fetched the version from the store into its own folder ...
    on_b = folder_b / "checkpoints" / ".store" / f"v{checkpoint.version}"
    assert (on_b / "head.safetensors").read_bytes() == (on_a / "head.safetensors").read_bytes()
    # ... and scores as node A's own files do, computed here, apart from both.
    from training.storage import encoders

    encoder = encoders.encoder(ENCODER, device="cpu")
    expected = load_files(on_a, encoder).to_model(encoder).score(PROMPTS)
    assert [r["score"] for r in body["results"]] == pytest.approx(expected.tolist(), abs=1e-5)
    # The nodes shared no folder: each wrote only under its own.
    assert not (folder_b / "media").exists() and not (node_a.folder / "media").exists()
