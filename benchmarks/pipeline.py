"""The whole retraining loop at the seed's scale, stage by stage, with MiniLM on the CPU.

40 occupations from the catalogue with 10 placeholder images per prompt (1,200
items), ranking tasks of 6, synthetic annotators covering every task once, a
snapshot, offline augmentation with n=8 (up to 10,800 texts), embedding, 12
epochs of training with the seed's hyper-parameters, evaluation on the eval
split. The stages run through ``training.services`` in this process (what a
worker runs; broker latency is not measured). Embedding is timed as its own
stage (a cold cache), then the run trains on it. Each stage's wall time is
printed with the load average, because the CPUs may be shared.

By default everything goes to a throwaway SQLite database and temporary folders;
``--database-url postgres://...`` uses that (empty, migrated) database instead.

``--search [SPEC]`` trains three runs on the same snapshot and augmentation instead
of one: the ``seed`` recipe, the ``standard`` recipe and a searched one (``train
--search``: grouped CV inside the train split chooses the recipe, which then trains
on the whole train split), each evaluated once on the eval split; it prints their
eval rho, the paired differences searched - seed and searched - standard with 95%
group-bootstrap intervals, and the search's own time, then one JSON line.

    .venv/bin/python benchmarks/pipeline.py
    .venv/bin/python benchmarks/pipeline.py --occupations 10 --images 3 --epochs 2
    .venv/bin/python benchmarks/pipeline.py --search
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import arguments, migrate  # noqa: E402


def _setup(database_url: str, folder: Path) -> None:
    os.environ.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        DJANGO_SETTINGS_MODULE="web.settings",
        STEREORANK_VAR_DIR=str(folder / "var"),
        STEREORANK_CHECKPOINT_DIR=str(folder / "checkpoints"),
        STEREORANK_MEDIA_ROOT=str(folder / "media"),
        STEREORANK_DEVICE="cpu",
        CELERY_TASK_ALWAYS_EAGER="true",
    )
    os.environ.setdefault("STEREORANK_EMBEDDING_CACHE", str(folder / "embeddings"))
    if database_url:
        os.environ["DATABASE_URL"] = database_url
        os.environ.setdefault("STEREORANK_EMBEDDED", "true")
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    migrate()


class Stages:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, str]] = []

    def run(self, name: str, fn, describe=lambda out: ""):
        start = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - start
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        note = describe(out)
        self.rows.append((name, seconds, note))
        print(f"{name:<28} {seconds:9.1f} s   {note}   (load avg {load})", flush=True)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--occupations", type=int, default=40)
    parser.add_argument("--images", type=int, default=10, help="Placeholder images per prompt.")
    parser.add_argument("--paraphrases", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, help="Learning rate (default: the seed's 1e-5).")
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2")
    parser.add_argument("--database-url", default="")
    parser.add_argument(
        "--search",
        nargs="?",
        const=True,
        metavar="SPEC",
        help="Searched recipe against seed and standard on the same snapshot (SPEC narrows it).",
    )
    parser.add_argument(
        "--embedding-cache", help="Keep embeddings in this folder (a rerun skips encoding)."
    )
    args = arguments(parser, {"occupations": 3, "images": 1, "paraphrases": 1, "epochs": 1})

    with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as tmp:
        folder = Path(tmp)
        if args.embedding_cache:
            os.environ["STEREORANK_EMBEDDING_CACHE"] = args.embedding_cache
        _setup(args.database_url, folder)
        import json

        from annotation.catalogue.loading import load_catalogue, read_catalogue
        from annotation.studies.simulation import simulate
        from annotation.studies.tasks_builder import build_tasks
        from training import services
        from training.runs.services import execute_run, training_examples
        from training.storage import encoders

        catalogue = read_catalogue()
        catalogue["occupations"] = catalogue["occupations"][: args.occupations]
        (folder / "catalogue.json").write_text(json.dumps(catalogue))
        print(f"torch threads {__import__('torch').get_num_threads()}, {os.cpu_count()} CPUs")
        s = Stages()
        s.run(
            "catalogue + images",
            lambda: load_catalogue(args.images, path=folder / "catalogue.json"),
            lambda c: f"{c['items']} items",
        )
        tasks = s.run("build tasks", lambda: build_tasks(6, 1), lambda n: f"{n} tasks of <= 6")
        per = 20
        s.run(
            "simulate annotators",
            lambda: simulate(-(-tasks // per), per, seed=0),
            lambda r: f"{r['annotators']} annotators, {r['rankings']} rankings",
        )
        snap = s.run(
            "snapshot",
            lambda: services.create_snapshot(include_synthetic=True, weighting="none"),
            lambda x: f"{x.example_count} examples ({x.train_count} train / {x.eval_count} eval)",
        )
        s.run("load encoder", lambda: encoders.encoder(args.encoder, device="cpu"), lambda e: "")
        aug, _ = services.request_augmentation(snap, "offline", args.paraphrases)
        aug = s.run(
            f"augment offline n={args.paraphrases}",
            lambda: services.run_augmentation(aug.pk, args.encoder),
            lambda a: (
                f"{a.stats['kept']} kept, {a.stats['rejected']} rejected, "
                f"{a.stats['kept'] + snap.example_count} texts in all"
            ),
        )
        if args.search is not None:
            _compare_search(s, snap, aug, args)
            return
        hyper = {"n_boot": 1000, **({"lr": args.lr} if args.lr else {})}
        run = services.start_run(
            snap,
            encoder=args.encoder,
            epochs=args.epochs,
            augmentation=aug,
            hyperparameters=hyper,
            enqueue=False,
        )
        train_set, eval_rows = training_examples(run)
        texts = list(dict.fromkeys([e.text for e in train_set] + [r["text"] for r in eval_rows]))
        encoder = encoders.encoder(args.encoder, device="cpu")
        cache = encoders.embedding_cache()
        before = encoder.texts_encoded
        s.run(
            "embed",
            lambda: cache.embed(encoder, texts),
            lambda v: (
                f"{len(texts)} distinct texts of {len(train_set) + len(eval_rows)}, "
                f"{encoder.texts_encoded - before} encoded (the rest cached by the "
                "augmentation's cosine filter)"
            ),
        )
        s.run(
            f"train {args.epochs} epochs + evaluate",
            lambda: execute_run(run.pk, "benchmark"),
            lambda out: out,
        )
        run.refresh_from_db()
        ckpt = run.checkpoint
        m = ckpt.metrics
        print(f"{'total':<28} {sum(t for _, t, _ in s.rows):9.1f} s")
        ci = m.get("spearman_ci") or [None, None]
        print(
            f"final eval rho {_f(m['spearman'])} (95% CI {_f(ci[0])} to {_f(ci[1])}), "
            f"mean per-occupation rho {_f(m['mean_occupation_spearman'])}, pairwise accuracy "
            f"{_f(m['pairwise_accuracy'])}, on {m['n_items']} eval items; "
            f"lr {run.hyperparameters['lr']}, threshold {ckpt.threshold:.3f}"
        )
        print("per epoch: " + ", ".join(f"{h['epoch']}: rho {_f(h['rho'])}" for h in run.history))


def _compare_search(stages: Stages, snapshot, augmentation, args) -> None:
    """Seed, standard and searched runs on one snapshot; eval rho and paired differences."""
    import json

    from training import services
    from training.runs.services import execute_run

    def trained(name: str, **kwargs):
        run = services.start_run(
            snapshot,
            encoder=args.encoder,
            augmentation=augmentation,
            hyperparameters={"n_boot": 1000},
            enqueue=False,
            **kwargs,
        )
        stages.run(name, lambda: execute_run(run.pk, "benchmark"), lambda out: out)
        run.refresh_from_db()
        return run

    runs = {
        "seed": trained("train seed recipe", recipe="seed"),
        "standard": trained("train standard recipe", recipe="standard"),
        "searched": trained("search + train chosen", search=args.search),
    }
    search = runs["searched"].search
    best = search["scores"][search["chosen"]]
    print(
        f"search: {len(search['scores'])} configurations x {search['space']['folds']} folds "
        f"on {search['examples']} train texts ({search['prompts']} prompts) in "
        f"{search['seconds']:.1f} s; chose {best['config']}, CV rho {_f(best['mean'])} "
        f"[{_f(best['ci'][0])}, {_f(best['ci'][1])}]"
    )
    figures = {"search_seconds": search["seconds"], "chosen": best["config"]}
    for name, run in runs.items():
        m = run.checkpoint.metrics
        ci = m.get("spearman_ci") or [None, None]
        print(f"{name:<9} eval rho {_f(m['spearman'])} (95% CI {_f(ci[0])} to {_f(ci[1])})")
        figures[f"{name}_rho"] = m["spearman"]
    for other in ("seed", "standard"):
        c = services.compare(runs["searched"].checkpoint, runs[other].checkpoint, snapshot)
        print(
            f"searched - {other}: {c['diff']:+.3f} (95% CI {c['ci'][0]:+.3f} to "
            f"{c['ci'][1]:+.3f}, p {c['p_value']:.3f}) on {c['n_items']} eval items"
        )
        figures[f"searched_minus_{other}"] = {"diff": c["diff"], "ci": c["ci"]}
    figures["load_avg"] = os.getloadavg()
    print(json.dumps(figures))


def _f(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
