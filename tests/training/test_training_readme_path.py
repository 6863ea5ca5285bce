"""The README's path with the default recipe, on MiniLM: the model learns.

Issue 21: with the seed's learning rate every version scored like its untrained
head (the same rho whatever the epochs or paraphrases, a paired difference of
exactly 0), and the prompt checker passed "A photo of a nurse" above a diverse
nurse. The README's own commands, with the defaults, must now give versions that
differ, beat the seed recipe, and rank the diverse prompt above the plain one.
"""

import io
import re

import pytest
from django.core.management import call_command
from scipy.stats import spearmanr

from annotation.catalogue.loading import load_catalogue
from training.ml.recipes import DEFAULT_RECIPE, RECIPES
from training.models import Checkpoint, DatasetSnapshot, Evaluation, TrainingRun
from training.runs.augmentation import request_augmentation, run_augmentation
from training.runs.services import execute_run
from training.snapshots.services import EVAL, rows_of

pytestmark = pytest.mark.slow

PLAIN = "A photo of a nurse"
DIVERSE = "A nurse, an older Sikh man in a turban, at work"


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def train(*args) -> Checkpoint:
    """``manage.py train ARGS`` (queued), then the worker's part, here."""
    run_id = int(run("train", *args))
    assert execute_run(run_id, "node-a").startswith("done")
    return TrainingRun.objects.get(pk=run_id).checkpoint


def test_the_readmes_path_learns_with_the_default_recipe(transactional_db, tmp_path):
    load_catalogue(placeholders_per_prompt=2)
    run("build_tasks")
    run("simulate_annotators", "--count", "20")
    snapshot = DatasetSnapshot.objects.get(pk=int(run("snapshot", "--include-synthetic")))
    augmentation, _ = request_augmentation(snapshot, "offline", n=2)
    run_augmentation(augmentation.pk)

    v1 = train("--snapshot", snapshot.pk, "--augmentation", augmentation.pk)
    v2 = train("--snapshot", snapshot.pk, "--epochs", "3")
    seed = train("--snapshot", snapshot.pk, "--recipe", "seed")
    for version in (v1, v2):
        assert version.hyperparameters["recipe"] == DEFAULT_RECIPE
        assert version.hyperparameters["lr"] == RECIPES[DEFAULT_RECIPE]["lr"]
    assert seed.hyperparameters["recipe"] == "seed" and seed.hyperparameters["lr"] == 1e-5

    # The stored rho is scipy's on the stored predictions (an independent computation).
    rows = {r["key"]: r["label"] for r in rows_of(snapshot, EVAL)}
    rho = {}
    for version in (v1, v2, seed):
        predictions = Evaluation.objects.get(checkpoint=version, snapshot=snapshot).predictions
        keys = sorted(predictions)
        expected = spearmanr([predictions[k] for k in keys], [rows[k] for k in keys]).statistic
        assert version.metrics["spearman"] == pytest.approx(expected, abs=1e-9)
        rho[version.version] = expected
    print("eval rho:", {f"v{v}": round(r, 3) for v, r in rho.items()})
    assert rho[v1.version] > rho[seed.version] + 0.1
    assert rho[v2.version] > rho[seed.version] + 0.1
    assert rho[v1.version] != rho[v2.version]  # epochs and paraphrases change the model

    compared = run("compare", "1", "2")
    diff = re.search(
        r"diff \(v1 - v2\): ([+-][0-9.]+), 95% CI \[([+-][0-9.]+), ([+-][0-9.]+)\]", compared
    )
    assert diff and (diff.group(2), diff.group(3)) != ("+0.000", "+0.000"), compared

    run("promote", "1")
    scored = run("score", PLAIN, DIVERSE).splitlines()
    print("\n".join(scored))
    scores = {line[25:].strip(): float(line.split()[0]) for line in scored[1:]}
    assert scores[DIVERSE] > scores[PLAIN]
