"""axe-core on every portal page, at laptop (1280x800) and phone (390x844, touch) size:
no critical or serious violation. Pages are reached the way people reach them, so that
messages, the review dialog and filled tables are audited. The staff pages' audit is
tests/browser/test_browser_staff_pages.py; here, their tables' keyboard scrolling."""

import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.catalogue.loading import load_catalogue, read_catalogue
from annotation.models.studies import Study, default_study_pk
from annotation.participants import services
from tests.browser.support import (
    NEEDS_CHROMIUM,
    axe_violations,
    found_now,
    laptop,
    phone,
    sign_in,
    wait_replaced,
    wait_until,
)
from tests.staff import make_staff

pytestmark = [pytest.mark.browser, NEEDS_CHROMIUM]

SIZES = {"laptop": laptop, "phone": phone}


def audit(driver, name: str) -> list[str]:
    """axe's critical and serious violations on the current page, one line each."""
    return [
        f"{name}: {v['id']} ({v['impact']}) {v['help']} at "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        for v in axe_violations(driver)
    ]


def go(driver, url: str) -> None:
    driver.get(url)
    wait_until(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def click_and_wait(driver, selector: str) -> None:
    """Click a submit button and wait for the next page to replace this one."""
    html = driver.find_element("tag name", "html")
    driver.find_element("css selector", selector).click()
    wait_replaced(driver, html)


@pytest.fixture
def portal_site(transactional_db, media_root, make_tasks, tmp_path):
    # The catalogue's consent and demographic fields, and one occupation with its three
    # prompts for the practice task.
    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][:1]
    (tmp_path / "catalogue.json").write_text(json.dumps(catalogue))
    load_catalogue(placeholders_per_prompt=1, path=tmp_path / "catalogue.json")
    make_tasks(2, k=4, images=media_root)
    Study.objects.filter(pk=default_study_pk()).update(open_signup=True)  # the form, audited
    return get_user_model().objects.create_user("reader", password="pw-123456")


@pytest.mark.parametrize("size", SIZES)
def test_portal_pages_have_no_serious_violations(driver, live_server, portal_site, size):
    SIZES[size](driver)
    url = live_server.url
    found = []
    for name in ("portal:login", "portal:signup"):
        go(driver, url + reverse(name))
        found += audit(driver, name)
    go(driver, url + "/no-such-page/")
    found += audit(driver, "404")

    sign_in(driver, url, portal_site)
    go(driver, url + reverse("portal:consent"))
    found += audit(driver, "consent, not yet agreed")
    click_and_wait(driver, "#agree")
    assert driver.find_elements("css selector", ".messages .message")
    found += audit(driver, "demographics, with a message")
    driver.find_element("name", "nationality").send_keys("Portuguese")
    click_and_wait(driver, "#demographics-form button[type=submit]")
    found += audit(driver, "home, with a message")
    go(driver, url + reverse("portal:rank"))
    found += audit(driver, "rank")
    driver.find_element("id", "review-order").click()
    found += audit(driver, "rank, review dialog open")
    driver.find_element("id", "confirm-submit").click()
    found += audit(driver, "rank, asked about the order as shown")
    click_and_wait(driver, "#unchanged-submit")
    assert "Ranking saved." in driver.find_element("css selector", ".messages").text
    found += audit(driver, "rank, with a message")
    go(driver, url + reverse("portal:consent"))
    found += audit(driver, "consent, agreed")
    go(driver, url + reverse("portal:instructions"))
    found += audit(driver, "instructions")
    go(driver, url + reverse("portal:practice"))
    found += audit(driver, "practice")
    driver.find_element("id", "review-order").click()
    click_and_wait(driver, "#confirm-submit")
    assert driver.find_elements("id", "feedback")
    found += audit(driver, "practice, with feedback")
    assert not found, "\n".join(found)


def _versions(tmp_path) -> None:
    """A small study, a snapshot, two evaluated versions, a run, schedules, a decision."""
    from training_study import make_study

    from core.json import json_safe
    from training.ml.metrics import evaluate
    from training.models import Checkpoint, Evaluation, RetrainDecision, TrainingRun
    from training.snapshots.services import EVAL, create_snapshot, rows_of

    make_study(tmp_path, occupations=2, images=2, annotators=2)
    snapshot = create_snapshot(include_synthetic=True)
    rows = rows_of(snapshot, EVAL)
    labels = np.array([r["label"] for r in rows])
    for version, noise in ((1, 0.1), (2, 0.5)):
        scores = labels + np.random.default_rng(version).normal(0.0, noise, labels.size)
        metrics = json_safe(
            evaluate(
                scores,
                labels,
                [r["group"] for r in rows],
                [r["occupation"] for r in rows],
                n_boot=50,
            )
        )
        checkpoint = Checkpoint.objects.create(
            version=version,
            status="active" if version == 1 else "candidate",
            path=f"/nonexistent/v{version}",
            head_sha256="0" * 64,
            encoder_name="minilm",
            encoder_identity={"name": "minilm"},
            snapshot=snapshot,
            threshold=0.12,
            metrics=metrics,
        )
        Evaluation.objects.create(
            checkpoint=checkpoint,
            snapshot=snapshot,
            metrics=metrics,
            predictions={r["key"]: float(s) for r, s in zip(rows, scores, strict=True)},
        )
    TrainingRun.objects.create(
        snapshot=snapshot, encoder="minilm", hyperparameters={}, epochs=12, status="training"
    )
    call_command("setup_schedule")
    RetrainDecision.objects.create(schedule="nightly", decision="skip", reason="12 new, need 50")


@pytest.fixture
def staff_site(transactional_db, media_root, tmp_path):
    _versions(tmp_path)
    staff = make_staff("boss")  # owns the default study (tests/staff.py)
    services.get_profile(staff)
    return staff


def test_wide_tables_scroll_by_keyboard_on_a_phone(driver, live_server, staff_site):
    from selenium.webdriver.common.keys import Keys

    phone(driver)
    sign_in(driver, live_server.url, staff_site)
    scrolling = []
    for name in ("progress", "runs", "registry", "schedules"):
        go(driver, live_server.url + reverse(f"dashboards:{name}"))
        for wrap in found_now(driver, ".table-wrap"):  # a page may have none
            assert wrap.get_attribute("tabindex") == "0"
            assert wrap.get_attribute("role") == "region"
            assert wrap.accessible_name.endswith("(table)"), wrap.accessible_name
            if driver.execute_script(
                "return arguments[0].scrollWidth > arguments[0].clientWidth", wrap
            ):
                scrolling.append(name)
                driver.execute_script("arguments[0].focus()", wrap)
                wrap.send_keys(Keys.ARROW_RIGHT * 5)
                wait_until(
                    driver,
                    lambda d, w=wrap: d.execute_script("return arguments[0].scrollLeft", w) > 0,
                    5,
                )
    assert scrolling, "some table is wider than a phone (else this test proves nothing)"


def test_the_runs_tables_cancel_column_is_labelled(driver, live_server, staff_site):
    sign_in(driver, live_server.url, staff_site)
    go(driver, live_server.url + reverse("dashboards:runs"))
    headers = driver.find_elements("css selector", "#runs thead th")
    assert headers[-1].accessible_name == "Cancel"
    button = driver.find_element("css selector", "#runs form[data-cancel] button")
    assert button.accessible_name.startswith("Cancel run #")
