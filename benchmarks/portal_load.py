"""Load test: N concurrent simulated annotators against gunicorn on PostgreSQL.

Sets up a fresh database (catalogue, placeholder items, tasks, N annotators), starts
gunicorn (gunicorn.conf.py: gthread workers), logs every annotator in once (a token;
password hashing is a log-in cost, measured apart), then lets N threads, each on its own
keep-alive HTTP connection, loop over "next task" + "submit ranking" through the REST API
until their quota is done. Prints the load average, requests/s, p50/p95/p99 latency
(all, next, submit, log-in), the server's CPU per request (gunicorn's workers and the
PostgreSQL backends of its database, from /proc) and the rankings stored versus
submitted (lost or duplicated must both be zero).

``--compare OTHER_TREE`` measures this tree against another (e.g. a worktree of an older
commit sharing the venv, on ``--compare-database-url``) *paired*: both trees are served at
once, each on its own database and port, and every annotator does each task on both, in
alternating order. Both servers then run through the same moments of the machine (a
shared host's speed drifts by tens of percent within minutes, which alternating whole
runs measured as differences between the trees). ``--rounds`` paired runs; prints each
round's figures, the medians and the ratios (this tree / the other).

The annotators rank at random, and so would fail the attention checks: the quality
policy is relaxed to keep them in, so the path measured is a careful participant's, not
a stream of refusals. ``--warmup K`` lets each annotator do K tasks before the measurement
(the first requests of each path fill caches), ``--placeholders N`` makes N items per
prompt (N * 20 tasks of 6). ``--think-ms`` pauses each annotator between seeing a task and
submitting it and spreads their first arrivals over that time; 0, the default, is a
saturation test: latency is then bound by Little's law (annotators / throughput).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_portal \\
        .venv/bin/python benchmarks/portal_load.py --annotators 32
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_new .venv/bin/python \\
        benchmarks/portal_load.py --compare ../old-tree \\
        --compare-database-url postgres://postgres@127.0.0.1:5432/bench_old
"""

import argparse
import contextlib
import http.client
import json
import os
import random
import runpy
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import ROOT, arguments, gunicorn, load

PASSWORD = "bench-pass-123"
FIGURES = ("web_ms", "db_ms", "p95_ms")


class Api:
    """One annotator's keep-alive connection to one server."""

    def __init__(self, port: int):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.token: str | None = None

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict, float]:
        """POST JSON; (status, parsed body, seconds taken).

        A keep-alive connection the server closed while idle is opened again and
        the request sent once more, as browsers do (the server never read it).
        """
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        start = time.perf_counter()
        for attempt in (1, 2):
            try:
                self.connection.request("POST", path, json.dumps(body or {}), headers)
                response = self.connection.getresponse()
                raw = response.read()
                break
            except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
                self.connection.close()
                if attempt == 2:
                    raise
        elapsed = time.perf_counter() - start
        return response.status, json.loads(raw) if raw else {}, elapsed


def percentiles(seconds: list[float]) -> str:
    if len(seconds) < 2:
        return "n/a"
    q = statistics.quantiles(seconds, n=100)
    return f"p50 {q[49] * 1000:.1f}  p95 {q[94] * 1000:.1f}  p99 {q[98] * 1000:.1f} ms"


