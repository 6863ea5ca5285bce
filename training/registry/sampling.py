"""Active sampling, the training side: priorities for an ``active`` study's open tasks.

``update_priorities(study_id)`` takes the head of the active version (else the
latest), the study's items' embeddings from the cache (encoded once where missing)
and the rankings that count so far; it computes the Laplace precision of the
head's weights and the greedy D-optimal priorities (``training.ml.sampler``, with
its exploration share over the least-ranked occupations), and writes
``RankingTask.priority`` for every task of the study in one transaction: the
scored tasks ``n..1``, the others 0 (gold tasks, tasks of another size, all
tasks of a ``uniform`` study). Assignment's ``active`` ordering reads them.

The Celery task ``training.tasks.update_priorities`` runs it on the default queue;
``queue_priorities`` sends it after commit: after a version is registered or
promoted (``training.registry.services``), and every ``SAMPLER["EVERY"]`` rankings
(``training.apps``, on ``annotation.participants.services.ranking_stored``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.assignment.selectors import sampler_inputs
from annotation.models import RankingTask, Study
from core.queue import after_commit
from training.errors import SamplerRefused, ml_refusals
from training.models import Checkpoint
from training.selectors import active_checkpoint
from training.storage import encoders

TASK = "training.tasks.update_priorities"


@dataclass(frozen=True)
class PriorityUpdate:
    """What one update did: the version whose head scored, the rankings in the
    precision, the tasks scored (and of them, picked by exploration), and why not when
    nothing was scored."""

    study_id: int
    version: int | None
    rankings: int
    scored: int
    explored: int
    skipped: str = ""

    @property
    def basis(self) -> str:
        """One line for the dashboard."""
        if self.skipped:
            return self.skipped
        return (
            f"v{self.version}'s head, {self.rankings} rankings: {self.scored} open tasks "
            f"scored ({self.explored} by exploration)"
        )


def head_of(checkpoint: Checkpoint):
    """The version's ``(w, encoder)``: the head's weights (d,) and its encoder, checked."""
    from training.ml.checkpoints import load as load_files

    encoder = encoders.encoder(checkpoint.encoder_name)
    with ml_refusals(SamplerRefused, f"v{checkpoint.version}: "):
        files = load_files(Path(checkpoint.path), encoder)
    return files.head["fc.weight"][0].double().numpy(), encoder, files


def scoring_version() -> Checkpoint | None:
    """The version whose head the sampler uses: the active one, else the latest."""
    return active_checkpoint() or Checkpoint.objects.order_by("-version").first()


def update_priorities(study_id: int) -> PriorityUpdate:
    """Compute and write the priorities of one study's tasks (idempotent; see the module)."""
    from training.ml.sampler import Candidate, d_optimal_priorities, laplace_precision

    study = Study.objects.get(pk=study_id)
    if study.sampler != Study.Sampler.ACTIVE:
        return _write(PriorityUpdate(study_id, None, 0, 0, 0, "uniform: no priorities"), {})
    if not study.makes_labels:
        skipped = "a validation study: the uniform order (its rankings train nothing)"
        return _write(PriorityUpdate(study_id, None, 0, 0, 0, skipped), {})
    checkpoint = scoring_version()
    if checkpoint is None:
        skipped = "no version yet: the uniform order until one is trained"
        return _write(PriorityUpdate(study_id, None, 0, 0, 0, skipped), {})
    w, encoder, files = head_of(checkpoint)
    temperature = float(files.hyperparameters.get("temperature", 0.5))
    inputs = sampler_inputs(study_id)
    ids = sorted(inputs.texts)
    index = {pk: n for n, pk in enumerate(ids)}
    emb = encoders.embedding_cache().embed(encoder, [inputs.texts[i] for i in ids])
    emb = emb.astype(np.float64)
    rankings = [[index[i] for i in r] for r in inputs.rankings]
    sizes = Counter(len(items) for _, items in inputs.open_tasks.values())
    k = max(sizes, key=lambda size: (sizes[size], size)) if sizes else 0
    scored = [(pk, occ, items) for pk, (occ, items) in inputs.open_tasks.items() if len(items) == k]
    if k < 2 or not scored:
        skipped = f"v{checkpoint.version}: no open task to score"
        return _write(
            PriorityUpdate(study_id, checkpoint.version, len(rankings), 0, 0, skipped), {}
        )
    knobs = settings.STEREORANK["SAMPLER"]
    with ml_refusals(SamplerRefused, f"v{checkpoint.version}: "):
        precision = laplace_precision(
            rankings, emb, w, prior=knobs["PRIOR"], temperature=temperature
        )
        got = d_optimal_priorities(
            [Candidate(emb[[index[i] for i in items]], occ) for _, occ, items in scored],
            precision,
            w,
            batch=min(knobs["BATCH"], len(scored)),
            exploration=knobs["EXPLORATION"],
            rng=study_id * 1_000_003 + len(rankings),  # reproducible for the same data
            coverage=inputs.coverage,
            temperature=temperature,
        )
    update = PriorityUpdate(
        study_id, checkpoint.version, len(rankings), len(scored), int(got.explored.sum())
    )
    return _write(
        update, {pk: float(p) for (pk, _, _), p in zip(scored, got.priority, strict=True)}
    )


def _write(update: PriorityUpdate, priorities: dict[int, float]) -> PriorityUpdate:
    """Every task of the study gets its priority (0 unless scored), in one transaction."""
    with transaction.atomic():
        tasks = RankingTask.objects.filter(study_id=update.study_id)
        tasks.exclude(pk__in=list(priorities)).exclude(priority=0).update(priority=0)
        RankingTask.objects.bulk_update(
            [RankingTask(pk=pk, priority=p) for pk, p in priorities.items()],
            ["priority"],
            batch_size=1000,
        )
        Study.objects.filter(pk=update.study_id).update(
            priorities_basis=update.basis[:300], priorities_updated_at=timezone.now()
        )
    return update


def queue_priorities(study_id: int | None = None) -> None:
    """Send the update (one study, or every ``active`` one) once the caller commits."""
    studies = [study_id] if study_id is not None else active_studies()
    for pk in studies:
        after_commit(TASK, pk)


def active_studies() -> list[int]:
    """The ids of the studies whose sampler is ``active``."""
    return list(Study.objects.filter(sampler=Study.Sampler.ACTIVE).values_list("pk", flat=True))
