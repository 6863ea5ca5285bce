"""Training with the embedding cache vs the seed's re-encoding, and scoring speed.

For each encoder: (a) the seed's way, re-encoding every batch every epoch (and
the eval texts every epoch), as the model card's ``forward`` does; (b) ours with
a cold cache; (c) ours with the cache warm. Same data, seed and configuration,
so (a) and (b) draw the same random numbers and should end at the same metric.
Then scoring throughput: ``RewardModel.score`` (no cache, and warm cache) vs a
raw ``SentenceTransformer.encode`` of the same texts at the same batch size.

    .venv/bin/python benchmarks/train_cache.py                  # MiniLM 10,800 + mpnet 1,080
    .venv/bin/python benchmarks/train_cache.py --encoder minilm --seed-epochs 3
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

from training.ml.data import group_split, synthetic_examples  # noqa: E402
from training.ml.encoders import EmbeddingCache, EncoderError, load_encoder  # noqa: E402
from training.ml.train import TrainConfig, train  # noqa: E402

SETTINGS = {
    # name: (encoder, prompts per (occupation, type)); 40 occupations x 3 types x 9 variants
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2", 10),  # 10,800 texts
    "mpnet": ("sentence-transformers/all-mpnet-base-v2", 1),  # 1,080 texts
}


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def bench_training(encoder, examples, epochs: int, seed_epochs: int) -> dict:
    train_set, eval_set = group_split(examples, eval_fraction=0.2, seed=0)
    config = TrainConfig(epochs=epochs, n_boot=0)
    seed_config = TrainConfig(epochs=seed_epochs, n_boot=0)
    print(f"  {len(train_set)} train / {len(eval_set)} eval texts, {epochs} epochs")
    with tempfile.TemporaryDirectory() as cache_dir:
        seed_way, t_a = _timed(
            lambda: train(
                train_set, encoder, seed_config, eval_examples=eval_set, embedding_mode="reencode"
            )
        )
        cold, t_b = _timed(
            lambda: train(
                train_set, encoder, config, eval_examples=eval_set, cache=EmbeddingCache(cache_dir)
            )
        )
        warm, t_c = _timed(
            lambda: train(
                train_set, encoder, config, eval_examples=eval_set, cache=EmbeddingCache(cache_dir)
            )
        )
    t_a_full = t_a * epochs / seed_epochs
    note = (
        ""
        if seed_epochs == epochs
        else f" (measured {seed_epochs} epochs, x{epochs / seed_epochs:g})"
    )
    rows = [
        ("(a) seed way, re-encode", t_a_full, seed_way),
        ("(b) ours, cold cache", t_b, cold),
        ("(c) ours, warm cache", t_c, warm),
    ]
    for label, seconds, result in rows:
        print(
            f"  {label:26s} {seconds:9.2f} s  encode calls {result.encode_calls:5d}  "
            f"texts encoded {result.texts_encoded:7d}  spearman {result.metrics['spearman']:.6f}"
        )
    if note:
        print(f"  (a) extrapolated{note}")
    print(f"  ratio (a)/(b) = {t_a_full / t_b:.1f}x   (a)/(c) = {t_a_full / t_c:.1f}x")
    out = {"a": t_a_full, "b": t_b, "c": t_c, "a_measured_epochs": seed_epochs}
    if seed_epochs == epochs:
        diff = abs(seed_way.metrics["spearman"] - cold.metrics["spearman"])
        w = (seed_way.model.fc.weight - cold.model.fc.weight).abs().max().item()
        print(f"  |spearman (a) - (b)| = {diff:.2e}, max |weight (a) - (b)| = {w:.2e}")
        out.update(metric_diff=diff, weight_diff=w)
    return out


def bench_scoring(encoder, model, texts, repeats: int = 3, batch_size: int = 64) -> dict:
    with tempfile.TemporaryDirectory() as cache_dir:
        cache = EmbeddingCache(cache_dir)
        model.score(texts[:64])  # warm-up
        raw = ours = float("inf")
        for _ in range(repeats):  # alternate, keep the best of each: the CPUs are shared
            _, t = _timed(
                lambda: encoder.model.encode(texts, batch_size=batch_size, show_progress_bar=False)
            )
            raw = min(raw, t)
            _, t = _timed(lambda: model.score(texts))
            ours = min(ours, t)
        model.score(texts, cache)
        _, warm = _timed(lambda: model.score(texts, cache))
    n = len(texts)
    print(
        f"  scoring {n} texts: raw encode {n / raw:8.1f} prompts/s, RewardModel.score "
        f"{n / ours:8.1f} prompts/s ({raw / ours:.1%} of raw), warm cache {n / warm:9.1f} prompts/s"
    )
    return {"raw": n / raw, "ours": n / ours, "ratio": raw / ours, "warm": n / warm}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", choices=["minilm", "mpnet", "both"], default="both")
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument(
        "--seed-epochs", type=int, default=None, help="epochs to measure (a) for (default: all)"
    )
    parser.add_argument("--score-texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="scoring repeats (best kept)")
    parser.add_argument("--skip-training", action="store_true", help="scoring figures only")
    args = parser.parse_args()
    names = ["minilm", "mpnet"] if args.encoder == "both" else [args.encoder]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")
    for name in names:
        encoder_name, per_type = SETTINGS[name]
        try:
            encoder = load_encoder(encoder_name, device="cpu")
        except EncoderError as exc:
            print(f"{name}: skipped: {exc}")
            continue
        examples = synthetic_examples(n_occupations=40, prompts_per_type=per_type, variants=9)
        print(f"{name} ({encoder_name}, {len(examples)} texts)")
        if not args.skip_training:
            bench_training(encoder, examples, args.epochs, args.seed_epochs or args.epochs)
        model = train(examples[:200], encoder, TrainConfig(epochs=1, n_boot=0)).model
        texts = [e.text for e in examples[: args.score_texts]]
        bench_scoring(encoder, model, texts, repeats=args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
