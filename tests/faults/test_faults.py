"""The fault suite (issue 33, part 6): the app served by gunicorn on a private PostgreSQL
and Redis (tests/faults/stack.py: started here, on ports of their own; the machine's own
services are never touched), annotators ranking through the API, and one fault per test:

- PostgreSQL restarted under load: no 500, every outage answered 503, every ranking the
  server acknowledged stored once, none it did not;
- Redis killed under load: no error at all, submits stored while it is down, and what
  the outbox held (the checks after a submit, a checkpoint's report) relayed once back;
- a gunicorn worker killed after the commit, before the answer: the client's retry gets
  200 and the ranking is stored once;
- the database read-only: a clear 503, nothing half written, stored when retried.

The private database is a ``pg_dump`` copy of the migrated test database (no
migrations run here), seeded by ``load.seed`` through this process's ORM. A worker
killed mid-run is tests/training/test_training_worker.py's; a full ``var/`` disk is
test_faults_disk.py's. ``benchmarks/faults.py`` repeats these scenarios and times them.
"""

from __future__ import annotations

import os
import statistics
from contextlib import contextmanager

import pytest
from django.db import connection

from tests.faults import scenarios
from tests.faults.load import seed
from tests.faults.stack import Stack, missing, pointed_at
from web.views import RETRY_AFTER, UNAVAILABLE

# One xdist group of its own (tests/conftest.py): its processes and ports are its own.
# ``django_db``: the test database must exist (it is copied); nothing here writes to it.
pytestmark = [pytest.mark.faults, pytest.mark.postgres, pytest.mark.django_db]

ON_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ANNOTATORS, TASKS = 8, 300


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker):
    """The private services, the app served on them, and ``stack.keys``: the annotators'
    API tokens; everything stopped and removed at the end, whatever happened."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (set DATABASE_URL=postgres://...)")
    reason = missing()
    if reason:
        if ON_CI:
            pytest.fail(f"CI requires the fault suite's services: {reason}", pytrace=False)
        pytest.skip(f"needs {reason}")
    stack = Stack()

    def fill() -> None:
        with django_db_blocker.unblock():
            stack.postgres.copy_from(connection.settings_dict)
            with pointed_at(stack):
                stack.keys = seed(TASKS, ANNOTATORS)

    try:
        stack.start(fill)
        yield stack
    finally:
        stack.close()


@pytest.fixture
def within(stack, django_db_blocker):
    """This process's ORM and Celery app on the private services, for a block."""

    @contextmanager
    def reach():
        with django_db_blocker.unblock(), pointed_at(stack):
            yield

    return reach


@pytest.fixture
def checked(stack, within):
    """``checked(scenario)``: run it, then assert nothing was lost, doubled, stored
    unacknowledged, answered 500 or given up; the run."""

    def run_checked(scenario, *args):
        before = scenarios.stored(within)
        run = scenario(stack, stack.keys, *args)
        found = scenarios.check(run, before, scenarios.stored(within))
        problems = {kind: what for kind, what in found.items() if what}
        assert not problems, f"{problems}\n{stack.tail()}"
        return run

    return run_checked


def test_a_postgresql_restart_under_load_is_answered_503_and_loses_nothing(checked):
    run = checked(scenarios.postgres_restart)
    assert set(run.statuses()) == {503}, run.statuses()  # the outage met, and only as 503s
    assert run.recovery() is not None


def test_with_redis_down_submits_are_stored_and_the_outbox_is_relayed_once_back(checked, within):
    run = checked(scenarios.redis_outage, within)
    assert not run.statuses(), run.statuses()  # not one error while Redis was away
    during = [o.took for o in run.submits(during=True) if o.status in (200, 201)]
    assert len(during) >= 16 and statistics.median(during) < 1.0, during
    held, queued = run.extra["held"], run.extra["queued"]
    # The checkpoint's report and the submits' tasks (checks, priorities) were kept...
    assert held[scenarios.REPORT] == 1 and sum(held.values()) > 1, held
    # ... and the relay handed every one to Redis once it was back.
    assert run.extra["left"] == 0 and run.extra["relayed"] == sum(held.values())
    assert all(queued[task] >= n for task, n in held.items()), (held, queued)


def test_a_worker_killed_after_the_commit_leaves_one_ranking_and_the_retry_gets_200(checked, stack):
    run = checked(scenarios.kill_after_commit)
    tries = [o.status for o in run.outcomes if o.kind == "submit"]
    assert tries[0] == 0 and tries[-1] == 200, tries  # dropped, then found stored
    assert set(tries[1:-1]) <= {0}, tries
    assert stack.web.answers()  # gunicorn replaced its worker


def test_a_read_only_database_answers_a_clear_503_and_writes_nothing(checked, within):
    run = checked(scenarios.read_only, within)
    status, body, retry_after = run.extra["answer"]
    assert (status, body, retry_after) == (503, {"detail": UNAVAILABLE}, str(RETRY_AFTER))
    assert "in a read-only transaction" in run.extra["logged"]  # the refusal, not a lost link
    assert run.extra["changed"] == [0, 0, 0]  # no ranking, no item, the reservation kept
    assert run.extra["next_status"] in (200, 503)
    assert len(run.acknowledged()) == 1  # stored once writable again
