"""The grouped train/eval split: a prompt and its paraphrases fall on one side."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from training.ml.examples import Example


def natural_key(name: str) -> tuple[list[str | int], str]:
    """``name`` as alternating text and numbers (``g9`` before ``g10``), then itself.

    ``re.split`` with a group puts the digit runs at the odd places; the name
    itself breaks ties such as ``g01`` and ``g1``.
    """
    parts = re.split(r"(\d+)", name)
    return [int(part) if i % 2 else part for i, part in enumerate(parts)], name


def group_split(
    examples: Sequence[Example], eval_fraction: float = 0.2, seed: int = 0
) -> tuple[list[Example], list[Example]]:
    """Split by ``group``: a prompt and its paraphrases fall on one side.

    ``round(eval_fraction * n_groups)`` groups (at least one) go to eval, chosen by
    shuffling the group names, in natural order, with ``random.Random(seed)``.
    Natural order (``prompt-9`` before ``prompt-10``) keeps the split of the same
    prompts whatever ids a database numbered them from.
    """
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    groups = sorted({e.group for e in examples}, key=natural_key)
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
