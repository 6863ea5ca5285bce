"""Scale: next-task, submit, snapshot, quality and perspective reports and exports at
10,000 / 100,000 / 1,000,000 rankings (issue 19).

For each size (``--sizes``) a fresh PostgreSQL database is made from a migrated
template and a study built in it by ``benchmarks/scale_build.py`` (10,000 annotators
with demographics, tasks of 6 items, 2,000 open tasks at every size). Then:

* **next-task and submit** through the REST API (DRF's ``APIClient`` in this process,
  token auth, ``--requests`` annotators each take and submit one task): p50 and p95
  wall time, SQL statements per request, and server CPU per request (this process's
  CPU time plus the PostgreSQL backend's, read from ``/proc``);
* **snapshot** (``create_snapshot``), the **quality report** computed with
  ``--draws`` bootstrap draws (``quality_store.refresh``, what the default queue's
  worker runs) and the **quality dashboard** served from the stored report, a
  **perspective report** of one field (``age_band``: every ranking of the snapshot,
  scores from a fixed function of the item: the encoder is left out), and the
  **rankings and pairs exports** streamed to nothing: each in a child process of
  its own, with its peak resident memory (``ru_maxrss``) and, beside it, the
  child's memory before it started (Django loaded).

Prints a table, then one JSON line per size. A progress bar (tqdm) shows the build
and each measurement; the 1M size takes tens of minutes (the build alone: the
time is printed).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/anything \\
        .venv/bin/python benchmarks/scale.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from _common import ROOT, load

CHILD_MEASURES = ("snapshot", "quality", "perspective", "export_rankings", "export_pairs")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def database_url(name: str) -> str:
    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}"))


def admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(database_url("postgres"), autocommit=True) as db:
        db.execute(sql)


def environment(db: str) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": database_url(db),
        "DJANGO_SETTINGS_MODULE": "web.settings",
        "DJANGO_SECRET_KEY": "bench-scale",
        "STEREORANK_EMBEDDED": "true",
        "STEREORANK_THROTTLE_AUTH": "1000000/min",
        "STEREORANK_THROTTLE_SUBMIT": "1000000/min",
        "LOG_LEVEL": "WARNING",
    }


def setup_django(db: str) -> None:
    os.environ.update(environment(db))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# ---- the children: one measurement each, in a fresh process ----------------------


def child(what: str, draws: int) -> dict:
    before = rss_mb()
    start = time.perf_counter()
    out: dict = {}
    if what == "snapshot":
        from training.snapshots import create_snapshot

        out["examples"] = create_snapshot().example_count
    elif what == "quality":
        from annotation import quality_store

        out["draws"] = draws
        out["n_rankings"] = quality_store.refresh(False, draws).report["n_rankings"]
    elif what == "perspective":
        out.update(perspective())
    else:
        from annotation.exports import jsonl_lines, pair_rows, ranking_rows

        rows = ranking_rows() if what == "export_rankings" else pair_rows()
        out["lines"] = out["bytes"] = 0
        for line in jsonl_lines(rows):
            out["lines"] += 1
            out["bytes"] += len(line)
    return {**out, "seconds": time.perf_counter() - start, "peak_mb": rss_mb(), "base_mb": before}


def perspective() -> dict:
    from django.conf import settings

    from annotation.quality.records import group_of
    from training.ml.alignment import RankedList
    from training.ml.alignment_report import perspective_report
    from training.models import DatasetSnapshot
    from training.perspectives import _study

    snapshot = DatasetSnapshot.objects.latest("pk")
    rankings, item_prompt, texts, eval_prompts = _study(snapshot)
    scores = {item: (item % 13) / 13 for item in texts}
    ranked = [
        RankedList(rid, annotator, tuple(order), group_of(demo or {}, "age_band"), occupation)
        for rid, annotator, order, demo, occupation in rankings
    ]
    report = perspective_report(
        ranked, item_prompt, scores, k=settings.STEREORANK["GROUP_K"], prompts=eval_prompts
    )
    return {"rankings": len(ranked), "groups": len(report.groups)}


# ---- the parent: API and dashboard in process -----------------------------------


def backend_cpu(connection) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(connection, call) -> tuple[object, dict]:
    from django.test.utils import CaptureQueriesContext

    cpu, db_cpu, start = time.process_time(), backend_cpu(connection), time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        result = call()
    wall = time.perf_counter() - start
    db = backend_cpu(connection) - db_cpu
    return result, {
        "ms": wall * 1000,
        "sql": len(queries),
        "cpu_ms": (time.process_time() - cpu + db) * 1000,
    }


def summary(samples: list[dict]) -> dict:
    ms = [s["ms"] for s in samples]
    q = statistics.quantiles(ms, n=20) if len(ms) > 1 else ms * 19
    return {
        "p50_ms": statistics.median(ms),
        "p95_ms": q[18],
        "sql": statistics.median(s["sql"] for s in samples),
        "cpu_ms": statistics.median(s["cpu_ms"] for s in samples),
    }


def api_figures(requests: int, bar) -> dict:
    from django.db import connection
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from annotation.models import AnnotatorProfile

    profiles = list(AnnotatorProfile.objects.select_related("user").order_by("pk")[:requests])
    nexts, submits = [], []
    for profile in profiles:
        token, _ = Token.objects.get_or_create(user=profile.user)
        client = APIClient(HTTP_HOST="localhost", HTTP_AUTHORIZATION=f"Token {token.key}")
        response, figures = timed(connection, lambda c=client: c.post("/api/tasks/next/"))
        assert response.status_code == 200, response.content
        nexts.append(figures)
        task = response.json()
        order = [item["id"] for item in task["items"]][::-1]
        response, figures = timed(
            connection,
            lambda c=client, t=task, order=order: c.post(
                f"/api/tasks/{t['id']}/ranking/",
                {"order": order, "seconds_spent": 12},
                format="json",
            ),
        )
        assert response.status_code == 201, response.content
        submits.append(figures)
        bar.update(1)
    return {"next_task": summary(nexts), "submit": summary(submits)}


def dashboard_figures(tries: int = 10) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotation.models import QualityReport

    staff = get_user_model().objects.create_user("bench-staff", is_staff=True)
    client = Client(HTTP_HOST="localhost")
    client.force_login(staff)
    samples = []
    for _ in range(tries):
        start = time.perf_counter()
        response = client.get("/dashboards/quality/")
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    stored = QualityReport.objects.get()
    return {
        "p50_ms": statistics.median(samples),
        "max_ms": max(samples),
        "report_kb": len(json.dumps(stored.report)) / 1024,
    }


def run_size(size: int, args, template: str) -> dict:
    from tqdm import tqdm

    db = "bench_scale"
    admin(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    admin(f"CREATE DATABASE {db} TEMPLATE {template}")
    figures: dict = {"rankings": size}
    steps = 11 + args.requests + len(CHILD_MEASURES)
    with tqdm(total=steps, desc=f"{size:,} rankings", file=sys.stderr) as bar:
        start = time.perf_counter()
        script = f"""
