"""A Prolific participant's day one in headless Chromium (issue 21), at laptop (1280x800,
mouse and keyboard) and phone (390x844, touch) size, axe-audited on every page (and no
page wider than the window): the entry link's consent page (a GET joins nobody, issue
31), a mis-tap on "I do not agree", taken back; a return with a new SESSION_ID after 0 of 2
tasks; the order as shown, asked about once; the review dialog's images; the code.

With STEREORANK_SCREENSHOTS=<folder>, the second task and its review dialog are saved
there (rank-laptop.png, review-laptop.png, rank-phone.png, review-phone.png)."""

import os
from pathlib import Path

import pytest
from crowd_fakes import FakeProlific
from django.urls import reverse

from annotation.models import ConsentText, Ranking
from annotation.models.studies import Participation, Study
from tests.browser.support import (
    NEEDS_CHROMIUM,
    axe_violations,
    laptop,
    none_of,
    phone,
    rect,
    shown,
    sideways,
    wait_replaced,
    wait_until,
)

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}


@pytest.fixture
def study(transactional_db, media_root, make_tasks):
    study = Study.objects.create(
        slug="pilot",
        name="Pilot",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="CDAY0NE",
        screen_out_code="SDAY0NE",
    )
    # Consent and tasks are the study's own: its participants see these, not the default's.
    ConsentText.objects.create(study=study, version=3, text="Day-one browser test consent.")
    make_tasks(3, k=6, images=media_root, study=study)
    return study


class Visit:
    """One browser at one size: taps on a phone, clicks and keys on a laptop; every page
    it reaches is audited by axe."""

    def __init__(self, driver, base_url: str, size: str):
        self.driver, self.base_url, self.size = driver, base_url, size
        self.found: list[str] = []

    def audit(self, name: str) -> None:
        """axe's critical and serious violations, and a page wider than the window."""
        self.found += [
            f"{self.size} {name}: {v['id']} ({v['impact']}) {v['help']}"
            for v in axe_violations(self.driver)
        ]
        if wide := sideways(self.driver):
            self.found.append(f"{self.size} {name}: {wide}")

    def go(self, path: str) -> None:
        self.driver.get(self.base_url + path)
        self.loaded()

    def loaded(self) -> None:
        wait_until(
            self.driver, lambda d: d.execute_script("return document.readyState") == "complete"
        )

    def at(self, name: str, *args) -> None:
        path = reverse(name, args=args)
        wait_until(self.driver, lambda d: d.current_url.split("?")[0].endswith(path), 15)
        self.loaded()

    def press(self, target) -> None:
        """A tap (touch events at the middle) on the phone, a click elsewhere; target is
        an element or its id."""
        element = self.driver.find_element("id", target) if isinstance(target, str) else target
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        if self.size != "phone":
            element.click()
            return
        box = rect(self.driver, element)
        point = {"x": box["left"] + box["width"] / 2, "y": box["top"] + box["height"] / 2}
        send = self.driver.execute_cdp_cmd
        send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
        send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})

    def press_and_wait(self, target) -> None:
        page = self.driver.find_element("tag name", "html")
        self.press(target)
        wait_replaced(self.driver, page)

    def active_id(self) -> str:
        return self.driver.execute_script("return document.activeElement.id")


def _review_is_the_images_in_order(driver) -> None:
    """The dialog shows each card's image, in the cards' order, recognisably large."""
    cards = driver.find_elements("css selector", ".rank-card img")
    thumbs = driver.find_elements("css selector", "#confirm-list li img")
    assert [t.get_attribute("src") for t in thumbs] == [c.get_attribute("src") for c in cards]
    assert all(driver.execute_script("return arguments[0].naturalWidth > 0", t) for t in thumbs)
    assert min(rect(driver, t)["width"] for t in thumbs) >= 140
    dialog = rect(driver, driver.find_element("id", "confirm-panel"))
    viewport = driver.execute_script("return innerHeight")
    assert dialog["top"] >= 0 and dialog["bottom"] <= viewport, dialog
    # The whole order at once: the last image is in the dialog without scrolling.
    last = rect(driver, thumbs[-1])
    assert dialog["top"] <= last["top"] and last["bottom"] <= dialog["bottom"], last


