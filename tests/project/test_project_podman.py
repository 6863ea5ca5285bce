"""The image built from the Dockerfile and docker-compose.yml brought up with podman.

podman-compose runs the compose file as it is, with an override that names the built
image and the postgres and redis images (stand-ins where no registry is reachable:
tests/project/containers/README.md) and a generated .env from .env.example. Then the
same checks as the host run (compose_stack.py) through the published port and
``podman exec``, and the data volume's owner. Skips, saying why, without podman,
podman-compose or one of the three images, and unless asked for with
``STEREORANK_CONTAINER_TEST=1``: it needs images built by hand (no registry is
reachable here), so it is not part of the default suite.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
import yaml

from tests.project.compose_stack import (
    APP_SERVICES,
    ROOT,
    answers,
    check_beat,
    check_health,
    check_page_and_static,
    check_worker_round_trip,
    free_port,
    wait_for,
)

IMAGE = "localhost/stereorank-compose-test:latest"
BASES = {
    "python": os.environ.get("STEREORANK_TEST_PYTHON_IMAGE", "python:3.11-slim"),
    "postgres": os.environ.get("STEREORANK_TEST_POSTGRES_IMAGE", "postgres:16"),
    "redis": os.environ.get("STEREORANK_TEST_REDIS_IMAGE", "redis:7"),
}


def _podman(*argv: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["podman", *argv], capture_output=True, text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"podman {shlex.join(argv)}\n{done.stdout}{done.stderr}"
    return done


def _missing() -> str:
    """Why this machine cannot run the test ("" when it can)."""
    if os.environ.get("STEREORANK_CONTAINER_TEST") != "1":
        return "opt-in: set STEREORANK_CONTAINER_TEST=1 (images: tests/project/containers)"
    for tool in ("podman", "podman-compose"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    for role, image in BASES.items():
        if _podman("image", "exists", image, check=False).returncode != 0:
            return f"no local {role} image {image!r} (tests/project/containers/README.md)"
    return ""


def _built(spec: dict) -> list[str]:
    """The compose file's services built from the Dockerfile."""
    return [name for name, service in spec["services"].items() if "build" in service]


class PodmanStack:
    """The compose project's containers, found by compose's labels."""

    def __init__(self, project: str, folder: Path) -> None:
        self.project, self.folder = project, folder
        self.files = ["-f", str(folder / "docker-compose.yml"), "-f", str(folder / "ci.yml")]
        self.spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())

    def compose(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["podman-compose", "-p", self.project, *self.files, *argv],
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def container(self, service: str) -> str:
        labels = [
            f"label=com.docker.compose.project={self.project}",
            f"label=com.docker.compose.service={service}",
        ]
        found = _podman(
            "ps", "-a", "--format", "{{.Names}}", "--filter", labels[0], "--filter", labels[1]
        )
        (name,) = found.stdout.split()
        return name

    def alive(self) -> None:
        state = _podman("inspect", "--format", "{{.State.Status}}", self.container("web"))
        assert state.stdout.strip() == "running", self.tail()

    def log(self, service: str) -> str:
        done = _podman("logs", self.container(service), check=False)
        return done.stdout + done.stderr

    def tail(self) -> str:
        return "\n".join(f"--- {s} ---\n{self.log(s)[-3000:]}" for s in APP_SERVICES)

    def manage(self, *argv: str) -> subprocess.CompletedProcess:
        name = self.container("web")
        return _podman("exec", name, "python", "manage.py", *argv, timeout=300, check=False)

    def healthcheck(self, service: str) -> subprocess.CompletedProcess:
        """``podman healthcheck run``, once its configured command is the compose file's."""
        name = self.container(service)
        _, expected = self.spec["services"][service]["healthcheck"]["test"]
        configured = _podman("inspect", "--format", "{{json .Config.Healthcheck}}", name)
        kind, command = json.loads(configured.stdout)["Test"]
        assert kind == "CMD-SHELL"
        assert command == expected or shlex.split(command) == ["/bin/sh", "-c", expected]
        return _podman("healthcheck", "run", name, check=False)


@pytest.mark.slow
@pytest.mark.container
def test_the_image_builds_and_the_compose_stack_serves(tmp_path):
    reason = _missing()
    if reason:
        pytest.skip(reason)
    flags = shlex.split(os.environ.get("STEREORANK_TEST_BUILD_FLAGS", ""))
    _podman(
        "build",
        *flags,
        "--build-arg",
        f"PYTHON_IMAGE={BASES['python']}",
        "-t",
        IMAGE,
        str(ROOT),
        timeout=3600,
    )
    port = free_port()
    settings = {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(40),
        "POSTGRES_PASSWORD": secrets.token_hex(12),
        "STEREORANK_PUBLISH": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "STEREORANK_ENCODER": "all-MiniLM-L6-v2",  # to spare the CPUs; mpnet is in the image
    }
    lines = [
        line
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line.partition("=")[0] not in settings
    ]
    env = "\n".join(lines + [f"{k}={v}" for k, v in settings.items()]) + "\n"
    (tmp_path / ".env").write_text(env)
    shutil.copy(ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    stack_spec = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    override = {
        "services": {
            "postgres": {"image": BASES["postgres"]},
            "redis": {"image": BASES["redis"]},
            # every service built from the Dockerfile, the gpu profile's worker-gpu too
            # (a podman-compose without profiles, as 1.0.3, starts it: it refuses to
            # consume while worker takes the gpu queue)
            **{s: {"image": IMAGE, "build": str(ROOT)} for s in _built(stack_spec)},
        }
    }
    (tmp_path / "ci.yml").write_text(yaml.safe_dump(override))
    stack = PodmanStack(f"stereorank-test-{uuid.uuid4().hex[:8]}", tmp_path)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        up = stack.compose("up", "-d")
        assert up.returncode == 0, up.stdout + up.stderr
        wait_for(lambda: answers(http), 300, "web to answer /healthz", stack, every=2)
        check_health(stack, http)
        for service in ("postgres", "redis"):
            assert stack.healthcheck(service).returncode == 0, service
        check_page_and_static(http)
        check_worker_round_trip(stack, http)
        check_beat(stack)
        web = stack.container("web")
        # the probe can fail: web writes no heartbeat, so a worker's check fails there
        _, worker_check = stack.spec["services"]["worker"]["healthcheck"]["test"]
        assert _podman("exec", web, "sh", "-c", worker_check, check=False).returncode == 1
        owner = _podman("exec", web, "stat", "-c", "%U %a", "/data", "/data/media")
        assert owner.stdout.split() == ["stereorank", "755", "stereorank", "755"]
        listed = _podman("exec", stack.container("worker"), "ls", "/data/checkpoints")
        assert listed.stdout.split() == ["v1"]
        # the quant extra is in the image: the README's int8 setting can be served there
        quant = _podman("exec", web, "python", "-c", "import onnxruntime, openvino, nncf")
        assert quant.returncode == 0, quant.stderr
    finally:
        http.close()
        stack.compose("down", "-v", timeout=300)
        for volume in ("data", "pgdata"):
            _podman("volume", "rm", "-f", f"{stack.project}_{volume}", check=False)
        _podman("network", "rm", "-f", f"{stack.project}_default", check=False)
