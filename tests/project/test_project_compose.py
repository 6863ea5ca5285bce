"""docker-compose.yml's services, run as compose would run them, on this machine.

No container engine can pull images here (no registry but PyPI, Debian and npm), so
this test reads docker-compose.yml, .env.example (as the .env) and the Dockerfile,
and starts each app service's command with its compose environment, mapped to this
machine: postgres -> this PostgreSQL (a database the test creates and drops),
redis -> this Redis (an empty database number, flushed after), /data, /app/static
and /tmp -> temporary folders. Static files are collected by the Dockerfile's own
command. Then it drives a page, a static file, /healthz, each service's health check,
a training run that goes through both workers, and a schedule that beat fires.

Deliberate differences: one gunicorn process, the MiniLM encoder instead of the
seed's mpnet (both only to spare this machine's CPUs), ports found free.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
import redis
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("web", "worker", "worker-gpu", "beat")
SCHEDULE = "compose-test schedule"
# The environment of the test process that must not leak into the services.
OWN_PREFIXES = ("DJANGO_", "STEREORANK_", "CELERY_", "GUNICORN_", "DATABASE_", "REDIS_")

_VARIABLE = re.compile(r"\$\{(\w+)(?:(:?[-?])([^}]*))?\}")


def interpolate(text: str, variables: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``."""

    def replace(match: re.Match) -> str:
        name, operator, argument = match.groups()
        value = variables.get(name)
        unset = value is None or (operator and operator.startswith(":") and value == "")
        if operator and operator.endswith("?") and unset:
            raise KeyError(f"{name}: {argument}")
        if operator and operator.endswith("-") and unset:
            return argument
        return value or ""

    return _VARIABLE.sub(replace, text.replace("$$", "\0")).replace("\0", "$")


