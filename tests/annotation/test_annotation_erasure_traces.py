"""Erasure that erases: after it, no table, cache entry or log line names the person.

One participant comes by a Prolific link (a crowd id, a session id), answers in their
own words, ranks, fails a log-in, is named in the admin's history, in a reliability-
weighted snapshot, a perspective report, the quality report and the dashboards' cached
charts; staff erase them; then every row of every table, every entry of the cache and
every captured log line is searched for their identifiers. Each search is first shown
to find them before the erasure, so that it cannot pass by finding nothing anywhere.
No model is trained: the perspective report is computed by the service's own steps
with stand-in scores for the items (what a checkpoint would give), then stored as the
service stores it.
"""

from __future__ import annotations

import logging
import pickle
import random
import secrets

import pytest
from crowd_fakes import FakeProlific, join
from django.apps import apps
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.sessions.models import Session
from django.core.cache import cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.urls import reverse
from privacy_claims import says

from annotation.assignment.next_task import next_task
from annotation.models import (
    AnnotatorProfile,
    DemographicField,
    Erasure,
    GroupQuota,
    Participation,
    Ranking,
    StatusChange,
    Study,
)
from annotation.models.reports import QualityReport
from annotation.participants import services
from annotation.participants.erasure import erase_annotator
from annotation.quality import store as quality_store
from annotation.rankings.exports import pseudonym
from core import personal_cache
from core.models import OutboxMessage
from training.models import Checkpoint, PerspectiveReport, PerspectiveSummary
from training.perspectives import services as perspectives
from training.snapshots.services import create_snapshot

FREE_TEXT = "faith"


def _rows_as_text() -> str:
    """Every row of every table of the database, as text."""
    out = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            out.append(f"{table}: {cursor.fetchall()!r}")
    return "\n".join(out)


def _cache_as_text() -> str:
    """Every key and value of the default cache that can be read (Redis: the keys of
    Django's format under its prefix; local memory: all of them)."""
    default = caches["default"]
    if isinstance(default, RedisCache):
        client = default._cache.get_client(write=True)
        keys = list(client.scan_iter(match=f"{default.key_prefix}:*", count=1000))
        values = client.mget(keys) if keys else []
        pairs = []
        for key, raw in zip(keys, values, strict=True):
            try:
                value = default._cache._serializer.loads(raw) if raw is not None else None
            except Exception:  # noqa: BLE001 - not a Django cache value: its bytes
                value = raw
            pairs.append((key, value))
        return repr(pairs)
    assert isinstance(default, LocMemCache)
    with default._lock:
        return repr([(k, pickle.loads(v)) for k, v in default._cache.items()])


def _logs_as_text(caplog) -> str:
    """Every log record of the test so far (its setup's and its own): each message as
    printed, and all the record holds."""
    records = caplog.get_records("setup") + caplog.get_records("call")
    return "\n".join(f"{r.getMessage()} {r.__dict__!r}" for r in records)


def _found(identifiers: dict[str, str], text: str) -> set[str]:
    return {name for name, value in identifiers.items() if value and value in text}


@pytest.fixture
def study(db, settings):
    """A Prolific study with k = 2 (and a quick quality report); a gender field with
    choices and own words, and a free-text field."""
    settings.STEREORANK = {**settings.STEREORANK, "GROUP_K": 2, "QUALITY_N_BOOT": 10}
    DemographicField.objects.create(
        key="gender", label="Gender", choices=["woman", "man"], allow_other=True
    )
    DemographicField.objects.create(key=FREE_TEXT, label="Faith, in your words")
    return Study.objects.create(
        slug=f"wave-{secrets.token_hex(3)}",
        name="Erasure study",
        platform=Study.Platform.PROLIFIC,
        tasks_per_participant=2,
        completion_code="C0MPL3T3",
        screen_out_code="SCR33N",
    )


def _rank_every_task(profile: AnnotatorProfile, tasks: list | None = None) -> None:
    """Rank each task the profile is given (only those of ``tasks`` when named), in the
    items' id order."""
    while (assignment := next_task(profile)) is not None:
        if tasks is not None and assignment.task_id not in tasks:
            break
        order = sorted(assignment.shown_order)
        services.submit_ranking(profile, assignment.task_id, order)


