"""The runs dashboard in headless Chromium follows a run live. (Every staff page's width
and axe audit: tests/browser/test_browser_staff_pages.py.)"""

import os

import pytest
from training_study import ENCODER, empty_snapshot

from tests.browser.support import none_of, sign_in
from tests.browser.test_browser_portal import CHROMEDRIVER, CHROMIUM, browser  # noqa: F401
from tests.staff import make_staff
from training.models import TrainingRun

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
        reason="needs Debian's chromium and chromium-driver",
    ),
]


@pytest.fixture
def signed_in(browser, live_server, transactional_db):  # noqa: F811
    """A staff member who owns the default study (tests/staff.py), logged in with their
    second factor given (the log-in's pages: tests/annotation/test_annotation_second_factor.py)."""
    sign_in(browser, live_server.url, make_staff("boss"))
    return browser


def run_of_a_tiny_snapshot(**fields) -> TrainingRun:
    snapshot = empty_snapshot()
    return TrainingRun.objects.create(
        snapshot=snapshot, encoder=ENCODER, hyperparameters={}, epochs=12, **fields
    )


def test_the_runs_page_follows_a_run_without_reloading(signed_in, live_server):
    from selenium.webdriver.support.ui import WebDriverWait

    run = run_of_a_tiny_snapshot(status="training", epoch=2)
    signed_in.get(live_server.url + "/dashboards/runs/")
    row = f'tr[data-run="{run.pk}"]'
    assert signed_in.find_element("css selector", row + ' [data-field="epochs"]').text == (
        "epoch 2 of 12"
    )
    signed_in.execute_script("window.notReloaded = true")
    TrainingRun.objects.filter(pk=run.pk).update(
        status="done", epoch=12, history=[{"epoch": 12, "loss": 0.25, "rho": 0.61}]
    )
    WebDriverWait(signed_in, 10).until(
        lambda d: d.find_element("css selector", row).get_attribute("data-finished") == "1"
    )
    text = signed_in.find_element("css selector", row).text
    assert "Done" in text and "epoch 12 of 12" in text and "0.610" in text
    assert none_of(signed_in, row + " form")  # no cancel button left
    assert signed_in.execute_script("return window.notReloaded") is True
