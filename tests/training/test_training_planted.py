"""The planted study (issue 10): synthetic age groups that disagree by design
(``annotation.studies.simulation.PLANTED``), and what the perspective report must find.

All 40 occupations, 2 placeholder images per prompt, 60 annotators ranking 14
tasks each (840 rankings), half the prompts held out for evaluation; a pooled
head and a head steered to the minority, MiniLM, 12 epochs at lr 1e-2. Checked
with scipy's Spearman and the paired bootstrap over prompts.
"""

import pytest
from scipy import stats
from training_study import FAST

from annotation.catalogue.loading import load_catalogue
from annotation.studies.simulation import PLANTED, simulate
from annotation.studies.tasks_builder import build_tasks
from training.ml.alignment_report import paired_per_prompt
from training.models import PerspectiveReport
from training.perspectives import services as perspectives
from training.runs.services import execute_run, start_run
from training.snapshots.services import create_snapshot
from training.snapshots.steering import parse

pytestmark = [pytest.mark.slow]
MAJORITY, MINORITY = PLANTED.majority, "65-74"


def test_the_report_recovers_the_planted_groups_and_steering_closes_part_of_the_gap(
    transactional_db, settings
):
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 5}
    load_catalogue(placeholders_per_prompt=2)
    build_tasks(size=6, overlap=21, seed=0)
    simulate(60, 14, seed=0, planted=PLANTED)
    snapshot = create_snapshot(include_synthetic=True, seed=0, eval_fraction=0.5)
    hyperparameters = {**FAST, "epochs": 12}
    pooled = start_run(snapshot, hyperparameters=hyperparameters, enqueue=False)
    steered = start_run(
        snapshot,
        hyperparameters=hyperparameters,
        steering=parse(f"age_band={MINORITY}"),
        enqueue=False,
    )
    for run in (pooled, steered):
        assert execute_run(run.pk, "node-a").startswith("done")
        run.refresh_from_db()
        perspectives.compute_reports(run.checkpoint, fields=["age_band"])
    rows = {r.group: r for r in PerspectiveReport.objects.filter(checkpoint=pooled.checkpoint)}
    assert {g: r.status for g, r in rows.items()} == dict.fromkeys(PLANTED.views, "computed")

    # the pooled head's alignment falls as the planted distance from the majority grows
    majority_view = PLANTED.views[MAJORITY]
    distance = {g: view.distance(majority_view) for g, view in PLANTED.views.items()}
    groups = sorted(distance, key=distance.get)
    alignment = [rows[g].alignment for g in groups]
    rho = stats.spearmanr([distance[g] for g in groups], alignment).statistic
    assert rho <= -0.8, (groups, alignment)  # seed 0 gives -1; at most the middle pair swaps
    assert max(alignment) == rows[MAJORITY].alignment
    assert min(alignment) == rows[MINORITY].alignment

    # less aligned with the minority than with the majority, paired over shared prompts
    gap, ci, _, n = paired_per_prompt(
        rows[MAJORITY].figures["per_prompt"], rows[MINORITY].figures["per_prompt"]
    )
    assert n >= 30 and ci[0] > 0, (gap, ci)

    # the steered head is better aligned with the minority: paired interval above zero
    by_group = {
        r["group"]: r
        for r in perspectives.compare_versions(
            steered.checkpoint, pooled.checkpoint, snapshot, "age_band"
        )
    }
    gained = by_group[MINORITY]
    assert gained["ci"][0] > 0 and gained["verdict"] == "gained", gained
    # at a cost to the majority
    assert by_group[MAJORITY]["verdict"] == "lost"
