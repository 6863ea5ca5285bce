"""Celery tasks by name: services queue work without importing ``training.tasks``
(which imports them), and a task sent from a transaction leaves only once it commits."""

from __future__ import annotations

from celery import current_app
from celery.canvas import Signature
from django.db import transaction


def task(name: str, *args) -> Signature:
    """The named task with ``args`` (immutable: a chain passes it no result)."""
    return current_app.signature(name, args, immutable=True)


def after_commit(name: str, *args, robust: bool = False) -> None:
    """Send the named task once the caller's transaction commits (at once outside one).

    ``robust``: a send that fails (the broker down) is logged, not raised: for a send
    that only refreshes derived data, after a commit the caller must not see fail.
    """
    transaction.on_commit(task(name, *args).apply_async, robust=robust)
