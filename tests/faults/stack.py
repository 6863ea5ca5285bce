"""Private services for the fault suite (tests/faults/) and ``benchmarks/faults.py``: a
PostgreSQL 15 cluster, a Redis and gunicorn, each on a free port of 127.0.0.1, started as
processes this code owns, so a fault (a restart, a stop, a killed worker, a read-only
database) never touches the machine's own services.

PostgreSQL: ``initdb`` and ``pg_ctl`` from ``PG_BIN``, run as the ``postgres`` user when
this process is root (CI; ``initdb`` refuses root), in a temporary folder that user owns,
without fsync (nothing here outlives the test). Redis: ``redis-server`` with nothing
saved. gunicorn: ``gunicorn.conf.py`` serving ``tests.faults.wsgi`` (the project's WSGI
application, which can be told to kill its own worker after answering) with the app
loaded once before the workers fork, so a killed worker's successor starts at once.
``Stack.close`` stops all three and removes the folder, whatever happened before.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path

import psycopg

from tests.project.compose_stack import ROOT, free_port

PG_BIN = Path(os.environ.get("STEREORANK_PG_BIN", "/usr/lib/postgresql/15/bin"))
DATABASE = "faults"
OWNER = "postgres"
"""The system user that runs PostgreSQL when this process is root."""


def missing() -> str | None:
    """Why the private services cannot start here (None when they can)."""
    for tool in ("initdb", "pg_ctl", "pg_dump", "psql"):
        if not (PG_BIN / tool).exists():
            return f"PostgreSQL's {tool} (not in {PG_BIN}; set STEREORANK_PG_BIN)"
    if shutil.which("redis-server") is None:
        return "redis-server"
    return None


def _as_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", OWNER, "--", *argv] if os.geteuid() == 0 else argv


def _wait(predicate, timeout: float, what: str, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"timed out waiting for {what}\n{tail}")


class Postgres:
    """A private PostgreSQL cluster in ``folder``: ``start``, ``stop``, ``read_only``."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.data, self.log = folder / "data", folder / "postgres.log"
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            _as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), *args]),
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        if not self.data.exists():
            subprocess.run(
                _as_owner([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                           "--auth=trust", "-N", "-E", "UTF8", "--locale=C.UTF-8"]),
                check=True,
                capture_output=True,
            )  # fmt: skip
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._ctl("-w", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: sessions are ended, what they had not committed
        is rolled back, as a restart does)."""
        self._ctl("-w", "-m", mode, "stop")

    def connect(self, dbname: str = DATABASE) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=dbname, autocommit=True
        )

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self.connect() as db:
            return db.execute(sql, params).fetchall()

    def copy_from(self, source: dict) -> None:
        """Create the database as a copy of ``source`` (a Django ``settings_dict``: the
        test database, migrated), through ``pg_dump | psql``: no migrations run here."""
        with self.connect("postgres") as db:
            db.execute(f"CREATE DATABASE {DATABASE}")
        env = {**os.environ, "PGPASSWORD": str(source.get("PASSWORD") or "")}
        dump = subprocess.Popen(
            [str(PG_BIN / "pg_dump"), "--no-owner", "--no-privileges",
             "-h", str(source.get("HOST") or "127.0.0.1"), "-p", str(source.get("PORT") or 5432),
             "-U", str(source.get("USER") or "postgres"), str(source["NAME"])],
            stdout=subprocess.PIPE,
            env=env,
        )  # fmt: skip
        load = subprocess.run(
            [str(PG_BIN / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-o", os.devnull,
             "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", DATABASE],
            stdin=dump.stdout,
            capture_output=True,
            text=True,
        )  # fmt: skip
        dump.stdout.close()
        if dump.wait() or load.returncode:
            raise RuntimeError(f"copying the test database failed: {load.stderr[-2000:]}")

    def read_only(self, on: bool) -> None:
        """Every transaction read-only from now (a server demoted to a standby, or set
        read-only while its disk is repaired), or writable again. Turning it on ends the
        sessions open on the database too, as a demotion does (a session open before the
        reload would see it only once it read the signal: a race); their successors,
        opened by the app's health check, are read-only."""
        with self.connect() as db:
            db.execute("SET default_transaction_read_only = off")  # this session may write it
            if on:
                db.execute("ALTER SYSTEM SET default_transaction_read_only = on")
            else:
                db.execute("ALTER SYSTEM RESET default_transaction_read_only")
            db.execute("SELECT pg_reload_conf()")
        wanted = "on" if on else "off"
        _wait(lambda: self.query("SHOW default_transaction_read_only")[0][0] == wanted, 10,
              f"default_transaction_read_only = {wanted}", self.log)  # fmt: skip
        if on:
            self.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (DATABASE,),
            )


