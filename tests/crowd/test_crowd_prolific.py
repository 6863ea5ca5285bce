"""A study's life on Prolific against the fake server (tests/crowd_server.py, built from
docs.prolific.com's API reference): published twice as one study, synced, reviewed (a dry
run, then final decisions), bonused twice with the first answer lost and everyone paid
once, a full group removed from the screening and the study paused when full; the token
in no output, log line or file."""

from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError

from annotation.crowd.models import BulkPayment, LedgerEntry, PlatformStudy, Submission
from annotation.crowd.review import Facts, verdict
from annotation.models import DemographicField, GroupQuota, Participation, QuotaSeat
from tests.crowd.crowd_study import (
    TOKEN,
    checks,
    configure,
    exclude,
    make_study,
    participant,
    rank,
    run,
)


@pytest.fixture
def fake(settings, db):
    server = configure(settings)
    yield server
    server.close()


def publish(slug="wave", *extra):
    return run("prolific", "publish", slug, "--reward-cents", "300", "--places", "3", *extra)


def test_publishing_twice_makes_one_study_and_the_dry_run_sends_nothing(fake):
    study = make_study()
    dry = publish("wave", "--minutes", "12")
    assert "dry run: nothing sent" in dry and fake.count("POST", r"/studies/$") == 0
    assert "https://study.example.org/join/wave/?PROLIFIC_PID={{%PROLIFIC_PID%}}" in dry
    assert not PlatformStudy.objects.exists()
    fake.fail("POST", r"/studies/$", "lose_answer")  # made on Prolific, the answer lost
    done = publish("wave", "--minutes", "12", "--apply")
    assert "published" in done
    assert len(fake.studies) == 1
    (remote,) = fake.studies.values()
    assert remote["status"] == "ACTIVE" and remote["reward"] == 300
    assert remote["total_available_places"] == 3 and remote["estimated_completion_time"] == 12
    codes = {c["code_type"]: c["code"] for c in remote["completion_codes"]}
    assert codes == {"COMPLETED": "C0MPL3T3", "OTHER": "SCR33N"}
    assert "{{%SESSION_ID%}}" in remote["external_study_url"]
    languages = [f for f in remote["filters"] if f["filter_id"] == "fluent-languages"]
    assert languages == [{"filter_id": "fluent-languages", "selected_values": ["0"]}]
    again = publish("wave", "--minutes", "12", "--apply")
    assert "already created" in again and len(fake.studies) == 1
    assert PlatformStudy.objects.get(study=study).external_id == remote["id"]


def test_publish_refuses_a_study_without_codes_or_time(fake):
    make_study()
    with pytest.raises(CommandError, match="give --minutes"):
        publish("wave")
    run("create_study", "lab")
    with pytest.raises(CommandError, match="not a Prolific study with both codes"):
        publish("lab", "--minutes", "5")


def test_retries_honour_429_and_5xx_and_give_up_in_one_line(fake):
    make_study()
    fake.fail("GET", r"/filters/$", "429")
    fake.fail("GET", r"/filters/$", "500")
    assert "dry run" in publish("wave", "--minutes", "5")
    assert fake.count("GET", r"/filters/$") == 3
    fake.fail("GET", r"/filters/$", "500", times=10)
    with pytest.raises(CommandError) as refused:
        publish("wave", "--minutes", "5")
    assert "failed after 4 tries" in str(refused.value) and "\n" not in str(refused.value)


