"""Training dashboards: runs with live progress, registry, comparison, schedules."""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from training_study import ENCODER

from tests.queued import queued
from training.models import Checkpoint, DatasetSnapshot, RegistryEvent, RetrainDecision, TrainingRun
from training.snapshots.services import create_snapshot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

PAGES = [
    ("dashboards:runs", {}),
    ("dashboards:runs-progress", {}),
    ("dashboards:registry", {}),
    ("dashboards:registry-chart", {}),
    ("dashboards:compare", {}),
    ("dashboards:schedules", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_every_page_is_staff_only(name, kwargs, client, annotator_client, staff_client):
    url = reverse(name, kwargs=kwargs)
    anonymous = client.get(url)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("portal:login") + "?next=")
    assert annotator_client.get(url).status_code == 403
    assert staff_client.get(url).status_code == 200


@pytest.mark.parametrize(
    "name", ["dashboards:run-start", "dashboards:snapshot-create", "dashboards:rollback"]
)
def test_actions_refuse_annotators_and_get(name, annotator_client, staff_client):
    url = reverse(name)
    assert annotator_client.post(url).status_code == 403
    assert staff_client.get(url).status_code == 405


def make_run(snapshot, **fields) -> TrainingRun:
    return TrainingRun.objects.create(
        snapshot=snapshot,
        encoder=ENCODER,
        hyperparameters={},
        epochs=fields.pop("epochs", 4),
        **fields,
    )


def test_runs_page_and_progress_endpoint_follow_the_database(study, staff_client):
    snapshot = create_snapshot(include_synthetic=True)
    run = make_run(
        snapshot, status="training", epoch=1, history=[{"epoch": 1, "loss": 0.9, "rho": 0.2}]
    )
    page = staff_client.get(reverse("dashboards:runs"))
    html = page.content.decode()
    assert f'data-run="{run.pk}" data-finished="0"' in html and "epoch 1 of 4" in html
    assert '<script src="/static/dashboards/runs.js">' in html  # which polls every 2 s:
    runs_js = Path(settings.BASE_DIR) / "web" / "static" / "dashboards" / "runs.js"
    assert "setTimeout(tick, 2000)" in runs_js.read_text()
    url = reverse("dashboards:runs-progress") + f"?ids={run.pk}"
    [row] = staff_client.get(url).json()["runs"]
    assert (row["status"], row["epoch"], row["percent"], row["rho"]) == ("training", 1, 25, 0.2)
    TrainingRun.objects.filter(pk=run.pk).update(
        epoch=3, history=[{"epoch": 3, "loss": 0.5, "rho": 0.4}]
    )
    [row] = staff_client.get(url).json()["runs"]
    assert (row["epoch"], row["percent"], row["loss"], row["finished"]) == (3, 75, 0.5, False)
    TrainingRun.objects.filter(pk=run.pk).update(status="failed", error="worker lost")
    [row] = staff_client.get(url).json()["runs"]
    assert row["finished"] and row["error"] == "worker lost"


def test_progress_endpoint_refuses_bad_ids(staff_client):
    response = staff_client.get(reverse("dashboards:runs-progress") + "?ids=1,x")
    assert response.status_code == 400 and "comma-separated" in response.json()["error"]


def test_runs_page_queries_do_not_grow_with_runs(study, staff_client):
    snapshot = create_snapshot(include_synthetic=True)

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert staff_client.get(reverse("dashboards:runs")).status_code == 200
        return len(ctx.captured_queries)

    make_run(snapshot)
    few = count()
    for _ in range(8):
        make_run(snapshot, status="done", epoch=4)
    assert count() == few


def csrf_client(user) -> tuple[Client, str]:
    """A browser that enforces CSRF like a real one, with the token from the runs page."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    html = client.get(reverse("dashboards:runs")).content.decode()
    return client, re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def test_snapshot_start_and_cancel_from_the_page_with_csrf(study, staff_client):
    client, token = csrf_client(staff_client.user)
    assert client.post(reverse("dashboards:snapshot-create")).status_code == 403  # no token
    response = client.post(
        reverse("dashboards:snapshot-create"),
        {"include_synthetic": "on", "csrfmiddlewaretoken": token},
        follow=True,
    )
    snapshot = DatasetSnapshot.objects.get()
    assert f"Snapshot {snapshot.pk} taken" in response.content.decode()
    response = client.post(
        reverse("dashboards:run-start"),
        {
            "snapshot": snapshot.pk,
            "encoder": ENCODER,
            "epochs": 2,
            "paraphrases": 0,
            "csrfmiddlewaretoken": token,
        },
        follow=True,
    )
    run = TrainingRun.objects.get()
    assert (run.status, run.epochs, run.encoder, run.created_by) == (
        "queued",
        2,
        ENCODER,
        staff_client.user,
    )
    assert f"Run {run.pk} queued." in response.content.decode()
    response = client.post(
        reverse("dashboards:run-cancel", args=[run.pk]),
        {"csrfmiddlewaretoken": token},
        follow=True,
    )
    run.refresh_from_db()
    assert run.status == "cancelled" and f"Run {run.pk} cancelled." in response.content.decode()


def test_runs_page_names_the_recipe_and_follows_an_augmentation(study, staff_client):
    from training.models import Augmentation

    snapshot = create_snapshot(include_synthetic=True)
    start = {"snapshot": snapshot.pk, "encoder": ENCODER, "epochs": 2, "paraphrases": 2}
    staff_client.post(reverse("dashboards:run-start"), {**start, "recipe": "seed"})
    run = TrainingRun.objects.get()
    assert (run.hyperparameters["recipe"], run.hyperparameters["lr"]) == ("seed", 1e-5)
    aug = run.augmentation
    assert aug.status == Augmentation.Status.QUEUED
    url = reverse("dashboards:runs-progress") + f"?ids={run.pk}"

    def row() -> dict:
        return staff_client.get(url).json()["runs"][0]

    assert (row()["status_label"], row()["stage"]) == (
        "Augmenting",
        f"waiting for augmentation #{aug.pk} (2 paraphrases per prompt)",
    )
    Augmentation.objects.filter(pk=aug.pk).update(status="running", stats={})
    assert row()["stage"] == f"augmentation #{aug.pk}: writing 2 paraphrases per prompt"
    progress = {"progress": {"embedded": 256, "total": 1024}}
    Augmentation.objects.filter(pk=aug.pk).update(stats=progress)
    assert row()["stage"] == f"augmentation #{aug.pk}: 256 of 1,024 texts embedded (25%)"
    html = staff_client.get(reverse("dashboards:runs")).content.decode()
    assert "256 of 1,024 texts embedded" in html and "seed recipe" in html
    Augmentation.objects.filter(pk=aug.pk).update(status="done")
    assert (row()["status"], row()["stage"]) == ("queued", "epoch 0 of 2")

    staff_client.post(reverse("dashboards:run-start"), {**start, "paraphrases": 0})
    default = TrainingRun.objects.latest("id")
    assert (default.hyperparameters["recipe"], default.hyperparameters["lr"]) == ("standard", 1e-2)
    bad = staff_client.post(reverse("dashboards:run-start"), {**start, "recipe": "x"}, follow=True)
    assert "Recipe: Select a valid choice." in bad.content.decode()


def test_an_empty_snapshot_is_refused_in_the_forms_words(study, staff_client):
    response = staff_client.post(reverse("dashboards:snapshot-create"), follow=True)
    html = response.content.decode()
    tick = "(tick &quot;include synthetic annotators&quot;"
    assert f"No rankings of Default study to snapshot {tick}" in html
    assert "--include-synthetic" not in html and not DatasetSnapshot.objects.exists()


def test_a_refused_start_says_why_and_makes_nothing(study, staff_client):
    snapshot = create_snapshot(include_synthetic=True)
    response = staff_client.post(
        reverse("dashboards:run-start"),
        {"snapshot": snapshot.pk, "encoder": "no-such-encoder", "epochs": 1, "paraphrases": 0},
        follow=True,
    )
    assert "unknown encoder" in response.content.decode()
    response = staff_client.post(
        reverse("dashboards:run-start"), {"snapshot": 999999, "epochs": 0}, follow=True
    )
    assert "Snapshot:" in response.content.decode() and "Epochs:" in response.content.decode()
    assert not TrainingRun.objects.exists()


@pytest.fixture
def no_group_check(settings):
    """These versions are rows without files (nothing to score for perspective reports):
    the group check is off here, as an installation may turn it off; its doors are tested
    in tests/training/test_training_group_promotion.py."""
    settings.STEREORANK = {**settings.STEREORANK, "PROMOTION_GROUP_CHECK": False}


def test_registry_lists_versions_promotes_and_rolls_back(
    registry_rows, staff_client, no_group_check
):
    _, (v1, v2) = registry_rows([0.3, 0.05])
    html = staff_client.get(reverse("dashboards:registry")).content.decode()
    assert 'data-version="1"' in html and 'data-version="2"' in html
    assert f"{v1.metrics['spearman']:.3f}" in html
    for version in (1, 2):
        staff_client.post(reverse("dashboards:promote", args=[version]))
    assert Checkpoint.objects.get(status="active").version == 2
    response = staff_client.post(reverse("dashboards:rollback"), follow=True)
    assert "version 1 is active" in response.content.decode()
    assert Checkpoint.objects.get(status="active").version == 1
    events = list(RegistryEvent.objects.order_by("id").values_list("action", "user__username"))
    assert events == [("promote", "staff"), ("promote", "staff"), ("rollback", "staff")]
    again = staff_client.post(reverse("dashboards:promote", args=[1]), follow=True)
    assert "already active" in again.content.decode()


def test_registry_confirms_what_will_serve_and_offers_roll_back_only_when_it_can(
    registry_rows, staff_client, no_group_check
):
    registry_rows([0.3, 0.05, 0.2])

    def page() -> str:
        return staff_client.get(reverse("dashboards:registry")).content.decode()

    def confirmations(html: str) -> list[str]:
        """The text of each confirmation step, tags and spacing removed."""
        steps = re.findall(r'<details class="confirm".*?</details>', html, re.S)
        texts = [" ".join(re.sub(r"<[^>]+>", " ", d).split()) for d in steps]
        return [re.sub(r" ([,.])", r"\1", t) for t in texts]

    html = page()
    assert "No version is active" in html and 'id="rollback"' not in html
    assert "Promote v2… The scoring API will serve v2, at once. Promote: serve v2" in (
        confirmations(html)
    )
    staff_client.post(reverse("dashboards:promote", args=[1]))
    html = page()
    assert "The scoring API serves <strong>v1</strong>." in html
    assert 'id="rollback"' not in html  # v1 has nothing before it
    assert (
        "Promote v3… The scoring API will serve v3 instead of v1, at once. Promote: serve v3"
        in confirmations(html)
    )
    staff_client.post(reverse("dashboards:promote", args=[3]))
    html = page()
    rollback = [c for c in confirmations(html) if c.startswith("Roll back")]
    assert rollback == [
        "Roll back to v1… The scoring API will serve v1 instead of v3, at once. Roll back: serve v1"
    ]
    staff_client.post(reverse("dashboards:rollback"))
    assert 'id="rollback"' not in page()  # v1 again, and nothing before it


def test_registry_plot_is_an_svg_or_a_png_that_follows_the_data(registry_rows, staff_client):
    url = reverse("dashboards:registry-chart")
    snapshot, _ = registry_rows([0.3, 0.05])
    assert staff_client.get(url)["Content-Type"] == "image/svg+xml"  # the default
    first = staff_client.get(url, {"format": "png"})
    assert first["Content-Type"] == "image/png" and first.content.startswith(PNG_MAGIC)
    png = {"format": "png"}
    assert staff_client.get(url, png, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    registry_rows([0.1], start=3)
    second = staff_client.get(url, png)
    assert second.content.startswith(PNG_MAGIC) and second.content != first.content
    svg = staff_client.get(url, {"format": "svg", "snapshot": snapshot.pk})
    assert svg["Content-Type"] == "image/svg+xml" and b"v3" in svg.content
    assert staff_client.get(url, {"snapshot": "x"}).status_code == 404


def test_registry_page_queries_do_not_grow_with_versions(registry_rows, staff_client):
    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert staff_client.get(reverse("dashboards:registry")).status_code == 200
        return len(ctx.captured_queries)

    registry_rows([0.2], active=1)
    few = count()
    registry_rows([0.2, 0.3, 0.4, 0.5], start=2)
    assert count() == few


def test_compare_shows_both_rhos_the_paired_interval_and_occupations(registry_rows, staff_client):
    snapshot, (a, b) = registry_rows([0.02, 1.0])
    response = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 2})
    result = response.context["result"]
    assert result["rho_a"] == pytest.approx(a.metrics["spearman"])
    assert result["rho_b"] == pytest.approx(b.metrics["spearman"])
    assert result["ci"][0] > 0 and 0 < result["p_value"] < 0.05
    html = response.content.decode()
    assert "95% paired interval" in html and f"{result['diff']:.3f}" in html
    occupation = next(iter(a.metrics["per_occupation"]))
    assert f"<td>{occupation}</td>" in html
    chart = re.search(r'src="([^"]*compare/occupations\.svg[^"]*)"', html).group(1)
    svg = staff_client.get(chart.replace("&amp;", "&"))
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert ET.fromstring(svg.content).tag.endswith("svg")
    flipped = staff_client.get(
        reverse("dashboards:compare-chart"), {"a": 2, "b": 1, "snapshot": snapshot.pk}
    )
    assert flipped.content != svg.content


def test_compare_refuses_bad_picks_readably(registry_rows, staff_client):
    registry_rows([0.1, 0.2])
    same = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 1})
    assert "Pick two different versions." in same.content.decode()
    missing = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 9})
    assert "B:" in missing.content.decode()
    assert (
        staff_client.get(reverse("dashboards:compare-chart"), {"a": 1, "b": 2}).status_code == 400
    )


def test_schedules_page_lists_tasks_and_decisions(db, staff_client):
    from django.core.management import call_command

    call_command("setup_schedule")
    RetrainDecision.objects.create(  # the default schedule's: the default study's
        schedule="Retrain on new rankings", decision="skip", reason="only 12 new rankings, need 50"
    )
    html = staff_client.get(reverse("dashboards:schedules")).content.decode()
    assert "Retrain on new rankings" in html and "only 12 new rankings, need 50" in html


def test_compare_on_a_snapshot_not_yet_scored_queues_the_evaluations(
    registry_rows, staff_client, django_capture_on_commit_callbacks
):
    _, (a, b) = registry_rows([0.1, 0.2])
    newer = create_snapshot(include_synthetic=True)
    with django_capture_on_commit_callbacks() as callbacks:
        response = staff_client.get(
            reverse("dashboards:compare"), {"a": 1, "b": 2, "snapshot": newer.pk}
        )
    assert f"Evaluating v1 and v2 on snapshot {newer.pk}" in response.content.decode()
    assert "result" not in response.context
    sent = queued(callbacks)
    assert sorted(args for _, args in sent) == [(a.pk, newer.pk), (b.pk, newer.pk)]
    assert {name for name, _ in sent} == {"training.tasks.evaluate_checkpoint"}


def test_schedules_page_queries_do_not_grow_with_decisions(registry_rows, staff_client):
    from django.core.management import call_command

    snapshot, (checkpoint,) = registry_rows([0.1])
    call_command("setup_schedule")

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert staff_client.get(reverse("dashboards:schedules")).status_code == 200
        return len(ctx.captured_queries)

    def decide(n: int) -> None:
        for _ in range(n):
            run = make_run(snapshot, status="done", epoch=4)
            RetrainDecision.objects.create(
                schedule="s",
                decision="keep",
                reason="r",
                run=run,
                checkpoint=checkpoint,
                snapshot=snapshot,
            )

    decide(1)
    few = count()
    decide(6)
    assert count() == few


@pytest.mark.django_db
def test_what_does_not_exist_is_a_404_not_a_message(staff_client):
    """An unknown run, version or snapshot answers 404; nothing is changed or queued."""
    assert staff_client.post(reverse("dashboards:run-cancel", args=[10**6])).status_code == 404
    assert staff_client.post(reverse("dashboards:promote", args=[10**6])).status_code == 404
    assert staff_client.get(reverse("dashboards:export", args=[10**6])).status_code == 404
    registry = reverse("dashboards:registry")
    assert staff_client.get(registry, {"snapshot": 10**6}).status_code == 404
    assert not RegistryEvent.objects.exists() and not TrainingRun.objects.exists()
