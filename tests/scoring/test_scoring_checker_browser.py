"""The prompt checker's busy state and its way back, in headless Chromium at laptop and
phone size (the page's other behaviour: tests/browser/test_browser_checker.py)."""

import pytest
from training_study import embedding_cache, training_storage  # noqa: F401

from tests.browser.support import NEEDS_CHROMIUM, axe_violations, sign_in
from tests.browser.test_browser_checker import browser, checker_data, wait  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]

# Records every state the button goes through (class, disabled, text, the form's aria-busy).
WATCH = """
window.states = [];
var b = document.getElementById('check-button'), f = document.getElementById('check-form');
function note() { window.states.push([b.className, b.disabled, b.textContent,
  f.getAttribute('aria-busy'), getComputedStyle(b, '::before').animationName]); }
new MutationObserver(note).observe(b, {attributes: true, childList: true, characterData: true,
  subtree: true});
"""


def test_the_button_shows_its_work_and_staff_find_the_dashboards(
    browser,  # noqa: F811
    live_server,
    checker_data,  # noqa: F811
):
    from selenium.webdriver.common.by import By

    user, _ = checker_data
    user.is_staff = True
    user.save()
    sign_in(browser, live_server.url, user)
    browser.get(f"{live_server.url}/check/")
    link = browser.find_element(By.CSS_SELECTOR, "header nav a[href='/dashboards/']")
    assert link.text == "Dashboards"
    browser.execute_script(WATCH)
    browser.find_element(By.ID, "prompts").send_keys("A photo of a nurse")
    browser.find_element(By.ID, "check-button").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#results li.result"))
    wait(browser, lambda d: d.find_element(By.ID, "check-button").is_enabled())
    states = browser.execute_script("return window.states")
    busy = [s for s in states if "busy" in s[0]]
    assert busy and all(disabled and aria == "true" for _, disabled, _, aria, _ in busy)
    assert busy[0][2] == "Checking…"
    assert {spin for *_, spin in busy} == {"spin"}, states  # the spinner turns
    button = browser.find_element(By.ID, "check-button")
    assert button.text == "Check prompts" and "busy" not in button.get_attribute("class")
    assert browser.find_element(By.ID, "check-form").get_attribute("aria-busy") == "false"
    found = [v["id"] for v in axe_violations(browser)]
    assert not found, found