def _other(study: Study, name: str, demographics: dict) -> AnnotatorProfile:
    user = get_user_model().objects.create_user(name, password="pw-123456")
    profile = AnnotatorProfile.objects.create(user=user, study=study)
    services.give_consent(profile)
    services.save_demographics(profile, demographics)
    return profile


def _perspective_report(snapshot, field: str) -> None:
    """The report ``compute_reports`` stores, its item scores standing in for a model's."""
    from training.ml.alignment import RankedList
    from training.ml.alignment_report import perspective_report

    checkpoint = Checkpoint.objects.create(
        version=1,
        path="/nonexistent/v1",
        head_sha256="0" * 64,
        encoder_name="stand-in",
        encoder_identity={"name": "stand-in"},
        snapshot=snapshot,
        threshold=0.1,
    )
    rankings, item_prompt, texts, eval_prompts = perspectives.study_rankings(snapshot)
    scores = {item: float(item % 7) for item in texts}
    ranked = [
        RankedList(rid, annotator, tuple(order), (demo or {}).get(field), occupation)
        for rid, annotator, order, demo, occupation in rankings
    ]
    report = perspective_report(
        ranked, item_prompt, scores, k=2, prompts=eval_prompts or None, n_boot=10
    )
    perspectives.store(checkpoint, snapshot, field, report, ranked)


@pytest.fixture
def person(study, make_tasks, caplog, settings):
    """The participant and everything that names them; ``identifiers`` to search for.
    Two tasks of three items (a nurse's and a pilot's: two prompt groups to split)."""
    caplog.set_level(logging.DEBUG)
    tasks = [
        *make_tasks(1, 3, overlap=2, study=study, occupation="nurse"),
        *make_tasks(1, 3, overlap=2, study=study, occupation="pilot"),
    ]
    prolific = FakeProlific(study.slug)
    crowd_id, session_id = prolific.new_participant_id(), secrets.token_hex(12)
    address = f"198.18.{random.randrange(256)}.{random.randrange(1, 255)}"
    browser = Client(REMOTE_ADDR=address)
    join(browser, prolific.link(crowd_id, session_id))
    participation = Participation.objects.get(study=study)
    profile = participation.annotator
    user = profile.user
    user.email = f"erin-{secrets.token_hex(4)}@example.org"
    user.save()
    answers = {
        "gender": f"agender-{secrets.token_hex(4)}",
        FREE_TEXT: f"Zoroastrian-{secrets.token_hex(4)}",
    }
    services.save_demographics(profile, answers)
    gender = DemographicField.objects.get(key="gender")
    GroupQuota.objects.create(study=study, field=gender, value=DemographicField.OTHER, target=9)
    _rank_every_task(profile)
    assert profile.quota_seats.exists()
    StatusChange.objects.create(
        annotator=profile, previous="ok", status="warned", reason="staff: answers in a hurry"
    )
    # Another annotator ranks the first task only: its items pool 2 annotators, the
    # second task's only the person.
    other = _other(study, "olga", {"gender": "woman", FREE_TEXT: "none"})
    _rank_every_task(other, tasks=[tasks[0].pk])
    # A failed log-in under the person's username (django-axes records it and logs it).
    Client(REMOTE_ADDR="198.18.0.9", HTTP_USER_AGENT="Curious/1.0").post(
        reverse("portal:login"), {"username": user.username, "password": "wrong"}
    )
    staff = get_user_model().objects.create_superuser("staffer", password="pw-123456")
    LogEntry.objects.log_actions(
        staff.pk, [user], CHANGE, change_message="Changed email.", single_object=True
    )
    snapshot = create_snapshot(studies=[study], weighting="reliability", eval_fraction=0.5)
    _perspective_report(snapshot, FREE_TEXT)
    quality_store.refresh(False, 10, study)
    admin = Client()
    admin.force_login(staff)
    page = admin.get(reverse("dashboards:quality"), {"study": study.slug})
    assert page.status_code == 200
    assert admin.get(reverse("dashboards:quality-chart"), {"study": study.slug}).status_code == 200
    chart = admin.get(reverse("dashboards:perspectives-groups"), {"version": 1, "field": FREE_TEXT})
    assert chart.status_code == 200
    return {
        "profile": profile,
        "other": other,
        "tasks": tasks,
        "snapshot": snapshot,
        "participation": participation,
        "identifiers": {
            "username": user.username,
            "email": user.email,
            "crowd id": crowd_id,
            "crowd id hash": participation.external_id_hash,
            "session id": session_id,
            "own words (gender)": answers["gender"],
            "own words (faith)": answers[FREE_TEXT],
        },
        "pseudonym": pseudonym(user.pk),
        "addresses": {"joined from": address, "failed log-in from": "198.18.0.9"},
    }


