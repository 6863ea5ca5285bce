"""The one answer to "which rankings count": labels, exports and the scheduler agree."""

import pytest
from django.contrib.auth import get_user_model

from annotation.assignment.next_task import next_task
from annotation.models import AnnotatorProfile
from annotation.participants import services
from annotation.rankings import selectors
from annotation.rankings.exports import ranking_rows
from training.snapshots.services import new_rankings_since


def _rank(name: str, task, synthetic: bool = False, staff: bool = False):
    user = get_user_model().objects.create_user(name, password="pw-123456", is_staff=staff)
    profile = services.get_profile(user)
    profile.is_synthetic = synthetic
    profile.save()
    services.give_consent(profile)
    assignment = next_task(profile)
    assert assignment.task_id == task.pk
    services.submit_ranking(profile, task.pk, assignment.shown_order)
    return profile


@pytest.mark.django_db
def test_withdrawn_and_synthetic_rankings_do_not_count_anywhere(make_tasks):
    (task,) = make_tasks(1, 3, overlap=3)
    alice = _rank("alice", task)
    bob = _rank("bob", task)
    _rank("robot", task, synthetic=True)
    assert selectors.counted_rankings().count() == 2
    assert selectors.counted_rankings(include_synthetic=True).count() == 3
    services.withdraw_consent(bob)
    counted = {r.annotator_id for r in selectors.counted_rankings()}
    assert counted == {alice.pk}
    # the scheduler's trigger counted the withdrawn annotator's ranking before (the bug)
    assert new_rankings_since(None) == 1
    assert new_rankings_since(None, include_synthetic=True) == 2
    assert len(list(ranking_rows())) == 1
    assert {r.ranking_id for r in selectors.label_rows()} == {
        r.pk for r in selectors.counted_rankings()
    }


@pytest.mark.django_db
def test_staff_accounts_are_not_annotators_in_progress(make_tasks):
    (task,) = make_tasks(1, 3, overlap=2)
    _rank("alice", task)
    _rank("admin", task, staff=True)
    assert AnnotatorProfile.objects.count() == 2
    page = selectors.annotator_progress(None)
    assert [row["user__username"] for row in page.object_list] == ["alice"]
    assert list(selectors.annotators().values_list("user__username", flat=True)) == ["alice"]
