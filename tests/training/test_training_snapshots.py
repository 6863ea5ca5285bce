"""Snapshots on the test database: labels, hash, grouped split, group labels, bad input."""

import pytest

from annotation.models import Consent, Ranking
from annotation.rankings.labels import LabelRow, group_labels, item_labels
from annotation.rankings.selectors import label_rows
from training.errors import SnapshotError
from training.models import DatasetSnapshot
from training.snapshots.services import EVAL, TRAIN, create_snapshot, new_rankings_since


def test_item_labels_are_mean_position_over_k_minus_one():
    rows = [
        LabelRow(1, 10, 0, {}),
        LabelRow(1, 11, 1, {}),
        LabelRow(1, 12, 2, {}),
        LabelRow(2, 10, 1, {}),
        LabelRow(2, 12, 0, {}),
    ]
    assert item_labels(rows) == {10: (0 / 2 + 1 / 1) / 2, 11: 0.5, 12: (1.0 + 0.0) / 2}


def test_group_labels_use_only_that_groups_rankings_and_skip_prefer_not_to_say():
    rows = [
        LabelRow(1, 10, 0, {"age_band": "18-24"}),
        LabelRow(1, 11, 1, {"age_band": "18-24"}),
        LabelRow(2, 10, 1, {"age_band": "65-74"}),
        LabelRow(2, 11, 0, {"age_band": "65-74"}),
        LabelRow(3, 10, 1, {"age_band": "prefer not to say"}),
        LabelRow(3, 11, 0, {"age_band": "prefer not to say"}),
    ]
    labels = group_labels(rows, ["age_band", "gender_identity"])
    assert labels == {
        "age_band": {"18-24": {10: 0.0, 11: 1.0}, "65-74": {10: 1.0, 11: 0.0}},
        "gender_identity": {},
    }


def test_snapshot_freezes_labels_with_a_grouped_split(study, settings):
    # Six annotators: groups of one or two, kept here (k = 1) to check their labels.
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}
    snap = create_snapshot(include_synthetic=True, seed=3)
    assert snap.ranking_count == Ranking.objects.count() == study["rankings"]
    assert snap.last_ranking_id == Ranking.objects.order_by("-id").first().pk
    assert snap.example_count == 72 == snap.train_count + snap.eval_count
    labels = item_labels(label_rows(include_synthetic=True))
    for row in snap.examples:
        assert row["label"] == pytest.approx(labels[row["item_id"]])
        assert 0.0 <= row["label"] <= 1.0
    sides = {}
    for row in snap.examples:
        sides.setdefault(row["group"], set()).add(row["split"])
    assert all(len(s) == 1 for s in sides.values())  # a prompt's items fall on one side
    assert {s.pop() for s in sides.values()} == {TRAIN, EVAL}
    assert len(sides) == 36  # one group per original prompt
    # group labels: keyed by demographic value, from that group's rankings only
    ages = snap.group_labels["age_band"]
    assert ages and all(set(v) <= {r["key"] for r in snap.examples} for v in ages.values())


def test_same_rankings_same_hash_new_ranking_new_hash(study, annotator):
    a = create_snapshot(include_synthetic=True)
    b = create_snapshot(include_synthetic=True, seed=9)
    assert a.pk != b.pk and a.content_hash == b.content_hash
    Ranking.objects.order_by("id").first().delete()
    c = create_snapshot(include_synthetic=True)
    assert c.content_hash != a.content_hash and c.example_count < a.example_count


def test_synthetic_rankings_only_when_asked_and_withdrawn_consent_excluded(study):
    with pytest.raises(SnapshotError, match="no rankings to snapshot.*--include-synthetic"):
        create_snapshot()
    assert DatasetSnapshot.objects.count() == 0
    first = Ranking.objects.order_by("id").first()
    Consent.objects.filter(annotator=first.annotator).update(withdrawn_at="2026-01-01T00:00Z")
    snap = create_snapshot(include_synthetic=True)
    assert snap.ranking_count == study["rankings"] - first.annotator.rankings.count()