class Redis:
    """A private Redis that saves nothing: ``start``, ``stop``."""

    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.folder / "redis.log", "ab") as log:
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", "--dir", str(self.folder)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        _wait(self.ping, 10, "redis-server", self.folder / "redis.log")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=0.2).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()  # as a crash: nothing saved, clients cut off
            self.process.wait()

    def queued(self, queue: str = "default") -> list[str]:
        """The task names waiting in a Celery queue (no worker consumes here)."""
        import json

        import redis

        messages = redis.Redis(port=self.port).lrange(queue, 0, -1)
        return [json.loads(m)["headers"]["task"] for m in messages]


class Web:
    """gunicorn (``gunicorn.conf.py``: gthread workers) serving ``tests.faults.wsgi``."""

    def __init__(self, folder: Path, env: dict[str, str]):
        self.folder, self.port, self.env = folder, free_port(), env
        self.log = folder / "gunicorn.log"
        self.process: subprocess.Popen | None = None

    def spawn(self) -> None:
        """Start gunicorn (it loads the app meanwhile: no database is needed until a
        request comes); ``wait`` for its first answer."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--preload",
                 "--bind", f"127.0.0.1:{self.port}", "tests.faults.wsgi:application"],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, killed whole by ``stop``
            )  # fmt: skip

    def wait(self) -> None:
        _wait(self.answers, 60, "gunicorn", self.log)

    def answers(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited\n{self.log.read_text(errors='replace')[-3000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/", timeout=2)
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    def stop(self) -> None:
        """Kill gunicorn and its workers at once (its own process group): a test server,
        nothing to finish (a graceful stop waits seconds for idle workers)."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""


def web_env(postgres: Postgres, redis: Redis, var: Path) -> dict[str, str]:
    """The environment the app is served with: the private services, no throttle or quota
    in the way of a load test, persistent database connections (as in production)."""
    return {
        **os.environ,
        "DATABASE_URL": postgres.url,
        "REDIS_URL": redis.url,
        "CELERY_BROKER_URL": redis.url,
        "CELERY_RESULT_BACKEND": redis.url,
        "DJANGO_SECRET_KEY": "faults-secret-key-not-for-production-0123456789abcdef",
        "DJANGO_DEBUG": "false",
        "STEREORANK_EMBEDDED": "true",  # plain static files, hosts 127.0.0.1, no HTTPS
        "STEREORANK_VAR_DIR": str(var),
        "DATABASE_CONN_MAX_AGE": "60",
        "DATABASE_CONNECT_TIMEOUT": "2",
        "STEREORANK_THROTTLE_SUBMIT": "100000/min",
        "STEREORANK_ANNOTATOR_QUOTA": "100000",
        "LOG_LEVEL": "ERROR",
        "PYTHONPATH": str(ROOT),
    }


class Stack:
    """The three private services in one temporary folder; ``close`` stops them all."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="stereorank-faults-"))
        if os.geteuid() == 0:
            shutil.chown(self.folder, OWNER, OWNER)
        self.postgres, self.redis = Postgres(self.folder), Redis(self.folder)
        (self.folder / "var").mkdir()
        self.web = Web(self.folder, web_env(self.postgres, self.redis, self.folder / "var"))

    def start(self, fill: Callable[[], None]) -> None:
        """Start everything; ``fill()`` makes the private database (``Postgres.copy_from``,
        or migrations) while gunicorn loads the app."""
        self.web.spawn()
        self.postgres.start()
        self.redis.start()
        fill()
        self.web.wait()

    def close(self) -> None:
        for stop in (self.web.stop, self.redis.stop, lambda: self.postgres.stop("immediate")):
            with suppress(OSError, subprocess.SubprocessError):
                stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def tail(self) -> str:
        """The end of gunicorn's and PostgreSQL's logs (for a failure's message)."""
        pg = self.postgres.log
        return f"{self.web.tail()}\n--- postgres\n" + (
            pg.read_text(errors="replace")[-2000:] if pg.exists() else ""
        )


@contextmanager
def pointed_at(stack: Stack):
    """This thread's Django database connection and the Celery app's broker on the
    private services (to seed, to read back, to relay the outbox), for a block: the
    ``default`` connection is a new one to the private database meanwhile (the one it
    replaces, and any transaction open on it, are left as they are), restored on leaving.
    """
    from celery import current_app
    from django.db import connections

    from tests.broker import point_broker

    original = connections["default"]
    if original.vendor != "postgresql":
        raise RuntimeError("the fault suite copies a PostgreSQL test database (DATABASE_URL)")
    private = type(original)(
        {**original.settings_dict, "NAME": DATABASE, "HOST": "127.0.0.1",
         "PORT": str(stack.postgres.port), "USER": "postgres", "PASSWORD": ""},
        alias="default",
    )  # fmt: skip
    conf = current_app.conf
    broker = conf.broker_url, conf.broker_transport_options
    connections["default"] = private
    point_broker(stack.redis.url, {})
    try:
        yield
    finally:
        private.close()
        connections["default"] = original
        point_broker(*broker)
