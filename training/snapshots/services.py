"""Dataset snapshots: the item labels frozen at one moment, hashed and split.

One example per item with at least one ranking (text = its prompt's text,
label = the mean of position / (K - 1), reliability-weighted when the snapshot
asks for it, group = the original prompt, so a prompt and its paraphrases fall
on one side of the split). The content hash is
``training.ml.examples.data_hash`` over the examples: two snapshots of the same
rankings share it.

Unweighted labels (the default) are aggregated in PostgreSQL
(``annotation.rankings.label_sql``: one row per item and group, not per ranked item); the
reliability weighting, and other databases, read ``label_rows`` and compute in Python.

A snapshot reads one or more collection studies (the default one unless named) and
records them; a validation study's rankings judge conditions and are refused. Group
labels are kept for groups of ``STEREORANK_GROUP_K`` or more annotators only.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q

from annotation.models import AnnotatorProfile, DemographicField, Item, Study
from annotation.models.studies import study_ids
from annotation.rankings.exports import pseudonym
from annotation.rankings.label_sql import AggregatedLabels, aggregated_labels
from annotation.rankings.labels import LabelRow, group_labels, item_labels, ranking_records
from annotation.rankings.selectors import (
    GOLD,
    check_cards_left_out,
    counted_rankings_after,
    label_rows,
    left_out_rankings,
)
from training.errors import NothingToSnapshot, SnapshotError
from training.ml.examples import Example, data_hash
from training.ml.split import group_split
from training.models import DatasetSnapshot

TRAIN, EVAL = "train", "eval"
NONE, RELIABILITY = "none", "reliability"
WEIGHTINGS = (NONE, RELIABILITY)


def example_key(item_id: int) -> str:
    return f"item-{item_id}"


def build_examples(labels: dict[int, float]) -> list[dict]:
    """Example dicts (without ``split``) for the labelled items, in item order."""
    items = Item.objects.filter(pk__in=labels).select_related("prompt__occupation")
    rows = []
    for item in items.order_by("pk"):
        prompt = item.prompt
        rows.append(
            {
                "key": example_key(item.pk),
                "item_id": item.pk,
                "text": prompt.text,
                "label": labels[item.pk],
                "group": f"prompt-{prompt.origin_id or prompt.pk}",
                "occupation": prompt.occupation.name,
                "prompt_type": prompt.prompt_type,
            }
        )
    return rows


def to_example(row: dict) -> Example:
    return Example(
        row["text"],
        row["label"],
        row["group"],
        row["occupation"],
        row["prompt_type"],
        row.get("weight", 1.0),
    )


def split_examples(rows: list[dict], eval_fraction: float, seed: int) -> list[dict]:
    """The rows with ``split`` set by ``group_split`` (grouped by original prompt)."""
    try:
        _, held_out = group_split([to_example(r) for r in rows], eval_fraction, seed)
    except ValueError as exc:
        raise SnapshotError(f"snapshot too small to split: {exc}") from exc
    eval_groups = {e.group for e in held_out}
    return [{**r, "split": EVAL if r["group"] in eval_groups else TRAIN} for r in rows]


def _group_labels_by_key(groups: dict) -> dict:
    return {
        field: {
            value: {example_key(item): label for item, label in labels.items()}
            for value, labels in per_field.items()
        }
        for field, per_field in groups.items()
    }


def _labels_in_python(
    include_synthetic: bool, weighting: str, fields: list[str], studies, k: int
) -> tuple[AggregatedLabels, dict] | None:
    """The labels from one Python row per ranked item (the weighting needs each ranking;
    SQLite has no ``GROUPING SETS``), with the weighting's record; None if no rankings."""
    rows = label_rows(include_synthetic=include_synthetic, studies=studies)
    if not rows:
        return None
    weights, record = label_weights(rows, weighting)
    ranking_ids = {r.ranking_id for r in rows}
    labels = AggregatedLabels(
        item_labels(rows, weights),
        group_labels(rows, fields, k),
        len(ranking_ids),
        max(ranking_ids),
    )
    return labels, record