def test_no_rankings_is_a_clear_error_and_nothing_is_made(db):
    with pytest.raises(SnapshotError, match="no rankings"):
        create_snapshot(include_synthetic=True)
    with pytest.raises(SnapshotError, match="eval_fraction must be between 0 and 1, not 1.5"):
        create_snapshot(eval_fraction=1.5)
    assert DatasetSnapshot.objects.count() == 0


def test_too_small_to_split_is_a_clear_error(make_tasks, annotator):
    from annotation.assignment import next_task as assignment
    from annotation.participants import services

    (task,) = make_tasks(n=1, k=3)  # all items share one original prompt: one group
    client = annotator("alice")
    assignment.next_task(client.profile)
    items = list(task.items.values_list("id", flat=True))
    services.submit_ranking(client.profile, task.pk, items)
    with pytest.raises(SnapshotError, match="too small to split"):
        create_snapshot()
    assert DatasetSnapshot.objects.count() == 0


def test_new_rankings_are_counted_from_the_last_snapshot(make_tasks, annotator):
    from annotation.assignment import next_task as assignment
    from annotation.participants import services

    tasks = make_tasks(n=3, k=3)
    robot = annotator("robot", synthetic=True)
    people = [annotator(name) for name in ("ann", "bob")]

    def rank(client, task):
        assignment.next_task(client.profile)
        services.submit_ranking(client.profile, task.pk, [i.pk for i in task.items.all()])

    rank(people[0], tasks[0])
    assert new_rankings_since(None) == 1
    rank(robot, tasks[1])
    assert (new_rankings_since(None), new_rankings_since(None, include_synthetic=True)) == (1, 2)
    snap = DatasetSnapshot.objects.create(
        ranking_count=2,
        last_ranking_id=Ranking.objects.latest("id").pk,
        content_hash="x",
        example_count=0,
        train_count=0,
        eval_count=0,
        examples=[],
    )
    assert new_rankings_since(snap, include_synthetic=True) == 0
    rank(people[1], tasks[2])
    assert new_rankings_since(snap) == 1


@pytest.fixture
def contrarian_study(make_tasks, annotator, store_ranking):
    """Four occupations, one task of 3 items each, ranked by a, b and d in item order and
    by c in reverse; e ranks the first task only; f alone ranks a fifth."""
    tasks = [make_tasks(n=1, k=3, overlap=5, occupation=o)[0] for o in ("nurse", "pilot", "chef")]
    tasks.append(make_tasks(n=1, k=3, overlap=5, occupation="judge")[0])
    people = {name: annotator(name).profile for name in "abcde"}
    for task in tasks:
        items = list(task.items.order_by("id").values_list("id", flat=True))
        for name in "abd":
            store_ranking(people[name], task, items, shown=items[::-1])
        store_ranking(people["c"], task, items[::-1], shown=items)
    first = sorted(tasks[0].items.values_list("id", flat=True))
    store_ranking(people["e"], tasks[0], first, shown=first[::-1])
    # f alone ranks a task of its own: no shared task, no rho.
    (alone,) = make_tasks(n=1, k=3, overlap=5, occupation="baker")
    people["f"] = annotator("f").profile
    items = sorted(alone.items.values_list("id", flat=True))
    store_ranking(people["f"], alone, items, shown=items[::-1])
    return people, tasks


