"""Small groups hidden everywhere (issue 30, part 4): a group of one planted on every surface
that shows a group's figures, and found on none of them, while a group of k is shown.

One annotator alone answered ``SOLO``; five (k = ``STEREORANK_GROUP_K`` = 5) answered
``SHARED``. Both rank a collection study (progress, quality, snapshot, model card) and a
validation study (its report); a checkpoint's stored perspective reports hold the group
of one as the service stores it (under k: its name only) and, in a second version, as a
report computed under a k of 1 would have stored it (with figures), which today's k
hides too. The data are built once for the module (one transaction, rolled back at the
end); each test reads one kind of surface as staff would.
"""

import csv
import io
import json
from dataclasses import asdict

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client, override_settings
from rest_framework.test import APIClient

from core.json import json_safe
from core.small_groups import hidden_note, keep_groups

SOLO = "zz-solo-value"
SHARED = "xx-shared-group"
K = 5
PROMPTS = [f"prompt-{i}" for i in range(6)]


def test_keep_groups_keeps_k_or_more_and_counts_the_rest():
    shown = keep_groups({"a": 5, "b": 4, "c": 0, "d": 9, "e": 1}, 5)
    assert shown.groups == {"a": 5, "d": 9} and shown.hidden == 2  # "c": nobody, no group
    assert shown.note == "2 groups below k = 5 hidden"
    stored = keep_groups({"x": {"n": 7}, "y": None}, 5, size=lambda v: v and v["n"])
    assert list(stored.groups) == ["x"] and stored.hidden == 1  # None: known under k
    assert hidden_note(0, 5) == "" and hidden_note(1, 3) == "1 group below k = 3 hidden"
    with pytest.raises(ValueError, match="k must be at least 1"):
        keep_groups({"a": 1}, 0)


def _rank_all(profile, tasks) -> None:
    """The profile ranks every task (items in id order, the solo one reversed)."""
    from datetime import timedelta

    from django.utils import timezone

    from annotation.models import Assignment
    from annotation.participants import services

    for task in tasks:
        order = sorted(task.items.values_list("pk", flat=True))
        if profile.demographics.get("lang") == SOLO:
            order.reverse()
        Assignment.objects.update_or_create(
            task=task,
            annotator=profile,
            defaults={
                "shown_order": order,
                "reserved_until": timezone.now() + timedelta(minutes=5),
            },
        )
        services.submit_ranking(profile, task.pk, order, 4.0)


def _collection_study() -> None:
    """Three tasks of the default study (three occupations), each ranked by the six
    annotators."""
    from annotation.models import (
        Item,
        Occupation,
        Prompt,
        PromptType,
        RankingTask,
        TaskItem,
        default_study,
    )

    study = default_study()
    tasks = []
    for t, name in enumerate(["nurse", "pilot", "chef"]):
        occupation = Occupation.objects.create(name=name, slug=name)
        original = Prompt.objects.create(
            occupation=occupation, prompt_type=PromptType.NEUTRAL, text=f"A photo of a {name}"
        )
        task = RankingTask.objects.create(occupation=occupation, overlap=6, study=study)
        for i in range(3):
            prompt = Prompt.objects.create(
                occupation=occupation,
                prompt_type=PromptType.NEUTRAL,
                origin=original,
                text=f"t{t} p{i}",
            )
            item = Item.objects.create(
                prompt=prompt, image=f"items/{t}-{i}.png", image_sha256=f"{t}-{i}", study=study
            )
            TaskItem.objects.create(task=task, item=item)
        tasks.append(task)
    _people(study, "person", tasks)


def _people(study, prefix: str, tasks) -> None:
    """Five annotators of ``study`` who answered ``SHARED`` and one who answered ``SOLO``,
    each ranking every task (no password: none logs in)."""
    from annotation.participants import services

    for n, value in enumerate([SHARED] * K + [SOLO]):
        user = get_user_model().objects.create_user(f"{prefix}{n}", password=None)
        profile = services.get_profile(user, study)
        services.give_consent(profile)
        services.save_demographics(profile, {"lang": value})
        _rank_all(profile, tasks)


