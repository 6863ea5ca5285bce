"""docker-compose.yml's services, run as compose would run them, on this machine.

The container path (an image built, the stack brought up) is
tests/project/test_project_podman.py; it needs images that no registry here provides.
This test reads docker-compose.yml, .env.example (as the .env) and the Dockerfile,
and starts each app service's command with its compose environment, mapped to this
machine: postgres -> this PostgreSQL (a database the test creates and drops),
redis -> this Redis (an empty database number, flushed after), /data, /app/static
and /tmp -> temporary folders. Static files are collected by the Dockerfile's own
command. It starts what `docker compose up` starts (no profile: no GPU worker). Then
it drives a page, a static file, /healthz, each service's health check, a training
run through the worker (both queues), and a schedule that beat fires.

Deliberate differences: one gunicorn process, the MiniLM encoder instead of the
seed's mpnet (both only to spare this machine's CPUs), ports found free.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
import redis
import yaml
from django.conf import settings

from tests.project.compose_stack import (
    APP_SERVICES,
    ROOT,
    answers,
    check_beat,
    check_health,
    check_page_and_static,
    check_worker_round_trip,
    dockerfile_instructions,
    free_port,
    image_env,
    interpolate,
    read_env_file,
    wait_for,
)

# The environment of the test process that must not leak into the services.
OWN_PREFIXES = ("DJANGO_", "STEREORANK_", "CELERY_", "GUNICORN_", "DATABASE_", "REDIS_")


class Stack:
    """The compose file's app services as processes on this machine."""

    def __init__(self, tmp: Path, database_url: str, redis_url: str) -> None:
        self.tmp, self.procs, self.logs = tmp, {}, {}
        self.dotenv = read_env_file(ROOT / ".env.example")
        compose_text = interpolate((ROOT / "docker-compose.yml").read_text(), self.dotenv)
        self.compose = yaml.safe_load(compose_text)
        self.dockerfile = dockerfile_instructions(ROOT / "Dockerfile")
        self.database_url, self.redis_url = database_url, redis_url
        self.port = free_port()
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

    def manage(self, *argv: str) -> subprocess.CompletedProcess:
        return self.exec("web", "python", "manage.py", *argv)

    def healthcheck(self, service: str) -> subprocess.CompletedProcess:
        kind, command = self.compose["services"][service]["healthcheck"]["test"]
        assert kind == "CMD-SHELL"
        return self.exec(service, "sh", "-c", command)

    def log(self, service: str) -> str:
        return self.logs[service].read_text(errors="replace")

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


@pytest.fixture
def services_here():
    """A fresh PostgreSQL database and an empty Redis database number on this machine."""
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    server = f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}"
    name = f"stereorank_compose_{uuid.uuid4().hex[:10]}"
    broker = urlsplit(settings.REDIS_URL)
    # An empty database outside the pytest workers' (broker 1 + i, cache 15 - i, at most
    # six workers: tests/conftest.py), so the stack never shares one with a worker's cache.
    number = next(
        n
        for n in (9, 8, 7)
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
        wait_for(lambda: answers(http), 300, "web to answer /healthz", stack)
        for service in APP_SERVICES:
            if service != "web":
                stack.start(service)
        check_health(stack, http)
        check_page_and_static(http)
        check_worker_round_trip(stack, http)
        check_beat(stack)
        # the services' environment holds the quant extra (the image's own import is checked
        # by tests/project/test_project_podman.py): an int8 copy can be served there
        quant = stack.manage("shell", "-c", "import onnxruntime, openvino, nncf; print('quant ok')")
        assert quant.returncode == 0 and "quant ok" in quant.stdout, quant.stderr
        assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
            "checkpoints",
            "embeddings",
            "media",
        ]
    finally:
        http.close()
        stack.stop()


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