def _ready(fake, store_ranking, make_tasks):
    """A published study with: ann (done), shy (declined consent), twin (duplicate),
    cheat (failed two readable checks), early (failed checks before widths), short (below
    the minimum), lazy (excluded on untouched rankings only)."""
    study = make_study()
    study.minimum_rankings = 2
    study.save(update_fields=["minimum_rankings"])
    publish("wave", "--minutes", "10", "--apply")
    sid = PlatformStudy.objects.get().external_id
    tasks = make_tasks(n=6, k=3, overlap=6, study=study)
    check_tasks = checks(make_tasks(n=2, k=3, study=study, occupation="pilot"))
    people = {}
    for name in ("ann", "shy", "twin", "cheat", "early", "short", "lazy"):
        people[name] = participant(study, name)
        fake.add_submission(sid, people[name].session_id)
    people["twin"].duplicate = True
    people["twin"].save()
    Participation.objects.filter(pk=people["shy"].pk).update(
        outcome="screened_out", screen_out_reason="declined_consent"
    )
    for name in ("ann", "twin"):
        for task in tasks[:3]:
            rank(store_ranking, people[name], task)
    rank(store_ranking, people["short"], tasks[0])
    for task in tasks[:5]:  # each in the order shown: excluded as untouched, not on checks
        rank(store_ranking, people["lazy"], task)
    exclude(people["lazy"])
    for name, width in (("cheat", 1280), ("early", None)):
        rank(store_ranking, people[name], tasks[0])
        for task in check_tasks:
            rank(store_ranking, people[name], task, fail_check=True, width=width)
        exclude(people[name])
    return study, sid, people


def test_review_dry_run_then_final_decisions_by_the_rule(fake, store_ranking, make_tasks):
    study, sid, people = _ready(fake, store_ranking, make_tasks)
    fake.add_submission(sid, "unknown-session")
    dry = run("prolific", "review", "wave")
    assert "dry run: nothing sent" in dry
    assert fake.count("POST", r"/submissions/.+/transition/") == 0
    assert not LedgerEntry.objects.exists()
    kinds = {line.split()[1]: line.split()[0] for line in dry.splitlines()[:-1]}
    expected = {
        people["ann"].session_id: "approve",
        people["shy"].session_id: "hold",  # screened out: never rejected
        people["twin"].session_id: "hold",  # a duplicate
        people["cheat"].session_id: "reject",  # two readable checks failed
        people["early"].session_id: "hold",  # checks failed before widths
        people["short"].session_id: "hold",  # below the minimum
        people["lazy"].session_id: "approve",  # excluded on untouched rankings: paid
        "unknown-session": "hold",
    }
    assert kinds == expected
    fake.fail("POST", r"/transition/$", "500")  # retried: documented idempotent
    run("prolific", "review", "wave", "--apply")
    status = {s: fake.submissions[s]["status"] for s in expected}
    assert status[people["ann"].session_id] == "APPROVED"
    assert status[people["cheat"].session_id] == "REJECTED"
    assert [s for s, v in status.items() if v == "AWAITING REVIEW"] == [
        s for s, k in expected.items() if k == "hold"
    ]
    ((_, _, body),) = [
        c for c in fake.calls if c[2] and c[2].get("action") == "REJECT" and c[0] == "POST"
    ]
    assert body["rejection_category"] == "FAILED_CHECK" and len(body["message"]) >= 100
    ledger = dict(LedgerEntry.objects.values_list("submission_id", "kind"))
    assert ledger == expected
    run("prolific", "review", "wave", "--apply")  # again: nothing new
    assert LedgerEntry.objects.count() == len(expected)


def test_the_rule_by_hand():
    assert verdict(Facts(matched=True, answers=3, minimum=2)).kind == "approve"
    assert verdict(Facts(matched=True, answers=1, minimum=2)).kind == "hold"
    on_checks = Facts(matched=True, answers=5, excluded_on_checks=True)
    assert verdict(on_checks).kind == "hold"  # fewer than two readable ones
    assert verdict(Facts(**{**on_checks.__dict__, "failed_readable": 2})).kind == "reject"
    assert verdict(Facts(**{**on_checks.__dict__, "failed_readable": 1})).kind == "hold"
    assert verdict(Facts(matched=True, screen_out="group_full", answers=9)).kind == "hold"


