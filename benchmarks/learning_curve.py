"""Does the learning curve's projection come true? A back-test on simulated annotators.

Per seed: the catalogue's 40 occupations, 2 placeholder images per prompt, tasks of 6
ranked up to 21 times; 20 synthetic annotators rank 15 tasks each (300 rankings,
every item labelled), snapshot A and its learning curve (3 draws, MiniLM, the default
recipe); then 25 more annotators rank 20 tasks each (500 more), snapshot B (the same
items, so the same split) and its curve. Prints A's projected gain of the next 500
rankings with its 95% interval beside the gain observed (B's fitted rho at all its
rankings minus A's, and the raw mean of the draws at share 1), and each curve's wall
time; with the date and the load average.

    .venv/bin/python benchmarks/learning_curve.py --seeds 0 1
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments  # noqa: E402
from pipeline import _setup  # noqa: E402


def _reset() -> None:
    from django.contrib.auth import get_user_model

    from annotation.models import AnnotatorProfile, Ranking, RankingTask

    Ranking.objects.all().delete()
    AnnotatorProfile.objects.all().delete()
    get_user_model().objects.all().delete()
    RankingTask.objects.update(ranking_count=0)


def _at_all(curve) -> float:
    full = [p["rho"] for p in curve.points if p["rankings"] == curve.n_rankings]
    return sum(full) / len(full)


def backtest(seed: int, draws: int, first: int = 20, more: int = 25) -> dict:
    from annotation.catalogue.loading import load_catalogue
    from annotation.models import RankingTask
    from annotation.studies.simulation import simulate
    from annotation.studies.tasks_builder import build_tasks
    from training.runs import learning_curves
    from training.snapshots.services import create_snapshot

    if not RankingTask.objects.exists():
        load_catalogue(placeholders_per_prompt=2)
        build_tasks(size=6, overlap=21, seed=0)
    else:
        _reset()
    simulate(first, 15, seed=seed)
    a = create_snapshot(include_synthetic=True, seed=seed, weighting="none")
    start = time.perf_counter()
    curve_a = learning_curves.compute(a, draws=draws)
    seconds_a = time.perf_counter() - start
    simulate(more, 20, seed=seed + 100)
    b = create_snapshot(include_synthetic=True, seed=seed, weighting="none")
    start = time.perf_counter()
    curve_b = learning_curves.compute(b, draws=draws)
    seconds_b = time.perf_counter() - start
    fa, fb = curve_a.fit, curve_b.fit
    return {
        "seed": seed,
        "rankings": [curve_a.n_rankings, curve_b.n_rankings],
        "same_split": [r["key"] for r in a.examples if r["split"] == "eval"]
        == [r["key"] for r in b.examples if r["split"] == "eval"],
        "projected_gain_500": fa["gain_next_500"],
        "projected_ci": (fa["intervals"] or {}).get("gain_next_500"),
        "observed_gain_fitted": fb["rho_now"] - fa["rho_now"],
        "observed_gain_draws": _at_all(curve_b) - _at_all(curve_a),
        "rho_a": fa["rho_now"],
        "rho_b": fb["rho_now"],
        "line": learning_curves.summary(curve_a),
        "seconds": [round(seconds_a, 1), round(seconds_b, 1)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--first", type=int, default=20, help="annotators before A (15 tasks)")
    parser.add_argument("--more", type=int, default=25, help="annotators more for B (20 tasks)")
    args = arguments(parser, {"draws": 2, "first": 4, "more": 3})
    with tempfile.TemporaryDirectory() as folder:
        os.environ.setdefault("STEREORANK_ENCODER", "all-MiniLM-L6-v2")
        _setup(args.database_url, Path(folder))
        print(f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
        rows = []
        for seed in args.seeds:
            row = backtest(seed, args.draws, args.first, args.more)
            rows.append(row)
            ci = row["projected_ci"]
            interval = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
            print(
                f"seed {seed}: {row['rankings'][0]} -> {row['rankings'][1]} rankings; "
                f"projected +500: {row['projected_gain_500']:+.3f}{interval}; observed "
                f"(fitted) {row['observed_gain_fitted']:+.3f}, (mean of draws at 100%) "
                f"{row['observed_gain_draws']:+.3f}; rho {row['rho_a']:.3f} -> "
                f"{row['rho_b']:.3f}; same eval split: {row['same_split']}; curve wall "
                f"time {row['seconds'][0]} s, {row['seconds'][1]} s",
                flush=True,
            )
            print(f"  study lead's line at A: {row['line']}", flush=True)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average {load}")
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
