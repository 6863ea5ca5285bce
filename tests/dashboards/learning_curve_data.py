"""A stored learning curve for the dashboard tests: points on a planted curve with a
little noise, fitted by the service's own ``fit``, stored on a small snapshot row."""

from __future__ import annotations

import numpy as np

from training.ml.learning_curve import inverse_power_law
from training.models import DatasetSnapshot, LearningCurve
from training.runs import learning_curves

PLANTED = (0.75, 0.1, 0.5)
N_RANKINGS = 400


def snapshot_row() -> DatasetSnapshot:
    return DatasetSnapshot.objects.create(
        ranking_count=N_RANKINGS,
        content_hash="0" * 64,
        example_count=0,
        train_count=0,
        eval_count=0,
        examples=[],
    )


def stored_curve(snapshot: DatasetSnapshot | None = None) -> LearningCurve:
    snapshot = snapshot or snapshot_row()
    rng = np.random.default_rng(0)
    points = [
        {
            "share": share,
            "draw": draw,
            "tasks": round(share * N_RANKINGS),
            "rankings": round(share * N_RANKINGS),
            "train_items": 10,
            "rho": float(inverse_power_law(share, *PLANTED) + rng.normal(scale=0.01)),
        }
        for draw in range(3)
        for share in learning_curves.SHARES
    ]
    return LearningCurve.objects.create(
        snapshot=snapshot,
        status=LearningCurve.Status.DONE,
        draws=3,
        recipe="standard",
        n_rankings=N_RANKINGS,
        n_tasks=N_RANKINGS,
        points=points,
        fit=learning_curves.fit(points, N_RANKINGS),
    )
