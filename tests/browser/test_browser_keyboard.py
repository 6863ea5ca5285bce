"""The ranking page by keyboard alone: Tab to a card, reorder with arrows, Home/End and
the move buttons, Enter to review in a modal dialog that holds focus, Escape back,
submit, and focus on the news. Also the contrast of focus rings and control borders."""

import pytest
from coloraide import Color
from django.urls import reverse

from annotation.models import DemographicField
from tests.browser.support import NEEDS_CHROMIUM, shown, sign_in, wait_replaced, wait_until

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]


@pytest.fixture
def ranking(driver, live_server, transactional_db, media_root, make_tasks, portal_client):
    make_tasks(2, k=4, images=media_root)
    client = portal_client()
    sign_in(driver, live_server.url, client.profile.user)
    driver.get(live_server.url + reverse("portal:rank"))
    driver.find_element("id", "rank-form")
    return driver


def press(driver, *keys) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in keys:
        chain.send_keys(key)
    chain.perform()


def active(driver):
    """What has focus: (id, class, item id, is inside the dialog)."""
    return driver.execute_script(
        "var e = document.activeElement;"
        "return [e.id, e.className, e.dataset.itemId || null, !!e.closest('dialog')];"
    )


def focus_moves_to(driver, element_id: str) -> None:
    """Wait (up to 10 s) for focus to reach ``element_id``; fail saying where it is."""
    from selenium.common.exceptions import TimeoutException

    try:
        wait_until(driver, lambda d: active(d)[0] == element_id)
    except TimeoutException:
        raise AssertionError(f"focus is on {active(driver)!r}, not #{element_id}") from None


def live(driver) -> str:
    return driver.find_element("id", "rank-live").get_attribute("textContent")


def tab_to_first_card(driver) -> None:
    from selenium.webdriver.common.keys import Keys

    for _ in range(30):
        press(driver, Keys.TAB)
        if active(driver)[1] == "rank-card":
            return
    raise AssertionError("Tab never reached a card")


def test_the_title_says_which_task(ranking):
    assert ranking.title.startswith("Task 1 of 20")


def test_arrows_home_end_and_honest_ends(ranking):
    from selenium.webdriver.common.keys import Keys

    before = shown(ranking)
    tab_to_first_card(ranking)
    assert active(ranking)[2] == before[0]
    press(ranking, Keys.ARROW_UP)
    assert shown(ranking) == before
    assert live(ranking) == "Image A is already at position 1 of 4."
    press(ranking, Keys.END)
    assert shown(ranking) == [*before[1:], before[0]]
    assert live(ranking) == "Image A moved to position 4 of 4."
    assert active(ranking)[2] == before[0], "focus follows the card"
    press(ranking, Keys.ARROW_DOWN)
    assert live(ranking) == "Image A is already at position 4 of 4."
    press(ranking, Keys.ARROW_UP, Keys.HOME)
    assert shown(ranking) == before
    assert live(ranking) == "Image A moved to position 1 of 4."


def test_move_buttons_reorder_and_keep_focus(ranking):
    from selenium.webdriver.common.keys import Keys

    before = shown(ranking)
    tab_to_first_card(ranking)
    press(ranking, Keys.TAB)  # the card's "up" button
    press(ranking, Keys.TAB)  # its "down" button
    button = ranking.switch_to.active_element
    assert button.accessible_name == "Move Image A down"
    press(ranking, Keys.ENTER)
    assert shown(ranking) == [before[1], before[0], *before[2:]]
    assert ranking.switch_to.active_element == button
    press(ranking, Keys.SPACE)
    assert shown(ranking) == [before[1], before[2], before[0], before[3]]
    assert live(ranking) == "Image A moved to position 3 of 4."
    assert ranking.find_element("id", "order-input").get_attribute("value").split(",") == (
        shown(ranking)
    )


