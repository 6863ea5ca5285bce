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
from itertools import combinations

from django.conf import settings

from .errors import UnknownAnnotator
from .models import AnnotatorProfile, DemographicField, Item, RankingTask, Study
from .quality.gold import AttentionCheck, gold_score
from .selectors import consented_rankings, counted_rankings
from .study_models import study_ids

PSEUDONYM = re.compile(r"a-[0-9a-f]{12}")


def pseudonym(user_id: int) -> str:
    """A stable pseudonym: HMAC of the user id with a secret key."""
    key = settings.STEREORANK["PSEUDONYM_KEY"].encode()
    return "a-" + hmac.new(key, str(user_id).encode(), hashlib.sha256).hexdigest()[:12]


def annotator_for_pseudonym(name: str) -> AnnotatorProfile:
    """The annotator behind an export's pseudonym (an HMAC cannot be inverted, so every
    profile's pseudonym is computed: fine for the thousands of a study)."""
    name = name.strip()
    if not PSEUDONYM.fullmatch(name):
        raise UnknownAnnotator(f"'{name}' is not a pseudonym (a- and 12 hex digits).")
    for profile in AnnotatorProfile.objects.select_related("user").order_by("pk").iterator():
        if hmac.compare_digest(pseudonym(profile.user_id), name):
            return profile
    raise UnknownAnnotator(f"No annotator has the pseudonym '{name}'.")


def _gold_score(task: RankingTask, order: list[int]) -> float | None:
    try:
        return gold_score(order, task.reference())
    except ValueError:  # a malformed reference, or none of its pairs in this ranking
        return None


def _check_passed(task: RankingTask, order: list[int]) -> bool | None:
    try:
        return AttentionCheck(task.check_item_id, task.check_position).passed(order)
    except ValueError:  # the card is not in the ranking, or the position is past it
        return None


def _scope(study: Study | None) -> list[Study] | None:
    return None if study is None else [study]


def ranking_rows(
    include_synthetic: bool = False, include_left_out: bool = False, study: Study | None = None
) -> Iterator[dict]:
    """One row per ranking that counts; demographics as ``demographics`` (one key per field).

    Each row carries its annotator's status and its quality flags: ``gold`` (and the
    ranking's ``gold_score``), the attention check's card, position and whether it
    passed, and ``untouched`` (submitted in the shown order). ``include_left_out``:
    every consented ranking, gold tasks' and excluded annotators' too (the flags say
    which), for audits; labels never read those.
    """
    keys = list(DemographicField.objects.values_list("key", flat=True))
    rankings = consented_rankings if include_left_out else counted_rankings
    rows = rankings(include_synthetic, _scope(study))
    rows = rows.select_related("annotator", "task__occupation")
    for ranking in rows.order_by("id").iterator(chunk_size=1000):
        answers, task, order = ranking.annotator.demographics, ranking.task, ranking.order
        has_check = task.check_item_id is not None
        yield {
            "task": ranking.task_id,
            "occupation": task.occupation.name,
            "annotator": pseudonym(ranking.annotator.user_id),
            "annotator_status": ranking.annotator.status,
            "synthetic": ranking.annotator.is_synthetic,
            "order": order,
            "shown_order": ranking.shown_order,
            "seconds_spent": ranking.seconds_spent,
            "untouched": order == ranking.shown_order,
            "gold": task.is_gold,
            "gold_score": _gold_score(task, order) if task.is_gold else None,
            "check_item": task.check_item_id,
            "check_position": task.check_position,
            "check_passed": _check_passed(task, order) if has_check else None,
            "created_at": ranking.created_at.isoformat(),
            "demographics": {key: answers.get(key, "") for key in keys},
        }


def pair_rows(
    include_synthetic: bool = False,
    keep_identical_texts: bool = False,
    image_url: Callable[[str], str] | None = None,
    study: Study | None = None,
) -> Iterator[dict]:
    """The rankings that count as chosen/rejected pairs (chosen: the less stereotypical).

    Columns for TRL's ``RewardTrainer``: ``chosen``, ``rejected`` (prompt texts) and
    ``margin = (position of chosen - position of rejected) / (K - 1)`` in (0, 1];
    beside them item ids, image URLs (``image_url(file name)``, default the storage's
    URL), prompt types, task, occupation, annotator and demographics. An attention-
    check card is left out (K counts the other cards). Pairs of two images of one
    prompt (identical texts) teach a text model nothing and are left out unless
    ``keep_identical_texts``.
    """
    url = image_url or Item._meta.get_field("image").storage.url
    items = {
        pk: (text, kind, name)
        for pk, text, kind, name in Item.objects.filter(
            study__in=study_ids(_scope(study))
        ).values_list("id", "prompt__text", "prompt__prompt_type", "image")
    }
    for row in ranking_rows(include_synthetic, study=study):
        order = [i for i in row["order"] if i != row["check_item"]]
        k = len(order)
        for (i, earlier), (j, later) in combinations(enumerate(order), 2):
            chosen, chosen_type, chosen_image = items[later]
            rejected, rejected_type, rejected_image = items[earlier]
            if chosen == rejected and not keep_identical_texts:
                continue
            yield {
                "chosen": chosen,
                "rejected": rejected,
                "margin": (j - i) / (k - 1),
                "chosen_item": later,
                "rejected_item": earlier,
                "chosen_prompt_type": chosen_type,
                "rejected_prompt_type": rejected_type,
                "chosen_image_url": url(chosen_image),
                "rejected_image_url": url(rejected_image),
                "task": row["task"],
                "occupation": row["occupation"],
                "annotator": row["annotator"],
                "demographics": row["demographics"],
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
