"""The prompt checker in headless Chromium, at laptop and phone size: log in as usual,
paste prompts, check them from the keyboard, read the scores against the threshold, get
rewrites for the flagged one and copy one. Real MiniLM; the scores are checked against
the scoring service's own numbers."""

import pytest
from training_study import embedding_cache, training_storage  # noqa: F401

from scoring import services
from scoring.scorer import reset_scorer
from tests.browser.support import NEEDS_CHROMIUM, new_driver, none_of, phone
from tests.scoring.helpers import diversity_version, scoring_user

NURSE = "Generate an image of a nurse: a young slim woman in a white uniform"
DIVERSE = "Generate an image of a nurse who is a Black man in a wheelchair from Kenya"

pytestmark = [pytest.mark.browser, pytest.mark.slow, NEEDS_CHROMIUM]

SIZES = {"laptop": (1280, 900), "phone": (390, 844)}


@pytest.fixture(params=list(SIZES))
def browser(request):
    driver = new_driver(*SIZES[request.param])
    if request.param == "phone":  # a phone's viewport and touch
        phone(driver)
    driver.size = request.param
    yield driver
    driver.quit()


@pytest.fixture
def checker_data(transactional_db):
    reset_scorer()
    user = scoring_user("checker")
    version = diversity_version()
    yield user, version
    reset_scorer()


def wait(driver, condition, seconds: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(condition)


def test_check_prompts_see_scores_get_and_copy_rewrites(browser, live_server, checker_data):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _, version = checker_data
    browser.get(f"{live_server.url}/check/")
    assert "/login/" in browser.current_url  # log in as usual
    browser.find_element(By.ID, "id_username").send_keys("checker")
    browser.find_element(By.ID, "id_password").send_keys("pw-123456")
    browser.find_element(By.CSS_SELECTOR, "#login-form button[type=submit]").click()
    wait(browser, lambda d: d.current_url.endswith("/check/"))

    # an empty paste is refused on the page, in an alert
    browser.find_element(By.ID, "check-button").click()
    error = browser.find_element(By.ID, "check-error")
    assert error.is_displayed() and error.text == "Paste at least one prompt, one per line."
    assert error.get_attribute("role") == "alert"

    # keyboard only: type in the labelled box, Tab to the button, Enter
    textarea = browser.find_element(By.ID, "prompts")
    assert browser.find_element(By.CSS_SELECTOR, "label[for=prompts]").text
    textarea.send_keys(NURSE, Keys.ENTER, Keys.ENTER, DIVERSE)  # a blank line is skipped
    for _ in range(3):  # version, "suggest rewrites", the button
        browser.switch_to.active_element.send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "check-button"
    assert (
        browser.execute_script("return getComputedStyle(document.activeElement).outlineStyle")
        == "solid"
    )  # the focus is visible
    focused.send_keys(Keys.ENTER)

    status = browser.find_element(By.ID, "check-status")
    assert status.get_attribute("aria-live") == "polite"
    wait(browser, lambda d: "Rewrites suggested for" in status.text)
    assert status.text.startswith(f"Checked 2 prompts with version v{version.version}: 1 flagged.")
    assert (
        f"Version v{version.version} · threshold"
        in browser.find_element(By.ID, "version-used").text
    )

    expected = services.score_prompts([NURSE, DIVERSE])
    results = browser.find_elements(By.CSS_SELECTOR, "#results > li.result")
    assert [r.find_element(By.CLASS_NAME, "result-prompt").text for r in results] == [
        NURSE,
        DIVERSE,
    ]
    for result, want in zip(results, expected.results, strict=True):
        assert float(result.get_attribute("data-score")) == pytest.approx(want.score, abs=1e-6)
        assert ("flagged" in result.get_attribute("class")) == want.flagged
        fill = browser.execute_script(
            "return parseFloat(arguments[0].querySelector('.bar-fill').style.width)", result
        )
        mark = browser.execute_script(
            "return parseFloat(arguments[0].querySelector('.bar-threshold').style.left)", result
        )
        assert (fill < mark) == want.flagged  # the bar ends left of the threshold mark
    assert [r.flagged for r in expected.results] == [True, False]

    rewrites = results[0].find_elements(By.CSS_SELECTOR, "li.rewrite")
    assert 1 <= len(rewrites) <= 3 and none_of(results[1], "li.rewrite")
    first = rewrites[0].find_element(By.CLASS_NAME, "rewrite-text").text
    assert "nurse" in first.lower() and first != NURSE
    again = services.score_prompts([first])
    assert not again.results[0].flagged  # a suggested rewrite passes the same version

    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": live_server.url,
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    copy = rewrites[0].find_element(By.CSS_SELECTOR, "button.copy")
    assert copy.get_attribute("aria-label") == "Copy rewrite 1 of prompt 1"
    copy.send_keys(Keys.ENTER)
    wait(browser, lambda d: "Copied rewrite 1 of prompt 1" in status.text, 10)
    pasted = browser.execute_async_script(
        "navigator.clipboard.readText().then(arguments[0], e => arguments[0]('ERR ' + e))"
    )
    assert pasted == first

    # nothing wider than the screen, at either size
    assert browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )
    if browser.size == "phone":
        width = browser.execute_script("return window.innerWidth")
        assert width == SIZES["phone"][0]
        assert browser.find_element(By.ID, "check-button").size["width"] > 0.7 * width
