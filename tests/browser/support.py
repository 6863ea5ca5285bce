"""Headless Chromium for the browser tests: one driver per module, laptop and phone
sizes (the phone with touch emulation), sign-in by session cookie, touch gestures."""

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
HAVE_CHROMIUM = os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)
NEEDS_CHROMIUM = pytest.mark.skipif(
    not HAVE_CHROMIUM,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)

# axe-core 4 from npm (bin/test: npm ci --prefix tests/browser), run through
# axe-selenium-python, whose own bundled axe-core (3.1) predates ARIA 1.1 attributes.
AXE_CORE = Path(__file__).with_name("node_modules") / "axe-core" / "axe.min.js"

LAPTOP = (1280, 800)
PHONE = (390, 844)


IMPLICIT_WAIT = 3
"""Seconds a find waits for an element to appear (a page's script may add it)."""


def new_driver(width: int = 1200, height: int = 1000):
    """A headless Chromium with the flags that keep it quiet and small."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(IMPLICIT_WAIT)
    return driver


def laptop(driver) -> None:
    """A 1280x800 viewport with a mouse (no emulation)."""
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": LAPTOP[0], "height": LAPTOP[1], "deviceScaleFactor": 1, "mobile": False},
    )


def phone(driver) -> None:
    """A 390x844 mobile viewport with touch: (pointer: coarse) matches, taps are touches."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": PHONE[0], "height": PHONE[1], "deviceScaleFactor": 1, "mobile": True},
    )
    driver.execute_cdp_cmd(
        "Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5}
    )


def touch_drag(driver, start: tuple[float, float], end: tuple[float, float], steps: int = 10):
    """One finger down at start, moved in steps to end, lifted (viewport pixels)."""
    (x0, y0), (x1, y1) = start, end
    send = driver.execute_cdp_cmd
    send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    for i in range(1, steps + 1):
        point = {"x": x0 + (x1 - x0) * i / steps, "y": y0 + (y1 - y0) * i / steps}
        send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def sign_in(driver, base_url: str, user) -> None:
    """Sign the browser in as user by copying a test client's session cookie."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME]
    driver.get(base_url + "/static/portal/portal.css")  # any page of the origin
    driver.delete_all_cookies()
    driver.add_cookie({"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "path": "/"})


def found_now(scope, selector: str, by: str = "css selector") -> list:
    """What in ``scope`` (a driver or an element) matches ``selector`` now, without the
    implicit wait: for what the server rendered (or a finished wait left), where an empty
    answer is expected and would otherwise wait out the implicit wait each time."""
    driver = getattr(scope, "parent", scope)  # an element's parent is its driver
    driver.implicitly_wait(0)
    try:
        return scope.find_elements(by, selector)
    finally:
        driver.implicitly_wait(IMPLICIT_WAIT)


def none_of(scope, selector: str, by: str = "css selector") -> bool:
    """Nothing in ``scope`` matches ``selector`` (``found_now``)."""
    return not found_now(scope, selector, by)


def wait_until(driver, condition, timeout: float = 10):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def gone(element):
    """A wait condition: element's page was replaced (a form submitted, a link followed).

    Chromium reports a node of the old page as stale or, mid-navigation, as "does not
    belong to the document"; selenium's staleness_of knows only the first.
    """
    from selenium.common.exceptions import WebDriverException

    def replaced(_driver) -> bool:
        try:
            element.is_enabled()
        except WebDriverException:
            return True
        return False

    return replaced


def wait_replaced(driver, element, timeout: float = 15) -> None:
    """Wait until element's page was replaced and the next one has finished loading."""
    wait_until(driver, gone(element), timeout)
    wait_until(
        driver, lambda d: d.execute_script("return document.readyState") == "complete", timeout
    )


def shown(driver) -> list[str]:
    """The item ids of the cards, top to bottom."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('.rank-card'), c => c.dataset.itemId)"
    )


def rect(driver, element) -> dict:
    return driver.execute_script(
        "var r = arguments[0].getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,"
        " width: r.width, height: r.height};",
        element,
    )


def axe_violations(driver, impacts=("critical", "serious")) -> list[dict]:
    """axe-core's violations of the given impacts on the current page."""
    if not AXE_CORE.exists():
        message = f"needs axe-core at {AXE_CORE}: npm ci --prefix tests/browser"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from axe_selenium_python import Axe

    axe = Axe(driver, script_url=str(AXE_CORE))
    axe.inject()
    results = axe.run(options='{"resultTypes": ["violations"]}')
    return [v for v in results["violations"] if v["impact"] in impacts]


def sideways(driver) -> str:
    """ "" when the page is no wider than the window; else the width and the elements that
    stick out past its right edge (at most five), to say what to fix."""
    return driver.execute_script(
        "var inner = window.innerWidth, doc = document.documentElement.scrollWidth;"
        "if (doc <= inner) return '';"
        "var out = Array.from(document.body.querySelectorAll('*'))"
        "  .filter(e => e.getBoundingClientRect().right > inner + 1)"
        "  .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : ''));"
        "return 'scrollWidth ' + doc + ' > ' + inner + ': ' + out.join(', ');"
    )
