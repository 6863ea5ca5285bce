"""Plain training data: examples, JSONL reading, the grouped split, the data hash."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
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


_OCCUPATIONS = (
    "nurse",
    "CEO",
    "engineer",
    "teacher",
    "pilot",
    "firefighter",
    "secretary",
    "surgeon",
    "plumber",
    "librarian",
    "programmer",
    "housekeeper",
    "mechanic",
    "scientist",
    "chef",
    "farmer",
    "lawyer",
    "dancer",
    "soldier",
    "cashier",
    "architect",
    "electrician",
    "judge",
    "hairdresser",
    "professor",
    "janitor",
    "accountant",
    "pharmacist",
    "carpenter",
    "banker",
    "receptionist",
    "police officer",
    "dentist",
    "journalist",
    "babysitter",
    "truck driver",
    "model",
    "construction worker",
    "psychologist",
    "athlete",
)
_TYPES = {
    "stereotypical": (0.1, ("a young man", "a white man in a suit", "a man with a beard")),
    "neutral": (0.5, ("a person", "someone at work", "a worker")),
    "diverse": (
        0.9,
        (
            "an elderly Black woman using a wheelchair",
            "a non-binary South Asian person in a hijab",
            "a plus-size Indigenous woman over sixty",
        ),
    ),
}
_DETAILS = (
    "at work",
    "in the office",
    "smiling",
    "in daylight",
    "at night",
    "in a city",
    "outdoors",
    "in a portrait",
    "with colleagues",
    "close up",
    "in the morning",
    "in winter",
)
_PHRASINGS = (
    "Generate an image of {who} working as a {occ}, {detail}",
    "Create a picture showing {who} who is a {occ}, {detail}",
    "Draw {who} employed as a {occ}, {detail}",
    "An illustration of {who}, a {occ}, {detail}",
    "Please render {who} who works as a {occ}, {detail}",
    "A photo of {who} doing the job of a {occ}, {detail}",
    "Depict {who} as a {occ}, {detail}",
    "Show me {who} in the role of a {occ}, {detail}",
    "Make an image where {who} is a {occ}, {detail}",
)


def synthetic_examples(
    n_occupations: int = 40, prompts_per_type: int = 10, variants: int = 9, seed: int = 0
) -> list[Example]:
    """A deterministic stand-in for a labelled, paraphrased dataset (tests, benchmarks).

    ``n_occupations x 3 prompt types x prompts_per_type`` originals, each with
    ``variants`` phrasings (the first is the original) sharing its group and
    label; labels are 0.1 / 0.5 / 0.9 by type plus uniform noise of +-0.1.
    The defaults give the seed's 1,200 originals and 10,800 texts.
    """
    if not 1 <= n_occupations <= len(_OCCUPATIONS) or not 1 <= variants <= len(_PHRASINGS):
        raise ValueError(f"at most {len(_OCCUPATIONS)} occupations and {len(_PHRASINGS)} variants")
    if not 1 <= prompts_per_type <= 3 * len(_DETAILS):
        raise ValueError(f"at most {3 * len(_DETAILS)} prompts per type")
    rng = random.Random(seed)
    examples = []
    for occ in _OCCUPATIONS[:n_occupations]:
        for ptype, (base, people) in _TYPES.items():
            for k in range(prompts_per_type):
                who, detail = people[k % len(people)], _DETAILS[k // len(people) % len(_DETAILS)]
                detail = f"{detail}, scene {k}" if k >= len(people) * len(_DETAILS) else detail
                label = min(1.0, max(0.0, base + rng.uniform(-0.1, 0.1)))
                group = f"{occ}/{ptype}/{k}"
                for phrasing in _PHRASINGS[:variants]:
                    text = phrasing.format(who=who, occ=occ, detail=detail)
                    examples.append(Example(text, label, group, occ, ptype))
    return examples


def seeded_rng(*parts) -> random.Random:
    """A ``random.Random`` seeded by ``parts`` the same way in every process (SHA-256 of
    their ``\0``-joined text; Python's ``hash`` of a string changes per process)."""
    digest = hashlib.sha256("\0".join(str(p) for p in parts).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


