"""A run's hyper-parameter search on the test database: real MiniLM, real files."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from training_study import FAST

from training.errors import RunError
from training.ml import search as ml_search
from training.models import DatasetSnapshot, TrainingRun
from training.runs import search as run_search
from training.runs.services import execute_run, start_run
from training.schedule_settings import ScheduleSettings
from training.snapshots.services import EVAL, create_snapshot, rows_of

pytestmark = pytest.mark.slow
SPEC = "lr=1e-2,3e-2 epochs=2,3 alpha=0.01 temperature=0.5 weight_decay=0.01 folds=3"


@pytest.fixture
def snapshot(study):
    return create_snapshot(include_synthetic=True)


@pytest.fixture
def seen(monkeypatch):
    """What the library's search was given (a spy: the real search runs)."""
    calls = []
    real = ml_search.search

    def spy(examples, embeddings, space=None, **kwargs):
        calls.append((list(examples), kwargs["scored"]))
        return real(examples, embeddings, space, **kwargs)

    monkeypatch.setattr(ml_search, "search", spy)
    return calls


def _searched(snapshot, **kwargs) -> TrainingRun:
    run = start_run(snapshot, hyperparameters={"n_boot": 100}, search=SPEC, enqueue=False, **kwargs)
    assert execute_run(run.pk, "node-a").startswith("done"), run.refresh_from_db() or run.error
    run.refresh_from_db()
    return run


def test_a_searched_run_records_every_configuration_and_trains_the_chosen_one(snapshot, seen):
    run = _searched(snapshot)
    search = run.search
    assert search["configurations"] == 4 and len(search["scores"]) == 4
    assert (search["done"], search["total"]) == (9, 9) and run.progress == 1.0
    means = [s["mean"] for s in search["scores"]]
    assert search["chosen"] == means.index(max(means))
    for s in search["scores"]:
        assert len(s["fold_rhos"]) == 3 and s["ci"][0] < s["mean"] < s["ci"][1]
    chosen = search["scores"][search["chosen"]]["config"]
    assert {k: run.hyperparameters[k] for k in chosen} == chosen
    assert run.epochs == chosen["epochs"] == len(run.history) == run.epoch
    assert run.hyperparameters["recipe"] == "standard"
    ckpt = run.checkpoint
    assert {k: ckpt.hyperparameters[k] for k in chosen} == chosen
    lineage = json.loads((Path(ckpt.path) / "manifest.json").read_text())["extra"]["search"]
    assert lineage["chosen"] == chosen and lineage["cv_rho"] == pytest.approx(max(means))
    assert lineage["folds"] == 3 and lineage["configurations"] == 4
    assert ckpt.metrics["spearman"] > 0.3


def test_the_search_sees_the_train_split_only_and_eval_labels_cannot_move_it(snapshot, seen):
    first = _searched(snapshot)
    ((examples, scored),) = seen
    eval_rows = rows_of(snapshot, EVAL)
    assert not {e.text for e in examples} & {r["text"] for r in eval_rows}
    assert not {e.group for e in examples} & {r["group"] for r in eval_rows}
    assert sum(scored) == snapshot.train_count == len(examples)  # no augmentation: originals
    # Scramble the eval labels: the search's every figure and its choice stay the same.
    rows = [
        {**r, "label": 1.0 - r["label"]} if r["split"] == EVAL else r for r in snapshot.examples
    ]
    DatasetSnapshot.objects.filter(pk=snapshot.pk).update(examples=rows)
    snapshot.refresh_from_db()
    second = _searched(snapshot)
    assert second.search["scores"] == first.search["scores"]
    assert second.search["chosen"] == first.search["chosen"]
    assert second.checkpoint.metrics["spearman"] != first.checkpoint.metrics["spearman"]


def test_paraphrases_train_with_their_origin_and_are_never_scored(snapshot, seen):
    from training.runs.augmentation import request_augmentation, run_augmentation

    augmentation, _ = request_augmentation(snapshot, "offline", n=2)
    augmentation = run_augmentation(augmentation.pk)
    _searched(snapshot, augmentation=augmentation)
    ((examples, scored),) = seen
    assert len(examples) > snapshot.train_count == sum(scored)
    assert scored[: snapshot.train_count] == [True] * snapshot.train_count
    origins = {e.group for e in examples[: snapshot.train_count]}
    assert {e.group for e in examples[snapshot.train_count :]} <= origins


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ("lr=0", "search: lr=0.0 must be finite and > 0"),
        ("momentum=0.9", "search: unknown key 'momentum'"),
        ({"epochs": ["x"]}, "search: epochs must be whole numbers"),
        (7, "search must be true, a spec string or an object"),
        ("folds=500", "search: 500 folds need at least 500 train prompts; snapshot"),
    ],
)
def test_a_bad_search_is_refused_and_nothing_is_made(snapshot, search, message):
    with pytest.raises(RunError, match=message):
        start_run(snapshot, search=search, enqueue=False)
    assert not TrainingRun.objects.exists()


def test_a_run_without_search_is_as_before(snapshot):
    run = start_run(snapshot, hyperparameters=FAST, enqueue=False)
    assert run.search is None and run.steps == (0, 3)
    assert run_search.lineage(run.search) is None


def test_progress_counts_the_search_then_the_epochs(snapshot):
    run = start_run(snapshot, search=True, enqueue=False)
    assert run.search["configurations"] == 144 and run.search["total"] == 5 * 12
    assert run.steps == (0, 60 + run.epochs) and run.progress == 0.0
    run.search["done"] = 30
    assert run.progress == pytest.approx(30 / (60 + run.epochs))


def test_train_command_takes_a_spec_and_refuses_a_bad_one_in_one_line(snapshot):
    out = io.StringIO()
    call_command("train", "--snapshot", str(snapshot.pk), "--search", SPEC, stdout=out)
    run = TrainingRun.objects.get(pk=int(out.getvalue()))
    assert run.search["space"]["folds"] == 3 and run.search["configurations"] == 4
    call_command("train", "--snapshot", str(snapshot.pk), "--search", stdout=io.StringIO())
    assert TrainingRun.objects.order_by("-id").first().search["configurations"] == 144
    with pytest.raises(CommandError, match="search: 'lr' is not KEY=V1,V2") as info:
        call_command("train", "--snapshot", str(snapshot.pk), "--search", "lr")
    assert "\n" not in str(info.value) and TrainingRun.objects.count() == 2


def test_a_schedule_can_ask_for_a_search():
    assert ScheduleSettings.from_kwargs({"search": True}).search is True
    assert ScheduleSettings().search is False


def test_the_api_takes_a_search_and_refuses_a_bad_one_with_a_400(snapshot, staff):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(staff)
    url = "/api/training/runs/"
    bad = client.post(url, {"snapshot": snapshot.pk, "search": "lr=-1"}, format="json")
    assert bad.status_code == 400 and "search: lr=-1.0 must be" in bad.json()["detail"]
    assert not TrainingRun.objects.exists()
    ok = client.post(url, {"snapshot": snapshot.pk, "search": {"lr": [0.01]}}, format="json")
    assert ok.status_code == 201, ok.json()
    assert ok.json()["search"]["configurations"] == 1 * 3 * 3 * 2 * 2
    plain = client.post(url, {"snapshot": snapshot.pk, "search": False}, format="json")
    assert plain.status_code == 201 and plain.json()["search"] is None
