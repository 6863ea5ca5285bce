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
  **perspective report** (every demographic field of the latest snapshot, as the default
  queue's worker computes it; scores from a fixed function of the item: the encoder is
  left out), the **active sampler's job** (``update_priorities`` on a seeded MiniLM
  head; the items' embeddings cached before it is timed), the **rankings and pairs
  exports** streamed to nothing and the **validation report** of a validation study of
  as many rankings built beside it: each in a child process of its own, with its peak
  resident memory (``ru_maxrss``) and, beside it, the child's memory before it started
  (Django loaded).

Prints a table, then one JSON line per size. A progress bar (tqdm) shows the build
and each measurement; the 1M size takes tens of minutes (the build alone: the
time is printed).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/anything \\
        .venv/bin/python benchmarks/scale.py --sizes 10000,100000

``--db NAME`` names the databases (``NAME_template``, ``NAME_<size>``); ``--reuse``
keeps a size's database once built (the measurements run on it again: a stored
quality report is deleted before the report is timed). ``--only`` picks measurements
(``quality,dashboard``: the report, then the page and ``/api/staff/quality/`` served
from it). ``--compare TREE`` times the chosen measurements with another checkout's
code too (a worktree of the commit before a change), alternately on the same
database, so a before/after ratio comes from one run on one load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from _common import ROOT, arguments, load
from scale_measure import api_figures, child

CHILD_MEASURES = (
    "snapshot", "quality", "perspective", "sampler", "export_rankings", "export_pairs",
    "validation",
)  # fmt: skip
MEASURES = (*CHILD_MEASURES, "api", "dashboard")


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


