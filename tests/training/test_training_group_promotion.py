"""Promotion that sees every group (issue 18): the active version is evaluated on the
candidate's snapshot before the paired comparison, and every promotion door (a schedule,
the command, the API, the registry page) keeps a version that gains pooled rho while it
loses a planted group's alignment, unless forced with a reason."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient
from training_study import FAST, make_study, register_head

from annotation.catalogue.loading import load_catalogue
from annotation.studies.simulation import PLANTED, simulate
from annotation.studies.tasks_builder import build_tasks
from tests.staff import make_staff
from training import services
from training.errors import ScheduleError
from training.models import Checkpoint, Evaluation, RegistryEvent, RetrainDecision, TrainingRun
from training.perspectives.group_check import falls, group_losses
from training.runs.services import execute_run, start_run
from training.schedules import ScheduleSettings, scheduled_step
from training.snapshots.services import create_snapshot
from training.snapshots.steering import parse

AUTO = ScheduleSettings(min_new_rankings=100_000, include_synthetic=True, promotion="auto")
MINORITY = "65-74"


def schedule_run(run: TrainingRun, schedule: str) -> None:
    """Mark ``run`` as started by ``schedule`` (what the step records when it queues one)."""
    RetrainDecision.objects.create(
        schedule=schedule, decision="retrain", reason="test", run=run, snapshot=run.snapshot
    )


def trained(snapshot, **options) -> Checkpoint:
    run = start_run(snapshot, hyperparameters={**FAST, "epochs": 12}, enqueue=False, **options)
    assert execute_run(run.pk, "node-a").startswith("done")
    run.refresh_from_db()
    return run.checkpoint


def reversed_version(checkpoint: Checkpoint, snapshot) -> Checkpoint:
    """A version whose head is ``checkpoint``'s negated: it ranks everything backwards."""
    import torch

    from training.ml.checkpoints import Checkpoint as MLCheckpoint
    from training.registry.services import register
    from training.storage.encoders import load_model

    model = load_model(checkpoint)
    with torch.no_grad():
        model.fc.weight.neg_()
        model.fc.bias.neg_()
    files = MLCheckpoint.from_model(model, hyperparameters=checkpoint.hyperparameters, data_hash="")
    return register(files, snapshot=snapshot)


def test_the_active_version_is_evaluated_on_the_new_snapshot_then_compared(
    transactional_db, tmp_path
):
    """The gap: the active version had no evaluation on the candidate's snapshot, so auto
    promotion against it was always 'not compared' and never fired."""
    make_study(tmp_path, images=4)
    first = create_snapshot(include_synthetic=True, eval_fraction=0.5)
    second = create_snapshot(include_synthetic=True, eval_fraction=0.5)
    candidate = trained(second)
    active = reversed_version(candidate, first)  # clearly worse, on the older snapshot only
    services.evaluate(active, first)
    services.promote(active, actor="test")
    assert not Evaluation.objects.filter(checkpoint=active, snapshot=second).exists()
    schedule_run(candidate.run, "s")
    settled, _ = scheduled_step("s", AUTO)
    assert Evaluation.objects.filter(checkpoint=active, snapshot=second).exists()
    assert settled.decision == "promote", settled.reason
    assert f"(version {active.version})" in settled.reason and "above zero" in settled.reason
    candidate.refresh_from_db()
    assert candidate.status == "active"


