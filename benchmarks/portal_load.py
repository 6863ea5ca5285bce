"""Load test: N concurrent simulated annotators against gunicorn on PostgreSQL.

Sets up a fresh database (catalogue, 1,200 placeholder items, tasks, N annotators),
starts gunicorn (gunicorn.conf.py: gthread workers), logs every annotator in
once (a token; password hashing is a log-in cost, measured apart), then lets N
threads, each on its own keep-alive HTTP connection, loop over "next task" +
"submit ranking" through the REST API until their quota is done. Prints the
load average, requests/s, p50/p95/p99 latency (all, next, submit, log-in) and the
rankings stored versus submitted (lost or duplicated must both be zero).

``--compare OTHER_TREE`` runs this benchmark on two code trees in turn (this one
on DATABASE_URL, the other, e.g. a worktree of an older commit sharing the venv, on
``--compare-database-url``), ``--rounds`` times alternated, and prints each run's
figures, the medians and the ratios (this tree / the other).

``--think-ms`` pauses each annotator between seeing a task and submitting it
(a person takes seconds) and spreads their first arrivals over that time; 0,
the default, is a saturation test: then latency is bound by Little's law
(annotators / throughput), not by the time one request takes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_portal \\
        .venv/bin/python benchmarks/portal_load.py --annotators 32
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_new .venv/bin/python \\
        benchmarks/portal_load.py --compare ../old-tree \\
        --compare-database-url postgres://postgres@127.0.0.1:5432/bench_old
"""

import argparse
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

from _common import ROOT, gunicorn, load

PASSWORD = "bench-pass-123"


class Api:
    """One annotator's keep-alive connection to the server."""

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


