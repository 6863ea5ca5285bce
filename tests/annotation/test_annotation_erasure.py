"""Erasure: what goes, what stays, and that nothing built afterwards holds the rankings.

Labels are checked against hand-worked means of position / (K - 1).
"""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.http import HttpRequest
from django.urls import reverse
from knox.models import AuthToken

from annotation.access.scope import SYSTEM
from annotation.accounts import tokens
from annotation.assignment.next_task import next_task
from annotation.errors import AlreadyErased
from annotation.models import (
    DemographicField,
    Item,
    Occupation,
    Prompt,
    PromptType,
    RankedItem,
    Ranking,
    RankingTask,
    StatusChange,
    TaskItem,
)
from annotation.models.studies import Erasure
from annotation.participants import services
from annotation.participants.erasure import erase_annotator
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym, ranking_rows
from training import selectors as training_selectors
from training.snapshots.services import create_snapshot, new_rankings_since


def _two_occupations() -> dict[str, list[Item]]:
    """Two tasks (one per occupation) of three items, each item its own original prompt,
    so that a snapshot's grouped split has groups to split; overlap 3."""
    items = {}
    for name in ("nurse", "pilot"):
        occupation = Occupation.objects.create(name=name, slug=name)
        task = RankingTask.objects.create(occupation=occupation, overlap=3)
        items[name] = []
        for kind in PromptType.values:
            prompt = Prompt.objects.create(
                occupation=occupation, prompt_type=kind, text=f"{kind} {name}"
            )
            item = Item.objects.create(prompt=prompt, image="x.png", image_sha256=f"{name}{kind}")
            TaskItem.objects.create(task=task, item=item)
            items[name].append(item)
    return items


def _person(name: str, gender: str | None = None):
    profile = services.get_profile(get_user_model().objects.create_user(name, password="pw-1234"))
    services.give_consent(profile)
    if gender:
        services.save_demographics(profile, {"gender": gender})
    return profile


def _rank_all(profile, orders: dict[int, list[int]]) -> None:
    """Rank every task the annotator is given with the order fixed for it (by task id)."""
    while (assignment := next_task(profile)) is not None:
        services.submit_ranking(profile, assignment.task_id, orders[assignment.task_id])


@pytest.fixture
def ranked(db, settings):
    """Alice, Bob and Carol rank both tasks; a, b, c are each task's items in id order.

    Orders (most to least stereotypical), the same on both tasks:
    alice [a, b, c], bob [c, a, b], carol [b, a, c]. k = 3: each item's label pools
    three annotators, so a snapshot frozen with them keeps it through an erasure
    (test_annotation_erasure_traces.py erases from labels of fewer than k).
    """
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 3}
    DemographicField.objects.create(key="gender", label="Gender", choices=["woman", "man"])
    items = _two_occupations()
    people = {
        "alice": (_person("alice", "woman"), [0, 1, 2]),
        "bob": (_person("bob", "man"), [2, 0, 1]),
        "carol": (_person("carol"), [1, 0, 2]),
    }
    tasks = {name: RankingTask.objects.get(occupation__slug=name) for name in items}
    for profile, pattern in people.values():
        orders = {tasks[name].pk: [items[name][i].pk for i in pattern] for name in items}
        _rank_all(profile, orders)
    return {"items": items, "tasks": tasks, **{k: v[0] for k, v in people.items()}}


# Hand-worked labels of items a, b, c (K = 3, so position / 2):
# with bob:    a = (0 + .5 + .5) / 3, b = (.5 + 1 + 0) / 3, c = (1 + 0 + 1) / 3
# without bob: a = (0 + .5) / 2,      b = (.5 + 0) / 2,     c = (1 + 1) / 2
WITH_BOB = [1 / 3, 1 / 2, 2 / 3]
WITHOUT_BOB = [1 / 4, 1 / 4, 1.0]


def _labels(snapshot, items) -> dict[str, list[float]]:
    by_item = {row["item_id"]: row["label"] for row in snapshot.examples}
    return {name: [by_item[item.pk] for item in its] for name, its in items.items()}


