"""Issue 21's staff items in headless Chromium at laptop (1280x800) and phone (390x844)
size: the registry's two-step promote and roll back, axe clean; the favicon on every base
template. (SVG charts shown at the size drawn, on every staff page:
tests/browser/test_browser_staff_pages.py, which saves screenshots to
``STEREORANK_SCREENSHOTS`` when set.)"""

import pytest
from django.urls import reverse

from annotation.participants import services
from tests.browser.conftest import driver, module_driver  # noqa: F401
from tests.browser.support import NEEDS_CHROMIUM, laptop, none_of, phone, sign_in, wait_replaced
from tests.browser.test_browser_a11y import _versions, audit, go
from tests.staff import make_staff
from training.models import Checkpoint

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}


@pytest.fixture
def staff_site(transactional_db, media_root, tmp_path):
    _versions(tmp_path)  # v1 active, v2 a candidate, both evaluated on one snapshot
    staff = make_staff("boss")  # owns the default study (tests/staff.py)
    services.get_profile(staff)
    return staff


@pytest.mark.parametrize("size", SIZES)
def test_promote_and_roll_back_confirm_what_will_serve(
    driver,  # noqa: F811
    live_server,
    staff_site,  # noqa: F811
    size,
    settings,
):
    """(The group check is off here: its doors are tested in test_training_group_promotion.)"""
    from training import services as training_services

    settings.STEREORANK = {**settings.STEREORANK, "PROMOTION_GROUP_CHECK": False}
    # v1 active through the registry (the fixture only marked it), so it has a history.
    Checkpoint.objects.filter(version=1).update(status="candidate")
    training_services.promote(Checkpoint.objects.get(version=1), actor="test")
    SIZES[size](driver)
    sign_in(driver, live_server.url, staff_site)
    go(driver, live_server.url + reverse("dashboards:registry"))
    assert none_of(driver, "rollback", by="id")  # v1 has nothing before it
    row = driver.find_element("css selector", 'tr[data-version="2"]')
    row.find_element("tag name", "summary").click()
    step = row.find_element("css selector", "details.confirm form")
    assert "The scoring API will serve v2 instead of v1, at once." in step.text
    found = audit(driver, f"registry, promote open ({size})")
    html = driver.find_element("tag name", "html")
    step.find_element("css selector", "button[type=submit]").click()
    wait_replaced(driver, html)
    assert Checkpoint.objects.get(status="active").version == 2
    rollback = driver.find_element("id", "rollback")
    rollback.find_element("tag name", "summary").click()
    assert "will serve v1 instead of v2" in rollback.text
    found += audit(driver, f"registry, roll back open ({size})")
    html = driver.find_element("tag name", "html")
    rollback.find_element("css selector", "button[type=submit]").click()
    wait_replaced(driver, html)
    assert Checkpoint.objects.get(status="active").version == 1
    assert none_of(driver, "rollback", by="id")
    assert not found, "\n".join(found)


def test_every_base_template_links_a_favicon_that_is_served(driver, live_server, staff_site):  # noqa: F811
    url = live_server.url
    pages = [reverse("portal:login"), reverse("admin:login"), "/no-such-page/"]
    for page in pages + [reverse("dashboards:runs")]:
        if page == reverse("dashboards:runs"):
            sign_in(driver, url, staff_site)
        go(driver, url + page)
        href = driver.execute_script(
            "var l = document.querySelector('link[rel=icon]'); return l && l.href"
        )
        assert href and href.endswith("favicon.svg"), page
        status = driver.execute_script(
            "return fetch(arguments[0]).then(r => r.status + ' ' + r.headers.get('content-type'))",
            href,
        )
        assert status.startswith("200 image/svg+xml"), (page, status)
