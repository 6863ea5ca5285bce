"""Two studies at once: a participant joins one by its link and meets only that study's
tasks, consent text, instructions and quotas; staff create, open, close and archive
studies (commands, admin actions, the staff API) and see progress per study."""

import io

import pytest
from crowd_fakes import FakeProlific, join
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.assignment.next_task import next_task
from annotation.models import (
    ConsentText,
    DemographicField,
    GroupQuota,
    Instructions,
    Ranking,
    Study,
)
from annotation.models.studies import Participation
from annotation.participants import consent, services
from annotation.studies import lifecycle as studies
from tests.staff import make_staff


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.fixture
def join_cache(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "j"}
    }


@pytest.fixture
def two_studies(db, join_cache, make_tasks):
    """The default study and ``wave-b`` (Prolific), each with tasks, consent and instructions
    of its own."""
    b = Study.objects.create(
        slug="wave-b", name="Wave B", platform=Study.Platform.PROLIFIC, completion_code="BDONE"
    )
    default = studies.default_study()
    tasks = {
        "default": make_tasks(3, 2, overlap=5, occupation="nurse"),
        "wave-b": make_tasks(3, 2, overlap=5, occupation="pilot", study=b),
    }
    for study, word in ((default, "Default"), (b, "Wave-B")):
        ConsentText.objects.create(study=study, version=1, text=f"{word} consent wording.")
        Instructions.objects.create(study=study, version=1, text=f"{word} instructions wording.")
    return {"default": default, "wave-b": b, "tasks": tasks}


def _join(study: Study, pid: str) -> Client:
    client = Client(REMOTE_ADDR="203.0.113.9")
    join(client, FakeProlific(study.slug).link(pid))
    return client


def test_a_participant_meets_only_the_study_they_joined(two_studies):
    b = two_studies["wave-b"]
    client = _join(b, "PID-1")
    page = client.get(reverse("portal:consent")).content.decode()
    assert "Wave-B consent wording." in page and "Default consent" not in page
    client.post(reverse("portal:consent"), {"action": "agree"})
    page = client.get(reverse("portal:instructions")).content.decode()
    assert "Wave-B instructions wording." in page and "Default instructions" not in page

    profile = Participation.objects.get().annotator
    assert profile.study == b
    assert profile.consents.get().text.study == b
    b_tasks = {t.pk for t in two_studies["tasks"]["wave-b"]}
    seen = set()
    while (assignment := next_task(profile)) is not None:
        seen.add(assignment.task_id)
        services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
    assert seen == b_tasks


def test_an_annotator_of_the_default_study_never_meets_another_studys_tasks(two_studies, annotator):
    profile = annotator("ann").profile
    assert profile.study == two_studies["default"]
    seen = set()
    while (assignment := next_task(profile)) is not None:
        seen.add(assignment.task_id)
        services.submit_ranking(profile, assignment.task_id, assignment.shown_order)
    assert seen == {t.pk for t in two_studies["tasks"]["default"]}


def test_the_same_platform_id_in_two_studies_is_two_participants(two_studies):
    c = Study.objects.create(slug="wave-c", name="Wave C", platform=Study.Platform.PROLIFIC)
    _join(two_studies["wave-b"], "SAME-PID")
    _join(c, "SAME-PID")
    first, second = Participation.objects.order_by("pk")
    assert first.external_id_hash == second.external_id_hash
    assert first.annotator_id != second.annotator_id
    assert (first.annotator.study, second.annotator.study) == (two_studies["wave-b"], c)


def test_a_draft_study_admits_nobody_and_an_archived_one_serves_nothing(two_studies):
    draft = studies.create_study("draft-one", platform=Study.Platform.PROLIFIC)
    response = Client(REMOTE_ADDR="203.0.113.9").get(FakeProlific(draft.slug).link("P-9"))
    assert response.status_code == 403 and not Participation.objects.exists()

    b = two_studies["wave-b"]
    client = _join(b, "PID-2")
    client.post(reverse("portal:consent"), {"action": "agree"})
    profile = Participation.objects.get().annotator
    studies.transition(b, Study.Status.CLOSED)  # those who started may finish
    assert next_task(profile) is not None
    studies.transition(b, Study.Status.ARCHIVED)
    Ranking.objects.all().delete()
    profile.assignments.all().delete()
    assert next_task(profile) is None


def test_quotas_count_within_their_study(two_studies, annotator):
    age = DemographicField.objects.create(
        key="age_band", label="Age band", choices=["18-24", "25-34"]
    )
    GroupQuota.objects.create(study=two_studies["wave-b"], field=age, value="18-24", target=0)
    profile = annotator("ann").profile  # the default study: no quota there
    services.save_demographics(profile, {"age_band": "18-24"})
    assert next_task(profile) is not None


