"""A broker a test can take down: Kombu's filesystem transport in a temporary folder (a
message is a file, so what was published can be counted) and, when ``dead()``, a Redis URL
on a port nothing listens on."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone


@pytest.fixture
def broker(tmp_path):
    """A live filesystem broker; ``broker.dead()`` points the app at a dead port instead,
    ``broker.published()`` counts the messages the live one holds. Each switch drops the
    app's pooled connection and producers, so a plain ``apply_async`` (not only the
    outbox's own sends) goes where the app now points, not to a broker an earlier test
    used."""
    app = current_app
    conf = app.conf

    def point(url, options):
        conf.broker_url, conf.broker_transport_options = url, options
        app._pool = app.amqp._producer_pool = None

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
            point("filesystem://", live)

        def dead(self):
            point("redis://127.0.0.1:9/0", {})

        def published(self) -> int:
            return len(list(folder.iterdir()))

    broker = Broker()
    broker.live()
    yield broker
    point(*before)


def age(seconds: float) -> None:
    """Make every outbox row ``seconds`` old (past the relay's grace)."""
    from core.models import OutboxMessage

    OutboxMessage.objects.update(created_at=timezone.now() - timedelta(seconds=seconds))
