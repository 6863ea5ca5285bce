"""Every benchmark docs/benchmarks.md cites runs as written (issue 37), at its smoke size
(``--smoke``: ``benchmarks/_common.arguments``), in a process of its own with a clean
environment (forked from one that imported torch once: ``tests.preloaded``); its figures
are not checked here (benchmarks measure, tests assert). One that needs a GPU says so and
skips; a comparison with a second tree (``--rev``, ``--compare``) is left out, the
benchmark's own figures kept. The ones that need PostgreSQL and Redis get them as the
README's commands give them (``DATABASE_URL``, ``REDIS_URL``); the rest run on their own
throwaway SQLite, never the test database."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.faults.stack import missing
from tests.model_exports import exported_once
from tests.preloaded import Preloader

ROOT = Path(__file__).resolve().parents[2]
CITED = sorted(set(re.findall(r"benchmarks/(\w+)\.py", (ROOT / "docs/benchmarks.md").read_text())))
# Modules a benchmark runs (scale.py builds with scale_build and measures with scale_measure).
PARTS = {"scale_build": "scale", "scale_measure": "scale"}
# On the PostgreSQL and Redis of DATABASE_URL and REDIS_URL (migrate_formats and portal_load
# each on a database of its own); faults and lost_run start (and kill) private ones.
NEEDS_SERVERS = {"scale", "portal_load", "migrate_formats"}
PRIVATE_SERVERS = {"faults", "lost_run"}
GPU = {"cuda_check": "needs a CUDA GPU (its CPU half runs in tests/ml/test_ml_cuda_check.py)"}


def test_every_cited_benchmark_exists_and_is_run_here():
    assert CITED, "docs/benchmarks.md cites no benchmark"
    for name in CITED:
        assert (ROOT / "benchmarks" / f"{name}.py").exists(), name
    assert set(PARTS) | {*RUN} >= set(CITED)


RUN = [n for n in CITED if n not in PARTS]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _own_database(name: str):
    """A PostgreSQL database of its own on DATABASE_URL's server, dropped after."""
    server = os.environ["DATABASE_URL"]
    admin = urlunsplit(urlsplit(server)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _env(name: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "STEREORANK_", "CELERY_", "DATABASE_", "REDIS_"))
    }
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    if name in NEEDS_SERVERS:
        env["DATABASE_URL"] = os.environ.get("DATABASE_URL", "")
        env["REDIS_URL"] = os.environ.get("REDIS_URL", "")
    return env


def _marks(name: str) -> list:
    if name in GPU:
        return [pytest.mark.skip(reason=GPU[name])]
    if name in NEEDS_SERVERS:
        return [pytest.mark.postgres, pytest.mark.redis]
    if name in PRIVATE_SERVERS:
        return [pytest.mark.faults]
    # Each in a group of its own (they share no fixture), so the two pytest workers
    # share them out instead of one worker taking all of them.
    return [pytest.mark.xdist_group(f"benchmark-{name}")]


@pytest.fixture(scope="session")
def preloader():
    """The benchmarks' processes, forked from one that imported torch and the rest once
    (``tests.preloaded``): a benchmark's own process starts without those seconds."""
    loaded = Preloader(_env("preloader"), ROOT)
    yield loaded
    loaded.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in RUN])
def test_the_benchmark_runs_at_its_smoke_size(name, tmp_path, quant_models, preloader):
    if name in NEEDS_SERVERS and not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        pytest.skip(f"{name} needs PostgreSQL (DATABASE_URL)")
    if name in PRIVATE_SERVERS and (reason := missing()):
        pytest.skip(f"{name} needs {reason}")
    argv, env = [f"benchmarks/{name}.py", "--smoke"], _env(name)
    if name == "migrate_formats":  # a database of its own on the server, dropped after
        argv += ["--db", "bench_formats_smoke"]
    if name in ("optimise", "portal_load"):
        argv += ["--port", str(_free_port())]
    # The two that export MiniLM's onnx/int8 copy use the folder the quantization tests
    # export it to (never the repository's var/), so the run exports it once, not thrice.
    shared = name in ("encoders", "int8_serving")
    if name == "encoders":
        argv += ["--model-dir", str(quant_models)]
    if name == "int8_serving":
        env["STEREORANK_MODEL_DIR"] = str(quant_models)
    with (
        _own_database("bench_portal_smoke") if name == "portal_load" else nullcontext() as url,
        exported_once(quant_models, "onnx-int8") if shared else nullcontext(),
    ):
        if url:
            env["DATABASE_URL"] = url
        done = preloader.run(argv, env, ROOT, tmp_path, timeout=300)
    assert done.returncode == 0, f"{name} --smoke:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{name} printed no figures"


_SCHEMA = """
import os, sqlite3, sys
sys.path.insert(0, "benchmarks")
os.environ.pop("DATABASE_URL", None)
os.environ.update(DJANGO_SETTINGS_MODULE="web.settings", STEREORANK_VAR_DIR=sys.argv[1])
import django; django.setup()
from _common import migrate
migrate()
from django.conf import settings
with sqlite3.connect(settings.DATABASES["default"]["NAME"]) as db:
    print(sorted(db.execute("SELECT type, name, sql FROM sqlite_master")))
    print(sorted(db.execute("SELECT app, name FROM django_migrations")))
    print(db.execute("SELECT slug FROM annotation_study").fetchall())
"""


def test_a_database_migrated_from_the_kept_copy_is_the_migrated_one(tmp_path):
    """``benchmarks/_common.migrate``: the first run migrates and keeps a copy (in its
    temporary folder); the second starts from the copy: the same tables, indexes,
    applied migrations and rows (the default study) as the first."""
    env = {**_env("x"), "TMPDIR": str(tmp_path)}
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SCHEMA, str(tmp_path / name)],
            cwd=ROOT, env=env, capture_output=True, text=True, check=True,
        )
        for name in ("first", "second")
    ]  # fmt: skip
    assert len(list(tmp_path.glob("stereorank-migrated-*.sqlite3"))) == 1
    assert runs[0].stdout == runs[1].stdout and "annotation_study" in runs[0].stdout
