"""Checkpoints and media on an S3-compatible store (moto's server, tests/object_store.py):
the storage settings, the upload inside the registry transaction, the fetch on a node
with an empty CHECKPOINT_DIR and its head-hash check, the sweep of orphans."""

from __future__ import annotations

import io
import json
import os

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from training_study import ENCODER, register_head

from training.errors import RegistryError
from training.models import Checkpoint
from training.registry import services as registry
from training.storage import checkpoint_store, encoders
from web import storage_settings

TEXTS = ["a portrait of a nurse", "a CEO at her desk", "a diverse group of engineers"]
STATIC = "django.contrib.staticfiles.storage.StaticFilesStorage"


def _storages(monkeypatch, **values):
    for name in [n for n in os.environ if n.startswith("STEREORANK_S")]:
        monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return storage_settings.storages(environ.Env(), static_backend=STATIC)


def test_storage_settings_local_by_default_s3_when_told(monkeypatch):
    kind, storages = _storages(monkeypatch)
    assert kind == "local" and "checkpoints" not in storages
    assert storages["default"]["BACKEND"].endswith("FileSystemStorage")
    kind, storages = _storages(
        monkeypatch,
        STEREORANK_STORAGE="S3",
        STEREORANK_S3_BUCKET="b",
        STEREORANK_S3_ENDPOINT_URL="http://minio:9000",
        STEREORANK_S3_CUSTOM_DOMAIN="cdn.example.org",
    )
    assert kind == "s3"
    media, ckpt = storages["default"]["OPTIONS"], storages["checkpoints"]["OPTIONS"]
    assert (media["location"], ckpt["location"]) == ("media", "checkpoints")
    assert media["addressing_style"] == "path" and media["custom_domain"] == "cdn.example.org"
    assert ckpt["custom_domain"] is None and ckpt["querystring_auth"] is True
    with pytest.raises(ImproperlyConfigured, match="needs STEREORANK_S3_BUCKET"):
        _storages(monkeypatch, STEREORANK_STORAGE="s3")
    with pytest.raises(ImproperlyConfigured, match="'nfs': use local or s3"):
        _storages(monkeypatch, STEREORANK_STORAGE="nfs")
    with pytest.raises(ImproperlyConfigured, match="a folder of its own"):
        _storages(
            monkeypatch,
            STEREORANK_STORAGE="s3",
            STEREORANK_S3_BUCKET="b",
            STEREORANK_S3_CHECKPOINT_PREFIX="media/",
        )


def _scores(model) -> list[float]:
    return model.score(TEXTS).tolist()


def _another_node(settings, tmp_path, name: str = "node-b"):
    """This process now reads as a node with an empty checkpoint folder of its own."""
    settings.TRAINING = {**settings.TRAINING, "CHECKPOINT_DIR": tmp_path / name / "checkpoints"}
    return settings.TRAINING["CHECKPOINT_DIR"]


pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_a_version_registered_on_the_store_scores_the_same_on_another_node(
    object_store, s3_server, settings, tmp_path
):
    checkpoint, model = register_head(None)
    assert checkpoint.path == "store:v1"
    assert s3_server.keys(object_store) == [
        "checkpoints/v1/head.safetensors",
        "checkpoints/v1/manifest.json",
    ]
    manifest = json.loads(
        s3_server.client()
        .get_object(Bucket=object_store, Key="checkpoints/v1/manifest.json")["Body"]
        .read()
    )
    assert manifest["head_sha256"] == checkpoint.head_sha256
    assert (registry.checkpoint_root() / ".store" / "v1" / "manifest.json").is_file()

    root_b = _another_node(settings, tmp_path)
    assert not root_b.exists()
    served = encoders.load_model(Checkpoint.objects.get(version=1))
    assert _scores(served) == pytest.approx(_scores(model), abs=1e-6)
    assert sorted(p.name for p in (root_b / ".store" / "v1").iterdir()) == [
        "head.safetensors",
        "manifest.json",
    ]
    # A native export on that node is the store's copy.
    out = registry.export_checkpoint(checkpoint, "native", tmp_path / "exported")
    assert (out / "manifest.json").read_bytes() == (root_b / ".store/v1/manifest.json").read_bytes()


