"""Group heads on the planted study (issue 41): what a group gains from its own head, what
the pooled score loses, and whether the disagreement estimate finds the contested prompts.

Per seed, through the services: the catalogue's 40 occupations with 2 placeholder images
per prompt, tasks of 6, ``--annotators`` synthetic annotators (100) in
``annotation.studies.simulation.PLANTED``'s age groups ranking 14 tasks each, a snapshot
holding half the prompts out for evaluation; a pooled run and a ``--groups age_band`` run
(MiniLM, 12 epochs at lr 1e-2, the same seed, so the two pooled heads are one). Then, on
the eval prompts:

* the 45-54 group's alignment (``perspective_report``, k = 5) under its own head against
  under the pooled head, paired over prompts (95% bootstrap interval); the same for every
  other group;
* for reference, the 45-54 group's gain under a head steered to it (trained on its
  labels alone, ``--steer``), which gives up the pooled score to get it;
* the pooled metric's change: the eval Spearman of the group run's pooled score against
  the pooled run's;
* the AUROC (Mann-Whitney U / n1 n0, scipy) of the disagreement estimate for finding the
  planted contested prompts among the eval prompts: those touching an aspect the 45-54
  group reads the other way (religious dress, disability); beside it, for every planted
  group's (``contested_prompts``), and the same two for the spread of the group heads'
  scores, the alternative estimate; and the share of each above the calibrated threshold;
* times: the group fit (penalty recorded, as a retrain has it) against the pooled run's
  training on the same snapshot, and what scoring with a group head adds per prompt to
  the warm scorer (one batch of 256 cached prompts, 20 repeats, best of 3).

Prints a line per seed and one JSON line over the seeds (the gain's mean with a 95% t
interval over seeds, the pooled change, the AUROC), with the date and the load average.

    .venv/bin/python benchmarks/groups.py --seeds 0 1 2 3 4
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import arguments, load  # noqa: E402
from pipeline import _setup  # noqa: E402

FIELD, MINORITY = "age_band", "45-54"


def contested_prompts() -> set[tuple[str, str]]:
    """``(occupation, prompt type)`` of the prompts contested by design: those some planted
    group reads the other way (its own latent value differs between two groups' views)
    such that their place among their occupation's prompts differs too, read from the
    latent model without noise. A stereotypical prompt a group reads as even more
    stereotypical still comes first, and the prompts a flipped one passes are moved, not
    read differently: neither counts."""
    from annotation.catalogue.loading import prompt_aspects
    from annotation.studies.simulation import BASE, PLANTED

    aspects = prompt_aspects()
    out = set()
    for occupation in {o for o, _ in aspects}:
        views = []
        for view in PLANTED.views.values():
            z = {
                t: BASE[t] + sum(view.aspects.get(a, 0.0) for a in aspects.get((occupation, t), ()))
                for t in BASE
            }
            views.append((z, sorted(BASE, key=z.get)))
        for t in BASE:
            if len({z[t] for z, _ in views}) > 1 and len({p.index(t) for _, p in views}) > 1:
                out.add((occupation, t))
    return out


def fresh_study(seed: int, annotators: int) -> None:
    from django.contrib.auth import get_user_model

    from annotation.catalogue.loading import load_catalogue
    from annotation.models import AnnotatorProfile, Ranking, RankingTask
    from annotation.studies.simulation import PLANTED, simulate
    from annotation.studies.tasks_builder import build_tasks

    if not RankingTask.objects.exists():
        load_catalogue(placeholders_per_prompt=2)
        build_tasks(size=6, overlap=annotators * 14 // 40 + 1, seed=0)
    else:  # a fresh study on the same items: forget the last seed's annotators
        Ranking.objects.all().delete()
        AnnotatorProfile.objects.all().delete()
        get_user_model().objects.all().delete()
        RankingTask.objects.update(ranking_count=0)
    simulate(annotators, 14, seed=seed, planted=PLANTED)


def alignments(checkpoint, snapshot, group: str | None) -> dict:
    """``{group: per-prompt alignment}`` on the eval prompts, the items scored by the pooled
    head (``group`` None) or by ``group``'s head."""
    from annotation.stats.records import group_of
    from training.ml.alignment import RankedList
    from training.ml.alignment_report import perspective_report
    from training.perspectives.services import study_rankings, temperature
    from training.storage import encoders
    from training.storage.encoders import load_model

    rankings, item_prompt, texts, eval_prompts = study_rankings(snapshot)
    items = sorted(texts)
    model = load_model(checkpoint)
    scores, _ = model.score_groups(
        [texts[i] for i in items], encoders.embedding_cache(), group=group
    )
    report = perspective_report(
        [RankedList(r, a, tuple(o), group_of(d or {}, FIELD), occ) for r, a, o, d, occ in rankings],
        item_prompt,
        dict(zip(items, scores.tolist(), strict=True)),
        temperature=temperature(checkpoint),
        k=5,
        prompts=eval_prompts,
        n_boot=0,
    )
    return {g.group: g.per_prompt for g in report.groups}


def disagreement_auroc(checkpoint, snapshot) -> dict:
    """AUROC of the disagreement head and of the group heads' spread, on the eval prompts,
    for the prompts the 45-54 group reads the other way and for every planted one."""
    from scipy import stats

    from annotation.catalogue.loading import prompt_aspects
    from annotation.studies.simulation import PLANTED
    from training.snapshots.services import EVAL
    from training.storage import encoders
    from training.storage.encoders import load_model

    aspects, flipped = prompt_aspects(), set(PLANTED.views[MINORITY].aspects)
    planted = contested_prompts()
    rows = {r["text"]: r for r in snapshot.examples if r["split"] == EVAL}
    texts = sorted(rows)
    kind = [(rows[t]["occupation"], rows[t]["prompt_type"]) for t in texts]
    truths = {
        "minority": np.array([bool(aspects.get(k, set()) & flipped) for k in kind]),
        "planted": np.array([k in planted for k in kind]),
    }
    model = load_model(checkpoint)
    emb = model.embed(texts, encoders.embedding_cache())
    estimates = {
        "head": model.groups.disagreement(emb),
        "group_spread": model.groups.group_spread(emb),
    }

    def auroc(values, hit):
        return float(
            stats.mannwhitneyu(values[hit], values[~hit]).statistic / (hit.sum() * (~hit).sum())
        )

    out = {
        f"{e}_{t}": auroc(values, hit)
        for e, values in estimates.items()
        for t, hit in truths.items()
    }
    above = estimates["head"] > model.groups.threshold
    hit = truths["minority"]
    return {
        **out,
        "auroc": out["head_minority"],
        "contested": int(hit.sum()),
        "others": int((~hit).sum()),
        "contested_above": float(above[hit].mean()),
        "others_above": float(above[~hit].mean()),
        "threshold": model.groups.threshold,
    }


def scoring_cost(checkpoint, snapshot) -> dict:
    """Seconds per prompt of a warm, cached batch: the pooled score against a group's."""
    from training.storage import encoders
    from training.storage.encoders import load_model

    texts = list(dict.fromkeys(r["text"] for r in snapshot.examples))[:256]
    model, cache = load_model(checkpoint), encoders.embedding_cache()
    model.score_groups(texts, cache, group=MINORITY)  # warm: encoded once, cached after

    def best(group):
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(20):
                model.score_groups(texts, cache, group=group) if group else model.score(
                    texts, cache
                )
            runs.append((time.perf_counter() - start) / (20 * len(texts)))
        return min(runs)

    pooled, grouped = best(None), best(MINORITY)
    return {
        "pooled_ms": pooled * 1e3,
        "group_ms": grouped * 1e3,
        "added_ms": (grouped - pooled) * 1e3,
    }


def study(seed: int, annotators: int, epochs: int) -> dict:
    from training.ml.alignment_report import paired_per_prompt
    from training.models import DatasetSnapshot, TrainingRun
    from training.runs import group_heads
    from training.runs.services import execute_run, start_run
    from training.snapshots.services import create_snapshot
    from training.snapshots.steering import parse
    from training.storage import encoders

    fresh_study(seed, annotators)
    snapshot = create_snapshot(include_synthetic=True, seed=seed, eval_fraction=0.5)
    hyper = {"epochs": epochs, "lr": 1e-2, "n_boot": 100, "seed": seed}
    runs = {}
    seconds = {}
    kinds = (
        ("pooled", None),
        ("groups", parse(groups=FIELD)),
        ("steered", parse(f"{FIELD}={MINORITY}")),
    )
    for name, steering in kinds:
        run = start_run(
            snapshot,
            encoder="all-MiniLM-L6-v2",
            hyperparameters=hyper,
            steering=steering,
            enqueue=False,
        )
        start = time.perf_counter()
        assert execute_run(run.pk, "benchmark").startswith("done"), run.pk
        seconds[name] = time.perf_counter() - start
        runs[name] = TrainingRun.objects.get(pk=run.pk)
    # the fit alone, the penalty recorded (as a retrain has it), against the pooled run
    snapshot = DatasetSnapshot.objects.get(pk=snapshot.pk)
    encoder, cache = encoders.encoder("all-MiniLM-L6-v2"), encoders.embedding_cache()
    start = time.perf_counter()
    heads = group_heads.fit(snapshot, FIELD, encoder, cache, 5, seed=seed)
    fit_seconds = time.perf_counter() - start
    grouped, pooled = runs["groups"].checkpoint, runs["pooled"].checkpoint
    base = alignments(grouped, snapshot, None)
    gains = {}
    for g in heads.groups:
        own = alignments(grouped, snapshot, g)[g]
        diff, ci, _, n = paired_per_prompt(own, base[g], n_boot=1000, seed=seed)
        gains[g] = {"gain": diff, "ci": ci, "prompts": n}
    steered = alignments(runs["steered"].checkpoint, snapshot, None)[MINORITY]
    diff, ci, _, _ = paired_per_prompt(steered, base[MINORITY], n_boot=1000, seed=seed)
    gains["steered"] = {"gain": diff, "ci": ci}
    return {
        "seed": seed,
        "rankings": snapshot.ranking_count,
        "gains": gains,
        "sizes": dict(zip(heads.groups, heads.sizes, strict=True)),
        "penalty": heads.penalty,
        "cv": {k: heads.cv[k] for k in ("error", "pooled_error")},
        "pooled_rho": pooled.metrics["spearman"],
        "grouped_rho": grouped.metrics["spearman"],
        "disagreement": disagreement_auroc(grouped, snapshot),
        "fit_seconds": fit_seconds,
        "pooled_run_seconds": seconds["pooled"],
        "group_run_seconds": seconds["groups"],
        "scoring": scoring_cost(grouped, snapshot),
    }


def summary(rows: list[dict]) -> dict:
    from scipy import stats

    gains = np.array([r["gains"][MINORITY]["gain"] for r in rows])
    mean = float(gains.mean())
    if len(gains) > 1:
        half = float(stats.t.ppf(0.975, len(gains) - 1) * gains.std(ddof=1) / np.sqrt(len(gains)))
        ci = [mean - half, mean + half]
    else:
        ci = rows[0]["gains"][MINORITY]["ci"]
    return {
        "date": f"{datetime.datetime.now():%Y-%m-%d %H:%M}",
        "load": load(),
        "seeds": [r["seed"] for r in rows],
        "minority": MINORITY,
        "minority_gain": mean,
        "minority_gain_ci": ci,
        "steered_gain": float(np.mean([r["gains"]["steered"]["gain"] for r in rows])),
        "pooled_rho_change": float(np.mean([r["grouped_rho"] - r["pooled_rho"] for r in rows])),
        "auroc": float(np.mean([r["disagreement"]["auroc"] for r in rows])),
        "auroc_min": float(min(r["disagreement"]["auroc"] for r in rows)),
        "auroc_every_planted_group": float(
            np.mean([r["disagreement"]["head_planted"] for r in rows])
        ),
        "group_spread_auroc": float(
            np.mean([r["disagreement"]["group_spread_minority"] for r in rows])
        ),
        "fit_over_pooled_run": float(
            np.mean([r["fit_seconds"] / r["pooled_run_seconds"] for r in rows])
        ),
        "group_scoring_added_ms": float(np.mean([r["scoring"]["added_ms"] for r in rows])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--annotators", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--database-url", default="")
    args = arguments(parser, {"seeds": [0], "annotators": 30, "epochs": 1})
    print(f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} CPUs, load {load()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="groups-bench-") as tmp:
        _setup(args.database_url, Path(tmp))
        from django.conf import settings

        settings.STEREORANK["GROUP_K"] = 5
        for seed in args.seeds:
            row = study(seed, args.annotators, args.epochs)
            rows.append(row)
            d = row["disagreement"]
            print(
                f"seed {seed}: {row['rankings']} rankings, groups {row['sizes']}, penalty "
                f"{row['penalty']:g} (CV error {row['cv']['error']:.4f} vs pooled "
                f"{row['cv']['pooled_error']:.4f}); gains "
                + ", ".join(
                    f"{g} {x['gain']:+.3f} [{x['ci'][0]:+.3f}, {x['ci'][1]:+.3f}]"
                    for g, x in row["gains"].items()
                )
                + f"; eval rho {row['pooled_rho']:.3f} -> {row['grouped_rho']:.3f}; AUROC "
                f"{d['auroc']:.3f} ({d['contested']} contested, {d['contested_above']:.0%} above "
                f"threshold {d['threshold']:.3f}; others {d['others_above']:.0%}; every planted "
                f"group's {d['head_planted']:.3f}; group heads' spread "
                f"{d['group_spread_minority']:.3f} / {d['group_spread_planted']:.3f}); fit "
                f"{row['fit_seconds']:.2f} s vs pooled run {row['pooled_run_seconds']:.1f} s; "
                f"scoring {row['scoring']['pooled_ms']:.3f} -> {row['scoring']['group_ms']:.3f} "
                "ms/prompt",
                flush=True,
            )
    print(json.dumps(summary(rows)))


if __name__ == "__main__":
    main()
