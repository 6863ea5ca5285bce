"""A run's page and its search: the start form's checkbox, every configuration in a table
and a plot, the chosen one named."""

import pytest
from django.urls import reverse
from training_study import ENCODER

from training.models import TrainingRun
from training.runs.services import execute_run, start_run
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.slow
SPEC = "lr=1e-2,3e-2 epochs=1,2 alpha=0.01 temperature=0.5 weight_decay=0.01 folds=3"


@pytest.fixture
def searched(study):
    run = start_run(create_snapshot(include_synthetic=True), search=SPEC, enqueue=False)
    assert execute_run(run.pk, "node-a").startswith("done")
    run.refresh_from_db()
    return run


def test_the_start_form_asks_for_a_search(study, staff_client):
    snapshot = create_snapshot(include_synthetic=True)
    page = staff_client.get(reverse("dashboards:runs")).content.decode()
    assert 'name="search"' in page and "search the recipe first" in page
    start = {"snapshot": snapshot.pk, "encoder": ENCODER, "paraphrases": 0}
    staff_client.post(reverse("dashboards:run-start"), {**start, "search": "on"})
    staff_client.post(reverse("dashboards:run-start"), start)
    searched, plain = TrainingRun.objects.order_by("id")
    assert searched.search["configurations"] == 144 and plain.search is None
    assert round(100 * searched.progress) == 0
    page = staff_client.get(reverse("dashboards:runs")).content.decode()
    assert reverse("dashboards:run", args=[searched.pk]) in page


def test_a_run_page_shows_every_configuration_and_the_chosen_one(searched, staff_client):
    page = staff_client.get(reverse("dashboards:run", args=[searched.pk])).content.decode()
    scores = searched.search["scores"]
    best = scores[searched.search["chosen"]]
    assert page.count("<tr") == 1 + len(scores) == 5
    assert f"mean CV rho <strong>{best['mean']:.3f}</strong>" in page
    assert "The eval split was not used to choose" in page
    assert f"v{searched.checkpoint.version}" in page
    assert reverse("dashboards:run-search-chart", args=[searched.pk]) in page
    svg = staff_client.get(reverse("dashboards:run-search-chart", args=[searched.pk]))
    assert svg["Content-Type"] == "image/svg+xml"
    body = svg.content.decode()
    assert '<title id="chart-title">run ' in body
    assert "4 configurations, 3-fold grouped CV" in body


def test_a_run_without_search_says_so_and_an_unknown_run_is_404(study, staff_client):
    run = start_run(create_snapshot(include_synthetic=True), enqueue=False)
    page = staff_client.get(reverse("dashboards:run", args=[run.pk])).content.decode()
    assert "no search" in page
    assert staff_client.get(reverse("dashboards:run", args=[99999])).status_code == 404
    chart = staff_client.get(reverse("dashboards:run-search-chart", args=[run.pk]))
    assert chart.status_code == 200 and "No configuration scored yet" in chart.content.decode()
