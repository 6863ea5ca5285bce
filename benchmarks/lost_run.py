"""A gpu worker killed mid-run, and its replacement: the time from the kill to the retry.

On the fault suite's private PostgreSQL 15 and Redis (``tests/faults/stack.py``; the
machine's own services are never touched), a small study (12 occupations, MiniLM on
the CPU) is snapshotted, and each repetition starts a run on a gpu worker, SIGKILLs
that worker once training has begun, and starts a replacement with beat embedded:

- same name: the replacement has the dead worker's node name, and recovers the run at
  start (its pid is gone on this node);
- renamed: a new node name (a replaced pod), so only beat's lost-run sweep finds the
  run, once the dead worker's own heartbeat has been missing for ``--lost-after``.

Per case: seconds from the kill to the retry's claim and to the run's end, and the
versions each run made (must be 1). The defaults are production's settings (60 s,
a sweep every 10 s, heartbeats every 15 s); ``--smoke`` makes them short
(and runs the renamed case only).

    .venv/bin/python benchmarks/lost_run.py --repeat 3
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "training")]

from _common import arguments, load  # noqa: E402

from tests.faults.stack import DATABASE, Stack, missing  # noqa: E402

CASES = ("same name", "renamed")


def worker(stack: Stack, env: dict, node: str) -> subprocess.Popen:
    """A gpu worker (default and gpu queues, solo, beat embedded) on the private services."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "web", "worker", "-B", "-Q", "default,gpu",
         "-P", "solo", "-n", node, "--without-gossip", "--without-mingle",
         "-s", str(stack.folder / f"beat-{node}")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # killed with its beat child, a process group of its own
    )  # fmt: skip


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def until(predicate, timeout: float, what: str) -> float:
    """Seconds until ``predicate()`` holds; exits with one line past ``timeout``."""
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            sys.exit(f"lost_run: no {what} within {timeout:.0f} s")
        time.sleep(0.2)
    return time.monotonic() - started


def one(
    stack: Stack, env: dict, snapshot, case: str, n: int, epochs: int
) -> tuple[float, float, int]:
    """(kill to retry, kill to done, versions made) for one run."""
    from training.models import Checkpoint, TrainingRun
    from training.runs.services import start_run

    run = start_run(snapshot, hyperparameters={"epochs": epochs, "lr": 1e-2, "n_boot": 0})
    first = f"bench-{n}@localhost"
    dying = worker(stack, env, first)
    get = lambda: TrainingRun.objects.get(pk=run.pk)  # noqa: E731
    until(lambda: get().epoch >= 1, 300, "training")
    kill(dying)
    killed = time.monotonic()
    replacement = worker(stack, env, first if case == "same name" else f"bench-{n}-new@localhost")
    try:
        until(lambda: get().attempts >= 2, 600, "retry")
        retried = time.monotonic() - killed
        until(lambda: get().is_finished, 600, "end of the retried run")
        done = time.monotonic() - killed
    finally:
        kill(replacement)
    if get().status != TrainingRun.Status.DONE:
        sys.exit(f"lost_run: run {run.pk} ended {get().status}: {get().error}")
    return retried, done, Checkpoint.objects.filter(run_id=run.pk).count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case")
    parser.add_argument("--epochs", type=int, default=200, help="epochs of each run")
    parser.add_argument("--lost-after", type=int, default=60, help="WORKER_LOST_AFTER (s)")
    parser.add_argument("--sweep-every", type=int, default=10, help="beat's sweep (s)")
    parser.add_argument("--heartbeat", type=int, default=15, help="heartbeat interval (s)")
    parser.add_argument("--cases", default=",".join(CASES), help="of " + ", ".join(CASES))
    args = arguments(
        parser,
        {"repeat": 1, "lost_after": 3, "sweep_every": 1, "heartbeat": 1, "epochs": 50,
         "cases": "renamed"},
    )  # fmt: skip
    cases = args.cases.split(",")
    if not set(cases) <= set(CASES):
        sys.exit(f"lost_run: --cases takes {','.join(CASES)}")
    reason = missing()
    if reason:
        sys.exit(f"lost_run: needs {reason}")
    stack = Stack()
    store = Path(tempfile.mkdtemp(prefix="stereorank-lost-run-"))
    env = {
        **stack.web.env,
        "STEREORANK_ENCODER": "all-MiniLM-L6-v2",
        "STEREORANK_DEVICE": "cpu",
        "STEREORANK_CHECKPOINT_DIR": str(store / "checkpoints"),
        "STEREORANK_EMBEDDING_CACHE": str(store / "embeddings"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "STEREORANK_WORKER_LOST_AFTER": str(args.lost_after),
        "STEREORANK_RUN_SWEEP_EVERY": str(args.sweep_every),
        "STEREORANK_HEARTBEAT_SECONDS": str(args.heartbeat),
    }
    os.environ.update(env)  # this process seeds and starts the runs on them too
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from training_study import make_study

    from training.snapshots.services import create_snapshot

    def fill() -> None:
        with stack.postgres.connect("postgres") as db:
            db.execute(f"CREATE DATABASE {DATABASE}")
        call_command("migrate", verbosity=0)
        make_study(store)

    print(f"{time.strftime('%Y-%m-%d %H:%M')}  cpus: {os.cpu_count()}  load before: {load()}")
    print(f"worker lost after {args.lost_after} s, sweep every {args.sweep_every} s, "
          f"heartbeat every {args.heartbeat} s; {args.repeat} runs per case")  # fmt: skip
    try:
        stack.start(fill)
        snapshot = create_snapshot(include_synthetic=True)
        n = 0
        for case in cases:
            rows = []
            for _ in range(args.repeat):
                n += 1
                rows.append(one(stack, env, snapshot, case, n, args.epochs))
            retry = [r[0] for r in rows]
            done = [r[1] for r in rows]
            print(f"{case}: kill to retry median {statistics.median(retry):.1f} s, max "
                  f"{max(retry):.1f} s; kill to done median {statistics.median(done):.1f} s; "
                  f"versions per run {[r[2] for r in rows]}")  # fmt: skip
    finally:
        stack.close()
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
