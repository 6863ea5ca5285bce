"""Scoring throughput of fp32 and quantized encoders, and the accuracy gate's figures.

For each encoder (MiniLM from its package, all-mpnet-base-v2 assembled from the
seed parts into the model directory), every variant (torch fp32 as trained,
ONNX and OpenVINO, fp32 and int8; exported on first use) scores the same N
distinct prompt-like texts with the same head, through ``RewardModel.score``
with no cache, beside a raw ``SentenceTransformer.encode`` of those texts at
the same batch size. Each repeat times every variant once, in turn, so a noisy
machine slows them alike; printed: the median prompts/s and the median of the
per-repeat ratios to raw encode, with the load average.

The gate: a head trained on the fp32 encoder (synthetic data, 12 occupations,
3 epochs at lr 1e-2 as the tests do), its threshold calibrated (KDE) on the fp32
eval scores, then every variant's eval scores against the fp32 ones
(``training.ml.encoders.gate``) at the settings' default tolerances.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/encoders.py
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/encoders.py --encoders minilm --texts 256
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import numpy as np  # noqa: E402
import torch  # noqa: E402
from _common import arguments  # noqa: E402

from training.ml.cache import EmbeddingCache  # noqa: E402
from training.ml.calibration import calibrate  # noqa: E402
from training.ml.checkpoints import Checkpoint  # noqa: E402
from training.ml.encoders.gate import accuracy_gate  # noqa: E402
from training.ml.encoders.loading import load_encoder  # noqa: E402
from training.ml.split import group_split  # noqa: E402
from training.ml.synthetic import synthetic_examples  # noqa: E402
from training.ml.train import TrainConfig, train  # noqa: E402

MODEL_DIR = Path(__file__).resolve().parents[1] / "var" / "models"
ENCODERS = {"minilm": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2"}
VARIANTS = [
    ("torch", "none"),
    ("onnx", "none"),
    ("onnx", "int8"),
    ("openvino", "none"),
    ("openvino", "int8"),
]
BATCH = 64


def _load() -> str:
    return "load avg " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _head(fp32, cache_dir: Path):
    """A head trained on ``fp32`` and its eval split (texts, labels, is_stereotypical)."""
    examples = synthetic_examples(n_occupations=12, prompts_per_type=6, variants=3, seed=5)
    train_set, eval_set = group_split(examples, 0.25, seed=0)
    config = TrainConfig(epochs=3, lr=1e-2, device="cpu", n_boot=0)
    model = train(train_set, fp32, config, cache=EmbeddingCache(cache_dir)).model
    checkpoint = Checkpoint.from_model(model, hyperparameters={}, data_hash="bench")
    return checkpoint, eval_set


def bench(
    key: str, n_texts: int, repeats: int, model_dir: Path, tolerances: dict, variants_: list
) -> None:
    name = ENCODERS[key]
    fp32 = load_encoder(name, model_dir=model_dir, device="cpu")
    print(f"\n== {fp32.identity.name}: loading / exporting the variants ({_load()})")
    variants = {}
    for backend, quant in [("torch", "none"), *variants_]:
        start = time.perf_counter()
        variants[(backend, quant)] = load_encoder(
            name, model_dir=model_dir, device="cpu", backend=backend, quantization=quant
        )
        print(f"  {backend}/{quant}: ready in {time.perf_counter() - start:.1f} s")

    with tempfile.TemporaryDirectory() as cache_dir:
        checkpoint, eval_set = _head(fp32, Path(cache_dir))
    models = {v: checkpoint.to_model(enc, allow_other_backend=True) for v, enc in variants.items()}

    texts = sorted({e.text for e in synthetic_examples(prompts_per_type=10, variants=9)})
    texts = texts[:: max(1, len(texts) // n_texts)][:n_texts]
    st = fp32.model
    for model in models.values():  # warm-up: first-call allocations out of the timings
        model.score(texts[:BATCH])
    st.encode(texts[:BATCH], batch_size=BATCH)
    times: dict = {v: [] for v in ["raw", *models]}
    for _ in range(repeats):
        start = time.perf_counter()
        with torch.inference_mode():
            st.encode(texts, batch_size=BATCH, show_progress_bar=False)
        times["raw"].append(time.perf_counter() - start)
        for v, model in models.items():
            start = time.perf_counter()
            model.score(texts)
            times[v].append(time.perf_counter() - start)
    print(f"  scoring {len(texts)} texts, batch {BATCH}, {repeats} repeats ({_load()})")
    print(f"  {'variant':<18} {'prompts/s':>10} {'x raw encode':>13}")
    print(f"  {'raw ST.encode':<18} {len(texts) / statistics.median(times['raw']):>10.1f}")
    for v in models:
        ratio = statistics.median(r / t for r, t in zip(times["raw"], times[v], strict=True))
        rate = len(texts) / statistics.median(times[v])
        print(f"  {'/'.join(v):<18} {rate:>10.1f} {ratio:>12.2f}x")

    eval_texts = [e.text for e in eval_set]
    labels = np.array([e.label for e in eval_set])
    reference = models[("torch", "none")].score(eval_texts)
    cal = calibrate(reference, [e.prompt_type == "stereotypical" for e in eval_set])
    print(
        f"  gate: {len(eval_texts)} eval prompts, threshold {cal.threshold:.4f} ({cal.method}), "
        f"tolerances drift {tolerances['max_rho_drift']}, flips {tolerances['max_flip_share']}"
    )
    print(
        f"  {'variant':<18} {'rank rho':>9} {'rho fp32':>9} {'rho copy':>9} "
        f"{'drift':>7} {'flips':>7} {'max |ds|':>9}  verdict"
    )
    for v, model in models.items():
        if v == ("torch", "none"):
            continue
        r = accuracy_gate(reference, model.score(eval_texts), labels, cal.threshold, **tolerances)
        print(
            f"  {'/'.join(v):<18} {r.rank_rho:>9.4f} {r.rho_fp32:>9.4f} {r.rho_quantized:>9.4f} "
            f"{r.rho_drift:>7.4f} {r.flips:>3}/{r.n:<3} {r.max_abs_diff:>9.5f}  "
            + ("pass" if r.passed else "REFUSED: " + "; ".join(r.reasons()))
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", default="minilm,mpnet")
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model-dir", type=Path, default=MODEL_DIR)
    parser.add_argument("--max-rho-drift", type=float, default=0.01)
    parser.add_argument("--max-flip-share", type=float, default=0.02)
    parser.add_argument(
        "--variants",
        default=",".join(f"{b}/{q}" for b, q in VARIANTS[1:]),
        help="backend/quantization pairs beside torch/none",
    )
    # The smoke run's one variant is the copy the tests export (shared with --model-dir).
    args = arguments(
        parser, {"encoders": "minilm", "texts": 16, "repeats": 1, "variants": "onnx/int8"}
    )
    chosen = [tuple(v.split("/")) for v in args.variants.split(",")]
    if not set(chosen) <= set(VARIANTS[1:]):
        sys.exit(f"encoders: --variants takes {','.join(f'{b}/{q}' for b, q in VARIANTS[1:])}")
    print(
        f"{date.today()}, torch {torch.__version__}, {torch.get_num_threads()} threads, {_load()}"
    )
    tolerances = {"max_rho_drift": args.max_rho_drift, "max_flip_share": args.max_flip_share}
    for key in args.encoders.split(","):
        bench(key, args.texts, args.repeats, args.model_dir, tolerances, chosen)


if __name__ == "__main__":
    main()
