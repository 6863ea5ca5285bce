"""Day two of a real study, in a real browser: an attention check's instruction is read
and followed on a phone and on a laptop (by touch and by keyboard), the window's width is
recorded with the ranking, and a ranking stored before its answer was lost is never
offered again (the response is cut after the commit, then the page is gone back to and
resubmitted as a browser does). The portal's pages of coming and leaving (a consent with
every field, an excluded participant's way out, erasure, links) fit the window and pass
axe at both sizes. With STEREORANK_SCREENSHOTS=<folder>, the ranking page with its check,
the consent and the way out are saved there at each size."""

import os
from pathlib import Path

import pytest
from django.db import OperationalError
from django.urls import reverse

from annotation.models import Ranking, RankingTask, check_instruction
from annotation.models.studies import Participation, Study
from annotation.participants import services
from annotation.quality import standing
from annotation.stats.gold import AttentionCheck
from tests.browser.support import (
    LAPTOP,
    PHONE,
    axe_violations,
    gone,
    laptop,
    phone,
    rect,
    shown,
    sideways,
    sign_in,
    wait_replaced,
    wait_until,
)

pytestmark = [pytest.mark.browser]

SIZES = {"laptop": (laptop, LAPTOP[0]), "phone": (phone, PHONE[0])}
CHECK_AT = 4  # 0-based: "please put it at position 5"


@pytest.fixture
def with_a_check(driver, live_server, transactional_db, media_root, make_tasks, portal_client):
    """A signed-in annotator whose one task of six holds an attention-check card."""
    (task,) = make_tasks(1, k=6, images=media_root)
    card = task.task_items.order_by("pk").values_list("item_id", flat=True)[2]
    RankingTask.objects.filter(pk=task.pk).update(check_item=card, check_position=CHECK_AT)
    profile = portal_client().profile
    sign_in(driver, live_server.url, profile.user)
    return str(card), profile


def screenshot(driver, name: str) -> None:
    """With STEREORANK_SCREENSHOTS=<folder>, the whole page saved there as name.png."""
    folder = os.environ.get("STEREORANK_SCREENSHOTS")
    if folder:
        height = driver.execute_script("return document.documentElement.scrollHeight")
        width = driver.execute_script("return innerWidth")
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))
        (phone if width < 600 else laptop)(driver)


def tap(driver, element) -> None:
    """One finger down and up on the middle of element (a touch, not a mouse click)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    box = rect(driver, element)
    point = {"x": box["left"] + box["width"] / 2, "y": box["top"] + box["height"] / 2}
    send = driver.execute_cdp_cmd
    send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def step(driver, card, direction: str) -> None:
    """Tap the card's move button once and wait for it to move one place."""
    before = shown(driver).index(card.get_attribute("data-item-id"))
    tap(driver, card.find_element("css selector", f"button.move[data-move='{direction}']"))
    after = before + (1 if direction == "down" else -1)
    wait_until(driver, lambda d: shown(d).index(card.get_attribute("data-item-id")) == after)


def submit_order(driver) -> None:
    """Review (unless the dialog is open already), confirm (and, for an order left as it
    was shown, say so), and wait for the next page."""
    html = driver.find_element("tag name", "html")
    if not driver.find_element("id", "confirm-panel").is_displayed():
        driver.find_element("id", "review-order").click()
    driver.find_element("id", "confirm-submit").click()
    asked = "return !!(document.getElementById('unchanged-panel') || {}).open"
    wait_until(driver, lambda d: gone(html)(d) or d.execute_script(asked))
    if not gone(html)(driver):  # the order was left as shown: submitted anyway
        driver.find_element("id", "unchanged-submit").click()
    wait_replaced(driver, html)


