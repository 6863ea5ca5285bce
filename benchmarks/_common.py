"""What the benchmarks share: gunicorn on 127.0.0.1, the load average, ``--smoke``, and
``migrate`` from a kept copy of a migrated SQLite database."""

import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    """The 1, 5 and 15 minute load averages, as the benchmarks print them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextmanager
def gunicorn(env: dict, port: int, tries: int, cwd: Path = ROOT) -> Iterator[subprocess.Popen]:
    """gunicorn (gunicorn.conf.py) serving web.wsgi from the tree ``cwd`` on
    127.0.0.1:``port`` with ``env``, once ``/login/`` answers (or after ``tries`` tries
    0.2 s apart); stopped on leaving."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "web.wsgi",
         "--bind", f"127.0.0.1:{port}"],
        cwd=cwd,
        env=env,
    )  # fmt: skip
    try:
        for _ in range(tries):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        yield server
    finally:
        server.terminate()
        server.wait()


def arguments(parser, smoke: dict):
    """``parser``'s arguments, with ``--smoke``: ``smoke`` as the defaults (flags given
    still win), a run of seconds that proves the benchmark still runs as written; its
    figures mean nothing. tests/project/test_project_benchmarks.py runs every benchmark
    docs/benchmarks.md cites so."""
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a run of seconds to check it runs (figures mean nothing): "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in smoke.items()),
    )
    if "--smoke" in sys.argv[1:]:
        parser.set_defaults(**smoke)
    return parser.parse_args()


def _migrations_key() -> str:
    """A digest of every installed app's migration files (their names and bytes): two
    trees with the same key migrate an empty database to the same one."""
    from django.apps import apps

    digest = hashlib.sha256()
    for config in sorted(apps.get_app_configs(), key=lambda c: c.label):
        for path in sorted(Path(config.path).glob("migrations/*.py")):
            digest.update(f"{config.label}/{path.name}\0".encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def migrate() -> None:
    """``manage.py migrate`` on the default database (Django set up). On SQLite, an empty
    database starts as a copy of one this machine migrated before with the same
    migration files (kept in the temporary folder, keyed by ``_migrations_key``; made by
    the first run), so a benchmark's fresh database costs a file copy instead of 106
    migrations (about 5 s); migrate then runs as usual and finds nothing to do. Other
    databases migrate as usual."""
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    db = settings.DATABASES["default"]
    target = Path(db["NAME"])
    if not db["ENGINE"].endswith("sqlite3") or (target.exists() and target.stat().st_size):
        call_command("migrate", verbosity=0)
        return
    kept = Path(tempfile.gettempdir()) / f"stereorank-migrated-{_migrations_key()}.sqlite3"
    connections.close_all()
    target.parent.mkdir(parents=True, exist_ok=True)
    if kept.is_file():
        with sqlite3.connect(kept) as source, sqlite3.connect(target) as copy:
            source.backup(copy)
    call_command("migrate", verbosity=0)
    if not kept.is_file():  # keep this one for the next run: written aside, then renamed
        connections.close_all()
        staging = kept.with_suffix(f".{os.getpid()}.tmp")
        with sqlite3.connect(target) as source, sqlite3.connect(staging) as copy:
            source.backup(copy)
        os.replace(staging, kept)
