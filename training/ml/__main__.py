"""Command line, no Django: ``python -m training.ml train|score|export-seed``.

``--model-dir``, ``--cache-dir`` and ``--device`` go before or after the command.

Errors end the process with status 1 and one line on stderr saying why.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.ml import checkpoints
from training.ml.cache import EmbeddingCache
from training.ml.calibration import SEED_THRESHOLD, Calibration, calibrate
from training.ml.checkpoints import Checkpoint, CheckpointError
from training.ml.encoders.loading import load_encoder
from training.ml.errors import MLError
from training.ml.examples import data_hash, read_jsonl
from training.ml.recipes import DEFAULT_RECIPE, RECIPES
from training.ml.split import group_split
from training.ml.train import TrainConfig, train

VAR = Path(__file__).resolve().parents[2] / "var"


def _shared_options(parser: argparse.ArgumentParser, default) -> None:
    """Options every command takes; ``default`` is ``argparse.SUPPRESS`` after the command."""
    parser.add_argument(
        "--model-dir",
        type=Path,
        default=VAR / "models" if default is None else default,
        help="where encoders live (default: var/models)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=VAR / "embeddings" if default is None else default,
        help="embedding cache (default: var/embeddings)",
    )
    parser.add_argument(
        "--device", default="auto" if default is None else default, help="auto, cpu, cuda or mps"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.ml", description=__doc__)
    _shared_options(parser, None)
    shared = argparse.ArgumentParser(add_help=False)
    _shared_options(shared, argparse.SUPPRESS)  # so a value after the command is kept
    sub = parser.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", parents=[shared], help="train a head and save a checkpoint")
    t.add_argument("--data", type=Path, required=True, help="JSONL: text, label, group, occupation")
    t.add_argument("--encoder", required=True, help="encoder name or folder")
    t.add_argument("--out", type=Path, required=True, help="new checkpoint directory")
    defaults = TrainConfig()
    t.add_argument("--recipe", choices=list(RECIPES), default=DEFAULT_RECIPE)
    t.add_argument("--epochs", type=int, help="default: the recipe's")
    t.add_argument("--lr", type=float, help="default: the recipe's")
    t.add_argument("--temperature", type=float, default=defaults.temperature)
    t.add_argument("--alpha", type=float, default=defaults.alpha)
    t.add_argument("--seed", type=int, default=defaults.seed)
    t.add_argument("--eval-fraction", type=float, default=0.2)
    t.add_argument("--n-boot", type=int, default=defaults.n_boot)

    s = sub.add_parser("score", parents=[shared], help="score prompts with a checkpoint")
    s.add_argument("--checkpoint", type=Path, required=True)
    s.add_argument("prompts", nargs="+")

    e = sub.add_parser("export-seed", parents=[shared], help="write the seed's .pth state dict")
    e.add_argument("--checkpoint", type=Path, required=True)
    e.add_argument("--out", type=Path, required=True)
    return parser


def _train(args) -> None:
    if args.out.exists():
        raise CheckpointError(f"{args.out} already exists; checkpoints are never overwritten")
    examples = read_jsonl(args.data)
    train_set, eval_set = group_split(examples, args.eval_fraction, args.seed)
    given = {"epochs": args.epochs, "lr": args.lr}
    config = TrainConfig.from_recipe(
        args.recipe,
        **{k: v for k, v in given.items() if v is not None},
        temperature=args.temperature,
        alpha=args.alpha,
        seed=args.seed,
        device=args.device,
        n_boot=args.n_boot,
    )
    encoder = load_encoder(args.encoder, model_dir=args.model_dir, device=args.device)

    def progress(report) -> None:
        rho = (report.eval_metrics or {}).get("spearman", float("nan"))
        print(f"epoch {report.epoch}/{report.epochs} loss {report.loss:.4f} spearman {rho:.4f}")

    result = train(
        train_set,
        encoder,
        config,
        eval_examples=eval_set,
        cache=EmbeddingCache(args.cache_dir),
        on_epoch=progress,
    )
    extra = {"eval_fraction": args.eval_fraction, "n_train": len(train_set)}
    types = [e.prompt_type for e in eval_set]
    if all(types):
        scores = result.model.score([e.text for e in eval_set], EmbeddingCache(args.cache_dir))
        cal = calibrate(scores, [p == "stereotypical" for p in types])
    else:
        cal = Calibration(SEED_THRESHOLD, "seed-default", "the data has no prompt_type")
    extra["threshold_method"], extra["threshold_reason"] = cal.method, cal.reason
    extra["calibration"] = {"method": cal.method, "reason": cal.reason, "basis": cal.basis}
    ckpt = Checkpoint.from_model(
        result.model,
        hyperparameters=config.to_dict(),
        data_hash=data_hash(examples),
        metrics=result.metrics or {},
        threshold=cal.threshold,
        extra=extra,
    )
    checkpoints.save(ckpt, args.out)
    print(json.dumps({"checkpoint": str(args.out), "spearman": ckpt.metrics.get("spearman")}))


def _score(args) -> None:
    ckpt = checkpoints.load(args.checkpoint)
    encoder = load_encoder(ckpt.encoder.name, model_dir=args.model_dir, device=args.device)
    model = ckpt.to_model(encoder)
    for prompt, score in zip(
        args.prompts, model.score(args.prompts, EmbeddingCache(args.cache_dir)), strict=True
    ):
        flag = "stereotypical" if score < ckpt.threshold else "ok"
        print(f"{score:.4f}\t{flag}\t{prompt}")


def _export(args) -> None:
    ckpt = checkpoints.load(args.checkpoint)
    encoder = load_encoder(ckpt.encoder.name, model_dir=args.model_dir, device=args.device)
    print(checkpoints.export_seed_pth(ckpt, args.out, encoder))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    commands = {"train": _train, "score": _score, "export-seed": _export}
    try:
        commands[args.command](args)
    except (MLError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