def cpu_seconds(pids: set[int]) -> dict[int, float]:
    """User + system CPU seconds of each live process (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    seen = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seen[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return seen


def children(parent: int) -> set[int]:
    """The processes whose parent is ``parent`` (gunicorn's workers)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.add(int(stat.parent.name))
    return found


def database_backends(url: str) -> set[int]:
    """PostgreSQL server processes serving the database at ``url`` (not this one's)."""
    import psycopg

    with psycopg.connect(url) as db:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


class Side:
    """One code tree served on its own database and port, and what its annotators saw."""

    def __init__(self, tree: Path, url: str, port: int, args: argparse.Namespace):
        self.tree, self.url, self.port = tree, url, port
        self.env = {
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": "bench-secret",
            "STEREORANK_EMBEDDED": "true",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            # Longer than any run: a backend that closed mid-run would take its CPU time
            # out of the PostgreSQL figure (its process is gone by the second reading).
            "DATABASE_CONN_MAX_AGE": "3600",
            "LOG_LEVEL": "WARNING",
            "STEREORANK_THROTTLE_AUTH": "100000/min",
            "STEREORANK_THROTTLE_SUBMIT": "100000/min",
            "STEREORANK_TASK_OVERLAP": "2",
            "STEREORANK_QUALITY_POLICY": json.dumps(
                {"max_failed_checks": 10**6, "gold_min_score": -1, "untouched_max_rate": 1}
            ),
            "STEREORANK_ANNOTATOR_QUOTA": str(args.tasks_each + args.warmup),
            "PYTHONPATH": str(tree),  # the tree served, not the venv's editable install
        }
        for name in ("workers", "threads"):
            if value := getattr(args, name):
                self.env[f"GUNICORN_{name.upper()}"] = str(value)
        self.logins: list[float] = []
        self.latencies: dict[str, list[float]] = {"next": [], "submit": []}
        self.failures: list[str] = []
        self.submitted = 0
        self.apis: dict[str, Api] = {}
        self.server = None

    def manage(self, *args: str) -> str:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=self.tree,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    def prepare(self, names: list[str], placeholders: int) -> None:
        self.manage("migrate", "--no-input")
        self.manage("collectstatic", "--no-input")
        self.manage("flush", "--no-input")
        self.manage("load_catalogue", "--placeholder-images", str(placeholders))
        self.manage("build_tasks", "--overlap", "2")
        self.manage(
            "shell",
            "-c",
            "from django.core.management import call_command\n"
            f"for name in {names!r}:\n"
            f"    call_command('create_annotator', name, password={PASSWORD!r}, consent=True)",
        )

    def log_in(self, name: str, lock: threading.Lock) -> None:
        api = self.apis[name]
        status, body, took = api.post("/api/auth/token/", {"username": name, "password": PASSWORD})
        with lock:
            self.logins.append(took)
            if status != 200:
                self.failures.append(f"log-in {name}: {status}")
        api.token = body.get("token")

    def task(self, name: str, rng: random.Random, lock: threading.Lock, measured: bool) -> bool:
        """One next task and its submit; False when the annotator has no more."""
        api = self.apis[name]
        status, task, took = api.post("/api/tasks/next/")
        with lock:
            if measured:
                self.latencies["next"].append(took)
            if status not in (200, 204):
                self.failures.append(f"next {name}: {status}")
        if status != 200:
            return False
        order = [item["id"] for item in task["items"]]
        rng.shuffle(order)
        status, _, took = api.post(f"/api/tasks/{task['id']}/ranking/", {"order": order})
        with lock:
            if measured:
                self.latencies["submit"].append(took)
            self.submitted += status == 201
            if status != 201:
                self.failures.append(f"submit {name}: {status}")
        return True

    def cpu(self) -> dict[str, dict[int, float]]:
        return {
            "web": cpu_seconds(children(self.server.pid)),
            "db": cpu_seconds(database_backends(self.url)),
        }

    def report(self, cpu: tuple[dict, dict], loads: tuple[str, str], wall: float) -> dict:
        """Print this side's figures; returns them (FIGURES, lost, duplicated, failed)."""
        stored, over = map(
            int,
            self.manage(
                "shell",
                "-c",
                "from annotation.models import Ranking, RankingTask; from django.db.models "
                "import F; print(Ranking.objects.count(), RankingTask.objects.filter("
                "ranking_count__gt=F('overlap')).count())",
            ).split()[-2:],
        )
        every = self.latencies["next"] + self.latencies["submit"]
        before, after = cpu
        per_request = {k: 1000 * spent(before[k], after[k]) / len(every) for k in after}
        conf = runpy.run_path(str(self.tree / "gunicorn.conf.py"))  # reads os.environ
        print(f"tree: {self.tree}  gunicorn: {conf['workers']} {conf['worker_class']} workers")
        print(f"load average before: {loads[0]}  after: {loads[1]}")
        print(f"requests: {len(every)}  wall: {wall:.2f} s  requests/s: {len(every) / wall:.1f}")
        print(f"latency all:    {percentiles(every)}")
        print(f"latency next:   {percentiles(self.latencies['next'])}")
        print(f"latency submit: {percentiles(self.latencies['submit'])}")
        print(
            f"server CPU per request: gunicorn {per_request['web']:.2f} ms + "
            f"PostgreSQL {per_request['db']:.2f} ms"
        )
        print(f"log-in (once per annotator, not in the figures above): {percentiles(self.logins)}")
        lost, duplicated = max(self.submitted - stored, 0), max(stored - self.submitted, 0)
        print(
            f"rankings submitted (201): {self.submitted}  stored: {stored}  lost: {lost}  "
            f"duplicated: {duplicated}  tasks over overlap: {over}  "
            f"failed requests: {len(self.failures)}"
        )
        for failure in self.failures[:10]:
            print(f"  {failure}")
        p95 = 1000 * statistics.quantiles(every, n=100)[94]
        return {
            "web_ms": per_request["web"],
            "db_ms": per_request["db"],
            "p95_ms": p95,
            "lost": lost,
            "duplicated": duplicated,
            "failed": len(self.failures),
        }


def run(args: argparse.Namespace, sides: list[Side]) -> list[dict]:
    """One measurement of every side at once; each side's figures."""
    names = [f"bench{i}" for i in range(args.annotators)]
    for side in sides:
        side.prepare(names, args.placeholders)
    lock = threading.Lock()
    # Each side's annotators draw the same orders: the sides see the same work.
    rngs = {(id(side), name): random.Random(name) for side in sides for name in names}

    def run_all(target) -> float:
        threads = [threading.Thread(target=target, args=(n,)) for n in names]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - start

    def annotate(count: int, measured: bool):
        def one(name: str) -> None:
            order, rng = list(sides), random.Random(f"{name} thinks")
            if names.index(name) % 2:  # half the annotators start on each side
                order.reverse()
            if args.think_ms:  # people do not all arrive in the same millisecond
                time.sleep(rng.uniform(0, args.think_ms / 1000))
            for _ in range(count):
                done = [s.task(name, rngs[(id(s), name)], lock, measured) for s in order]
                if not all(done):
                    return
                order.reverse()  # neither side always goes first
                if args.think_ms:
                    time.sleep(rng.uniform(0.5, 1.5) * args.think_ms / 1000)

        return one

    with contextlib.ExitStack() as stack:
        for side in sides:
            side.server = stack.enter_context(gunicorn(side.env, side.port, 150, side.tree))
            side.apis = {name: Api(side.port) for name in names}
        run_all(lambda name: [side.log_in(name, lock) for side in sides])
        if args.warmup:
            run_all(annotate(args.warmup, measured=False))
        for side in sides:
            for api in side.apis.values():
                api.connection.close()  # idle meanwhile; the measured loop starts fresh
        load_before, before = load(), [side.cpu() for side in sides]
        wall = run_all(annotate(args.tasks_each, measured=True))
        load_after, after = load(), [side.cpu() for side in sides]
    return [
        side.report((b, a), (load_before, load_after), wall)
        for side, b, a in zip(sides, before, after, strict=True)
    ]


def compare(args: argparse.Namespace) -> None:
    """``args.rounds`` paired runs of this tree and ``args.compare``; medians and ratios."""
    if not args.compare_database_url.startswith("postgres"):
        sys.exit("portal_load: --compare needs --compare-database-url (a PostgreSQL database)")
    this = Side(ROOT, os.environ["DATABASE_URL"], args.port, args)
    other = Side(Path(args.compare).resolve(), args.compare_database_url, args.port + 1, args)
    rounds = []
    for round_ in range(1, args.rounds + 1):
        print(f"--- round {round_}: this ({this.tree}) and other ({other.tree}), paired")
        fresh = [Side(s.tree, s.url, s.port, args) for s in (this, other)]
        rounds.append(run(args, fresh))
    print(f"\nmedians of {args.rounds} paired rounds (this = {ROOT}, other = {args.compare})")
    for i, figure in enumerate(FIGURES):
        a = statistics.median(r[0][figure] for r in rounds)
        b = statistics.median(r[1][figure] for r in rounds)
        ratios = " ".join(f"{r[0][figure] / r[1][figure]:.2f}" for r in rounds)
        print(f"  {figure:7} this {a:7.2f}  other {b:7.2f}  this/other {a / b:.2f}", end="")
        print(f"  (per round: {ratios})" if i < 2 else "")
    bad = [s for r in rounds for s in r if s["lost"] or s["duplicated"] or s["failed"]]
    print(f"  sides with a lost or duplicated ranking or a failed request: {len(bad)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=32)
    parser.add_argument("--tasks-each", type=int, default=10)
    parser.add_argument("--workers", type=int, default=None, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=None, help="threads per process")
    parser.add_argument("--think-ms", type=float, default=0.0, help="pause before a submit")
    parser.add_argument(
        "--warmup", type=int, default=0, help="tasks each annotator does before the measurement"
    )
    parser.add_argument(
        "--placeholders", type=int, default=10, help="placeholder items per prompt (tasks / 6)"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--compare", help="another code tree, measured paired with this one")
    parser.add_argument("--compare-database-url", default="", help="the other tree's database")
    parser.add_argument("--rounds", type=int, default=3, help="paired runs with --compare")
    args = arguments(parser, {"annotators": 2, "tasks_each": 2, "workers": 1, "threads": 1})
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("portal_load: set DATABASE_URL to a PostgreSQL database (it is flushed)")
    for name in ("workers", "threads"):  # gunicorn.conf.py, read for the report, sees them
        if value := getattr(args, name):
            os.environ[f"GUNICORN_{name.upper()}"] = str(value)
    if args.compare:
        return compare(args)
    print(f"annotators: {args.annotators}  tasks each: {args.tasks_each}  cpus: {os.cpu_count()}")
    run(args, [Side(ROOT, os.environ["DATABASE_URL"], args.port, args)])


if __name__ == "__main__":
    main()