@pytest.mark.slow
def test_a_version_that_gains_rho_but_loses_a_planted_group_is_kept(transactional_db, settings):
    """Planted age groups (``annotation.studies.simulation.PLANTED``): the active version is a
    head steered to the 65-74 minority, the candidate a pooled head on a newer snapshot.
    Pooled rho rises with a paired interval above zero while the minority's alignment
    falls: with ``group_fields`` the schedule keeps it and names the group (the pooled
    rule alone would have promoted it: its reason says "above zero, but"); manual
    promotion refuses it on every door and promotes it when forced with a reason."""
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 5}
    load_catalogue(placeholders_per_prompt=2)
    build_tasks(size=6, overlap=21, seed=0)
    simulate(60, 14, seed=0, planted=PLANTED)
    first = create_snapshot(include_synthetic=True, seed=0, eval_fraction=0.5)
    steered = trained(first, steering=parse(f"age_band={MINORITY}"))
    services.promote(steered, actor="test")
    second = create_snapshot(include_synthetic=True, seed=0, eval_fraction=0.5)
    pooled = trained(second)
    schedule_run(pooled.run, "groups")

    groups = ScheduleSettings(**{**AUTO.__dict__, "group_fields": ("age_band",)})
    settled, _ = scheduled_step("groups", groups)
    assert settled.decision == "keep", settled.reason
    assert "95% CI [" in settled.reason and "above zero, but age_band=" in settled.reason
    assert "falls by more than 0.02" in settled.reason
    pooled.refresh_from_db()
    assert pooled.status == "candidate"
    _, losses = group_losses(pooled, steered, second, ["age_band"])
    assert MINORITY in {loss.group for loss in losses}
    assert settled.reason.split(", but ")[1].startswith(losses[0].describe(steered.version))
    minority = next(loss for loss in losses if loss.group == MINORITY)
    assert minority.diff < -0.02 and minority.ci[1] < 0

    # every door refuses it: the command (computing what it needs), the API and the page
    with pytest.raises(CommandError, match=rf"v{pooled.version} not promoted: age_band="):
        call_command("promote", str(pooled.version), stdout=io.StringIO())
    assert Checkpoint.objects.get(status="active") == steered
    staff = make_staff("owner")
    api = APIClient()
    api.force_authenticate(staff)
    url = f"/api/training/checkpoints/{pooled.version}/promote/"
    r = api.post(url, {}, format="json")
    assert (
        r.status_code == 409 and f"v{pooled.version} not promoted: age_band=" in r.json()["detail"]
    )
    page = Client()
    page.force_login(staff)
    r = page.post(reverse("dashboards:promote", args=[pooled.version]))
    html = r.content.decode()
    assert r.status_code == 409 and "not promoted: age_band=" in html
    assert f"Promote v{pooled.version} anyway" in html
    assert Checkpoint.objects.get(status="active") == steered

    # forced, with a reason: promoted, the reason and the losses it overrode recorded
    call_command(
        "promote", str(pooled.version), "--force", "--reason", "incident 7", stdout=io.StringIO()
    )
    pooled.refresh_from_db()
    assert pooled.status == "active"
    event = RegistryEvent.objects.latest("id")
    assert event.reason.startswith("incident 7; forced past the group check (incident 7): ")
    assert "age_band=" in event.reason
    # a rollback (an incident) is never blocked
    services.rollback(actor="test")
    assert Checkpoint.objects.get(status="active") == steered


def test_the_first_version_and_an_imported_one_skip_the_check_and_say_so(db, tmp_path):
    make_study(tmp_path)
    snapshot = create_snapshot(include_synthetic=True)
    version, _ = register_head(snapshot)
    out, err = io.StringIO(), io.StringIO()
    call_command("promote", str(version.version), stdout=out, stderr=err)
    assert out.getvalue().strip() == f"v{version.version} is active"
    assert err.getvalue().strip() == "group check skipped: no version is active yet"
    imported, _ = register_head(None, seed=1)
    call_command("promote", str(imported.version), stdout=out, stderr=err)
    assert f"v{imported.version} has no snapshot of its own (imported)" in err.getvalue()
    assert "no snapshot of its own" in RegistryEvent.objects.latest("id").reason


def test_a_bad_margin_is_one_line(db):
    with pytest.raises(CommandError, match="--margin must be from 0 up to 1, not -0.1"):
        call_command("promote", "1", "--margin", "-0.1")


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"diff": -0.05, "ci": [-0.08, -0.02]}, True),  # a clear loss past the margin
        ({"diff": -0.05, "ci": [-0.10, 0.01]}, False),  # the interval reaches zero: noise
        ({"diff": -0.01, "ci": [-0.015, -0.005]}, False),  # real, but within the margin
        ({"diff": -0.05, "ci": None}, False),  # no interval, no verdict
    ],
)
def test_a_group_falls_when_it_loses_more_than_the_margin_clearly(row, expected):
    assert falls(row, 0.02) is expected


def test_group_settings_are_parsed_and_refused():
    parsed = ScheduleSettings.from_kwargs({"group_fields": ["age_band"], "group_margin": 0.05})
    assert parsed.group_fields == ("age_band",) and parsed.group_margin == 0.05
    assert ScheduleSettings.from_kwargs({"group_margin": 0}).group_margin == 0.0
    for bad, message in (
        ({"group_fields": "age_band"}, "group_fields must be a list"),
        ({"group_fields": [""]}, "group_fields must be a list"),
        ({"group_margin": True}, "group_margin must be a number"),
        ({"group_margin": 1.5}, "group_margin must be from 0 up to 1"),
    ):
        with pytest.raises(ScheduleError, match=message):
            ScheduleSettings.from_kwargs(bad)