def _validation_study(folder) -> None:
    """A validation study of two occupations, ranked by the same six kinds of people."""
    from annotation.models import RankingTask
    from tests.validation_helpers import make_validation_study

    study = make_validation_study(folder, occupations=2)
    _people(study, "viewer", RankingTask.objects.filter(study=study).order_by("pk"))


def _figures(n_annotators: int, value: float) -> dict:
    from training.ml.alignment_report import GroupPerspective

    per_prompt = dict.fromkeys(PROMPTS, value)
    g = GroupPerspective(
        group="x",
        n_annotators=n_annotators,
        n_rankings=3 * n_annotators,
        n_prompts=len(PROMPTS),
        n_placements=9 * n_annotators,
        alignment=value,
        alignment_ci=[value - 0.05, value + 0.05],
        human_baseline=0.7,
        human_baseline_ci=[0.65, 0.75],
        baseline_prompts=len(PROMPTS),
        baseline_annotators=5,
        baseline_rankings=15,
        first_choice_js=0.3,
        first_choice_js_ci=[0.2, 0.4],
        n_occupations=1,
        spearman=0.4,
        spearman_ci=[0.2, 0.6],
        n_items=9,
        per_occupation={"nurse": value},
        per_prompt=per_prompt,
    )
    return json_safe({k: v for k, v in asdict(g).items() if k != "group"})


def _versions() -> None:
    """A snapshot of the collection study, two versions on it, and their stored perspective
    reports: v1 as the service stores it at k = 5 (the group of one: its name only), v2 as
    a report computed at k = 1 stored it (the group of one with figures)."""
    from training.models import Checkpoint, PerspectiveReport, PerspectiveSummary
    from training.snapshots.services import create_snapshot

    snapshot = create_snapshot(include_synthetic=False)
    for version, k, solo in ((1, K, None), (2, 1, _figures(1, 0.9))):
        checkpoint = Checkpoint.objects.create(
            version=version,
            status="candidate",
            path=f"/nonexistent/v{version}",
            head_sha256="0" * 64,
            encoder_name="enc",
            encoder_identity={"name": "enc"},
            snapshot=snapshot,
            threshold=0.1,
            metrics={},
        )
        PerspectiveSummary.objects.create(
            checkpoint=checkpoint,
            snapshot=snapshot,
            field="lang",
            temperature=0.5,
            k=k,
            n_boot=100,
            seed=0,
            n_rankings=18,
            n_annotators=6,
            friedman=None,
            divergence=[
                {"group_a": SHARED, "group_b": SOLO, "value": 0.2, "ci": None, "n_prompts": 6}
            ],
        )
        shared = _figures(K, 0.5 + version / 10)
        PerspectiveReport.objects.create(
            checkpoint=checkpoint,
            snapshot=snapshot,
            field="lang",
            group=SHARED,
            status="computed",
            alignment=shared["alignment"],
            figures=shared,
        )
        PerspectiveReport.objects.create(
            checkpoint=checkpoint,
            snapshot=snapshot,
            field="lang",
            group=SOLO,
            status="computed" if solo else "fewer_than_k",
            alignment=solo and solo["alignment"],
            figures=solo or {},
        )


@pytest.fixture(scope="module")
def planted(django_db_setup, django_db_blocker, tmp_path_factory):
    """Everything above, built once, and the staff member who reads it."""
    from django.conf import settings

    from annotation.models import DemographicField
    from annotation.quality import store

    media = tmp_path_factory.mktemp("media")
    (media / "items").mkdir()
    fast = {**settings.STEREORANK, "QUALITY_N_BOOT": 20, "GROUP_K": K}
    with (
        override_settings(MEDIA_ROOT=media, STEREORANK=fast),
        django_db_blocker.unblock(),
        transaction.atomic(),
    ):
        DemographicField.objects.create(key="lang", label="Language", choices=[])
        _collection_study()
        _validation_study(tmp_path_factory.mktemp("val"))
        _versions()
        store.refresh(False, 20)  # the stored quality report the page and API serve
        yield get_user_model().objects.create_user(
            "boss", password=None, is_staff=True, is_superuser=True
        )
        transaction.set_rollback(True)


