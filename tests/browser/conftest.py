"""Browser fixtures: one headless Chromium per test module, reset for each test."""

import pytest

from tests.browser.support import HAVE_CHROMIUM, laptop, new_driver


@pytest.fixture(scope="module")
def module_driver():
    if not HAVE_CHROMIUM:
        pytest.skip("needs Debian's chromium and chromium-driver")
    driver = new_driver()
    yield driver
    driver.quit()


@pytest.fixture
def driver(module_driver):
    """The module's browser at laptop size, without cookies from an earlier test."""
    module_driver.delete_all_cookies()
    laptop(module_driver)
    return module_driver
