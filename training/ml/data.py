"""Plain training data: examples, JSONL reading, the grouped split, the data hash."""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Example:
    """One text with its label in [0, 1] (higher = more diverse).

    ``group`` is the original prompt a paraphrase belongs to (the unit of the
    split and of the bootstrap); ``occupation`` forms the lists of the loss;
    ``prompt_type`` (``stereotypical``, ``neutral``, ``diverse``), when known,
    feeds threshold calibration.
    """

    text: str
    label: float
    group: str
    occupation: str
    prompt_type: str | None = None


def read_jsonl(path: str | Path) -> list[Example]:
    """Examples from lines ``{"text", "label", "group", "occupation"[, "prompt_type"]}``.

    A bad line is a ``ValueError`` naming the file and line number.
    """
    examples = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
                missing = [k for k in ("text", "label", "group", "occupation") if k not in row]
                if missing:
                    raise ValueError(f"missing {', '.join(missing)}")
                label = float(row["label"])
                if not math.isfinite(label):
                    raise ValueError(f"label {row['label']!r} is not finite")
                for k in ("text", "group", "occupation"):
                    if not isinstance(row[k], str) or not row[k]:
                        raise ValueError(f"{k} must be a non-empty string")
                prompt_type = row.get("prompt_type")
                examples.append(
                    Example(row["text"], label, row["group"], row["occupation"], prompt_type)
                )
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: {exc}") from exc
    return examples


def group_split(
    examples: Sequence[Example], eval_fraction: float = 0.2, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """Split by ``group``: a prompt and its paraphrases fall on one side.

    ``round(eval_fraction * n_groups)`` groups (at least one) go to eval, chosen by
    shuffling the sorted group names with ``random.Random(seed)``.
    """
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    groups = sorted({e.group for e in examples})
    n_eval = max(1, round(eval_fraction * len(groups)))
    if len(groups) < 2 or n_eval >= len(groups):
        raise ValueError(
            f"cannot split {len(groups)} group(s) with eval_fraction={eval_fraction}: "
            "need at least one group on each side"
        )
    random.Random(seed).shuffle(groups)
    eval_groups = set(groups[:n_eval])
    train = [e for e in examples if e.group not in eval_groups]
    held_out = [e for e in examples if e.group in eval_groups]
    return train, held_out


def data_hash(examples: Sequence[Example]) -> str:
    """SHA-256 of the examples as sorted canonical JSON lines (order-independent)."""
    lines = sorted(json.dumps(asdict(e), sort_keys=True) for e in examples)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
