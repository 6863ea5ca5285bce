"""The reads of an import: the study's items as an index to match the tools' names against,
the study's task with exactly a set of items, a source and its people.

How an item is matched (``Catalogue.resolve``), in this order: by our item id when the
export carries it (``records.OUR_IDS``); else by an image's file name, a URL's or path's last
part (``records.file_name``) against the file names of the study's items' images; else by a
prompt's text (trimmed, exactly) against the prompts of the study's items. A name that
matches no item, or more than one, is refused naming the record.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from django.db.models import Count, Q

from annotation.imports.errors import ImportRefused
from annotation.imports.models import ImportBatch, ImportedAnnotator, ImportSource
from annotation.imports.records import ItemRef, file_name
from annotation.models import Item, RankingTask, Study


@dataclass
class Catalogue:
    """A study's items: their occupation by id, and their ids by image file name and by
    prompt text."""

    study: Study
    occupation: dict[int, int] = field(default_factory=dict)
    by_name: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    by_text: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))

    def resolve(self, ref: ItemRef, position: str) -> int:
        """Our item for ``ref`` (module docstring); ``ImportRefused`` naming the record."""
        named = f"{position}: item {ref.key!r}"
        if ref.item_id is not None:
            if ref.item_id not in self.occupation:
                raise ImportRefused(f"{named}: study {self.study.slug} has no item {ref.item_id}")
            return ref.item_id
        for index, how in ((self.by_name, "image name"), (self.by_text, "prompt text")):
            keys = {file_name(v) for v in ref.values} if index is self.by_name else ref.values
            found = set().union(*(index.get(k, set()) for k in keys))
            if len(found) > 1:
                raise ImportRefused(
                    f"{named} ({', '.join(map(repr, ref.values))}) matches {len(found)} items "
                    f"of study {self.study.slug} by {how} ({sorted(found)}): give their ids"
                )
            if found:
                return found.pop()
        given = ", ".join(map(repr, ref.values)) or "no name"
        raise ImportRefused(
            f"{named} ({given}) matches no item of study {self.study.slug} "
            "by id, image name or prompt text"
        )


def catalogue(study: Study) -> Catalogue:
    """The study's items as a ``Catalogue`` (one query)."""
    found = Catalogue(study)
    rows = Item.objects.filter(study=study).values_list(
        "pk", "image", "prompt__text", "prompt__occupation_id"
    )
    for pk, image, text, occupation in rows:
        found.occupation[pk] = occupation
        if image:
            found.by_name[PurePosixPath(image).name].add(pk)
        found.by_text[text.strip()].add(pk)
    return found


def task_with_items(study: Study, item_ids: set[int]) -> RankingTask | None:
    """The study's first normal task (not gold, no attention check) holding exactly
    ``item_ids``, if there is one."""
    return (
        RankingTask.objects.filter(study=study, is_gold=False, check_item__isnull=True)
        .annotate(
            n=Count("task_items"),
            hits=Count("task_items", filter=Q(task_items__item_id__in=item_ids)),
        )
        .filter(n=len(item_ids), hits=len(item_ids))
        .order_by("pk")
        .first()
    )


def batch_of_file(study: Study, sha256: str) -> ImportBatch | None:
    """The batch that imported the file with this SHA-256 into ``study``, if one did."""
    return ImportBatch.objects.filter(study=study, file_sha256=sha256).first()


def source(study: Study, tool: str, name: str) -> ImportSource | None:
    return ImportSource.objects.filter(study=study, tool=tool, name=name).first()


def person(source: ImportSource, source_hash: str) -> ImportedAnnotator | None:
    """The profile made for a source's person (by the keyed hash of their id), if any."""
    found = ImportedAnnotator.objects.filter(source=source, source_hash=source_hash)
    return found.select_related("profile").first()


def sources(study: Study):
    """The study's import sources with their batches' counts, for the command's listing."""
    return ImportSource.objects.filter(study=study).annotate(
        files=Count("batches", distinct=True), people=Count("annotators", distinct=True)
    )
