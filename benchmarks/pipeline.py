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

    .venv/bin/python benchmarks/pipeline.py
    .venv/bin/python benchmarks/pipeline.py --occupations 10 --images 3 --epochs 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


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
        "--embedding-cache", help="Keep embeddings in this folder (a rerun skips encoding)."
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pipeline-bench-") as tmp:
        folder = Path(tmp)
        if args.embedding_cache:
            os.environ["STEREORANK_EMBEDDING_CACHE"] = args.embedding_cache
        _setup(args.database_url, folder)
        import json

        from annotation.catalogue import load_catalogue, read_catalogue
        from annotation.simulation import simulate
        from annotation.tasks_builder import build_tasks
        from training import encoders, services
        from training.runs import execute_run, training_examples

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


def _f(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"


if __name__ == "__main__":
    main()