def exists(db: str) -> bool:
    import psycopg

    with psycopg.connect(database_url("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone()
    return found is not None


def measure(what: str, size: int, args, db: str, root: Path = ROOT) -> dict:
    """One measurement in a child process running ``root``'s code."""
    draws = draws_for(size, args)
    out = subprocess.run(
        [sys.executable, __file__, "--child", what, f"--draws={draws}", f"--size={size}",
         "--root", str(root)],  # fmt: skip
        # the page serves the stored report of the deployment's draws: the ones just used
        env={**environment(db), "STEREORANK_QUALITY_N_BOOT": str(draws)},
        capture_output=True,
        text=True,
        cwd=root,
    )  # fmt: skip
    if out.returncode:
        sys.exit(f"scale: {what} at {size} ({root}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def run_size(size: int, args, template: str) -> dict:
    from tqdm import tqdm

    db = f"{args.db}_{size}"
    only = args.only.split(",") if args.only else list(MEASURES)
    figures: dict = {"rankings": size}
    reuse = args.reuse and exists(db)
    steps = (0 if reuse else 11) + len(only) * (2 if args.compare else 1)
    if "api" in only:
        steps += args.requests - 1
    with tqdm(total=steps, desc=f"{size:,} rankings", file=sys.stderr) as bar:
        if reuse:  # migrations added since it was built
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
                env=environment(db),
                check=True,
                cwd=ROOT,
            )
        else:
            build_database(size, db, template, figures, bar)
        # --compare's code first, then this tree's: the page reads the report just made
        trees = [("_compare", Path(args.compare))] if args.compare else []
        for suffix, root in [*trees, ("", ROOT)]:
            for what in (w for w in only if w != "api"):
                figures[what + suffix] = measure(what, size, args, db, root)
                bar.update(1)
        if "api" in only:
            os.environ.update(environment(db))
            setup_django_from_env()
            from django.db import connection

            figures.update(api_figures(args.requests, bar))
            connection.close()
    return figures


def build_database(size: int, db: str, template: str, figures: dict, bar) -> None:
    admin(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    admin(f"CREATE DATABASE {db} TEMPLATE {template}")
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


def draws_for(size: int, args) -> int:
    return args.draws if size <= args.full_draws_up_to else args.big_draws


def _s_mb(key: str):
    return lambda r: f"{r[key]['seconds']:.1f}, {r[key]['peak_mb']:.0f}"


def _ms(key: str, sub: str):
    return lambda r: f"{r[key][sub]['p50_ms']:.0f} / {r[key][sub]['p95_ms']:.0f}"


ROWS = (
    ("build (s)", "build_s", lambda r: f"{r['build_s']:.0f}"),
    ("next-task p50 / p95 (ms)", "next_task",
     lambda r: f"{r['next_task']['p50_ms']:.1f} / {r['next_task']['p95_ms']:.1f}"),
    ("next-task SQL, CPU (ms)", "next_task",
     lambda r: f"{r['next_task']['sql']:.0f}, {r['next_task']['cpu_ms']:.1f}"),
    ("submit p50 / p95 (ms)", "submit",
     lambda r: f"{r['submit']['p50_ms']:.1f} / {r['submit']['p95_ms']:.1f}"),
    ("submit SQL, CPU (ms)", "submit",
     lambda r: f"{r['submit']['sql']:.0f}, {r['submit']['cpu_ms']:.1f}"),
    ("snapshot (s, peak MB)", "snapshot", _s_mb("snapshot")),
    ("quality report (draws: s, peak MB)", "quality",
     lambda r: f"{r['quality']['draws']}: {r['quality']['seconds']:.1f}, "
     f"{r['quality']['peak_mb']:.0f}"),
    ("quality page p50 / p95 (ms)", "dashboard", _ms("dashboard", "page")),
    ("quality page sorted, page 3 (ms)", "dashboard", _ms("dashboard", "page_sorted")),
    ("/api/staff/quality/ p50 / p95 (ms)", "dashboard", _ms("dashboard", "api")),
    ("perspective report, every field (s, peak MB)", "perspective", _s_mb("perspective")),
    ("active sampler's job (s, peak MB)", "sampler",
     lambda r: f"{r['sampler']['job_s']:.1f}, {r['sampler']['peak_mb']:.0f}"),
    ("export rankings (s, peak MB)", "export_rankings", _s_mb("export_rankings")),
    ("validation report (draws: s, peak MB)", "validation",
     lambda r: f"{r['validation']['draws']}: {r['validation']['job_s']:.1f}, "
     f"{r['validation']['peak_mb']:.0f}"),
    ("export pairs (s, peak MB)", "export_pairs", _s_mb("export_pairs")),
)  # fmt: skip


def table(results: list[dict]) -> None:
    """The figures of every size, and those of ``--compare``'s code under them."""
    print(f"{'':38}" + "".join(f"{r['rankings']:>18,}" for r in results))
    for suffix, label in (("", ""), ("_compare", " [compare]")):
        for name, key, cell in ROWS:
            present = [r for r in results if key + suffix in r]
            if len(present) == len(results):
                shifted = [{**r, key: r[key + suffix]} for r in results]
                print(f"{name + label:38}" + "".join(f"{cell(r):>18}" for r in shifted))
    bases = [r[k]["base_mb"] for r in results for k in ("quality", "snapshot") if k in r]
    if bases:
        print(f"(a child's memory with Django loaded, before measuring: about {min(bases):.0f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated rankings")
    parser.add_argument("--requests", type=int, default=100, help="next-task + submit pairs")
    parser.add_argument("--draws", type=int, default=1000, help="quality bootstrap draws")
    parser.add_argument("--full-draws-up-to", type=int, default=100_000)
    parser.add_argument("--big-draws", type=int, default=100, help="draws past that size")
    parser.add_argument("--db", default="bench_scale", help="database name prefix")
    parser.add_argument("--reuse", action="store_true", help="keep a size's built database")
    parser.add_argument("--only", help=f"comma-separated, of {','.join(MEASURES)}")
    parser.add_argument("--compare", help="another checkout whose code is timed too")
    parser.add_argument("--child", choices=MEASURES, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    args = arguments(
        parser,
        {"sizes": "200", "requests": 5, "draws": 10, "big_draws": 5, "db": "bench_smoke"},
    )
    if args.child:
        setup_django_from_env(Path(args.root))
        print(json.dumps(child(args.child, args.draws, args.size)))
        return
    unknown = set(args.only.split(",") if args.only else ()) - set(MEASURES)
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}; choose from {', '.join(MEASURES)}")
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("scale: set DATABASE_URL to a PostgreSQL server (databases bench_scale* are made)")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average before: {load()}", flush=True)
    template = f"{args.db}_template"
    if not (args.reuse and all(exists(f"{args.db}_{size}") for size in sizes)):
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


def setup_django_from_env(root: Path = ROOT) -> None:
    sys.path.insert(0, str(root))
    import django

    django.setup()


if __name__ == "__main__":
    main()
