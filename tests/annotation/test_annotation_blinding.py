"""Blinding holds (issue 30, part 7): a curious participant of a validation study reads the
ranking page and the API and learns no item id, no stored file name and no condition; two
participants see different names for one image; a card's image is served under its name to
its participant only; orders sent back by those names are stored as the items ranked."""

import re

import pytest
from rest_framework.test import APIClient

from annotation.assignment import blinding
from annotation.models import AnnotatorProfile, Ranking, RankingTask
from annotation.models.validation import Condition, ConditionImage
from annotation.participants import services
from tests.validation_helpers import make_validation_study


@pytest.fixture
def task(db, media_root, tmp_path):
    """A validation study of one occupation: one task of 3 + 3 images (placeholders)."""
    study = make_validation_study(tmp_path, occupations=1)
    (task,) = RankingTask.objects.filter(study=study)
    return task


@pytest.fixture
def participant(portal_client, task):
    """participant(name) -> a signed-in browser of a consenting participant of the study."""

    def make(name: str):
        client = portal_client(name, consent=False)
        profile = AnnotatorProfile.objects.get(user__username=name)
        profile.study = task.study
        profile.save(update_fields=["study"])
        services.give_consent(profile)
        client.profile = profile
        return client

    return make


def leaks(task) -> list[str]:
    """What must appear nowhere: the items' stored file names, the conditions' names, roles
    and texts, the media URL prefix."""
    files = [i.image.name for i in task.items.all()]
    words = [f.rsplit("/", 1)[-1] for f in files] + [f.rsplit("/", 1)[-1][:12] for f in files]
    conditions = Condition.objects.filter(study=task.study)
    words += [c.name for c in conditions] + [c.role for c in conditions] + ["/media/"]
    texts = ConditionImage.objects.filter(item__task_items__task=task)
    return words + list(texts.values_list("prompt__text", flat=True))


def page_ids(html: str) -> dict:
    """The ids a ranking page shows: the cards', the form's order, the images' URLs."""
    return {
        "cards": [int(n) for n in re.findall(r'data-item-id="(\d+)"', html)],
        "order": [
            int(n) for n in re.search(r'name="order"[^>]*value="([\d,]*)"', html)[1].split(",")
        ],
        "srcs": re.findall(r'<img src="([^"]+)"', html),
    }


def test_a_curious_participant_learns_no_item_file_or_condition(task, participant):
    ann, bob = participant("ann"), participant("bob")
    html = ann.get("/rank/").content.decode()
    reservation = ann.profile.assignments.get(task=task)
    items = sorted(task.items.values_list("pk", flat=True))
    names = blinding.names(task, ann.profile.pk, reservation.shown_order)
    seen = page_ids(html)
    # each card, the form's order and each image URL carry the participant's own names, in
    # the reservation's shuffled order, and no item id
    assert seen["cards"] == seen["order"] == names
    assert seen["srcs"] == [f"/api/cards/{n}/" for n in names]
    assert not set(seen["cards"]) & set(items)
    alts = re.findall(r'<img [^>]*alt="([^"]*)"', html)
    assert alts == [f"Image {c}" for c in "ABCDEF"]
    for word in leaks(task):
        assert word not in html, word

    api = APIClient()
    api.force_authenticate(ann.profile.user)
    body = api.post("/api/tasks/next/").json()
    assert [i["id"] for i in body["items"]] == names  # the same reservation, the same names
    assert [i["image_url"] for i in body["items"]] == [
        f"http://testserver/api/cards/{n}/" for n in names
    ]
    assert {i["prompt"] for i in body["items"]} == {""}
    text = str(body)
    assert not set(re.findall(r"\d+", str(body["items"]))) & {str(i) for i in items}
    for word in leaks(task):
        assert word not in text, word

    # another participant sees the same images under other names
    bob_html = bob.get("/rank/").content.decode()
    bob_names = page_ids(bob_html)["cards"]
    assert sorted(bob.profile.assignments.get(task=task).shown_order) == items
    assert len(bob_names) == 6 and not set(bob_names) & set(names)


def test_a_cards_image_is_served_to_its_participant_only(task, participant, client):
    ann, bob = participant("ann"), participant("bob")
    html = ann.get("/rank/").content.decode()
    bob.get("/rank/")
    first = page_ids(html)["srcs"][0]
    item = task.items.get(pk=ann.profile.assignments.get(task=task).shown_order[0])
    image = ann.get(first)
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    with item.image.open("rb") as stored:
        assert image.content == stored.read()
    assert (
        image["X-Content-Type-Options"] == "nosniff"
        and "sandbox" in image["Content-Security-Policy"]
    )
    assert "Content-Disposition" not in image and image["Cache-Control"].startswith("private")
    # the name is ann's: bob, a stranger and a made-up name get nothing
    assert bob.get(first).status_code == 404
    assert client.get(first).status_code in (401, 403)
    assert ann.get("/api/cards/123/").status_code == 404
    # the API's token client of the same participant is served too
    api = APIClient()
    api.force_authenticate(ann.profile.user)
    assert api.get(first).status_code == 200
    # once the task is ranked, its names serve nothing
    order = ",".join(str(n) for n in page_ids(html)["order"])
    ann.post("/rank/", {"task_id": task.pk, "order": order})
    assert ann.get(first).status_code == 404


def test_orders_sent_by_the_names_are_stored_as_the_items_ranked(task, participant):
    ann, bob = participant("ann"), participant("bob")
    names = page_ids(ann.get("/rank/").content.decode())["order"]
    shown = ann.profile.assignments.get(task=task).shown_order
    by_name = dict(zip(names, shown, strict=True))
    # garbled: a name of bob's, or a real id among names: refused, naming no item
    api = APIClient()
    api.force_authenticate(ann.profile.user)
    url = f"/api/tasks/{task.pk}/ranking/"
    for bad in (names[:-1] + [names[0]], names[:-1] + [shown[-1]], names[:-1]):
        refused = api.post(url, {"order": bad}, format="json")
        assert refused.status_code == 400, refused.content
        assert not set(re.findall(r"\d+", refused.content.decode())) - {"6"}
    # the portal form, reversed
    ann.post("/rank/", {"task_id": task.pk, "order": ",".join(map(str, names[::-1]))})
    ranking = Ranking.objects.get(annotator=ann.profile)
    assert ranking.order == [by_name[n] for n in names[::-1]] and ranking.shown_order == shown
    # the API, answered in the participant's names
    bob_api = APIClient()
    bob_api.force_authenticate(bob.profile.user)
    bob_names = [i["id"] for i in bob_api.post("/api/tasks/next/").json()["items"]]
    stored = bob_api.post(url, {"order": bob_names}, format="json")
    assert stored.status_code == 201, stored.content
    assert stored.json()["order"] == stored.json()["shown_order"] == bob_names
    bob_shown = Ranking.objects.get(annotator=bob.profile).shown_order
    assert Ranking.objects.get(annotator=bob.profile).order == bob_shown
    # sent again (a lost answer): the same ranking, by the same names
    again = bob_api.post(url, {"order": bob_names}, format="json")
    assert again.status_code == 200 and again.json()["order"] == bob_names


def test_every_validation_task_is_blinded_and_collection_tasks_are_not(task, make_tasks):
    assert all(blinding.blinded(t) for t in RankingTask.objects.filter(study=task.study))
    (collection,) = make_tasks(n=1)
    assert not blinding.blinded(collection)
    assert blinding.names(collection, 1, [4, 5]) == [4, 5]
    assert blinding.card_name(1, 4) != blinding.card_name(2, 4) != blinding.card_name(1, 5)