def snapshot_studies(studies) -> list[Study]:
    """The studies a snapshot reads (studies or ids; the default one for None), checked:
    ``SnapshotError`` for a validation study, whose rankings never become labels."""
    ids = study_ids(studies)
    if not ids:
        raise SnapshotError("name at least one study to snapshot")
    found = list(Study.objects.filter(pk__in=ids).order_by("slug"))
    if len(found) != len(ids):
        raise SnapshotError(f"no study with id {sorted(set(ids) - {s.pk for s in found})}")
    for study in found:
        if study.kind != Study.Kind.COLLECTION:
            raise SnapshotError(
                f"study {study.slug!r} is a {study.kind} study: its rankings judge "
                "conditions and never become training labels"
            )
    return found


def label_weights(rows: list[LabelRow], weighting: str) -> tuple[dict | None, dict]:
    """``(weights for item_labels, the snapshot's record of them)`` for ``weighting``.

    The record names annotators by pseudonym only: ``{"method", "min_shared_tasks",
    "annotators": {pseudonym: {"weight", "rho", "shared_tasks", "basis"}}}``.
    """
    if weighting == NONE:  # create_snapshot has refused anything but WEIGHTINGS
        return None, {"method": NONE}
    from annotation.stats.weights import reliability_weights  # scipy: only when asked

    min_tasks = settings.STEREORANK["RELIABILITY_MIN_TASKS"]
    weights = reliability_weights(ranking_records(rows), min_tasks)
    record = {
        pseudonym(a): {
            "weight": round(w.weight, 6),
            "rho": None if w.rho != w.rho else round(w.rho, 6),
            "shared_tasks": w.shared_tasks,
            "basis": w.basis,
        }
        for a, w in weights.items()
    }
    return {a: w.weight for a, w in weights.items()}, {
        "method": RELIABILITY,
        "min_shared_tasks": min_tasks,
        "annotators": dict(sorted(record.items())),
    }


def exclusions(include_synthetic: bool, last_ranking_id: int | None = None, studies=None) -> dict:
    """What a snapshot left out of the rankings stored up to ``last_ranking_id`` (all, by
    default: the moment it was taken), for its lineage.

    ``{"annotators": {pseudonym: {reason: rankings}}, "rankings": {reason: n},
    "check_cards": n}``: annotators named by pseudonym only, and only for reasons
    about them (consent withdrawn, excluded, synthetic); gold-task rankings are
    counted, not named (every annotator meets gold tasks).
    """
    annotators: dict[str, dict[str, int]] = {}
    per_reason: dict[str, int] = {}
    for row in left_out_rankings(include_synthetic, last_ranking_id, studies):
        per_reason[row["reason"]] = per_reason.get(row["reason"], 0) + row["rankings"]
        if row["reason"] != GOLD:
            name = pseudonym(row["user_id"])
            annotators.setdefault(name, {})[row["reason"]] = row["rankings"]
    return {
        "annotators": dict(sorted(annotators.items())),
        "rankings": dict(sorted(per_reason.items())),
        "check_cards": check_cards_left_out(include_synthetic, last_ranking_id, studies),
    }