def test_create_study_and_its_lifecycle_from_the_command_line(db):
    out = run(
        "create_study", "pilot", "--kind", "validation", "--task-size", "4", "--no-conditions"
    )
    assert out.strip() == "study pilot created (validation, draft)"
    study = Study.objects.get(slug="pilot")
    assert (study.kind, study.task_size, study.name) == ("validation", 4, "pilot")
    # The catalogue's consent is a template: the study cannot open on it, and one line
    # names every field it lacks.
    with pytest.raises(CommandError) as refused:
        run("study_status", "pilot", "open")
    assert str(refused.value).startswith("Study 'pilot' cannot open: its consent text")
    for label in ("controller", "contact e-mail", "data protection officer", "legal basis"):
        assert label in str(refused.value)
    assert Study.objects.get(slug="pilot").status == "draft"
    run("consent", "--study", "pilot", "--demo")
    assert run("study_status", "pilot", "open").strip() == "study pilot is open"
    assert run("study_status", "pilot", "closed").strip() == "study pilot is closed"
    assert run("study_status", "pilot", "archived").strip() == "study pilot is archived"
    with pytest.raises(CommandError, match="^Study 'pilot' is archived: it can move to nothing"):
        run("study_status", "pilot", "open")
    with pytest.raises(CommandError, match="^A study 'pilot' exists already.$"):
        run("create_study", "pilot")
    with pytest.raises(CommandError, match="task_size"):
        run("create_study", "tiny", "--task-size", "1")
    with pytest.raises(CommandError, match="^There is no study 'nope'.$"):
        run("study_status", "nope", "open")
    assert not Study.objects.filter(slug="tiny").exists()


@pytest.fixture
def staff_api(two_studies) -> APIClient:
    client = APIClient()
    client.force_authenticate(make_staff("lab", two_studies["default"], two_studies["wave-b"]))
    return client


def test_staff_api_lists_studies_with_progress_and_creates_and_moves_them(
    two_studies, staff_api, annotator
):
    profile = annotator("ann").profile
    assignment = next_task(profile)
    services.submit_ranking(profile, assignment.task_id, assignment.shown_order)

    rows = {r["slug"]: r for r in staff_api.get("/api/staff/studies/").json()}
    assert rows["default"]["participants"] == 1 and rows["default"]["rankings"] == 1
    assert rows["wave-b"]["participants"] == 0 and rows["wave-b"]["rankings"] == 0
    assert rows["wave-b"]["n_tasks"] == 3 and rows["wave-b"]["slots"] == 15

    made = staff_api.post(
        "/api/staff/studies/", {"slug": "val-1", "kind": "validation"}, format="json"
    )
    assert made.status_code == 201 and made.json()["status"] == "draft"
    again = staff_api.post("/api/staff/studies/", {"slug": "val-1"}, format="json")
    assert again.status_code == 409 and "exists already" in again.json()["detail"]
    bad = staff_api.post("/api/staff/studies/", {"slug": "x y", "task_size": 1}, format="json")
    assert bad.status_code == 400 and {"slug", "task_size"} <= set(bad.json())

    url = "/api/staff/studies/val-1/transition/"
    refused = staff_api.post(url, {"status": "open"}, format="json")
    assert refused.status_code == 409 and "lacks controller" in refused.json()["detail"]
    consent.publish(Study.objects.get(slug="val-1"), consent.demonstration_values())
    assert staff_api.post(url, {"status": "open"}, format="json").json()["status"] == "open"
    refused = staff_api.post(url, {"status": "archived"}, format="json")
    assert refused.status_code == 409 and "can move to closed" in refused.json()["detail"]
    assert (
        staff_api.post(
            "/api/staff/studies/nope/transition/", {"status": "open"}, format="json"
        ).status_code
        == 404
    )

    outsider = annotator("someone")
    assert outsider.get("/api/staff/studies/").status_code == 403


def test_admin_actions_move_studies_and_report_refusals(two_studies):
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("lab", password="pw-123456"))
    b = two_studies["wave-b"]
    draft = studies.create_study("later")
    response = client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "archive_studies", "_selected_action": [b.pk, draft.pk]},
        follow=True,
    )
    said = " | ".join(str(m) for m in response.context["messages"])
    assert "can move to closed, not archived" in said and "later is archived." in said
    b.refresh_from_db()
    assert b.status == Study.Status.OPEN
    assert Study.objects.get(slug="later").status == Study.Status.ARCHIVED


def test_progress_dashboard_shows_each_study(two_studies):
    client = Client()
    client.force_login(make_staff("lab", two_studies["default"], two_studies["wave-b"]))
    page = client.get(reverse("dashboards:progress")).content.decode()
    assert 'data-study="default"' in page and 'data-study="wave-b"' in page
