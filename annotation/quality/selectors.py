"""The quality report's and the quality policy's reads: a study's consented rankings
with their flags (of a gold task, by an excluded annotator, since the last
reinstatement), one annotator's rankings since their reinstatement (the policy's
read after every submit, compiled once), annotators' statuses and the data version
a stored report describes. Which rankings count is ``selectors.counted_rankings``'s
answer; this module reads the same rows as the quality library wants them."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from django.db.models import (
    BooleanField,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
)
from django.db.models.functions import Cast

from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Consent,
    Ranking,
    RankingTask,
    StatusChange,
    parse_gold_reference,
)
from annotation.models.studies import Erasure, Study
from annotation.rankings.selectors import consented_rankings
from annotation.stats.gold import AttentionCheck, GoldReference
from annotation.stats.records import RankingRecord
from core.languages import GROUPING
from core.prepared import Param, Prepared

log = logging.getLogger(__name__)


def _last_reinstatement() -> Subquery:
    """When the outer ranking's annotator was last reinstated by staff (NULL if never)."""
    return Subquery(
        StatusChange.objects.filter(
            annotator=OuterRef("annotator"), by__isnull=False, status=AnnotatorStatus.OK
        )
        .order_by("-id")
        .values("created_at")[:1]
    )


def since_reinstatement(rankings: QuerySet[Ranking]) -> QuerySet[Ranking]:
    """``rankings`` stored after their annotator's last reinstatement by staff (all of
    them when there was none): a reinstated annotator starts afresh with the policy."""
    return rankings.annotate(since=_last_reinstatement()).filter(
        Q(since__isnull=True) | Q(created_at__gt=F("since"))
    )


@dataclass
class QualityInputs:
    """Rankings as the quality library reads them, keyed by user id, with their tasks'
    gold references and attention checks (keyed by task id)."""

    records: list[RankingRecord] = field(default_factory=list)
    gold: dict[int, GoldReference] = field(default_factory=dict)
    checks: dict[int, AttentionCheck] = field(default_factory=dict)
    ranking_ids: list[int] = field(default_factory=list)


_QUALITY_COLUMNS = (
    "id",
    "task_id",
    "annotator__user_id",
    "task__occupation__name",
    "order",
    "shown_order",
    "seconds_spent",
    "annotator__demographics",
    "task__is_gold",
    "task__gold_reference",
    "task__check_item_id",
    "task__check_position",
    "tiers",
)


@dataclass
class ConsentedQuality:
    """A study's consented rankings (``consented_rankings``) as the quality report reads
    them, each record with three flags: of a gold task, by an annotator excluded now,
    stored since their annotator's last reinstatement (``since_reinstatement``). The
    rankings that count are those of neither of the first two (``counted_rankings``)."""

    inputs: QualityInputs
    gold_task: list[bool]
    excluded: list[bool]
    since_reinstatement: list[bool]

    def counted(self) -> list[RankingRecord]:
        """The records of the rankings that count."""
        flags = zip(self.inputs.records, self.gold_task, self.excluded, strict=True)
        return [r for r, gold, excluded in flags if not gold and not excluded]