def create_snapshot(
    *,
    include_synthetic: bool = False,
    seed: int = 0,
    eval_fraction: float = 0.2,
    weighting: str | None = None,
    user=None,
    studies=None,
) -> DatasetSnapshot:
    """Freeze today's labels of ``studies`` (collection studies or their ids; the default
    study for None) into a new snapshot; ``SnapshotError`` and nothing made if unfit.

    ``weighting``: ``none`` or ``reliability`` (``label_weights``); by default
    ``STEREORANK["LABEL_WEIGHTING"]``.
    """
    studies = snapshot_studies(studies)
    weighting = weighting or settings.STEREORANK["LABEL_WEIGHTING"]
    if weighting not in WEIGHTINGS:
        raise SnapshotError(f"unknown label weighting {weighting!r}: use {' or '.join(WEIGHTINGS)}")
    if not 0 < eval_fraction < 1:
        raise SnapshotError(f"eval_fraction must be between 0 and 1, not {eval_fraction}")
    fields = list(DemographicField.objects.values_list("key", flat=True))
    k = int(settings.STEREORANK["GROUP_K"])
    in_sql = (
        aggregated_labels(include_synthetic, fields, studies=studies, group_k=k)
        if weighting == NONE
        else None
    )
    found = (
        (in_sql, {"method": NONE})
        if in_sql is not None
        else _labels_in_python(include_synthetic, weighting, fields, studies, k)
    )
    if found is None or not found[0].ranking_count:
        hint = (
            ""
            if include_synthetic
            else " (synthetic annotators' rankings need --include-synthetic)"
        )
        raise NothingToSnapshot(f"no rankings to snapshot{hint}")
    aggregated, weighting_record = found
    examples = split_examples(build_examples(aggregated.labels), eval_fraction, seed)
    left_out = exclusions(include_synthetic, studies=studies)
    with transaction.atomic():
        # An erasure that committed while the labels were read: its ``forget`` ran before
        # this row existed, so its pseudonym is dropped here (erased_at commits first).
        for name in erased_pseudonyms():
            for lineage in (left_out, weighting_record):
                lineage.get("annotators", {}).pop(name, None)
        snapshot = DatasetSnapshot.objects.create(
            created_by=user,
            include_synthetic=include_synthetic,
            ranking_count=aggregated.ranking_count,
            last_ranking_id=aggregated.last_ranking_id,
            content_hash=data_hash([to_example(r) for r in examples]),
            split_seed=seed,
            eval_fraction=eval_fraction,
            example_count=len(examples),
            train_count=sum(r["split"] == TRAIN for r in examples),
            eval_count=sum(r["split"] == EVAL for r in examples),
            examples=examples,
            group_labels=_group_labels_by_key(aggregated.groups),
            group_k=k,
            exclusions=left_out,
            label_weighting=weighting_record,
        )
        snapshot.studies.set(studies)
        return snapshot


def erased_pseudonyms() -> set[str]:
    """The pseudonyms of every erased annotator (an HMAC each: cheap for a study's
    thousands)."""
    erased = AnnotatorProfile.objects.filter(erased_at__isnull=False)
    return {pseudonym(uid) for uid in erased.values_list("user_id", flat=True)}


def forget(name: str) -> int:
    """Remove the pseudonym ``name`` from every snapshot's lineage (who was left out,
    reliability weights), for an erasure; returns how many snapshots named it. Labels
    are aggregates: ``training.snapshots.erasure`` removes those of fewer than k
    annotators."""
    named = DatasetSnapshot.objects.filter(
        Q(exclusions__annotators__has_key=name) | Q(label_weighting__annotators__has_key=name)
    )
    changed = 0
    for snapshot in named.select_for_update().only("pk", "exclusions", "label_weighting"):
        for lineage in (snapshot.exclusions, snapshot.label_weighting):
            lineage.get("annotators", {}).pop(name, None)
        snapshot.save(update_fields=["exclusions", "label_weighting"])
        changed += 1
    return changed


def rows_of(snapshot: DatasetSnapshot, split: str | None = None) -> list[dict]:
    """The snapshot's example rows, optionally of one split."""
    return [r for r in snapshot.examples if split is None or r["split"] == split]


def prompt_types(snapshot: DatasetSnapshot, split: str | None = None) -> dict[str, str]:
    """Each distinct prompt text of the snapshot (originals only; of one split, or both)
    with its prompt type: a checkpoint's threshold is calibrated on the train split's,
    its flag judged on the eval split's, one score per prompt."""
    return {r["text"]: r["prompt_type"] for r in rows_of(snapshot, split)}


def new_rankings_since(snapshot: DatasetSnapshot | None, include_synthetic: bool = False) -> int:
    """Rankings that count stored after ``snapshot`` in its studies (all of the default
    study's when there is none)."""
    if snapshot is None:
        return counted_rankings_after(None, include_synthetic)
    studies = list(snapshot.studies.values_list("pk", flat=True)) or None
    return counted_rankings_after(snapshot.last_ranking_id, include_synthetic, studies)


def new_rankings_of(studies, include_synthetic: bool = False) -> int:
    """Rankings that count of ``studies`` (studies or ids; the default study for None)
    stored after the newest snapshot of exactly those studies (all of them when there is
    none): what a schedule that snapshots them waits for. Another study's rankings and
    snapshots move nothing here."""
    ids = study_ids(studies)
    same = DatasetSnapshot.objects.annotate(n_studies=Count("studies")).filter(n_studies=len(ids))
    for pk in ids:
        same = same.filter(studies=pk)
    last = same.order_by("-id").values_list("last_ranking_id", flat=True).first()
    return counted_rankings_after(last, include_synthetic, ids)
