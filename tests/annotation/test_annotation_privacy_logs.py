"""docs/privacy.md's sentences on what expires and on log lines: sessions, django-axes'
log-in attempts, rate-limit counters, and how request lines and log-in failures are
logged (each test quotes the sentences it checks; test_annotation_privacy_page.py
checks that every sentence is quoted)."""

from __future__ import annotations

import logging
import os
import runpy
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from privacy_claims import says
from rest_framework.test import APIRequestFactory

from annotation.participants.traces import forget_expired
from annotation.rankings.exports import pseudonym

ROOT = Path(__file__).resolve().parents[2]


@says(
    "A logged-in browser's session is kept in the database (`django_session`) until it "
    "expires, `SESSION_COOKIE_AGE` seconds (two weeks by default) after it was last changed, "
    "and a daily task deletes expired sessions.",
)
def test_sessions_expire_and_a_daily_task_deletes_them(portal_client):
    from web.celery import FORGET_EXPIRED_EVERY, app

    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.db"
    assert Session._meta.db_table == "django_session"
    assert settings.SESSION_COOKIE_AGE == 14 * 24 * 60 * 60
    client = portal_client("lou")
    live = Session.objects.get(session_key=client.session.session_key)
    age = (live.expire_date - timezone.now()).total_seconds()
    assert settings.SESSION_COOKIE_AGE - 60 < age <= settings.SESSION_COOKIE_AGE
    old = Session.objects.create(
        session_key="x" * 32, session_data="e30", expire_date=timezone.now() - timedelta(1)
    )
    assert forget_expired()["sessions"] == 1
    assert not Session.objects.filter(pk=old.pk) and Session.objects.filter(pk=live.pk)
    entry = app.conf.beat_schedule["forget-expired"]
    assert entry["task"] == "annotation.tasks.forget_expired"
    assert FORGET_EXPIRED_EVERY == entry["schedule"] == 24 * 60 * 60


@pytest.mark.skipif(not apps.is_installed("axes"), reason="django-axes is not installed")
@says(
    "A failed log-in is recorded (`axes_accessattempt`) with the username typed, the client's "
    "address and its user agent.",
    "Such a record stops counting `STEREORANK_LOCKOUT_MINUTES` minutes (30 by default) after "
    "the last failure, and the next log-in attempt or the daily task after that deletes it.",
    "Successful log-ins are not recorded.",
    "A failed log-in's log line names the account by pseudonym and the address by a keyed hash "
    "(`annotation/participants/log_names.py`).",
)
def test_log_in_attempts_are_kept_for_their_cool_off_and_logged_by_pseudonym(portal_client, caplog):
    from axes.models import AccessAttempt, AccessLog

    if "STEREORANK_LOCKOUT_MINUTES" not in os.environ:
        cool_off = settings.AXES_COOLOFF_TIME
        assert cool_off == timedelta(minutes=30)
    assert AccessAttempt._meta.db_table == "axes_accessattempt"
    user = portal_client("mona").profile.user
    stale = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(minutes=1)
    for name in ("old-one", "old-two"):
        row = AccessAttempt.objects.create(
            username=name, user_agent="ua", path_info="/", failures_since_start=1, get_data="",
            post_data="", http_accept="*/*", ip_address="198.18.1.1",
        )  # fmt: skip
        AccessAttempt.objects.filter(pk=row.pk).update(attempt_time=stale)
    caplog.set_level(logging.INFO)
    browser = Client(REMOTE_ADDR="198.18.3.4", HTTP_USER_AGENT="Curious/1.0")
    browser.post(reverse("portal:login"), {"username": user.username, "password": "wrong"})
    attempt = AccessAttempt.objects.get(username=user.username)
    assert (attempt.ip_address, attempt.user_agent) == ("198.18.3.4", "Curious/1.0")
    assert not AccessAttempt.objects.filter(username__startswith="old-")  # the next attempt
    failures = [r.getMessage() for r in caplog.records if "login failure" in r.getMessage()]
    assert failures and all(pseudonym(user.pk) in m and "ip-" in m for m in failures)
    assert not [m for m in failures if user.username in m or "198.18.3.4" in m]
    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=stale)
    assert forget_expired()["login_attempts"] == 1  # the daily task
    ok = Client(REMOTE_ADDR="198.18.3.5")
    ok.post(reverse("portal:login"), {"username": user.username, "password": "pw-123456"})
    assert "_auth_user_id" in ok.session and not AccessLog.objects.exists()


