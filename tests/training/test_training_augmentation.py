"""Augmentation on the test database with the offline backend and real MiniLM cosines."""

import numpy as np
import pytest
from training_study import FAST

from training.errors import AugmentationError
from training.models import Augmentation, Paraphrase, TrainingRun
from training.runs.augmentation import (
    PROGRESS_CHUNK,
    embed_with_progress,
    request_augmentation,
    run_augmentation,
    text_seeds,
)
from training.runs.services import execute_run, start_run, training_examples
from training.snapshots.services import EVAL, create_snapshot
from training.storage import encoders

pytestmark = pytest.mark.slow


@pytest.fixture
def augmented(study):
    snapshot = create_snapshot(include_synthetic=True)
    augmentation, pending = request_augmentation(snapshot, "offline", n=2)
    assert pending
    return snapshot, run_augmentation(augmentation.pk, "all-MiniLM-L6-v2")


def test_paraphrases_are_stored_with_provenance_and_rejections_counted(augmented):
    snapshot, augmentation = augmented
    assert augmentation.status == Augmentation.Status.DONE
    rows = list(augmentation.paraphrases.all())
    keys = {r["key"]: r for r in snapshot.examples}
    assert rows and all(p.origin_key in keys for p in rows)
    assert len(rows) <= 2 * snapshot.example_count
    for p in rows[:20]:
        assert p.backend == "offline" and p.template and p.cosine >= augmentation.min_cosine
        assert p.text != keys[p.origin_key]["text"]
    seeds = dict(
        zip([r["key"] for r in snapshot.examples], text_seeds(snapshot.examples), strict=True)
    )
    assert all(p.seed == seeds[p.origin_key] for p in rows)
    assert len({seeds[r["key"]] for r in snapshot.examples}) == snapshot.example_count
    stats = augmentation.stats
    assert stats["kept"] == len(rows) and stats["originals"] == snapshot.example_count
    assert stats["rejected"] == sum(stats["by_reason"].values())


def test_asking_again_reuses_what_exists(augmented):
    snapshot, augmentation = augmented
    count = Paraphrase.objects.count()
    again, pending = request_augmentation(snapshot, "offline", n=2)
    assert again.pk == augmentation.pk and not pending
    assert run_augmentation(again.pk).pk == augmentation.pk
    assert Paraphrase.objects.count() == count
    other, pending = request_augmentation(snapshot, "offline", n=1)
    assert other.pk != augmentation.pk and pending


def test_a_run_trains_on_train_paraphrases_only_with_inherited_labels(augmented):
    snapshot, augmentation = augmented
    run = start_run(snapshot, augmentation=augmentation, hyperparameters=FAST, enqueue=False)
    train_set, eval_rows = training_examples(run)
    eval_keys = {r["key"] for r in snapshot.examples if r["split"] == EVAL}
    paraphrased = augmentation.paraphrases.exclude(origin_key__in=eval_keys)
    assert len(train_set) == snapshot.train_count + paraphrased.count()
    assert {r["key"] for r in eval_rows} == eval_keys  # eval: originals only
    origin = {r["key"]: r for r in snapshot.examples}
    inherited = [
        (p.text, origin[p.origin_key]["label"], origin[p.origin_key]["group"])
        for p in paraphrased.order_by("id")
    ]
    assert [(e.text, e.label, e.group) for e in train_set[snapshot.train_count :]] == inherited
    assert not {text for text, _, _ in inherited} & {r["text"] for r in snapshot.examples}
    assert "done" in execute_run(run.pk, "node-a")
    run.refresh_from_db()
    assert run.checkpoint.metrics["spearman"] > 0.3


def test_bad_requests_are_refused(study, settings):
    snapshot = create_snapshot(include_synthetic=True)
    with pytest.raises(AugmentationError, match="unknown backend 'rules'"):
        request_augmentation(snapshot, "rules")
    with pytest.raises(AugmentationError, match="n must be between 1 and 50"):
        request_augmentation(snapshot, "offline", n=0)
    settings.TRAINING = {**settings.TRAINING, "OPENAI_API_KEY": ""}
    with pytest.raises(AugmentationError, match="needs OPENAI_API_KEY"):
        request_augmentation(snapshot, "openai")
    assert not Augmentation.objects.exists() and not TrainingRun.objects.exists()


def test_openai_backend_is_configured_from_settings(study, settings):
    """The OpenAI-compatible client, built from settings.TRAINING, against the local test
    server in tests/ml (it stands in for a paid API)."""
    from tests.ml.openai_test_server import ChatServer

    snapshot = create_snapshot(include_synthetic=True)
    with ChatServer(api_key="sk-local", model="local-model") as server:
        settings.TRAINING = {
            **settings.TRAINING,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-local",
            "OPENAI_MODEL": "local-model",
            "OPENAI_CLIENT": {
                **settings.TRAINING["OPENAI_CLIENT"],
                "batch_size": 50,
                "price_prompt_per_1k": 1.0,
                "price_completion_per_1k": 2.0,
            },
        }
        augmentation, pending = request_augmentation(snapshot, "openai", n=2)
        assert pending and augmentation.model == "local-model"
        augmentation = run_augmentation(augmentation.pk, "all-MiniLM-L6-v2")
    assert augmentation.status == Augmentation.Status.DONE
    batches = -(-snapshot.example_count // 50)
    assert len(server.seen) == batches
    assert all(s.headers["Authorization"] == "Bearer sk-local" for s in server.seen)
    rows = list(augmentation.paraphrases.all())
    assert rows and {(p.backend, p.model) for p in rows} == {("openai", "local-model")}
    used = sum(u["prompt_tokens"] + 2 * u["completion_tokens"] for u in server.usage_sent)
    assert augmentation.stats["cost_usd"] == pytest.approx(used / 1000, abs=1e-6)


def test_embedding_in_chunks_records_progress_and_embeds_the_same(study):
    snapshot = create_snapshot(include_synthetic=True)
    augmentation, _ = request_augmentation(snapshot, "offline", n=1)
    Augmentation.objects.filter(pk=augmentation.pk).update(status=Augmentation.Status.RUNNING)
    encoder, cache = encoders.encoder("all-MiniLM-L6-v2"), encoders.embedding_cache()
    texts = [f"a nurse number {i}" for i in range(PROGRESS_CHUNK + 5)]
    seen = []
    real = cache.embed

    def watched(enc, chunk):
        seen.append(Augmentation.objects.get(pk=augmentation.pk).stats["progress"]["embedded"])
        return real(enc, chunk)

    cache.embed = watched
    vectors = embed_with_progress(augmentation.pk, encoder, cache, texts)
    assert seen == [0, PROGRESS_CHUNK]  # written before each chunk is embedded
    augmentation.refresh_from_db()
    assert augmentation.stats["progress"] == {"embedded": len(texts), "total": len(texts)}
    np.testing.assert_allclose(vectors, encoder.encode(texts), atol=1e-5)
