"""A database that goes away just after a commit (issue 33, part 6; found by
benchmarks/faults.py): the outbox's send after the commit took the task, then could
not delete its row. The error escaped the commit hook, and Django's own report of a
failed hook raised again (a ``functools.partial`` has no ``__qualname__``), so the
participant whose ranking was stored got a 500. Now the send says it was sent and
leaves the row to the relay, which sends the task again (every outbox task is
idempotent).

The broker is Kombu's filesystem transport in a temporary folder; the database that
went away is a connection of this thread's own to nowhere (the test's own connection,
and its transaction, untouched).
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from celery import current_app
from django.db import connections, transaction

from core.models import OutboxMessage
from core.queue import after_commit, send_message
from tests.broker import point_broker
from tests.project.compose_stack import free_port

TASK = "annotation.tasks.adapt_overlap"


@pytest.fixture
def published(tmp_path):
    """A live filesystem broker; ``published()`` counts what it holds."""
    conf = current_app.conf
    before = conf.broker_url, conf.broker_transport_options
    folder = tmp_path / "queue"
    folder.mkdir()
    point_broker(
        "filesystem://",
        {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "control_folder": str(tmp_path / "control"),  # else ./control in the cwd
        },
    )
    yield lambda: len(list(folder.iterdir()))
    point_broker(*before)


@contextmanager
def database_gone():
    """This thread's ``default`` connection is one to no database, for a block."""
    original = connections["default"]
    nowhere = dict(original.settings_dict)
    if original.vendor == "sqlite":
        nowhere["NAME"] = "/nonexistent/stereorank/db.sqlite3"
    else:
        nowhere.update(HOST="127.0.0.1", PORT=str(free_port()))
    gone = type(original)(nowhere, alias="default")
    connections["default"] = gone
    try:
        yield
    finally:
        gone.close()
        connections["default"] = original


@pytest.mark.django_db
def test_a_sent_task_whose_row_cannot_be_deleted_is_no_error_and_keeps_its_row(published):
    message = OutboxMessage.objects.create(task=TASK, args=[7])
    with database_gone():
        assert send_message(message) is True  # no exception: the commit's answer stands
    assert published() == 1
    assert OutboxMessage.objects.filter(pk=message.pk).exists()  # the relay's, sent again


@pytest.mark.django_db
def test_the_commit_hook_itself_raises_nothing_when_the_database_went_away(published):
    with transaction.atomic():
        after_commit(TASK, 8)
        (hook,) = [func for _, func, _ in connections["default"].run_on_commit]
    with database_gone():
        hook()  # as Django runs it after the commit
    assert published() == 1