def test_the_review_dialog_is_modal_and_escape_returns_to_review(ranking):
    from selenium.webdriver.common.keys import Keys

    tab_to_first_card(ranking)
    press(ranking, Keys.ENTER)
    dialog = ranking.find_element("id", "confirm-panel")
    assert dialog.is_displayed() and dialog.get_attribute("open") is not None
    assert active(ranking)[0] == "confirm-submit"
    seen = set()
    for _ in range(8):
        press(ranking, Keys.TAB)
        element_id, _, _, inside = active(ranking)
        # Focus may leave the page for the browser's own controls, never for the page
        # behind the dialog.
        assert (
            inside
            or element_id == ""
            and ranking.execute_script("return document.activeElement === document.body")
        ), element_id
        seen.add(element_id)
    assert {"confirm-back", "confirm-submit"} <= seen
    press(ranking, Keys.ESCAPE)
    assert not dialog.is_displayed()
    # The dialog's close event, which moves focus, is dispatched after close() returns.
    focus_moves_to(ranking, "review-order")
    # "Go back" also returns focus to the review button.
    press(ranking, Keys.ENTER)
    assert dialog.is_displayed()
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(ranking).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
    assert active(ranking)[0] == "confirm-back"
    press(ranking, Keys.ENTER)
    assert not dialog.is_displayed()
    focus_moves_to(ranking, "review-order")


def test_after_a_submit_focus_is_on_the_news_and_the_title_moves_on(ranking):
    from selenium.webdriver.common.keys import Keys

    page = ranking.find_element("tag name", "html")
    tab_to_first_card(ranking)
    press(ranking, Keys.ENTER)
    press(ranking, Keys.ENTER)  # on "Confirm and submit"
    # The order as shown is asked about once: focus on "Go back", Tab to "Submit anyway".
    assert active(ranking)[0] == "unchanged-back"
    press(ranking, Keys.TAB)
    assert active(ranking)[0] == "unchanged-submit"
    press(ranking, Keys.ENTER)
    wait_replaced(ranking, page)
    assert ranking.title.startswith("Task 2 of 20")
    focus_moves_to(ranking, "messages")
    region = ranking.find_element("id", "messages")
    assert region.get_attribute("role") == "status"
    assert region.find_element("css selector", "ul > li").text == "Ranking saved."


def _contrast(css_colour: str) -> float:
    return Color(css_colour).contrast("white", method="wcag21")


def test_focus_ring_and_control_borders_reach_3_to_1(ranking, live_server):
    from selenium.webdriver.common.keys import Keys

    tab_to_first_card(ranking)
    card_ring = ranking.execute_script(
        "var s = getComputedStyle(document.activeElement);"
        "return [s.outlineStyle, s.outlineWidth, s.outlineColor];"
    )
    assert card_ring[0] == "solid" and float(card_ring[1].removesuffix("px")) >= 2
    press(ranking, Keys.TAB)
    button_ring = ranking.execute_script(
        "return getComputedStyle(document.activeElement).outlineColor"
    )
    borders = ranking.execute_script(
        "return ['.rank-card', 'button.move', '#review-order'].map(function (s) {"
        " return getComputedStyle(document.querySelector(s)).borderTopColor; });"
    )
    DemographicField.objects.create(key="country", label="Country", help_text="Where you live.")
    DemographicField.objects.create(key="gender", label="Gender", choices=["a", "b"], order=1)
    ranking.get(live_server.url + reverse("portal:demographics"))
    borders += ranking.execute_script(
        "return ['input[type=text]', 'select', 'a.button'].map(function (s) {"
        " return getComputedStyle(document.querySelector(s)).borderTopColor; });"
    )
    for colour in [card_ring[2], button_ring, *borders]:
        assert _contrast(colour) >= 3, colour


def test_help_texts_and_prefer_not_boxes_are_named(driver, live_server, portal_client, db):
    DemographicField.objects.create(key="country", label="Country", help_text="Where you live.")
    DemographicField.objects.create(key="language", label="First language", order=1)
    client = portal_client()
    sign_in(driver, live_server.url, client.profile.user)
    driver.get(live_server.url + reverse("portal:demographics"))
    country = driver.find_element("name", "country")
    described = driver.find_element("id", country.get_attribute("aria-describedby"))
    assert described.text == "Where you live."
    boxes = driver.find_elements("css selector", "input[type=checkbox]")
    assert [b.accessible_name for b in boxes] == [
        "Country: prefer not to say",
        "First language: prefer not to say",
    ]
