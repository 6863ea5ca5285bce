"""A snapshot's learning curve: eval rho against the share of its rankings, and what more
rankings would buy (the statistics: ``training.ml.learning_curve``).

For each draw d and share s, ``max(1, round(s T))`` of the snapshot's T tasks are
drawn without replacement (whole tasks: every ranking of a task together), the
train items are labelled from those tasks' rankings only (``position / (K - 1)``,
averaged, unweighted: ``annotation.rankings.labels.item_labels``), a head is trained on them
(recipe ``DEFAULT_RECIPE``, originals only, no paraphrases, torch seed d) and scored
on the snapshot's eval split with its frozen labels. A point's share is the rankings
it used over the snapshot's N; a draw whose tasks label no train item is kept with
``rho`` None and left out of the fit. The fit's intervals bootstrap over draws.

The rankings are those ``selectors.snapshot_task_rankings`` reads (as they count
today), so an erasure since the snapshot leaves them out here too. Computed on the
default queue (``training.tasks.learning_curve``) or by ``manage.py learning_curve``;
stored once per snapshot (``LearningCurve``), replaced on request.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.rankings.labels import LabelRow, item_labels
from core import queue
from core.json import json_safe
from training import selectors
from training.errors import LearningCurveError, ml_refusals
from training.models import DatasetSnapshot, LearningCurve
from training.snapshots.services import EVAL, TRAIN, rows_of, to_example
from training.storage import encoders

log = logging.getLogger(__name__)

TASK = "training.tasks.learning_curve"
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MAX_DRAWS = 20


def _check_draws(draws: int) -> None:
    if not isinstance(draws, int) or not 2 <= draws <= MAX_DRAWS:
        raise LearningCurveError(
            f"draws must be a whole number from 2 to {MAX_DRAWS} (intervals need 2), not {draws!r}"
        )


def tasks_of(snapshot: DatasetSnapshot) -> dict[int, list[list[int]]]:
    """``{task id: [order of each ranking]}``, each order kept to the snapshot's items
    (a check card drops out and the rest close up; one item left says nothing)."""
    held = {row["item_id"] for row in snapshot.examples}
    tasks: dict[int, list[list[int]]] = defaultdict(list)
    for task_id, order in selectors.snapshot_task_rankings(snapshot):
        kept = [item for item in order if item in held]
        if len(kept) >= 2:
            tasks[task_id].append(kept)
    return dict(sorted(tasks.items()))


def labels_from(orders: list[list[int]]) -> dict[int, float]:
    """Item labels from these rankings alone (the snapshot's formula, unweighted)."""
    rows = [
        LabelRow(ranking_id=r, item_id=item, position=p, demographics={})
        for r, order in enumerate(orders)
        for p, item in enumerate(order)
    ]
    return item_labels(rows)


def measure(snapshot: DatasetSnapshot, draws: int, shares=SHARES) -> tuple[list[dict], dict]:
    """Every (draw, share) point, and what the fit needs to know (N, T, recipe, encoder)."""
    import numpy as np

    from training.ml.learning_curve import task_subsample
    from training.ml.metrics import spearman
    from training.ml.recipes import DEFAULT_RECIPE
    from training.ml.train import TrainConfig, train

    tasks = tasks_of(snapshot)
    if not tasks:
        raise LearningCurveError(f"snapshot {snapshot.pk} has no rankings that still count")
    task_ids = list(tasks)
    n_rankings = sum(len(v) for v in tasks.values())
    train_rows = rows_of(snapshot, TRAIN)
    eval_set = [to_example(r) for r in rows_of(snapshot, EVAL)]
    name = settings.TRAINING["DEFAULT_ENCODER"]
    with ml_refusals(LearningCurveError, "unknown encoder: "):
        encoder = encoders.encoder(name)
    cache = encoders.embedding_cache()
    points = []
    for draw in range(draws):
        rng = np.random.default_rng([snapshot.split_seed, draw])
        for share in shares:
            picked = [task_ids[i] for i in task_subsample(len(task_ids), share, rng)]
            orders = [order for t in picked for order in tasks[t]]
            labels = labels_from(orders)
            train_set = [
                to_example({**r, "label": labels[r["item_id"]], "weight": 1.0})
                for r in train_rows
                if r["item_id"] in labels
            ]
            rho = None
            if train_set:
                config = TrainConfig.from_recipe(
                    DEFAULT_RECIPE, seed=draw, n_boot=0, device=settings.TRAINING["DEVICE"]
                )
                model = train(train_set, encoder, config, cache=cache).model
                scores = model.score([e.text for e in eval_set], cache=cache)
                rho = spearman(np.asarray(scores), np.array([e.label for e in eval_set]))
            points.append(
                {
                    "share": len(orders) / n_rankings,
                    "draw": draw,
                    "tasks": len(picked),
                    "rankings": len(orders),
                    "train_items": len(train_set),
                    "rho": None if rho is None or rho != rho else float(rho),
                }
            )
    about = {"n_rankings": n_rankings, "n_tasks": len(task_ids)}
    return points, {**about, "recipe": DEFAULT_RECIPE, "encoder": name}


def fit(points: list[dict], n_rankings: int) -> dict:
    """The fitted curve of the points that have a rho, as stored."""
    import numpy as np

    from training.ml.learning_curve import CurvePoints, fit_learning_curve

    kept = [p for p in points if p["rho"] is not None]
    curve_points = CurvePoints(
        np.array([p["share"] for p in kept], dtype=float),
        np.array([p["rho"] for p in kept], dtype=float),
        np.array([p["draw"] for p in kept]),
    )
    with ml_refusals(LearningCurveError):
        curve = fit_learning_curve(curve_points, n_rankings)
    return json_safe(asdict(curve))


def compute(snapshot: DatasetSnapshot, *, draws: int = 3, recompute: bool = False) -> LearningCurve:
    """The snapshot's learning curve, computed here unless one is stored (``recompute``:
    anew); ``LearningCurveError`` where the rankings cannot make one, recorded on the row."""
    _check_draws(draws)
    stored = selectors.learning_curve(snapshot)
    if stored is not None and stored.status == LearningCurve.Status.DONE and not recompute:
        return stored
    try:
        points, about = measure(snapshot, draws)
        fitted = fit(points, about["n_rankings"])
    except LearningCurveError as error:
        _store(snapshot, draws, status=LearningCurve.Status.FAILED, error=error.message)
        raise
    return _store(
        snapshot, draws, status=LearningCurve.Status.DONE, points=points, fit=fitted, **about
    )


def _store(snapshot: DatasetSnapshot, draws: int, **fields) -> LearningCurve:
    defaults = {
        "draws": draws,
        "points": [],
        "fit": None,
        "error": "",
        "n_rankings": None,
        "n_tasks": None,
        "finished_at": timezone.now(),
        **fields,
    }
    curve, _ = LearningCurve.objects.update_or_create(snapshot=snapshot, defaults=defaults)
    return curve


def request(snapshot: DatasetSnapshot, *, draws: int = 3, recompute: bool = False) -> LearningCurve:
    """Queue the computation on the default queue (a stored curve is kept unless
    ``recompute``); returns the row, queued or as stored."""
    _check_draws(draws)
    with transaction.atomic():
        stored = selectors.learning_curve(snapshot)
        if stored is not None and stored.status == LearningCurve.Status.DONE and not recompute:
            return stored
        curve = _store(snapshot, draws, status=LearningCurve.Status.QUEUED, finished_at=None)
        queue.after_commit(TASK, curve.pk)
    return curve


def run_queued(curve_id: int) -> str:
    """The task's body: compute a queued curve (idempotent: a finished one is left)."""
    curve = LearningCurve.objects.select_related("snapshot").filter(pk=curve_id).first()
    if curve is None or curve.status != LearningCurve.Status.QUEUED:
        return "nothing queued"
    try:
        done = compute(curve.snapshot, draws=curve.draws, recompute=True)
    except LearningCurveError as error:
        log.warning("learning curve %s failed: %s", curve_id, error.message)
        return "failed"
    return done.status


def summary(curve: LearningCurve, more: int = 500) -> str:
    """The study lead's line: what ``more`` rankings (100 or 500) would add to rho."""
    fitted = curve.fit or {}
    key = f"gain_next_{more}"
    gain = fitted.get(key)
    if gain is None:
        return "no learning curve yet"
    ci = (fitted.get("intervals") or {}).get(key)
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    verb = "raise" if gain >= 0 else "change"
    return f"{more} more rankings would {verb} rho by about {gain:.2f}{interval}"