def read_env_file(path: Path) -> dict[str, str]:
    """A compose env file: KEY=VALUE lines; blank lines and ``#`` comments skipped."""
    pairs = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(instruction, arguments) pairs, continuation lines joined, comments dropped."""
    lines, joined = [], ""
    for raw in path.read_text().splitlines():
        if raw.lstrip().startswith("#"):
            continue
        joined += raw.rstrip()
        if joined.endswith("\\"):
            joined = joined[:-1] + " "
            continue
        if joined.strip():
            instruction, _, arguments = joined.strip().partition(" ")
            lines.append((instruction.upper(), arguments.strip()))
        joined = ""
    return lines


def image_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    """The image's ENV (the virtual environment's PATH aside: this machine has its own)."""
    env = {}
    for instruction, arguments in instructions:
        if instruction == "ENV":
            for word in shlex.split(arguments):
                key, _, value = word.partition("=")
                env[key] = value
    for key in ("PATH", "VIRTUAL_ENV"):
        env.pop(key, None)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Stack:
    """The compose file's app services as processes on this machine."""

    def __init__(self, tmp: Path, database_url: str, redis_url: str) -> None:
        self.tmp, self.procs, self.logs = tmp, {}, {}
        self.dotenv = read_env_file(ROOT / ".env.example")
        compose_text = interpolate((ROOT / "docker-compose.yml").read_text(), self.dotenv)
        self.compose = yaml.safe_load(compose_text)
        self.dockerfile = dockerfile_instructions(ROOT / "Dockerfile")
        self.database_url, self.redis_url = database_url, redis_url
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def paths(self, service: str) -> dict[str, str]:
        """Container paths -> folders here (/tmp is per container)."""
        return {
            "/data": str(self.tmp / "data"),
            "/app/static": str(self.tmp / "static"),
            "/tmp/": str(self.tmp / f"{service}-tmp") + "/",
        }

    def map_paths(self, service: str, value: str) -> str:
        """Replace container paths where a path starts (one pass: no double mapping)."""
        paths = self.paths(service)
        pattern = "|".join(re.escape(p) for p in paths)
        return re.sub(rf"(?<![\w/.-])({pattern})", lambda m: paths[m.group(1)], value)

    def env(self, service: str) -> dict[str, str]:
        """Image ENV, then env_file, then the service's environment (compose's order)."""
        spec = self.compose["services"][service]
        assert spec["env_file"] == ".env"
        layered = {**image_env(self.dockerfile), **self.dotenv, **spec["environment"]}
        db, broker = urlsplit(layered["DATABASE_URL"]), urlsplit(layered["REDIS_URL"])
        assert (db.hostname, broker.hostname) == ("postgres", "redis"), "in-stack host names"
        layered["DATABASE_URL"], layered["REDIS_URL"] = self.database_url, self.redis_url
        layered = {k: self.map_paths(service, str(v)) for k, v in layered.items()}
        layered.update(
            GUNICORN_BIND=f"127.0.0.1:{self.port}",
            GUNICORN_WORKERS="1",
            STEREORANK_ENCODER="all-MiniLM-L6-v2",
            STEREORANK_DEVICE="cpu",
        )
        own = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
        own["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{own.get('PATH', '')}"
        (self.tmp / f"{service}-tmp").mkdir(exist_ok=True)
        return {**own, **layered}

    def build_static(self) -> None:
        """The Dockerfile's collectstatic step, in its build environment."""
        (command,) = [a for i, a in self.dockerfile if i == "RUN" and "collectstatic" in a]
        run = subprocess.run(
            ["sh", "-c", self.map_paths("build", command)],
            cwd=ROOT,
            env=self.env("web"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0, run.stdout + run.stderr

    def start(self, service: str) -> None:
        command = self.compose["services"][service]["command"]
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.logs[service] = self.tmp / f"{service}.log"
        with open(self.logs[service], "wb") as log:
            self.procs[service] = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=self.env(service),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def exec(self, service: str, *argv: str) -> subprocess.CompletedProcess:
        """``docker compose exec SERVICE ARGV``."""
        return subprocess.run(
            argv, cwd=ROOT, env=self.env(service), capture_output=True, text=True, timeout=300
        )

    def healthcheck(self, service: str) -> subprocess.CompletedProcess:
        test = self.compose["services"][service]["healthcheck"]["test"]
        assert test[0] == "CMD"
        return self.exec(service, *test[1:])

    def tail(self) -> str:
        parts = []
        for service, log in self.logs.items():
            rc = self.procs[service].poll()
            parts.append(
                f"--- {service} (exit {rc}) ---\n{log.read_text(errors='replace')[-3000:]}"
            )
        return "\n".join(parts)

    def alive(self) -> None:
        dead = [s for s, p in self.procs.items() if p.poll() is not None]
        assert not dead, f"{dead} exited\n{self.tail()}"

    def stop(self) -> None:
        """SIGTERM each process group (a warm shutdown), SIGKILL after 30 s."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)


def wait_for(predicate, timeout: float, what: str, stack: Stack):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack.alive()
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}\n{stack.tail()}")


@pytest.fixture
def services_here():
    """A fresh PostgreSQL database and an empty Redis database number on this machine."""
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    server = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"stereorank_compose_{uuid.uuid4().hex[:10]}"
    broker = urlsplit(settings.REDIS_URL)
    number = next(
        n
        for n in range(15, 0, -1)
        if redis.Redis(host=broker.hostname, port=broker.port or 6379, db=n).dbsize() == 0
    )
    redis_url = f"redis://{broker.hostname}:{broker.port or 6379}/{number}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{server}/{name}", redis_url
    finally:
        redis.Redis.from_url(redis_url).flushdb()
        with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_the_compose_services_serve_pages_and_run_tasks(tmp_path, services_here):
    database_url, redis_url = services_here
    stack = Stack(tmp_path, database_url, redis_url)
    assert set(APP_SERVICES) <= set(stack.compose["services"])
    http = httpx.Client(base_url=stack.base, timeout=30)
    try:
        stack.build_static()
        assert (tmp_path / "static" / "staticfiles.json").exists()  # the manifest
        stack.start("web")  # migrates, then gunicorn
        wait_for(lambda: _answers(http), 300, "web to answer /healthz", stack)
        for service in ("worker", "worker-gpu", "beat"):
            stack.start(service)
        health = wait_for(lambda: _healthy(http), 180, "/healthz to say 200", stack)
        assert health["down"] == [] and health["checks"]["broker"]["kind"] == "redis"
        wait_for(lambda: _healthy(http, "beat"), 60, "beat's heartbeat", stack)
        for service in APP_SERVICES:
            check = stack.healthcheck(service)
            assert check.returncode == 0, f"{service}: {check.stdout}{check.stderr}"

        # a page, and its stylesheet under the manifest's hashed name, compressed
        page = http.get("/login/")
        assert page.status_code == 200, page.text[:2000]
        (css,) = re.findall(r'href="(/static/portal/portal\.[0-9a-f]{12}\.css)"', page.text)
        style = http.get(css, headers={"Accept-Encoding": "gzip"})
        assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
        assert style.headers.get("content-encoding") == "gzip"
        assert style.text == (ROOT / "annotation/static/portal/portal.css").read_text()
        assert "immutable" in style.headers["cache-control"]

        token = _staff_with_a_study(stack, http)
        api = {"Authorization": f"Token {token}"}
        snapshot = http.post(
            "/api/training/snapshots/", json={"include_synthetic": True}, headers=api
        )
        assert snapshot.status_code == 201, snapshot.text
        # one paraphrase each: augmentation on the default queue, then training on gpu
        body = {"snapshot": snapshot.json()["id"], "epochs": 1, "paraphrases": 1}
        queued = http.post("/api/training/runs/", json=body, headers=api)
        assert queued.status_code == 201, queued.text
        run_url = f"/api/training/runs/{queued.json()['id']}/"

        def finished():
            run = http.get(run_url, headers=api).json()
            return run if run["status"] in {"done", "failed", "cancelled"} else None

        run = wait_for(finished, 600, "the training run", stack)
        assert run["status"] == "done", run
        assert run["augmentation"] is not None and run["checkpoint"] == 1
        worker_log = stack.logs["worker"].read_text()
        gpu_log = stack.logs["worker-gpu"].read_text()
        assert "training.tasks.augment_snapshot" in worker_log
        assert "training.tasks.train_run" in gpu_log

        _schedule_every_two_seconds(stack)
        decisions = wait_for(lambda: _decisions(database_url), 90, "beat's schedule", stack)
        assert decisions[0][0] == "skip", decisions
    finally:
        http.close()
        stack.stop()


def _answers(http: httpx.Client) -> dict | None:
    try:
        response = http.get("/healthz")
    except httpx.TransportError:
        return None
    return response.json() if response.status_code in {200, 503} else None


def _healthy(http: httpx.Client, extra: str = "") -> dict | None:
    body = _answers(http)
    if body is None or body["status"] != "ok":
        return None
    return body if not extra or body["checks"][extra]["ok"] else None


def _staff_with_a_study(stack: Stack, http: httpx.Client) -> str:
    """``docker compose exec web ...``: a catalogue, tasks, synthetic rankings, a staff
    account; its API token."""
    for argv in (
        ["load_catalogue", "--placeholder-images", "2"],
        ["build_tasks"],
        ["simulate_annotators", "--count", "6", "--tasks-per-annotator", "7"],
        ["create_annotator", "staff", "--password", "compose-Test-pw-1", "--consent", "--staff"],
    ):
        done = stack.exec("web", "python", "manage.py", *argv)
        assert done.returncode == 0, done.stdout + done.stderr
    response = http.post(
        "/api/auth/token/", data={"username": "staff", "password": "compose-Test-pw-1"}
    )
    assert response.status_code == 200, response.text
    return response.json()["token"]


def _schedule_every_two_seconds(stack: Stack) -> None:
    """A periodic task beat must pick up: a retraining schedule that always skips."""
    code = (
        "import json; from django_celery_beat.models import IntervalSchedule, PeriodicTask; "
        "every, _ = IntervalSchedule.objects.get_or_create(every=2, period='seconds'); "
        f"PeriodicTask.objects.create(name={SCHEDULE!r}, task='training.scheduled_retrain', "
        "interval=every, kwargs=json.dumps({'min_new_rankings': 10**6}))"
    )
    done = stack.exec("web", "python", "manage.py", "shell", "-c", code)
    assert done.returncode == 0, done.stdout + done.stderr


def _decisions(database_url: str) -> list[tuple[str, str]]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT decision, reason FROM training_retraindecision WHERE schedule = %s",
            [SCHEDULE],
        ).fetchall()


def test_interpolation_follows_compose():
    env = {"SET": "x", "EMPTY": ""}
    assert interpolate("${SET}-${SET:-d}-${EMPTY:-d}-${EMPTY-d}-${UNSET-d}-$$x", env) == (
        "x-x-d--d-$x"
    )
    with pytest.raises(KeyError, match="copy"):
        interpolate("${UNSET:?copy .env.example}", env)
    with pytest.raises(KeyError):
        interpolate("${EMPTY:?empty}", env)
    assert json.loads(interpolate('{"a": "${SET}"}', env)) == {"a": "x"}