@pytest.mark.parametrize("size", SIZES)
def test_a_checks_instruction_is_on_screen_and_can_be_followed(
    driver, live_server, with_a_check, size
):
    from selenium.webdriver.common.keys import Keys

    resize, width = SIZES[size]
    resize(driver)
    card_id, profile = with_a_check
    driver.get(live_server.url + reverse("portal:rank"))
    instruction = check_instruction(CHECK_AT)
    assert instruction in driver.execute_script("return document.body.innerText")
    card = driver.find_element("css selector", f'.rank-card[data-item-id="{card_id}"]')
    text = card.find_element("css selector", ".prompt")
    assert text.is_displayed() and text.text == instruction
    sizes = driver.execute_script(
        "return [getComputedStyle(arguments[0]).fontSize,"
        " getComputedStyle(document.body).fontSize]",
        text,
    )
    assert sizes[0] == sizes[1], f"the instruction is as large as the page's text: {sizes}"
    box, window = rect(driver, text), driver.execute_script("return innerWidth")
    assert box["left"] >= 0 and box["right"] <= window, "the instruction is not cut off"
    described = card.get_attribute("aria-describedby")
    assert driver.find_element("id", described).text == instruction  # read out by name too

    if size == "phone":  # by touch: the card's move buttons, tapped until it is there
        if shown(driver).index(card_id) == CHECK_AT:  # shown in its place: away and back
            step(driver, card, "up")
        while shown(driver).index(card_id) != CHECK_AT:
            step(driver, card, "down" if shown(driver).index(card_id) < CHECK_AT else "up")
    else:  # by keyboard: the card focused, its position's digit
        driver.execute_script("arguments[0].focus()", card)
        if shown(driver).index(card_id) == CHECK_AT:
            card.send_keys(Keys.HOME)
        card.send_keys(str(CHECK_AT + 1))
        wait_until(driver, lambda d: shown(d).index(card_id) == CHECK_AT)
        card.send_keys(Keys.ENTER)  # the review dialog
        assert driver.find_element("id", "confirm-panel").is_displayed()
    order = shown(driver)
    screenshot(driver, f"check-{size}")
    submit_order(driver)
    assert "Ranking saved." in driver.find_element("css selector", ".messages").text
    ranking = Ranking.objects.get(annotator=profile)
    assert [str(i) for i in ranking.order] == order
    assert AttentionCheck(int(card_id), CHECK_AT).passed(ranking.order)
    assert ranking.viewport_width == width


def _boom(profile):
    raise ConnectionResetError("the web worker died after the commit, before the response")


def test_a_ranking_stored_before_its_answer_was_lost_is_never_offered_again(
    driver, live_server, transactional_db, media_root, make_tasks, portal_client, monkeypatch
):
    make_tasks(3, k=4, images=media_root)
    profile = portal_client().profile
    sign_in(driver, live_server.url, profile.user)
    rank = live_server.url + reverse("portal:rank")
    driver.get(rank)
    first = driver.find_element("name", "task_id").get_attribute("value")
    moved = shown(driver)
    driver.find_element("css selector", ".rank-card button.move[data-move='down']").click()
    assert shown(driver) != moved

    # The kill point: the ranking commits, then the response is lost (a 500 here).
    monkeypatch.setattr(standing, "apply_policy", _boom)
    submit_order(driver)
    stored = Ranking.objects.get(annotator=profile)
    assert str(stored.task_id) == first
    assert "Ranking saved." not in driver.page_source
    driver.save_screenshot("/tmp/shots/lost-answer.png")
    monkeypatch.undo()

    # Back: the ranking page is asked for again (never shown from the cache), and it
    # offers the next task, not the one ranked.
    html = driver.find_element("tag name", "html")
    driver.back()
    wait_replaced(driver, html)
    assert driver.current_url == rank
    assert driver.find_element("name", "task_id").get_attribute("value") != first

    # Resubmitted as a browser does from a page kept in its history: the first task,
    # another order. The stored ranking stands; the participant hears it is saved.
    old_form = {"task_id": first, "order": ",".join(moved), "seconds_spent": "3"}
    html = driver.find_element("tag name", "html")
    driver.execute_script(
        "var f = document.getElementById('rank-form'), data = arguments[0];"
        "for (var name in data) { f.elements[name].value = data[name]; }"
        "HTMLFormElement.prototype.submit.call(f);",
        old_form,
    )
    wait_replaced(driver, html)
    assert driver.find_element("css selector", ".messages").text.startswith("Ranking saved.")
    assert driver.find_element("name", "task_id").get_attribute("value") != first
    assert Ranking.objects.filter(annotator=profile).count() == 1
    assert Ranking.objects.get(annotator=profile).order == stored.order


def _outage(*args, **kwargs):
    raise OperationalError("the database is restarting")


def test_an_order_sent_during_an_outage_comes_back_and_is_stored_when_sent_again(
    driver, live_server, transactional_db, media_root, make_tasks, portal_client, monkeypatch
):
    """The submit meets an outage (a 503 page that says nothing was saved); the way back
    to the task shows the participant's order again, and sending it stores it."""
    make_tasks(2, k=4, images=media_root)
    profile = portal_client().profile
    sign_in(driver, live_server.url, profile.user)
    driver.get(live_server.url + reverse("portal:rank"))
    task = driver.find_element("name", "task_id").get_attribute("value")
    driver.find_element("css selector", ".rank-card button.move[data-move='down']").click()
    ordered = shown(driver)

    monkeypatch.setattr(services, "submit_ranking", _outage)
    submit_order(driver)
    assert driver.title.startswith("Briefly unavailable")
    assert "nothing was saved" in driver.page_source
    assert not Ranking.objects.exists()
    monkeypatch.undo()

    html = driver.find_element("tag name", "html")
    driver.find_element("link text", "Back to your task").click()
    wait_replaced(driver, html)
    assert driver.find_element("name", "task_id").get_attribute("value") == task
    assert shown(driver) == ordered  # kept in the tab, put back
    submit_order(driver)
    assert driver.find_element("css selector", ".messages").text.startswith("Ranking saved.")
    assert Ranking.objects.get(annotator=profile).order == [int(i) for i in ordered]


