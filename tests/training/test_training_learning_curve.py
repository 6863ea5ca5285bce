"""A snapshot's learning curve: whole tasks drawn, several draws, the fit checked against
an independent ``scipy.optimize.curve_fit``, stored once; the command and its refusals."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy.optimize import curve_fit
from training_study import ENCODER, make_study

from training.errors import LearningCurveError
from training.ml.recipes import DEFAULT_RECIPE
from training.ml.train import TrainConfig, train
from training.models import LearningCurve
from training.runs import learning_curves
from training.snapshots.services import EVAL, TRAIN, create_snapshot, rows_of, to_example

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def curve_study(django_db_setup, django_db_blocker, tmp_path_factory, embedding_cache):
    """12 occupations x 3 prompts x 4 images: 24 tasks of 6, each ranked once; one
    snapshot (unweighted labels) and its learning curve with 2 draws, made once."""
    from django.conf import settings
    from django.db import transaction
    from django.test import override_settings

    training = {
        **settings.TRAINING,
        "EMBEDDING_CACHE": embedding_cache,
        "DEFAULT_ENCODER": ENCODER,
        "DEVICE": "cpu",
    }
    with (
        django_db_blocker.unblock(),
        override_settings(TRAINING=training),
        transaction.atomic(),
    ):
        make_study(tmp_path_factory.mktemp("curve"), images=4)
        snapshot = create_snapshot(include_synthetic=True, weighting="none")
        curve = learning_curves.compute(snapshot, draws=2)
        yield snapshot, curve
        transaction.set_rollback(True)


def test_each_point_draws_whole_tasks_and_counts_its_rankings(curve_study):
    snapshot, curve = curve_study
    assert curve.status == LearningCurve.Status.DONE
    assert curve.n_tasks == 24 and curve.n_rankings == snapshot.ranking_count == 24
    assert len(curve.points) == 2 * len(learning_curves.SHARES)
    for point, share in zip(curve.points, learning_curves.SHARES * 2, strict=True):
        assert point["tasks"] == max(1, round(share * 24))
        assert point["rankings"] == point["tasks"]  # overlap 1: one ranking per task
        assert point["share"] == pytest.approx(point["rankings"] / 24)
        assert 0 < point["train_items"] <= 6 * point["tasks"]  # only the drawn tasks' items
    full = [p for p in curve.points if p["rankings"] == 24]
    assert [p["train_items"] for p in full] == [snapshot.train_count] * 2


def test_all_rankings_reproduce_a_head_trained_on_the_snapshot_itself(curve_study):
    """At share 1 the labels from the tasks' rankings are the snapshot's frozen labels, so
    the point's rho is the rho of a head trained on the snapshot's train split directly."""
    from training.ml.metrics import spearman
    from training.storage import encoders

    snapshot, curve = curve_study
    cache = encoders.embedding_cache()
    eval_set = [to_example(r) for r in rows_of(snapshot, EVAL)]
    train_set = [to_example(r) for r in rows_of(snapshot, TRAIN)]
    config = TrainConfig.from_recipe(DEFAULT_RECIPE, seed=1, n_boot=0, device="cpu")
    model = train(train_set, encoders.encoder(ENCODER), config, cache=cache).model
    scores = model.score([e.text for e in eval_set], cache=cache)
    rho = spearman(scores, [e.label for e in eval_set])
    (point,) = [p for p in curve.points if p["rankings"] == 24 and p["draw"] == 1]
    assert point["rho"] == pytest.approx(rho, abs=1e-5)


def test_projections_match_an_independent_fit_of_the_stored_points(curve_study):
    _, curve = curve_study
    kept = [p for p in curve.points if p["rho"] is not None]
    share = np.array([p["share"] for p in kept])
    rho = np.array([p["rho"] for p in kept])

    def f(s, a, b, c):
        return a - b * s ** (-c)

    (a, b, c), _ = curve_fit(
        f,
        share,
        rho,
        p0=[min(1.0, rho.max() + 0.05), 0.05, 0.5],
        bounds=([-np.inf, 0, 1e-3], [1, np.inf, 3]),
        maxfev=50_000,
    )
    fit = curve.fit
    sse = float(((f(share, a, b, c) - rho) ** 2).sum())
    ours = float(((f(share, fit["a"], fit["b"], fit["c"]) - rho) ** 2).sum())
    assert ours == pytest.approx(sse, rel=1e-3, abs=1e-6)  # the same least-squares optimum
    n, params = curve.n_rankings, (fit["a"], fit["b"], fit["c"])
    for more in (100, 500):
        expected = f(1 + more / n, *params) - f(1, *params)
        assert fit[f"gain_next_{more}"] == pytest.approx(expected, abs=1e-9)
        low, high = fit["intervals"][f"gain_next_{more}"]
        assert low <= high
    assert fit["intervals"] is not None  # two draws: a bootstrap over draws


def test_a_stored_curve_is_reused_and_recompute_replaces_it(curve_study):
    snapshot, curve = curve_study
    again = learning_curves.compute(snapshot, draws=2)
    assert again.pk == curve.pk and again.finished_at == curve.finished_at
    assert LearningCurve.objects.filter(snapshot=snapshot).count() == 1


def test_the_command_prints_the_study_leads_line_and_json(curve_study):
    snapshot, curve = curve_study
    out = io.StringIO()
    call_command("learning_curve", str(snapshot.pk), stdout=out)
    text = out.getvalue()
    assert "24 rankings in 24 tasks, 2 draws" in text
    assert "500 more rankings would" in text and "rho by about" in text
    out = io.StringIO()
    call_command("learning_curve", "--json", stdout=out)  # the latest snapshot
    data = json.loads(out.getvalue())
    assert data["snapshot"] == snapshot.pk and len(data["points"]) == 20
    assert data["summary"] == learning_curves.summary(curve)


def test_the_summary_line_has_the_interval():
    curve = LearningCurve(
        fit={"gain_next_500": 0.0213, "intervals": {"gain_next_500": [0.0104, 0.0297]}}
    )
    assert learning_curves.summary(curve) == (
        "500 more rankings would raise rho by about 0.02 [0.01, 0.03]"
    )
    assert learning_curves.summary(LearningCurve()) == "no learning curve yet"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["999999"], "there is no snapshot 999999"),
        (["--draws", "1"], "draws must be a whole number from 2 to 20"),
    ],
)
def test_bad_input_exits_with_one_line(curve_study, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("learning_curve", *args, stdout=io.StringIO())


def test_no_rankings_that_count_is_refused_and_recorded(curve_study):
    from annotation.models import AnnotatorProfile

    snapshot, _ = curve_study
    AnnotatorProfile.objects.update(status="excluded")  # nothing counts any more
    with pytest.raises(LearningCurveError, match="no rankings that still count"):
        learning_curves.compute(snapshot, draws=2, recompute=True)
    stored = LearningCurve.objects.get(snapshot=snapshot)
    assert stored.status == LearningCurve.Status.FAILED and "still count" in stored.error
    assert stored.points == [] and stored.fit is None
