"""Training examples: the ``Example`` record, reading them from JSONL, and their data hash."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class Example:
    """One text with its label in [0, 1] (higher = more diverse).

    ``group`` is the original prompt a paraphrase belongs to (the unit of the
    split and of the bootstrap); ``occupation`` forms the lists of the loss;
    ``prompt_type`` (``stereotypical``, ``neutral``, ``diverse``), when known,
    feeds threshold calibration; ``weight`` is its importance in the loss
    (``losses``: 1 except in balanced runs).
    """

    text: str
    label: float
    group: str
    occupation: str
    prompt_type: str | None = None
    weight: float = 1.0


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


def data_hash(examples: Sequence[Example]) -> str:
    """SHA-256 of the examples as sorted canonical JSON lines (order-independent); a
    weight of 1 is left out, so unweighted data hashes as before weights existed."""

    def line(e: Example) -> str:
        row = asdict(e)
        if row["weight"] == 1.0:
            del row["weight"]
        return json.dumps(row, sort_keys=True)

    lines = sorted(line(e) for e in examples)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
