"""What the crowd platform's records keep about a person, and who sees them: the
participant id never stored, the ledger to the study's owners only, and after an erasure
a payment record with the submission id and nothing else of the person."""

import pytest
from django.test import Client
from django.urls import reverse

from annotation.crowd.models import LedgerEntry, PlatformStudy, Submission
from annotation.participants.erasure import erase_annotator
from tests.crowd.crowd_study import configure, make_study, participant, rank, run
from tests.privacy_claims import says
from tests.staff import make_staff


@pytest.fixture
def fake(settings, db):
    server = configure(settings)
    yield server
    server.close()


def _paid(fake, store_ranking, make_tasks):
    study = make_study()
    run("prolific", "publish", "wave", "--reward-cents", "200", "--places", "5",
        "--minutes", "9", "--apply")  # fmt: skip
    sid = PlatformStudy.objects.get().external_id
    part = participant(study, "ann")
    fake.add_submission(sid, part.session_id)
    for task in make_tasks(n=2, k=3, overlap=3, study=study):
        rank(store_ranking, part, task)
    run("prolific", "sync", "wave")
    run("prolific", "review", "wave", "--apply")
    run("prolific", "bonus", "wave", "--per-ranking", "0.10", "--apply")
    return study, part


@says(
    "On a study run through Prolific's API, each submission's status is kept with its "
    "submission id and participation (`Submission`), and the platform's participant id, which "
    "the API returns, is held in memory for the calls that need it and never stored.",
    "A payment ledger row stays as a payment record: the submission id, the decision or the "
    "amount, its reason, when and by whom; the participation it pointed to and the "
    "submission's status row go.",
)
def test_the_ledger_keeps_a_payment_record_and_nothing_else_after_an_erasure(
    fake, store_ranking, make_tasks
):
    study, part = _paid(fake, store_ranking, make_tasks)
    remote_ids = {s["participant_id"] for s in fake.submissions.values()}
    from django.db import connection

    with connection.cursor() as cursor:
        for model in (Submission, LedgerEntry, PlatformStudy):
            cursor.execute(f"SELECT * FROM {model._meta.db_table}")
            text = repr(cursor.fetchall())
            assert not any(pid in text for pid in remote_ids), model
    assert Submission.objects.get().participation == part
    kinds = sorted(LedgerEntry.objects.values_list("kind", flat=True))
    assert kinds == ["approve", "bonus"]
    erase_annotator(part.annotator, via="staff")
    assert not Submission.objects.exists()
    rows = list(
        LedgerEntry.objects.values("kind", "submission_id", "participation", "amount_cents")
    )
    assert rows == [
        {"kind": "approve", "submission_id": part.session_id, "participation": None,
         "amount_cents": None},
        {"kind": "bonus", "submission_id": part.session_id, "participation": None,
         "amount_cents": 20},
    ]  # fmt: skip


@says(
    "Every decision about a person's pay (approved, rejected, held for a person) and every "
    "bonus is a row of the payment ledger (`LedgerEntry`, `BulkPayment`), which only the "
    "study's owners see."
)
def test_only_the_studys_owners_see_the_ledger(fake, store_ranking, make_tasks):
    study, part = _paid(fake, store_ranking, make_tasks)
    entry = LedgerEntry.objects.first()
    owner = make_staff("owner", study, role="owner")
    researcher = make_staff("researcher", study, role="researcher")
    stranger = make_staff("stranger")  # an owner of the default study only
    listing = reverse("admin:crowd_ledgerentry_changelist")
    change = reverse("admin:crowd_ledgerentry_change", args=[entry.pk])
    browser = Client()
    browser.force_login(owner)
    page = browser.get(listing)
    assert page.status_code == 200 and part.session_id in page.content.decode()
    assert browser.get(change).status_code == 200
    browser.force_login(researcher)  # runs the study, but is not its owner
    assert browser.get(listing).status_code == 403
    assert browser.get(change).status_code in (403, 404)
    browser.force_login(stranger)  # owns another study: sees its ledger, not this one's
    page = browser.get(listing)
    assert page.status_code == 200 and part.session_id not in page.content.decode()
    assert browser.get(change).status_code == 404
    browser.force_login(owner)
    assert browser.post(change, {"kind": "reject"}).status_code == 403  # read only
    assert LedgerEntry.objects.get(pk=entry.pk).kind == entry.kind


def test_the_dashboard_shows_the_ledger_to_owners_only(fake, store_ranking, make_tasks):
    study, part = _paid(fake, store_ranking, make_tasks)
    owner = make_staff("owner", study, role="owner")
    researcher = make_staff("researcher", study, role="researcher")
    browser = Client()
    browser.force_login(owner)
    page = browser.get("/dashboards/?study=wave").content.decode()
    assert 'id="ledger"' in page and part.session_id in page
    assert "1 approved, 0 rejected, 0 held for a person, 1 bonuses" in page
    assert "20&nbsp;cents" in page and "pay call taken" in page
    browser.force_login(researcher)
    page = browser.get("/dashboards/?study=wave").content.decode()
    assert 'id="ledger"' not in page and part.session_id not in page


def test_no_log_line_names_a_submission_and_an_erased_one_does_not_come_back(
    fake, store_ranking, make_tasks, caplog
):
    caplog.set_level("DEBUG")
    study, part = _paid(fake, store_ranking, make_tasks)
    session = part.session_id
    assert not [r for r in caplog.records if session in r.getMessage()]
    erase_annotator(part.annotator, via="staff")
    run("prolific", "sync", "wave")  # Prolific still lists the submission
    assert not Submission.objects.exists()
