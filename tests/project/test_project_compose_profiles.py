"""docker-compose.yml without a GPU, and with the ``gpu`` profile.

``docker compose up`` must start on a host with no NVIDIA device, and the gpu queue
(training runs, evaluations) must have exactly one consumer in each mode:

- no profile: no service reserves a device; ``worker`` takes both queues;
- ``--profile gpu`` with ``STEREORANK_WORKER_QUEUES=default`` (README "Deployment"):
  ``worker-gpu`` reserves NVIDIA GPU 0 and takes the gpu queue alone;
- ``--profile gpu`` without that setting: ``worker-gpu`` refuses to start, so the
  gpu queue keeps its one consumer, ``worker``.

A profile can only add services, hence the setting. The file is read as compose reads
it (``${...}`` filled from .env.example as the .env, then the services the active
profiles enable), and what each worker consumes is read from its command run with a
stand-in ``celery`` that records its arguments, so a shell guard in a command counts.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.project.compose_stack import ROOT, interpolate, read_env_file

DOTENV = read_env_file(ROOT / ".env.example")
GPU_MODE = {"STEREORANK_WORKER_QUEUES": "default"}


def compose(**variables: str) -> dict:
    """docker-compose.yml as compose reads it with .env.example (plus ``variables``)."""
    text = (ROOT / "docker-compose.yml").read_text()
    return yaml.safe_load(interpolate(text, {**DOTENV, **variables}))


def enabled(spec: dict, *profiles: str) -> dict[str, dict]:
    """The services compose starts: those without profiles, or with an active one."""
    return {
        name: service
        for name, service in spec["services"].items()
        if not service.get("profiles") or set(service["profiles"]) & set(profiles)
    }


def devices(service: dict) -> list[dict]:
    """The devices a service reserves (``deploy.resources.reservations.devices``)."""
    reservations = service.get("deploy", {}).get("resources", {}).get("reservations", {})
    return list(reservations.get("devices", []))


def reserves_hardware(service: dict) -> bool:
    """Any way a compose service asks for a device or the NVIDIA runtime."""
    return bool(devices(service) or service.get("devices") or service.get("gpus")) or (
        service.get("runtime") == "nvidia"
    )


def started_worker(service: dict, tmp_path: Path) -> tuple[list[str] | None, str]:
    """Run the service's command with a stand-in ``celery``: the arguments of the
    Celery worker it starts (None when it starts none) and its standard error."""
    command = service["command"]
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "celery-argv"
    record.unlink(missing_ok=True)
    celery = bin_dir / "celery"
    celery.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$CELERY_ARGV"\n')
    celery.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "CELERY_ARGV": str(record)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    if not record.exists():
        assert done.returncode != 0, "a worker's command that starts no worker must fail"
        return None, done.stderr
    assert done.returncode == 0, done.stderr
    return record.read_text().splitlines(), done.stderr


def queue_consumers(services: dict[str, dict], tmp_path: Path) -> dict[str, list[str]]:
    """queue -> the services whose command starts a worker that consumes it."""
    consumers: dict[str, list[str]] = {}
    for name, service in services.items():
        command = service.get("command")
        if not command or "celery" not in str(command) or "worker" not in str(command):
            continue
        argv, _ = started_worker(service, tmp_path)
        if argv is None:
            continue
        assert argv[:3] == ["-A", "web", "worker"], argv
        for queue in argv[argv.index("-Q") + 1].split(","):
            consumers.setdefault(queue, []).append(name)
    return consumers


def test_without_a_profile_nothing_reserves_a_device_and_worker_takes_both_queues(tmp_path):
    services = enabled(compose())
    assert set(services) == {"postgres", "redis", "web", "worker", "beat"}
    assert [name for name, s in services.items() if reserves_hardware(s)] == []
    # compose refuses to start a service that depends on one it does not start
    for name, service in services.items():
        assert set(service.get("depends_on", {})) <= set(services), name
    assert queue_consumers(services, tmp_path) == {"default": ["worker"], "gpu": ["worker"]}


def test_the_gpu_profile_gives_the_gpu_queue_to_the_gpu_worker_alone(tmp_path):
    services = enabled(compose(**GPU_MODE), "gpu")
    assert set(services) == {"postgres", "redis", "web", "worker", "worker-gpu", "beat"}
    assert [name for name, s in services.items() if reserves_hardware(s)] == ["worker-gpu"]
    (device,) = devices(services["worker-gpu"])
    assert device["driver"] == "nvidia" and device["device_ids"] == ["0"]
    assert "gpu" in device["capabilities"]
    assert services["worker-gpu"]["environment"]["CUDA_VISIBLE_DEVICES"] == "0"
    for name, service in services.items():
        assert set(service.get("depends_on", {})) <= set(services), name
    assert queue_consumers(services, tmp_path) == {"default": ["worker"], "gpu": ["worker-gpu"]}
    argv, _ = started_worker(services["worker-gpu"], tmp_path)
    assert argv[argv.index("-P") + 1] == "solo"  # CUDA is never initialised in a fork


@pytest.mark.parametrize("queues", [None, "default,gpu", "gpu,default", "gpu"])
def test_the_gpu_worker_refuses_while_worker_takes_the_gpu_queue(tmp_path, queues):
    variables = {} if queues is None else {"STEREORANK_WORKER_QUEUES": queues}
    services = enabled(compose(**variables), "gpu")
    argv, stderr = started_worker(services["worker-gpu"], tmp_path)
    assert argv is None
    assert "STEREORANK_WORKER_QUEUES=default" in stderr
    assert queue_consumers(services, tmp_path)["gpu"] == ["worker"]  # still exactly one


def test_the_setting_without_the_profile_leaves_the_gpu_queue_to_nobody(tmp_path):
    """What the README warns of: /healthz then names worker:gpu down."""
    consumers = queue_consumers(enabled(compose(**GPU_MODE)), tmp_path)
    assert consumers == {"default": ["worker"]}


def test_the_s3_override_keeps_the_profiles_and_reserves_nothing():
    text = (ROOT / "docker-compose.s3.yml").read_text()
    s3 = yaml.safe_load(interpolate(text, {**DOTENV, "STEREORANK_S3_SECRET_ACCESS_KEY": "x"}))
    base = compose()["services"]
    for name, service in s3["services"].items():
        assert "profiles" not in service and not reserves_hardware(service), name
        if name not in base:
            assert set(service.get("depends_on", {})) <= set(base) | set(s3["services"])


def test_the_readme_and_env_example_say_how_to_turn_the_gpu_worker_on():
    readme = (ROOT / "README.md").read_text()
    deployment = readme.split("## Deployment (docker compose)", 1)[1].split("\n## ", 1)[0]
    assert "docker compose --profile gpu up -d" in deployment
    assert "`STEREORANK_WORKER_QUEUES=default`" in deployment
    example = (ROOT / ".env.example").read_text().splitlines()
    assert "# STEREORANK_WORKER_QUEUES=default" in example  # commented: no GPU by default
    assert "STEREORANK_WORKER_QUEUES" not in DOTENV
