"""Deployment configuration: compose file shape and Django's deploy checks."""

import json
import os
import re
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
    assert "-Q ${STEREORANK_WORKER_QUEUES:-default,gpu}" in services["worker"]["command"]
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
        # Without it, stereorank.W001 (tests/annotation/test_annotation_pseudonym_key.py).
        "STEREORANK_PSEUDONYM_KEY": "p" * 50,
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


def _production_settings(tmp_path, **extra: str) -> dict:
    """The security settings production mode computes from this environment."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "STEREORANK_"))},
        "DATABASE_URL": "postgres://u:p@127.0.0.1:5432/x",
        "DJANGO_SECRET_KEY": "s" * 50,
        "DJANGO_ALLOWED_HOSTS": "stereorank.example.org",
        "STEREORANK_VAR_DIR": str(tmp_path),
        **extra,
    }
    names = [
        "DEBUG",
        "SECURE_SSL_REDIRECT",
        "SECURE_PROXY_SSL_HEADER",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "STATIC_ROOT",
    ]
    code = (
        "import json; from web import settings as s; "
        f"print(json.dumps({{n: str(getattr(s, n, None)) for n in {names!r}}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_https_defaults_on_and_the_proxy_header_only_when_named(tmp_path):
    s = _production_settings(tmp_path)
    assert s["DEBUG"] == "False" and s["SECURE_SSL_REDIRECT"] == "True"
    assert s["SESSION_COOKIE_SECURE"] == s["CSRF_COOKIE_SECURE"] == "True"
    assert s["SECURE_HSTS_SECONDS"] == str(365 * 24 * 3600)
    # trusting X-Forwarded-Proto without a proxy that overwrites it would let a client lie
    assert s["SECURE_PROXY_SSL_HEADER"] == "None"
    proxied = _production_settings(tmp_path, DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto")
    assert proxied["SECURE_PROXY_SSL_HEADER"] == "('HTTP_X_FORWARDED_PROTO', 'https')"
    # the proxy redirects by itself: Django does not, cookies and HSTS stay on
    s = _production_settings(tmp_path, DJANGO_SECURE_SSL_REDIRECT="false")
    assert s["SECURE_SSL_REDIRECT"] == "False" and s["SESSION_COOKIE_SECURE"] == "True"


def test_a_plain_http_trial_turns_every_https_setting_off(tmp_path):
    s = _production_settings(tmp_path, DJANGO_HTTPS="false")
    assert s["SECURE_SSL_REDIRECT"] == s["SESSION_COOKIE_SECURE"] == "False"
    assert s["SECURE_HSTS_SECONDS"] == "0"


def test_static_root_is_independent_of_the_data_volume(tmp_path):
    s = _production_settings(tmp_path, STEREORANK_STATIC_ROOT="/app/static")
    assert s["STATIC_ROOT"] == "/app/static"
    assert _production_settings(tmp_path)["STATIC_ROOT"] == str(tmp_path / "static")


def _settings_variables() -> set[str]:
    """Every environment variable web/settings.py reads."""
    text = (ROOT / "web" / "settings.py").read_text()
    return set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z0-9_]+)"', text))


def test_env_example_and_readme_name_every_variable():
    names = _settings_variables() | {"GUNICORN_WORKERS", "GUNICORN_THREADS", "GUNICORN_BIND"}
    assert {"DJANGO_SECURE_SSL_REDIRECT", "DJANGO_HTTPS", "DATABASE_URL"} <= names
    example = (ROOT / ".env.example").read_text()
    readme = (ROOT / "README.md").read_text()
    assert sorted(n for n in names if n not in example) == []
    assert sorted(n for n in names if f"`{n}`" not in readme) == []
    # what the compose file interpolates is set, uncommented, in the example
    compose = (ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", compose))
    assigned = set(re.findall(r"^([A-Z0-9_]+)=", example, flags=re.MULTILINE))
    assert required and required <= assigned


def test_the_image_copies_every_package():
    """Each package setuptools installs is copied into the image (a missing app is an
    ImportError at start-up, and nothing else would notice)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    (include,) = re.findall(r"include = \[([^\]]*)\]", pyproject)
    packages = {p.strip().strip('"').rstrip("*") for p in include.split(",")}
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY (\w+) \1$", dockerfile, flags=re.MULTILINE))
    assert packages and packages <= copied, packages - copied
    assert {"scoring"} <= packages
