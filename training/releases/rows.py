"""A release's rows, config by config and split by split, from plain values: the rankings
that may be released (already chosen by consent), the snapshot's items and split, and each
annotator's released answers (``training.releases.demographics``).

- **rankings**: one row per ranking and split: its tiers (most to least stereotypical,
  items judged equal together) over that split's items; the snapshot splits items by prompt
  group, so a ranking whose items fall on both sides is cut in two, each part in its split
  (a part of fewer than two items says nothing and is left out).
- **items**: the snapshot's items of the study, with their prompt texts, in their split.
- **labels**: each item's label from the released rankings alone (mean place over K - 1,
  the snapshot's rule: ``annotation.rankings.labels``) and how many rankings it rests on.
- **pairs**: the preference pairs the released rankings state
  (``annotation.rankings.exports.preference_pairs``: chosen the less stereotypical, with its
  margin), with ``prompt`` the occupation both image prompts depict (TRL's explicit-prompt
  format); a pair across the split is left out, and so is a pair of two identical texts
  (two images of one prompt teach a text model nothing), as ``export_pairs`` leaves it out.

Annotators and tasks are named by keys made for this release only (``keyed``: an HMAC with
a fresh random key the caller never stores), so two releases cannot be joined by them, nor
a release with the platform's exports; rows are sorted by those keys, not stored order.
Only the annotators with a row (``present``) count towards k when their answers are
coarsened, so no combination shows in the rows with fewer people than k. Pure Python.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotation.rankings.exports import preference_pairs
from annotation.stats.tiers import Tiers, flatten, places, within

CONFIGS = ("rankings", "items", "labels", "pairs")


def release_key() -> bytes:
    """A fresh random key for one release's pseudonyms; never stored."""
    return secrets.token_bytes(32)


def keyed(key: bytes, prefix: str, value: object) -> str:
    """``prefix-`` and 12 hex digits of the HMAC of ``value`` under this release's key."""
    digest = hmac.new(key, f"{prefix}:{value}".encode(), hashlib.sha256).hexdigest()
    return f"{prefix}-{digest[:12]}"


@dataclass(frozen=True)
class Item:
    """One of the snapshot's items: its prompt, its prompt group and its split."""

    item_id: int
    text: str
    occupation: str
    prompt_type: str
    group: str
    split: str


@dataclass(frozen=True)
class Ranked:
    """A ranking that may be released: its tiers with the attention-check card taken out
    (``tiers``, every item it ranked, for labels and pair margins as the snapshot reads
    them), its task, occupation and annotator (a user id, keyed before it leaves)."""

    task: int
    annotator: int
    occupation: str
    tiers: Tiers


def _part(ranked: Ranked, items: Mapping[int, Item], split: str) -> Tiers:
    """The ranking's tiers over the split's items (its row of the rankings config)."""
    return within(
        ranked.tiers, {i for i in flatten(ranked.tiers) if i in items and items[i].split == split}
    )


def present(rankings: Sequence[Ranked], items: Mapping[int, Item], splits: Sequence[str]) -> set:
    """The annotators who have a row in the release: a ranking with two or more of a
    split's items (a pair needs two items of one split too). Only they count towards k."""
    return {
        r.annotator
        for r in rankings
        if any(len(flatten(_part(r, items, split))) >= 2 for split in splits)
    }


def _demographics(answers: Mapping[int, Mapping], columns: Sequence[str], annotator: int):
    mine = answers.get(annotator, {})
    return {column: mine.get(column) for column in columns}


def release_rows(
    rankings: Sequence[Ranked],
    items: Mapping[int, Item],
    answers: Mapping[int, Mapping[str, str | None]],
    columns: Sequence[str],
    splits: Sequence[str],
    key: bytes,
) -> dict[str, dict[str, list[dict]]]:
    """``{config: {split: rows}}`` (module docstring); ``answers`` maps each annotator (user
    id) to their released answers over ``columns``, the column names of the rows."""
    out: dict[str, dict[str, list[dict]]] = {c: {s: [] for s in splits} for c in CONFIGS}
    sums: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    for ranked in rankings:
        annotator, task = keyed(key, "r", ranked.annotator), keyed(key, "t", ranked.task)
        about = _demographics(answers, columns, ranked.annotator)
        k, place = sum(len(t) for t in ranked.tiers), places(ranked.tiers)
        for item, at in place.items():
            if item in items and k > 1:
                sums[item] += at / (k - 1)
                counts[item] += 1
        for split in splits:
            part = _part(ranked, items, split)
            if sum(len(t) for t in part) < 2:
                continue
            out["rankings"][split].append(
                {
                    "annotator": annotator,
                    "task": task,
                    "occupation": ranked.occupation,
                    "tiers": [list(t) for t in part],
                    "items": sum(len(t) for t in part),
                    **about,
                }
            )
        for chosen, rejected, margin in preference_pairs(ranked.tiers):
            a, b = items.get(chosen), items.get(rejected)
            if a is None or b is None or a.split != b.split or a.text == b.text:
                continue
            out["pairs"][a.split].append(
                {
                    "prompt": ranked.occupation,
                    "chosen": a.text,
                    "rejected": b.text,
                    "margin": margin,
                    "chosen_item": chosen,
                    "rejected_item": rejected,
                    "chosen_prompt_type": a.prompt_type,
                    "rejected_prompt_type": b.prompt_type,
                    "occupation": ranked.occupation,
                    "task": task,
                    "annotator": annotator,
                    **about,
                }
            )
    for item in sorted(items.values(), key=lambda i: i.item_id):
        out["items"][item.split].append(
            {
                "item_id": item.item_id,
                "text": item.text,
                "occupation": item.occupation,
                "prompt_type": item.prompt_type,
                "prompt_group": item.group,
            }
        )
        if counts[item.item_id]:
            out["labels"][item.split].append(
                {
                    "item_id": item.item_id,
                    "label": sums[item.item_id] / counts[item.item_id],
                    "rankings": counts[item.item_id],
                }
            )
    for split in splits:
        out["rankings"][split].sort(key=lambda r: (r["task"], r["annotator"]))
        out["pairs"][split].sort(
            key=lambda r: (r["task"], r["annotator"], r["chosen_item"], r["rejected_item"])
        )
    return out
