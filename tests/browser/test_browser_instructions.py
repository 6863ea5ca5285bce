"""Instructions speak of touch on a phone and of keys on a laptop; the practice task
on a phone, reordered by taps on the move buttons, gives feedback and stores nothing."""

import json
import re

import pytest
from django.urls import reverse

from annotation.catalogue.loading import load_catalogue, read_catalogue
from annotation.models import Assignment, Ranking
from annotation.portal.practice import practice_task
from tests.browser.support import NEEDS_CHROMIUM, phone, shown, sign_in, wait_replaced

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]


@pytest.fixture
def reader(driver, live_server, transactional_db, media_root, tmp_path, portal_client):
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:1]
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=1, path=path)
    client = portal_client()
    sign_in(driver, live_server.url, client.profile.user)
    return driver


def _visible_text(driver, selector: str) -> str:
    return driver.find_element("css selector", selector).text  # WebDriver: rendered text only


@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_instructions_speak_of_touch_on_a_phone_and_of_keys_elsewhere(
    reader, live_server, size
):
    if size == "phone":
        phone(reader)
    reader.get(live_server.url + reverse("portal:instructions"))
    text = _visible_text(reader, "main")
    assert "Worked example 1" in text
    touch = reader.find_element("id", "how-touch")
    keys = reader.find_element("id", "how-keys")
    if size == "phone":
        assert touch.is_displayed() and not keys.is_displayed()
        assert "swipe" in text and "tap" in text
        assert not re.search(r"\b(Tab|Escape|Enter|arrows?)\b", text), text
    else:
        assert keys.is_displayed() and not touch.is_displayed()
        assert "Tab" in text and "Home" in text and "swipe" not in text
    reader.get(live_server.url + reverse("portal:practice"))
    help_text = _visible_text(reader, "#rank-help")
    if size == "phone":
        assert "swipe" in help_text and "Tab" not in help_text
    else:
        assert "Tab" in help_text and "swipe" not in help_text


def test_practice_on_a_phone_gives_feedback_and_stores_nothing(reader, live_server):
    phone(reader)
    reader.get(live_server.url + reverse("portal:practice"))
    reference = [str(i.pk) for i in practice_task().reference]
    assert shown(reader) == [reference[2], reference[0], reference[1]]
    # Tap "Move down" on the first card twice: D goes from the top to the bottom.
    for _ in range(2):
        first = reader.find_element("css selector", f'.rank-card[data-item-id="{reference[2]}"]')
        first.find_element("css selector", "button.move[data-move=down]").click()
    assert shown(reader) == reference
    page = reader.find_element("tag name", "html")
    reader.find_element("id", "review-order").click()
    assert reader.find_element("id", "confirm-title").text == "Check this order?"
    reader.find_element("id", "confirm-submit").click()
    wait_replaced(reader, page)
    message = reader.find_element("css selector", "#messages .message")
    assert message.text == "Your order matches the reference."
    assert reader.execute_script("return document.activeElement.id") == "messages"
    assert len(reader.find_elements("css selector", ".feedback-list li.in-place")) == 3
    assert Ranking.objects.count() == 0 and Assignment.objects.count() == 0
