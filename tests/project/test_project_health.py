"""/healthz (web/health.py): what it checks, when it says 503, what it never says,
and a real worker's heartbeat (embedded mode: filesystem broker, file-based cache)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.core.cache import caches
from django.db import OperationalError, connections

from core import heartbeats
from web import health

REPO = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def health_settings(settings, tmp_path):
    """A private heartbeat cache and a filesystem broker whose folders exist."""
    settings.CACHES = {
        **settings.CACHES,
        "health": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"health-{uuid.uuid4()}",
        },
    }
    folders = {name: tmp_path / name for name in ("in", "processed")}
    for folder in folders.values():
        folder.mkdir()
    settings.CELERY_BROKER_URL = "filesystem://"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(folders["in"]),
        "data_folder_out": str(folders["in"]),
        "processed_folder": str(folders["processed"]),
    }
    settings.HEALTH = {
        "HEARTBEAT_SECONDS": 15,
        "STALE_AFTER": 60,
        "REQUIRED": ["database", "broker", "worker:default", "worker:gpu"],
        "HEARTBEAT_FILE": "",
    }
    return settings


def _beat(*components: str, ago: float = 0.0) -> None:
    caches["health"].set_many({heartbeats.heartbeat_key(c): time.time() - ago for c in components})


def test_heartbeat_state_at_the_boundary():
    # hand-worked: a beat at t=100 s is 60 s old at t=160 s: up when stale_after is 60
    assert health.heartbeat_state(100.0, 160.0, 60) == {"ok": True, "age_s": 60.0}
    assert health.heartbeat_state(100.0, 160.5, 60) == {"ok": False, "age_s": 60.5}
    assert health.heartbeat_state(None, 160.0, 60) == {"ok": False, "age_s": None}
    # a clock a little ahead on the worker's machine is not a negative age
    assert health.heartbeat_state(161.0, 160.0, 60) == {"ok": True, "age_s": 0.0}


@pytest.mark.django_db
def test_all_up_is_200_with_the_report(client, health_settings):
    _beat("worker:default", "worker:gpu")
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["down"] == []
    checks = body["checks"]
    assert checks["database"] == {"ok": True}
    assert checks["broker"] == {"ok": True, "kind": "filesystem"}
    assert checks["worker:default"]["ok"] and checks["worker:default"]["age_s"] < 5
    # beat is reported but not required by default
    assert checks["beat"] == {"ok": False, "age_s": None}
    assert "no-cache" in response["Cache-Control"]
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_missing_and_stale_workers_are_503(client, health_settings):
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["down"] == ["worker:default", "worker:gpu"]

    _beat("worker:default", ago=59)
    _beat("worker:gpu", ago=61)  # older than STALE_AFTER (60 s)
    body = client.get("/healthz").json()
    assert body["down"] == ["worker:gpu"] and body["checks"]["worker:default"]["ok"]

    health_settings.HEALTH = {**health_settings.HEALTH, "REQUIRED": ["database", "worker:default"]}
    assert client.get("/healthz").status_code == 200


@pytest.mark.django_db
def test_a_broker_that_does_not_answer_is_503_without_its_address(client, health_settings):
    _beat("worker:default", "worker:gpu")
    port = _closed_port()
    health_settings.CELERY_BROKER_URL = f"redis://user:hunter2@127.0.0.1:{port}/0"
    started = time.monotonic()
    response = client.get("/healthz")
    assert time.monotonic() - started < health.CHECK_TIMEOUT + 3
    assert response.status_code == 503
    body = response.json()
    assert body["down"] == ["broker"]
    assert body["checks"]["broker"]["ok"] is False and body["checks"]["broker"]["kind"] == "redis"
    assert "hunter2" not in response.content.decode() and str(port) not in response.content.decode()


@pytest.mark.django_db
def test_a_missing_broker_folder_is_down(client, health_settings, tmp_path):
    _beat("worker:default", "worker:gpu")
    options = health_settings.CELERY_BROKER_TRANSPORT_OPTIONS
    health_settings.CELERY_BROKER_TRANSPORT_OPTIONS = {**options, "data_folder_in": "/nonexistent"}
    assert client.get("/healthz").json()["down"] == ["broker"]


@pytest.mark.django_db
def test_a_database_error_is_503_and_its_message_stays_in_the_log(
    client, health_settings, monkeypatch
):
    _beat("worker:default", "worker:gpu")

    def refuse():
        raise OperationalError('FATAL: password authentication failed for user "alice"')

    monkeypatch.setattr(connections["default"], "cursor", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == {"ok": False, "error": "OperationalError"}
    assert "alice" not in response.content.decode()


@pytest.mark.django_db
def test_https_redirect_spares_healthz_and_trusts_the_proxy_header_only_when_told(
    client, health_settings
):
    health_settings.SECURE_SSL_REDIRECT = True
    response = client.get("/login/")
    assert response.status_code == 301 and response["Location"] == "https://testserver/login/"
    # without SECURE_PROXY_SSL_HEADER a client's X-Forwarded-Proto is ignored
    assert client.get("/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 301
    health_settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert client.get("/login/", HTTP_X_FORWARDED_PROTO="https").status_code == 200
    assert client.get("/healthz").status_code in {200, 503}  # plain HTTP, not redirected


def test_probe_host_and_url():
    assert health.probe_host("study.example.org,localhost") == "study.example.org"
    assert health.probe_host(" .example.org") == "example.org"
    assert health.probe_host("*") == "localhost"
    assert health.probe_host("") == "localhost"
    assert health.probe_url("0.0.0.0:8000") == "http://127.0.0.1:8000/healthz"
    assert health.probe_url("10.0.0.5:9000") == "http://10.0.0.5:9000/healthz"


def _probe(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "web.health", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_real_worker_beats_from_its_own_thread(settings, tmp_path):
    """Embedded mode, as bin/run: the worker's heartbeat lands in the file-based cache
    under VAR_DIR that /healthz reads, and in its own file, every second here."""
    var = tmp_path / "var"
    beat_file = tmp_path / "worker.heartbeat"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "STEREORANK_EMBEDDED": "true",
        "STEREORANK_VAR_DIR": str(var),
        "STEREORANK_HEARTBEAT_FILE": str(beat_file),
        "STEREORANK_HEARTBEAT_SECONDS": "1",
        "STEREORANK_HEARTBEAT_STALE_AFTER": "5",
    }
    for key in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        env.pop(key, None)
    assert _probe(env, "--heartbeat").returncode == 1  # no worker yet
    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "web", "worker", "-Q", "default", "-P", "solo"]
            + ["--without-gossip", "--without-mingle", "--loglevel", "INFO"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while not beat_file.exists():
            assert worker.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        first = beat_file.stat().st_mtime
        while beat_file.stat().st_mtime == first:  # a second beat: the thread runs
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        assert _probe(env, "--heartbeat").returncode == 0
        settings.CACHES = {
            **settings.CACHES,
            "health": {
                "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                "LOCATION": var / "health",
            },
        }
        states = health.check_heartbeats(["worker:default", "worker:gpu"], stale_after=5)
        assert states["worker:default"]["ok"] and states["worker:default"]["age_s"] < 3
        assert states["worker:gpu"] == {"ok": False, "age_s": None}
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert not beat_file.exists()  # a stopped worker fails its probe at once
