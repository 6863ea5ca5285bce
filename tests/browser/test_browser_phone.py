"""Ranking on a 390x844 touch screen: swipes over a card scroll, the handle drags,
the cards sit in two columns so that the whole order of short texts fits one screen,
the review dialog's buttons stay in view."""

import pytest
from django.urls import reverse

from annotation.models import Prompt, Ranking
from tests.browser.support import (
    NEEDS_CHROMIUM,
    phone,
    rect,
    shown,
    sign_in,
    touch_drag,
    wait_until,
)

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

LONG = (
    "A photo of a nurse at work in a busy hospital ward at night, talking with an elderly "
    "patient while checking the chart, soft light, documentary style, wide shot {}"
)


@pytest.fixture
def on_phone(driver, live_server, transactional_db, media_root, make_tasks, portal_client):
    """An annotator's rank page for one task of six items with long prompts, on a phone."""
    make_tasks(1, k=6, images=media_root)
    for i, prompt in enumerate(Prompt.objects.exclude(origin=None)):
        prompt.text = LONG.format(i)
        prompt.save()
    client = portal_client()
    sign_in(driver, live_server.url, client.profile.user)
    phone(driver)
    driver.get(live_server.url + reverse("portal:rank"))
    driver.find_element("id", "rank-form")
    return driver


def _point_in(driver, element, fy: float = 0.5):
    """A viewport point inside element, fy of the way down its visible part."""
    r = rect(driver, element)
    top, bottom = max(r["top"], 0), min(r["bottom"], driver.execute_script("return innerHeight"))
    return r["left"] + r["width"] / 2, top + (bottom - top) * fy


def test_the_phone_matches_a_coarse_pointer_and_two_columns(on_phone):
    assert on_phone.execute_script("return matchMedia('(pointer: coarse)').matches")
    assert on_phone.execute_script("return innerWidth") == 390
    assert on_phone.execute_script("return document.documentElement.scrollWidth") <= 390
    lefts = {
        round(rect(on_phone, c)["left"])
        for c in on_phone.find_elements("css selector", ".rank-card")
    }
    assert len(lefts) == 2, "cards sit in two columns"


def test_long_texts_are_shown_whole_and_short_ones_fit_the_order_on_one_screen(on_phone):
    """Nothing a participant needs is hidden at any width (issue 32): every card's text is
    on the screen, whole. With short texts (a few words), the
    whole order of six still fits one screen; long ones make the page scroll."""
    text = on_phone.execute_script("return document.body.innerText")
    prompts = list(Prompt.objects.exclude(origin=None).order_by("pk"))
    assert all(prompt.text in text for prompt in prompts)
    for i, prompt in enumerate(prompts):
        prompt.text = f"A nurse, {i}"
        prompt.save()
    on_phone.refresh()  # the same reservation, its texts short now
    on_phone.find_element("id", "rank-form")
    widths = [
        rect(on_phone, i)["width"] for i in on_phone.find_elements("css selector", ".rank-card img")
    ]
    assert len(widths) == 6 and min(widths) >= 150, widths
    cards = on_phone.find_elements("css selector", ".rank-card")
    assert rect(on_phone, cards[-1])["bottom"] - rect(on_phone, cards[0])["top"] <= 844 - 60
    for card in cards:  # each card's controls are within reach, at 44 px or more
        for control in card.find_elements("css selector", ".handle, button.move"):
            box = rect(on_phone, control)
            assert box["width"] >= 44 and box["height"] >= 44, box


def test_a_swipe_over_a_card_scrolls_and_keeps_the_order(on_phone):
    before = shown(on_phone)
    image = on_phone.find_elements("css selector", ".rank-card img")[0]
    x, y = _point_in(on_phone, image, 0.8)
    hit = on_phone.execute_script(
        "var e = document.elementFromPoint(arguments[0], arguments[1]);"
        "return [!!e.closest('.rank-card'), !!e.closest('.handle')];",
        x,
        y,
    )
    assert hit == [True, False], "the swipe starts on a card, away from its handle"
    touch_drag(on_phone, (x, y), (x, y - 300))
    wait_until(on_phone, lambda d: d.execute_script("return scrollY") > 100)
    assert shown(on_phone) == before


