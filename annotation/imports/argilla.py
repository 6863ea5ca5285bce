"""Argilla 2.x records with a ``RankingQuestion``'s responses, read into neutral records (pure).

The shape, as Argilla documents and writes it (docs.argilla.io, "Importing and exporting
datasets and records": ``dataset.records.to_json`` / ``to_disk`` write ``to_list(flatten=
False)``; ``argilla/records/_resource.py`` ``Record.to_dict``): a JSON array (JSON Lines is
read too) of records ``{"id", "fields", "metadata", "suggestions", "responses", "vectors",
"_server_id"}``, where ``responses`` maps each question's name to a list of ``{"value",
"user_id"}`` (and ``"status"`` where it is written: a ``draft`` or ``discarded`` response is
skipped). A ``RankingQuestion``'s value is its options in the order given, most first
(the SDK's form, ``["reply-2", "reply-1"]``), or the API's ``[{"value": ..., "rank": n}]``,
where equal ranks are ties.

The ranking question is the one named (``--question``), else the only question whose
answers are lists of options that each name a field of the record or a key of its
``stereorank_items``. Each option is an item: matched by our id when the record's
``metadata.stereorank_items`` maps the option to it, else by the field the option names (an
image's URL or a prompt's text). Argilla does not export the order it showed the options in.
"""

from __future__ import annotations

from itertools import groupby

from annotation.imports.records import (
    OUR_IDS,
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
    texts,
)

NOT_SUBMITTED = ("draft", "discarded")


def parse(data: bytes, question: str | None = None) -> Parsed:
    """Every submitted response to the record's ranking question as a ``SourceRanking``."""
    rankings, skipped = [], 0
    for position, record in read_json(data):
        record = an_object(record, position, "a record")
        fields = record.get("fields") or {}
        need(isinstance(fields, dict), position, "fields is not an object")
        metadata = record.get("metadata") or {}
        need(isinstance(metadata, dict), position, "metadata is not an object")
        ours = our_ids(metadata.get(OUR_IDS), position)
        responses = an_object(record.get("responses") or {}, position, "responses")
        name = _ranking_question(responses, set(fields) | set(ours), question, position)
        if name is None:
            skipped += 1
            continue
        answers = responses[name]
        need(isinstance(answers, list), position, f"responses[{name!r}] is not a list")
        for j, answer in enumerate(answers):
            where = f"{position}, response {j}"
            answer = an_object(answer, where, "a response")
            if answer.get("status") in NOT_SUBMITTED:
                skipped += 1
                continue
            tiers = _tiers(answer.get("value"), where)
            keys = [k for tier in tiers for k in tier]
            items = tuple(ItemRef(k, ours.get(k), texts(fields.get(k))) for k in keys)
            who = annotator_id(answer.get("user_id"), where)
            rankings.append(SourceRanking(where, who, items, tiers, question_of(tiers), False))
    return Parsed(rankings, skipped)


def _ranking_question(
    responses: dict, options: set[str], named: str | None, position: str
) -> str | None:
    """The record's ranking question (module docstring); None when it has no answer to one."""
    if named is not None:
        return named if named in responses else None
    found = [
        name
        for name, answers in responses.items()
        if isinstance(answers, list)
        and answers
        and all(_looks_ranked(a, options) for a in answers if isinstance(a, dict))
    ]
    if len(found) > 1:
        raise MalformedRecord(
            position,
            f"several ranking questions ({', '.join(sorted(found))}): name one with --question",
        )
    return found[0] if found else None


def _option(entry: object) -> object:
    return entry.get("value") if isinstance(entry, dict) else entry


def _looks_ranked(answer: dict, options: set[str]) -> bool:
    value = answer.get("value")
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(_option(v), str) and _option(v) in options for v in value)
    )


def _tiers(value: object, where: str) -> tuple[tuple[str, ...], ...]:
    """A ranking answer's tiers: the options in order, or grouped by equal ``rank``."""
    need(isinstance(value, list) and bool(value), where, "the ranking is not a list of options")
    if all(isinstance(v, str) for v in value):  # type: ignore[union-attr]
        need(len(set(value)) == len(value), where, "an option is ranked twice")  # type: ignore
        return tuple((v,) for v in value)  # type: ignore[union-attr]
    ranked = []
    for v in value:  # type: ignore[union-attr]
        rank = v.get("rank") if isinstance(v, dict) else None
        option = _option(v)
        ok = isinstance(option, str) and isinstance(rank, int) and not isinstance(rank, bool)
        need(ok, where, f"{v!r} is not an option with its rank")
        ranked.append((rank, option))
    options = [o for _, o in ranked]
    need(len(set(options)) == len(options), where, "an option is ranked twice")
    ranked.sort(key=lambda pair: pair[0])
    return tuple(tuple(o for _, o in group) for _, group in groupby(ranked, key=lambda p: p[0]))
