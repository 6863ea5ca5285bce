"""A run started while the broker is down (issue 33): the request is answered, the run is
kept queued with its send in the outbox, and the relay sends it once the broker is back."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient
from training_study import FAST

from core.models import OutboxMessage
from core.outbox import relay
from tests.broker import age
from training.models import TrainingRun
from training.runs.dispatch import DISPATCH, dispatch_run
from training.runs.services import cancel_run
from training.snapshots.services import create_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_started_with_the_broker_down_is_sent_when_it_returns(study, staff, broker):
    snapshot = create_snapshot(include_synthetic=True)
    client = APIClient()
    client.force_authenticate(staff)
    broker.dead()
    r = client.post(
        "/api/training/runs/", {"snapshot": snapshot.pk, "hyperparameters": FAST}, format="json"
    )
    assert r.status_code == 201 and r.json()["status"] == "queued", r.content
    run = TrainingRun.objects.get(pk=r.json()["id"])
    (row,) = OutboxMessage.objects.all()
    assert (row.task, row.args) == (DISPATCH, [run.pk, run.celery_task_id, None])
    assert broker.published() == 0

    broker.live()
    age(60)
    assert relay() == (1, 0) and broker.published() == 1  # the dispatch
    broker.dead()  # gone again before the worker sends the run on: back in the outbox
    assert dispatch_run(*row.args) is False
    (again,) = OutboxMessage.objects.all()
    assert (again.task, again.args) == (DISPATCH, row.args)
    broker.live()
    age(60)
    assert relay() == (1, 0) and broker.published() == 2  # the dispatch, once more
    assert dispatch_run(*row.args) is True
    assert broker.published() == 3  # ... and the run on the gpu queue
    cancel_run(run)
    assert dispatch_run(*row.args) is False  # a second relay of a run no longer queued
    assert broker.published() == 3 and not OutboxMessage.objects.exists()
