"""Celery tasks by name: services queue work without importing ``training.tasks``
(which imports them), and work that must follow a commit goes through the outbox
(``core.models.OutboxMessage``): never lost when the broker is down, never sent for a
transaction that rolled back, and never a wait on the broker in a request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from functools import partial

from celery import current_app
from celery.canvas import Signature
from django.db import DatabaseError, transaction
from kombu import Connection
from kombu.exceptions import OperationalError

log = logging.getLogger(__name__)

SEND_TIMEOUT = 0.5
"""Seconds a send may wait for the broker's connection or reply: a request never waits on
the broker longer (the outbox keeps what was not sent)."""

RELAY_EVERY = 20.0
"""Seconds between two relays of the outbox (``core.outbox``): a row whose send failed
goes within this long of the broker's return."""

_last_warning = 0.0


def task(name: str, *args) -> Signature:
    """The named task with ``args`` (immutable: a chain passes it no result)."""
    return current_app.signature(name, args, immutable=True)


def after_commit(name: str, *args) -> None:
    """Send the named task once the caller's transaction commits (at once outside one),
    through the outbox: its row is written now, in the caller's transaction, and deleted
    once the broker took the task; a send that fails leaves it for the relay
    (``core.outbox``). ``args`` must be JSON values. The task must be idempotent."""
    from core.models import OutboxMessage

    message = OutboxMessage.objects.create(task=name, args=list(args))
    transaction.on_commit(partial(send_message, message), robust=True)


def send_message(message) -> bool:
    """Send one outbox row's task and delete the row; False (row kept) if the broker did
    not take it. It never raises: it runs after the caller's commit, whose answer must not
    fail. A sent task whose row the database cannot delete now (it went away after the
    commit: a restart) keeps its row, and the relay sends it again (idempotent tasks)."""
    if not send_now(message.task, message.args):
        return False
    try:
        type(message).objects.filter(pk=message.pk).delete()
    except DatabaseError as error:
        log.warning("%s sent; its outbox row stays until the relay (%s)", message.task, error)
    return True


def send_now(name: str, args) -> bool:
    """Publish the task once: no retries, ``SEND_TIMEOUT`` at most, no result subscription
    (fire and forget), on this thread's broker connection (kept: a connection and its
    declarations cost about 2 ms of CPU a send when made anew). False, and a warning at
    most once a minute per process, if the broker is unreachable; a kept connection that
    fails is dropped and the send tried once on a new one (a broker restarted meanwhile).
    """
    global _last_warning
    while True:
        kept = getattr(_local, "connection", None) is not None
        try:
            connection = _connection()
            task(name, *args).apply_async(connection=connection, retry=False, ignore_result=True)
            return True
        except (OperationalError, OSError) as error:  # unreachable: the outbox keeps it
            _drop_connection()
            if kept:
                continue  # a kept connection the broker closed (a restart): once, anew
            if time.monotonic() - _last_warning > 60:
                _last_warning = time.monotonic()
                log.warning("broker unreachable, %s left in the outbox: %s", name, error)
            return False


_local = threading.local()


def _connection() -> Connection:
    """This thread's connection to the broker the app names now, with ``SEND_TIMEOUT``."""
    url = current_app.conf.broker_url
    options = {
        **(current_app.conf.broker_transport_options or {}),
        "max_retries": 0,
        "socket_connect_timeout": SEND_TIMEOUT,
        "socket_timeout": SEND_TIMEOUT,
    }
    kept = getattr(_local, "connection", None)
    if kept is not None and _local.made_for == (url, repr(options)):
        return kept
    _drop_connection()
    _local.connection = Connection(url, connect_timeout=SEND_TIMEOUT, transport_options=options)
    _local.made_for = (url, repr(options))
    return _local.connection


def _drop_connection() -> None:
    kept = getattr(_local, "connection", None)
    _local.connection = None
    if kept is not None:
        with contextlib.suppress(OperationalError, OSError):  # the broker dropped it already
            kept.release()