def manage(env: dict, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=env["BENCH_TREE"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


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
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.add(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return found


def database_backends() -> set[int]:
    """PostgreSQL server processes serving the benchmark's database (not this one)."""
    import psycopg

    with psycopg.connect(os.environ["DATABASE_URL"]) as db:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def server_cpu(server: int) -> dict[str, dict[int, float]]:
    return {"web": cpu_seconds(children(server)), "db": cpu_seconds(database_backends())}


FIGURES = ("web_ms", "db_ms", "p95_ms", "requests_per_s")


def compare(args: argparse.Namespace) -> None:
    """Alternate this tree and ``args.compare`` ``args.rounds`` times; medians and ratios."""
    if not args.compare_database_url.startswith("postgres"):
        sys.exit("portal_load: --compare needs --compare-database-url (a PostgreSQL database)")
    trees = {
        "this": (ROOT, os.environ["DATABASE_URL"]),
        "other": (Path(args.compare).resolve(), args.compare_database_url),
    }
    passed = [f"--annotators={args.annotators}", f"--tasks-each={args.tasks_each}",
              f"--think-ms={args.think_ms}", f"--port={args.port}"]  # fmt: skip
    passed += [f"--{k}={v}" for k in ("workers", "threads") if (v := getattr(args, k))]
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for round_ in range(1, args.rounds + 1):
        for name, (tree, url) in trees.items():
            out = subprocess.run(
                [sys.executable, __file__, *passed, f"--tree={tree}", "--json"],
                env={**os.environ, "DATABASE_URL": url},
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            print(f"--- round {round_}: {name} ({tree})\n{out}", end="", flush=True)
            runs[name].append(json.loads(out.splitlines()[-1]))
    print(f"\nmedians of {args.rounds} alternated rounds (this = {ROOT}, other = {args.compare})")
    medians = {
        n: {f: statistics.median(r[f] for r in rs) for f in FIGURES} for n, rs in runs.items()
    }
    for figure in FIGURES:
        this, other = medians["this"][figure], medians["other"][figure]
        print(f"  {figure:15} this {this:8.2f}  other {other:8.2f}  this/other {this / other:.2f}")
    ratios = [r["web_ms"] / o["web_ms"] for r, o in zip(runs["this"], runs["other"], strict=True)]
    print("  gunicorn CPU ratio per round: " + " ".join(f"{x:.2f}" for x in ratios))
    ratios = [r["db_ms"] / o["db_ms"] for r, o in zip(runs["this"], runs["other"], strict=True)]
    print("  PostgreSQL CPU ratio per round: " + " ".join(f"{x:.2f}" for x in ratios))
    bad = [r for rs in runs.values() for r in rs if r["lost"] or r["duplicated"] or r["failed"]]
    print(f"  runs with a lost or duplicated ranking or a failed request: {len(bad)}")


def spent(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(t - before.get(pid, 0.0) for pid, t in after.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=32)
    parser.add_argument("--tasks-each", type=int, default=10)
    parser.add_argument("--workers", type=int, default=None, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=None, help="threads per process")
    parser.add_argument("--think-ms", type=float, default=0.0, help="pause before a submit")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--tree", default=str(ROOT), help="the code tree to serve")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    parser.add_argument("--compare", help="another code tree, alternated with this one")
    parser.add_argument("--compare-database-url", default="", help="the other tree's database")
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --compare")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("portal_load: set DATABASE_URL to a PostgreSQL database (it is flushed)")
    if args.compare:
        return compare(args)

    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": "bench-secret",
        "STEREORANK_EMBEDDED": "true",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DATABASE_CONN_MAX_AGE": "60",
        "LOG_LEVEL": "WARNING",
        "STEREORANK_THROTTLE_AUTH": "100000/min",
        "STEREORANK_THROTTLE_SUBMIT": "100000/min",
        "STEREORANK_TASK_OVERLAP": "2",
        "STEREORANK_ANNOTATOR_QUOTA": str(args.tasks_each),
        "BENCH_TREE": args.tree,
        "PYTHONPATH": args.tree,  # the tree served, not the venv's editable install
    }
    if args.workers:
        env["GUNICORN_WORKERS"] = os.environ["GUNICORN_WORKERS"] = str(args.workers)
    if args.threads:
        env["GUNICORN_THREADS"] = os.environ["GUNICORN_THREADS"] = str(args.threads)
    manage(env, "migrate", "--no-input")
    manage(env, "collectstatic", "--no-input")
    manage(env, "flush", "--no-input")
    manage(env, "load_catalogue", "--placeholder-images")
    manage(env, "build_tasks", "--overlap", "2")
    names = [f"bench{i}" for i in range(args.annotators)]
    manage(
        env,
        "shell",
        "-c",
        "from django.core.management import call_command\n"
        f"for name in {names!r}:\n"
        f"    call_command('create_annotator', name, password={PASSWORD!r}, consent=True)",
    )

    logins: list[float] = []
    latencies: dict[str, list[float]] = {"next": [], "submit": []}
    failures: list[str] = []
    submitted = 0
    lock = threading.Lock()
    with gunicorn(env, args.port, tries=150, cwd=Path(args.tree)) as server:
        apis = {name: Api(args.port) for name in names}

        def log_in(name: str) -> None:
            api = apis[name]
            status, body, took = api.post(
                "/api/auth/token/", {"username": name, "password": PASSWORD}
            )
            with lock:
                logins.append(took)
                if status != 200:
                    failures.append(f"log-in {name}: {status}")
            api.token = body.get("token")

        def annotate(name: str) -> None:
            nonlocal submitted
            api, rng = apis[name], random.Random(name)
            if args.think_ms:  # people do not all arrive in the same millisecond
                time.sleep(rng.uniform(0, args.think_ms / 1000))
            for _ in range(args.tasks_each):
                status, task, took = api.post("/api/tasks/next/")
                with lock:
                    latencies["next"].append(took)
                if status != 200:
                    if status != 204:
                        with lock:
                            failures.append(f"next {name}: {status}")
                    return
                order = [item["id"] for item in task["items"]]
                rng.shuffle(order)
                if args.think_ms:
                    time.sleep(rng.uniform(0.5, 1.5) * args.think_ms / 1000)
                status, _, took = api.post(f"/api/tasks/{task['id']}/ranking/", {"order": order})
                with lock:
                    latencies["submit"].append(took)
                    submitted += status == 201
                    if status != 201:
                        failures.append(f"submit {name}: {status}")

        def run_all(target) -> float:
            threads = [threading.Thread(target=target, args=(n,)) for n in names]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return time.perf_counter() - start

        run_all(log_in)
        for api in apis.values():
            api.connection.close()  # idle through the log-ins; the loop starts fresh
        load_before, cpu_before = load(), server_cpu(server.pid)
        wall = run_all(annotate)
        load_after, cpu_after = load(), server_cpu(server.pid)

    out = manage(
        env,
        "shell",
        "-c",
        "from annotation.models import Ranking, RankingTask; from django.db.models import F;"
        "print(Ranking.objects.count(), RankingTask.objects.filter("
        "ranking_count__gt=F('overlap')).count())",
    ).split()
    stored, over = int(out[-2]), int(out[-1])
    every = latencies["next"] + latencies["submit"]
    conf = runpy.run_path(str(Path(args.tree) / "gunicorn.conf.py"))  # reads the same env
    print(
        f"annotators: {args.annotators}  tasks each: {args.tasks_each}  "
        f"think: {args.think_ms:.0f} ms  gunicorn: {conf['workers']} {conf['worker_class']} "
        f"workers x {conf['threads']} threads  cpus: {os.cpu_count()}"
    )
    print(f"load average before: {load_before}  after: {load_after}")
    print(f"requests: {len(every)}  wall: {wall:.2f} s  requests/s: {len(every) / wall:.1f}")
    print(f"latency all:    {percentiles(every)}")
    print(f"latency next:   {percentiles(latencies['next'])}")
    print(f"latency submit: {percentiles(latencies['submit'])}")
    per_request = {k: 1000 * spent(cpu_before[k], cpu_after[k]) / len(every) for k in cpu_after}
    print(
        f"server CPU per request: gunicorn {per_request['web']:.1f} ms + "
        f"PostgreSQL {per_request['db']:.1f} ms (capacity on {os.cpu_count()} idle CPUs: "
        f"~{os.cpu_count() * 1000 / (per_request['web'] + per_request['db']):.0f} requests/s)"
    )
    workers = sorted(t - cpu_before["web"].get(pid, 0.0) for pid, t in cpu_after["web"].items())
    print("gunicorn CPU by worker: " + " ".join(f"{t:.2f} s" for t in workers))
    print(f"log-in (once per annotator, not in the figures above): {percentiles(logins)}")
    print(
        f"rankings submitted (201): {submitted}  stored: {stored}  "
        f"lost: {max(submitted - stored, 0)}  duplicated: {max(stored - submitted, 0)}  "
        f"tasks over overlap: {over}  failed requests: {len(failures)}"
    )
    for failure in failures[:10]:
        print(f"  {failure}")
    if args.json:
        p95 = 1000 * statistics.quantiles(every, n=100)[94]
        figures = dict(
            zip(
                FIGURES,
                [per_request["web"], per_request["db"], p95, len(every) / wall],
                strict=True,
            )
        )
        lost, duplicated = max(submitted - stored, 0), max(stored - submitted, 0)
        print(
            json.dumps({**figures, "lost": lost, "duplicated": duplicated, "failed": len(failures)})
        )


if __name__ == "__main__":
    main()