def test_the_handle_reorders(on_phone):
    before = shown(on_phone)
    cards = on_phone.find_elements("css selector", ".rank-card")
    # Bring the first card's handle to 120 px below the top, the second card into view.
    on_phone.execute_script("arguments[0].scrollIntoView(); scrollBy(0, -120);", cards[0])
    handle = cards[0].find_element("css selector", ".handle")
    start = _point_in(on_phone, handle)
    assert (
        on_phone.execute_script("return getComputedStyle(arguments[0]).touchAction", handle)
        == "none"
    )
    assert on_phone.execute_script(
        "return getComputedStyle(arguments[0]).touchAction", cards[0]
    ) in (
        "auto",
        "manipulation",
    )
    target = rect(on_phone, cards[1])  # beside the first, in the other column
    end = (target["left"] + target["width"] / 2, target["top"] + target["height"] / 2)
    assert end[1] < 844 - 64, "the second card's middle is in view, away from the edge"
    scrolled = on_phone.execute_script("return scrollY")
    touch_drag(on_phone, start, end)
    assert shown(on_phone) == [before[1], before[0], *before[2:]]
    assert on_phone.find_element("id", "order-input").get_attribute("value").split(",") == (
        [before[1], before[0], *before[2:]]
    )
    assert on_phone.execute_script("return scrollY") == scrolled, "dragging did not scroll"
    assert "moved to position 2 of 6" in on_phone.find_element("id", "rank-live").get_attribute(
        "textContent"
    )


@pytest.mark.parametrize("height", [844, 600])
def test_the_review_dialog_fits_and_submits(on_phone, height):
    """844: the whole screen; 600: what is left with the browser's bars shown."""
    if height != 844:
        on_phone.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 390, "height": height, "deviceScaleFactor": 1, "mobile": True},
        )
    on_phone.find_element("id", "review-order").click()
    dialog = on_phone.find_element("id", "confirm-panel")
    assert dialog.is_displayed()
    assert len(on_phone.find_elements("css selector", "#confirm-list li")) == 6
    assert on_phone.execute_script("return innerHeight") == height
    box = rect(on_phone, dialog)
    assert box["top"] >= 0 and box["bottom"] <= height, box
    # The title and both buttons at once, without scrolling: only the
    # list scrolls inside the dialog.
    for name in ("confirm-title", "confirm-submit", "confirm-back"):
        button = rect(on_phone, on_phone.find_element("id", name))
        assert box["top"] <= button["top"] and button["bottom"] <= box["bottom"], (name, button)
    on_phone.find_element("id", "confirm-submit").click()
    # The order as shown: asked once, and the question fits the screen too.
    question = on_phone.find_element("id", "unchanged-panel")
    assert question.is_displayed()
    box = rect(on_phone, question)
    assert box["top"] >= 0 and box["bottom"] <= height, box
    assert Ranking.objects.count() == 0
    on_phone.find_element("id", "unchanged-submit").click()
    wait_until(on_phone, lambda d: Ranking.objects.count() == 1)


def test_holding_a_dragged_card_at_the_bottom_edge_scrolls_on(on_phone):
    """With the browser's bars shown (600 px left), six cards do not fit one screen even
    in two columns: near an edge the page follows the finger."""
    import time

    on_phone.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": 390, "height": 600, "deviceScaleFactor": 1, "mobile": True},
    )
    before = shown(on_phone)
    handle = on_phone.find_elements("css selector", ".rank-card .handle")[0]
    on_phone.execute_script("arguments[0].scrollIntoView(); scrollBy(0, -120);", handle)
    x, y = _point_in(on_phone, handle)
    send = on_phone.execute_cdp_cmd
    send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):
        point = {"x": x, "y": y + (586 - y) * step / 10}
        send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    scrolled = on_phone.execute_script("return scrollY")
    time.sleep(1.0)  # the finger rests at the bottom edge
    assert on_phone.execute_script("return scrollY") > scrolled + 200
    send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    after = shown(on_phone)
    assert after.index(before[0]) >= 2, "the card travelled past the next one"
    assert [i for i in after if i != before[0]] == before[1:]
