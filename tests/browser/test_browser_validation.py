"""A validation study in headless Chromium, at laptop (1280x800) and phone (390x844, touch)
size, axe clean (no critical or serious violation): the blinded ranking page (no prompt, no
condition, each image shown and described by its label only) and its review dialog. (The
staff's report page: tests/browser/test_browser_staff_pages.py.)"""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.models import RankingTask
from annotation.models.validation import ConditionPrompt
from annotation.participants import services
from tests.browser.support import NEEDS_CHROMIUM, laptop, none_of, phone, sign_in, wait_until
from tests.browser.test_browser_a11y import audit, go
from tests.validation_helpers import make_validation_study

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}


@pytest.fixture
def validation_site(transactional_db, media_root, tmp_path):
    study = make_validation_study(tmp_path, occupations=4)
    call_command(
        "simulate_annotators",
        "--study",
        "val",
        "--count",
        "6",
        "--effect",
        "1.0",
        stdout=io.StringIO(),
    )
    annotator = get_user_model().objects.create_user("viewer", password="pw-123456")
    profile = services.get_profile(annotator, study)
    services.give_consent(profile)
    services.save_demographics(profile, {})
    return {"annotator": annotator, "study": study}


def images_loaded(driver) -> bool:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('img'))"
        ".every(function (i) { return i.complete && i.naturalWidth > 0; });"
    )


@pytest.mark.parametrize("size", SIZES)
def test_the_blinded_task(driver, live_server, validation_site, size):
    SIZES[size](driver)
    url = live_server.url
    sign_in(driver, url, validation_site["annotator"])
    go(driver, url + reverse("portal:rank"))
    found = audit(driver, "validation task")
    cards = driver.find_elements("css selector", ".rank-card")
    assert len(cards) == 6 and none_of(driver, ".rank-card .prompt")
    alts = [i.get_attribute("alt") for i in driver.find_elements("css selector", ".rank-card img")]
    assert alts == [f"Image {c}" for c in "ABCDEF"]
    wait_until(driver, images_loaded)
    source = driver.page_source
    task = RankingTask.objects.get(pk=driver.find_element("name", "task_id").get_attribute("value"))
    texts = ConditionPrompt.objects.filter(images__item__task_items__task=task).values_list(
        "text", flat=True
    )
    assert texts and not any(t in source for t in texts)
    assert "optimised" not in source and "original" not in source
    driver.find_element("id", "review-order").click()
    wait_until(driver, lambda d: d.find_element("id", "confirm-panel").is_displayed())
    found += audit(driver, "validation task, review dialog")
    assert found == []