def test_a_bonus_pays_each_person_once_though_the_first_answer_was_lost(
    fake, store_ranking, make_tasks, caplog, tmp_path, settings
):
    caplog.set_level("DEBUG")
    study, sid, people = _ready(fake, store_ranking, make_tasks)
    outputs = [run("prolific", "review", "wave", "--apply")]
    with pytest.raises(CommandError, match="The total 0.15 is above --max-total 0.10"):
        run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--max-total", "0.10")
    dry = run("prolific", "bonus", "wave", "--per-ranking", "0.05")
    assert "total 0.15 GBP to 1 participants" in dry and "dry run" in dry
    assert f"held for a person: {people['twin'].session_id}" in dry  # a duplicate
    assert fake.count("POST", "bonus-payments") == 0
    fake.fail("POST", r"/pay/$", "lose_answer")
    outputs.append(run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply"))
    assert "got no answer" in outputs[-1] and "reconciled" in outputs[-1]
    outputs.append(run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply"))
    assert "nothing to pay" in outputs[-1]
    assert fake.count("POST", r"/pay/$") == 1
    assert fake.submissions[people["ann"].session_id]["bonus_payments"] == [15]
    assert all(
        not s["bonus_payments"]
        for k, s in fake.submissions.items()
        if k != people["ann"].session_id
    )
    (payment,) = BulkPayment.objects.all()
    assert payment.state == "reconciled" and payment.total_cents == 15
    # The token is nowhere: no output, no log record, no file written.
    assert not any(TOKEN in out for out in outputs)
    assert not any(TOKEN in record.getMessage() for record in caplog.records)
    for folder in (Path(settings.STEREORANK["VAR_DIR"]) if "VAR_DIR" in settings.STEREORANK
                   else tmp_path, tmp_path):  # fmt: skip
        for path in folder.rglob("*"):
            if path.is_file() and path.stat().st_size < 5_000_000:
                assert TOKEN.encode() not in path.read_bytes(), path


def test_a_lost_payment_not_shown_paid_is_left_for_a_person(fake, store_ranking, make_tasks):
    study, sid, people = _ready(fake, store_ranking, make_tasks)
    run("prolific", "review", "wave", "--apply")
    fake.fail("POST", r"/pay/$", "timeout")  # no answer, and nothing paid
    out = run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply")
    assert "UNRECONCILED" in out
    again = run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply")
    assert "nothing to pay" in again and "UNRECONCILED" in again
    assert fake.count("POST", r"/pay/$") == 1  # never sent again
    assert BulkPayment.objects.get().state == "unreconciled"


def test_a_full_group_leaves_the_screening_and_a_full_study_pauses(fake, store_ranking, make_tasks):
    study = make_study()
    bands = ["18-24", "25-34", "35-44", "45-54", "55-64", "65-74", "75 or over"]
    field, _ = DemographicField.objects.get_or_create(
        key="age_band", defaults={"label": "Age", "choices": bands}
    )
    quota = GroupQuota.objects.create(study=study, field=field, value="18-24", target=1)
    GroupQuota.objects.create(study=study, field=field, value="75 or over", target=5)
    publish("wave", "--minutes", "10", "--apply")
    record = PlatformStudy.objects.get()
    assert not [f for f in record.screening if f["filter_id"] == "age"]
    part = participant(study, "young")
    QuotaSeat.objects.create(quota=quota, annotator=part.annotator)
    rank(store_ranking, part, make_tasks(n=1, k=3, study=study)[0])
    for _ in range(2):
        fake.add_submission(record.external_id, f"s-{_}", status="ACTIVE")
    fake.add_submission(record.external_id, part.session_id)
    out = run("prolific", "sync", "wave")
    assert "3 submissions, 1 matched to participations, 2 with no participation" in out
    assert "groups full, removed from the screening: age_band=18-24" in out
    (age,) = [f for f in fake.studies[record.external_id]["filters"] if f["filter_id"] == "age"]
    assert age["selected_range"] == {"lower": 25, "upper": 100}
    assert "every place taken (3 of 3): study paused" in out
    assert fake.studies[record.external_id]["status"] == "PAUSED"
    assert Submission.objects.get(submission_id=part.session_id).participation == part
    assert not any("participant" in f.name for f in Submission._meta.fields)


def test_a_bad_amount_or_no_token_is_one_line(fake, settings):
    make_study()
    with pytest.raises(CommandError, match="is not an amount"):
        run("prolific", "bonus", "wave", "--per-ranking", "1e3x")
    conf = {**settings.STEREORANK["PROLIFIC"], "TOKEN": ""}
    settings.STEREORANK = {**settings.STEREORANK, "PROLIFIC": conf}
    with pytest.raises(CommandError, match="No Prolific token"):
        publish("wave", "--minutes", "5")
    run("create_study", "lab")  # what the study lacks is said before the token
    with pytest.raises(CommandError, match="not a Prolific study with both codes"):
        publish("lab", "--minutes", "5")
    assert Decimal("0.05") * 3 == Decimal("0.15")


def test_a_session_id_twice_is_held_and_paid_once(fake, store_ranking, make_tasks):
    study, sid, people = _ready(fake, store_ranking, make_tasks)
    second = participant(study, "ann-again")  # the same submission, a new crowd id
    Participation.objects.filter(pk=second.pk).update(session_id=people["ann"].session_id)
    second.refresh_from_db()
    task = study.tasks.filter(check_item__isnull=True).order_by("pk").last()
    rank(store_ranking, second, task)  # work of its own: listed, never paid
    held = f"hold     {people['ann'].session_id}  two participations of ours hold this"
    assert held in run("prolific", "review", "wave")
    run("prolific", "review", "wave", "--apply")
    assert fake.submissions[people["ann"].session_id]["status"] == "AWAITING REVIEW"
    fake.submissions[people["ann"].session_id]["status"] = "APPROVED"  # by hand, on Prolific
    run("prolific", "sync", "wave")
    out = run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply")
    assert "total 0.15 GBP to 1 participants" in out
    assert out.count(f"held for a person: {people['ann'].session_id}") == 1
    assert fake.submissions[people["ann"].session_id]["bonus_payments"] == [15]


def test_a_wrong_set_up_total_pays_nothing(fake, store_ranking, make_tasks):
    study, sid, people = _ready(fake, store_ranking, make_tasks)
    run("prolific", "review", "wave", "--apply")
    fake.bonus_markup = 100
    with pytest.raises(CommandError, match="for 115 cents, not the 15 sent: nothing paid"):
        run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply")
    assert fake.count("POST", r"/pay/$") == 0 and not BulkPayment.objects.exists()


def test_a_sent_payment_never_shown_paid_goes_to_a_person(fake, store_ranking, make_tasks):
    from datetime import timedelta

    study, sid, people = _ready(fake, store_ranking, make_tasks)
    run("prolific", "review", "wave", "--apply")
    run("prolific", "bonus", "wave", "--per-ranking", "0.05", "--apply")
    fake.submissions[people["ann"].session_id]["bonus_payments"] = []  # Prolific failed it
    out = run("prolific", "bonus", "wave", "--per-ranking", "0.05")
    assert "not yet shown paid" in out and BulkPayment.objects.get().state == "sent"
    BulkPayment.objects.update(sent_at=BulkPayment.objects.get().sent_at - timedelta(hours=25))
    out = run("prolific", "bonus", "wave", "--per-ranking", "0.05")
    assert "UNRECONCILED" in out and "not paid within 1 day" in out
    assert BulkPayment.objects.get().state == "unreconciled"
    assert fake.count("POST", r"/pay/$") == 1


@pytest.mark.parametrize("language", ["en", "nl", "ar", "xx"])
def test_the_rejection_message_is_in_the_participants_language_and_long_enough(language):
    from annotation.crowd.review import REJECTION, rejection_message

    message = rejection_message(language, 2)
    assert len(message) >= 100 and "2" in message
    translated = message != REJECTION % {"failed": 2}
    assert translated == (language in ("nl", "ar"))  # an unknown language reads English
