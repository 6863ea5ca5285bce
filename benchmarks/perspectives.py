"""The planted study of issue 10: does the perspective report find groups that disagree by design?

As tests/training/test_training_planted.py, once per seed: the catalogue's 40
occupations with 2 placeholder images per prompt, tasks of 6, 60 synthetic
annotators in ``annotation.studies.simulation.PLANTED``'s age groups ranking 14 tasks
each, a snapshot holding half the prompts out for evaluation; then a pooled,
a steered (to the minority) and a balanced (age_band) head, MiniLM, 12 epochs
at lr 1e-2; each one's perspective report on age_band (k = 5, 1,000 bootstrap
draws). Prints per group the planted distance from the majority and each head's
alignment with its 95% interval, Spearman's rho (scipy) between distance and the
pooled head's alignment, the majority-minority gap of the pooled head and each
head against the pooled one, paired over prompts; with the date, the wall time
and the load average. ``--figure PATH`` also draws the pooled and steered heads'
groups (the dashboard's chart) for seed 0 into PATH (PNG).

    .venv/bin/python benchmarks/perspectives.py --seeds 0 1 2 3
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments  # noqa: E402
from pipeline import _setup  # noqa: E402

HEADS = ("pooled", "steered", "balanced")


def study(seed: int, epochs: int = 12) -> dict:
    """One seed's planted study, through the services; figures and timings."""
    from scipy import stats

    from annotation.catalogue.loading import load_catalogue
    from annotation.models import AnnotatorProfile, Ranking
    from annotation.studies.simulation import PLANTED, simulate
    from annotation.studies.tasks_builder import build_tasks
    from training.ml.alignment_report import paired_per_prompt
    from training.models import PerspectiveReport
    from training.perspectives import services as perspectives
    from training.runs.services import execute_run, start_run
    from training.snapshots.services import create_snapshot
    from training.snapshots.steering import parse

    start = time.perf_counter()
    if not Ranking.objects.exists():
        load_catalogue(placeholders_per_prompt=2)
        build_tasks(size=6, overlap=21, seed=0)
    else:  # a fresh study on the same items: forget the last seed's annotators
        from django.contrib.auth import get_user_model

        Ranking.objects.all().delete()
        AnnotatorProfile.objects.all().delete()
        get_user_model().objects.all().delete()
        from annotation.models import RankingTask

        RankingTask.objects.update(ranking_count=0)
    simulate(60, 14, seed=seed, planted=PLANTED)
    snapshot = create_snapshot(
        include_synthetic=True, seed=seed, eval_fraction=0.5, weighting="none"
    )
    minority = "65-74"
    steering = {
        "pooled": None,
        "steered": parse(f"age_band={minority}"),
        "balanced": parse(balance="age_band"),
    }
    heads = {}
    for name, steer in steering.items():
        run = start_run(
            snapshot,
            encoder="all-MiniLM-L6-v2",
            hyperparameters={"epochs": epochs, "lr": 1e-2, "n_boot": 100},
            steering=steer,
            enqueue=False,
        )
        execute_run(run.pk, "benchmark")
        run.refresh_from_db()
        perspectives.compute_reports(run.checkpoint, fields=["age_band"])
        heads[name] = run.checkpoint
    majority = PLANTED.views[PLANTED.majority]
    distance = {g: v.distance(majority) for g, v in PLANTED.views.items()}
    groups = sorted(distance, key=distance.get)
    rows = {
        (name, r.group): r
        for name, c in heads.items()
        for r in PerspectiveReport.objects.filter(checkpoint=c)
    }
    rho = stats.spearmanr(
        [distance[g] for g in groups], [rows["pooled", g].alignment for g in groups]
    ).statistic
    gap = paired_per_prompt(
        rows["pooled", PLANTED.majority].figures["per_prompt"],
        rows["pooled", minority].figures["per_prompt"],
    )
    against = {
        name: {
            r["group"]: r
            for r in perspectives.compare_versions(
                heads[name], heads["pooled"], snapshot, "age_band"
            )
        }
        for name in ("steered", "balanced")
    }
    return {
        "seed": seed,
        "groups": groups,
        "distance": distance,
        "rows": rows,
        "rho": rho,
        "gap": gap,
        "against": against,
        "heads": heads,
        "snapshot": snapshot,
        "rankings": snapshot.ranking_count,
        "seconds": time.perf_counter() - start,
        "load": os.getloadavg(),
    }


def _ci(ci) -> str:
    return f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "-"


def report(out: dict) -> None:
    rows = out["rows"]
    print(
        f"\nseed {out['seed']}: {out['rankings']} rankings, {out['seconds']:.0f} s, "
        f"load average {' '.join(f'{x:.1f}' for x in out['load'])}"
    )
    print(
        f"{'group':<7} {'distance':>8} {'annotators':>10}  "
        + "  ".join(f"{h + ' alignment [95% CI]':<30}" for h in HEADS)
    )
    for g in out["groups"]:
        cells = []
        for h in HEADS:
            f = rows[h, g].figures
            ci = f["alignment_ci"]
            cells.append(f"{f['alignment']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]".ljust(30))
        n = rows["pooled", g].figures["n_annotators"]
        print(f"{g:<7} {out['distance'][g]:>8.1f} {n:>10}  " + "  ".join(cells))
    gap, ci, p, n = out["gap"]
    print(f"Spearman(distance, pooled alignment) = {out['rho']:+.2f}")
    print(f"pooled head, majority - minority: {gap:+.3f} {_ci(ci)} over {n} prompts, p = {p:.4f}")
    for name, by_group in out["against"].items():
        print(
            f"{name} - pooled: "
            + "; ".join(
                f"{g} {r['diff']:+.3f} {_ci(r['ci'])} {r['verdict']}" for g, r in by_group.items()
            )
        )


def figure(out: dict, path: Path) -> None:
    """The dashboard's group chart, pooled and steered heads side by side in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.4), layout="constrained")
    axes = fig.subplots(1, 2, sharex=True)
    for ax, head in zip(axes, ("pooled", "steered"), strict=True):
        for y, g in enumerate(out["groups"]):
            f = out["rows"][head, g].figures
            lo, hi = f["alignment_ci"]
            ax.errorbar(
                [f["alignment"]],
                [y],
                xerr=[[f["alignment"] - lo], [hi - f["alignment"]]],
                fmt="o",
                color="#2451c7",
                capsize=3,
            )
        ax.set_yticks(
            range(len(out["groups"])), [f"{g} (d={out['distance'][g]:.1f})" for g in out["groups"]]
        )
        ax.invert_yaxis()
        ax.set_title(f"{head} head (v{out['heads'][head].version})")
        ax.set_xlabel("alignment with the group (95% CI)")
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        f"Planted study, seed {out['seed']}: Spearman(distance, pooled) = {out['rho']:+.2f}"
    )
    fig.savefig(path, dpi=100, metadata={"Software": None})
    print(f"figure written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--figure", type=Path, help="PNG of seed 0's pooled and steered heads.")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--epochs", type=int, default=12, help="of each head")
    args = arguments(parser, {"epochs": 1})
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="perspectives-bench-") as tmp:
        _setup(args.database_url, Path(tmp))
        from django.conf import settings

        settings.STEREORANK["GROUP_K"] = 5
        for seed in args.seeds:
            out = study(seed, args.epochs)
            report(out)
            if args.figure and seed == args.seeds[0]:
                figure(out, args.figure)


if __name__ == "__main__":
    main()
