"""bin/run's worker for real: the embedded stack (SQLite and the filesystem broker under a
temporary var dir) started with bin/run's own exports and worker line, beat embedded in
the worker (-B). An enabled, due retraining schedule fires: a training run starts and
finishes within a bounded time, /healthz's beat check is up (and required, as bin/run
asks), and stopping the worker as bin/run's trap does leaves no beat process behind.

Real processes, no pytest database: ``manage.py`` subprocesses set the study up as
bin/run does (migrate, load_catalogue, build_tasks), then simulate_annotators and
setup_schedule --every 1 --enable; the schedule is made due now and small (MiniLM,
one epoch, no paraphrases).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENCODER = "all-MiniLM-L6-v2"

# After bin/run's steps, the study's rankings and a due, small schedule.
SETUP = f"""
import json
from datetime import timedelta
from django.core.management import call_command
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from training.schedules import DEFAULT_SCHEDULE

call_command("migrate", "--no-input", verbosity=0)
call_command("load_catalogue", "--placeholder-images", "1", verbosity=0)
call_command("build_tasks", verbosity=0)
call_command("simulate_annotators", "--count", "4", "--tasks-per-annotator", "3", verbosity=0)
call_command("setup_schedule", "--every", "1", "--enable", verbosity=0)
task = PeriodicTask.objects.get(name=DEFAULT_SCHEDULE)
kwargs = json.loads(task.kwargs)
kwargs.update(min_new_rankings=3, encoder="{ENCODER}", epochs=1, paraphrases=0,
              include_synthetic=True)
task.kwargs = json.dumps(kwargs)
task.last_run_at = timezone.now() - timedelta(minutes=5)  # due at once, not in a minute
task.save()
"""

HEALTH = """
import json
from web.health import report
ok, body = report()
print(json.dumps({"ok": ok, **body}))
"""


def bin_run_worker() -> str:
    """bin/run's exports, its var dir and its worker line (run in the foreground)."""
    lines = (ROOT / "bin" / "run").read_text().splitlines()
    kept = [ln for ln in lines if ln.startswith(("export ", "var="))]
    [worker] = [ln for ln in lines if re.search(r"celery -A web worker", ln)]
    assert worker.rstrip().endswith("&"), worker
    assert " -B " in worker, "bin/run's worker embeds beat"
    return "\n".join([*kept, "exec " + worker.rstrip().removesuffix("&").rstrip()])


def _env(var: Path, embeddings: Path) -> dict:
    """The embedded defaults on a temporary var dir: nothing of the outer services."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STEREORANK_", "CELERY_", "DJANGO_"))
        and k not in ("DATABASE_URL", "REDIS_URL")
    }
    return {
        **env,
        "STEREORANK_EMBEDDED": "true",
        "STEREORANK_VAR_DIR": str(var),
        "STEREORANK_EMBEDDING_CACHE": str(embeddings),
        "STEREORANK_DEVICE": "cpu",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
    }


def _manage_shell(env: dict, code: str, timeout: float = 180) -> str:
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _rows(database: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(database, timeout=20) as db:
        return db.execute(sql).fetchall()


def _children(pid: int) -> set[int]:
    """The direct children of a process (Linux /proc)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = (task / "children").read_text().split()
        found |= {int(c) for c in children}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.slow  # trains with real MiniLM weights
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_bin_runs_worker_runs_beat_and_a_due_schedule_starts_a_training_run(tmp_path):
    started = time.monotonic()
    var = tmp_path / "var"
    env = _env(var, tmp_path / "embeddings")
    _manage_shell(env, SETUP)
    database = var / "db.sqlite3"
    assert _rows(database, "SELECT COUNT(*) FROM training_trainingrun") == [(0,)]

    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            ["bash", "-c", bin_run_worker()],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def tail() -> str:
        return log_path.read_text(errors="replace")[-4000:]

    try:
        deadline = time.monotonic() + 240
        run = None
        while run is None or run[1] not in ("done", "failed", "cancelled"):
            assert worker.poll() is None, f"the worker exited:\n{tail()}"
            assert time.monotonic() < deadline, f"no finished run in time: {run}\n{tail()}"
            time.sleep(1)
            found = _rows(
                database,
                "SELECT r.id, r.status, r.error FROM training_retraindecision d "
                "JOIN training_trainingrun r ON r.id = d.run_id WHERE d.decision = 'retrain'",
            )
            run = found[0] if found else None
        assert run[1] == "done", f"{run}\n{tail()}"
        [(schedule, reason)] = _rows(
            database,
            "SELECT schedule, reason FROM training_retraindecision WHERE decision = 'retrain'",
        )
        assert schedule == "Retrain on new rankings" and reason.endswith("(need 3)")
        assert _rows(database, "SELECT COUNT(*) FROM training_trainingrun") == [(1,)]

        # /healthz's report, read as the web server reads it, with bin/run's exports.
        exports = dict(re.findall(r'export (\w+)="\$\{\w+:-([^}]*)\}"', bin_run_worker()))
        health = json.loads(_manage_shell({**env, **exports}, HEALTH).splitlines()[-1])
        assert exports["STEREORANK_HEALTH_REQUIRED"].split(",")[-1] == "beat"
        assert health["checks"]["beat"]["ok"], health
        assert health["checks"]["worker:default"]["ok"] and health["checks"]["worker:gpu"]["ok"]
        assert health["ok"] and health["status"] == "ok", health

        beat = _children(worker.pid)
        assert beat, "beat runs as the worker's child process"
    finally:
        # bin/run's trap: kill $worker (SIGTERM); the embedded beat must go with it.
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
            raise AssertionError(f"the worker did not stop on SIGTERM:\n{tail()}") from None
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in beat) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not any(_alive(pid) for pid in beat), "the embedded beat outlived its worker"
    print(f"embedded stack: set-up to a finished run and back, {time.monotonic() - started:.0f} s")


def test_beat_forked_from_a_worker_leaves_the_workers_heartbeat_alone(
    tmp_path, settings, monkeypatch
):
    """Embedded beat is a fork of the worker: the worker's heartbeat, copied by the fork,
    is not stopped there (stopping it would delete the worker's heartbeat file)."""
    from web import heartbeat

    file = tmp_path / "worker-heartbeat"
    file.touch()
    worker = heartbeat.Heartbeat(["worker:default"], 3600, 60, str(file))
    worker.pid = os.getpid() + 1  # as the fork's child sees its parent's heartbeat
    monkeypatch.setattr(heartbeat, "_heartbeat", worker)
    settings.HEALTH = {**settings.HEALTH, "HEARTBEAT_SECONDS": 3600, "HEARTBEAT_FILE": ""}
    beat = heartbeat.start_heartbeat(["beat"])
    try:
        assert not worker.stopped.is_set() and file.exists()
        assert beat.components == ["beat"] and beat.pid == os.getpid()
    finally:
        heartbeat.stop_heartbeat()
    assert beat.stopped.is_set() and file.exists()
