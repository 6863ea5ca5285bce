"""Group heads for a run (``train --groups FIELD``): the snapshot's data, the recorded
penalty, the fit (``training.ml.group_heads``, whose docstring states the model).

Which groups: those of FIELD that the snapshot kept group labels for (k or more
annotators when it was frozen) and that still have k or more annotators among its
rankings as they count today (the card names each with its size; none under k).
Targets: each group's label of a train item minus the item's pooled label (train split
originals only; paraphrases carry no group label); for the disagreement head, each train
item's spread of place labels over the snapshot's rankings as they count today (the
rankings the perspective reports read, ``perspectives.study_rankings``: a ranked item
the snapshot does not hold is dropped and the others close up).

The penalties are chosen once per snapshot, field and encoder by grouped cross-validation
and recorded in ``DatasetSnapshot.group_penalties``, so a retrain reuses them (and says so).

A special category (``STEREORANK["SPECIAL_CATEGORY_FIELDS"]``, ``religion_or_belief`` by
default) is refused unless every study the snapshot froze has an owner's recorded choice
for it (``GroupHeadChoice``, ``manage.py allow_group_heads``: an owner with the
demographics permission, a reason, when): a head per religion models each religion's
opinions. The choices go into the version's card.
"""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.db import transaction

from annotation.models.studies import default_study
from annotation.stats.records import group_of
from core.json import json_safe
from training import selectors
from training.errors import RunError
from training.models import DatasetSnapshot, GroupHeadChoice
from training.snapshots.services import TRAIN, rows_of
from training.snapshots.steering import train_groups


def special_categories() -> set[str]:
    return set(settings.STEREORANK.get("SPECIAL_CATEGORY_FIELDS", ("religion_or_belief",)))


def group_sizes(snapshot: DatasetSnapshot, field: str) -> dict[str, int]:
    """Annotators per value of ``field`` among the snapshot's rankings as they count today."""
    people: dict[str, set[int]] = {}
    for _, annotator, _, demographics, _ in selectors.snapshot_rankings(snapshot):
        value = group_of(demographics or {}, field)
        if value is not None:
            people.setdefault(value, set()).add(annotator)
    return {value: len(who) for value, who in people.items()}


def special_choices(snapshot: DatasetSnapshot, field: str) -> list[dict]:
    """The owners' recorded choices for a special-category ``field`` (none needed for
    another), one per study the snapshot froze; ``RunError`` naming a study without one."""
    if field not in special_categories():
        return []
    studies = list(snapshot.studies.all()) or [default_study()]
    chosen = {c.study_id: c for c in GroupHeadChoice.objects.filter(study__in=studies, field=field)}
    missing = [s.slug for s in studies if s.pk not in chosen]
    if missing:
        raise RunError(
            f"{field} is a special category of personal data: group heads on it need a study "
            f"owner's recorded choice (manage.py allow_group_heads {missing[0]} {field} "
            "--owner USERNAME --reason ...)"
        )
    return [
        {
            "study": s.slug,
            "by": chosen[s.pk].chosen_by_name,
            "at": chosen[s.pk].chosen_at.isoformat(),
            "reason": chosen[s.pk].reason,
        }
        for s in studies
    ]


def check(snapshot: DatasetSnapshot, field: str, k: int) -> dict[str, int]:
    """The groups that get a head, with their sizes; ``RunError`` unless two or more (and,
    for a special category, unless its owners chose it)."""
    special_choices(snapshot, field)
    labelled = train_groups(snapshot, field)
    sizes = group_sizes(snapshot, field)
    kept = {value: sizes.get(value, 0) for value in labelled if sizes.get(value, 0) >= k}
    if len(kept) < 2:
        raise RunError(
            f"group heads on {field} need 2 groups of {k} or more annotators with train "
            f"labels in snapshot {snapshot.pk}; it has {len(kept)}"
        )
    return kept


def targets(snapshot: DatasetSnapshot, field: str, sizes: dict[str, int]):
    """``(texts, prompts, {group: GroupTargets})``: the train items' texts (rows of the
    embedding table), their prompts (the CV's groups) and each group's targets."""
    from training.ml.group_heads import GroupTargets, SpreadTargets

    rows = rows_of(snapshot, TRAIN)
    row_of = {r["key"]: i for i, r in enumerate(rows)}
    pooled = np.array([r["label"] for r in rows], dtype=np.float64)
    out = {}
    for value, labels in train_groups(snapshot, field).items():
        if value not in sizes:
            continue
        keys = [key for key in sorted(labels) if key in row_of]
        index = np.array([row_of[key] for key in keys], dtype=np.int64)
        y = np.array([labels[key] for key in keys], dtype=np.float64)
        lists = np.array([rows[i]["occupation"] for i in index], dtype=object)
        out[value] = GroupTargets(index, y - pooled[index], sizes[value], lists)
    places = place_labels(snapshot)
    held = [i for i, r in enumerate(rows) if len(places.get(r["item_id"], ())) >= 2]
    spreads = SpreadTargets(
        np.array(held, dtype=np.int64),
        np.array([np.std(places[rows[i]["item_id"]]) for i in held], dtype=np.float64),
        np.array([rows[i]["group"] for i in held], dtype=object),
    )
    return [r["text"] for r in rows], [r["group"] for r in rows], out, spreads


def place_labels(snapshot: DatasetSnapshot) -> dict[int, list[float]]:
    """``{item id: its place labels, one per ranking}`` (``position / (K - 1)``)."""
    from training.perspectives.services import study_rankings

    out: dict[int, list[float]] = {}
    for _, _, order, _, _ in study_rankings(snapshot)[0]:
        for position, item in enumerate(order):
            out.setdefault(item, []).append(position / (len(order) - 1))
    return out


def fit(snapshot: DatasetSnapshot, field: str, encoder, cache, k: int, seed: int = 0):
    """The fitted ``GroupHeads`` of ``field`` on ``encoder``'s cached embeddings; the
    penalty is the snapshot's recorded one, else chosen now and recorded."""
    from training.ml.group_heads import choose_penalty, choose_spread_penalty
    from training.ml.group_heads import fit as fit_heads

    sizes = check(snapshot, field, k)
    texts, prompts, by_group, spreads = targets(snapshot, field, sizes)
    embeddings = cache.embed(encoder, texts)
    key = f"{field}:{encoder.identity.name}"
    snapshot.refresh_from_db(fields=["group_penalties"])
    cv = (snapshot.group_penalties or {}).get(key)
    if cv is None:
        seed_ = snapshot.split_seed
        cv = {
            **choose_penalty(embeddings, prompts, by_group, seed=seed_),
            "spread": choose_spread_penalty(embeddings, prompts, spreads, seed=seed_),
        }
        with transaction.atomic():
            locked = DatasetSnapshot.objects.select_for_update().get(pk=snapshot.pk)
            penalties = dict(locked.group_penalties or {})
            cv = penalties.setdefault(key, json_safe(cv))  # a concurrent run's choice stands
            locked.group_penalties = penalties
            locked.save(update_fields=["group_penalties"])
        cv = {**cv, "chosen": "now"}
    else:
        cv = {**cv, "chosen": "recorded with the snapshot"}
    cv = {**cv, "special_category_choices": special_choices(snapshot, field)}
    return fit_heads(
        embeddings,
        by_group,
        spreads,
        field=field,
        penalty=cv["penalty"],
        spread_penalty=cv["spread"]["penalty"],
        cv=cv,
        seed=seed,
    )
