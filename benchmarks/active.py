"""Active vs uniform sampling on planted synthetic annotators (issue 18, the pure part).

No database, no encoder: per seed, ``--items`` random embeddings (d = ``--dim``,
an anisotropic spectrum as real sentence embeddings have, one mean shift per
occupation) and a true head ``w``; annotators rank a task's K items by a
Plackett-Luce draw at ``u = X w / T`` (T = 0.5, the sampler's), ``w`` scaled
so the utilities' standard deviation is ``--signal`` (lower = noisier
annotators). Each round
offers a fresh pool of ``--pool`` candidate tasks (K items of one occupation)
and each arm takes ``--batch`` of them:

* uniform: today's order, the occupation seen least so far, then a random task;
* active: ``d_optimal_priorities`` at the current head and its Laplace precision
  (exploration 20%), the top ``batch`` by priority.

After each round each arm refits its head (MAP: Plackett-Luce likelihood plus
a Gaussian prior of precision 1, L-BFGS) and scores held-out items; eval rho is
Spearman's between predicted and true scores. Both arms of a seed see the same
items, truth, pools and annotator noise stream, so the comparison is paired.
Printed: a table of mean eval rho per arm after each round (the curve), then last
one JSON line per arm: mean final rho, the rankings needed to reach 95%
of uniform's final rho (per seed; null when never reached), and for active the
paired difference of the area under the curve (mean rho over rounds) with a
95% t interval over seeds. ``--plot`` draws both arms' curves (mean over seeds, the
band from the lowest to the highest seed) on one figure (SVG or PNG by its suffix).

    .venv/bin/python benchmarks/active.py --plot var/benchmarks/active.svg
    .venv/bin/python benchmarks/active.py --seeds 2 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments  # noqa: E402

from training.ml.sampler import (  # noqa: E402
    Candidate,
    d_optimal_priorities,
    laplace_precision,
)

T = 0.5
K = 6


def _world(seed: int, args: argparse.Namespace):
    rng = np.random.default_rng(seed)
    scales = 1.0 / np.sqrt(1.0 + np.arange(args.dim))  # anisotropic, as real embeddings
    occ = rng.integers(0, args.occupations, args.items)
    shift = rng.normal(scale=0.5, size=(args.occupations, args.dim))
    emb = (rng.normal(size=(args.items, args.dim)) + shift[occ]) * scales
    w_true = rng.normal(size=args.dim) / scales
    w_true *= args.signal * T / np.std(emb @ w_true)  # utilities' spread: annotators' noise
    held_out = rng.normal(size=(args.eval_items, args.dim)) * scales
    return emb, occ, w_true, held_out


def _nll(w: np.ndarray, draws: np.ndarray, emb: np.ndarray):
    """Negative log-likelihood of draw orders (n, K) plus |w|^2 / 2, and its gradient."""
    x = emb[draws]  # (n, K, d)
    u = x @ w / T
    value, grad = 0.5 * w @ w, w.copy()
    for j in range(K - 1):
        p = special.softmax(u[:, j:], axis=1)
        value -= (u[:, j] - special.logsumexp(u[:, j:], axis=1)).sum()
        grad -= (x[:, j] - np.einsum("nk,nkd->nd", p, x[:, j:])).sum(axis=0) / T
    return value, grad


def _fit(draws: list[np.ndarray], emb: np.ndarray) -> np.ndarray:
    w0 = np.zeros(emb.shape[1])
    if not draws:
        return w0
    res = optimize.minimize(_nll, w0, args=(np.stack(draws), emb), jac=True, method="L-BFGS-B")
    return res.x


def _run(seed: int, arm: str, args: argparse.Namespace) -> list[float]:
    emb, occ, w_true, held_out = _world(seed, args)
    pools = np.random.default_rng([seed, 1])
    noise = np.random.default_rng([seed, 2])
    choose = np.random.default_rng([seed, 3])
    by_occ = [np.flatnonzero(occ == o) for o in range(args.occupations)]
    seen = np.zeros(args.occupations, dtype=int)
    draws: list[np.ndarray] = []  # draw order (best first) of every ranking
    w_hat, curve = np.zeros(args.dim), []
    for _ in range(args.rounds):
        pool_occ = pools.integers(0, args.occupations, args.pool)
        pool = [pools.choice(by_occ[o], K, replace=False) for o in pool_occ]
        if arm == "uniform":
            picks = []
            for _ in range(args.batch):
                open_ = [i for i in range(args.pool) if i not in picks]
                least = min(seen[pool_occ[i]] for i in open_)
                picks.append(int(choose.choice([i for i in open_ if seen[pool_occ[i]] == least])))
                seen[pool_occ[picks[-1]]] += 1
        else:
            stored = [d[::-1] for d in draws]
            precision = laplace_precision(stored, emb, w_hat, prior=1.0, temperature=T)
            got = d_optimal_priorities(
                [Candidate(emb[p], str(o)) for p, o in zip(pool, pool_occ, strict=True)],
                precision,
                w_hat,
                batch=args.batch,
                exploration=0.2,
                rng=choose,
                coverage={str(o): int(c) for o, c in enumerate(seen)},
                temperature=T,
            )
            picks = np.argsort(-got.priority)[: args.batch].tolist()
            for i in picks:
                seen[pool_occ[i]] += 1
        for i in picks:
            u = emb[pool[i]] @ w_true / T
            draws.append(pool[i][np.argsort(-(u + noise.gumbel(size=K)))])  # a PL draw
        w_hat = _fit(draws, emb)
        curve.append(float(stats.spearmanr(held_out @ w_hat, held_out @ w_true)[0]))
    return curve


def _needed(curve: list[float], target: float, batch: int) -> int | None:
    hits = [i for i, r in enumerate(curve) if r >= target]
    return (hits[0] + 1) * batch if hits else None


def _table(curves: dict[str, list[list[float]]], batch: int) -> None:
    print(f"{'rankings':>9} " + " ".join(f"{arm:>8}" for arm in curves))
    means = {arm: np.mean(cs, axis=0) for arm, cs in curves.items()}
    for i in range(len(next(iter(means.values())))):
        print(f"{(i + 1) * batch:>9} " + " ".join(f"{m[i]:>8.3f}" for m in means.values()))


def _plot(curves: dict[str, list[list[float]]], batch: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for arm, cs in curves.items():
        a = np.asarray(cs)
        x = batch * np.arange(1, a.shape[1] + 1)
        ax.plot(x, a.mean(axis=0), marker="o", label=f"{arm} (mean of {len(a)} seeds)")
        ax.fill_between(x, a.min(axis=0), a.max(axis=0), alpha=0.2)
    ax.set_xlabel("rankings collected")
    ax.set_ylabel("eval Spearman rho (held-out items)")
    ax.set_title("Active against uniform sampling, planted annotators")
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    print(f"plot: {path}")


def main() -> None:
    """Run both arms over the seeds and print one JSON line per arm."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--pool", type=int, default=200)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--occupations", type=int, default=10)
    parser.add_argument("--eval-items", type=int, default=500)
    parser.add_argument("--signal", type=float, default=1.0, help="std of true utilities")
    parser.add_argument("--plot", type=Path, help="write both arms' curves here (.svg or .png)")
    args = arguments(
        parser,
        {"seeds": 1, "rounds": 2, "batch": 5, "pool": 40, "dim": 16, "items": 60,
         "occupations": 3, "eval_items": 50},
    )  # fmt: skip
    curves = {arm: [_run(s, arm, args) for s in range(args.seeds)] for arm in ("uniform", "active")}
    _table(curves, args.batch)
    if args.plot:
        _plot(curves, args.batch, args.plot)
    targets = [0.95 * c[-1] for c in curves["uniform"]]
    auc = {arm: np.array([np.mean(c) for c in cs]) for arm, cs in curves.items()}
    diff = auc["active"] - auc["uniform"]
    half = stats.t.ppf(0.975, len(diff) - 1) * diff.std(ddof=1) / np.sqrt(len(diff))
    for arm, cs in curves.items():
        line = {
            "arm": arm,
            "seeds": args.seeds,
            "rankings": args.rounds * args.batch,
            "final_rho": round(float(np.mean([c[-1] for c in cs])), 4),
            "rankings_to_95pct_of_uniform_final": [
                _needed(c, t, args.batch) for c, t in zip(cs, targets, strict=True)
            ],
            "auc": round(float(auc[arm].mean()), 4),
        }
        if arm == "active":
            line["auc_minus_uniform"] = round(float(diff.mean()), 4)
            line["auc_minus_uniform_95ci"] = [
                round(float(diff.mean() - half), 4),
                round(float(diff.mean() + half), 4),
            ]
        print(json.dumps(line))


if __name__ == "__main__":
    main()
