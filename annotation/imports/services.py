"""Writes of an import: a file's rankings into a study, and the basis they count on.

``import_file`` parses the file with its tool's parser (pure, ``records``), then in one
transaction: the source (made on first use), the batch (the file's SHA-256: a file imported
before adds nothing), a profile per person of the source (found again by the keyed hash of
their id), and per record its items matched (``selectors.Catalogue``), its task (the
study's normal task with exactly those items, else a new one of their occupation), its
answer checked as the record's format asks (``annotation.rankings.tiers``) and stored as
``submit_ranking`` stores one: ``Ranking`` + ``RankedItem`` rows, the task's
``ranking_count`` raised under the task's row lock. A task holds an imported ranking in
one of its open slots; when it has none its overlap grows by one, so imported rankings never
open a slot for our participants (a new task's overlap is its imported rankings). A ranking
of a task its annotator answered already is skipped (the first stands). Any refusal rolls
the whole file back.

Imported people have a profile in the study with an account that cannot log in (inactive,
no password, no participation): no participant page, no task, no consent of ours. Their
rankings count while the source's basis stands (``record_basis``, ``withdraw_basis``; an
owner of the study states it, per ``annotation.access``).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.access import roles, scope
from annotation.access.services import account
from annotation.errors import InvalidAnswer
from annotation.imports import argilla, label_studio, potato, selectors
from annotation.imports.errors import BasisWithdrawn, ImportRefused, NotAnOwner
from annotation.imports.models import ImportBatch, ImportedAnnotator, ImportSource
from annotation.imports.records import MalformedRecord, Parsed, SourceRanking
from annotation.models import AnnotatorProfile, RankedItem, Ranking, RankingTask, Study, TaskItem
from annotation.participants.recruitment import external_id_hash
from annotation.rankings import tiers as answer_tiers
from annotation.stats import tiers

Tool = ImportSource.Tool
PARSERS = {
    Tool.LABEL_STUDIO: label_studio.parse,
    Tool.ARGILLA: argilla.parse,
    Tool.POTATO: potato.parse,
}


@dataclass
class ImportReport:
    """What an import did: its batch, whether the file was new, and what it added."""

    batch: ImportBatch
    new: bool
    rankings: int = 0
    annotators: int = 0
    tasks: int = 0
    skipped: int = 0


def source_hash(tool: str, source: str, source_id: str) -> str:
    """The keyed hash a source's person is kept under: HMAC-SHA256 of "import:tool:source"
    and their id, under ``STEREORANK_EXTERNAL_ID_KEY`` (as a crowd platform's ids are)."""
    return external_id_hash(f"import:{tool}:{source}", source_id)


def owner(study: Study, username: str):
    """The account ``username`` if it owns ``study`` (``roles.MANAGE_STUDY``)."""
    user = account(username)
    if not scope.may(user, roles.MANAGE_STUDY, study):
        raise NotAnOwner(f"{username} is not an owner of study {study.slug}.")
    return user


def parse(tool: str, data: bytes, question: str | None = None) -> Parsed:
    """The file's neutral records; a malformed one is ``ImportRefused`` naming its position."""
    if tool not in PARSERS:
        raise ImportRefused(f"unknown tool {tool!r}: use one of {', '.join(PARSERS)}")
    try:
        return PARSERS[tool](data, question)
    except MalformedRecord as error:
        raise ImportRefused(str(error)) from error


def import_file(
    study: Study,
    tool: str,
    data: bytes,
    *,
    file_name: str,
    source: str,
    by: str,
    basis: str = "",
    question: str | None = None,
) -> ImportReport:
    """Import one export file into ``study`` (module docstring); ``basis``: the statement
    to record, if the source has none yet."""
    user = owner(study, by)
    if study.kind == Study.Kind.VALIDATION:
        raise ImportRefused(f"{study.slug} is a validation study: its tasks compare conditions")
    if not source.strip():
        raise ImportRefused("name the source study (--source)")
    parsed = parse(tool, data, question)
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        found, _ = ImportSource.objects.select_for_update().get_or_create(
            study=study, tool=tool, name=source.strip()
        )
        if found.basis_withdrawn_at is not None:
            raise BasisWithdrawn(
                f"The basis for {found} was withdrawn on {found.basis_withdrawn_at:%Y-%m-%d}: "
                "nothing more of it is imported."
            )
        if basis.strip() and found.basis_recorded_at is None:
            _record(found, basis, user)
        batch = selectors.batch_of_file(study, digest)
        if batch is not None:
            return ImportReport(batch, new=False)
        batch = ImportBatch.objects.create(
            source=found, study=study, file_sha256=digest, file_name=file_name, imported_by=user
        )
        report = _write(batch, parsed)
        batch.rankings, batch.annotators, batch.tasks = (
            report.rankings,
            report.annotators,
            report.tasks,
        )
        batch.skipped = report.skipped
        batch.save(update_fields=["rankings", "annotators", "tasks", "skipped"])
        return report


def _write(batch: ImportBatch, parsed: Parsed) -> ImportReport:
    report = ImportReport(batch, new=True, skipped=parsed.skipped)
    items = selectors.catalogue(batch.study)
    people: dict[str, AnnotatorProfile] = {}
    tasks: dict[frozenset[int], RankingTask] = {}
    for record in parsed.rankings:
        ids = {ref.key: items.resolve(ref, record.position) for ref in record.items}
        if len(set(ids.values())) != len(ids):
            raise ImportRefused(f"{record.position}: two of its items are the same item of ours")
        key = frozenset(ids.values())
        if key not in tasks:
            found = selectors.task_with_items(batch.study, set(key))
            if found is None:
                found = _new_task(batch.study, record, ids, items)
                report.tasks += 1
            tasks[key] = found
        profile = people.get(record.annotator)
        if profile is None:
            profile, new = _person(batch, record.annotator)
            people[record.annotator] = profile
            report.annotators += new
        if _store(tasks[key], profile, record, ids):
            report.rankings += 1
        else:
            report.skipped += 1
    return report


def _new_task(study: Study, record: SourceRanking, ids: dict, items) -> RankingTask:
    """A normal task of the record's items (one occupation: a task holds one)."""
    occupations = {items.occupation[i] for i in ids.values()}
    if len(occupations) != 1:
        raise ImportRefused(
            f"{record.position}: its items belong to {len(occupations)} occupations, and a task "
            "holds one; no task of the study has exactly these items"
        )
    task = RankingTask.objects.create(study=study, occupation_id=occupations.pop(), overlap=1)
    TaskItem.objects.bulk_create(TaskItem(task=task, item_id=i) for i in sorted(ids.values()))
    return task


def _person(batch: ImportBatch, source_id: str) -> tuple[AnnotatorProfile, bool]:
    """The profile of the source's person ``source_id``: found by the keyed hash of their
    id, else made (an account that cannot log in: module docstring); (profile, new)."""
    source = batch.source
    digest = source_hash(source.tool, source.name, source_id)
    link = selectors.person(source, digest)
    if link is not None:
        return link.profile, False
    user = get_user_model()(username=f"i-{secrets.token_hex(6)}", is_active=False)
    user.set_unusable_password()
    user.save()
    profile = AnnotatorProfile.objects.create(study=batch.study, user=user, quota=0)
    ImportedAnnotator.objects.create(
        profile=profile, source=source, batch=batch, source_hash=digest
    )
    return profile, True


def _store(task: RankingTask, profile: AnnotatorProfile, record: SourceRanking, ids: dict) -> bool:
    """Store the record's answer to ``task`` as ``profile``'s ranking (module docstring);
    False when they ranked the task already."""
    answer = [[ids[k] for k in tier] for tier in record.tiers]
    try:
        given = answer_tiers.validate(answer, set(ids.values()), record.question)
    except InvalidAnswer as error:
        raise ImportRefused(f"{record.position}: {error.message}") from error
    order = [ids[ref.key] for ref in record.items]
    shown = order if record.shown else sorted(order)
    at = {item: i for i, item in enumerate(shown)}
    given = tuple(tuple(sorted(tier, key=at.__getitem__)) for tier in given)
    locked = RankingTask.objects.select_for_update().get(pk=task.pk)
    if Ranking.objects.filter(task=locked, annotator=profile).exists():
        return False
    ranking = Ranking.objects.create(
        task=locked,
        annotator=profile,
        order=tiers.flatten(given),
        tiers=None if tiers.is_strict(given) else [list(t) for t in given],
        shown_order=shown,
    )
    RankedItem.objects.bulk_create(
        RankedItem(ranking=ranking, item_id=item, position=i, shown_position=at[item])
        for i, tier in enumerate(given)
        for item in tier
    )
    overlap = max(locked.overlap, locked.ranking_count + 1)
    RankingTask.objects.filter(pk=locked.pk).update(
        ranking_count=F("ranking_count") + 1, overlap=overlap
    )
    return True


def _record(source: ImportSource, statement: str, user) -> None:
    source.basis = statement.strip()
    source.basis_by = user
    source.basis_recorded_at = timezone.now()
    source.save(update_fields=["basis", "basis_by", "basis_recorded_at"])


@transaction.atomic
def record_basis(study: Study, tool: str, name: str, statement: str, by: str) -> ImportSource:
    """Record the owner ``by``'s statement that source ``name``'s consent covers this use:
    its people's rankings count from now on. A basis stands once: recorded again, the first
    is kept; withdrawn, it is not recorded again."""
    user = owner(study, by)
    if not statement.strip():
        raise ImportRefused("the basis is the owner's statement: give its text (--basis)")
    found = _source(study, tool, name)
    if found.basis_withdrawn_at is not None:
        raise BasisWithdrawn(
            f"The basis for {found} was withdrawn on {found.basis_withdrawn_at:%Y-%m-%d}."
        )
    if found.basis_recorded_at is None:
        _record(found, statement, user)
    return found


@transaction.atomic
def withdraw_basis(study: Study, tool: str, name: str, by: str) -> ImportSource:
    """Withdraw source ``name``'s basis: its people's rankings stop counting (they are kept,
    as a withdrawn consent's are, until erased), and nothing more of it is imported."""
    owner(study, by)
    found = _source(study, tool, name)
    if found.basis_recorded_at is None:
        raise ImportRefused(f"{found} has no basis recorded: there is nothing to withdraw")
    if found.basis_withdrawn_at is None:
        found.basis_withdrawn_at = timezone.now()
        found.save(update_fields=["basis_withdrawn_at"])
    return found


def _source(study: Study, tool: str, name: str) -> ImportSource:
    found = ImportSource.objects.select_for_update().filter(study=study, tool=tool, name=name)
    found = found.first()
    if found is None:
        raise ImportRefused(f"study {study.slug} has imported nothing from {tool} {name!r}")
    return found


def forget_source_id(sender, annotator: int, **kwargs) -> None:
    """On an erasure (``annotator_erased``): blank the erased person's source id hash, so
    nothing here ties the erased profile to the person in the source."""
    ImportedAnnotator.objects.filter(profile_id=annotator).update(source_hash="")