@pytest.mark.parametrize("size", SIZES)
def test_a_prolific_participant_mis_taps_returns_and_finishes(driver, live_server, study, size):
    from selenium.webdriver.common.keys import Keys

    SIZES[size](driver)
    visit = Visit(driver, live_server.url, size)
    prolific = FakeProlific(study.slug)
    pid = prolific.new_participant_id()

    visit.go(prolific.link(pid))
    visit.at("portal:join", study.slug)  # the consent page; nobody joined yet
    assert not Participation.objects.exists()
    visit.audit("consent")
    agree, decline = (rect(driver, driver.find_element("id", i)) for i in ("agree", "decline"))
    assert decline["top"] >= agree["bottom"] + 24, "'I do not agree' sits apart from 'I agree'"

    # The mis-tap: asked first, then confirmed by mistake, then taken back.
    visit.press_and_wait("decline")
    visit.at("portal:join_decline", study.slug)
    visit.audit("decline, asked")
    assert not Participation.objects.exists()
    visit.press_and_wait("confirm-decline")
    visit.at("portal:screened_out")
    visit.audit("screened out")
    assert driver.find_element("id", "screen-out-code").text == "SDAY0NE"
    visit.press_and_wait("reconsider")
    visit.at("portal:consent")
    visit.press_and_wait("agree")
    visit.at("portal:demographics")
    driver.find_element("link text", "Skip").click()
    visit.at("portal:home")

    # Prolific sends them back with a new SESSION_ID after 0 of 2 tasks: they resume.
    visit.go(prolific.link(pid, session_id="second-session"))
    visit.at("portal:home")
    assert driver.find_element("id", "progress-done").text == "0"
    visit.press_and_wait("start-ranking")
    visit.at("portal:rank")
    visit.audit("rank")

    # Task 1, as shown: asked once, answered by keyboard (laptop) or by taps (phone).
    if size == "laptop":
        card = driver.find_element("css selector", ".rank-card")
        card.send_keys(Keys.ENTER)  # the review dialog
        assert visit.active_id() == "confirm-submit"
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        assert driver.find_element("id", "unchanged-panel").is_displayed()
        assert visit.active_id() == "unchanged-back"  # the way back, focused first
        visit.audit("rank, asked about the order as shown")
        driver.switch_to.active_element.send_keys(Keys.ENTER)  # go back and reorder
        assert not driver.find_element("id", "confirm-panel").is_displayed()
        wait_until(
            driver, lambda d: "rank-card" in d.switch_to.active_element.get_attribute("class")
        )
        assert Ranking.objects.count() == 0
        driver.switch_to.active_element.send_keys(Keys.ENTER)  # review again: not asked again
        page = driver.find_element("tag name", "html")
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        wait_replaced(driver, page)
    else:
        visit.press("review-order")
        visit.press("confirm-submit")
        assert driver.find_element("id", "unchanged-panel").is_displayed()
        assert visit.active_id() == "unchanged-back"
        visit.audit("rank, asked about the order as shown")
        visit.press_and_wait("unchanged-submit")
    visit.at("portal:rank")
    assert Ranking.objects.count() == 1

    # Task 2: one card moved, so nobody asks; the review shows the images in order.
    before = shown(driver)
    card = driver.find_elements("css selector", ".rank-card")[0]
    visit.press(card.find_element("css selector", "button.move[data-move=down]"))
    assert shown(driver) == [before[1], before[0], *before[2:]]
    folder = os.environ.get("STEREORANK_SCREENSHOTS")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"rank-{size}.png"))
    visit.press("review-order")
    _review_is_the_images_in_order(driver)
    visit.audit("rank, review dialog")
    if folder:
        driver.save_screenshot(str(Path(folder) / f"review-{size}.png"))
    visit.press_and_wait("confirm-submit")
    visit.at("portal:complete")
    visit.audit("complete")
    assert driver.find_element("id", "completion-code").text == "CDAY0NE"
    assert Ranking.objects.count() == 2

    # Back again with yet another session: the code again, no more tasks.
    visit.go(prolific.link(pid, session_id="third-session"))
    visit.at("portal:complete")
    assert driver.find_element("id", "completion-code").text == "CDAY0NE"

    # Log out: how to come back, and no log-in or sign-up.
    visit.press_and_wait(driver.find_element("css selector", "header button.link"))
    assert "the same link brings you back" in driver.page_source
    assert none_of(driver, f'a[href="{reverse("portal:login")}"]')
    assert none_of(driver, f'a[href="{reverse("portal:signup")}"]')
    visit.audit("logged out")

    participation = Participation.objects.get()
    assert participation.outcome == Participation.Outcome.COMPLETED
    assert Ranking.objects.filter(annotator=participation.annotator).count() == 2
    assert not visit.found, "\n".join(visit.found)
