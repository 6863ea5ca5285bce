"""Adaptive overlap: a task whose rankings disagree gets one more annotator, up to a cap."""

import math

import pytest

from annotation.assignment.overlap import adapt
from annotation.models import RankingTask
from annotation.stats.agreement import kendall_w
from annotation.stats.overlap import one_more, task_agreement

pytestmark = pytest.mark.django_db


def ids(task) -> list[int]:
    return list(task.task_items.order_by("id").values_list("item_id", flat=True))


def test_task_agreement_is_kendalls_w_of_the_orders():
    assert task_agreement([[1, 2, 3], [1, 2, 3]]) == pytest.approx(1.0)
    assert task_agreement([[1, 2, 3], [3, 2, 1]]) == pytest.approx(0.0)
    # Items named by id, whatever order each ranking lists them in.
    expected = kendall_w([[0, 1, 2, 3], [1, 0, 2, 3], [0, 1, 3, 2]]).w
    assert task_agreement([[5, 6, 7, 8], [6, 5, 7, 8], [5, 6, 8, 7]]) == pytest.approx(expected)
    assert math.isnan(task_agreement([[1, 2, 3]]))


@pytest.mark.parametrize(
    ("w", "overlap", "full", "expected"),
    [
        (0.2, 3, True, True),  # disagree, full, below the cap
        (0.8, 3, True, False),  # they agree
        (0.2, 3, False, False),  # not every slot ranked yet
        (0.2, 5, True, False),  # at the cap
        (math.nan, 3, True, False),  # not measured
    ],
)
def test_one_more_only_for_a_full_disagreeing_task_below_the_cap(w, overlap, full, expected):
    assert one_more(w, overlap, full=full, cut=0.5, cap=5) is expected


def test_a_disagreeing_task_gets_one_more_annotator_up_to_the_cap(
    make_tasks, annotator, store_ranking, settings, django_capture_on_commit_callbacks
):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "ADAPTIVE_OVERLAP": {"CUT": 0.5, "CAP": 3},
        "SAMPLER": {**settings.STEREORANK["SAMPLER"], "EVERY": 0},  # no other send
    }
    contested, agreed = make_tasks(2, k=4, overlap=2)
    a, b = annotator("a").profile, annotator("b").profile
    order = ids(contested)
    store_ranking(a, contested, order)
    with django_capture_on_commit_callbacks() as sent:
        store_ranking(b, contested, order[::-1])  # W = 0, and the last slot
    assert len(sent) == 1  # the check is queued after commit, nothing computed here
    store_ranking(a, agreed, ids(agreed))
    store_ranking(b, agreed, ids(agreed))
    assert adapt(contested.pk) and not adapt(agreed.pk)
    contested.refresh_from_db()
    assert contested.overlap == 3 and RankingTask.objects.get(pk=agreed.pk).overlap == 2
    assert not adapt(contested.pk)  # not full again yet: idempotent
    with django_capture_on_commit_callbacks() as sent:
        store_ranking(annotator("c").profile, contested, order[1:] + order[:1])
    assert sent == []  # overlap 3 is the cap: nothing to check
    assert not adapt(contested.pk)
    assert RankingTask.objects.get(pk=contested.pk).overlap == 3