def test_erasure_removes_the_person_and_their_rankings_from_everything_built_after(ranked):
    items, bob = ranked["items"], ranked["bob"]
    tokens.issue(bob.user)
    before = create_snapshot(seed=0, eval_fraction=0.5)
    assert _labels(before, items) == {n: pytest.approx(WITH_BOB) for n in items}
    frozen = (before.content_hash, before.examples, before.group_labels)
    # bob alone answered "man": a group of one keeps no labels (k = STEREORANK_GROUP_K)
    assert "man" not in before.group_labels["gender"]
    bob_pseudonym = pseudonym(bob.user_id)

    erasure = erase_annotator(bob, via=Erasure.Via.PARTICIPANT)

    # the person: no demographics, no log-in, no name, no token; consent withdrawn
    bob.refresh_from_db()
    user = get_user_model().objects.get(pk=bob.user_id)
    assert bob.demographics == {} and bob.erased_at is not None
    assert not user.is_active and not user.has_usable_password()
    assert "bob" not in user.username and not AuthToken.objects.filter(user=user).exists()
    assert not bob.consents.active().exists()
    # the rankings: gone, and each task gave its slot back (3 -> 2 of overlap 3)
    assert not Ranking.objects.filter(annotator=bob).exists()
    assert RankedItem.objects.count() == 2 * 2 * 3
    for task in ranked["tasks"].values():
        task.refresh_from_db()
        assert task.ranking_count == task.rankings.count() == 2
    # the record: when and how many, nothing that says whose
    assert erasure.rankings_removed == 2 and erasure.via == "participant"
    assert {f.name for f in Erasure._meta.get_fields()} == {
        "id",
        "erased_at",
        "rankings_removed",
        "via",
    }
    # everything built afterwards: exports, labels, snapshots
    assert bob_pseudonym not in {row["annotator"] for row in ranking_rows()}
    assert len(list(ranking_rows())) == 4
    after = create_snapshot(seed=0, eval_fraction=0.5)
    assert after.ranking_count == 4
    assert _labels(after, items) == {n: pytest.approx(WITHOUT_BOB) for n in items}
    assert "man" not in after.group_labels["gender"]
    # the frozen snapshot keeps its labels and says an erasure happened after it
    before.refresh_from_db()
    assert (before.content_hash, before.examples, before.group_labels) == frozen
    marks = dict(training_selectors.snapshots(SYSTEM).values_list("pk", "erasures_after"))
    assert marks == {before.pk: 1, after.pk: 0}
    # ids are never reused: nothing "new" since the first snapshot
    assert new_rankings_since(before) == 0


def test_erasure_removes_the_pseudonym_from_every_snapshots_lineage(ranked):
    from annotation.models import AnnotatorStatus

    alice, bob, carol = ranked["alice"], ranked["bob"], ranked["carol"]
    names = {p: pseudonym(p.user_id) for p in (alice, bob, carol)}
    # A weighted snapshot names all three; with bob excluded, another names him as left out.
    weighted = create_snapshot(seed=0, eval_fraction=0.5, weighting="reliability")
    assert set(weighted.label_weighting["annotators"]) == set(names.values())
    type(bob).objects.filter(pk=bob.pk).update(status=AnnotatorStatus.EXCLUDED)
    left_out = create_snapshot(seed=0, eval_fraction=0.5)
    assert left_out.exclusions["annotators"] == {names[bob]: {"excluded annotator": 2}}
    frozen = {s.pk: (s.content_hash, s.examples) for s in (weighted, left_out)}
    StatusChange.objects.create(
        annotator=bob, previous="ok", status="excluded", reason="staff: copied a neighbour"
    )

    erase_annotator(bob, via=Erasure.Via.STAFF)

    weighted.refresh_from_db()
    left_out.refresh_from_db()
    assert set(weighted.label_weighting["annotators"]) == {names[alice], names[carol]}
    assert weighted.label_weighting["method"] == "reliability"
    assert left_out.exclusions["annotators"] == {}
    assert left_out.exclusions["rankings"] == {"excluded annotator": 2}  # a count, not a name
    for snapshot in (weighted, left_out):
        assert (snapshot.content_hash, snapshot.examples) == frozen[snapshot.pk]
    # the standing and its history (staff's words about him) went too
    bob.refresh_from_db()
    assert bob.status == AnnotatorStatus.OK and not StatusChange.objects.filter(annotator=bob)