@says(
    "Rate-limit counters are kept in the cache under the account's id or the client's address "
    "for at most an hour."
)
def test_rate_limit_counters_last_an_hour_at_most(annotator):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle
    from rest_framework.views import APIView

    from core.throttling import ScopedRateThrottle

    for rate in api_settings.DEFAULT_THROTTLE_RATES.values():
        assert SimpleRateThrottle.parse_rate(None, rate)[1] <= 60 * 60, rate
    view = APIView()
    view.throttle_scope = "auth"
    throttle = ScopedRateThrottle()  # the class the API's views use
    throttle.scope = view.throttle_scope  # as allow_request sets it
    request = APIView().initialize_request(APIRequestFactory().post("/", REMOTE_ADDR="198.18.9.9"))
    assert throttle.get_cache_key(request, view) == "throttle_auth_198.18.9.9"
    user = annotator("nia").profile.user
    request = APIView().initialize_request(APIRequestFactory().post("/"))
    request.user = user
    assert throttle.get_cache_key(request, view) == f"throttle_auth_{user.pk}"


@says(
    "Request lines are logged without their query string, which on an entry link carries the "
    "platform's participant id."
)
def test_request_lines_are_logged_without_query_strings():
    captured: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            captured.append(self.format(record))

    server = logging.getLogger("django.server")
    keep = Keep()
    server.addHandler(keep)
    try:  # as django's development server logs a request line
        server.info('"%s" %s %s', "GET /join/w/?PROLIFIC_PID=5eed0123 HTTP/1.1", "302", "0")
    finally:
        server.removeHandler(keep)
    assert captured == ['"GET /join/w/?[query removed] HTTP/1.1" 302 0']
    assert "no_query_strings" in settings.LOGGING["handlers"]["console"]["filters"]


@says(
    "gunicorn's access log, when one is asked for, carries no client address, query string, "
    "referrer or user agent."
)
def test_gunicorn_access_lines_carry_no_address_query_referrer_or_agent():
    from types import SimpleNamespace

    from gunicorn.config import Config
    from gunicorn.glogging import Logger, SafeAtoms

    fmt = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["access_log_format"]
    config = Config()
    config.set("access_log_format", fmt)
    environ = {  # a participant arriving by a Prolific link
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/join/w/?PROLIFIC_PID=5eed0123",
        "PATH_INFO": "/join/w/",
        "QUERY_STRING": "PROLIFIC_PID=5eed0123",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "198.18.5.5",
        "HTTP_REFERER": "https://app.prolific.com/studies?PROLIFIC_PID=5eed0123",
        "HTTP_USER_AGENT": "Curious/1.0",
    }
    response = SimpleNamespace(status="302 Found", sent=0, headers=[])
    atoms = Logger(config).atoms(response, [("USER-AGENT", "Curious/1.0")], environ, timedelta(0))
    line = fmt % SafeAtoms(atoms)
    assert "GET /join/w/ HTTP/1.1" in line
    for secret in ("5eed0123", "198.18.5.5", "prolific.com", "Curious"):
        assert secret not in line


@says(
    "A participant's resume link is logged without its secret, in the development server's "
    "request lines and in gunicorn's logs."
)
def test_resume_links_are_logged_without_their_secret():
    captured: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            captured.append(self.format(record))

    on_starting = runpy.run_path(str(ROOT / "gunicorn.conf.py"))["on_starting"]
    server, access = logging.getLogger("django.server"), logging.getLogger("gunicorn.access")
    before = list(access.filters)
    keep = Keep()
    for logger in (server, access):
        logger.addHandler(keep)
    try:
        on_starting(None)  # as gunicorn's arbiter calls it
        line = "GET /join/w/resume/Zx9-_secretPart/ HTTP/1.1"
        server.info('"%s" %s %s', line, "302", "0")  # the development server's form
        access.info(f'[06/Dec/2026:10:00:00] "{line}" 302 0 3ms')  # gunicorn's: formatted
    finally:
        for logger in (server, access):
            logger.removeHandler(keep)
        access.filters[:] = before
    assert len(captured) == 2
    assert not any("Zx9-_secretPart" in text for text in captured)
    assert all("/join/w/resume/[secret removed]/" in text for text in captured)
    from core.log_filters import without_query  # a logger configured twice filters twice

    assert [without_query(text) for text in captured] == captured


@says(
    "stereorank writes its logs to the console only, so how long they are kept is the "
    "operator's choice."
)
def test_logs_go_to_the_console_only():
    handlers = settings.LOGGING["handlers"].values()
    assert {h["class"] for h in handlers} == {"logging.StreamHandler"}
    assert all("filename" not in h and "stream" not in h for h in handlers)