@pytest.fixture
def crowd(transactional_db, media_root, make_tasks):
    """A Prolific study with a filled consent and an MTurk one, both open, with tasks."""
    from annotation.participants import consent

    studies = {}
    for slug, platform in (("wave-1", Study.Platform.PROLIFIC), ("hits", Study.Platform.MTURK)):
        study = Study.objects.create(
            slug=slug, name=f"Study {slug}", platform=platform, screen_out_code="SCR33N"
        )
        consent.publish(study, FILLED_CONSENT)
        make_tasks(2, k=4, images=media_root, study=study)
        studies[slug] = study
    return studies


FILLED_CONSENT = {
    "controller": "University of Utrecht, Faculty of Science",
    "contact_email": "stereotypes@uu.example",
    "dpo_contact": "privacy@uu.example",
    "legal_basis": "explicit_consent",
    "retention": "until 31 December 2031",
    "complaint": "Autoriteit Persoonsgegevens, Den Haag",
    "ethics_reference": "FETC Science, approval 24-1234",
    "text": "You are invited to rank images of people at work.",
}


def audit(driver, found: list[str], size: str, name: str) -> None:
    """axe's critical and serious violations, and a page wider than the window."""
    found += [
        f"{size} {name}: {v['id']} ({v['impact']}) {v['help']}" for v in axe_violations(driver)
    ]
    if wide := sideways(driver):
        found.append(f"{size} {name}: {wide}")


@pytest.mark.parametrize("size", SIZES)
def test_the_pages_of_coming_and_leaving_fit_and_pass_axe(driver, live_server, crowd, size):
    """The consent with every field, an excluded participant's way out, withdrawing with
    erasure, an MTurk preview and a refused link: each at both sizes, once."""
    from crowd_fakes import FakeMTurk, FakeProlific

    SIZES[size][0](driver)
    found: list[str] = []
    prolific = FakeProlific("wave-1")
    driver.get(live_server.url + prolific.link(prolific.new_participant_id()))
    wait_until(driver, lambda d: d.find_elements("id", "consent-facts"))
    facts = driver.find_element("id", "consent-facts").text
    for value in ("University of Utrecht", "stereotypes@uu.example", "31 December 2031"):
        assert value in facts
    audit(driver, found, size, "consent with its facts")
    screenshot(driver, f"consent-{size}")
    html = driver.find_element("tag name", "html")
    driver.find_element("id", "agree").click()
    wait_replaced(driver, html)

    participation = Participation.objects.get(study=crowd["wave-1"])
    standing._move(participation.annotator, "excluded", "2 of 2 attention checks failed")
    driver.get(live_server.url + reverse("portal:home"))
    wait_until(driver, lambda d: d.current_url.endswith(reverse("portal:screened_out")))
    page = driver.find_element("tag name", "main").text
    assert "2 of 2 attention checks failed" in page and "stereotypes@uu.example" in page
    assert driver.find_element("id", "screen-out-code").text == "SCR33N"
    assert driver.find_element("id", "screen-out-link").is_displayed()  # back to Prolific
    audit(driver, found, size, "excluded: the way out")
    screenshot(driver, f"excluded-{size}")

    driver.get(live_server.url + reverse("portal:withdraw"))
    audit(driver, found, size, "withdraw")
    driver.find_element("css selector", "input[value='erase']").click()
    html = driver.find_element("tag name", "html")
    driver.find_element("id", "confirm-withdraw").click()
    wait_replaced(driver, html)
    assert driver.current_url.endswith(reverse("portal:erased"))
    audit(driver, found, size, "erased")

    mturk = FakeMTurk("hits")
    driver.get(live_server.url + mturk.preview_link())
    audit(driver, found, size, "MTurk preview")
    driver.get(live_server.url + "/join/hits/")  # the platform's ids missing
    assert "lacks the 'workerId'" in driver.find_element("tag name", "main").text
    audit(driver, found, size, "a refused link")
    assert not found, "\n".join(found)
