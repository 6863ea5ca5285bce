"""The payment ledger on the Annotation dashboard, in a real browser at laptop and phone
size: it fits the window (the table scrolls inside its card), an unreconciled payment is
said in words, and axe finds no serious violation. With STEREORANK_SCREENSHOTS=<folder>,
the page is saved there."""

import pytest

from annotation.crowd.models import BulkPayment, LedgerEntry, PlatformStudy
from tests.browser.support import axe_violations, laptop, phone, sideways, sign_in
from tests.browser.test_browser_day_two import screenshot
from tests.crowd.crowd_study import make_study, participant
from tests.staff import make_staff


@pytest.fixture
def ledger_page(driver, live_server, transactional_db):
    study = make_study()
    PlatformStudy.objects.create(
        study=study, platform="prolific", external_id="6751c0ffee0c0ffee0c0ffee",
        status="active", currency="GBP", reward_cents=300, places=100, minutes=15,
        removed_groups=["age_band=18-24"],
    )  # fmt: skip
    payment = BulkPayment.objects.create(
        study=study, external_id="b0nu5c0ffee0c0ffee0c0ffe", state="unreconciled",
        currency="GBP", total_cents=45, note="The pay call's answer was lost; 1 of 3 lines "
        "show no bonus on Prolific (5f0c0ffee0c0ffee0c0ffee1).",
    )  # fmt: skip
    for i in range(3):
        part = participant(study, f"p{i}")
        LedgerEntry.objects.create(
            study=study, kind="approve", submission_id=part.session_id, participation=part,
            reason="3 answers, the study's minimum 2 met",
        )  # fmt: skip
        LedgerEntry.objects.create(
            study=study, kind="bonus", submission_id=part.session_id, participation=part,
            reason="0.05 per ranking", amount_cents=15, payment=payment,
        )  # fmt: skip
    owner = make_staff("owner", study, role="owner")
    sign_in(driver, live_server.url, owner)
    return live_server.url + "/dashboards/?study=wave"


@pytest.mark.browser
@pytest.mark.parametrize("size", ["laptop", "phone"])
def test_the_ledger_fits_says_what_is_unreconciled_and_passes_axe(driver, ledger_page, size):
    (laptop if size == "laptop" else phone)(driver)
    driver.get(ledger_page)
    card = driver.find_element("css selector", "#ledger")
    assert "is unreconciled" in card.text and "6 rows" not in card.text
    assert "3 approved, 0 rejected, 0 held for a person, 3 bonuses" in card.text
    assert sideways(driver) == ""
    assert axe_violations(driver) == []
    screenshot(driver, f"ledger-{size}")
