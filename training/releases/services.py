"""``manage.py export_dataset``: one study's rankings in a snapshot, released as a Hugging
Face dataset with its card, holding only what consent allowed to publish.

A published release cannot be recalled, so it holds:

- the rankings that count in the snapshot (``counted_rankings`` today, up to its last
  ranking: a consent withdrawn or an annotator excluded since takes theirs out), of the
  study, of annotators whose standing consent is to a version that allows a public
  release (``ConsentText.release_rankings``; versions from before that field say no), and
  never an erased person's;
- their answers about themselves only as that version allows (``release_demographics``,
  ``release_free_text``), in combinations that k or more released annotators share
  (``training.releases.demographics``; k is ``STEREORANK_GROUP_K``);
- keys for annotators and tasks made for this release only (``training.releases.rows``),
  the key dropped when the release is written.

The rankings and the annotators' answers and consents are read in one query, so an
erasure or withdrawal committing meanwhile is seen whole or not at all. The files and card
are written whole or not at all (``training.releases.files``); ``--push`` then uploads
them (``training.releases.push``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db.models import Exists, JSONField, OuterRef, Subquery
from django.utils import timezone

from annotation.models import Consent, ConsentText, DemographicField, Item, Study
from annotation.rankings.selectors import counted_rankings
from annotation.stats.records import RankingRecord
from annotation.stats.tiers import flatten, of_ranking, within, without
from annotation.studies import lifecycle
from core.small_groups import keep_groups
from training.errors import NothingToRelease, ReleaseError
from training.models import DatasetSnapshot
from training.releases import card as release_card
from training.releases import files, push
from training.releases.demographics import Question, coarsen, group_counts, released_answer
from training.releases.rows import CONFIGS, Ranked, present, release_key, release_rows
from training.releases.rows import Item as ReleaseItem
from training.snapshots.services import EVAL, TRAIN

SPLITS = (TRAIN, EVAL)
LICENSE = re.compile(r"[a-z0-9][a-z0-9.+-]*")
"""A Hub licence identifier (``cc-by-4.0``, ``mit``, ``other``...)."""


@dataclass(frozen=True)
class Release:
    """What a release holds: its folder, rows per config and split, the annotators in it
    and how many counted in the snapshot, the answers' columns kept and dropped, the rows
    whose answers were all dropped, and the repository it was pushed to (or None)."""

    folder: Path
    rows: dict[str, dict[str, int]]
    annotators: int
    counted: int
    columns: tuple[str, ...]
    dropped: tuple[str, ...]
    suppressed: int
    url: str | None


def _snapshot(snapshot_id: int, study: Study) -> DatasetSnapshot:
    snapshot = DatasetSnapshot.objects.filter(pk=snapshot_id).first()
    if snapshot is None:
        raise ReleaseError(f"there is no snapshot {snapshot_id}")
    studies = set(snapshot.studies.values_list("slug", flat=True)) or {
        lifecycle.default_study().slug
    }
    if study.slug not in studies:
        raise ReleaseError(
            f"snapshot {snapshot_id} froze {', '.join(sorted(studies))}, not {study.slug}"
        )
    return snapshot


def _rankings(snapshot: DatasetSnapshot, study: Study):
    """The rankings that count in the snapshot, of the study, and not an erased person's:
    ``(all of them, those whose consent allows a release)``."""
    counted = counted_rankings(snapshot.include_synthetic, [study]).filter(
        annotator__erased_at__isnull=True
    )
    if snapshot.last_ranking_id is None:
        counted = counted.none()
    counted = counted.filter(pk__lte=snapshot.last_ranking_id or 0)
    consent = Consent.objects.active().filter(annotator=OuterRef("annotator"))
    allowed = counted.filter(Exists(consent.filter(text__release_rankings=True))).annotate(
        answers_allowed=Subquery(
            consent.values("text__release_demographics")[:1], output_field=JSONField()
        ),
        own_words=Subquery(consent.values("text__release_free_text")[:1]),
        version=Subquery(consent.values("text__version")[:1]),
        version_language=Subquery(consent.values("text__language")[:1]),
    )
    return counted, allowed


COLUMNS = (
    "task_id", "annotator__user_id", "annotator__demographics", "annotator__is_synthetic",
    "order", "tiers", "task__check_item_id", "task__occupation__name", "created_at",
    "answers_allowed", "own_words", "version", "version_language",
)  # fmt: skip


def _items(snapshot: DatasetSnapshot, study: Study) -> dict[int, ReleaseItem]:
    """The snapshot's items of the study (as it froze them: an erasure may have removed
    some since), with their split."""
    mine = set(Item.objects.filter(study=study).values_list("pk", flat=True))
    return {
        r["item_id"]: ReleaseItem(
            r["item_id"], r["text"], r["occupation"], r["prompt_type"], r["group"], r["split"]
        )
        for r in snapshot.examples
        if r["item_id"] in mine
    }


def _column_names(fields: list[DemographicField]) -> dict[str, str]:
    """Each field's column in the rows: its key, unless a config's own column has it."""
    own = {c for config in ("rankings", "pairs") for c in files.base_columns(config)}
    return {f.key: f"answer_{f.key}" if f.key in own else f.key for f in fields}


def _agreement(records: list[RankingRecord]) -> dict | None:
    from annotation.stats.agreement import agreement  # scipy: only when a release is made

    n_boot = int(settings.STEREORANK["QUALITY_N_BOOT"])
    found = agreement(records, n_boot=n_boot, seed=0)
    return None if not found.n_tasks else found.as_dict()


def _study_facts(study: Study) -> dict:
    return {
        "slug": study.slug,
        "name": study.name,
        "languages": list(study.languages),
        "platform": study.get_platform_display() if study.platform != "generic" else "",
        "question": f"`{study.question_format}` ({study.get_question_format_display()})",
    }


def export_dataset(
    study_slug: str | None,
    snapshot_id: int,
    license: str,
    out: Path,
    *,
    repo: str | None = None,
    public: bool = False,
) -> Release:
    """Write the release (module docstring) to ``out`` and, with ``repo``, push it there
    (a private dataset repository unless ``public``). ``ReleaseError`` and nothing written
    (nothing pushed) when it cannot be made as asked."""
    files.require_pyarrow()
    if not LICENSE.fullmatch(license or ""):
        raise ReleaseError(
            f"{license!r} is no licence identifier of the Hub (e.g. cc-by-4.0, mit, other)"
        )
    if repo is not None:
        push.check_ready(repo)
    study = lifecycle.resolve(study_slug)
    snapshot = _snapshot(snapshot_id, study)
    items = _items(snapshot, study)
    counted, allowed = _rankings(snapshot, study)
    found = list(allowed.order_by("pk").values_list(*COLUMNS))
    if not found:
        raise NothingToRelease(
            f"no ranking of study {study.slug} in snapshot {snapshot_id} may be released: no "
            "annotator whose rankings count agreed to a consent version that allows a public "
            "release (consent --file with release_rankings: true; they agree before their "
            "next task)"
        )
    fields = list(DemographicField.objects.all())
    questions = [Question(f.key, tuple(f.choices)) for f in fields]
    names = _column_names(fields)
    answers, ranked, records, consents, dates = {}, [], [], {}, []
    synthetic = human = False
    for (task, user, demographics, is_synthetic, order, tiers, card_item, occupation,
         created, allowed_keys, own_words, version, language) in found:  # fmt: skip
        full = without(of_ranking(order, tiers), card_item)
        ranked.append(Ranked(task, user, occupation, full))
        kept = within(full, items)
        if len(flatten(kept)) >= 2:
            records.append(RankingRecord(task, user, occupation, tuple(flatten(kept)), tiers=kept))
        answers[user] = {
            names[q.key]: released_answer(
                demographics or {}, q, q.key in (allowed_keys or []), bool(own_words)
            )
            for q in questions
        }
        consents[(language, version)] = (allowed_keys or [], bool(own_words))
        synthetic, human = synthetic or is_synthetic, human or not is_synthetic
        dates.append(created.date())
    k = int(settings.STEREORANK["GROUP_K"])
    shown = present(ranked, items, SPLITS)  # only they count towards k, and in the card
    if not shown:
        raise NothingToRelease(
            f"no ranking of study {study.slug} that may be released holds two items of one "
            f"split of snapshot {snapshot_id}"
        )
    answers = {user: mine for user, mine in answers.items() if user in shown}
    consented = {key for keys, _ in consents.values() for key in keys}
    coarsened = coarsen(answers, [names[q.key] for q in questions if q.key in consented], k)
    key = release_key()  # this release's only: dropped when the function returns
    rows = release_rows(ranked, items, coarsened.rows, coarsened.columns, SPLITS, key)
    del key
    labels = {names[f.key]: f.label for f in fields}
    counts = {c: {s: len(rows[c][s]) for s in SPLITS} for c in CONFIGS}
    data = {
        "license": license,
        "repo": repo,
        "splits": list(SPLITS),
        "rows": counts,
        "columns": {
            c: files.base_columns(c)
            + (list(coarsened.columns) if c in ("rankings", "pairs") else [])
            for c in CONFIGS
        },
        "study": _study_facts(study),
        "snapshot": {
            "id": snapshot.pk,
            "content_hash": snapshot.content_hash,
            "created_at": snapshot.created_at.date().isoformat(),
            "seed": snapshot.split_seed,
            "eval_fraction": snapshot.eval_fraction,
        },
        "annotators": {
            "released": len(answers),
            "counted": counted.values("annotator").distinct().count(),
            "synthetic": synthetic,
            "human": human,
        },
        "dates": {"first": min(dates).isoformat(), "last": max(dates).isoformat()},
        "task_sizes": sorted({len(flatten(r.tiers)) for r in ranked}),
        "consents": [
            {
                "language": language,
                "version": version,
                "demographics": [labels.get(names.get(k_, k_), k_) for k_ in keys],
                "free_text": own,
            }
            for (language, version), (keys, own) in sorted(consents.items())
        ],
        "demographics": _demographics_data(coarsened, labels, k),
        "agreement": _agreement(records),
        **_responsible(study),
        "generated": timezone.now().date().isoformat(),
    }
    files.write_release(out, rows, coarsened.columns, release_card.card(data))
    url = push.push_release(out, repo, public=public) if repo else None
    return Release(
        Path(out), counts, len(answers), data["annotators"]["counted"], coarsened.columns,
        coarsened.dropped, coarsened.suppressed, url,
    )  # fmt: skip


def _demographics_data(coarsened, labels: dict[str, str], k: int) -> dict:
    """The card's answers section: per released column its groups of k or more (largest
    first) and how many were hidden; the dropped columns by their questions."""
    columns = []
    for column, counter in group_counts(coarsened).items():
        shown = keep_groups(dict(counter), k)
        largest = sorted(shown.groups.items(), key=lambda gn: (-gn[1], gn[0]))
        columns.append(
            {
                "column": column,
                "label": labels[column],
                "groups": [{"group": g, "annotators": n} for g, n in largest],
                "hidden": shown.hidden,
            }
        )
    return {
        "columns": columns,
        "dropped": [labels[c] for c in coarsened.dropped],
        "suppressed": coarsened.suppressed,
        "k": k,
    }


def _responsible(study: Study) -> dict:
    """Who curated the data and whom to ask: the study's newest consent text's controller
    and contact address (its default language's, else any)."""
    texts = ConsentText.objects.filter(study=study)
    newest = texts.filter(language=study.default_language).first() or texts.first()
    return {
        "controller": newest.controller if newest else "",
        "contact": newest.contact_email if newest else "",
    }
