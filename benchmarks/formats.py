"""Which question format buys the most reliable labels per annotator-minute (issue 40)?

A simulation, the same people in every format: the catalogue's 40 occupations x 3 prompts,
``--images`` images each (an item); an item's latent diversity is its prompt type's base
(0.2, 0.5, 0.8, as ``annotation.studies.simulation``) plus an image effect (sd 0.08);
``--annotators`` people, each with a noise sd of ``sigma x exp(N(0, 0.3))`` (drawn once per
seed, the same in every format), who perceive ``latent + N(0, their sd)`` and answer as
``annotation.studies.answering`` does (ties within 0.05, the top k, the two ends, a pair or
"equal"). Tasks: each occupation's items shuffled into tasks of ``--task-size`` (best-worst:
``--bws-size``; pairs: cycles within chunks of six, as ``build_tasks``), handed out as the
portal does (every task once before any twice, never twice to one person). Every format
gets the same ``--minutes`` annotator-minutes: a judgement takes the seconds its format's
flag says (``--seconds-rank`` ...), so a pair buys many judgements and a ranking few.

Per format, noise level and seed: split-half reliability (``annotation.stats.split_half``)
and the eval Spearman of a head trained on the labels (``training.ml.heads.train_heads``,
the seed recipe, on cached MiniLM embeddings of the prompts; labels are every format's
place label, the counting score: ``annotation.stats.pair_fit.counting_labels``) against the
latent scores of the held-out fifth of the occupations; for top-k and best-worst at the
three levels, also the eval Spearman of a head trained on the Bradley-Terry fit's labels
(``pair_fit.fitted_labels``), the model-based score beside the counting one. Noise levels:
``sigma`` found by bisection so that strict rankings of ``--task-size`` reach Kendall's W of
0.3, 0.55 and 0.8 (``--agreement``).

The price of quality control (``--qc``): at the middle level, with no careless annotators
and with ``--careless`` of them (random, shown order and "equal" in turn), each format
with gold tasks and attention checks on (one judgement in ``--check-every`` is a check,
time spent; a careful person passes one with probability 0.98, a careless one by chance;
two failures exclude them and all their answers) and off (no time spent, nobody excluded).

Prints a table and one JSON line per row: means and 95% intervals over ``--seeds``
(mean +- 1.96 sd / sqrt(seeds)).

    .venv/bin/python benchmarks/formats.py                    # the documented run
    .venv/bin/python benchmarks/formats.py --seconds-pairwise 8 --seeds 20
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, arguments, load  # noqa: E402

from annotation.stats import effort  # noqa: E402
from annotation.stats.agreement import agreement  # noqa: E402
from annotation.stats.pair_fit import bradley_terry, counting_labels, fitted_labels  # noqa: E402
from annotation.stats.records import RankingRecord  # noqa: E402
from annotation.stats.split_half import split_half  # noqa: E402
from annotation.stats.tiers import flatten  # noqa: E402
from annotation.studies import answering  # noqa: E402

BASE = {"stereotypical": 0.2, "neutral": 0.5, "diverse": 0.8}
FORMATS = ("rank", "rank_ties", "top_k", "best_worst", "pairwise")
# The formats whose answers leave tiers of several by design, where a fit over the pairs may
# find more than the counting score (on strict ranks the two orders are the Borda count's).
FIT_FORMATS = ("top_k", "best_worst")


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--annotators", type=int, default=40)
    parser.add_argument("--minutes", type=float, default=240.0, help="annotator-minutes in all")
    parser.add_argument("--images", type=int, default=4, help="images (items) per prompt")
    parser.add_argument("--task-size", type=int, default=6)
    parser.add_argument("--bws-size", type=int, default=4, help="cards in a best-worst task")
    parser.add_argument("--k", type=int, default=2, help="top_k's k")
    # Seconds a judgement takes: assumptions until a study measures them (docs/benchmarks.md)
    # Defaults: the planning figures (annotation.stats.effort) at the default sizes.
    sizes = {"rank": 6, "rank_ties": 6, "top_k": 6, "best_worst": 4, "pairwise": 2}
    for question, size in sizes.items():
        default = effort.seconds_per_answer(question, size, 2 if question == "top_k" else None)
        parser.add_argument(f"--seconds-{question.replace('_', '-')}", type=float, default=default)
    parser.add_argument("--agreement", default="0.3,0.55,0.8", help="strict-rank W targets")
    parser.add_argument("--qc", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--careless", type=float, default=0.2)
    parser.add_argument("--check-every", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=12, help="the recipe's 12")
    return arguments(
        parser,
        {
            "seeds": 1,
            "annotators": 12,
            "minutes": 30,
            "images": 2,
            "epochs": 2,
            "agreement": "0.55",
        },
    )


def items(images: int, rng: np.random.Generator) -> tuple[list, np.ndarray]:
    """``[(occupation, prompt text)]`` per item and the items' latent scores."""
    catalogue = json.loads((ROOT / "annotation/catalogue/catalogue.json").read_text())
    out, latent = [], []
    for occupation in catalogue["occupations"]:
        for kind, text in occupation["prompts"].items():
            for _ in range(images):
                out.append((occupation["name"], text))
                latent.append(BASE[kind] + rng.normal(0, 0.08))
    return out, np.array(latent)