def test_an_erasure_whose_lineage_cleanup_fails_rolls_back(ranked):
    from annotation.participants.erasure import annotator_erased

    bob = ranked["bob"]
    weighted = create_snapshot(seed=0, eval_fraction=0.5, weighting="reliability")

    def broken(sender, pseudonym, **kwargs):
        raise RuntimeError("disk full")

    annotator_erased.connect(broken, dispatch_uid="test-broken")
    try:
        with pytest.raises(RuntimeError, match="disk full"):
            erase_annotator(bob, via=Erasure.Via.STAFF)
    finally:
        annotator_erased.disconnect(dispatch_uid="test-broken")
    assert Ranking.objects.filter(annotator=bob).count() == 2 and not Erasure.objects.exists()
    weighted.refresh_from_db()
    assert pseudonym(bob.user_id) in weighted.label_weighting["annotators"]
    erase_annotator(bob, via=Erasure.Via.STAFF)  # run again, it finishes
    weighted.refresh_from_db()
    assert pseudonym(bob.user_id) not in weighted.label_weighting["annotators"]


def test_a_snapshot_never_names_an_annotator_erased_while_it_was_taken(ranked):
    from django.utils import timezone

    from annotation.models import AnnotatorProfile

    bob = ranked["bob"]
    # The erasure's first step has committed (erased_at), its deletion not yet.
    AnnotatorProfile.objects.filter(pk=bob.pk).update(erased_at=timezone.now())
    snapshot = create_snapshot(seed=0, eval_fraction=0.5, weighting="reliability")
    assert pseudonym(bob.user_id) not in snapshot.label_weighting["annotators"]
    assert len(snapshot.label_weighting["annotators"]) == 2


def test_the_backfill_migration_forgets_earlier_erasures_and_names_the_method(ranked):
    import importlib

    from django.apps import apps

    from training.models import DatasetSnapshot

    bob = ranked["bob"]
    weighted = create_snapshot(seed=0, eval_fraction=0.5, weighting="reliability")
    old = create_snapshot(seed=0, eval_fraction=0.5)
    DatasetSnapshot.objects.filter(pk=old.pk).update(label_weighting={})  # made before 0008
    erase_annotator(bob, via=Erasure.Via.STAFF)
    # as an erasure made before erasure reached snapshots left it:
    DatasetSnapshot.objects.filter(pk=weighted.pk).update(label_weighting=weighted.label_weighting)
    weighted.refresh_from_db()
    assert pseudonym(bob.user_id) in weighted.label_weighting["annotators"]
    migration = importlib.import_module("training.migrations.0009_snapshot_lineage_backfill")
    migration.backfill(apps, None)
    weighted.refresh_from_db()
    old.refresh_from_db()
    assert pseudonym(bob.user_id) not in weighted.label_weighting["annotators"]
    assert len(weighted.label_weighting["annotators"]) == 2
    assert old.label_weighting == {"method": "none"}


def test_freed_slots_go_to_other_annotators(ranked):
    dave = _person("dave")
    assert next_task(dave) is None  # overlap 3 reached on both tasks
    erase_annotator(ranked["bob"], via=Erasure.Via.STAFF)
    taken = {next_task(dave).task_id}
    assert taken <= {t.pk for t in ranked["tasks"].values()}


def test_erasing_twice_is_refused_and_changes_nothing(ranked):
    erase_annotator(ranked["bob"], via=Erasure.Via.STAFF)
    with pytest.raises(AlreadyErased):
        erase_annotator(ranked["bob"], via=Erasure.Via.STAFF)
    assert Erasure.objects.count() == 1


def test_reservations_are_released_and_withdrawn_but_not_erased_data_stays(ranked, make_tasks):
    make_tasks(1, 2, overlap=1)
    alice = ranked["alice"]
    assert next_task(alice) is not None  # reserves the new task
    erase_annotator(alice, via=Erasure.Via.STAFF)
    assert not alice.assignments.exists()
    bob = ranked["bob"]
    services.withdraw_consent(bob)  # withdrawal alone keeps the data
    bob.refresh_from_db()
    assert Ranking.objects.filter(annotator=bob).count() == 2
    assert bob.demographics == {"gender": "man"} and bob.erased_at is None


