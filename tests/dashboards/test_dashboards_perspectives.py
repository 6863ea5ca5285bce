"""The Perspectives page: stored reports only, groups under k named without figures,
missing reports queued (never computed in the request), version against version."""

from dataclasses import asdict

import pytest
from django.urls import reverse

from core.json import json_safe
from tests.queued import queued
from training.ml.alignment_report import GroupPerspective
from training.models import Checkpoint, PerspectiveReport, PerspectiveSummary

PROMPTS = [f"prompt-{i}" for i in range(8)]


def _figures(per_prompt: dict) -> dict:
    a = sum(per_prompt.values()) / len(per_prompt)
    g = GroupPerspective(
        group="x",
        n_annotators=7,
        n_rankings=30,
        n_prompts=len(per_prompt),
        n_placements=60,
        alignment=a,
        alignment_ci=[a - 0.05, a + 0.05],
        human_baseline=0.7,
        human_baseline_ci=[0.65, 0.75],
        baseline_prompts=len(per_prompt),
        baseline_annotators=9,
        baseline_rankings=40,
        first_choice_js=0.3,
        first_choice_js_ci=[0.2, 0.4],
        n_occupations=4,
        spearman=0.4,
        spearman_ci=[0.2, 0.6],
        n_items=16,
        per_occupation={"nurse": a},
        per_prompt=per_prompt,
    )
    return json_safe({k: v for k, v in asdict(g).items() if k != "group"})


def store(checkpoint, snapshot, groups: dict, field: str = "age_band") -> None:
    """Stored rows as the service writes them: ``groups`` maps a name to per-prompt
    alignment, or to None for a group under k."""
    PerspectiveSummary.objects.create(
        checkpoint=checkpoint,
        snapshot=snapshot,
        field=field,
        temperature=0.5,
        k=5,
        n_boot=100,
        seed=0,
        n_rankings=90,
        n_annotators=20,
    )
    for name, per_prompt in groups.items():
        if per_prompt is None:
            PerspectiveReport.objects.create(
                checkpoint=checkpoint,
                snapshot=snapshot,
                field=field,
                group=name,
                status="fewer_than_k",
            )
        else:
            figures = _figures(per_prompt)
            PerspectiveReport.objects.create(
                checkpoint=checkpoint,
                snapshot=snapshot,
                field=field,
                group=name,
                status="computed",
                alignment=figures["alignment"],
                figures=figures,
            )


def flat(value: float) -> dict:
    return dict.fromkeys(PROMPTS, value)


def test_staff_only(client, annotator_client):
    url = reverse("dashboards:perspectives")
    assert client.get(url).status_code == 302
    assert annotator_client.get(url).status_code == 403
    assert annotator_client.get(reverse("dashboards:perspectives-groups")).status_code == 403


def test_a_missing_report_is_queued_not_computed(
    registry_rows, staff_client, django_capture_on_commit_callbacks
):
    snapshot, (v1,) = registry_rows([0.1], active=1)
    with django_capture_on_commit_callbacks() as callbacks:
        page = staff_client.get(reverse("dashboards:perspectives"))
    html = page.content.decode()
    assert f"Computing the report of v1 on snapshot {snapshot.pk}" in html
    assert "report" not in page.context
    ((name, (checkpoint_id, snapshot_id, fields)),) = queued(callbacks)
    assert (name, checkpoint_id, snapshot_id) == (
        "training.tasks.perspective_report",
        v1.pk,
        snapshot.pk,
    )
    assert "age_band" in fields and not PerspectiveSummary.objects.exists()


