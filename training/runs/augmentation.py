"""Paraphrase augmentation of a snapshot, stored with provenance.

One ``Augmentation`` per (snapshot, backend, model, n): asking again returns
the existing one, and a finished one is never redone. Kept paraphrases are rows
(``Paraphrase``); rejected ones are counted in ``stats``. The rows and the
``done`` status are written in one transaction, so a worker killed mid-way
leaves a ``running`` augmentation with no paraphrases, which a redelivered task
runs again from the start. The cosine filter's encoder runs on the backend and
quantization of ``TRAINING["AUGMENT_ENCODER_BACKEND"]`` / ``_QUANTIZATION``
(torch/none by default; onnx/int8 is faster, docs/benchmarks.md), recorded in
``stats``. While it runs, ``stats["progress"]`` says how many of the texts the
filter needs (originals and candidates) are embedded, the slow part: the runs
page shows it.
"""

from __future__ import annotations

import zlib

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.json import json_safe
from training.errors import AugmentationError
from training.models import Augmentation, DatasetSnapshot, Paraphrase, TrainingRun
from training.snapshots.services import rows_of
from training.storage import encoders

# Texts embedded between two progress writes.
PROGRESS_CHUNK = 128


def backend_model(backend: str) -> str:
    """The model name recorded for ``backend``: the LLM, or the rule set's version."""
    if backend == "openai":
        return settings.TRAINING["OPENAI_MODEL"]
    from training.ml.paraphrase.offline import RULES_VERSION

    return RULES_VERSION


def request_augmentation(
    snapshot: DatasetSnapshot,
    backend: str = "offline",
    n: int = 8,
    min_cosine: float | None = None,
) -> tuple[Augmentation, bool]:
    """The augmentation for these settings, and whether it still has to run.

    Backends and the cosine floor default come from the paraphrase library (their one home).
    """
    from training.ml.paraphrase import BACKENDS, DEFAULT_MIN_COSINE

    if min_cosine is None:
        min_cosine = DEFAULT_MIN_COSINE
    if backend not in BACKENDS:
        raise AugmentationError(f"unknown backend {backend!r}: use {' or '.join(BACKENDS)}")
    if not 1 <= n <= 50:
        raise AugmentationError(f"n must be between 1 and 50, not {n}")
    if backend == "openai" and not settings.TRAINING["OPENAI_API_KEY"]:
        raise AugmentationError("the openai backend needs OPENAI_API_KEY in the environment")
    augmentation, _ = Augmentation.objects.get_or_create(
        snapshot=snapshot,
        backend=backend,
        model=backend_model(backend),
        n=n,
        defaults={"min_cosine": min_cosine},
    )
    if augmentation.status == Augmentation.Status.FAILED:
        Augmentation.objects.filter(pk=augmentation.pk, status=Augmentation.Status.FAILED).update(
            status=Augmentation.Status.QUEUED, error=""
        )
        augmentation.refresh_from_db()
    return augmentation, augmentation.status != Augmentation.Status.DONE


def text_seeds(rows: list[dict]) -> list[int]:
    """A seed per example from its text and its rank among same-text examples.

    Items sharing a prompt get different paraphrases, and the same study in
    another database gets the same ones (ids differ, texts do not), so the
    embedding cache is reused.
    """
    seen: dict[str, int] = {}
    seeds = []
    for r in rows:
        k = seen[r["text"]] = seen.get(r["text"], -1) + 1
        seeds.append(zlib.crc32(f"{r['text']}\0{k}".encode()))
    return seeds


def _make_backend(augmentation: Augmentation):
    from training.llm_budget import client_options
    from training.ml.paraphrase import make_backend

    if augmentation.backend == "openai":
        t = settings.TRAINING
        return make_backend(
            "openai",
            base_url=t["OPENAI_BASE_URL"],
            model=augmentation.model,
            api_key=t["OPENAI_API_KEY"],
            **client_options(),
        )
    return make_backend("offline")


