"""A run's hyper-parameter search (``training.ml.search``): asked for, run, recorded.

A run started with ``search`` keeps in ``TrainingRun.search`` the grid it will
try (``space``) and its progress (``done`` of ``total`` fold-epochs); the
worker then runs the search on the run's train split only (originals and their
paraphrases, as the run would train; each fold scored on held-out originals),
writes every configuration with its CV rho and interval and the chosen one, and
the run trains the chosen recipe on the whole train split, evaluated once on
the eval split as any run is. The chosen recipe becomes the run's
hyper-parameters (so the checkpoint's) and ``lineage`` goes into the
checkpoint's manifest beside the steering and the parent version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.json import json_safe
from training.errors import RunError, ml_refusals
from training.ml.examples import Example
from training.ml.search_space import SearchSpace
from training.models import DatasetSnapshot, TrainingRun


def requested(snapshot: DatasetSnapshot, value) -> dict | None:
    """A run's ``search`` row from what was asked (``SearchSpace.from_value``); ``RunError``
    naming what is wrong, or when the train split has fewer prompts than folds."""
    with ml_refusals(RunError):
        space = SearchSpace.from_value(value)
    if space is None:
        return None
    if snapshot.train_count < space.folds:
        raise RunError(
            f"search: {space.folds} folds need at least {space.folds} train prompts; "
            f"snapshot {snapshot.pk} has {snapshot.train_count}"
        )
    total = space.folds * max(space.epochs)
    return {"space": space.to_dict(), "configurations": space.size, "done": 0, "total": total}


def execute(
    run: TrainingRun,
    examples: Sequence[Example],
    originals: int,
    embeddings,
    *,
    seed: int,
    dropout: float,
    occupations_per_batch: int,
    device: str,
    update: Callable[..., None],
    should_stop: Callable[[], bool],
) -> dict:
    """Search on ``examples`` (the train split: the first ``originals`` are the originals,
    then their paraphrases) and record it through ``update``; returns the chosen config.

    ``should_stop`` True raises ``TrainingCancelled`` (the run's own cancel path).
    """
    from training.ml.search import search

    state = dict(run.search)
    space = SearchSpace.from_dict(state["space"])

    def on_progress(done: int, total: int) -> None:
        state.update(done=done, total=total)
        update(search=state)

    with ml_refusals(RunError, "search: "):
        result = search(
            examples,
            embeddings,
            space,
            scored=[i < originals for i in range(len(examples))],
            seed=seed,
            dropout=dropout,
            occupations_per_batch=occupations_per_batch,
            device=device,
            on_progress=on_progress,
            should_stop=should_stop,
        )
    state.update(
        json_safe(
            {
                "scores": [
                    {"config": s.config, "fold_rhos": s.fold_rhos, "mean": s.mean, "ci": s.ci}
                    for s in result.scores
                ],
                "chosen": result.chosen,
                "seconds": result.seconds,
                "examples": result.n_examples,
                "prompts": result.n_groups,
            }
        )
    )
    update(search=state)
    run.search = state
    return dict(result.best.config)


def lineage(search: dict | None) -> dict | None:
    """What a checkpoint's manifest keeps of its run's search: the chosen configuration,
    its CV rho and interval, and the grid it won."""
    if not search or "chosen" not in search:
        return None
    best = search["scores"][search["chosen"]]
    return {
        "chosen": best["config"],
        "cv_rho": best["mean"],
        "cv_ci": best["ci"],
        "folds": search["space"]["folds"],
        "configurations": len(search["scores"]),
        "space": search["space"],
    }