@pytest.mark.slow
def test_a_replaced_or_missing_head_on_the_store_is_refused(
    object_store, s3_server, settings, tmp_path
):
    checkpoint, _ = register_head(None)
    other, _ = register_head(None, seed=1)
    client = s3_server.client()
    head = client.get_object(Bucket=object_store, Key="checkpoints/v2/head.safetensors")
    client.put_object(
        Bucket=object_store, Key="checkpoints/v1/head.safetensors", Body=head["Body"].read()
    )
    root_b = _another_node(settings, tmp_path)
    with pytest.raises(RegistryError, match=r"v1: the stored head's SHA-256 is .* refusing it"):
        encoders.load_model(checkpoint)
    assert not (root_b / ".store" / "v1").exists()  # nothing half fetched stays
    assert [p.name for p in (root_b / ".store").iterdir()] == []

    client.delete_object(Bucket=object_store, Key="checkpoints/v2/manifest.json")
    with pytest.raises(RegistryError, match="v2: manifest.json is missing from the store"):
        encoders.load_model(other)

    # A damaged local copy is fetched again, whole.
    root_c = _another_node(settings, tmp_path, "node-c")
    client.put_object(Bucket=object_store, Key="checkpoints/v1/head.safetensors", Body=b"x")
    with pytest.raises(RegistryError, match="v1: the stored head"):
        checkpoint_store.local_folder(checkpoint)
    assert not (root_c / ".store" / "v1").exists()


@pytest.mark.slow
def test_a_registration_that_fails_leaves_nothing_on_the_store(object_store, s3_server):
    def fail(checkpoint):
        raise RuntimeError("the commit never came")

    from training.ml.checkpoints import Checkpoint as MLCheckpoint
    from training.ml.model import RewardModel

    files = MLCheckpoint.from_model(
        RewardModel(encoders.encoder(ENCODER, device="cpu")),
        hyperparameters={"dropout": 0.1},
        data_hash="",
    )
    with pytest.raises(RuntimeError, match="the commit never came"):
        registry.register(files, in_transaction=fail)
    assert not Checkpoint.objects.exists()
    assert s3_server.keys(object_store) == []
    assert list((registry.checkpoint_root() / ".store").glob("v*")) == []
    # The next registration takes the number and the folder as if nothing happened.
    checkpoint = registry.register(files)
    assert checkpoint.path == "store:v1"
    assert len(s3_server.keys(object_store, "checkpoints/v1/")) == 2


@pytest.mark.slow
def test_sweep_removes_what_a_killed_registration_left_on_the_store(object_store, s3_server):
    checkpoint, _ = register_head(None)
    folder = checkpoint_store.local_folder(checkpoint)
    # A process killed after its upload and before its commit: v7 has files, no row.
    checkpoint_store.upload(folder, 7)
    (registry.checkpoint_root() / ".store" / "v9").mkdir()
    assert registry.sweep_orphans() == ["v9", "store:v7"]
    assert s3_server.keys(object_store) == [
        "checkpoints/v1/head.safetensors",
        "checkpoints/v1/manifest.json",
    ]
    assert registry.sweep_orphans() == []


def test_item_images_go_to_the_store_and_exports_link_them_absolutely(
    object_store, s3_server, tmp_path, annotator, make_tasks, store_ranking
):
    import httpx
    from django.core.files.base import ContentFile

    from tests.conftest import _png

    (task,) = make_tasks(1, k=3)
    items = [ti.item for ti in task.task_items.order_by("pk")]
    for n, item in enumerate(items):
        item.image.save(f"{item.pk}.png", ContentFile(_png((50 * n, 0, 0))))
    url = items[0].image.url
    assert url.startswith(f"{s3_server.url}/{object_store}/media/items/") and "Signature" in url
    assert httpx.get(url).content == _png((0, 0, 0))  # the store serves it, signed
    assert s3_server.keys(object_store) == [f"media/items/{i.pk}.png" for i in items]
    store_ranking(annotator("ann").profile, task, [i.pk for i in items])
    out = tmp_path / "pairs.jsonl"
    call_command(
        "export_pairs", out=str(out), base_url="https://ignored.example", stderr=io.StringIO()
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 3
    assert all(r["chosen_image_url"].startswith(s3_server.url) for r in rows)