def embed_with_progress(augmentation_id: int, encoder, cache, texts: list[str]):
    """The texts' embeddings, in chunks, each recorded in the running augmentation's
    ``stats["progress"]`` (``embedded`` of ``total``)."""
    import numpy as np

    def record(done: int) -> None:
        Augmentation.objects.filter(pk=augmentation_id, status=Augmentation.Status.RUNNING).update(
            stats={"progress": {"embedded": done, "total": len(texts)}}
        )

    record(0)
    parts = []
    for start in range(0, len(texts), PROGRESS_CHUNK):
        chunk = texts[start : start + PROGRESS_CHUNK]
        parts.append(cache.embed(encoder, chunk))
        record(start + len(chunk))
    return np.concatenate(parts) if parts else cache.embed(encoder, texts)


def run_augmentation(augmentation_id: int, encoder_name: str | None = None) -> Augmentation:
    """Paraphrase every example of the snapshot N times and store the kept ones."""
    from training.ml.paraphrase import Original, augment

    augmentation = Augmentation.objects.select_related("snapshot").get(pk=augmentation_id)
    if augmentation.status == Augmentation.Status.DONE:
        return augmentation
    Augmentation.objects.filter(pk=augmentation.pk).update(
        status=Augmentation.Status.RUNNING, stats={}
    )
    try:
        name = encoder_name or settings.TRAINING["DEFAULT_ENCODER"]
        encoder = encoders.encoder(
            name,
            backend=settings.TRAINING["AUGMENT_ENCODER_BACKEND"],
            quantization=settings.TRAINING["AUGMENT_ENCODER_QUANTIZATION"],
        )
        cache = encoders.embedding_cache()
        rows = rows_of(augmentation.snapshot)
        originals = [
            Original(key=r["key"], text=r["text"], occupation=r["occupation"], seed=seed)
            for r, seed in zip(rows, text_seeds(rows), strict=True)
        ]
        backend = _make_backend(augmentation)
        try:
            result = augment(
                originals,
                backend,
                n=augmentation.n,
                embed=lambda texts: embed_with_progress(augmentation.pk, encoder, cache, texts),
                min_cosine=augmentation.min_cosine,
            )
        finally:
            if hasattr(backend, "close"):
                backend.close()
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        with transaction.atomic():
            Augmentation.objects.filter(pk=augmentation.pk).update(
                status=Augmentation.Status.FAILED, error=reason, finished_at=timezone.now()
            )
            # Runs waiting for it would never start: fail them with the reason.
            augmentation.runs.filter(status=TrainingRun.Status.QUEUED).update(
                status=TrainingRun.Status.FAILED,
                error=f"augmentation {augmentation.pk} failed: {reason}",
                finished_at=timezone.now(),
            )
        raise
    stats = json_safe(
        {
            **dict(result.stats),
            "kept": len(result.kept),
            "rejected": len(result.rejected),
            "filter_encoder": encoder.identity.name,
            "filter_encoder_backend": f"{encoder.identity.backend}/{encoder.identity.quantization}",
            "filter_encoder_key": encoder.identity.key,
            "originals": len(originals),
        }
    )
    with transaction.atomic():
        Paraphrase.objects.bulk_create(
            [
                Paraphrase(
                    augmentation=augmentation,
                    origin_key=p.origin_key,
                    text=p.text,
                    backend=p.backend,
                    model=p.model or "",
                    template=p.template or "",
                    seed=p.seed,
                    cosine=p.cosine,
                )
                for p in result.kept
            ],
            ignore_conflicts=True,
            batch_size=1000,
        )
        Augmentation.objects.filter(pk=augmentation.pk).update(
            status=Augmentation.Status.DONE,
            stats=stats,
            error="",
            finished_at=timezone.now(),
        )
    augmentation.refresh_from_db()
    return augmentation
