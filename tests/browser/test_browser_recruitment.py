"""A Prolific participant end to end in headless Chromium, at laptop and phone size:
arrival by link -> consent -> rank to the quota -> completion code and link back.

Prolific is a fake (tests/crowd_fakes.py says why and what it mimics)."""

import pytest
from crowd_fakes import FakeProlific
from django.urls import reverse

from annotation.models import ConsentText, Ranking
from annotation.models.studies import Participation, Study
from tests.browser.support import NEEDS_CHROMIUM, new_driver, wait_replaced

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": (1280, 800), "phone": (390, 844)}


@pytest.fixture(params=list(SIZES))
def browser(request):
    driver = new_driver(*SIZES[request.param])
    driver.size_name = request.param
    yield driver
    driver.quit()


@pytest.fixture
def study(transactional_db, media_root, make_tasks):
    study = Study.objects.create(
        slug="wave-b",
        name="Browser wave",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="CB0WS3R",
        screen_out_code="SB0WS3R",
    )
    # Consent and tasks are the study's own: its participants see these, not the default's.
    ConsentText.objects.create(study=study, version=2, text="Recruitment browser test consent.")
    make_tasks(3, k=3, images=media_root, study=study)
    return study


def _wait_url(driver, path):
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 15).until(lambda d: d.current_url.split("?")[0].endswith(path))


def _click(driver, element) -> None:
    """Scroll the element to the middle of the viewport first (a phone's screen is short)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
    element.click()


def _submit_ranking(driver) -> None:
    """Review and submit the order as shown (and say so when asked), then wait for the
    next page to load."""
    form = driver.find_element("id", "rank-form")
    _click(driver, driver.find_element("id", "review-order"))
    _click(driver, driver.find_element("id", "confirm-submit"))
    _click(driver, driver.find_element("id", "unchanged-submit"))
    wait_replaced(driver, form)


def test_prolific_arrival_consent_rank_and_completion_code(browser, live_server, study):
    prolific = FakeProlific(study.slug)
    pid = prolific.new_participant_id()
    browser.get(live_server.url + prolific.link(pid))

    _wait_url(browser, reverse("portal:join", args=[study.slug]))  # its consent page
    assert "Recruitment browser test consent." in browser.page_source
    assert browser.find_element("id", "decline").is_displayed()
    _click(browser, browser.find_element("id", "agree"))
    _wait_url(browser, reverse("portal:demographics"))
    _click(browser, browser.find_element("link text", "Skip"))  # no answer is required
    _wait_url(browser, reverse("portal:home"))
    _click(browser, browser.find_element("id", "start-ranking"))

    for _ in range(2):  # the study's quota
        _wait_url(browser, reverse("portal:rank"))
        _submit_ranking(browser)

    _wait_url(browser, reverse("portal:complete"))
    code = browser.find_element("id", "completion-code")
    assert code.text == "CB0WS3R" and code.is_displayed()
    link = browser.find_element("id", "completion-link")
    assert prolific.completion_code(link.get_attribute("href")) == "CB0WS3R"
    in_view = browser.execute_script(
        "var r = arguments[0].getBoundingClientRect();"
        "return r.top >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;",
        link,
    )
    assert in_view, f"the way back to Prolific is off screen at {browser.size_name} size"

    participation = Participation.objects.get()
    assert participation.outcome == Participation.Outcome.COMPLETED
    assert Ranking.objects.filter(annotator=participation.annotator).count() == 2
    assert pid not in browser.page_source
