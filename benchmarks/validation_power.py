"""Validation-study tests on simulated studies: false-positive rate under the null, power
under a planted effect, against what ``annotation/stats/power.py`` predicts.

Studies are drawn by ``annotation.stats.validation_sim.simulate`` (Plackett-Luce
rankings, K images half from each condition, every annotator ranking
``--rankings`` tasks over ``--occupations`` occupations), all at once, and the
tests of ``annotation.stats.validation`` run on the whole batch along the
annotator axis. Each rate comes with its Clopper-Pearson 95% interval
(``scipy.stats.binomtest``).

1. **Null** (effect 0): the share of studies where Welch's t (the card's test),
   the paired t and Wilcoxon reject at ``alpha``; the cluster bootstrap
   (annotators and occupations) on the first ``--boot-studies`` studies, through
   the records path (``validation_sim.records`` -> ``validation.study``), rejects
   when its 95% interval excludes 0.
2. **Null with occupations that differ** (effect 0 on average, each occupation
   shifted by N(0, ``--occupation-sd``), fixed within a study): the population
   null holds but each study's ten occupations do not average to 0 exactly.
3. **Planted effect** (``--effect``, annotators differing by N(0,
   ``--annotator-sd``)): the true ``d_z`` and the Welch inputs from a pilot of
   ``--pilot`` annotators; the predicted power at ``--annotators`` and the
   annotators needed for 80%, each checked by simulating studies of that size.

    .venv/bin/python benchmarks/validation_power.py
    .venv/bin/python benchmarks/validation_power.py --studies 500 --boot-studies 100
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments  # noqa: E402

from annotation.stats import power, validation, validation_sim  # noqa: E402


def rate(rejected: np.ndarray) -> dict:
    """Share of rejections with its Clopper-Pearson 95% interval."""
    k, n = int(rejected.sum()), int(rejected.size)
    ci = stats.binomtest(k, n).proportion_ci(method="exact")
    return {"rate": k / n, "ci_low": ci.low, "ci_high": ci.high, "n": n}


def rejections(sim: validation_sim.Simulated, alpha: float) -> dict[str, np.ndarray]:
    """Per study: does each annotator-means test reject at ``alpha``?"""
    base, treat = sim.annotator_means()
    with np.errstate(invalid="ignore"):
        return {
            "welch": validation.welch(base, treat).p < alpha,
            "paired_t": validation.paired_t(base, treat).p < alpha,
            "wilcoxon": validation.wilcoxon(base, treat)["p"] < alpha,
        }


def bootstrap_rejections(sim: validation_sim.Simulated, studies: int, n_boot: int) -> np.ndarray:
    """Per study (the first ``studies``): does the cluster bootstrap's 95% interval exclude 0?"""
    out = []
    for i in range(studies):
        s = validation.study(validation_sim.records(sim, i))
        d = validation.cluster_bootstrap(s, n_boot=n_boot, seed=i)["difference"]
        out.append(d.ci_low > 0 or d.ci_high < 0)
    return np.array(out)


def null_rows(args, rng, occupation_sd: float) -> dict[str, dict]:
    sim = validation_sim.simulate(
        rng,
        studies=args.studies,
        annotators=args.annotators,
        rankings=args.rankings,
        occupations=args.occupations,
        k=args.k,
        occupation_sd=occupation_sd,
    )
    rows = {name: rate(r) for name, r in rejections(sim, args.alpha).items()}
    rows["cluster_bootstrap"] = rate(bootstrap_rejections(sim, args.boot_studies, args.n_boot))
    return rows


