"""Label Studio's JSON export of ranking projects, read into neutral records (pure functions).

The shape, as Label Studio documents it (labelstud.io/guide/export, /guide/task_format,
/tags/ranker, /tags/pairwise): a JSON array of tasks, each with its ``data`` and its
``annotations``; an annotation has ``completed_by`` (the annotator's user id, or an object
with ``id``), ``was_cancelled`` (a skipped task: left out) and a ``result`` list. A result of
``"type": "ranker"`` holds ``"value": {"ranker": {...}}``: with no buckets one key, the
Ranker tag's name, whose list is the items' ids in the order given (a strict ranking); with
``Bucket`` tags one key per bucket, read here as tiers in the order the export lists them
(items left in the original list, the ``"_"`` column, are not part of the ranking). The
items are the task data's list of objects with ``id`` (the ``List`` tag's ``$items``), shown
in that order. A result of ``"type": "pairwise"`` holds ``"value": {"selected": "left"}`` (or
``"right"``): the selected one is the more stereotypical; its two items are the task data's
``left``/``right``, else ``text1``/``text2`` (Label Studio's pairwise template), else
``image1``/``image2``.

An item is matched by our item id when the task data carries ``stereorank_items`` (the
item's ``id``, or ``left``/``right``, to our id), else by the list object's ``image``,
``title``, ``body`` or ``text``, or by the pair's value (an image URL or a prompt's text).
"""

from __future__ import annotations

from annotation.imports.records import (
    OUR_IDS,
    PAIRWISE,
    ItemRef,
    MalformedRecord,
    Parsed,
    SourceRanking,
    an_object,
    annotator_id,
    need,
    our_ids,
    question_of,
    read_json,
    split_tiers,
    texts,
)

RANKER, PAIR = "ranker", "pairwise"
PAIR_KEYS = (("left", "right"), ("text1", "text2"), ("image1", "image2"))
UNPLACED = "_"


def parse(data: bytes, question: str | None = None) -> Parsed:
    """Every annotation of a ranker or pairwise result (of the control tag named
    ``question`` when given) as a ``SourceRanking``; cancelled annotations are skipped."""
    rankings, skipped = [], 0
    for position, task in read_json(data):
        task = an_object(task, position, "a task")
        task_data = an_object(task.get("data"), position, "the task's data")
        annotations = task.get("annotations", [])
        need(isinstance(annotations, list), position, "annotations is not a list")
        for j, annotation in enumerate(annotations):
            where = f"{position}, annotation {j}"
            annotation = an_object(annotation, where, "an annotation")
            if annotation.get("was_cancelled"):
                skipped += 1
                continue
            result = _ranking_result(annotation, where, question)
            if result is None:
                skipped += 1
                continue
            who = annotation.get("completed_by")
            if isinstance(who, dict):
                who = who.get("id", who.get("email"))
            rankings.append(_ranking(result, task_data, annotator_id(who, where), where))
    return Parsed(rankings, skipped)


def _ranking_result(annotation: dict, where: str, question: str | None) -> dict | None:
    """The annotation's one ranker or pairwise result (None when it has none)."""
    results = annotation.get("result", [])
    need(isinstance(results, list), where, "result is not a list")
    found = [
        r
        for r in results
        if isinstance(r, dict)
        and r.get("type") in (RANKER, PAIR)
        and (question is None or r.get("from_name") == question)
    ]
    if len(found) > 1:
        names = sorted({str(r.get("from_name")) for r in found})
        raise MalformedRecord(
            where, f"several ranking results ({', '.join(names)}): name one with --question"
        )
    return found[0] if found else None


def _ranking(result: dict, data: dict, who: str, where: str) -> SourceRanking:
    value = an_object(result.get("value"), where, "the result's value")
    ours = our_ids(data.get(OUR_IDS), where)
    if result["type"] == PAIR:
        return _pair(value, data, ours, who, where)
    ranker = an_object(value.get("ranker"), where, "value.ranker")
    listed = _listed(data, ours, where)
    known = {ref.key: ref for ref in listed}
    columns = [(k, v) for k, v in ranker.items() if k != UNPLACED]
    tiers = []
    for name, ids in columns:
        need(isinstance(ids, list), where, f"ranker[{name!r}] is not a list of ids")
        for i in ids:
            need(str(i) in known, where, f"ranker[{name!r}] names {i!r}, not an item of the task")
        if ids:
            tiers.append([str(i) for i in ids])
    need(bool(tiers), where, "the ranker places no item")
    if len(columns) == 1:  # no buckets: the Ranker tag's own list, an order
        tiers = [[key] for key in tiers[0]]
    placed = {k for tier in tiers for k in tier}
    items = tuple(ref for ref in listed if ref.key in placed)
    shaped = split_tiers(tiers)
    return SourceRanking(where, who, items, shaped, question_of(shaped))


def _listed(data: dict, ours: dict[str, int], where: str) -> list[ItemRef]:
    """The task data's list of item objects (the ``List`` tag's), in their order."""
    lists = [
        v
        for k, v in data.items()
        if k != OUR_IDS
        and isinstance(v, list)
        and v
        and all(isinstance(o, dict) and "id" in o for o in v)
    ]
    need(len(lists) == 1, where, "the task data has no single list of items with ids")
    refs = []
    for o in lists[0]:
        key = str(o["id"])
        values = texts(o.get("image"), o.get("title"), o.get("body"), o.get("text"))
        refs.append(ItemRef(key, ours.get(key), values))
    need(len({r.key for r in refs}) == len(refs), where, "two list items share an id")
    return refs


def _pair(value: dict, data: dict, ours: dict[str, int], who: str, where: str) -> SourceRanking:
    selected = value.get("selected")
    need(selected in ("left", "right"), where, f"selected is {selected!r}, not left or right")
    keys = next((pair for pair in PAIR_KEYS if all(k in data for k in pair)), None)
    need(keys is not None, where, "the task data names no pair (left/right, text1/text2)")
    refs = []
    for side, key in zip(("left", "right"), keys, strict=True):
        refs.append(ItemRef(side, ours.get(side, ours.get(key)), texts(data[key])))
    other = "right" if selected == "left" else "left"
    return SourceRanking(where, who, tuple(refs), ((selected,), (other,)), PAIRWISE)
