"""The learning curve on the progress dashboard: the study lead's line, the chart (SVG,
from the stored curve only), and what is said when there is none."""

from django.urls import reverse
from learning_curve_data import N_RANKINGS, snapshot_row, stored_curve

from training.runs import learning_curves
from web.dashboards.learning import chart_data, learning_curve_figure

URL = reverse("dashboards:progress")


def test_no_curve_says_so_and_names_the_command(staff_client):
    snapshot = snapshot_row()
    page = staff_client.get(URL).content.decode()
    assert "No learning curve yet." in page
    assert f"manage.py learning_curve {snapshot.pk}</code>" in page
    assert reverse("dashboards:learning-curve-request", args=[snapshot.pk]) in page
    chart = reverse("dashboards:learning-curve-chart", args=[snapshot.pk])
    response = staff_client.get(chart)
    assert response.status_code == 404
    assert f"manage.py learning_curve {snapshot.pk}" in response.content.decode()


def test_the_page_shows_the_lines_and_the_chart_of_the_stored_curve(staff_client):
    curve = stored_curve()
    page = staff_client.get(URL).content.decode()
    for more in (100, 500):
        line = learning_curves.summary(curve, more)
        assert line.startswith(f"{more} more rankings would raise rho by about 0.0")
        assert line in page
    chart = reverse("dashboards:learning-curve-chart", args=[curve.snapshot_id])
    assert f'src="{chart}"' in page and f'srcset="{chart}?size=narrow"' in page
    assert "has none yet" not in page  # the newest snapshot is the one shown
    response = staff_client.get(chart)
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    svg = response.content.decode()
    assert f"Learning curve, snapshot {curve.snapshot_id}" in svg
    assert "rankings used" in svg and "eval Spearman" in svg


def test_a_newer_snapshot_without_a_curve_is_named(staff_client):
    stored_curve()
    newer = snapshot_row()
    page = staff_client.get(URL).content.decode()
    assert f"Snapshot {newer.pk} has none yet" in page


def test_the_chart_draws_every_point_and_the_projection(db):
    curve = stored_curve()
    data = chart_data(curve)
    assert len(data["points"]) == 30 and data["n_rankings"] == N_RANKINGS
    fig = learning_curve_figure(**data)
    ax = fig.axes[0]
    assert ax.get_xlim()[1] >= N_RANKINGS + 500  # the projection is in view
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["eval rho of one draw", "fitted", "projected, 500 more"]


def test_annotators_cannot_see_the_chart(annotator_client, db):
    curve = stored_curve()
    chart = reverse("dashboards:learning-curve-chart", args=[curve.snapshot_id])
    assert annotator_client.get(chart).status_code == 403


def test_staff_queue_a_curve_from_the_page_and_it_shows_as_queued(
    staff_client, django_capture_on_commit_callbacks
):
    from training.models import LearningCurve

    snapshot = snapshot_row()
    url = reverse("dashboards:learning-curve-request", args=[snapshot.pk])
    assert staff_client.get(url).status_code == 405  # a POST only
    with django_capture_on_commit_callbacks() as sent:
        response = staff_client.post(url, follow=True)
    assert len(sent) == 1  # the task, sent once the row committed
    page = response.content.decode()
    assert f"Learning curve of snapshot {snapshot.pk} queued" in page
    assert f"The learning curve of snapshot {snapshot.pk} is queued" in page
    assert LearningCurve.objects.get(snapshot=snapshot).status == "queued"
    assert (
        staff_client.post(reverse("dashboards:learning-curve-request", args=[999999])).status_code
        == 404
    )


def test_annotators_cannot_queue_a_curve(annotator_client, db):
    snapshot = snapshot_row()
    url = reverse("dashboards:learning-curve-request", args=[snapshot.pk])
    assert annotator_client.post(url).status_code == 403