def planted(args, rng) -> dict:
    common = dict(
        rankings=args.rankings,
        occupations=args.occupations,
        k=args.k,
        effect=args.effect,
        annotator_sd=args.annotator_sd,
    )
    pilot_base, pilot_treat = validation_sim.simulate(
        rng, annotators=args.pilot, **common
    ).annotator_means()
    d = (pilot_treat - pilot_base)[0]
    d_z = d.mean() / d.std(ddof=1)
    sd_b, sd_t = pilot_base.std(ddof=1), pilot_treat.std(ddof=1)
    paired = power.paired(d_z, args.annotators, alpha=args.alpha)
    welch = power.welch(d.mean(), sd_b, sd_t, args.annotators, alpha=args.alpha)
    out = {"d_z": d_z, "difference": d.mean(), "sd_original": sd_b, "sd_optimised": sd_t}
    for label, n in (("at_n", args.annotators), ("at_n_needed", paired.n_needed)):
        sim = validation_sim.simulate(rng, studies=args.studies, annotators=n, **common)
        rej = rejections(sim, args.alpha)
        rej["cluster_bootstrap"] = bootstrap_rejections(sim, args.boot_studies, args.n_boot)
        base, treat = sim.annotator_means()
        diff = treat - base
        plug_in = power.paired_power(diff.mean(1) / diff.std(1, ddof=1), n, alpha=args.alpha)
        out[label] = {
            "n": n,
            "predicted_paired": float(power.paired_power(d_z, n, alpha=args.alpha)),
            "predicted_welch": float(power.welch_power(d.mean(), sd_b, sd_t, n, alpha=args.alpha)),
            "empirical": {name: rate(r) for name, r in rej.items()},
            "plug_in_power_median": float(np.median(plug_in)),
        }
    out["n_needed_paired"] = paired.n_needed
    out["n_needed_welch"] = welch.n_needed
    return out


def fmt(r: dict) -> str:
    return f"{r['rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--studies", type=int, default=2000)
    p.add_argument("--annotators", type=int, default=20)
    p.add_argument("--rankings", type=int, default=10, help="rankings per annotator")
    p.add_argument("--occupations", type=int, default=10)
    p.add_argument("--k", type=int, default=6)
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--effect", type=float, default=0.2, help="planted utility shift")
    p.add_argument("--annotator-sd", type=float, default=0.3)
    p.add_argument("--occupation-sd", type=float, default=0.2)
    p.add_argument("--boot-studies", type=int, default=1000)
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument("--pilot", type=int, default=50_000, help="annotators in the pilot")
    p.add_argument("--seed", type=int, default=0)
    args = arguments(p, {"studies": 20, "boot_studies": 20, "n_boot": 20, "pilot": 500})
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    result = {
        "config": vars(args),
        "null": null_rows(args, rng, 0.0),
        "null_occupations_differ": null_rows(args, rng, args.occupation_sd),
        "planted": planted(args, rng),
    }
    result["seconds"] = round(time.perf_counter() - t0, 1)

    print(
        f"{args.studies} studies, {args.annotators} annotators x {args.rankings} rankings, "
        f"K = {args.k}, alpha = {args.alpha} (bootstrap: {args.boot_studies} studies)"
    )
    for scenario in ("null", "null_occupations_differ"):
        print(f"\n{scenario}: false-positive rate [Clopper-Pearson 95%]")
        for name, r in result[scenario].items():
            holds = r["ci_low"] <= args.alpha <= r["ci_high"]
            print(f"  {name:18} {fmt(r)}  {'holds' if holds else 'OFF'}")
    pl = result["planted"]
    print(
        f"\nplanted effect {args.effect} (annotator SD {args.annotator_sd}): true d_z "
        f"{pl['d_z']:.3f}, difference {pl['difference']:.3f}; annotators needed for 80%: "
        f"paired {pl['n_needed_paired']}, Welch {pl['n_needed_welch']}"
    )
    for label in ("at_n", "at_n_needed"):
        row = pl[label]
        print(
            f"  n = {row['n']}: predicted paired {row['predicted_paired']:.3f}, "
            f"Welch {row['predicted_welch']:.3f}; median plug-in {row['plug_in_power_median']:.3f}"
        )
        for name, r in row["empirical"].items():
            print(f"    empirical {name:18} {fmt(r)}")
    print(f"\n{result['seconds']} s")
    print(json.dumps(result, default=float))


if __name__ == "__main__":
    main()