def consented_quality(include_synthetic: bool = False, studies=None) -> ConsentedQuality:
    """``ConsentedQuality`` of ``studies`` (two queries: the rankings with their flags, and
    each annotator's demographics once, shared by their records)."""
    consented = consented_rankings(include_synthetic, studies)
    demographics = dict(
        AnnotatorProfile.objects.filter(pk__in=consented.values("annotator_id")).values_list(
            "user_id", "demographics"
        )
    )
    rows = (
        consented.annotate(
            last_reinstated=_last_reinstatement(),
            is_since=ExpressionWrapper(
                Q(last_reinstated__isnull=True) | Q(created_at__gt=F("last_reinstated")),
                output_field=BooleanField(),
            ),
            is_excluded=ExpressionWrapper(
                Q(annotator__status=AnnotatorStatus.EXCLUDED), output_field=BooleanField()
            ),
            order_text=Cast("order", TextField()),
            shown_text=Cast("shown_order", TextField()),
            reference_text=Cast("task__gold_reference", TextField()),
            tiers_text=Cast("tiers", TextField()),
        )
        .order_by("id")
        .values_list(
            "id",
            "task_id",
            "annotator__user_id",
            "task__occupation__name",
            "order_text",
            "shown_text",
            "seconds_spent",
            "task__is_gold",
            "reference_text",
            "task__check_item_id",
            "task__check_position",
            "is_since",
            "is_excluded",
            "language",
            "tiers_text",
        )
    )
    out = ConsentedQuality(QualityInputs(), [], [], [])
    # each record's group: its annotator's answers and the language the ranking was made in
    # (a grouping like a demographic field, issue 39), one dict per pair, shared
    groups: dict[tuple[int, str], dict] = {}

    def group(user: int, language: str) -> dict:
        key = (user, language)
        if key not in groups:
            groups[key] = {**(demographics.get(user) or {}), GROUPING: language or None}
        return groups[key]

    def flagged():
        # the JSON columns come as text, parsed a chunk at a time (one json.loads per
        # 10,000 rankings, not one per value)
        chunk = []
        for row in rows.iterator(chunk_size=10_000):
            chunk.append(row)
            if len(chunk) == 10_000:
                yield from parsed(chunk)
                chunk = []
        yield from parsed(chunk)

    def parsed(chunk):
        texts = [t or "null" for row in chunk for t in (row[4], row[5], row[8], row[14])]
        values = iter(json.loads("[" + ",".join(texts) + "]"))
        for rid, task, user, occ, _, _, secs, gold, _, card, at, since, excluded, lang, _ in chunk:
            order, shown, ref, tiers = next(values), next(values), next(values), next(values)
            out.gold_task.append(gold)
            out.since_reinstatement.append(since)
            out.excluded.append(excluded)
            demo = group(user, lang)
            yield rid, task, user, occ, order, shown, secs, demo, gold, ref, card, at, tiers

    out.inputs = _quality_inputs(flagged())
    return out


_ANNOTATOR_RANKINGS = Prepared(
    lambda: (
        since_reinstatement(Ranking.objects.filter(annotator_id=Param("profile", IntegerField())))
        .order_by("id")
        .values(*_QUALITY_COLUMNS)
    )
)


def annotator_quality_inputs(profile: AnnotatorProfile) -> QualityInputs:
    """``quality_inputs`` of one annotator's rankings since their last reinstatement (what
    the policy reads after each submit; one query, compiled once)."""
    rows = _ANNOTATOR_RANKINGS.rows(profile=profile.pk)
    return _quality_inputs([tuple(row[c] for c in _QUALITY_COLUMNS) for row in rows])


def _quality_inputs(rows) -> QualityInputs:
    out, malformed = QualityInputs(), set()
    for row in rows:
        rid, task, user, occupation, order, shown, seconds, demo, gold, ref, card, at, tiers = row
        out.ranking_ids.append(rid)
        out.records.append(
            RankingRecord(task, user, occupation, order, shown or (), seconds, demo or {}, tiers)
        )
        if gold and task not in out.gold and task not in malformed:
            try:
                out.gold[task] = parse_gold_reference(ref)
            except ValueError as error:
                malformed.add(task)
                log.warning("gold task %s is not scored: %s", task, error)
        if card is not None:
            out.checks[task] = AttentionCheck(card, at)
    return out


def annotator_statuses(user_ids: set[int]) -> list[dict]:
    """Those users' profiles: pk, user id, status with its last recorded reason, synthetic
    flag and kind (one query)."""
    last = StatusChange.objects.filter(annotator=OuterRef("pk")).order_by("-id")
    return list(
        AnnotatorProfile.objects.filter(user_id__in=user_ids)
        .annotate(reason=Subquery(last.values("reason")[:1]))
        .values("pk", "user_id", "status", "is_synthetic", "synthetic_kind", "reason")
    )


