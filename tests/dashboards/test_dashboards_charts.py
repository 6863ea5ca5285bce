"""Plots: valid PNG and SVG, deterministic for the same data, different for other data."""

import re
import uuid
import xml.etree.ElementTree as ET

import pytest
from django.test import RequestFactory
from django.urls import reverse

from web.dashboards import charts

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def points(rho_last: float) -> list[charts.RhoPoint]:
    return [
        charts.RhoPoint("v1", 0.41, 0.30, 0.52),
        charts.RhoPoint("v2", 0.55, 0.47, 0.63, active=True),
        charts.RhoPoint("v3", rho_last, None, None),
    ]


def test_png_is_valid_deterministic_and_follows_the_data():
    first = charts.render(charts.rho_across_versions(points(0.6)), "png")
    again = charts.render(charts.rho_across_versions(points(0.6)), "png")
    other = charts.render(charts.rho_across_versions(points(0.2)), "png")
    assert first.startswith(PNG_MAGIC) and len(first) > 2000
    assert first == again
    assert first != other


def test_svg_is_well_formed_and_deterministic():
    fig = charts.occupations_side_by_side("v1", {"nurse": 0.5, "CEO": 0.2}, "v2", {"nurse": 0.7})
    svg = charts.render(fig, "svg")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert b"nurse" in svg and b"CEO" in svg  # svg.fonttype none keeps labels as text
    fig = charts.occupations_side_by_side("v1", {"nurse": 0.5, "CEO": 0.2}, "v2", {"nurse": 0.7})
    assert charts.render(fig, "svg") == svg


def test_empty_data_still_draws_a_readable_image():
    assert charts.render(charts.rho_across_versions([]), "png").startswith(PNG_MAGIC)
    assert b"No per-occupation" in charts.render(
        charts.occupations_side_by_side("a", {}, "b", {}), "svg"
    )


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="Unknown chart format 'gif'"):
        charts.render(charts.rho_across_versions([]), "gif")
    response = charts.chart_response(
        RequestFactory().get("/x", {"format": "gif"}), "rho", [], lambda: None
    )
    assert response.status_code == 400 and b"png or svg" in response.content


def test_response_is_cached_by_content_and_honours_etag():
    drawn = []

    def draw():
        drawn.append(1)
        return charts.rho_across_versions(points(0.6))

    rf = RequestFactory()
    name = f"rho-test-{uuid.uuid4()}"  # the cache may be a shared Redis
    data = [p.__dict__ for p in points(0.6)]
    first = charts.chart_response(rf.get("/c"), name, data, draw)
    assert first.status_code == 200 and first["Content-Type"] == "image/svg+xml"
    second = charts.chart_response(rf.get("/c"), name, data, draw)
    assert second.content == first.content and len(drawn) == 1  # served from the cache
    not_modified = charts.chart_response(
        rf.get("/c", HTTP_IF_NONE_MATCH=first["ETag"]), name, data, draw
    )
    assert not_modified.status_code == 304
    changed = charts.chart_response(rf.get("/c"), name, data[:2], draw)
    assert changed["ETag"] != first["ETag"] and len(drawn) == 2


def test_missing_per_occupation_values_get_no_bar_but_a_mark_and_a_note():
    # v1 has no rho for CEO (None: its labels were all tied); v2 was never scored on judge.
    per_a = {"nurse": 0.5, "CEO": None, "judge": 0.1}
    per_b = {"nurse": 0.7, "CEO": 0.3, "judge": float("nan")}
    del per_b["judge"]
    fig = charts.occupations_side_by_side("v1", per_a, "v2", per_b)
    ax = fig.axes[0]
    assert sorted(round(bar.get_width(), 3) for bar in ax.patches) == [0.1, 0.3, 0.5, 0.7]
    assert [t.get_text() for t in ax.texts] == ["n/a", "n/a"]
    svg = charts.render(fig, "svg")
    assert b"n/a: no rho" in svg
    assert charts.render(fig, "png").startswith(PNG_MAGIC)


def test_a_nan_rho_counts_as_missing():
    fig = charts.occupations_side_by_side("v1", {"nurse": float("nan")}, "v2", {"nurse": 0.2})
    assert [round(bar.get_width(), 3) for bar in fig.axes[0].patches] == [0.2]
    assert [t.get_text() for t in fig.axes[0].texts] == ["n/a"]


def test_compare_page_and_chart_with_missing_occupation_rhos(registry_rows, staff_client):
    from training.models import Evaluation

    snapshot, (a, b) = registry_rows([0.02, 1.0])
    first, second = sorted(a.metrics["per_occupation"])[:2]
    ea, eb = Evaluation.objects.get(checkpoint=a), Evaluation.objects.get(checkpoint=b)
    ea.metrics["per_occupation"][first] = None
    del eb.metrics["per_occupation"][second]
    ea.save()
    eb.save()
    page = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 2})
    assert page.status_code == 200
    html = page.content.decode()
    cells = dict(
        (name, (ra, rb))
        for name, ra, rb in re.findall(
            r"<tr><td>([^<]+)</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", html
        )
    )
    assert cells[first][0] == "—" and cells[first][1] != "—"
    assert cells[second][1] == "—" and cells[second][0] != "—"
    assert all(value.strip() for pair in cells.values() for value in pair)  # no blank cell
    assert 'id="missing-note"' in html and html.count('id="missing-note"') == 1
    chart = staff_client.get(
        reverse("dashboards:compare-chart"),
        {"a": 1, "b": 2, "snapshot": snapshot.pk, "format": "png"},
    )
    assert chart.status_code == 200 and chart.content.startswith(PNG_MAGIC)


def test_no_note_when_every_occupation_has_a_rho(registry_rows, staff_client):
    registry_rows([0.02, 1.0])
    page = staff_client.get(reverse("dashboards:compare"), {"a": 1, "b": 2})
    assert 'id="missing-note"' not in page.content.decode()
