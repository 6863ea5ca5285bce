"""Deployment configuration: compose file shape and Django's deploy checks."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_has_the_services_and_queues():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "web", "worker", "worker-gpu", "beat"}
    assert "gunicorn" in services["web"]["command"]
    assert "-Q default" in services["worker"]["command"]
    gpu = services["worker-gpu"]
    assert "-Q gpu" in gpu["command"] and "-P solo" in gpu["command"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]
    assert "beat" in services["beat"]["command"]
    for name in ("web", "worker", "worker-gpu", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://")
        assert env["REDIS_URL"].startswith("redis://")


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x",
        "DJANGO_SECRET_KEY": "x" * 20 + "-production-secret-key-with-enough-entropy-9f3k2",
        "DJANGO_ALLOWED_HOSTS": "stereorank.example.org",
        "STEREORANK_VAR_DIR": str(tmp_path),
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_require_a_secret_key(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x",
        "STEREORANK_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr
