"""Pseudonymous exports of rankings (with their quality flags) and of preference pairs,
joined with the annotators' demographics; each of one study (the default one unless
given)."""

import csv
import hashlib
import hmac
import io
import json
import re
from collections.abc import Callable, Iterator

from django.conf import settings

from annotation.errors import UnknownAnnotator
from annotation.models import AnnotatorProfile, DemographicField, Item, Study, parse_gold_reference
from annotation.models.studies import study_ids
from annotation.rankings.selectors import consented_rankings, counted_rankings
from annotation.stats.gold import AttentionCheck, gold_score
from annotation.stats.tiers import Tiers, of_ranking, pairs, places, untouched, without
from core.languages import GROUPING
from core.spreadsheet import safe_row

PSEUDONYM = re.compile(r"a-[0-9a-f]{12}")


def pseudonym(user_id: int) -> str:
    """A stable pseudonym: HMAC of the user id with a secret key."""
    key = settings.STEREORANK["PSEUDONYM_KEY"].encode()
    return "a-" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:12]


def annotator_for_pseudonym(name: str, among=None) -> AnnotatorProfile:
    """The annotator behind an export's pseudonym (an HMAC cannot be inverted, so every
    profile's pseudonym is computed: fine for the thousands of a study); only ``among``
    (a queryset of profiles, e.g. the viewer's studies') when given."""
    name = name.strip()
    if not PSEUDONYM.fullmatch(name):
        raise UnknownAnnotator(f"'{name}' is not a pseudonym (a- and 12 hex digits).")
    profiles = AnnotatorProfile.objects.all() if among is None else among
    for profile in profiles.select_related("user").order_by("pk").iterator():
        if hmac.compare_digest(pseudonym(profile.user_id), name):
            return profile
    raise UnknownAnnotator(f"No annotator has the pseudonym '{name}'.")


def _gold_score(reference: str | None, ranked: Tiers) -> float | None:
    try:
        return gold_score(places(ranked), parse_gold_reference(reference))
    except ValueError:  # a malformed reference, or none of its pairs in this ranking
        return None


def _check_passed(card: int, position: int | None, order: list[int], ranked) -> bool | None:
    try:
        return AttentionCheck(card, position).passed(order, ranked)
    except ValueError:  # the card is not in the ranking, or the position is past it
        return None


def _scope(study: Study | None) -> list[Study] | None:
    return None if study is None else [study]


RANKING_COLUMNS = (
    "task_id",
    "annotator_id",
    "order",
    "shown_order",
    "seconds_spent",
    "viewport_width",
    "language",
    "created_at",
    "task__occupation__name",
    "task__is_gold",
    "task__gold_reference",
    "task__check_item_id",
    "task__check_position",
    "tiers",
)


def ranking_rows(
    include_synthetic: bool = False,
    include_left_out: bool = False,
    study: Study | None = None,
    demographics: bool = True,
) -> Iterator[dict]:
    """One row per ranking that counts; demographics as ``demographics`` (one key per
    field), left out (not even read) without ``demographics``.

    Each row carries its ``tiers`` (lists of item ids judged equal, most to least
    stereotypical: ``annotation.stats.tiers``; a strict ranking's are of one item), the
    ``pairs`` they state ([more, less] stereotypical; none within a tier), its annotator's
    status and its quality flags: ``gold`` (and the ranking's ``gold_score``), the
    attention check's card, position and whether it passed, and ``untouched`` (submitted
    in the shown order, or everything in one tier). ``include_left_out``:
    every consented ranking, gold tasks' and excluded annotators' too (the flags say
    which), for audits; labels never read those.

    Streamed: the rankings as plain values in chunks of 2,000 from a server-side
    cursor; each annotator's pseudonym and answers are worked out once, up front (memory
    grows with the annotators, not the rankings).
    """
    keys = list(DemographicField.objects.values_list("key", flat=True)) if demographics else None
    rankings = consented_rankings if include_left_out else counted_rankings
    rows = rankings(include_synthetic, _scope(study)).order_by("id").values_list(*RANKING_COLUMNS)
    annotators = _annotators(rows.values("annotator_id"), keys)
    for (task, annotator_id, order, shown, seconds, width, language, created, occupation,
         is_gold, reference, card, card_position, stored_tiers
         ) in rows.iterator(chunk_size=2000):  # fmt: skip
        if annotator_id not in annotators:  # joined after the annotators were read
            annotators.update(_annotators([annotator_id], keys))
        annotator = annotators[annotator_id]
        ranked = of_ranking(order, stored_tiers)
        yield {
            "task": task,
            "occupation": occupation,
            "annotator": annotator[0],
            "annotator_status": annotator[1],
            "synthetic": annotator[2],
            "duplicate": annotator[4],
            "order": order,
            "tiers": [list(t) for t in ranked],
            "pairs": [list(p) for p in pairs(ranked)],
            "shown_order": shown,
            "seconds_spent": seconds,
            "viewport_width": width,
            "untouched": untouched(order, shown, stored_tiers),
            "gold": is_gold,
            "gold_score": _gold_score(reference, ranked) if is_gold else None,
            "check_item": card,
            "check_position": card_position,
            "check_passed": _check_passed(card, card_position, order, ranked) if card else None,
            "created_at": created.isoformat(),
            # the portal's language says something of a person, as their answers do: it
            # goes only where their answers may (issue 39)
            **({"demographics": dict(annotator[3]), GROUPING: language} if demographics else {}),
        }


def _annotators(ids, keys: list[str] | None) -> dict[int, tuple]:
    """``{id: (pseudonym, status, synthetic, answers, duplicate)}`` of the annotators ``ids``
    names (``duplicate``: their participation came second with a crowd id already seen);
    no answers (none read) when ``keys`` is None."""
    columns = ["pk", "user_id", "status", "is_synthetic", "participation__duplicate"]
    columns += ["demographics"] if keys else []
    found = AnnotatorProfile.objects.filter(pk__in=ids).values_list(*columns)
    return {
        pk: (
            pseudonym(user),
            status,
            synthetic,
            {k: (a[0] or {}).get(k, "") for k in keys or ()},
            bool(duplicate),
        )
        for pk, user, status, synthetic, duplicate, *a in found.iterator(chunk_size=2000)
    }


def preference_pairs(ranked: Tiers) -> list[tuple]:
    """Every pair a ranking's tiers state (its attention-check card taken out first), as
    ``(chosen, rejected, margin)``: chosen is the less stereotypical item, ``margin = (place
    of chosen - place of rejected) / (K - 1)`` in (0, 1]. The one rule of ``pair_rows`` and
    of a dataset release's pairs (``training.releases``)."""
    k, place = sum(len(t) for t in ranked), places(ranked)
    return [
        (later, earlier, (place[later] - place[earlier]) / (k - 1))
        for earlier, later in pairs(ranked)
    ]


def pair_rows(
    include_synthetic: bool = False,
    keep_identical_texts: bool = False,
    image_url: Callable[[str], str] | None = None,
    study: Study | None = None,
    demographics: bool = True,
) -> Iterator[dict]:
    """The rankings that count as chosen/rejected pairs (chosen: the less stereotypical).

    Columns for TRL's ``RewardTrainer``: ``chosen``, ``rejected`` (prompt texts) and
    ``margin = (position of chosen - position of rejected) / (K - 1)`` in (0, 1];
    beside them item ids, image URLs (``image_url(file name)``, default the storage's
    URL), prompt types, task, occupation, annotator and (``demographics``) their
    answers. An attention-check card is left out (K counts the other cards). Pairs of
    two images of one prompt (identical texts) teach a text model nothing and are left
    out unless ``keep_identical_texts``.
    """
    url = image_url or Item._meta.get_field("image").storage.url
    items = {  # each image's URL made once, not once per pair
        pk: (text, kind, url(name))
        for pk, text, kind, name in Item.objects.filter(
            study__in=study_ids(_scope(study))
        ).values_list("id", "prompt__text", "prompt__prompt_type", "image")
    }
    for row in ranking_rows(include_synthetic, study=study, demographics=demographics):
        for later, earlier, margin in preference_pairs(without(row["tiers"], row["check_item"])):
            chosen, chosen_type, chosen_image = items[later]
            rejected, rejected_type, rejected_image = items[earlier]
            if chosen == rejected and not keep_identical_texts:
                continue
            yield {
                "chosen": chosen,
                "rejected": rejected,
                "margin": margin,
                "chosen_item": later,
                "rejected_item": earlier,
                "chosen_prompt_type": chosen_type,
                "rejected_prompt_type": rejected_type,
                "chosen_image_url": chosen_image,
                "rejected_image_url": rejected_image,
                "task": row["task"],
                "occupation": row["occupation"],
                "annotator": row["annotator"],
                **(
                    {"demographics": row["demographics"], GROUPING: row[GROUPING]}
                    if demographics
                    else {}
                ),
            }


def jsonl_lines(rows: Iterator[dict]) -> Iterator[str]:
    """One JSON object a line."""
    for row in rows:
        yield json.dumps(row) + "\n"


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    """CSV with one column per demographic field (rows share the same keys); text cells a
    spreadsheet would run as a formula are escaped (``core.spreadsheet``)."""
    header = None
    for row in rows:
        flat = {k: v for k, v in row.items() if k != "demographics"}
        for key in ("order", "shown_order", "tiers", "pairs"):
            if key in flat:
                flat[key] = json.dumps(flat[key])
        flat.update(row.get("demographics", {}))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(flat))
        if header is None:
            header = list(flat)
            writer.writeheader()
        writer.writerow(safe_row(flat))
        yield buffer.getvalue()
