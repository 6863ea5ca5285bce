"""Each question format from a new study to labels (issue 40), through the commands a lab
runs: create_study --question, load_catalogue, build_tasks, consent, study_status open,
simulate_annotators (20, a fifth careless), quality --json (split-half reliability with its
interval, time on task, the Bradley-Terry fit against the counting score) and snapshot. One
format goes on to training and promotion in the README's block
(tests/project/test_project_readme.py); the others stop at their labels (issue 40's
test-time rule)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Ranking, RankingTask, Study
from annotation.stats.tiers import of_ranking
from training.models import DatasetSnapshot

FORMATS = [
    ("rank", [], 4),
    ("rank_ties", [], 4),
    ("top_k", ["--k", "2"], 4),
    ("best_worst", [], 4),
    ("pairwise", [], 2),
]


def run(*argv) -> str:
    out = io.StringIO()
    call_command(*argv, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def sizes(ranking: Ranking) -> list[int]:
    return [len(t) for t in of_ranking(ranking.order, ranking.tiers)]


@pytest.mark.parametrize(("question", "extra", "size"), FORMATS, ids=[f[0] for f in FORMATS])
def test_a_study_in_each_format_reaches_its_labels(question, extra, size, db, settings):
    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 100}
    slug = f"f-{question.replace('_', '-')}"
    run("create_study", slug, "--question", question, *extra, "--task-size", str(size))
    run("load_catalogue", "--study", slug, "--placeholder-images", "2")
    run("build_tasks", "--study", slug, "--overlap", "3")
    run("consent", "--study", slug, "--demo")
    run("study_status", slug, "open")
    # every task ranked once before any twice: 15 each gives most tasks a second ranking
    # (a pairwise study has three times the tasks, each a fraction of a ranking's time)
    per = "45" if question == "pairwise" else "15"
    run("simulate_annotators", "--study", slug, "--count", "20", "--careless", "0.2",
        "--tasks-per-annotator", per)  # fmt: skip
    study = Study.objects.get(slug=slug)
    rankings = Ranking.objects.filter(task__study=study, task__is_gold=False)
    assert rankings.count() >= 60
    shapes = {tuple(sizes(r)) for r in rankings.filter(task__check_item__isnull=True)}
    expected = {
        "rank": lambda s: set(s) == {1} and len(s) >= 2,  # a short last task: fewer cards
        "rank_ties": lambda s: 2 <= sum(s) <= size,
        "top_k": lambda s: s == (1, 1, size - 2),
        "best_worst": lambda s: s == (1, size - 2, 1),
        "pairwise": lambda s: s in {(1, 1), (2,)},
    }[question]
    assert all(map(expected, shapes)), shapes
    if question in ("rank_ties", "pairwise"):  # careful ties and the careless "equal"
        assert any(len(s) < size for s in shapes)
    if question in ("top_k", "best_worst", "pairwise"):  # a fixed shape: every task full
        assert all(t.items.count() == size for t in RankingTask.objects.filter(study=study))
    report = json.loads(run("quality", "--study", slug, "--include-synthetic", "--json"))
    assert report["question_format"] == question
    half = report["split_half"]
    assert half["ci_low"] <= half["value"] + 1e-9 and half["ci_high"] >= half["value"] - 1e-9
    assert half["n"] >= 5 and half["ci_low"] < half["ci_high"], half
    assert report["time_on_task"]["rankings_timed"] == report["n_rankings"]
    scores = report["item_scores"]  # the Bradley-Terry fit against the counting score
    if question == "rank":
        assert scores is None  # the Borda count: no fit in a strict study's report
    else:
        assert scores["items"] >= 10 and 0.5 < scores["spearman_fit_vs_counting"] <= 1, scores
    run("snapshot", "--study", slug, "--include-synthetic")
    snapshot = DatasetSnapshot.objects.latest("pk")
    assert snapshot.examples and all(0 <= e["label"] <= 1 for e in snapshot.examples)