def test_reliability_weighted_snapshot_hand_case(contrarian_study, settings):
    from annotation.models import AnnotatorProfile, DemographicField
    from annotation.rankings.exports import pseudonym

    DemographicField.objects.create(key="age_band", label="Age band")
    c = contrarian_study[0]["c"]
    AnnotatorProfile.objects.filter(pk=c.pk).update(demographics={"age_band": "65-74"})
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 1}  # c's group of one, kept here
    plain = create_snapshot()
    weighted = create_snapshot(weighting="reliability")
    assert plain.label_weighting == {"method": "none"}
    # c (rho -1) weighs 0, the others 1: labels are the item-order positions exactly,
    # where the plain mean is pulled to the middle by c (and the first task also by e).
    labels = {r["item_id"]: r["label"] for r in weighted.examples}
    key = {r["item_id"]: r["key"] for r in weighted.examples}
    c_group = weighted.group_labels["age_band"]["65-74"]
    for task in contrarian_study[1]:
        items = sorted(task.items.values_list("id", flat=True))
        assert [labels[i] for i in items] == [0.0, 0.5, 1.0]
        # c's group keeps c's own view: group labels are never weighted (c weighs 0)
        assert [c_group[key[i]] for i in items] == [1.0, 0.5, 0.0]
    assert weighted.group_labels == plain.group_labels
    by_key = {r["key"]: r["label"] for r in plain.examples}
    moved = [r for r in weighted.examples if r["label"] != pytest.approx(by_key[r["key"]])]
    assert len(moved) == 8  # the first and last item of each of the 4 tasks (not f's)
    assert weighted.content_hash != plain.content_hash

    record = weighted.label_weighting
    assert record["method"] == "reliability" and record["min_shared_tasks"] == 3
    user = {name: p.user_id for name, p in contrarian_study[0].items()}
    annotators = record["annotators"]
    assert set(annotators) == {pseudonym(uid) for uid in user.values()}  # pseudonyms only
    assert annotators[pseudonym(user["c"])] == {
        "weight": 0.0,
        "rho": -1.0,
        "shared_tasks": 4,
        "basis": "estimated",
    }
    assert annotators[pseudonym(user["e"])]["basis"] == "too few shared tasks"
    assert annotators[pseudonym(user["e"])]["weight"] == 1.0  # the median of 1, 1, 1, 0
    assert annotators[pseudonym(user["f"])] == {
        "weight": 1.0,
        "rho": None,  # NaN is not JSON
        "shared_tasks": 0,
        "basis": "too few shared tasks",
    }

    settings.STEREORANK = {**settings.STEREORANK, "LABEL_WEIGHTING": "reliability"}
    assert create_snapshot().content_hash == weighted.content_hash  # the setting's default


def test_unknown_weighting_is_refused_and_nothing_is_made(contrarian_study):
    with pytest.raises(SnapshotError, match="unknown label weighting 'votes': use none or rel"):
        create_snapshot(weighting="votes")
    assert DatasetSnapshot.objects.count() == 0


def test_weighting_through_the_api_the_command_and_the_dashboard(contrarian_study, staff):
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError
    from django.test import Client
    from django.urls import reverse
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(staff)
    r = api.post("/api/training/snapshots/", {"weighting": "votes"}, format="json")
    assert r.status_code == 400 and "weighting" in r.json()
    r = api.post("/api/training/snapshots/", {"weighting": "reliability"}, format="json")
    assert r.status_code == 201, r.json()
    assert r.json()["label_weighting"]["method"] == "reliability"
    listed = api.get("/api/training/snapshots/").json()
    assert listed[0]["label_weighting"]["min_shared_tasks"] == 3

    out, err = io.StringIO(), io.StringIO()
    call_command("snapshot", "--weighting", "reliability", stdout=out, stderr=err)
    made = DatasetSnapshot.objects.get(pk=int(out.getvalue()))
    assert made.label_weighting["method"] == "reliability"
    assert "labels weighted: reliability" in err.getvalue()
    with pytest.raises(CommandError, match="invalid choice: 'votes'"):
        call_command("snapshot", "--weighting", "votes", stderr=io.StringIO())

    page = Client()
    page.force_login(staff)
    response = page.post(reverse("dashboards:snapshot-create"), {"reliability": "on"}, follow=True)
    newest = DatasetSnapshot.objects.latest()
    assert newest.label_weighting["method"] == "reliability"
    html = response.content.decode()
    assert f"Snapshot {newest.pk} taken (15 items, reliability-weighted)" in html
    assert f"#{newest.pk} · 15 items" in html and "reliability-weighted</option>" in html
