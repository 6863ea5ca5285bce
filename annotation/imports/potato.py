"""Potato's ranking and best-worst annotations, read into neutral records (pure functions).

The shape, as Potato documents it (github.com/davidjurgens/potato: docs/annotation-types/
comparison/ranking.md and bws.md, docs/export_formats.md, ``potato/export/
tabular_exporter.py``, ``potato/bws.py``): one JSON line (a JSON array is read too) per
annotator and instance, with ``user_id``, ``instance_id`` and the annotations by scheme name,
under ``labels`` (``python -m potato.export --format jsonl``) or ``label_annotations`` (the
annotated-instances output). A ``ranking`` scheme's answer is ``{"rank_order": "B,D=A,C"}``:
the items' names from first (most stereotypical) to last, ``=`` joining ties. A ``bws``
scheme's answer is ``{"best": "B", "worst": "D"}``, positions in the tuple, whose items the
tuple instance's ``_bws_items`` lists (``{"source_id", "text", "position"}``, as Potato's tuple
generator writes them, shown in position order); it becomes the tiers [best], [the rest],
[worst].

The scheme read is the one named (``--question``), else the line's only ranking or bws
answer. A ranking's items are matched by our id when the line's ``stereorank_items`` maps
their names to it, else by their names (an image file name, or a prompt's text); a tuple's
items by ``stereorank_items`` of their ``source_id``, else by their ``source_id`` and
``text``. Potato's ranking output does not say the order it showed the items in.
"""

from __future__ import annotations

from annotation.imports.records import (
    BEST_WORST,
    OUR_IDS,
    PAIRWISE,
    ItemRef,
    MalformedRecord,
    Parsed,
    SourceRanking,
    an_object,
    annotator_id,
    best_worst,
    need,
    our_ids,
    question_of,
    read_json,
    texts,
)

BWS_ITEMS = "_bws_items"


def parse(data: bytes, question: str | None = None) -> Parsed:
    """Every line's ranking or best-worst answer as a ``SourceRanking``."""
    rankings, skipped = [], 0
    for position, line in read_json(data):
        line = an_object(line, position, "an annotation")
        schemes = line.get("labels", line.get("label_annotations"))
        schemes = an_object(schemes or {}, position, "labels")
        name = _scheme(schemes, question, position)
        if name is None:
            skipped += 1
            continue
        answer = an_object(schemes[name], position, f"labels[{name!r}]")
        ours = our_ids(line.get(OUR_IDS), position)
        who = annotator_id(line.get("user_id"), position)
        if "rank_order" in answer:
            rankings.append(_ranking(answer["rank_order"], ours, who, position))
        else:
            rankings.append(_best_worst(answer, line.get(BWS_ITEMS), ours, who, position))
    return Parsed(rankings, skipped)


def _is_answer(value: object) -> bool:
    return isinstance(value, dict) and ("rank_order" in value or {"best", "worst"} <= set(value))


def _scheme(schemes: dict, named: str | None, position: str) -> str | None:
    if named is not None:
        return named if _is_answer(schemes.get(named)) else None
    found = [name for name, value in schemes.items() if _is_answer(value)]
    if len(found) > 1:
        raise MalformedRecord(
            position,
            f"several ranking schemes ({', '.join(sorted(found))}): name one with --question",
        )
    return found[0] if found else None


def _ranking(order: object, ours: dict[str, int], who: str, where: str) -> SourceRanking:
    need(isinstance(order, str) and order.strip() != "", where, "rank_order is not a list")
    tiers = tuple(
        tuple(name.strip() for name in place.split("="))
        for place in order.split(",")  # type: ignore[union-attr]
    )
    keys = [k for tier in tiers for k in tier]
    need(all(keys), where, f"rank_order {order!r} has an empty name")
    need(len(set(keys)) == len(keys), where, f"rank_order {order!r} names an item twice")
    items = tuple(ItemRef(k, ours.get(k), (k,)) for k in keys)
    return SourceRanking(where, who, items, tiers, question_of(tiers), shown=False)


def _best_worst(
    answer: dict, listed: object, ours: dict[str, int], who: str, where: str
) -> SourceRanking:
    need(isinstance(listed, list) and bool(listed), where, f"no {BWS_ITEMS} (the tuple's items)")
    refs = []
    for entry in listed:  # type: ignore[union-attr]
        entry = an_object(entry, where, f"an entry of {BWS_ITEMS}")
        key = entry.get("position")
        need(isinstance(key, str) and key != "", where, f"{BWS_ITEMS} entry without a position")
        source = entry.get("source_id")
        item_id = ours.get(str(source), ours.get(key)) if source is not None else ours.get(key)
        refs.append(ItemRef(key, item_id, texts(source, entry.get("text"))))
    refs.sort(key=lambda ref: ref.key)
    keys = [ref.key for ref in refs]
    need(len(set(keys)) == len(keys), where, f"two {BWS_ITEMS} entries share a position")
    tiers = best_worst(keys, str(answer.get("best")), str(answer.get("worst")), where)
    question = BEST_WORST if len(keys) > 2 else PAIRWISE
    return SourceRanking(where, who, tuple(refs), tiers, question)
