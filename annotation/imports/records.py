"""What every tool's parser gives the importer: neutral records, on plain values (no Django).

A ``SourceRanking`` is one annotator's answer to one set of items, as the source tool stored
it: who (the tool's own annotator id, hashed before anything is written), which items (each an
``ItemRef``: the tool's name for it, our item id when the export carries one, and the values
that name it otherwise: an image's file name or URL, a prompt's text), the tiers (the items'
tool names, most stereotypical first: the tool's first, chosen or "best" is our most
stereotypical), the question format they answer (``Study.Question``'s values, checked by
``annotation.rankings.tiers``) and where it sits in the file (``position``).

``read_json`` reads an export the way every tool writes one: a JSON array (its records named
by their index) or JSON Lines (by their line number, from 1). A record that cannot be read
is a ``MalformedRecord`` naming its position; nothing of a file with one is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import parse_qs, unquote, urlparse

# Where an export carries our own item ids: an object mapping the tool's name for an item to
# our item id, under this key in Label Studio's task ``data``, an Argilla record's
# ``metadata``, or a Potato line (the instance's data).
OUR_IDS = "stereorank_items"

RANK, RANK_TIES, PAIRWISE, BEST_WORST = "rank", "rank_ties", "pairwise", "best_worst"


class MalformedRecord(ValueError):
    """A record the parser cannot read: ``position`` (e.g. "JSONL line 3") and why."""

    def __init__(self, position: str, why: str):
        super().__init__(f"{position}: {why}")
        self.position = position
        self.why = why


@dataclass(frozen=True)
class ItemRef:
    """One item as the source names it: ``key`` (the tool's name for it, unique within the
    record), ``item_id`` (ours, when the export carries it) and ``values`` (an image's file
    name or URL, a prompt's text: matched in that order, ``annotation.imports.selectors``)."""

    key: str
    item_id: int | None = None
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceRanking:
    """One annotator's answer to one set of items (module docstring). ``items`` are in the
    order the tool showed them when the export says so (``shown``), else in no particular
    order."""

    position: str
    annotator: str
    items: tuple[ItemRef, ...]
    tiers: tuple[tuple[str, ...], ...]
    question: str
    shown: bool = True


@dataclass(frozen=True)
class Parsed:
    """A file's rankings and how many of its answers were not rankings to import (a
    cancelled annotation, a draft response, a record with no ranking question answered)."""

    rankings: list[SourceRanking]
    skipped: int = 0


def read_json(data: bytes) -> list[tuple[str, object]]:
    """``[(position, record)]`` of a JSON array or JSON Lines export (module docstring)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise MalformedRecord("the file", f"not UTF-8 text (byte {error.start})") from error
    if text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except json.JSONDecodeError as error:
            raise MalformedRecord(
                "the file", f"not JSON (line {error.lineno}, column {error.colno}: {error.msg})"
            ) from error
        return [(f"JSON array index {i}", record) for i, record in enumerate(records)]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"JSONL line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            raise MalformedRecord(f"JSONL line {number}", f"not JSON ({error.msg})") from error
    return out


def need(condition: bool, position: str, why: str) -> None:
    """``MalformedRecord(position, why)`` unless ``condition``."""
    if not condition:
        raise MalformedRecord(position, why)


def an_object(value: object, position: str, what: str) -> dict:
    """``value`` if it is a JSON object, else ``MalformedRecord`` saying ``what`` it should be."""
    need(isinstance(value, dict), position, f"{what} is not a JSON object")
    return value  # type: ignore[return-value]


def annotator_id(value: object, position: str) -> str:
    """The tool's annotator id as text (a number or a non-empty string)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() == "":
        raise MalformedRecord(position, f"no annotator id (got {value!r})")
    return str(value).strip()


def our_ids(value: object, position: str) -> dict[str, int]:
    """The ``stereorank_items`` object (``OUR_IDS``): the tool's item names to our ids."""
    if value is None:
        return {}
    need(isinstance(value, dict), position, f"{OUR_IDS} is not an object of item ids")
    out = {}
    for key, item_id in value.items():  # type: ignore[union-attr]
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise MalformedRecord(position, f"{OUR_IDS}[{key!r}] is not an item id")
        out[str(key)] = item_id
    return out


def texts(*values: object) -> tuple[str, ...]:
    """The non-empty strings among ``values``, stripped (an item's names)."""
    return tuple(v.strip() for v in values if isinstance(v, str) and v.strip())


def file_name(value: str) -> str:
    """The last part of a URL's or path's path: what an ``Item``'s image is named. A Label
    Studio local-files URL names its file in its ``d`` parameter (``/data/local-files/?d=``)."""
    url = urlparse(value.strip())
    path = url.path
    if url.query and not PurePosixPath(path).suffix:
        path = (parse_qs(url.query).get("d") or [path])[0]
    return PurePosixPath(unquote(path)).name


def split_tiers(tiers: list[list[str]]) -> tuple[tuple[str, ...], ...]:
    """Tiers as tuples (the form ``SourceRanking`` holds)."""
    return tuple(tuple(tier) for tier in tiers)


def question_of(tiers: tuple[tuple[str, ...], ...]) -> str:
    """An order's format: ``pairwise`` for two items, ``rank`` when strict, else
    ``rank_ties``."""
    if sum(len(t) for t in tiers) == 2:
        return PAIRWISE
    return RANK if all(len(t) == 1 for t in tiers) else RANK_TIES


def best_worst(keys: list[str], best: str, worst: str, position: str) -> tuple:
    """Best-worst as tiers: [best], [the rest, in ``keys``' order], [worst]."""
    need(best in keys, position, f"the best item {best!r} is not one of {keys}")
    need(worst in keys, position, f"the worst item {worst!r} is not one of {keys}")
    need(best != worst, position, "the best and the worst item are the same")
    rest = tuple(k for k in keys if k not in (best, worst))
    return ((best,), rest, (worst,)) if rest else ((best,), (worst,))
