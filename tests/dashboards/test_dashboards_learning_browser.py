"""The progress dashboard's learning curve in headless Chromium at laptop (1280x800) and
phone (390x844) size: the study lead's line, the SVG chart shown at the size drawn, no
sideways scroll, axe clean."""

import pytest
from django.urls import reverse
from learning_curve_data import snapshot_row, stored_curve

from annotation.participants import services
from tests.browser.conftest import driver, module_driver  # noqa: F401
from tests.browser.support import NEEDS_CHROMIUM, laptop, phone, sign_in
from tests.browser.test_browser_a11y import audit, go
from tests.staff import make_staff
from training.runs import learning_curves

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}


@pytest.mark.parametrize("size", SIZES)
def test_the_learning_curve_reads_at_laptop_and_phone_size(
    driver,  # noqa: F811
    live_server,
    transactional_db,
    size,
):
    curve = stored_curve()
    staff = make_staff("boss")  # owns the default study (tests/staff.py)
    services.get_profile(staff)
    SIZES[size](driver)
    sign_in(driver, live_server.url, staff)
    go(driver, live_server.url + reverse("dashboards:progress"))
    section = driver.find_element("id", "learning-curve")
    assert learning_curves.summary(curve, 500) in section.text
    chart = driver.execute_script(
        "const i = document.getElementById('learning-curve-chart');"
        "return {src: i.currentSrc, natural: i.naturalWidth, shown: i.clientWidth,"
        " complete: i.complete, alt: i.alt}"
    )
    assert chart["complete"] and chart["natural"] > 0, chart
    assert ".svg" in chart["src"] and "Learning curve of snapshot" in chart["alt"]
    assert ("size=narrow" in chart["src"]) == (size == "phone"), chart
    assert abs(chart["natural"] - chart["shown"]) <= 1, chart  # drawn as shown
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= driver.execute_script("return window.innerWidth")
    found = audit(driver, f"progress ({size})")
    # a newer snapshot without a curve: the button that queues one, also axe clean
    newer = snapshot_row()
    go(driver, live_server.url + reverse("dashboards:progress"))
    button = driver.find_element("css selector", "#learning-curve button")
    assert button.text == f"Compute the learning curve of snapshot {newer.pk}"
    assert button.is_displayed()
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= driver.execute_script("return window.innerWidth")
    found += audit(driver, f"progress with the button ({size})")
    assert not found, "\n".join(found)
