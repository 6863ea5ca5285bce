"""The served model at work: the DJ-PO optimiser on the catalogue, and /api/score/ latency.

1. A checkpoint to serve: the active one of ``--database-url``; otherwise (the
   default: a throwaway SQLite database and folders) a quick MiniLM one is
   trained on the catalogue (40 occupations, ``--images`` placeholder images
   per prompt, synthetic annotators, lr 1e-2, 12 epochs) and promoted.
2. The optimiser, offline rewriter, on every stereotypical and neutral prompt
   of the catalogue (80), through ``scoring.services.optimise_prompt`` with
   n = 3: how many were flagged, the share of flagged ones that reach the
   threshold, the mean score gain of the best rewrite (best minus original,
   over flagged prompts), and how often the occupation is lost: returned
   rewrites that do not name it (checked here with a regex of our own; must be
   0), beside the rewrites the optimiser itself refused for losing it.
3. ``/api/score/`` under load: gunicorn (gunicorn.conf.py, ``--workers``) on
   127.0.0.1, 8 client threads (``--clients``), each on its own keep-alive
   connection, each sending ``--requests`` requests in a bounded loop, for
   1 and for 32 prompts per request, twice: prompts of the catalogue (in the
   embedding cache) and prompts never seen before (encoded, and a cache shard
   written, on each request). p50/p95 per case, with the load average.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/optimise.py
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import ROOT, arguments, gunicorn, load, migrate

sys.path.insert(0, str(ROOT))


def environment(folder: Path, database_url: str) -> dict:
    env = {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "DJANGO_SETTINGS_MODULE": "web.settings",
        "DJANGO_SECRET_KEY": "bench-secret",
        "STEREORANK_VAR_DIR": str(folder / "var"),
        "STEREORANK_CHECKPOINT_DIR": str(folder / "checkpoints"),
        "STEREORANK_MEDIA_ROOT": str(folder / "media"),
        "STEREORANK_EMBEDDING_CACHE": str(folder / "embeddings"),
        "STEREORANK_DEVICE": "cpu",
        "STEREORANK_ENCODER": "all-MiniLM-L6-v2",
        "STEREORANK_THROTTLE_SCORING": "1000000/min",
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "LOG_LEVEL": "WARNING",
    }
    if database_url:
        env.update(DATABASE_URL=database_url, STEREORANK_EMBEDDED="true")
    else:
        env["STEREORANK_EMBEDDED"] = "true"
    return env


def train_quick_checkpoint(images: int, epochs: int):
    """The catalogue ranked by synthetic annotators, one MiniLM run, promoted."""
    from annotation.catalogue.loading import load_catalogue
    from annotation.studies.simulation import simulate
    from annotation.studies.tasks_builder import build_tasks
    from training import services
    from training.runs.services import execute_run

    start = time.perf_counter()
    load_catalogue(images)
    tasks = build_tasks(6, 1)
    simulate(-(-tasks // 20), 20, seed=0)
    snapshot = services.create_snapshot(include_synthetic=True, weighting="none")
    run = services.start_run(
        snapshot,
        encoder="all-MiniLM-L6-v2",
        epochs=epochs,
        hyperparameters={"lr": 1e-2, "n_boot": 200},
        enqueue=False,
    )
    print(f"training: {execute_run(run.pk, 'benchmark')}", flush=True)
    run.refresh_from_db()
    checkpoint = run.checkpoint
    services.promote(checkpoint, actor="benchmarks/optimise.py")
    print(
        f"trained v{checkpoint.version} in {time.perf_counter() - start:.0f} s: rho "
        f"{checkpoint.metrics['spearman']:.3f}, threshold {checkpoint.threshold:.4f} "
        f"({checkpoint.threshold_basis})"
    )
    return checkpoint


def names(text: str, occupation: str) -> bool:
    """The occupation as whole words, singular or with a plural ending (our own check)."""
    words = r"\s+".join(re.escape(w) for w in occupation.split())
    return re.search(rf"(?<!\w){words}(s|es)?(?!\w)", text, re.IGNORECASE) is not None


def optimiser_figures() -> dict:
    from annotation.catalogue.loading import read_catalogue
    from scoring.services import optimise_prompt

    prompts = [
        (o["name"], kind, o["prompts"][kind])
        for o in read_catalogue()["occupations"]
        for kind in ("stereotypical", "neutral")
    ]
    flagged = reached = lost_returned = refused = 0
    gains: list[float] = []
    by_kind: dict[str, list[int]] = {"stereotypical": [0, 0], "neutral": [0, 0]}
    start = time.perf_counter()
    for occupation, kind, text in prompts:
        report = optimise_prompt(text, 3, occupation)
        result = report.result
        refused += result.lost_occupation
        returned = [c for c in result.candidates if c.round > 0]
        returned += [result.best] if result.best else []
        lost_returned += sum(not names(c.text, occupation) for c in returned)
        if not result.original.flagged:
            continue
        flagged += 1
        by_kind[kind][0] += 1
        if result.reached:
            reached += 1
            by_kind[kind][1] += 1
        if result.best:
            gains.append(result.best.score - result.original.score)
    seconds = time.perf_counter() - start
    return {
        "prompts": len(prompts),
        "flagged": flagged,
        "reached": reached,
        "by_kind": by_kind,
        "mean_gain": statistics.fmean(gains) if gains else float("nan"),
        "lost_returned": lost_returned,
        "refused_for_losing_it": refused,
        "seconds_per_prompt": seconds / len(prompts),
        "threshold": report.threshold,
        "version": report.version,
    }


class Client:
    """One keep-alive connection with a scoring token."""

    def __init__(self, port: int, token: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Token {token}"}

    def score(self, prompts: list[str]) -> tuple[int, float]:
        start = time.perf_counter()
        self.connection.request(
            "POST", "/api/score/", json.dumps({"prompts": prompts}), self.headers
        )
        response = self.connection.getresponse()
        response.read()
        return response.status, time.perf_counter() - start


def latency_case(port, token, clients, requests, batch, pool, novel) -> dict:
    """``clients`` threads x ``requests`` requests of ``batch`` prompts each."""
    times: list[float] = []
    failures: list[int] = []
    lock = threading.Lock()
    tag = f"{batch}-{time.time_ns()}"

    def work(c: int) -> None:
        client = Client(port, token)
        for r in range(requests):
            first = (c * requests + r) * batch
            prompts = [pool[(first + k) % len(pool)] for k in range(batch)]
            if novel:  # a text no one has sent before: encoded on this request
                prompts = [f"{p} (request {tag}-{c}-{r}-{k})" for k, p in enumerate(prompts)]
            status, took = client.score(prompts)
            with lock:
                times.append(took)
                if status != 200:
                    failures.append(status)
        client.connection.close()

    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    before = load()
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    q = statistics.quantiles(times, n=100)
    return {
        "p50": q[49] * 1000,
        "p95": q[94] * 1000,
        "n": len(times),
        "rps": len(times) / wall,
        "failures": len(failures),
        "load": f"{before} -> {load()}",
    }


def serve_and_measure(env: dict, args, token: str) -> list[tuple[str, dict]]:
    from annotation.catalogue.loading import read_catalogue

    pool = [p for o in read_catalogue()["occupations"] for p in o["prompts"].values()]
    server_env = {**os.environ, **env, "GUNICORN_WORKERS": str(args.workers)}
    rows = []
    with gunicorn(server_env, args.port, tries=300):
        # warm every worker (each loads the checkpoint once): a burst wider than the pool
        latency_case(args.port, token, 2 * args.workers * 4, 2, 4, pool, novel=False)
        for novel in (False, True):
            for batch in (1, 32):
                case = (
                    f"{batch:>2} prompt{'s' if batch > 1 else ' '}, {'new' if novel else 'cached'}"
                )
                row = latency_case(
                    args.port, token, args.clients, args.requests, batch, pool, novel
                )
                rows.append((case, row))
                print(
                    f"{case:<22} p50 {row['p50']:7.1f} ms  p95 {row['p95']:7.1f} ms  "
                    f"{row['rps']:6.1f} req/s  ({row['n']} requests, {row['failures']} failed; "
                    f"load {row['load']})",
                    flush=True,
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default="", help="Default: a throwaway SQLite file.")
    parser.add_argument("--images", type=int, default=2, help="Placeholder images per prompt.")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=25, help="Per client and case.")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--port", type=int, default=8766)
    args = arguments(parser, {"images": 1, "epochs": 1, "clients": 1, "requests": 2, "workers": 1})

    with tempfile.TemporaryDirectory(prefix="optimise-bench-") as tmp:
        env = environment(Path(tmp), args.database_url)
        os.environ.update(env)
        if not args.database_url:
            os.environ.pop("DATABASE_URL", None)
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command

        from annotation.accounts import tokens
        from scoring import roles, selectors

        migrate()
        call_command("collectstatic", "--no-input", verbosity=0)
        print(f"date {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load {load()}")
        if selectors.active_version() is None:
            train_quick_checkpoint(args.images, args.epochs)

        figures = optimiser_figures()
        f = figures
        print(
            f"optimiser (offline, n=3) on v{f['version']}, threshold {f['threshold']:.4f}: "
            f"{f['flagged']} of {f['prompts']} prompts flagged "
            f"(stereotypical {f['by_kind']['stereotypical'][0]}/40, "
            f"neutral {f['by_kind']['neutral'][0]}/40); "
            f"{f['reached']} of {f['flagged']} reach the threshold "
            f"({f['reached'] / max(f['flagged'], 1):.1%}; stereotypical "
            f"{f['by_kind']['stereotypical'][1]}, neutral {f['by_kind']['neutral'][1]}); "
            f"mean gain of the best rewrite {f['mean_gain']:+.4f}; occupation lost in returned "
            f"rewrites: {f['lost_returned']} (rewrites refused for losing it: "
            f"{f['refused_for_losing_it']}); {f['seconds_per_prompt'] * 1000:.0f} ms per prompt "
            f"(load {load()})",
            flush=True,
        )

        user = get_user_model().objects.create_user("bench-scorer", password="bench-pass-123")
        roles.grant(user)
        _, token = tokens.issue(user)
        serve_and_measure(env, args, token)
        print(f"uptime load average at the end: {load()}")


if __name__ == "__main__":
    main()
