"""``/healthz`` and the heartbeats behind it; ``python -m web.health`` is the probe.

The report (JSON, no authentication, nothing personal: check names, ok flags, ages,
exception class names) covers:

- ``database``: ``SELECT 1`` on the default connection (PostgreSQL connects with a
  5 s timeout, settings ``DATABASE_CONNECT_TIMEOUT``);
- ``broker``: a Redis ``PING`` with a 2 s timeout, or in the embedded mode the
  filesystem broker's folders being writable (other transports: one kombu connect);
- ``worker:<queue>`` and ``beat``: the age of the newest heartbeat. Every worker,
  once ready, and beat, once started (signals in ``web/celery.py``), write ``time.time()`` under
  ``heartbeat:<component>`` in the ``health`` cache (Redis; files under VAR_DIR in
  the embedded mode) every ``HEARTBEAT_SECONDS`` from a daemon thread (``web/heartbeat.py``),
  so a solo worker busy with a five-hour training run still answers. A heartbeat older
  than ``STALE_AFTER`` (or none) is down.

200 when every check in ``settings.HEALTH["REQUIRED"]`` is ok, else 503 with
``down`` naming the failing ones. A heartbeat proves that the process lives and
reaches the cache, not that its consumer loop is healthy.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import urllib.error
import urllib.request

from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from core.heartbeats import heartbeat_key

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 2.0
QUEUES = ("default", "gpu")


def heartbeat_state(at: float | None, now: float, stale_after: float) -> dict:
    """Up when a heartbeat exists and ``now - at <= stale_after``; the age in seconds."""
    if at is None:
        return {"ok": False, "age_s": None}
    age = max(0.0, now - at)
    return {"ok": age <= stale_after, "age_s": round(age, 1)}


def _failure(exc: BaseException, what: str) -> dict:
    """A failed check: the exception class only (its text may name hosts or users)."""
    log.warning("health: %s failed: %r", what, exc)
    return {"ok": False, "error": type(exc).__name__}


def check_database() -> dict:
    """``SELECT 1`` on the default database."""
    from django.db import connections

    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure is "down", never a 500
        return _failure(exc, "database")
    return {"ok": True}


def check_broker(url: str, transport_options: dict, timeout: float = CHECK_TIMEOUT) -> dict:
    """Reach the Celery broker: Redis PING, filesystem folders writable, else one connect."""
    scheme = url.split("://", 1)[0].split("+")[-1]
    try:
        if scheme in {"redis", "rediss"}:
            import redis

            client = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout
            )
            try:
                client.ping()
            finally:
                client.close()
        elif scheme == "filesystem":
            keys = ("data_folder_in", "data_folder_out", "processed_folder")
            for folder in {transport_options.get(key, ".") for key in keys}:
                if not os.access(folder, os.W_OK | os.X_OK):
                    raise PermissionError("a broker folder is missing or not writable")
        else:
            from web.celery import app

            with app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=1, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - any failure is "down", never a 500
        return {**_failure(exc, "broker"), "kind": scheme}
    return {"ok": True, "kind": scheme}


def check_heartbeats(components: list[str], stale_after: float) -> dict[str, dict]:
    """Each component's heartbeat state, read from the ``health`` cache."""
    from django.core.cache import caches

    try:
        found = caches["health"].get_many([heartbeat_key(c) for c in components])
    except Exception as exc:  # noqa: BLE001 - the cache down means "no heartbeat known"
        failure = _failure(exc, "heartbeat cache")
        return {c: {**failure, "age_s": None} for c in components}
    now = time.time()
    return {c: heartbeat_state(found.get(heartbeat_key(c)), now, stale_after) for c in components}


def report() -> tuple[bool, dict]:
    """Run every check: (all required ok, the JSON-ready report)."""
    from django.conf import settings

    health = settings.HEALTH
    required = list(health["REQUIRED"])
    components = [f"worker:{q}" for q in QUEUES] + ["beat"]
    components += [c for c in required if c.startswith("worker:") and c not in components]
    checks = {
        "database": check_database(),
        "broker": check_broker(
            settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT_OPTIONS
        ),
        **check_heartbeats(components, health["STALE_AFTER"]),
    }
    down = [name for name in required if not checks.get(name, {"ok": False})["ok"]]
    return not down, {"status": "unavailable" if down else "ok", "down": down, "checks": checks}


@never_cache
@require_safe
def healthz(request):
    """GET /healthz: 200 when everything required is up, else 503; always the JSON report."""
    from django.http import JsonResponse

    ok, body = report()
    return JsonResponse(body, status=200 if ok else 503)


urlpatterns = [path("healthz", healthz, name="healthz")]


# The probe (compose health checks): standard library only, no Django set-up.


def probe_host(allowed_hosts: str) -> str:
    """A Host header Django accepts: the first DJANGO_ALLOWED_HOSTS entry made literal."""
    first = next((h.strip() for h in allowed_hosts.split(",") if h.strip()), "localhost")
    return "localhost" if first == "*" else first.lstrip(".")


def probe_url(bind: str) -> str:
    """``/healthz`` on this machine from gunicorn's bind (``0.0.0.0:8000`` -> 127.0.0.1:8000)."""
    host, _, port = bind.rpartition(":")
    host = "127.0.0.1" if host in {"", "0.0.0.0", "[::]"} else host
    return f"http://{host}:{port or 8000}/healthz"


def probe_server(url: str, host: str, require_ok: bool, timeout: float = 10) -> int:
    """0 when the server answers with the report (200, or 503 unless ``require_ok``)."""
    request = urllib.request.Request(url, headers={"Host": host, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except OSError as error:
        print(f"{url}: {error}", file=sys.stderr)
        return 1
    print(status, body.decode(errors="replace"))
    try:
        json.loads(body)
    except ValueError:
        return 1
    return 0 if status == 200 or (status == 503 and not require_ok) else 1


def probe_file(file: str, max_age: float) -> int:
    """0 when ``file`` was touched within ``max_age`` seconds (this container's heartbeat)."""
    try:
        age = time.time() - os.path.getmtime(file)
    except OSError as error:
        print(f"no heartbeat: {error}", file=sys.stderr)
        return 1
    print(f"heartbeat {age:.0f} s old")
    return 0 if age <= max_age else 1


def main(argv: list[str] | None = None) -> int:
    """``python -m web.health [--require-ok | --heartbeat]``: the compose health checks."""
    parser = argparse.ArgumentParser(prog="python -m web.health", description=main.__doc__)
    parser.add_argument("--url", default=probe_url(os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")))
    parser.add_argument("--require-ok", action="store_true", help="A 503 fails too.")
    parser.add_argument(
        "--heartbeat",
        action="store_true",
        help="Check this process's heartbeat file (STEREORANK_HEARTBEAT_FILE) instead.",
    )
    args = parser.parse_args(argv)
    if args.heartbeat:
        file = os.environ.get("STEREORANK_HEARTBEAT_FILE", "")
        max_age = float(os.environ.get("STEREORANK_HEARTBEAT_STALE_AFTER", 60))
        return probe_file(file, max_age) if file else 1
    host = probe_host(os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost"))
    return probe_server(args.url, host, args.require_ok)


if __name__ == "__main__":
    sys.exit(main())
