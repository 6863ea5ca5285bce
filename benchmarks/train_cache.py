"""Training with the embedding cache vs the seed's re-encoding, and scoring speed.

For each encoder: (a) the seed's way, re-encoding every batch every epoch (and
the eval texts every epoch), as the model card's ``forward`` does; (b) ours with
a cold cache; (c) ours with the cache warm. Same data, seed and configuration,
so (a) and (b) draw the same random numbers and should end at the same metric.
Every figure is measured, none extrapolated; the load average is printed beside
them because the CPUs may be shared. Then scoring throughput:
``RewardModel.score`` through a cold cache (and a warm one) vs a raw
``SentenceTransformer.encode`` of the same texts at the same batch size.

    .venv/bin/python benchmarks/train_cache.py                  # MiniLM 10,800 + mpnet 1,080
    .venv/bin/python benchmarks/train_cache.py --encoder minilm --epochs 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import torch  # noqa: E402
from _common import arguments  # noqa: E402

from training.ml.cache import EmbeddingCache  # noqa: E402
from training.ml.encoders.identity import EncoderError  # noqa: E402
from training.ml.encoders.loading import load_encoder  # noqa: E402
from training.ml.split import group_split  # noqa: E402
from training.ml.synthetic import synthetic_examples  # noqa: E402
from training.ml.train import TrainConfig, train  # noqa: E402

# Where the seed encoder is assembled from its part packages (as bin/run does).
MODEL_DIR = Path(__file__).resolve().parents[1] / "var" / "models"
SETTINGS = {
    # name: (encoder, prompts per (occupation, type), texts to score);
    # 40 occupations x 3 types x 9 variants
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", 10, 2000),  # 10,800 texts
    "mpnet": ("sentence-transformers/all-mpnet-base-v2", 1, 500),  # 1,080 texts
}


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _load() -> str:
    return "load avg " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_training(encoder, examples, epochs: int) -> dict:
    train_set, eval_set = group_split(examples, eval_fraction=0.2, seed=0)
    config = TrainConfig(epochs=epochs, n_boot=0)
    print(f"  {len(train_set)} train / {len(eval_set)} eval texts, {epochs} epochs, seed 0")
    rows = []
    with tempfile.TemporaryDirectory() as cache_dir:
        modes = [
            ("(a) seed way, re-encode", {"embedding_mode": "reencode"}),
            ("(b) ours, cold cache", {"cache": EmbeddingCache(cache_dir)}),
            ("(c) ours, warm cache", {"cache": EmbeddingCache(cache_dir)}),
        ]
        for label, kwargs in modes:
            result, seconds = _timed(
                lambda kwargs=kwargs: train(
                    train_set, encoder, config, eval_examples=eval_set, **kwargs
                )
            )
            rows.append((label, seconds, result))
            print(
                f"  {label:24s} {seconds:9.2f} s  encode calls {result.encode_calls:5d}  "
                f"texts encoded {result.texts_encoded:7d}  ({_load()})",
                flush=True,
            )
    (_, t_a, seed_way), (_, t_b, cold), (_, t_c, _) = rows
    print(f"  ratio (a)/(b) = {t_a / t_b:.1f}x   (a)/(c) = {t_a / t_c:.1f}x")
    rho_a, rho_b = seed_way.metrics["spearman"], cold.metrics["spearman"]
    w = (seed_way.model.fc.weight - cold.model.fc.weight).abs().max().item()
    print(
        f"  final eval spearman (a) {rho_a:.9f}  (b) {rho_b:.9f}  |(a) - (b)| = "
        f"{abs(rho_a - rho_b):.2e}; max |fc.weight (a) - (b)| = {w:.2e}"
    )
    return {"a": t_a, "b": t_b, "c": t_c, "metric_diff": abs(rho_a - rho_b), "weight_diff": w}


def bench_scoring(encoder, model, texts, repeats: int = 3, batch_size: int = 64) -> dict:
    """Raw encode vs ``score`` through a cold cache, alternating; best of ``repeats`` each.

    Load from other processes moves both figures, so it also times, inside each
    ``score`` run, how long ``SentenceTransformer.encode`` itself took: the rest is
    our own overhead (hashing, cache lookups and writes, tensor conversion, head).
    """
    inner = encoder.model.encode
    spent = [0.0]

    def timed_encode(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    model.score(texts[:batch_size])  # warm-up
    raw, ours, overhead, pairs, warm = [], [], [], [], float("inf")
    for _ in range(repeats):
        _, t_raw = _timed(lambda: inner(texts, batch_size=batch_size, show_progress_bar=False))
        with tempfile.TemporaryDirectory() as cache_dir:
            cache = EmbeddingCache(cache_dir)
            spent[0] = 0.0
            encoder.model.encode = timed_encode
            try:
                _, t_ours = _timed(lambda cache=cache: model.score(texts, cache))
            finally:
                del encoder.model.encode  # back to the class's method
            _, t_warm = _timed(lambda cache=cache: model.score(texts, cache))
        raw.append(t_raw)
        ours.append(t_ours)
        overhead.append(t_ours - spent[0])
        pairs.append(t_raw / t_ours)
        warm = min(warm, t_warm)
    n, best_raw, best_ours = len(texts), min(raw), min(ours)
    print(
        f"  scoring {n} texts ({len(set(texts))} distinct), batch {batch_size}, best of "
        f"{repeats}: raw SentenceTransformer.encode {n / best_raw:7.1f} prompts/s, "
        f"RewardModel.score cold cache {n / best_ours:7.1f} prompts/s = "
        f"{best_raw / best_ours:.1%} of raw  ({_load()})"
    )
    print(
        "  per pair (raw time / ours): " + ", ".join(f"{r:.1%}" for r in pairs) + "; our "
        f"overhead outside SentenceTransformer.encode {min(overhead) * 1e3:.0f} ms per call "
        f"= {min(overhead) / best_ours:.2%} of it; warm cache {n / warm:.0f} prompts/s"
    )
    return {
        "raw": n / best_raw,
        "ours": n / best_ours,
        "ratio": best_raw / best_ours,
        "overhead_s": min(overhead),
        "warm": n / warm,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", choices=["minilm", "mpnet", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--score-texts", type=int, help="texts to score (default: per encoder)")
    parser.add_argument("--repeats", type=int, default=5, help="scoring repeats (best kept)")
    parser.add_argument("--skip-training", action="store_true", help="scoring figures only")
    parser.add_argument("--occupations", type=int, default=40, help="of the synthetic texts")
    parser.add_argument("--variants", type=int, default=9, help="of each synthetic prompt")
    args = arguments(
        parser,
        {
            "encoder": "minilm",
            "epochs": 1,
            "score_texts": 16,
            "repeats": 1,
            "occupations": 2,
            "variants": 1,
        },
    )
    names = ["minilm", "mpnet"] if args.encoder == "both" else [args.encoder]
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, "
        f"{os.cpu_count()} cores, {_load()}"
    )
    for name in names:
        encoder_name, per_type, n_score = SETTINGS[name]
        try:
            encoder = load_encoder(encoder_name, model_dir=MODEL_DIR, device="cpu")
        except EncoderError as exc:
            print(f"{name}: skipped: {exc}")
            continue
        examples = synthetic_examples(
            n_occupations=args.occupations, prompts_per_type=per_type, variants=args.variants
        )
        print(f"{name} ({encoder_name}, {len(examples)} texts)")
        if not args.skip_training:
            bench_training(encoder, examples, args.epochs)
        model = train(examples[:200], encoder, TrainConfig(epochs=1, n_boot=0)).model
        texts = [e.text for e in examples[: args.score_texts or n_score]]
        bench_scoring(encoder, model, texts, repeats=args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
