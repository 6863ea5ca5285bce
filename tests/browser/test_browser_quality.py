"""An annotator meets an ordinary task, a gold task and an attention check in headless
Chromium, and cannot tell them apart except by the check card's own instruction."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import AnnotatorStatus, Ranking, RankingTask, check_instruction
from annotation.participants import services
from annotation.quality import standing
from tests.browser import test_browser_portal as portal

pytestmark = portal.pytestmark
browser = portal.browser  # the portal test's headless Chromium fixture
_order, _shown, _task_id = portal._order, portal._shown, portal._task_id
_submit_and_wait, _wait_url = portal._submit_and_wait, portal._wait_url

# The task's element skeleton (its section: the flash messages above it vary): tags,
# attribute names and classes, no text and no values, so two tasks look alike iff only
# their words (and ids) differ.
SKELETON = """
function sk(el) {
  var attrs = Array.from(el.attributes).map(function (a) {
    return a.name === "class" ? "class=" + a.value : a.name;
  }).sort().join(",");
  return el.tagName + "[" + attrs + "](" + Array.from(el.children).map(sk).join("") + ")";
}
return sk(document.querySelector("section.rank"));
"""


def _ids(task) -> list[int]:
    return list(task.items.order_by("id").values_list("id", flat=True))


@pytest.fixture
def three_kinds(transactional_db, media_root, make_tasks, settings):
    """An ordinary task, a gold task and a check task (card asks for position 3), 3 cards
    each, real images; gold due every other task; an annotator with consent."""
    settings.STEREORANK = {**settings.STEREORANK, "GOLD_RATE": 0.5}
    (plain,) = make_tasks(1, k=3, images=media_root, occupation="nurse")
    (gold,) = make_tasks(1, k=3, images=media_root, occupation="pilot")
    (check,) = make_tasks(1, k=3, images=media_root, occupation="chef")
    RankingTask.objects.filter(pk=gold.pk).update(
        is_gold=True, gold_reference={"order": _ids(gold)}
    )
    card = _ids(check)[0]
    RankingTask.objects.filter(pk=check.pk).update(check_item=card, check_position=2)
    user = get_user_model().objects.create_user("ann", password="a-Long-pass-987")
    services.give_consent(services.get_profile(user))
    return {"plain": plain.pk, "gold": gold.pk, "check": check.pk, "card": card}


def test_gold_and_check_tasks_look_like_any_other(browser, live_server, three_kinds):
    url = live_server.url
    browser.get(url + reverse("portal:login"))
    browser.find_element("name", "username").send_keys("ann")
    browser.find_element("name", "password").send_keys("a-Long-pass-987")
    browser.find_element("css selector", "form button[type=submit]").click()
    _wait_url(browser, reverse("portal:home"))
    browser.find_element("id", "start-ranking").click()
    _wait_url(browser, reverse("portal:rank"))

    seen = {}
    for _ in range(3):
        task = int(_task_id(browser))
        texts = [t.text for t in browser.find_elements("css selector", ".rank-card .prompt")]
        alts = [
            i.get_attribute("alt") for i in browser.find_elements("css selector", ".rank-card img")
        ]
        loaded = browser.execute_script(
            "return Array.from(document.querySelectorAll('.rank-card img'))"
            ".every(function (i) { return i.complete && i.naturalWidth === 8; });"
        )
        assert loaded, "every card, the check card too, shows its image"
        seen[task] = {
            "skeleton": browser.execute_script(SKELETON),
            "texts": texts,
            "alts": alts,
            "source": browser.page_source.lower(),
        }
        shown = [int(i) for i in _shown(browser)]
        if task == three_kinds["check"]:
            # Follow the instruction: focus the card and press 3.
            card = browser.find_element(
                "css selector", f'.rank-card[data-item-id="{three_kinds["card"]}"]'
            )
            card.send_keys("3")
            assert int(_order(browser)[2]) == three_kinds["card"]
        elif task == three_kinds["gold"]:
            # Rank it in the reference order (item ids ascending) with number keys.
            for position, item in enumerate(sorted(shown)):
                browser.find_element(
                    "css selector", f'.rank-card[data-item-id="{item}"]'
                ).send_keys(str(position + 1))
            assert [int(i) for i in _order(browser)] == sorted(shown)
        else:
            browser.find_elements("css selector", ".rank-card")[0].send_keys("3")
        _submit_and_wait(browser)

    assert set(seen) == {three_kinds["plain"], three_kinds["gold"], three_kinds["check"]}
    # One page structure for all three: no class, attribute or element sets them apart.
    assert len({page["skeleton"] for page in seen.values()}) == 1
    for page in seen.values():
        assert "gold" not in page["source"] and "reference" not in page["source"]
    instruction = check_instruction(2)
    for task, page in seen.items():
        flagged = [t for t in page["texts"] if "attention check" in t.lower()]
        assert flagged == ([instruction] if task == three_kinds["check"] else [])
        assert sum(instruction in alt for alt in page["alts"]) == (task == three_kinds["check"])
    assert "position 3" in instruction

    # The check passed, the gold task was scored 1, and the annotator is in good standing.
    assert Ranking.objects.count() == 3
    check = Ranking.objects.get(task_id=three_kinds["check"])
    assert check.order[2] == three_kinds["card"]
    gold = Ranking.objects.get(task_id=three_kinds["gold"])
    assert gold.order == sorted(gold.order)
    profile = services.get_profile(get_user_model().objects.get(username="ann"))
    profile.refresh_from_db()
    decision = standing.decide(profile)
    assert profile.status == decision.status
    # Neither the gold task nor the check counts against her. The untouched rule alone
    # may warn: the shuffle can show an order she then keeps (the gold task's reference
    # by chance, or the check card already third), and 2 of 3 is over its line.
    assert all("shown order" in reason for reason in decision.reasons), decision.reasons
    assert profile.status in (AnnotatorStatus.OK, AnnotatorStatus.WARNED)