def test_staff_command_erases_by_pseudonym(ranked, capsys):
    bob = ranked["bob"]
    call_command("erase", pseudonym(bob.user_id), "--no-input")
    assert "2 rankings deleted" in capsys.readouterr().out
    bob.refresh_from_db()
    assert bob.erased_at is not None
    assert Erasure.objects.get().via == "staff"
    with pytest.raises(CommandError, match="already erased"):
        call_command("erase", pseudonym(bob.user_id), "--no-input")
    with pytest.raises(CommandError, match="No annotator has the pseudonym"):
        call_command("erase", "a-000000000000", "--no-input")


def test_staff_command_asks_first_and_erases_nothing_without_yes(ranked, monkeypatch):
    carol = ranked["carol"]
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    with pytest.raises(CommandError, match="Nothing erased"):
        call_command("erase", pseudonym(carol.user_id))
    carol.refresh_from_db()
    assert carol.erased_at is None and Ranking.objects.filter(annotator=carol).count() == 2


def test_withdraw_page_asks_which_and_stop_keeps_the_data(portal_client, make_tasks):
    make_tasks(1, 2)
    client = portal_client("p")
    response = client.post(reverse("portal:consent"), {"action": "withdraw"})
    assert response.url == reverse("portal:withdraw")  # nothing withdrawn yet
    assert selectors.has_consent(client.profile)
    page = client.get(reverse("portal:withdraw")).content.decode()
    assert "Stop taking part" in page and "erase my data" in page
    response = client.post(reverse("portal:withdraw"), {})
    assert (
        response.status_code == 200 and "Choose one of the two options" in response.content.decode()
    )
    assert selectors.has_consent(client.profile)
    response = client.post(reverse("portal:withdraw"), {"choice": "stop"})
    assert response.url == reverse("portal:consent")
    assert not selectors.has_consent(client.profile)
    client.profile.refresh_from_db()
    assert client.profile.erased_at is None


def test_withdraw_and_erase_in_the_portal_logs_out_for_good(portal_client, make_tasks):
    make_tasks(1, 2)
    client = portal_client("p")
    assignment = next_task(client.profile)
    services.submit_ranking(client.profile, assignment.task_id, assignment.shown_order)
    response = client.post(reverse("portal:withdraw"), {"choice": "erase"})
    assert response.url == reverse("portal:erased")
    assert "Your data is erased" in client.get(response.url).content.decode()
    assert client.get(reverse("portal:home")).status_code == 302  # logged out
    assert not Ranking.objects.exists()
    # authenticate() is given a request, as every log-in door gives one (axes needs it)
    assert not client.login(request=HttpRequest(), username="p", password="pw-123456")


def test_erasure_through_the_api(annotator, make_tasks):
    make_tasks(1, 2)
    api = annotator("api-user")
    assert api.post(reverse("api-erasure")).status_code == 204
    api.profile.refresh_from_db()
    assert api.profile.erased_at is not None
    assert api.post(reverse("api-erasure")).status_code == 409  # already erased


def test_an_erasure_cut_short_leaves_nothing_counted_and_finishes_when_run_again(
    ranked, monkeypatch
):
    import annotation.participants.erasure

    bob = ranked["bob"]

    def crash(profile):
        raise RuntimeError("the worker died")

    monkeypatch.setattr(annotation.participants.erasure, "_delete_rankings", crash)
    with pytest.raises(RuntimeError):
        erase_annotator(bob, via=Erasure.Via.STAFF)
    bob.refresh_from_db()
    assert bob.erased_at is not None and bob.demographics == {}
    assert Ranking.objects.filter(annotator=bob).count() == 2  # still there, but not counted
    assert not selectors.counted_rankings().filter(annotator=bob).exists()
    monkeypatch.undo()
    assert erase_annotator(bob, via=Erasure.Via.STAFF).rankings_removed == 2
    assert not Ranking.objects.filter(annotator=bob).exists()
