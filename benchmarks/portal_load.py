"""Load test: N concurrent simulated annotators against gunicorn on PostgreSQL.

Sets up a fresh database (catalogue, 1,200 placeholder items, tasks), starts
gunicorn, and lets N threads each log in with a token and loop over
"next task" + "submit ranking" through the REST API until nothing is left or
the request budget is spent. Prints requests/s, p50/p95/p99 latency and the
rankings stored versus submitted (lost or duplicated must both be zero).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_portal \
        .venv/bin/python benchmarks/portal_load.py --annotators 32
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def request(url: str, body: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    data = json.dumps(body or {}).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else {}
    except urllib.error.HTTPError as error:
        return error.code, {}


def manage(env: dict, *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=32)
    parser.add_argument("--tasks-each", type=int, default=6)
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("portal_load: set DATABASE_URL to a PostgreSQL database (it is flushed)")

    env = {
        **os.environ,
        "DJANGO_SECRET_KEY": "bench-secret",
        "STEREORANK_EMBEDDED": "true",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "STEREORANK_THROTTLE_AUTH": "100000/min",
        "STEREORANK_THROTTLE_SUBMIT": "100000/min",
        "STEREORANK_TASK_OVERLAP": "2",
        "STEREORANK_ANNOTATOR_QUOTA": str(args.tasks_each),
    }
    manage(env, "migrate", "--no-input")
    manage(env, "collectstatic", "--no-input")
    manage(env, "flush", "--no-input")
    manage(env, "load_catalogue", "--placeholder-images")
    manage(env, "build_tasks", "--overlap", "2")
    names = [f"bench{i}" for i in range(args.annotators)]
    for name in names:
        manage(env, "create_annotator", name, "--password", "bench-pass-123", "--consent")

    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "web.wsgi",
            "--bind",
            f"127.0.0.1:{args.port}",
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/login/", timeout=5)
                break
            except OSError:
                time.sleep(0.2)
        latencies: list[float] = []
        submitted = 0
        lock = threading.Lock()

        def annotator(name: str) -> None:
            nonlocal submitted
            _, body = request(
                f"{base}/api/auth/token/", {"username": name, "password": "bench-pass-123"}
            )
            token = body["token"]
            rng = random.Random(name)
            for _ in range(args.tasks_each):
                t0 = time.perf_counter()
                status, task = request(f"{base}/api/tasks/next/", token=token)
                t1 = time.perf_counter()
                if status != 200:
                    with lock:
                        latencies.append(t1 - t0)
                    return
                order = [item["id"] for item in task["items"]]
                rng.shuffle(order)
                status, _ = request(
                    f"{base}/api/tasks/{task['id']}/ranking/", {"order": order}, token=token
                )
                t2 = time.perf_counter()
                with lock:
                    latencies.extend([t1 - t0, t2 - t1])
                    submitted += status == 201

        threads = [threading.Thread(target=annotator, args=(n,)) for n in names]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait()

    out = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from annotation.models import Ranking, RankingTask; from django.db.models import F;"
            "print(Ranking.objects.count(), RankingTask.objects.filter("
            "ranking_count__gt=F('overlap')).count())",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    stored, over = int(out[-2]), int(out[-1])
    q = statistics.quantiles(latencies, n=100)
    print(f"annotators: {args.annotators}  gunicorn workers: {args.workers}")
    rate = len(latencies) / wall
    print(f"requests: {len(latencies)}  wall: {wall:.2f} s  requests/s: {rate:.1f}")
    print(f"latency ms: p50 {q[49] * 1000:.1f}  p95 {q[94] * 1000:.1f}  p99 {q[98] * 1000:.1f}")
    print(
        f"rankings submitted (201): {submitted}  stored: {stored}  "
        f"lost: {max(submitted - stored, 0)}  duplicated: {max(stored - submitted, 0)}  "
        f"tasks over overlap: {over}"
    )


if __name__ == "__main__":
    main()