def build_tasks(occupations: list[str], size: int, pairs: bool, rng) -> list[list[int]]:
    by_occupation: dict[str, list[int]] = {}
    for i, name in enumerate(occupations):
        by_occupation.setdefault(name, []).append(i)
    tasks = []
    for members in by_occupation.values():
        members = list(rng.permutation(members))
        chunk = 6 if pairs else size
        for start in range(0, len(members) - 1, chunk):
            part = [int(i) for i in members[start : start + chunk]]
            if len(part) < 2:
                continue
            if pairs:
                n = len(part)
                tasks += [[part[i], part[(i + 1) % n]] for i in range(n)] if n > 2 else [part]
            else:
                tasks.append(part)
    return tasks


def answer(question, task, perceived, careless, k, rng_py):
    shown = list(task)
    if careless:
        return answering.careless(careless, shown, question, k, rng_py)[0]
    return answering.from_scores({i: perceived[i] for i in task}, question, k)


def run(question: str, sigma: float, seed: int, world: dict, args, careless: float, qc: bool):
    """One simulated study's answers that count, as records."""
    rng = np.random.default_rng(seed)
    latent = world["latent"]
    people = args.annotators
    noise = sigma * np.exp(rng.normal(0, 0.3, people))
    n_careless = round(careless * people)
    kinds = ["random", "shown", "equal"]
    careless_of = {p: kinds[j % 3] for j, p in enumerate(rng.permutation(people)[:n_careless])}
    size = args.bws_size if question == "best_worst" else args.task_size
    size = 2 if question == "pairwise" else size
    k = args.k if question == "top_k" else None
    tasks = build_tasks(world["occupations"], size, question == "pairwise", rng)
    if question in ("top_k", "best_worst"):
        tasks = [t for t in tasks if len(t) == size]
    seconds = getattr(args, f"seconds_{question}")
    per_person = int(args.minutes * 60 / people / seconds)
    checks = per_person // args.check_every if qc else 0
    rng_py = random.Random(seed)
    failed: dict[int, int] = {}
    for person in range(people):
        kind = careless_of.get(person)
        for _ in range(checks):
            chance = 0.5 if question == "pairwise" else 1 / size
            passed = rng.random() < (0.98 if kind is None else (0 if kind == "equal" else chance))
            failed[person] = failed.get(person, 0) + (not passed)
    excluded = {p for p, n in failed.items() if n >= 2}
    counts = np.zeros(len(tasks), dtype=int)
    done: set[tuple[int, int]] = set()
    records = []
    order = list(range(len(tasks)))
    for _turn in range(per_person - checks):
        for person in range(people):
            # the task with the fewest answers this person has not answered
            free = [t for t in order if (t, person) not in done]
            if not free:
                continue
            t = min(free, key=lambda t: counts[t])
            done.add((t, person))
            counts[t] += 1
            perceived = latent + rng.normal(0, noise[person], len(latent))
            tiers = answer(question, tasks[t], perceived, careless_of.get(person), k, rng_py)
            if person not in excluded:
                records.append(
                    RankingRecord(
                        t, person, "", tuple(flatten(tiers)), tuple(tasks[t]), None, {}, tiers
                    )
                )
        rng.shuffle(order)
    return records


