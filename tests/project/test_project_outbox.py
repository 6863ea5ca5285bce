"""The outbox (issue 33): work that follows a commit is written with it, sent after it
without waiting on the broker, and relayed when the send failed.

The brokers are ``tests.broker``'s.
"""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction

from core.models import OutboxMessage
from core.outbox import relay
from core.queue import RELAY_EVERY, after_commit
from tests.broker import age

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "annotation.tasks.adapt_overlap"


def test_a_send_after_commit_is_published_and_its_row_deleted(broker):
    with transaction.atomic():
        after_commit(TASK, 7)
        assert OutboxMessage.objects.get().args == [7]  # written with the transaction
        assert broker.published() == 0  # nothing leaves before the commit
    assert broker.published() == 1
    assert not OutboxMessage.objects.exists()


def test_a_rolled_back_transaction_sends_nothing_and_leaves_no_row(broker):
    with pytest.raises(RuntimeError), transaction.atomic():
        after_commit(TASK, 7)
        raise RuntimeError("the caller's work failed")
    assert broker.published() == 0
    assert not OutboxMessage.objects.exists()


def test_with_the_broker_down_the_send_fails_fast_and_the_relay_sends_it_later(
    broker, caplog, monkeypatch
):
    from core import queue

    monkeypatch.setattr(queue, "_last_warning", 0.0)  # one warning a minute per process
    broker.dead()
    started = time.perf_counter()
    with transaction.atomic():
        after_commit(TASK, 1)
        after_commit(TASK, 2)
    waited = time.perf_counter() - started
    print(f"two sends with the broker down: {waited * 1000:.0f} ms")  # figures: benchmarks/
    assert list(OutboxMessage.objects.values_list("args", flat=True)) == [[1], [2]]
    assert "broker unreachable" in caplog.text
    assert relay(grace=timedelta(0)) == (0, 2)  # still down: kept, the first one counted
    assert list(OutboxMessage.objects.values_list("attempts", flat=True)) == [1, 0]

    broker.live()
    assert relay() == (0, 2)  # younger than the grace: their requests may still send them
    age(60)
    assert relay() == (2, 0)
    assert broker.published() == 2
    assert relay() == (0, 0)  # nothing is sent twice by the relay


def test_a_submit_that_fills_a_task_is_stored_with_the_broker_down(
    broker, make_tasks, annotator, store_ranking, settings
):
    settings.STEREORANK = {
        **settings.STEREORANK,
        "ADAPTIVE_OVERLAP": {"CUT": 0.5, "CAP": 3},
        "SAMPLER": {**settings.STEREORANK["SAMPLER"], "EVERY": 0},  # no other send
    }
    (task,) = make_tasks(1, k=3, overlap=2)
    order = list(task.task_items.values_list("item_id", flat=True))
    broker.dead()
    store_ranking(annotator("a").profile, task, order)
    ranking = store_ranking(annotator("b").profile, task, order[::-1])  # the last slot
    assert ranking.pk is not None
    assert list(OutboxMessage.objects.values_list("task", "args")) == [(TASK, [task.pk])]
    broker.live()
    age(60)
    assert relay() == (1, 0) and broker.published() == 1


def test_beat_relays_the_outbox_and_a_worker_finds_the_task():
    from web.celery import app

    entry = app.conf.beat_schedule["relay-outbox"]
    assert entry == {"task": "core.tasks.relay_outbox", "schedule": RELAY_EVERY}
    assert RELAY_EVERY * 3 <= 60  # a row whose send failed goes within a minute
    app.loader.import_default_modules()  # what a starting worker does: autodiscovery
    assert "core.tasks.relay_outbox" in app.tasks


@pytest.fixture
def silent_broker(broker):
    """A broker address that takes the connection and never answers (a broker hung): each
    send waits its whole timeout. ``arrived`` is set once a send has connected."""
    import socket
    import threading

    from tests.broker import point_broker

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    arrived, held = threading.Event(), []

    def take() -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:  # closed at the end
                return
            held.append(client)
            arrived.set()

    threading.Thread(target=take, daemon=True).start()
    point_broker(f"redis://127.0.0.1:{server.getsockname()[1]}/0", {})
    yield arrived
    server.close()
    for client in held:
        client.close()
    broker.live()


def test_the_relay_holds_up_no_writer_while_the_broker_hangs(silent_broker):
    """The embedded mode's "database is locked": a relay that kept its transaction open
    across a send held SQLite's one write lock for as long as the broker took. While the
    relay waits on a hung broker, a portal's write with a short lock timeout goes through
    (SQLite and PostgreSQL alike)."""
    import threading

    from django.db import connection

    OutboxMessage.objects.create(task=TASK, args=[1])
    age(60)
    outcome: dict = {}

    def relay_in_a_worker() -> None:
        try:
            outcome["relay"] = relay(grace=timedelta(0))
        finally:
            connection.close()

    worker = threading.Thread(target=relay_in_a_worker)
    worker.start()
    try:
        assert silent_broker.wait(10), "the relay never reached the broker"
        with connection.cursor() as cursor:  # the portal: gives up on a lock after 0.2 s
            if connection.vendor == "sqlite":
                cursor.execute("PRAGMA busy_timeout = 200")
            else:
                cursor.execute("SET lock_timeout = '200ms'")
        with transaction.atomic():
            OutboxMessage.objects.create(task=TASK, args=[2])  # no "database is locked"
    finally:
        worker.join(30)
        connection.close()  # its short lock timeout goes with it
    assert outcome["relay"] == (0, 2)  # the hung send failed; both rows kept
    assert OutboxMessage.objects.get(args=[1]).attempts == 1