@pytest.fixture
def browser(planted, db) -> Client:
    """The staff member signed in (per test: a log-in is a session of the test's own)."""
    client = Client()
    client.force_login(planted)
    return client


@pytest.fixture
def api(planted, db) -> APIClient:
    client = APIClient()
    client.force_authenticate(planted)
    return client


def _seen(name: str, body: str, *, shared: bool = True) -> None:
    """The group of one nowhere in ``body``; the group of k in it (``shared``)."""
    assert SOLO not in body, f"{name} names the group of one"
    if shared:
        assert SHARED in body, f"{name} does not show the group of k"


def _get(client, url: str, **query) -> str:
    response = client.get(url, query)
    assert response.status_code == 200, (url, response.status_code, response.content[:300])
    return response.content.decode()


PAGES = {
    "progress": ("/dashboards/", {"study": "default"}, True),
    "quality": ("/dashboards/quality/", {"study": "default"}, True),
    "quality chart": ("/dashboards/quality/agreement.svg", {"study": "default"}, False),
    "validation": ("/dashboards/validation/val/", {}, True),
    "validation chart": ("/dashboards/validation/val/means.svg", {}, False),
    "perspectives v1": ("/dashboards/perspectives/", {"version": 1, "field": "lang"}, True),
    "perspectives v2 against v1": (
        "/dashboards/perspectives/",
        {"version": 2, "field": "lang", "against": 1},
        True,
    ),
    "perspective groups chart": (
        "/dashboards/perspectives/groups.svg",
        {"version": 2, "field": "lang"},
        True,
    ),
    "perspectives across versions chart": (
        "/dashboards/perspectives/versions.svg",
        {"field": "lang"},
        True,
    ),
    "registry": ("/dashboards/registry/", {}, False),
}


@pytest.mark.parametrize("name", PAGES)
def test_no_dashboard_page_or_chart_names_the_group_of_one(browser, name):
    url, query, shared = PAGES[name]
    body = _get(browser, url, **query)
    _seen(name, body, shared=shared)
    if name in ("progress", "quality", "validation", "perspectives v1"):
        assert "1 group below k = 5 hidden" in body, f"{name} does not say what it hid"


APIS = {
    "quality": ("/api/staff/quality/", {"study": "default"}),
    "validation": ("/api/staff/studies/val/validation/", {}),
    "perspectives v1": ("/api/training/checkpoints/1/perspectives/", {"field": "lang"}),
    "perspectives v2": ("/api/training/checkpoints/2/perspectives/", {"field": "lang"}),
    "perspectives csv": (
        "/api/training/checkpoints/2/perspectives/",
        {"field": "lang", "format": "csv"},
    ),
    "model card": ("/api/training/checkpoints/1/card/", {}),
}


@pytest.mark.parametrize("name", APIS)
def test_no_staff_api_answer_names_the_group_of_one(api, name):
    url, query = APIS[name]
    body = _get(api, url, **query)
    _seen(name, body)
    if name == "perspectives csv":
        rows = list(csv.DictReader(io.StringIO(body)))
        assert [(r["status"], r["hidden_groups"]) for r in rows][-1] == ("hidden", "1")
    elif name == "model card":
        assert "1 group below k = 5 hidden" in body
    else:
        assert '"hidden_groups"' in body


def test_no_export_of_aggregates_names_the_group_of_one(api):
    """The commands' reports (JSON and text) and the snapshot's frozen group labels."""
    from training.models import DatasetSnapshot

    for args in (
        ["quality", "--json", "--n-boot", "20"],
        ["quality", "--n-boot", "20"],
        ["validation_report", "val", "--json", "--n-boot", "20"],
        ["perspectives", "2", "--field", "lang", "--json"],
        ["perspectives", "2", "--field", "lang", "--csv"],
        ["perspectives", "1", "--field", "lang"],
    ):
        out = io.StringIO()
        call_command(*args, stdout=out)
        _seen(" ".join(args), out.getvalue())
    report = json.loads(_get(api, "/api/staff/studies/val/validation/"))
    assert report["hidden_groups"] == {"lang": 1} and set(report["per_group"]["lang"]) == {SHARED}
    labels = DatasetSnapshot.objects.get().group_labels
    _seen("snapshot group labels", json.dumps(labels))