def recent_status_changes(study: Study, limit: int = 20) -> QuerySet[StatusChange]:
    """The study's latest status changes, with their annotator and the staff member who
    made them."""
    changes = StatusChange.objects.filter(annotator__study=study)
    return changes.select_related("annotator", "by").order_by("-id")[:limit]


def quality_data_version(study: Study) -> str:
    """A token that changes when what the study's quality report reads changes: its
    rankings, statuses, consents, gold and check tasks (edits of a reference in place
    aside); another study's data leaves it as it is.

    Read on every view of a stored report, so it is one query of index probes (and a count
    of withdrawn consents), never a pass over the study's rankings or tasks: rankings,
    status changes and consents are only ever added (the newest id moves), except by an
    erasure, which withdraws the consent (counted) and is a row itself (the newest id
    moves); a task turned gold or given a check card moves the count of those (indexed:
    ``is_gold``, ``check_item``)."""

    def newest(rows: QuerySet) -> Subquery:
        return Subquery(rows.order_by("-pk").values("pk")[:1])

    def count(rows: QuerySet) -> Subquery:
        return Subquery(rows.order_by().annotate(n=Func(F("pk"), function="COUNT")).values("n"))

    tasks = RankingTask.objects.filter(study=OuterRef("pk"))
    consents = Consent.objects.filter(annotator__study=OuterRef("pk"))
    parts = {
        "ranking": newest(Ranking.objects.filter(task__study=OuterRef("pk"))),
        "change": newest(StatusChange.objects.filter(annotator__study=OuterRef("pk"))),
        "consent": newest(consents),
        "withdrawn": count(consents.filter(withdrawn_at__isnull=False)),
        "gold": count(tasks.filter(is_gold=True)),
        "checks": count(tasks.filter(check_item__isnull=False)),
        "task": newest(tasks),
        "erasure": newest(Erasure.objects.all()),
    }
    row = Study.objects.filter(pk=study.pk).annotate(**parts).values(*parts).get()
    return "-".join(str(row[name]) for name in parts)


@dataclass(frozen=True)
class FailedCheck:
    """One attention check an annotator failed: when, and in how wide a window (None
    where the width was not recorded: rankings from before it was)."""

    at: object
    viewport_width: int | None


@dataclass
class CheckStanding:
    """A warned or excluded annotator of a study and the attention checks they failed."""

    profile: AnnotatorProfile
    failed: list[FailedCheck] = field(default_factory=list)

    @property
    def widths_unknown(self) -> bool:
        """None of the failed checks recorded the window's width."""
        return all(check.viewport_width is None for check in self.failed)


def failed_attention_checks(study: Study) -> list[CheckStanding]:
    """The study's warned or excluded annotators who failed at least one attention check,
    each with those checks (oldest first); in order of annotator. One query: the rankings
    of check tasks by those annotators, each checked as the policy checks it."""
    rows = (
        Ranking.objects.filter(
            task__study=study,
            task__check_item__isnull=False,
            annotator__status__in=[AnnotatorStatus.WARNED, AnnotatorStatus.EXCLUDED],
        )
        .select_related("annotator__user", "task")
        .only(
            "order",
            "tiers",
            "created_at",
            "viewport_width",
            "task__check_item_id",
            "task__check_position",
            "annotator__status",
            "annotator__user__id",
            "annotator__user__username",
        )
        .order_by("annotator_id", "created_at", "pk")
    )
    standings: dict[int, CheckStanding] = {}
    for ranking in rows:
        check = AttentionCheck(ranking.task.check_item_id, ranking.task.check_position)
        if ranking.order and not check.passed(ranking.order, ranking.tiers):
            standing = standings.setdefault(ranking.annotator_id, CheckStanding(ranking.annotator))
            standing.failed.append(FailedCheck(ranking.created_at, ranking.viewport_width))
    return list(standings.values())
