"""Steered and balanced runs: their training data, their lineage, their refusals."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from training_study import FAST, make_perspective_study

from training.errors import RunError
from training.models import Checkpoint
from training.runs.services import execute_run, start_run, training_examples
from training.snapshots.services import TRAIN, create_snapshot, rows_of
from training.snapshots.steering import balanced, parse

pytestmark = [pytest.mark.slow]


@pytest.fixture
def snapshot(db, tmp_path, settings):
    make_perspective_study(tmp_path)
    # The smaller group (25-34) has 2 annotators with rankings that count: k = 2 keeps it.
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2}
    return create_snapshot(include_synthetic=True)


def test_the_balanced_estimator_hand_worked():
    """A labels k1 = 0 and k2 = 1, B labels k2 = 0.5: each group's mass 1/2 spread over
    its items, so m(k1) = 1/4 and m(k2) = 1/4 + 1/2; y(k2) = (1/4 * 1 + 1/2 * 0.5) / (3/4)
    = 2/3; weights N m = 2 m: 1/2 and 3/2 (mean 1), and each group's items weigh 1 in all."""
    out = balanced({"A": {"k1": 0.0, "k2": 1.0}, "B": {"k2": 0.5}})
    assert out["k1"] == pytest.approx((0.0, 0.5))
    assert out["k2"] == pytest.approx((2 / 3, 1.5))
    # one group alone: its labels, weight 1
    assert balanced({"A": {"k1": 0.2, "k2": 0.9}}) == {"k1": (0.2, 1.0), "k2": (0.9, 1.0)}


def test_steering_is_parsed_or_refused():
    assert parse("age_band=65-74") == {"kind": "steered", "field": "age_band", "value": "65-74"}
    assert parse(balance="age_band") == {"kind": "balanced", "field": "age_band"}
    assert parse() is None
    for bad in ("age_band", "=x", "age_band="):
        with pytest.raises(RunError, match="steer as FIELD=VALUE"):
            parse(bad)
    with pytest.raises(RunError, match="one of steer, balance and groups, not two"):
        parse("a=b", "a")


def test_a_steered_run_trains_on_the_groups_labels_only(snapshot):
    run = start_run(snapshot, hyperparameters=FAST, steering=parse("age_band=25-34"), enqueue=False)
    examples, eval_rows = training_examples(run)
    group = snapshot.group_labels["age_band"]["25-34"]
    train = {r["key"]: r for r in rows_of(snapshot, TRAIN)}
    expected = {(train[k]["text"], y) for k, y in group.items() if k in train}
    assert {(e.text, e.label) for e in examples} == expected
    assert 0 < len(examples) < len(train) and all(e.weight == 1.0 for e in examples)
    assert any(group[k] != train[k]["label"] for k in group if k in train)  # not the pooled
    assert eval_rows == rows_of(snapshot, "eval")  # evaluated on the pooled eval split


def test_a_balanced_run_weighs_each_group_the_same(snapshot):
    run = start_run(
        snapshot, hyperparameters=FAST, steering=parse(balance="age_band"), enqueue=False
    )
    examples, _ = training_examples(run)
    train = {r["key"]: r for r in rows_of(snapshot, TRAIN)}
    groups = {
        v: {k: y for k, y in labels.items() if k in train}
        for v, labels in snapshot.group_labels["age_band"].items()
    }
    keys = [k for k in train if any(k in labels for labels in groups.values())]
    assert [train[k]["text"] for k in keys] == [e.text for e in examples]
    weight = {k: e.weight for k, e in zip(keys, examples, strict=True)}
    assert sum(weight.values()) == pytest.approx(len(examples))  # mean weight 1
    # each item's weight is shared out among the groups that ranked it, 1/n_g each
    share = {k: sum(1 / len(g) for g in groups.values() if k in g) for k in keys}
    totals = {
        v: sum(weight[k] * (1 / len(labels)) / share[k] for k in labels)
        for v, labels in groups.items()
    }
    assert len(totals) == 2
    first, second = totals.values()
    assert first == pytest.approx(second) == pytest.approx(len(examples) / 2)


def test_steering_is_in_the_run_and_the_checkpoint_lineage(snapshot):
    steering = parse("age_band=18-24")
    run = start_run(
        snapshot, hyperparameters={**FAST, "epochs": 1}, steering=steering, enqueue=False
    )
    assert run.hyperparameters["steering"] == steering
    assert execute_run(run.pk, "node-a") == "done: v1"
    pooled = start_run(snapshot, hyperparameters={**FAST, "epochs": 1}, enqueue=False)
    execute_run(pooled.pk, "node-a")
    v1, v2 = Checkpoint.objects.get(version=1), Checkpoint.objects.get(version=2)
    assert v1.hyperparameters["steering"] == steering and "steering" not in v2.hyperparameters
    manifest = json.loads((Path(v1.path) / "manifest.json").read_text())
    assert manifest["extra"]["steering"] == steering
    assert v1.data_hash != v2.data_hash


def test_unfit_steering_is_refused_before_anything_is_made(snapshot):
    cases = {
        "shoe=9": "no group labels for 'shoe'",
        "age_band=99-100": "group age_band=99-100 has fewer than 2 train items",
    }
    for steer, message in cases.items():
        with pytest.raises(RunError, match=message):
            start_run(snapshot, steering=parse(steer), enqueue=False)
    with pytest.raises(RunError, match="balancing gender_identity needs 2 groups"):
        start_run(snapshot, steering=parse(balance="gender_identity"), enqueue=False)
    with pytest.raises(CommandError, match="steer as FIELD=VALUE"):
        call_command(
            "train", "--snapshot", str(snapshot.pk), "--steer", "age_band", stdout=io.StringIO()
        )
    out = io.StringIO()
    call_command("train", "--snapshot", str(snapshot.pk), "--balance", "age_band", stdout=out)
    from training.models import TrainingRun

    run = TrainingRun.objects.get(pk=int(out.getvalue()))
    assert run.hyperparameters["steering"] == {"kind": "balanced", "field": "age_band"}


def test_the_api_and_the_runs_page_accept_steering(snapshot, staff):
    from django.test import Client
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(staff)
    body = {"snapshot": snapshot.pk, "steer": "age_band=25-34", "hyperparameters": FAST}
    r = api.post("/api/training/runs/", body, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["hyperparameters"]["steering"]["value"] == "25-34"
    r = api.post("/api/training/runs/", {**body, "balance": "age_band"}, format="json")
    assert (
        r.status_code == 400 and r.json()["detail"] == "one of steer, balance and groups, not two"
    )
    page = Client()
    page.force_login(staff)
    form = {"snapshot": snapshot.pk, "epochs": 1, "paraphrases": 0, "balance": "age_band"}
    page.post("/dashboards/runs/start", form)
    from training.models import TrainingRun

    latest = TrainingRun.objects.order_by("-id").first()
    assert latest.hyperparameters["steering"] == {"kind": "balanced", "field": "age_band"}
