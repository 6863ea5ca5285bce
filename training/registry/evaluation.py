"""Evaluations of registry versions on a snapshot's eval split, and the paired
comparison of two versions (``training.ml.metrics`` does the statistics); a new
version's threshold calibrated on its train split and its flag judged on its eval split
(``calibrate_and_judge``).

An evaluation is computed once per (version, snapshot) and stored with every
prediction, so a comparison reads two rows and never loads an encoder; scoring
runs on the gpu worker (``request_evaluations``), never inside a web request.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from core import queue
from core.json import json_safe
from training.errors import EvaluationPending, RegistryError
from training.models import Checkpoint, DatasetSnapshot, Evaluation
from training.selectors import not_evaluated_on
from training.snapshots.services import EVAL, TRAIN, prompt_types, rows_of
from training.storage import encoders
from training.storage.encoders import load_model


def eval_arrays(snapshot: DatasetSnapshot) -> tuple[list[str], list[dict]]:
    rows = rows_of(snapshot, EVAL)
    return [r["key"] for r in rows], rows


def store_evaluation(
    checkpoint: Checkpoint, snapshot: DatasetSnapshot, metrics: dict, predictions: dict
) -> Evaluation:
    """Create the evaluation, or return the one a concurrent caller made first."""
    try:
        with transaction.atomic():
            return Evaluation.objects.create(
                checkpoint=checkpoint,
                snapshot=snapshot,
                metrics=json_safe(metrics),
                predictions=predictions,
            )
    except IntegrityError:
        return Evaluation.objects.get(checkpoint=checkpoint, snapshot=snapshot)


def evaluate(checkpoint: Checkpoint, snapshot: DatasetSnapshot, n_boot: int = 1000) -> Evaluation:
    """Score ``checkpoint`` on ``snapshot``'s eval split (once; later calls reuse it)."""
    existing = Evaluation.objects.filter(checkpoint=checkpoint, snapshot=snapshot).first()
    if existing is not None:
        return existing
    import numpy as np

    from training.ml.metrics import evaluate as compute_metrics

    keys, rows = eval_arrays(snapshot)
    if not rows:
        raise RegistryError(f"snapshot {snapshot.pk} has no eval examples")
    scores = load_model(checkpoint).score(
        [r["text"] for r in rows], cache=encoders.embedding_cache()
    )
    metrics = compute_metrics(
        scores,
        np.array([r["label"] for r in rows]),
        [r["group"] for r in rows],
        [r["occupation"] for r in rows],
        n_boot=n_boot,
        seed=snapshot.split_seed,
    )
    predictions = {k: float(s) for k, s in zip(keys, scores, strict=True)}
    return store_evaluation(checkpoint, snapshot, metrics, predictions)


def request_evaluations(snapshot: DatasetSnapshot, checkpoints: list[Checkpoint]) -> None:
    """Queue each evaluation on the gpu worker once the caller's transaction commits
    (scoring loads an encoder: never inside a web request)."""
    for checkpoint in checkpoints:
        queue.after_commit("training.tasks.evaluate_checkpoint", checkpoint.pk, snapshot.pk)


def compare(
    a: Checkpoint, b: Checkpoint, snapshot: DatasetSnapshot | None = None, n_boot: int = 1000
) -> dict:
    """Paired comparison of two versions on one snapshot's eval split.

    Without ``snapshot``, the newest snapshot both were evaluated on. With it,
    both must have been evaluated there (``EvaluationPending`` names the missing
    ones: queue them with ``request_evaluations`` or run ``evaluate``).
    Returns ``paired_comparison``'s keys plus ``per_occupation_a`` / ``_b``.
    """
    import numpy as np

    from training.ml.metrics import paired_comparison

    if snapshot is not None:
        missing = not_evaluated_on(snapshot, a, b)
        if missing:
            raise EvaluationPending(snapshot, missing)
        ea = Evaluation.objects.get(checkpoint=a, snapshot=snapshot)
        eb = Evaluation.objects.get(checkpoint=b, snapshot=snapshot)
    else:
        common = (
            Evaluation.objects.filter(checkpoint=a, snapshot__evaluations__checkpoint=b)
            .select_related("snapshot")
            .order_by("-snapshot_id")
            .first()
        )
        if common is None:
            raise RegistryError(
                f"v{a.version} and v{b.version} were never evaluated on the same snapshot; "
                "name a snapshot to evaluate both on it"
            )
        snapshot = common.snapshot
        ea, eb = common, Evaluation.objects.get(checkpoint=b, snapshot=snapshot)
    keys, rows = eval_arrays(snapshot)
    result = paired_comparison(
        np.array([ea.predictions[k] for k in keys]),
        np.array([eb.predictions[k] for k in keys]),
        np.array([r["label"] for r in rows]),
        [r["group"] for r in rows],
        n_boot=n_boot,
        seed=snapshot.split_seed,
    )
    return {
        **json_safe(result),
        "version_a": a.version,
        "version_b": b.version,
        "snapshot": snapshot.pk,
        "per_occupation_a": ea.metrics.get("per_occupation", {}),
        "per_occupation_b": eb.metrics.get("per_occupation", {}),
    }


def calibrate_and_judge(
    model, snapshot: DatasetSnapshot, cache, *, n_boot: int = 1000, seed: int = 0
) -> tuple:
    """``(calibration, flag figures)``: the threshold from the train split's prompts, the
    flag's precision, recall and F1 on the eval split's, resampled by occupation
    (``training.ml.calibration``). The
    one calibration every path uses: a run's new version, an import calibrated on a
    snapshot (``registry.services.import_checkpoint``)."""
    from training.ml.calibration import calibrate, flag_figures

    def scored(split: str):
        prompts = prompt_types(snapshot, split)
        return model.score(list(prompts), cache=cache), [
            t == "stereotypical" for t in prompts.values()
        ]

    calibration = calibrate(*scored(TRAIN))
    scores, truth = scored(EVAL)
    occupation = {r["text"]: r["occupation"] for r in rows_of(snapshot, EVAL)}
    clusters = [occupation[t] for t in prompt_types(snapshot, EVAL)]
    flag = flag_figures(
        scores, truth, calibration.threshold, clusters=clusters, n_boot=n_boot, seed=seed
    )
    flag["calibration"] = calibration.method  # "seed-default" when it fell back to 0.12
    return calibration, flag


def calibrated(files, snapshot: DatasetSnapshot):
    """An imported checkpoint's files (``training.ml.checkpoints.Checkpoint``) with the
    threshold ``calibrate_and_judge`` gives on ``snapshot`` and its flag figures."""
    import dataclasses

    fp32 = encoders.encoder(files.encoder.name, device="cpu")
    calibration, flag = calibrate_and_judge(
        files.to_model(fp32), snapshot, encoders.embedding_cache()
    )
    basis = f"{calibration.basis} (snapshot {snapshot.pk}, train split, at import)"
    return dataclasses.replace(
        files,
        threshold=calibration.threshold,
        metrics={**files.metrics, "flag": json_safe(flag)},
        extra={**files.extra, "calibration": {"method": calibration.method, "basis": basis}},
    )
