"""Faults under load, repeated and timed: the fault suite's scenarios (tests/faults/).

gunicorn (``gunicorn.conf.py``) serves the app on a private PostgreSQL 15 and Redis,
started here on free ports (``tests/faults/stack.py``; the machine's own services are
never touched), migrated and seeded with tasks and ``--annotators`` API annotators.
Each fault then runs ``--repeat`` times, the annotators ranking through the API
(next task, submit; an answer of 503 or a dropped connection tried again 50 ms later):

- postgres restart: PostgreSQL stopped (``-m fast``) until the annotators met it, and
  at least ``--down`` seconds, then started;
- redis down: Redis killed until ``--submits`` rankings were stored without it, then
  started (empty); the outbox relayed once it is back;
- worker killed: one submit's gunicorn worker SIGKILLed after its commit, before its
  answer; the client sends it again;
- read-only: the database read-only between a reservation and its submit.

Per fault: recovery (from the service's return to the first ranking stored after it),
the answers that were not a success by status (0: a dropped connection), submit
latency p50 / p95 while the fault lasted and overall, and rankings lost, stored
unacknowledged or doubled, and 500s (all must be 0). Last, once: a report queued while
Redis is down, and the time a Celery worker with beat, started once Redis is back,
takes to send it (the outbox's relay: at its start, then every 20 s).

    .venv/bin/python benchmarks/faults.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import arguments, load  # noqa: E402

from tests.faults import scenarios  # noqa: E402
from tests.faults.load import Run, seed  # noqa: E402
from tests.faults.stack import DATABASE, Stack, missing, pointed_at  # noqa: E402

FAULTS = ("postgres restart", "redis down", "worker killed", "read-only")


def run_fault(fault: str, stack: Stack, keys: dict, args) -> Run:
    within = lambda: pointed_at(stack)  # noqa: E731 - this process is on the private services
    if fault == "postgres restart":
        return scenarios.postgres_restart(stack, keys, down_for=args.down)
    if fault == "redis down":
        return scenarios.redis_outage(stack, keys, within, submits=args.submits)
    if fault == "worker killed":
        return scenarios.kill_after_commit(stack, keys)
    return scenarios.read_only(stack, keys, within)


def recovery(fault: str, run: Run) -> float | None:
    if fault == "worker killed":  # from the kill to the retry's answer
        last = run.outcomes[-1]
        return last.sent + last.took - run.fault_at
    return run.recovery()


def ms(values: list[float]) -> str:
    if len(values) < 2:
        return "n/a"
    p95 = statistics.quantiles(values, n=20)[18]
    return f"{statistics.median(values) * 1000:.0f} / {p95 * 1000:.0f} ms"


def report(fault: str, runs: list[Run], problems: Counter) -> None:
    recoveries = [r for r in (recovery(fault, run) for run in runs) if r is not None]
    statuses = sum((run.statuses() for run in runs), Counter())
    during = [o.took for run in runs for o in run.submits(True) if o.status in (200, 201)]
    overall = [o.took for run in runs for o in run.submits(False) if o.status in (200, 201)]
    down = [run.back_at - run.fault_at for run in runs]
    lasted = f", the fault lasted {statistics.median(down):.2f} s (median)" if max(down) else ""
    print(f"{fault}: {len(runs)} runs{lasted}")
    print(
        f"  recovery: median {statistics.median(recoveries):.3f} s, max {max(recoveries):.3f} s"
        if recoveries
        else "  recovery: n/a"
    )
    print(f"  not a success, by status: {dict(sorted(statuses.items())) or 'none'}")
    print(f"  submit latency p50 / p95: during the fault {ms(during)}, overall {ms(overall)}")
    retried = [o.took for run in runs for o in run.retried() if o.kind == "submit"]
    if retried:
        print(f"  submits tried again: {len(retried)}, first try to answer: "
              f"median {statistics.median(retried):.2f} s, max {max(retried):.2f} s")  # fmt: skip
    print(f"  submits stored: {sum(len(r.acknowledged()) for r in runs)}  problems: "
          f"{dict(problems) or 'none'}")  # fmt: skip
    if fault == "redis down":
        held = sum((run.extra["held"] for run in runs), Counter())
        relay = max(run.extra["relay_s"] for run in runs)
        relayed = all(run.extra["left"] == 0 for run in runs)
        print(f"  outbox rows left by failed sends: {dict(held)}; all relayed: {relayed}, "
              f"the relay took {relay:.3f} s at most")  # fmt: skip


def worker_relay(stack: Stack) -> float:
    """Seconds from Redis's return to the outbox being empty, a worker with beat
    started then: a report queued while Redis was down."""
    from django.db import transaction

    from core.models import OutboxMessage
    from core.queue import after_commit

    stack.redis.stop()
    with pointed_at(stack), transaction.atomic():
        after_commit(scenarios.REPORT, 0, 0, None)
    stack.redis.start()
    back = time.monotonic()
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "web", "worker", "-B", "-Q", "default",
         "-P", "solo", "-n", f"faults-{os.getpid()}@localhost", "--without-gossip",
         "--without-mingle", "-s", str(stack.folder / "beat-schedule")],
        cwd=ROOT,
        env=stack.web.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # killed with its beat child, a process of its own
    )  # fmt: skip
    try:
        while stack.postgres.query(f"SELECT count(*) FROM {OutboxMessage._meta.db_table}")[0][0]:
            if worker.poll() is not None or time.monotonic() - back > 120:
                return float("nan")
            time.sleep(0.2)
        return time.monotonic() - back
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each fault")
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--down", type=float, default=1.0, help="PostgreSQL down at least (s)")
    parser.add_argument("--submits", type=int, default=16, help="stored while Redis is down")
    parser.add_argument("--no-worker", action="store_true", help="skip the worker's relay")
    args = arguments(
        parser, {"repeat": 1, "annotators": 2, "submits": 2, "down": 0.5, "no_worker": True}
    )
    reason = missing()
    if reason:
        sys.exit(f"faults: needs {reason}")

    stack = Stack()
    os.environ.update(stack.web.env)  # this process seeds, checks and relays on them too
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
    import django

    django.setup()
    from django.core.management import call_command

    keys: dict[str, str] = {}

    def fill() -> None:
        with stack.postgres.connect("postgres") as db:
            db.execute(f"CREATE DATABASE {DATABASE}")
        call_command("migrate", verbosity=0)
        keys.update(seed(100 + 80 * args.repeat, args.annotators))

    within = lambda: pointed_at(stack)  # noqa: E731
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  cpus: {os.cpu_count()}  load before: {load()}")
    try:
        started = time.monotonic()
        stack.start(fill)
        print(f"stack up, migrated and seeded in {time.monotonic() - started:.1f} s; "
              f"{args.annotators} annotators, {args.repeat} runs per fault")  # fmt: skip
        for fault in FAULTS:
            runs, problems = [], Counter()
            for _ in range(args.repeat):
                before = scenarios.stored(within)
                run = run_fault(fault, stack, keys, args)
                found = scenarios.check(run, before, scenarios.stored(within))
                problems.update({kind: len(what) for kind, what in found.items() if what})
                runs.append(run)
            report(fault, runs, problems)
            if problems:  # what the server said of them
                errors = [line for line in stack.web.tail().splitlines() if "Error:" in line]
                print("  server's last errors:\n    " + "\n    ".join(errors[-5:]))
        if not args.no_worker:
            print(f"report queued with Redis down, sent by a worker started on its return: "
                  f"{worker_relay(stack):.1f} s after Redis was back")  # fmt: skip
    finally:
        stack.close()
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
