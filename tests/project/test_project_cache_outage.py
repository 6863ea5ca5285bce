"""The cache that counts the throttles is down (a dead port, so the shared Redis is left
alone): API submits, logins, scoring and entry links go on, never a 500, and the
outage is logged once; with the cache back the limits hold again."""

import logging
import time

import pytest
from crowd_fakes import join
from django.core.cache import caches
from django.test import override_settings
from django.urls import reverse

from annotation.assignment.next_task import next_task
from annotation.models import Ranking, Study
from core import throttling

DEAD = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}


@pytest.fixture
def cache_down(monkeypatch):
    monkeypatch.setattr(throttling, "_last_warning", [0.0])
    with override_settings(CACHES=DEAD):
        yield
    caches["default"].clear()


def test_an_api_submit_and_a_login_go_on_while_the_throttle_cache_is_down(
    make_tasks, annotator, cache_down, caplog
):
    make_tasks(1, k=3)
    api = annotator("during-the-outage")
    assignment = next_task(api.profile)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="core.throttling"):
        made = api.post(
            f"/api/tasks/{assignment.task_id}/ranking/",
            {"order": assignment.shown_order},
            format="json",
        )
        token = api.post("/api/auth/token/", {"username": "during-the-outage", "password": "wrong"})
    assert made.status_code == 201 and Ranking.objects.count() == 1
    assert token.status_code == 400  # refused for its password, not a 500
    assert time.monotonic() - started < 5  # connection refused: no long wait
    warnings = [r.getMessage() for r in caplog.records if r.name == "core.throttling"]
    assert len(warnings) == 1 and "cache is unreachable" in warnings[0]  # once a minute


def test_an_entry_link_admits_a_participant_while_the_throttle_cache_is_down(
    db, client, cache_down
):
    Study.objects.create(slug="wave-1", name="Wave 1", platform="generic")
    response = join(client, reverse("portal:join", args=["wave-1"]) + "?pid=p-1")
    assert response.status_code == 302  # logged in and sent on, not a 500
