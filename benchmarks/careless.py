"""Careless annotators: does the quality policy find them, and does leaving them out help?

Per seed, in a fresh throwaway SQLite database (one subprocess each): the
catalogue with placeholder images, then the tasks as the default path makes them:
``manage.py build_tasks`` with no quality flag, so the study's own gold and
attention-check tasks per occupation (1 and 1 unless the study says otherwise),
the agreement subset and task size and overlap of the settings (``--size`` and
``--overlap`` override the last two); then ``--annotators`` synthetic annotators of
whom ``--careless`` are careless (``simulation.careless_kinds``: random order,
shown order, hurried), each asked for ``--tasks`` rankings. The defaults are the
README's first study: 40 occupations x 3 prompts x 10 placeholder images (200
tasks of 6), 40 annotators of whom 8 careless, 5 rankings each.

Detection (the default): the simulation runs as ``simulate_annotators`` does, the
policy applied after every submit; the figures are who ends up warned or excluded,
careless and careful apart, and for each careless one the policy missed, the gold
and check tasks they met.

``--train``: does leaving them out help? The simulation runs with the policy
switched off (a rule that never fires), so the careless ones finish their quota,
as they would in a study without quality control. Then:

1. snapshot WITH: every synthetic ranking counted (the policy not yet applied);
2. the policy (``standing.apply_policy_to_all``, the configured defaults) is
   applied; precision = |excluded and careless| / |excluded|, recall =
   |excluded and careless| / |careless|;
3. snapshot POLICY: what the policy leaves (its misses in, its false alarms out);
4. snapshot WEIGHTED: every ranking, as WITH, but labels weighted by reliability
   (``annotation/stats/weights.py``): the alternative that excludes nobody;
5. snapshot CLEAN: the careful annotators only (the truth the simulation knows):
   the eval set every checkpoint is scored on.

Three checkpoints, trained on WITH's, POLICY's and WEIGHTED's train splits, are
evaluated on CLEAN's eval split and compared with ``evaluation.compare`` (paired
group bootstrap over prompts: rho of each, differences WITH - POLICY and
WEIGHTED - WITH, 95% intervals); beside them, the mean weight the careless and
the careful annotators got. What makes it fair: the four snapshots share the
split seed (the seed's own, so each seed holds out different prompts) and label
the same prompts, so ``group_split`` puts the same prompts in eval in all four
(checked: the script stops otherwise; it needs every task ranked by several, e.g.
``--overlap 10``), and no prompt any model trained on is in the eval set; all runs
have the same hyper-parameters and training seed; all are scored on the same items
against the same labels (the careful annotators'), so only the training labels differ.

    .venv/bin/python benchmarks/careless.py                       # detection, the default path
    .venv/bin/python benchmarks/careless.py --seeds 0 1 2 3 4 5 6 7
    .venv/bin/python benchmarks/careless.py --train --annotators 24 --careless 0.25 \
        --tasks 30 --images 3 --overlap 10                        # the 2026-12-03 study
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments  # noqa: E402

from benchmarks.pipeline import _setup  # noqa: E402

NEVER_FIRES = {
    "gold_min_score": -1.0,
    "gold_warn_margin": 0.0,
    "max_failed_checks": 10**9,
    "untouched_max_rate": 1.0,
    "untouched_warn_margin": 0.0,
}
RESULT = "RESULT "


def precision_recall(excluded: set[int], careless: set[int]) -> tuple[float, float]:
    """(|E & C| / |E|, |E & C| / |C|); NaN where the denominator is empty."""
    hit = len(excluded & careless)
    nan = float("nan")
    return (hit / len(excluded) if excluded else nan, hit / len(careless) if careless else nan)


def _study(args: argparse.Namespace, folder: Path) -> dict:
    """A fresh database with the catalogue and the tasks of the default path; their counts."""
    _setup("", folder)
    from django.core.management import call_command

    from annotation.catalogue.loading import load_catalogue, read_catalogue
    from annotation.models import RankingTask

    catalogue = read_catalogue()
    catalogue["occupations"] = catalogue["occupations"][: args.occupations]
    (folder / "catalogue.json").write_text(json.dumps(catalogue))
    load_catalogue(args.images, path=folder / "catalogue.json")
    sizes = [f"--{name}={value}" for name in ("size", "overlap") if (value := getattr(args, name))]
    call_command("build_tasks", "--seed", str(args.seed), *sizes, verbosity=0)  # no quality flag
    random.seed(args.seed)  # the shown orders come from random.shuffle
    tasks = RankingTask.objects
    return {
        "ordinary": tasks.filter(is_gold=False, check_item__isnull=True).count(),
        "gold": tasks.filter(is_gold=True).count(),
        "checks": tasks.filter(check_item__isnull=False).count(),
        "shared": tasks.filter(overlap__gt=1, is_gold=False).count(),
    }


def _detection(profiles: list) -> dict:
    """Who the policy flagged, careless and careful apart and by kind; who met a gold and a
    check task; for each careless annotator it missed, what they met (rankings, gold, checks)."""
    from annotation.models import SyntheticKind

    careless = [p for p in profiles if p.synthetic_kind != SyntheticKind.CAREFUL]
    careful = [p for p in profiles if p.synthetic_kind == SyntheticKind.CAREFUL]
    met = {
        p.pk: {
            "rankings": p.rankings.count(),
            "gold": p.rankings.filter(task__is_gold=True).count(),
            "checks": p.rankings.filter(task__check_item__isnull=False).count(),
        }
        for p in profiles
    }
    row = {"careless": len(careless), "careful": len(careful)}
    for side, group in (("careless", careless), ("careful", careful)):
        for status in ("excluded", "warned"):
            row[f"{side}_{status}"] = sum(p.status == status for p in group)
    kinds = sorted({p.synthetic_kind for p in careless})
    mine = {k: [p for p in careless if p.synthetic_kind == k] for k in kinds}
    return {
        **row,
        "met_gold": sum(m["gold"] > 0 for m in met.values()),
        "met_check": sum(m["checks"] > 0 for m in met.values()),
        "found_by_kind": {
            k: f"{sum(p.status != 'ok' for p in v)}/{len(v)}" for k, v in mine.items()
        },
        "missed": [{"kind": p.synthetic_kind, **met[p.pk]} for p in careless if p.status == "ok"],
    }


def detect(args: argparse.Namespace, folder: Path) -> dict:
    """The default path: tasks as ``build_tasks`` makes them, the policy live (as
    ``simulate_annotators`` runs it); who ends up flagged."""
    tasks = _study(args, folder)
    from annotation.models import AnnotatorProfile
    from annotation.studies.simulation import simulate

    sim = simulate(args.annotators, args.tasks, seed=args.seed, careless=args.careless)
    profiles = list(AnnotatorProfile.objects.filter(is_synthetic=True))
    return {"seed": args.seed, "rankings": sim["rankings"], "tasks": tasks, **_detection(profiles)}


def one_seed(args: argparse.Namespace, folder: Path) -> dict:
    """The whole study for ``args.seed`` in a fresh database; the figures as a dict."""
    tasks = _study(args, folder)
    from django.conf import settings

    from annotation.models import AnnotatorProfile, AnnotatorStatus, SyntheticKind
    from annotation.quality import standing
    from annotation.rankings.exports import pseudonym
    from annotation.studies.simulation import simulate
    from training.registry.evaluation import compare, evaluate
    from training.runs.services import execute_run, start_run
    from training.snapshots.services import EVAL, create_snapshot

    study = settings.STEREORANK
    configured = study.get("QUALITY_POLICY")
    study["QUALITY_POLICY"] = NEVER_FIRES
    try:
        sim = simulate(args.annotators, args.tasks, seed=args.seed, careless=args.careless)
    finally:
        study["QUALITY_POLICY"] = configured
    # weighting named on every snapshot: STEREORANK_LABEL_WEIGHTING must not change an arm
    with_careless = create_snapshot(include_synthetic=True, seed=args.seed, weighting="none")
    weighted = create_snapshot(include_synthetic=True, seed=args.seed, weighting="reliability")
    standing.apply_policy_to_all()
    policy_snap = create_snapshot(include_synthetic=True, seed=args.seed, weighting="none")

    profiles = list(AnnotatorProfile.objects.filter(is_synthetic=True))
    careless = {p.pk for p in profiles if p.synthetic_kind != SyntheticKind.CAREFUL}
    excluded = {p.pk for p in profiles if p.status == AnnotatorStatus.EXCLUDED}
    warned = {p.pk for p in profiles if p.status == AnnotatorStatus.WARNED}
    kinds = {p.pk: p.synthetic_kind for p in profiles}
    precision, recall = precision_recall(excluded, careless)
    weights = weighted.label_weighting["annotators"]
    by_name = {pseudonym(p.user_id): p.pk for p in profiles}
    mean_weight = {}
    for side in (True, False):
        mine = [w["weight"] for name, w in weights.items() if (by_name[name] in careless) == side]
        mean_weight[side] = statistics.fmean(mine) if mine else float("nan")
    by_kind = {
        k: f"{sum(kinds[p] == k for p in excluded)}/{sum(v == k for v in kinds.values())}"
        for k in sorted({kinds[p] for p in careless})
    }

    truth = {True: AnnotatorStatus.EXCLUDED, False: AnnotatorStatus.OK}
    for careless_one in (True, False):  # benchmark only: the truth, not the policy
        AnnotatorProfile.objects.filter(
            pk__in=[p.pk for p in profiles if (p.pk in careless) == careless_one]
        ).update(status=truth[careless_one])
    clean = create_snapshot(include_synthetic=True, seed=args.seed, weighting="none")

    eval_groups = {r["group"] for r in clean.examples if r["split"] == EVAL}
    for snap in (with_careless, policy_snap, weighted):
        mine = {r["group"] for r in snap.examples if r["split"] == EVAL}
        if mine != eval_groups:
            raise SystemExit(f"snapshot {snap.pk}'s eval prompts differ from the clean one's")

    checkpoints, seconds = [], 0.0
    for snap in (with_careless, policy_snap, weighted):
        run = start_run(
            snap,
            encoder=args.encoder,
            epochs=args.epochs,
            hyperparameters={"lr": args.lr, "n_boot": 200},
            enqueue=False,
        )
        start = time.perf_counter()
        execute_run(run.pk, "benchmark")
        seconds += time.perf_counter() - start
        run.refresh_from_db()
        if run.checkpoint is None:
            raise SystemExit(f"run {run.pk} made no checkpoint: {run.status} {run.error}")
        checkpoints.append(run.checkpoint)
        evaluate(run.checkpoint, clean)
    paired = compare(checkpoints[0], checkpoints[1], snapshot=clean, n_boot=args.n_boot)
    reweighted = compare(checkpoints[2], checkpoints[0], snapshot=clean, n_boot=args.n_boot)
    return {
        "seed": args.seed,
        "annotators": args.annotators,
        "tasks": tasks,
        **_detection(profiles),
        "rankings": sim["rankings"],
        "excluded": len(excluded),
        "warned": len(warned),
        "precision": precision,
        "recall": recall,
        "by_kind": by_kind,
        "examples": [with_careless.example_count, policy_snap.example_count, clean.example_count],
        "eval_items": paired["n_items"],
        "rho_with": paired["rho_a"],
        "rho_policy": paired["rho_b"],
        "diff": paired["diff"],
        "ci": paired["ci"],
        "rho_weighted": reweighted["rho_a"],
        "diff_weighted": reweighted["diff"],
        "ci_weighted": reweighted["ci"],
        "weight_careless": mean_weight[True],
        "weight_careful": mean_weight[False],
        "train_seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)  # one seed, in a child
    parser.add_argument("--annotators", type=int, default=40)
    parser.add_argument("--careless", type=float, default=0.2)
    parser.add_argument("--tasks", type=int, default=5, help="Rankings asked of each.")
    parser.add_argument("--occupations", type=int, default=40)
    parser.add_argument("--images", type=int, default=10, help="Placeholder images per prompt.")
    parser.add_argument("--size", type=int, help="Items per task (default: the study's).")
    parser.add_argument("--overlap", type=int, help="Rankings per task (default: the study's).")
    parser.add_argument("--train", action="store_true", help="Train WITH, POLICY, WEIGHTED.")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    args = arguments(
        parser,
        {"seeds": [0], "annotators": 8, "occupations": 4, "images": 2, "tasks": 3, "n_boot": 50},
    )

    if args.seed is not None:
        with tempfile.TemporaryDirectory(prefix="careless-bench-") as tmp:
            row = (one_seed if args.train else detect)(args, Path(tmp))
            print(RESULT + json.dumps(row), flush=True)
        return

    rows = []
    with tempfile.TemporaryDirectory(prefix="careless-cache-") as cache:
        env = {**os.environ, "STEREORANK_EMBEDDING_CACHE": cache}
        for seed in args.seeds:
            start = time.perf_counter()
            child = subprocess.run(
                [sys.executable, __file__, *_child_argv(args, seed)],
                env=env,
                capture_output=True,
                text=True,
            )
            lines = [x for x in child.stdout.splitlines() if x.startswith(RESULT)]
            if child.returncode or not lines:
                sys.exit(f"seed {seed} failed:\n{child.stdout[-3000:]}\n{child.stderr[-3000:]}")
            row = json.loads(lines[-1][len(RESULT) :])
            rows.append(row)
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            training = f" (training {row['train_seconds']:.0f} s)" if args.train else ""
            print(
                f"seed {seed}: {time.perf_counter() - start:.0f} s{training}, load avg {load}",
                flush=True,
            )
    _detection_table(rows, args)
    if args.train:
        _table(rows, args)


def _child_argv(args: argparse.Namespace, seed: int) -> list[str]:
    """The options a child runs one seed with: the parent's, ``--seed`` for ``--seeds``."""
    argv = []
    for name, value in vars(args).items():
        if name in ("seeds", "seed") or value is None or value is False:
            continue
        flag = f"--{name.replace('_', '-')}"
        argv += [flag] if value is True else [flag, str(value)]
    return [*argv, "--seed", str(seed)]


