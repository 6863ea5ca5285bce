"""What an erasure changes in what training stored (``annotation_erased``'s receiver).

Run inside the erasure's transaction, after the person's tasks are locked and before
their rankings are deleted (so they can still be read):

- The pseudonym leaves every snapshot's lineage (``services.forget``).
- Labels that pooled fewer than k annotators leave every snapshot frozen with the
  person's rankings: an item's label when fewer than k annotators (the person
  included) ranked it up to the snapshot's last ranking, and a group's label of an
  item when fewer than k of that group did. Labels that pooled k or more stay: the
  person's share in them is an average over at least k people. k is
  ``STEREORANK_GROUP_K`` at the time of the erasure; the others are counted as their
  rankings count today (a withdrawal since lowers the count, so more goes, never less).
  The snapshot's counts and content hash follow its remaining examples, and its
  lineage says so: ``exclusions["erasures"]`` holds k, how many labels and group
  labels erasures removed, and the hash it was frozen with.
- Perspective reports on a snapshot that read the person's rankings are deleted (a
  report names each group, and a group of one is one person's own answer); the
  Perspectives page and the staff API queue them again when asked, computed from the
  rankings that count then.

Kept: checkpoints (pooled and group heads), their evaluations and learning curves.
Their weights and figures are fitted over every label; they hold no row about the
person.
"""

from __future__ import annotations

from collections import defaultdict

from django.conf import settings

from annotation.models import AnnotatorProfile, RankedItem, Ranking
from annotation.models.studies import study_ids
from annotation.rankings.selectors import counted_rankings
from annotation.stats.records import group_of
from training.ml.examples import data_hash
from training.models import DatasetSnapshot, PerspectiveReport, PerspectiveSummary
from training.snapshots.services import EVAL, TRAIN, example_key, forget, to_example

RECORD = "erasures"


def forget_annotator(pseudonym: str, annotator: int, demographics: dict | None) -> dict:
    """Apply the module docstring for one erased annotator (profile id ``annotator``;
    ``demographics`` as they were, None when already gone: then the person is counted in
    every group). ``{"snapshots": changed, "perspective_reports": deleted}``."""
    forget(pseudonym)
    mine = list(
        Ranking.objects.filter(annotator_id=annotator).values_list("pk", "task__study_id", "order")
    )
    if not mine:
        return {"snapshots": 0, "perspective_reports": 0}
    k = int(settings.STEREORANK["GROUP_K"])
    touched, changed = [], 0
    candidates = DatasetSnapshot.objects.filter(last_ranking_id__gte=min(r[0] for r in mine))
    for found in candidates.only("pk", "last_ranking_id").prefetch_related("studies"):
        studies = study_ids([s.pk for s in found.studies.all()] or None)
        items = {
            item
            for ranking, study, order in mine
            if ranking <= found.last_ranking_id and study in studies
            for item in order
        }
        if items:
            touched.append(found.pk)
            snapshot = DatasetSnapshot.objects.select_for_update().get(pk=found.pk)
            changed += _prune(snapshot, studies, items, annotator, demographics, k)
    reports = PerspectiveReport.objects.filter(snapshot__in=touched).delete()[0]
    PerspectiveSummary.objects.filter(snapshot__in=touched).delete()
    return {"snapshots": changed, "perspective_reports": reports}


def _others(snapshot: DatasetSnapshot, studies, items: set[int], annotator: int):
    """``{item: {other annotator id: demographics}}``: who else ranked each item up to the
    snapshot's last ranking, as rankings count today."""
    rankings = (
        counted_rankings(snapshot.include_synthetic, studies)
        .filter(pk__lte=snapshot.last_ranking_id)
        .exclude(annotator_id=annotator)
    )
    pairs = set(
        RankedItem.objects.filter(ranking__in=rankings, item_id__in=items).values_list(
            "item_id", "ranking__annotator_id"
        )
    )
    answers = dict(
        AnnotatorProfile.objects.filter(pk__in={a for _, a in pairs}).values_list(
            "pk", "demographics"
        )
    )
    out: dict[int, dict[int, dict]] = defaultdict(dict)
    for item, other in pairs:
        out[item][other] = answers.get(other) or {}
    return out


def _prune(snapshot, studies, items, annotator, demographics, k) -> int:
    """Remove the snapshot's labels of ``items`` that pooled fewer than k annotators, and
    record it; 1 when the snapshot changed, else 0."""
    others = _others(snapshot, studies, items, annotator)
    small = {example_key(i) for i in items if len(others.get(i, {})) + 1 < k}
    examples = [row for row in snapshot.examples if row["key"] not in small]
    labels_removed = len(snapshot.examples) - len(examples)
    group_labels_removed = 0
    for field, groups in (snapshot.group_labels or {}).items():
        for value, labels in list(groups.items()):
            if demographics is not None and group_of(demographics, field) != value:
                continue
            for item in items:
                key = example_key(item)
                if key not in labels:
                    continue
                peers = [d for d in others.get(item, {}).values() if group_of(d, field) == value]
                if key in small or len(peers) + 1 < k:
                    del labels[key]
                    group_labels_removed += 1
            if not labels:
                del groups[value]
    if not (labels_removed or group_labels_removed):
        return 0
    record = snapshot.exclusions.setdefault(
        RECORD,
        {"k": k, "labels_removed": 0, "group_labels_removed": 0, "frozen_hash": ""},
    )
    record["k"] = k
    record["labels_removed"] += labels_removed
    record["group_labels_removed"] += group_labels_removed
    record["frozen_hash"] = record["frozen_hash"] or snapshot.content_hash
    snapshot.examples = examples
    snapshot.example_count = len(examples)
    snapshot.train_count = sum(r["split"] == TRAIN for r in examples)
    snapshot.eval_count = sum(r["split"] == EVAL for r in examples)
    snapshot.content_hash = data_hash([to_example(r) for r in examples])
    snapshot.save(
        update_fields=[
            "examples",
            "group_labels",
            "exclusions",
            "example_count",
            "train_count",
            "eval_count",
            "content_hash",
        ]
    )
    return 1
