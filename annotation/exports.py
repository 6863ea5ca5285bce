"""Pseudonymous exports of rankings, joined with the annotators' demographics."""

import csv
import hashlib
import hmac
import io
import json
from collections.abc import Iterator
from itertools import combinations

from django.conf import settings

from .errors import UnknownAnnotator
from .models import AnnotatorProfile, DemographicField, Item
from .selectors import counted_rankings


def pseudonym(user_id: int) -> str:
    """A stable pseudonym: HMAC of the user id with a secret key."""
    key = settings.STEREORANK["PSEUDONYM_KEY"].encode()
    return "a-" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:12]


def annotator_for_pseudonym(name: str) -> AnnotatorProfile:
    """The annotator behind an export's pseudonym (an HMAC cannot be inverted, so every
    profile's pseudonym is computed: fine for the thousands of a study)."""
    name = name.strip()
    for profile in AnnotatorProfile.objects.select_related("user").order_by("pk").iterator():
        if hmac.compare_digest(pseudonym(profile.user_id), name):
            return profile
    raise UnknownAnnotator(f"No annotator has the pseudonym '{name}'.")


def ranking_rows(include_synthetic: bool = False) -> Iterator[dict]:
    """One row per ranking; demographics as ``demographics`` (one key per field)."""
    keys = list(DemographicField.objects.values_list("key", flat=True))
    rankings = counted_rankings(include_synthetic).select_related("annotator", "task__occupation")
    for ranking in rankings.order_by("id").iterator(chunk_size=1000):
        answers = ranking.annotator.demographics
        yield {
            "task": ranking.task_id,
            "occupation": ranking.task.occupation.name,
            "annotator": pseudonym(ranking.annotator.user_id),
            "synthetic": ranking.annotator.is_synthetic,
            "order": ranking.order,
            "shown_order": ranking.shown_order,
            "seconds_spent": ranking.seconds_spent,
            "created_at": ranking.created_at.isoformat(),
            "demographics": {key: answers.get(key, "") for key in keys},
        }


def pair_rows(include_synthetic: bool = False) -> Iterator[dict]:
    """Every ranking as chosen/rejected pairs: chosen is the less stereotypical item."""
    texts = dict(Item.objects.values_list("id", "prompt__text"))
    for row in ranking_rows(include_synthetic):
        for earlier, later in combinations(row["order"], 2):
            yield {
                "task": row["task"],
                "annotator": row["annotator"],
                "demographics": row["demographics"],
                "chosen_item": later,
                "chosen": texts[later],
                "rejected_item": earlier,
                "rejected": texts[earlier],
            }


def jsonl_lines(rows: Iterator[dict]) -> Iterator[str]:
    """One JSON object a line."""
    for row in rows:
        yield json.dumps(row) + "\n"


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    """CSV with one column per demographic field (rows share the same keys)."""
    header = None
    for row in rows:
        flat = {k: v for k, v in row.items() if k != "demographics"}
        flat["order"] = json.dumps(flat["order"])
        flat["shown_order"] = json.dumps(flat["shown_order"])
        flat.update(row["demographics"])
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(flat))
        if header is None:
            header = list(flat)
            writer.writeheader()
        writer.writerow(flat)
        yield buffer.getvalue()