def _erase(person, capsys, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        call_command("erase", person["pseudonym"], "--no-input")
    assert "Erased" in capsys.readouterr().out


@says(
    "After an erasure, no table, cache entry or log line holds the person's username, crowd "
    "id, session id (the payment ledger's submission id aside), e-mail or answers in their "
    "own words, and no table or cache entry holds their pseudonym.",
    "Log lines name a person by pseudonym, never by username, crowd id or address.",
    "Log lines written before the erasure stay as the operator keeps them, naming the person "
    "by pseudonym only.",
    "It removes the person's pseudonym from every snapshot's lineage.",
    "A crowd platform's participant id is never stored: the participation (`Participation`) "
    "keeps HMAC-SHA256 of it under `STEREORANK_EXTERNAL_ID_KEY`.",
)
def test_after_an_erasure_no_table_cache_entry_or_log_line_names_the_person(
    person, caplog, capsys, django_capture_on_commit_callbacks
):
    identifiers, name = person["identifiers"], person["pseudonym"]
    everything = {**identifiers, "pseudonym": name}
    # Before: the searches find them (the crowd id itself is never stored, only its hash).
    in_tables = _found(everything, _rows_as_text())
    assert in_tables == set(everything) - {"crowd id"}
    lineage = person["snapshot"].label_weighting["annotators"]
    assert name in lineage  # a reliability weight
    assert personal_cache.entries()  # the dashboards' charts are cached
    logged = _found(everything | person["addresses"], _logs_as_text(caplog))
    assert logged == {"pseudonym"}  # enrolled, failed log-in: by pseudonym only

    _erase(person, capsys, django_capture_on_commit_callbacks)

    assert _found(everything, _rows_as_text()) == set()
    assert _found(everything, _cache_as_text()) == set()
    assert personal_cache.entries() == {}
    assert _found(identifiers | person["addresses"], _logs_as_text(caplog)) == set()


@says(
    "It deletes the account's sessions, API tokens, log-in attempt records, the admin's "
    "history entries about it and its rate-limit counters.",
    "It renames the account `erased-...`, blanks its e-mail, names and last log-in time, makes "
    "its password unusable and deactivates it.",
    "An erasure deletes the person's demographic answers, rankings with their ranked items, "
    "reservations, quota seats, participation, quality standing and its history.",
)
def test_the_accounts_traces_go_with_it(person, capsys, django_capture_on_commit_callbacks):
    from annotation.accounts import tokens

    profile = person["profile"]
    user = profile.user
    tokens.issue(user)
    cache.set(f"throttle_submit_{user.pk}", [1.0], 60)
    if apps.is_installed("axes"):
        from axes.models import AccessAttempt, AccessFailureLog, AccessLog

        assert AccessAttempt.objects.filter(username=user.username).exists()
        AccessLog.objects.create(username=user.username, user_agent="x", path_info="/login/")
        AccessFailureLog.objects.create(username=user.username, user_agent="x", path_info="/")
    logged_in = {s.get_decoded().get(SESSION_KEY) for s in Session.objects.all()}
    assert str(user.pk) in logged_in  # the browser that joined
    assert LogEntry.objects.filter(object_id=str(user.pk)).exists()
    username = user.username

    _erase(person, capsys, django_capture_on_commit_callbacks)

    user.refresh_from_db()
    assert user.username.startswith("erased-") and not user.is_active
    assert (user.email, user.first_name, user.last_name, user.last_login) == ("", "", "", None)
    assert not user.has_usable_password()
    live = [s.get_decoded().get(SESSION_KEY) for s in Session.objects.all()]
    assert str(user.pk) not in live
    for rel in type(user)._meta.related_objects:  # tokens and all that goes with an account
        goes = not rel.many_to_many and rel.on_delete.__name__ == "CASCADE"
        if goes and rel.related_model is not AnnotatorProfile:
            assert not rel.related_model._base_manager.filter(**{rel.field.name: user.pk})
    assert not LogEntry.objects.filter(object_id=str(user.pk)).exists()
    assert cache.get(f"throttle_submit_{user.pk}") is None
    if apps.is_installed("axes"):
        for model in (AccessAttempt, AccessLog, AccessFailureLog):
            assert not model.objects.filter(username=username).exists()
    profile.refresh_from_db()
    assert profile.demographics == {} and profile.status == "ok"
    assert not Ranking.objects.filter(annotator=profile).exists()
    assert not profile.assignments.exists() and not profile.quota_seats.exists()
    assert not profile.status_changes.exists()
    assert not Participation.objects.filter(annotator=profile).exists()


@says(
    "It deletes every stored quality report, and every cached chart and validation report, "
    "and each is made again on its next view.",
    "It deletes the perspective reports computed on a snapshot that read the person's "
    "rankings, and the Perspectives page and the staff API queue them again when asked.",
    "Perspective reports are stored per checkpoint, snapshot and demographic field "
    "(`PerspectiveSummary`, `PerspectiveReport`), each group under the name its members gave.",
)
def test_reports_that_read_the_person_go_and_are_made_again(
    person, capsys, django_capture_on_commit_callbacks
):
    snapshot = person["snapshot"]
    groups = set(PerspectiveReport.objects.values_list("group", flat=True))
    assert person["identifiers"]["own words (faith)"] in groups  # a group of one, by name
    assert PerspectiveSummary.objects.exists() and QualityReport.objects.exists()

    _erase(person, capsys, django_capture_on_commit_callbacks)

    assert not PerspectiveReport.objects.exists() and not PerspectiveSummary.objects.exists()
    assert not QualityReport.objects.exists() and personal_cache.entries() == {}
    staff = get_user_model().objects.get(username="staffer")
    admin = Client()
    admin.force_login(staff)
    page = admin.get(reverse("dashboards:perspectives"), {"version": 1, "field": FREE_TEXT})
    assert "Computing the report of v1" in page.content.decode()
    queued = OutboxMessage.objects.filter(task="training.tasks.perspective_report")
    assert [m.args[1] for m in queued] == [snapshot.pk]
    study = person["profile"].study
    chart = admin.get(reverse("dashboards:quality-chart"), {"study": study.slug})
    assert chart.status_code == 404  # "The quality report is being computed."
    refresh = OutboxMessage.objects.get(task=quality_store.REFRESH_TASK)
    assert refresh.args == [False, 10, study.pk]


@pytest.fixture
def validation_study(db, media_root, tmp_path, settings):
    """A validation study ranked by 4 simulated annotators (tests.validation_helpers)."""
    import io

    from tests.validation_helpers import make_validation_study

    settings.STEREORANK = {**settings.STEREORANK, "QUALITY_N_BOOT": 20, "GROUP_K": 2}
    study = make_validation_study(tmp_path, occupations=2, images=2)
    call_command("simulate_annotators", "--study", study.slug, "--count", "4", stdout=io.StringIO())
    return study


@says(
    "The dashboards' charts are cached for a day and a validation study's report for ten "
    "minutes, in the cache's `personal:` namespace (`core/personal_cache.py`).",
    "It deletes every stored quality report, and every cached chart and validation report, "
    "and each is made again on its next view.",
)
def test_a_validation_report_cached_with_the_persons_pseudonym_goes_with_them(
    validation_study, django_capture_on_commit_callbacks
):
    from web.dashboards import charts, validation

    assert (charts.CACHE_SECONDS, validation.CACHE_SECONDS) == (24 * 60 * 60, 10 * 60)
    staff = get_user_model().objects.create_superuser("staffer", password="pw-123456")
    admin = Client()
    admin.force_login(staff)
    url = reverse("dashboards:validation-study", args=[validation_study.slug])
    assert admin.get(url).status_code == 200
    profile = AnnotatorProfile.objects.filter(study=validation_study).order_by("pk").first()
    name = pseudonym(profile.user_id)
    cached = personal_cache.entries()
    assert cached and all(personal_cache.PREFIX in key for key in cached)
    assert name in repr(cached)  # the report's per-annotator means carry the pseudonym

    with django_capture_on_commit_callbacks(execute=True):
        erase_annotator(profile, via=Erasure.Via.STAFF)

    assert personal_cache.entries() == {}
    assert admin.get(url).status_code == 200  # made again, without them
    assert personal_cache.entries() and name not in repr(personal_cache.entries())
