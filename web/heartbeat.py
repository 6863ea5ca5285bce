"""Workers' and beat's heartbeats: a daemon thread writes ``time.time()`` under
``heartbeat:<component>`` in the ``health`` cache (and touches a file for a container's
own probe) every ``HEARTBEAT_SECONDS``, so a solo worker busy training still answers.

Started by the Celery signals in ``web/celery.py``, read by ``/healthz`` (``web/health.py``);
this module imports neither, so the two never import each other. Beat embedded in a worker
(``celery worker -B``, ``bin/run``) is a forked child of it: the child's heartbeat is its
own, and a parent's copied by the fork is left alone (its thread did not come along, and
its file is the parent's).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from core.heartbeats import heartbeat_key

log = logging.getLogger(__name__)


class Heartbeat(threading.Thread):
    """Writes ``time.time()`` for some components every ``interval`` seconds (daemon thread)."""

    def __init__(self, components: list[str], interval: float, ttl: float, file: str = "") -> None:
        super().__init__(name="stereorank-heartbeat", daemon=True)
        self.components, self.interval, self.ttl = components, interval, ttl
        self.file = Path(file) if file else None
        self.stopped = threading.Event()
        self.pid = os.getpid()

    def beat_once(self) -> None:
        """One heartbeat: the cache keys (for /healthz) and the local file (for a probe)."""
        from django.core.cache import caches

        now = time.time()
        try:
            caches["health"].set_many(
                {heartbeat_key(c): now for c in self.components}, timeout=self.ttl
            )
        except Exception as exc:  # noqa: BLE001 - a missed beat shows as stale, not a crash
            log.warning("heartbeat not written: %r", exc)
            return
        if self.file:
            self.file.touch()

    def run(self) -> None:
        while not self.stopped.wait(self.interval):
            self.beat_once()

    def stop(self) -> None:
        """Stop beating (the cache keys go stale on their own: other workers may share them)."""
        self.stopped.set()
        if self.file:
            self.file.unlink(missing_ok=True)


_heartbeat: Heartbeat | None = None


def start_heartbeat(components: list[str]) -> Heartbeat:
    """Beat once now, then from a daemon thread; one heartbeat per process."""
    global _heartbeat
    from django.conf import settings

    if _heartbeat is not None and _heartbeat.pid == os.getpid():
        _heartbeat.stop()
    health = settings.HEALTH
    _heartbeat = Heartbeat(
        components, health["HEARTBEAT_SECONDS"], health["STALE_AFTER"], health["HEARTBEAT_FILE"]
    )
    _heartbeat.beat_once()
    _heartbeat.start()
    log.info("heartbeat for %s every %ss", ", ".join(components), health["HEARTBEAT_SECONDS"])
    return _heartbeat


def stop_heartbeat() -> None:
    """Stop this process's heartbeat, if any (a worker shutting down)."""
    if _heartbeat is not None and _heartbeat.pid == os.getpid():
        _heartbeat.stop()
