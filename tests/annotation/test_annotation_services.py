import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from annotation.assignment.next_task import next_task
from annotation.errors import ConsentRequired, InvalidAnswer, NotReserved
from annotation.models import Assignment, DemographicField, RankedItem, Ranking
from annotation.participants import services
from annotation.rankings import selectors


def _profile(name):
    user = get_user_model().objects.create_user(name, password="pw-123456")
    profile = services.get_profile(user)
    services.give_consent(profile)
    return profile


@pytest.mark.django_db
def test_expired_reservation_is_reusable(make_tasks):
    (task,) = make_tasks(1, 3, overlap=1)
    a, b = _profile("a"), _profile("b")
    assert next_task(a).task_id == task.pk
    assert next_task(b) is None  # the one slot is reserved
    Assignment.objects.update(reserved_until=timezone.now() - timedelta(seconds=1))
    assert next_task(b).task_id == task.pk
    with pytest.raises(NotReserved):
        services.submit_ranking(a, task.pk, list(task.items.values_list("id", flat=True)))
    assert not Ranking.objects.exists()


@pytest.mark.django_db
def test_submit_stores_long_form_and_resume(make_tasks):
    (task,) = make_tasks(1, 4, overlap=2)
    a = _profile("a")
    assignment = next_task(a)
    assert next_task(a).pk == assignment.pk  # resume, same shown order
    order = list(reversed(assignment.shown_order))
    ranking, created = services.submit_ranking(a, task.pk, order, seconds_spent=3.5)
    assert created and ranking.order == order and ranking.shown_order == assignment.shown_order
    positions = {r.item_id: (r.position, r.shown_position) for r in RankedItem.objects.all()}
    assert positions[order[0]] == (0, 3)
    task.refresh_from_db()
    assert task.ranking_count == 1
    assert selectors.progress(a) == {"done": 1, "quota": a.quota}
    assert next_task(a) is None  # already ranked its only task


@pytest.mark.django_db
def test_quota_and_withdrawn_consent(make_tasks):
    make_tasks(3, 2)
    a = _profile("a")
    a.quota = 1
    a.save()
    assignment = next_task(a)
    services.submit_ranking(a, assignment.task_id, assignment.shown_order)
    assert next_task(a) is None
    services.withdraw_consent(a)
    assert not selectors.has_consent(a)
    with pytest.raises(ConsentRequired):
        next_task(a)


@pytest.mark.django_db
def test_demographics_validated_against_fields():
    DemographicField.objects.create(key="age_band", label="Age", choices=["18-24", "25-34"])
    DemographicField.objects.create(key="language", label="First language")
    a = _profile("a")
    services.save_demographics(a, {"age_band": "18-24", "language": "Welsh"})
    a.refresh_from_db()
    assert a.demographics["age_band"] == "18-24"
    for bad in ({"shoe_size": "9"}, {"age_band": "99+"}):
        with pytest.raises(InvalidAnswer):
            services.save_demographics(a, bad)


@pytest.mark.django_db
def test_export_rankings_command(make_tasks, tmp_path):
    (task,) = make_tasks(1, 3)
    a = _profile("a")
    assignment = next_task(a)
    services.submit_ranking(a, task.pk, assignment.shown_order)
    out = tmp_path / "rankings.jsonl"
    call_command("export_rankings", "--out", str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["task"] == task.pk
    assert rows[0]["annotator"].startswith("a-") and rows[0]["annotator"] != "a"
    call_command("export_rankings", "--format", "csv", "--out", str(out))
    assert out.read_text().splitlines()[0].startswith("task,")


@pytest.mark.django_db
def test_create_annotator_command_creates_then_updates():
    out = io.StringIO()
    call_command(
        "create_annotator", "ada", "--password", "pw-1", "--consent", "--staff", stdout=out
    )
    user = get_user_model().objects.get(username="ada")
    assert out.getvalue().strip() == "created ada"
    assert user.is_staff and not user.is_superuser and user.check_password("pw-1")
    assert selectors.has_consent(user.annotator)
    call_command("create_annotator", "bob", "--password", "pw-2", stdout=out)
    bob = get_user_model().objects.get(username="bob")
    assert not bob.is_staff and not selectors.has_consent(bob.annotator)
    call_command("create_annotator", "ada", "--password", "pw-3", stdout=out)
    user.refresh_from_db()
    assert out.getvalue().splitlines()[-1] == "updated ada" and user.check_password("pw-3")