def _detection_table(rows: list[dict], args: argparse.Namespace) -> None:
    """Per seed: careless found (warned or excluded) of planted, careful flagged, the misses."""
    print(
        f"\n{args.annotators} annotators x {args.tasks} tasks, careless {args.careless}, "
        f"{args.occupations} occupations x 3 prompts x {args.images} images, tasks as "
        f"build_tasks makes them (size {args.size or 'the default'}, overlap "
        f"{args.overlap or 'the default'}, the study's gold and check tasks)\n"
    )
    print(
        "| seed | tasks ordinary/shared/gold/check | rankings | met a gold / a check task | "
        "careless found (excluded, warned) | careful flagged (excluded, warned) | found by "
        "kind | missed: kind (rankings, gold, checks met) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        t = r["tasks"]
        found = r["careless_excluded"] + r["careless_warned"]
        flagged = r["careful_excluded"] + r["careful_warned"]
        kinds = ", ".join(f"{k} {v}" for k, v in r["found_by_kind"].items())
        missed = "; ".join(
            f"{m['kind']} ({m['rankings']}, {m['gold']}, {m['checks']})" for m in r["missed"]
        )
        cells = [
            r["seed"],
            f"{t['ordinary']}/{t['shared']}/{t['gold']}/{t['checks']}",
            r["rankings"],
            f"{r['met_gold']} / {r['met_check']} of {r['careless'] + r['careful']}",
            f"{found} of {r['careless']} ({r['careless_excluded']}, {r['careless_warned']})",
            f"{flagged} of {r['careful']} ({r['careful_excluded']}, {r['careful_warned']})",
            kinds,
            missed or "-",
        ]
        print("| " + " | ".join(map(str, cells)) + " |")
    found = [r["careless_excluded"] + r["careless_warned"] for r in rows]
    flagged = [r["careful_excluded"] + r["careful_warned"] for r in rows]
    print(
        f"\nmean: careless found {statistics.fmean(found):.2f} of "
        f"{statistics.fmean(r['careless'] for r in rows):.0f}, careful flagged "
        f"{statistics.fmean(flagged):.2f} (seeds {', '.join(str(r['seed']) for r in rows)})"
    )


def _table(rows: list[dict], args: argparse.Namespace) -> None:
    print(
        f"\n{args.annotators} annotators x {args.tasks} tasks, careless {args.careless}, "
        f"{args.occupations} occupations x 3 prompts x {args.images} images, "
        f"{args.epochs} epochs, lr {args.lr}, encoder {args.encoder}\n"
    )
    print("| seed | careless | excluded (warned) | precision | recall | excluded by kind |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        kinds = ", ".join(f"{k} {v}" for k, v in r["by_kind"].items())
        print(
            f"| {r['seed']} | {r['careless']} | {r['excluded']} ({r['warned']}) | "
            f"{r['precision']:.2f} | {r['recall']:.2f} | {kinds} |"
        )
    print(
        "\n| seed | rankings | examples WITH/POLICY/CLEAN | eval items | rho WITH | "
        "rho POLICY | WITH - POLICY [95% CI] |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        lo, hi = r["ci"]
        print(
            f"| {r['seed']} | {r['rankings']} | {'/'.join(map(str, r['examples']))} | "
            f"{r['eval_items']} | {r['rho_with']:.3f} | {r['rho_policy']:.3f} | "
            f"{r['diff']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
        )
    print("\n| seed | mean weight careless / careful | rho WEIGHTED | WEIGHTED - WITH [95% CI] |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        lo, hi = r["ci_weighted"]
        print(
            f"| {r['seed']} | {r['weight_careless']:.2f} / {r['weight_careful']:.2f} | "
            f"{r['rho_weighted']:.3f} | {r['diff_weighted']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
        )


if __name__ == "__main__":
    main()
