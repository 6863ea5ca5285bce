"""A searched run's page in headless Chromium at laptop (1280x800) and phone (390x844)
size: the chosen recipe, the plot shown at the size drawn, no sideways scroll, axe clean."""

import pytest
from django.urls import reverse
from training_study import make_study

from annotation.participants import services
from tests.browser.conftest import driver, module_driver  # noqa: F401
from tests.browser.support import NEEDS_CHROMIUM, laptop, phone, sign_in
from tests.browser.test_browser_a11y import audit, go
from tests.staff import make_staff
from training.runs.services import execute_run, start_run
from training.snapshots.services import create_snapshot

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]
SPEC = "lr=1e-2,3e-2 epochs=1,2 alpha=0.01 temperature=0.5 weight_decay=0.01 folds=3"


def test_a_searched_run_reads_at_laptop_and_phone_size(
    driver,  # noqa: F811
    live_server,
    transactional_db,
    tmp_path,
):
    make_study(tmp_path)
    run = start_run(create_snapshot(include_synthetic=True), search=SPEC, enqueue=False)
    assert execute_run(run.pk, "node-a").startswith("done")
    staff = make_staff("boss")  # owns the default study (tests/staff.py)
    services.get_profile(staff)
    for size, resize in (("laptop", laptop), ("phone", phone)):
        resize(driver)
        sign_in(driver, live_server.url, staff)
        go(driver, live_server.url + reverse("dashboards:run", args=[run.pk]))
        assert "Chosen: lr" in driver.find_element("id", "search-chosen").text
        chart = driver.execute_script(
            "const i = document.getElementById('search-chart');"
            "return {src: i.currentSrc, natural: i.naturalWidth, shown: i.clientWidth,"
            " complete: i.complete, alt: i.alt}"
        )
        assert chart["complete"] and chart["natural"] > 0, chart
        assert ".svg" in chart["src"] and "every configuration tried" in chart["alt"]
        assert ("size=narrow" in chart["src"]) == (size == "phone"), chart
        assert abs(chart["natural"] - chart["shown"]) <= 1, chart  # drawn as shown
        assert len(driver.find_elements("css selector", "#configs tbody tr")) == 4
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= driver.execute_script("return window.innerWidth")
        found = audit(driver, f"run page ({size})")
        assert not found, "\n".join(found)
