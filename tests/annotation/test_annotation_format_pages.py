"""The portal's page for each question format (issue 40), through Django's test client: what
each posts becomes the format's tiers; a half-filled or contradictory form is a message and
nothing stored; the practice task speaks the format. Their axe audits and keyboard pass are
tests/browser/test_browser_formats.py."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import Ranking, Study, default_study
from annotation.portal.answers import from_post


class Post(dict):
    def getlist(self, key):
        value = self.get(key, [])
        return value if isinstance(value, list) else [value]


def test_each_page_posts_its_formats_tiers():
    cards = "4,5,6,7"
    assert from_post(Post(cards=cards, most="6", least="4")) == [[6], [5, 7], [4]]
    assert from_post(Post(cards="4,5", choice="5")) == [[5], [4]]
    assert from_post(Post(cards="4,5", choice="equal")) == [[4, 5]]
    assert from_post(Post(cards=cards, pick_1="7", pick_2="5")) == [[7], [5], [4, 6]]
    assert from_post(Post(order="6,4,5,7", tied=["5", "6"])) == [[6], [4, 5], [7]]
    assert from_post(Post(order="6,4,5,7")) == [6, 4, 5, 7]


@pytest.mark.parametrize(
    ("post", "message"),
    [
        ({"cards": "4,5,6", "most": "6"}, "Choose a card for every question"),
        ({"cards": "4,5,6", "most": "5", "least": "5"}, "must differ"),
        ({"cards": "4,5,6", "pick_1": "5", "pick_2": "5"}, "different card for each place"),
    ],
)
def test_a_half_filled_or_contradictory_form_says_what_is_wrong(post, message):
    from annotation.errors import InvalidAnswer

    with pytest.raises(InvalidAnswer, match=message):
        from_post(Post(post))


def study_in(question: str, k: int | None = None) -> Study:
    study = default_study()
    Study.objects.filter(pk=study.pk).update(question_format=question, question_k=k)
    return study


@pytest.mark.parametrize(
    ("question", "k", "size", "page_has", "answer"),
    [
        ("best_worst", None, 4, 'name="most"', lambda c: {"most": c[2], "least": c[0]}),
        ("top_k", 2, 4, 'name="pick_2"', lambda c: {"pick_1": c[3], "pick_2": c[1]}),
        ("pairwise", None, 2, 'value="equal"', lambda c: {"choice": "equal"}),
        ("rank_ties", None, 3, 'name="tied"', lambda c: {"order": ",".join(c), "tied": c[2]}),
    ],
)
def test_a_participant_answers_each_format_on_its_page(
    question, k, size, page_has, answer, make_tasks, portal_client, media_root
):
    study_in(question, k)
    make_tasks(1, k=size, overlap=1, images=media_root)
    client = portal_client("ann")
    page = client.get(reverse("portal:rank"))
    html = page.content.decode()
    assert page.status_code == 200 and page_has in html
    cards = (
        html.split('name="cards" value="')[1].split('"')[0].split(",")
        if 'name="cards"' in html
        else html.split('name="order" id="order-input" value="')[1].split('"')[0].split(",")
    )
    task = html.split('name="task_id" value="')[1].split('"')[0]
    bad = client.post(
        reverse("portal:rank"), {"task_id": task, "cards": ",".join(cards)}, follow=True
    )
    if question != "rank_ties":  # nothing chosen: a message, nothing stored
        assert not Ranking.objects.exists() and bad.status_code == 200
    done = client.post(
        reverse("portal:rank"), {"task_id": task, "cards": ",".join(cards), **answer(cards)}
    )
    assert done.status_code == 302
    ranking = Ranking.objects.get()
    ids = [int(c) for c in cards]
    expected = {
        "best_worst": lambda: [[ids[2]], [ids[1], ids[3]], [ids[0]]],
        "top_k": lambda: [[ids[3]], [ids[1]], [ids[0], ids[2]]],
        "pairwise": lambda: [ids],
        "rank_ties": lambda: [[ids[0]], [ids[1], ids[2]]],
    }[question]()
    assert ranking.tiers == expected


@pytest.mark.parametrize("question", ["best_worst", "pairwise", "top_k", "rank_ties"])
def test_the_practice_task_is_in_the_studys_format(question, portal_client, media_root):
    from annotation.catalogue.loading import load_catalogue, read_catalogue

    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:1]
    (media_root.parent / "catalogue.json").write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=1, path=media_root.parent / "catalogue.json")
    study_in(question, 1 if question == "top_k" else None)
    client = portal_client("ann")
    page = client.get(reverse("portal:practice")).content.decode()
    html_cards = page.count('class="prompt"')
    assert html_cards == (2 if question == "pairwise" else 3)
    instructions = client.get(reverse("portal:instructions")).content.decode()
    assert 'id="how-format"' in instructions


def test_an_answer_for_someone_elses_task_or_with_a_foreign_card_is_refused(
    make_tasks, annotator, portal_client, media_root
):
    """As an outsider would try it: tiers for a task reserved for another participant (the
    API), and a choice form whose card list names an item of another task (the portal)."""
    study_in("best_worst")
    make_tasks(2, k=4, overlap=1, images=media_root)
    owner, intruder = annotator("owner"), annotator("intruder")
    reserved = owner.post(reverse("api-next-task")).json()
    ids = [card["id"] for card in reserved["items"]]
    answer = {"tiers": [[ids[0]], ids[1:3], [ids[3]]]}
    url = reverse("api-ranking", args=[reserved["id"]])
    refused = intruder.post(url, answer, format="json")
    assert refused.status_code == 403 and not Ranking.objects.exists()
    other = ids[0]  # a card of the owner's task, not of the one the portal gives "ann"
    client = portal_client("ann")
    page = client.get(reverse("portal:rank")).content.decode()
    task = page.split('name="task_id" value="')[1].split('"')[0]
    cards = page.split('name="cards" value="')[1].split('"')[0].split(",")
    forged = [*cards[:3], str(other)]
    shown = client.post(
        reverse("portal:rank"),
        {"task_id": task, "cards": ",".join(forged), "most": forged[0], "least": forged[3]},
        follow=True,
    )
    assert "items not in this task" in shown.content.decode()
    assert not Ranking.objects.exists()