import sys; sys.path.insert(0, {str(ROOT / "benchmarks")!r}); sys.path.insert(0, {str(ROOT)!r})
import django, json; django.setup()
from scale_build import build
print(json.dumps(build({size}, lambda name: print("step", name, flush=True))))
"""
        proc = subprocess.Popen(
            [sys.executable, "-c", script],
            env=environment(db),
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for line in proc.stdout:
            if line.startswith("step"):
                bar.update(1)
            elif line.startswith("{"):
                figures["built"] = json.loads(line)
        if proc.wait():
            sys.exit(f"scale: building {size} rankings failed")
        figures["build_s"] = time.perf_counter() - start
        for what in CHILD_MEASURES:
            out = subprocess.run(
                [sys.executable, __file__, "--child", what, f"--draws={draws_for(size, args)}"],
                env=environment(db),
                capture_output=True,
                text=True,
                cwd=ROOT,
            )
            if out.returncode:
                sys.exit(f"scale: {what} at {size} failed:\n{out.stderr[-3000:]}")
            figures[what] = json.loads(out.stdout.splitlines()[-1])
            bar.update(1)
        os.environ.update(environment(db))
        setup_django_from_env()
        from django.db import connection

        figures.update(api_figures(args.requests, bar))
        figures["dashboard"] = dashboard_figures()
        connection.close()
    return figures


def draws_for(size: int, args) -> int:
    return args.draws if size <= args.full_draws_up_to else args.big_draws


def table(results: list[dict]) -> None:
    rows = [
        ("build (s)", lambda r: f"{r['build_s']:.0f}"),
        (
            "next-task p50 / p95 (ms)",
            lambda r: f"{r['next_task']['p50_ms']:.1f} / {r['next_task']['p95_ms']:.1f}",
        ),
        (
            "next-task SQL, CPU (ms)",
            lambda r: f"{r['next_task']['sql']:.0f}, {r['next_task']['cpu_ms']:.1f}",
        ),
        (
            "submit p50 / p95 (ms)",
            lambda r: f"{r['submit']['p50_ms']:.1f} / {r['submit']['p95_ms']:.1f}",
        ),
        (
            "submit SQL, CPU (ms)",
            lambda r: f"{r['submit']['sql']:.0f}, {r['submit']['cpu_ms']:.1f}",
        ),
        (
            "snapshot (s, peak MB)",
            lambda r: f"{r['snapshot']['seconds']:.1f}, {r['snapshot']['peak_mb']:.0f}",
        ),
        (
            "quality report (draws: s, peak MB)",
            lambda r: (
                f"{r['quality']['draws']}: {r['quality']['seconds']:.1f}, "
                f"{r['quality']['peak_mb']:.0f}"
            ),
        ),
        (
            "quality dashboard p50 / max (ms)",
            lambda r: f"{r['dashboard']['p50_ms']:.0f} / {r['dashboard']['max_ms']:.0f}",
        ),
        (
            "perspective, one field (s, peak MB)",
            lambda r: f"{r['perspective']['seconds']:.1f}, {r['perspective']['peak_mb']:.0f}",
        ),
        (
            "export rankings (s, peak MB)",
            lambda r: (
                f"{r['export_rankings']['seconds']:.1f}, {r['export_rankings']['peak_mb']:.0f}"
            ),
        ),
        (
            "export pairs (s, peak MB)",
            lambda r: f"{r['export_pairs']['seconds']:.1f}, {r['export_pairs']['peak_mb']:.0f}",
        ),
    ]
    print(f"{'':38}" + "".join(f"{r['rankings']:>18,}" for r in results))
    for name, cell in rows:
        print(f"{name:38}" + "".join(f"{cell(r):>18}" for r in results))
    base = min(r["export_rankings"]["base_mb"] for r in results)
    print(f"(a child's memory with Django loaded, before measuring: about {base:.0f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated rankings")
    parser.add_argument("--requests", type=int, default=100, help="next-task + submit pairs")
    parser.add_argument("--draws", type=int, default=1000, help="quality bootstrap draws")
    parser.add_argument("--full-draws-up-to", type=int, default=100_000)
    parser.add_argument("--big-draws", type=int, default=100, help="draws past that size")
    parser.add_argument("--child", choices=CHILD_MEASURES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        setup_django_from_env()
        print(json.dumps(child(args.child, args.draws)))
        return
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("scale: set DATABASE_URL to a PostgreSQL server (databases bench_scale* are made)")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average before: {load()}", flush=True)
    template = "bench_scale_template"
    admin(f"DROP DATABASE IF EXISTS {template} WITH (FORCE)")
    admin(f"CREATE DATABASE {template}")
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        env=environment(template),
        check=True,
        cwd=ROOT,
    )
    results = []
    for size in sizes:
        start = time.perf_counter()
        results.append(run_size(size, args, template))
        results[-1]["total_s"] = time.perf_counter() - start
        print(
            f"{size:,} rankings measured in {results[-1]['total_s']:.0f} s (load {load()})",
            flush=True,
        )
        print(json.dumps(results[-1]), flush=True)  # at once: a later size may take hours
    table(results)
    print(f"load average after: {load()}")
    for r in results:
        print(json.dumps(r))


def setup_django_from_env() -> None:
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


if __name__ == "__main__":
    main()