def eval_rho(label: dict[int, float], world: dict, seed: int, epochs: int) -> float:
    import torch
    from scipy.stats import spearmanr

    from training.ml.heads import train_heads
    from training.ml.recipes import DEFAULT_RECIPE, recipe

    occupations = world["occupations"]
    names = sorted(set(occupations))
    held = set(np.random.default_rng(seed + 1000).permutation(names)[: len(names) // 5])
    train = [i for i in label if occupations[i] not in held]
    test = [i for i in range(len(occupations)) if occupations[i] in held]
    config = recipe(DEFAULT_RECIPE)  # train's default (lr 1e-2), as a lab trains
    keys = ("lr", "alpha", "temperature", "weight_decay")
    cfg = {"epochs": epochs, **{key: config[key] for key in keys}}
    emb = world["embeddings"]
    w, b = train_heads(
        torch.tensor(emb[train]),
        torch.tensor([label[i] for i in train], dtype=torch.float32),
        [occupations[i] for i in train],
        [cfg],
        seed=seed,
    )
    pred = (torch.tensor(emb[test]) @ w[0] + b[0]).detach().numpy()
    return float(spearmanr(pred, world["latent"][test]).statistic)


def strict_w(sigma: float, world: dict, args) -> float:
    records = run("rank", sigma, 12345, world, args, 0.0, False)
    return agreement(records, n_boot=0).kendall_w.value


def calibrate(target: float, world: dict, args) -> float:
    lo, hi = 0.005, 2.0
    for _ in range(14):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if strict_w(mid, world, args) > target else (lo, mid)
    return math.sqrt(lo * hi)


def summary(values: list[float]) -> dict:
    v = np.array([x for x in values if x == x])
    if v.size == 0:
        return {"mean": None, "low": None, "high": None}
    half = 1.96 * v.std(ddof=1) / math.sqrt(v.size) if v.size > 1 else 0.0
    return {"mean": float(v.mean()), "low": float(v.mean() - half), "high": float(v.mean() + half)}


def world_of(args) -> dict:
    from training.ml.encoders.loading import load_encoder

    listed, latent = items(args.images, np.random.default_rng(0))
    texts = sorted({text for _, text in listed})
    encoder = load_encoder("all-MiniLM-L6-v2")
    vectors = dict(zip(texts, encoder.encode(texts), strict=True))
    return {
        "occupations": [o for o, _ in listed],
        "latent": latent,
        "embeddings": np.stack([vectors[t] for _, t in listed]).astype(np.float32),
    }


def measure(question, sigma, world, args, careless=0.0, qc=False, fit=False) -> dict:
    """One row; with ``fit``, also the eval rho of heads trained on the Bradley-Terry
    fit's labels (``annotation.stats.pair_fit``) instead of the counting labels."""
    halves, rhos, fit_rhos, judgements = [], [], [], []
    for seed in range(args.seeds):
        records = run(question, sigma, seed, world, args, careless, qc)
        answers = [r.tiered() for r in records]
        judgements.append(len(records))
        halves.append(split_half(records, splits=50, n_boot=0, seed=seed).value)
        rhos.append(eval_rho(counting_labels(answers), world, seed, args.epochs))
        if fit:
            fitted = fitted_labels(answers, bradley_terry(answers))
            fit_rhos.append(eval_rho(fitted, world, seed, args.epochs))
    row = {
        "format": question,
        "seconds_per_judgement": getattr(args, f"seconds_{question}"),
        "judgements": float(np.mean(judgements)),
        "split_half": summary(halves),
        "eval_rho": summary(rhos),
    }
    return {**row, "eval_rho_fit": summary(fit_rhos)} if fit else row


def main() -> None:
    args = parse()
    started = time.perf_counter()
    print(f"load average before: {load()}", file=sys.stderr)
    world = world_of(args)
    rows = []
    targets = [float(t) for t in args.agreement.split(",")]
    sigmas = {}
    for target in targets:  # each level named by its strict-rank W target
        name = f"W {target:g}"
        sigmas[name] = calibrate(target, world, args)
        w = strict_w(sigmas[name], world, args)
        for question in FORMATS:
            row = measure(question, sigmas[name], world, args, fit=question in FIT_FORMATS)
            rows.append({"noise": name, "sigma": sigmas[name], "rank_w": w, **row})
    if args.qc:
        middle_name = f"W {sorted(targets)[len(targets) // 2]:g}"  # the middle level
        middle = sigmas[middle_name]
        for careless in (0.0, args.careless):
            for qc in (True, False):
                for question in FORMATS:
                    row = measure(question, middle, world, args, careless, qc)
                    rows.append({"noise": middle_name, "careless": careless, "qc": qc, **row})
    print(f"{'noise':<7}{'careless':>9}{'qc':>6}  {'format':<11}{'judg.':>7}  "
          f"{'split-half [95%]':<24}{'eval rho [95%]':<24}{'eval rho, BT fit [95%]'}")  # fmt: skip
    for r in rows:
        half, rho = r["split_half"], r["eval_rho"]

        def cell(s):
            return (
                "-" if s["mean"] is None else f"{s['mean']:.3f} [{s['low']:.3f}, {s['high']:.3f}]"
            )

        print(f"{r['noise']:<7}{r.get('careless', 0):>9.2f}{str(r.get('qc', '-')):>6}  "
              f"{r['format']:<11}{r['judgements']:>7.0f}  {cell(half):<24}{cell(rho):<24}"
              f"{cell(r['eval_rho_fit']) if 'eval_rho_fit' in r else '-'}")  # fmt: skip
    for r in rows:
        print(json.dumps(r))
    print(f"load average after: {load()}; {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
