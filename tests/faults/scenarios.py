"""The faults, one function each, on a started ``stack.Stack`` with ``load.seed``'s
annotators: what each does and what the annotators saw, for tests/faults/test_faults.py
(one run each, asserted) and ``benchmarks/faults.py`` (repeated, timed).

``within`` is how this process's ORM and Celery app reach the private services (the
test wraps ``stack.pointed_at`` in pytest-django's unblocker; the benchmark's process
is configured for them).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta

from tests.faults.load import FAULT_HEADER, KILL_AFTER_COMMIT, Annotator, Run, under_fault
from tests.faults.stack import Stack

Within = Callable[[], AbstractContextManager]
REPORT = "training.tasks.perspective_report"
"""The task queued when a training run's checkpoint is made (``training.perspectives``)."""


def stored(within: Within) -> Counter:
    """Rankings stored, by (annotator's username, task id)."""
    from annotation.models import Ranking

    with within():
        pairs = Ranking.objects.values_list("annotator__user__username", "task_id")
        return Counter(pairs)


def check(run: Run, before: Counter, after: Counter) -> dict[str, list]:
    """What went wrong, by kind (all empty when nothing did): rankings acknowledged but not
    stored (lost), stored but never acknowledged (the client was told nothing was saved),
    stored twice, 500s, requests given up."""
    new = after - before
    acknowledged = run.acknowledged()
    return {
        "lost": sorted(acknowledged - set(new)),
        "unacknowledged": sorted(set(new) - acknowledged),
        "doubled": sorted(pair for pair, n in after.items() if n > 1),
        "500": [o for o in run.outcomes if o.status >= 500 and o.status not in (502, 503)],
        "given up": [u for a in run.annotators for u in a.unanswered],
    }


def postgres_restart(stack: Stack, keys: dict[str, str], down_for: float = 0.5) -> Run:
    """PostgreSQL stopped (``pg_ctl stop -m fast``: sessions cut, open transactions rolled
    back) and started again while the annotators work; it stays down until they met it
    (a 503) and ``down_for`` seconds passed."""
    return under_fault(
        stack.web.port,
        keys,
        down=stack.postgres.stop,
        up=stack.postgres.start,
        held=lambda run: run.statuses()[503] > 0 and time.monotonic() - run.fault_at > down_for,
    )


def redis_outage(stack: Stack, keys: dict[str, str], within: Within, submits: int = 16) -> Run:
    """Redis killed while the annotators work, started again (empty) once ``submits``
    rankings were stored without it and the outbox kept a submit's task. Meanwhile this
    process, as a training run finishing then, queues the checkpoint's report (after its
    commit, through the outbox). Once Redis is back, the relay (beat's, every 20 s) runs;
    ``run.extra`` says what the outbox held before and after it, and what Redis's default
    queue then holds."""
    from django.db import transaction

    from core.models import OutboxMessage
    from core.outbox import relay
    from core.queue import after_commit

    def down() -> None:
        stack.redis.stop()
        with within(), transaction.atomic():
            after_commit(REPORT, 0, 0, None)  # its send fails: the row stays

    def held(run: Run) -> bool:
        """``submits`` stored, and the outbox holds a submit's task (a filled task's
        check, or the sampler's)."""
        if run.stored_during() < submits:
            return False
        table = OutboxMessage._meta.db_table
        sql = f"SELECT count(*) FROM {table} WHERE task <> %s"
        return stack.postgres.query(sql, (REPORT,))[0][0] > 0

    run = under_fault(stack.web.port, keys, down=down, up=stack.redis.start, held=held)
    with within():
        run.extra["held"] = Counter(OutboxMessage.objects.values_list("task", flat=True))
        started = time.monotonic()
        run.extra["relayed"], run.extra["left"] = relay(grace=timedelta(0))
        run.extra["relay_s"] = time.monotonic() - started
    run.extra["queued"] = Counter(stack.redis.queued())
    return run


def kill_after_commit(stack: Stack, keys: dict[str, str]) -> Run:
    """One submit's gunicorn worker killed once the ranking is committed and its answer
    built, before it is sent; the client sees the connection drop and sends it again."""
    name, key = next(iter(keys.items()))
    annotator = Annotator(name, key, stack.web.port)
    run = Run([annotator])
    task = annotator.next_task()
    assert task is not None, annotator.unanswered
    run.fault_at = time.monotonic()
    annotator.submit(task, headers={FAULT_HEADER: KILL_AFTER_COMMIT})
    run.back_at = run.fault_at  # the worker's death is the whole fault
    annotator.close()
    return run


def read_only(stack: Stack, keys: dict[str, str], within: Within) -> Run:
    """The database turned read-only between a task's reservation and its submit; the
    submit is sent once (``run.extra``: its answer, what the database then held, what the
    server logged), then again once the database is writable."""
    from annotation.models import Assignment, RankedItem, Ranking

    def counts() -> tuple[int, int, int]:
        with within():
            return Ranking.objects.count(), RankedItem.objects.count(), Assignment.objects.count()

    name, key = list(keys.items())[-1]
    annotator = Annotator(name, key, stack.web.port)
    run = Run([annotator])
    task = annotator.next_task()
    assert task is not None, annotator.unanswered
    before = counts()
    order = [card["id"] for card in task["items"]][::-1]
    logged = stack.web.log.stat().st_size
    stack.postgres.read_only(True)
    run.fault_at = time.monotonic()
    try:
        path = f"/api/tasks/{task['id']}/ranking/"
        status, body = annotator.send("submit", path, {"order": order})
        run.extra["answer"] = (status, body, annotator.retry_after)
        run.extra["next_status"] = annotator.send("next", "/api/tasks/next/")[0]
        run.extra["changed"] = [a - b for a, b in zip(counts(), before, strict=True)]
        run.extra["logged"] = stack.web.log.read_bytes()[logged:].decode(errors="replace")
    finally:
        stack.postgres.read_only(False)
        run.back_at = time.monotonic()
    annotator.submit(task)
    annotator.close()
    return run
