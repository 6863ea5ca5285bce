"""A broker a test can take down: Kombu's filesystem transport in a temporary folder (a
message is a file, so what was published can be counted) and, when ``dead()``, a Redis URL
on a port nothing listens on."""

from __future__ import annotations

import contextlib
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone
from kombu import pools as kombu_pools


@pytest.fixture
def broker(tmp_path):
    """A live filesystem broker; ``broker.dead()`` points the app at a dead port instead,
    ``broker.published()`` counts the messages the live one holds. Each switch drops the
    app's pooled connection and producers, so a plain ``apply_async`` (not only the
    outbox's own sends) goes where the app now points, not to a broker an earlier test
    used."""
    conf = current_app.conf
    before = conf.broker_url, conf.broker_transport_options
    folder = tmp_path / "queue"
    folder.mkdir()
    control = tmp_path / "control"  # else Kombu makes ./control in the working directory
    live = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(control),
    }

    class Broker:
        def live(self):
            point_broker("filesystem://", live)

        def dead(self):
            point_broker("redis://127.0.0.1:9/0", {})

        def published(self) -> int:
            return len(list(folder.iterdir()))

    broker = Broker()
    broker.live()
    yield broker
    point_broker(*before)


def point_broker(url: str, options: dict) -> None:
    """Point the Celery app at the broker ``url`` with ``options``, closing its pooled
    connections and producers: else a plain ``apply_async`` keeps using the broker the
    pool was first made for."""
    app = current_app
    app.conf.broker_url, app.conf.broker_transport_options = url, options
    for pool in (app._pool, app.amqp._producer_pool):
        if pool is not None:
            with contextlib.suppress(Exception):  # a broker already gone: nothing to close
                pool.force_close_all()
    app._pool = app.amqp._producer_pool = None
    # kombu keeps its producer pools in a registry keyed by the connection's parameters:
    # the closed one would come back for the next connection to the same broker ("Acquire
    # on closed pool" in a later test's eager send)
    with contextlib.suppress(Exception):
        kombu_pools.reset()


def age(seconds: float) -> None:
    """Make every outbox row ``seconds`` old (past the relay's grace)."""
    from core.models import OutboxMessage

    OutboxMessage.objects.update(created_at=timezone.now() - timedelta(seconds=seconds))
