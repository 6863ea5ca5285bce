"""What the compose tests share: reading docker-compose.yml, .env files and the
Dockerfile as compose and the builder do, and the checks run against a started stack
(its processes on this machine, or its containers)."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import time
from pathlib import Path
from typing import Protocol

import httpx
from django_otp.oath import totp

ROOT = Path(__file__).resolve().parents[2]
# The app services `docker compose up` starts: worker takes both queues; worker-gpu
# is the gpu profile's (tests/project/test_project_compose_profiles.py).
APP_SERVICES = ("web", "worker", "beat")
SCHEDULE = "compose-test schedule"
STAFF = ("staff", "compose-Test-pw-1")

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


def free_port() -> int:
    """A TCP port nothing listens on now (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningStack(Protocol):
    """A started stack, processes or containers."""

    def alive(self) -> None:
        """Raise when a service has exited."""

    def tail(self) -> str:
        """The end of every service's log."""

    def log(self, service: str) -> str: ...

    def manage(self, *argv: str) -> subprocess.CompletedProcess:
        """``python manage.py ARGV`` in the web service (``docker compose exec web``)."""

    def healthcheck(self, service: str) -> subprocess.CompletedProcess:
        """The service's compose health check, run once."""


def wait_for(predicate, timeout: float, what: str, stack: RunningStack, every: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stack.alive()
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}\n{stack.tail()}")


def answers(http: httpx.Client) -> dict | None:
    """/healthz's report once the server answers it (200 or 503), else None."""
    try:
        response = http.get("/healthz")
    except httpx.TransportError:
        return None
    return response.json() if response.status_code in {200, 503} else None


def healthy(http: httpx.Client, extra: str = "") -> dict | None:
    body = answers(http)
    if body is None or body["status"] != "ok":
        return None
    return body if not extra or body["checks"][extra]["ok"] else None


def check_health(stack: RunningStack, http: httpx.Client) -> None:
    """/healthz says 200 with every worker and beat, and every health check passes."""
    health = wait_for(lambda: healthy(http), 300, "/healthz to say 200", stack)
    assert health["down"] == [] and health["checks"]["broker"]["kind"] == "redis"
    wait_for(lambda: healthy(http, "beat"), 60, "beat's heartbeat", stack)
    for service in APP_SERVICES:
        check = stack.healthcheck(service)
        assert check.returncode == 0, f"{service}: {check.stdout}{check.stderr}"


def check_page_and_static(http: httpx.Client) -> None:
    """A page, and its stylesheet under the manifest's hashed name, compressed."""
    page = http.get("/login/")
    assert page.status_code == 200, page.text[:2000]
    (css,) = re.findall(r'href="(/static/portal/portal\.[0-9a-f]{12}\.css)"', page.text)
    style = http.get(css, headers={"Accept-Encoding": "gzip"})
    assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
    assert style.headers.get("content-encoding") == "gzip"
    assert style.text == (ROOT / "annotation/static/portal/portal.css").read_text()
    assert "immutable" in style.headers["cache-control"]


TOTP_KEY = "5c1c0de5" * 5
"""The staff member's authenticator app's key (hex), enrolled through the stack's shell."""
ENROL = (
    "from django.contrib.auth import get_user_model; "
    "from django_otp.plugins.otp_totp.models import TOTPDevice; "
    f"TOTPDevice.objects.create(user=get_user_model().objects.get(username={STAFF[0]!r}), "
    f"name='app', confirmed=True, key={TOTP_KEY!r})"
)


SCHEDULE_CREATE = (
    "import json; from django_celery_beat.models import IntervalSchedule, PeriodicTask; "
    "every, _ = IntervalSchedule.objects.get_or_create(every=2, period='seconds'); "
    f"PeriodicTask.objects.create(name={SCHEDULE!r}, task='training.scheduled_retrain', "
    "interval=every, kwargs=json.dumps({'min_new_rankings': 10**6}))"
)
"""A schedule for ``check_beat``, made with the round trip's set-up so that beat has fired it
by the time the run is done."""


def check_worker_round_trip(stack: RunningStack, http: httpx.Client) -> None:
    """A study (and ``check_beat``'s schedule), then a staff API call that queues
    augmentation (default queue) and training (gpu queue), both taken by worker; the run
    ends done with checkpoint v1."""
    # The study's set-up, each command as `compose exec web python manage.py ...` runs it,
    # in one process of the web service's (each its own would cost a start-up apiece).
    commands = (
        ["load_catalogue", "--placeholder-images", "2"],  # images written to /data
        ["build_tasks"],
        ["simulate_annotators", "--count", "6", "--tasks-per-annotator", "7"],
        ["create_annotator", STAFF[0], "--password", STAFF[1], "--consent", "--staff"],
        ["grant", STAFF[0], "default", "--role", "researcher"],  # staff see their studies only
    )
    script = "from django.core.management import call_command; " + "; ".join(
        f"call_command(*{argv!r})" for argv in commands
    )
    done = stack.manage("shell", "--no-imports", "-c", f"{script}; {ENROL}; {SCHEDULE_CREATE}")
    assert done.returncode == 0, done.stdout + done.stderr
    code = f"{totp(bytes.fromhex(TOTP_KEY)):06d}"  # what the staff member's app shows now
    login = {"username": STAFF[0], "password": STAFF[1], "otp": code}
    response = http.post("/api/auth/token/", data=login)
    assert response.status_code == 200, response.text
    api = {"Authorization": f"Token {response.json()['token']}"}
    snapshot = http.post("/api/training/snapshots/", json={"include_synthetic": True}, headers=api)
    assert snapshot.status_code == 201, snapshot.text
    body = {"snapshot": snapshot.json()["id"], "epochs": 1, "paraphrases": 1}
    queued = http.post("/api/training/runs/", json=body, headers=api)
    assert queued.status_code == 201, queued.text
    run_url = f"/api/training/runs/{queued.json()['id']}/"

    def finished():
        run = http.get(run_url, headers=api).json()
        return run if run["status"] in {"done", "failed", "cancelled"} else None

    run = wait_for(finished, 600, "the training run", stack, every=2)
    assert run["status"] == "done", run
    assert run["augmentation"] is not None and run["checkpoint"] == 1
    assert "training.tasks.augment_snapshot" in stack.log("worker")
    assert "training.tasks.train_run" in stack.log("worker")


def check_beat(stack: RunningStack) -> None:
    """The periodic task every 2 s that the round trip's set-up made (``SCHEDULE_CREATE``:
    a retraining schedule that always skips) reached a worker through beat."""
    read = (
        "from training.models import RetrainDecision as D; "
        f"print('decisions:', *D.objects.filter(schedule={SCHEDULE!r})"
        ".values_list('decision', flat=True))"
    )

    def decisions() -> list[str]:
        out = stack.manage("shell", "--no-imports", "-c", read).stdout
        (line,) = [x for x in out.splitlines() if x.startswith("decisions:")]
        return line.split()[1:]

    made = wait_for(decisions, 120, "beat's schedule", stack)
    assert made[0] == "skip", made
