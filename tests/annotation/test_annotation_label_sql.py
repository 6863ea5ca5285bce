"""Labels aggregated in PostgreSQL equal the Python path's (``label_rows`` ->
``item_labels`` / ``group_labels``): check cards dropped, K mixed, ties (a third of the
rankings tie two items: issue 40), groups by ``group_of``'s rule (trimmed, "prefer not to
say" and non-strings form none)."""

import pytest

from annotation.models import AnnotatorProfile, RankingTask, Study, default_study
from annotation.rankings.label_sql import aggregated_labels
from annotation.rankings.labels import group_labels, item_labels
from annotation.rankings.selectors import label_rows

pytestmark = pytest.mark.postgres

ANSWERS = [
    {"age": "18-24", "region": "north"},
    {"age": " 18-24 ", "region": "south"},
    {"age": "  Prefer Not To Say ", "region": "north"},
    {"age": 42, "region": ""},
    {"region": "south"},
    {"age": "65+", "region": "north"},
]


@pytest.fixture
def ranked(make_tasks, annotator, store_ranking):
    study = default_study()  # made now, if a flush took it, so the format sticks
    Study.objects.filter(pk=study.pk).update(question_format=Study.Question.RANK_TIES)
    tasks = make_tasks(3, k=4, overlap=6) + make_tasks(2, k=5, overlap=6, occupation="chef")
    (single,) = make_tasks(1, k=1, overlap=6, occupation="pilot")
    card_task = tasks[3]
    card = list(card_task.items.order_by("id").values_list("id", flat=True))[2]
    RankingTask.objects.filter(pk=card_task.pk).update(check_item=card, check_position=2)
    for n, answers in enumerate(ANSWERS):
        profile = annotator(f"a{n}").profile
        AnnotatorProfile.objects.filter(pk=profile.pk).update(demographics=answers)
        for t, task in enumerate([*tasks, single]):
            items = list(task.items.order_by("id").values_list("id", flat=True))
            shift = (n + t) % len(items)
            order = items[shift:] + items[:shift]
            if n % 2:
                order.reverse()
            if task == card_task:  # the card where it was asked to go: the check passes
                order.remove(card)
                order.insert(2, card)
            answer = order
            if n % 3 == 0 and task != card_task and len(order) > 2:
                answer = [[order[0]], order[1:3], *([i] for i in order[3:])]
            store_ranking(profile, task, answer, shown=order[::-1])


def test_sql_labels_equal_the_python_path(ranked):
    fields = ["age", "region"]
    got = aggregated_labels(False, fields)
    rows = label_rows()
    assert got.labels == pytest.approx(item_labels(rows), abs=1e-12)
    assert set(got.labels) == set(item_labels(rows))
    expected = group_labels(rows, fields)
    assert set(got.groups["age"]) == {"18-24", "65+"} == set(expected["age"])
    for field in fields:
        assert set(got.groups[field]) == set(expected[field])
        for group, labels in expected[field].items():
            assert got.groups[field][group] == pytest.approx(labels, abs=1e-12)
    ids = {r.ranking_id for r in rows}
    assert (got.ranking_count, got.last_ranking_id) == (len(ids), max(ids))


def test_snapshot_from_sql_equals_the_python_paths(ranked, settings):
    from training.snapshots import services as snapshots

    sql = snapshots.create_snapshot()
    settings.STEREORANK = {**settings.STEREORANK, "RELIABILITY_MIN_TASKS": 10**6}
    # every weight 1 (too few shared tasks): the Python path, the same labels
    python = snapshots.create_snapshot(weighting="reliability")
    assert sql.group_labels.keys() == python.group_labels.keys()
    labels = {r["item_id"]: r["label"] for r in sql.examples}
    assert labels == pytest.approx({r["item_id"]: r["label"] for r in python.examples}, abs=1e-12)
    assert (sql.ranking_count, sql.last_ranking_id) == (
        python.ranking_count,
        python.last_ranking_id,
    )


def test_nothing_counted_is_an_empty_aggregate(db):
    got = aggregated_labels(False, ["age"])
    assert (got.labels, got.groups, got.ranking_count) == ({}, {"age": {}}, 0)