def test_groups_best_aligned_first_and_none_under_k_shown(registry_rows, staff_client):
    snapshot, (v1,) = registry_rows([0.1])
    store(v1, snapshot, {"18-24": flat(0.6), "65-74": flat(0.8), "45-54": flat(0.7), "75+": None})
    page = staff_client.get(reverse("dashboards:perspectives"), {"version": 1})
    html = page.content.decode()
    shown = [g["group"] for g in page.context["report"]["groups"]]
    assert shown == ["65-74", "45-54", "18-24"]
    assert html.index('data-group="65-74"') < html.index('data-group="18-24"')
    assert "75+" not in html  # under k: not named, only counted
    assert "1 group below k = 5 hidden." in html
    assert "0.800 <small>[0.750, 0.850]</small>" in html
    query = {"version": 1, "field": "age_band"}
    chart = staff_client.get(reverse("dashboards:perspectives-groups"), query)
    assert chart.status_code == 200 and chart["Content-Type"] == "image/svg+xml"
    assert b"75+" not in chart.content
    lines = staff_client.get(reverse("dashboards:perspectives-versions"), {"field": "age_band"})
    assert lines.status_code == 200 and lines["Content-Type"] == "image/svg+xml"
    assert b"75+" not in lines.content
    missing = staff_client.get(reverse("dashboards:perspectives-groups"), {**query, "field": "x"})
    assert missing.status_code == 400


def test_the_form_keeps_the_version_and_field_it_shows(registry_rows, staff_client):
    snapshot, (v1, v2) = registry_rows([0.1, 0.2], active=2)
    store(v2, snapshot, {"18-24": flat(0.6), "65-74": flat(0.8)})
    html = staff_client.get(reverse("dashboards:perspectives")).content.decode()  # defaults
    assert '<option value="2" selected>' in html  # the active version, shown
    assert '<option value="age_band" selected>' in html
    assert "v2 · Age band · snapshot" in html and "Age band across versions" in html
    store(v1, snapshot, {"18-24": flat(0.6), "65-74": flat(0.8)})
    html = staff_client.get(reverse("dashboards:perspectives"), {"version": 1}).content.decode()
    assert '<option value="1" selected>' in html and '<option value="2" selected>' not in html


def test_version_against_version_names_the_groups_that_gained_or_lost(
    registry_rows, staff_client, django_capture_on_commit_callbacks
):
    snapshot, (v1, v2, v3) = registry_rows([0.1, 0.2, 0.3])
    noise = [0.01 * (i % 3) for i in range(len(PROMPTS))]
    store(v1, snapshot, {"a": flat(0.6), "b": flat(0.7), "c": flat(0.5)})
    store(
        v2,
        snapshot,
        {
            "a": {p: 0.7 + n for p, n in zip(PROMPTS, noise, strict=True)},
            "b": {p: 0.6 - n for p, n in zip(PROMPTS, noise, strict=True)},
            "c": {
                p: 0.5 + (n if i % 2 else -n)
                for i, (p, n) in enumerate(zip(PROMPTS, noise, strict=True))
            },
        },
    )
    page = staff_client.get(reverse("dashboards:perspectives"), {"version": 2, "against": 1})
    assert (page.context["gained"], page.context["lost"]) == (["a"], ["b"])
    html = page.content.decode()
    assert "Better aligned in v2: a." in html and "Less aligned: b." in html
    verdicts = {r["group"]: r["verdict"] for r in page.context["paired"]}
    assert verdicts["c"] == "no clear change"
    with django_capture_on_commit_callbacks() as callbacks:
        page = staff_client.get(reverse("dashboards:perspectives"), {"version": 2, "against": 3})
    assert f"Computing the report of v3 on snapshot {snapshot.pk}" in page.content.decode()
    assert [args[:2] for _, args in queued(callbacks)] == [(v3.pk, snapshot.pk)]


def test_a_version_without_a_snapshot_says_so_on_the_page(registry_rows, staff_client):
    registry_rows([0.1])
    Checkpoint.objects.filter(version=1).update(snapshot=None)
    page = staff_client.get(reverse("dashboards:perspectives"), {"version": 1})
    assert page.status_code == 200
    assert "v1 has no snapshot of its own: name one" in page.content.decode()


@pytest.mark.parametrize("query", [{"version": 99}, {"field": "nope"}])
def test_bad_parameters_are_a_message_not_an_error(registry_rows, staff_client, query):
    registry_rows([0.1])
    page = staff_client.get(reverse("dashboards:perspectives"), query)
    assert page.status_code == 200 and page.context["error"]
