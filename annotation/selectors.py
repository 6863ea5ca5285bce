"""Reads of annotators, their consent and their rankings, one function per question
(the catalogue, tasks and cards: ``annotation.task_selectors``).

"The rankings that count" is answered here and only here (``counted_rankings``):
labels, snapshots, exports and the retraining schedule all read through it;
``left_out_rankings`` is its complement, with the reasons. Every read of rankings
takes ``studies`` (studies or their ids; None: the default study alone), so nothing
of one study reaches another's labels, exports or reports.

Past 400 lines because every read of annotators and their rankings
has this one home, the hot path's compiled ones (``core.prepared``) included.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.paginator import Page, Paginator
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Cast
from rest_framework.authtoken.models import Token

from core.prepared import Param, Prepared, columns, instance

from .labels import LabelRow
from .models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Consent,
    ConsentText,
    DemographicField,
    Occupation,
    RankedItem,
    Ranking,
    RankingTask,
    StatusChange,
    parse_gold_reference,
)
from .quality.gold import AttentionCheck, GoldReference
from .quality.records import RankingRecord
from .study_models import Erasure, Study, study_ids

log = logging.getLogger(__name__)


def consent_stands(annotator: str = "annotator") -> Exists:
    """``EXISTS`` an active consent of the profile the outer query's ``annotator`` field
    (``"pk"`` for profiles) names: its consent stands (any version)."""
    return Exists(Consent.objects.active().filter(annotator=OuterRef(annotator)))


def current_consent_text(study) -> Subquery:
    """The id of the newest consent text of ``study`` (a study, its id or an
    ``OuterRef``), as a subquery (a new version needs consent again)."""
    return Subquery(ConsentText.objects.filter(study=study).order_by("-version").values("pk")[:1])


def consents_to_current_text(annotator) -> Exists:
    """Whether ``annotator`` (a profile or an ``OuterRef``) agreed to the newest text of
    their study and has not withdrawn; an older version's consent still makes its
    rankings count (``counted_rankings``) but gives no new task."""
    newest = current_consent_text(OuterRef("annotator__study_id"))
    return Exists(Consent.objects.active().filter(annotator=annotator, text_id=newest))


def has_consent(profile: AnnotatorProfile) -> bool:
    """An active consent to the newest consent text of the profile's study."""
    newest = current_consent_text(profile.study_id)
    return Consent.objects.active().filter(annotator=profile, text_id=newest).exists()


def progress(profile: AnnotatorProfile) -> dict:
    """The annotator's rankings so far against their quota: ``{"done", "quota"}``."""
    return {"done": profile.rankings.count(), "quota": profile.quota}


def excluded_message(profile: AnnotatorProfile) -> str:
    """What an excluded annotator is told, with the recorded reason."""
    change = profile.status_changes.filter(status=AnnotatorStatus.EXCLUDED).first()
    why = f" ({change.reason})" if change else ""
    return (
        f"The quality checks excluded you from this study{why}: you will get no more tasks, "
        "and your rankings are not used. If you think this is a mistake, contact the study team."
    )


def _token_query() -> QuerySet:
    user = get_user_model()
    return Token.objects.filter(key=Param("key", Token._meta.pk)).values(
        *columns(Token), *columns(user, "user__"), *columns(AnnotatorProfile, "user__annotator__")
    )[:1]


_TOKEN = Prepared(_token_query)


def token_with_profile(key: str) -> Token | None:
    """The API token ``key`` with its user and the user's annotator profile (one query,
    compiled once: it runs on every API request)."""
    row = _TOKEN.first(key=key)
    if row is None:
        return None
    token = instance(Token, row)
    token.user = instance(get_user_model(), row, "user__")
    profile = instance(AnnotatorProfile, row, "user__annotator__")
    if profile is not None:
        token.user.annotator = profile
    return token


def demographic_questions() -> QuerySet[DemographicField]:
    """The questions of the demographics form (active fields, in their order)."""
    return DemographicField.objects.filter(active=True)


def demographic_fields() -> QuerySet[DemographicField]:
    """Every demographic field, retired ones too (old answers keep their key), in order."""
    return DemographicField.objects.all()


def consented_rankings(include_synthetic: bool = False, studies=None) -> QuerySet[Ranking]:
    """Rankings of ``studies`` whose annotator's consent stands (a withdrawal takes them
    out), synthetic annotators' only when asked for: what the quality report reads, gold
    tasks and excluded annotators included. Labels read ``counted_rankings``."""
    rankings = Ranking.objects.filter(consent_stands(), task__study__in=study_ids(studies))
    if not include_synthetic:
        rankings = rankings.filter(annotator__is_synthetic=False)
    return rankings


def counted_rankings(include_synthetic: bool = False, studies=None) -> QuerySet[Ranking]:
    """The rankings of ``studies`` that count: consented (``consented_rankings``), not by
    an excluded annotator, not of a gold task (gold never feeds labels). An attention-check
    card in a ranking that counts is still left out of labels (``label_rows``)."""
    return (
        consented_rankings(include_synthetic, studies)
        .filter(task__is_gold=False)
        .exclude(annotator__status=AnnotatorStatus.EXCLUDED)
    )


def label_rows(include_synthetic: bool = False, studies=None) -> list[LabelRow]:
    """Every ranked item of the rankings of ``studies`` that count (a validation study's
    never: they judge conditions, not items), with the annotator's demographics
    (one query; the input of ``labels.item_labels`` and ``labels.group_labels``).

    An attention-check card is dropped and the other items' positions close up
    (0..K-2), so the card neither gets a label nor shifts the others'.
    """
    values = (
        RankedItem.objects.filter(ranking__in=counted_rankings(include_synthetic, studies))
        .exclude(ranking__task__study__kind=Study.Kind.VALIDATION)
        .order_by("ranking_id", "position")
        .values_list(
            "ranking_id",
            "item_id",
            "ranking__annotator__demographics",
            "ranking__task__check_item_id",
            "ranking__annotator__user_id",
            "ranking__task_id",
        )
    )
    rows, position = [], defaultdict(int)
    for rid, iid, demo, card, annotator, task in values:
        if iid == card:
            continue
        rows.append(LabelRow(rid, iid, position[rid], demo or {}, annotator, task))
        position[rid] += 1
    return rows


CONSENT_WITHDRAWN, EXCLUDED, SYNTHETIC, GOLD = (
    "consent withdrawn",
    "excluded annotator",
    "synthetic annotator",
    "gold task",
)


def left_out_rankings(
    include_synthetic: bool, last_ranking_id: int | None, studies=None
) -> list[dict]:
    """The rankings of ``studies`` up to ``last_ranking_id`` that do not count, by annotator
    and reason (one query): ``[{"user_id", "reason", "rankings"}]``. A ranking's reason is the first
    that applies of: consent withdrawn, excluded annotator, synthetic annotator (when
    not included), gold task; the complement of ``counted_rankings``."""
    consented = consent_stands()
    reasons = [
        When(~consented, then=Value(CONSENT_WITHDRAWN)),
        When(annotator__status=AnnotatorStatus.EXCLUDED, then=Value(EXCLUDED)),
        When(task__is_gold=True, then=Value(GOLD)),
    ]
    if not include_synthetic:
        reasons.insert(2, When(annotator__is_synthetic=True, then=Value(SYNTHETIC)))
    rankings = Ranking.objects.filter(task__study__in=study_ids(studies))
    if last_ranking_id is not None:
        rankings = rankings.filter(pk__lte=last_ranking_id)
    rows = (
        rankings.annotate(reason=Case(*reasons, default=Value("")))
        .exclude(reason="")
        .order_by()
        .values("annotator__user_id", "reason")
        .annotate(rankings=Count("pk"))
        .order_by("annotator__user_id", "reason")
    )
    return [
        {"user_id": r["annotator__user_id"], "reason": r["reason"], "rankings": r["rankings"]}
        for r in rows
    ]


def check_cards_left_out(include_synthetic: bool, last_ranking_id: int | None, studies=None) -> int:
    """How many attention-check cards ``label_rows`` drops from the rankings that count."""
    rankings = counted_rankings(include_synthetic, studies)
    rankings = rankings.filter(task__check_item__isnull=False)
    if last_ranking_id is not None:
        rankings = rankings.filter(pk__lte=last_ranking_id)
    return rankings.count()


def counted_rankings_after(
    last_ranking_id: int | None, include_synthetic: bool = False, studies=None
) -> int:
    """How many rankings of ``studies`` that count were stored after ``last_ranking_id``
    (all when None)."""
    rankings = counted_rankings(include_synthetic, studies)
    if last_ranking_id is not None:
        rankings = rankings.filter(pk__gt=last_ranking_id)
    return rankings.count()


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
        )
    )
    out = ConsentedQuality(QualityInputs(), [], [], [])

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
        texts = [t or "null" for row in chunk for t in (row[4], row[5], row[8])]
        values = iter(json.loads("[" + ",".join(texts) + "]"))
        for rid, task, user, occ, _, _, secs, gold, _, card, at, since, excluded in chunk:
            order, shown, ref = next(values), next(values), next(values)
            out.gold_task.append(gold)
            out.since_reinstatement.append(since)
            out.excluded.append(excluded)
            demo = demographics.get(user)
            yield rid, task, user, occ, order, shown, secs, demo, gold, ref, card, at

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
    for rid, task, user, occupation, order, shown, seconds, demo, gold, ref, card, at in rows:
        out.ranking_ids.append(rid)
        out.records.append(
            RankingRecord(task, user, occupation, order, shown or (), seconds, demo or {})
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


def annotators() -> QuerySet[AnnotatorProfile]:
    """Annotator profiles: staff accounts rank only to try the portal and are left out."""
    return AnnotatorProfile.objects.filter(user__is_staff=False)


def annotator_profile(profile_id: int) -> AnnotatorProfile | None:
    """Profile ``profile_id`` with its user (staff included), if there is one."""
    return AnnotatorProfile.objects.select_related("user").filter(pk=profile_id).first()


def active_annotators() -> QuerySet[AnnotatorProfile]:
    """Annotators whose consent stands (any version): not withdrawn, not erased."""
    return annotators().filter(consent_stands("pk"))


def annotator_status_counts() -> dict[str, int]:
    """How many human annotators (staff left out) are active, withdrawn or erased (one query).

    Withdrawn: gave consent once, none stands now, data kept. Erased: data gone.
    """
    stands = consent_stands("pk")
    gave = Exists(Consent.objects.filter(annotator=OuterRef("pk")))
    return (
        annotators()
        .filter(is_synthetic=False)
        .aggregate(
            active=Count("pk", filter=Q(stands)),
            withdrawn=Count("pk", filter=Q(gave, ~stands, erased_at__isnull=True)),
            erased=Count("pk", filter=Q(erased_at__isnull=False)),
        )
    )


def erasures_after(moment) -> QuerySet[Erasure]:
    """Erasures since ``moment`` (a snapshot's ``created_at``): their annotators' rankings
    are in what was frozen then, and in nothing built afterwards."""
    return Erasure.objects.filter(erased_at__gt=moment)


def occupation_progress() -> list[dict]:
    """Per occupation: tasks, rankings, filled overlap slots and complete tasks (one query);
    gold tasks, which ignore overlap, are not part of it."""
    study = Q(tasks__is_gold=False)
    rows = (
        Occupation.objects.annotate(
            n_tasks=Count("tasks", filter=study),
            slots=Sum("tasks__overlap", filter=study, default=0),
            rankings=Sum("tasks__ranking_count", filter=study, default=0),
            complete=Count(
                "tasks", filter=study & Q(tasks__ranking_count__gte=F("tasks__overlap"))
            ),
        )
        .order_by("name")
        .values("name", "n_tasks", "slots", "rankings", "complete")
    )
    return list(rows)


def annotator_progress(page: int | str | None, per_page: int = 50) -> Page:
    """One page of active annotators (staff, withdrawn and erased left out) with ``done``
    rankings, most active first (one query plus a count); rows are dicts of user id,
    username, quota, done, synthetic."""
    profiles = (
        active_annotators()
        .annotate(done=Count("rankings"))
        .order_by("is_synthetic", "-done", "user__username")
        .values("user_id", "user__username", "quota", "done", "is_synthetic")
    )
    return Paginator(profiles, per_page).get_page(page)


def gold_task_count(study: Study) -> int:
    """How many gold tasks (tasks with a reference order) the study has."""
    return RankingTask.objects.filter(study=study, is_gold=True).count()


def demographic_labels() -> dict[str, str]:
    """Each demographic field's key with the label people read (``age_band``: "Age band")."""
    return dict(DemographicField.objects.values_list("key", "label"))


def study(slug: str) -> Study | None:
    """The study whose entry link ends in ``slug``, if there is one."""
    return Study.objects.filter(slug=slug).first()


def study_samplers() -> QuerySet:
    """The studies not archived, newest first, with their sampler and what an ``active``
    one's priorities rest on (the progress dashboard's "which sampler is on")."""
    from .study_models import Study

    return (
        Study.objects.exclude(status=Study.Status.ARCHIVED)
        .order_by("-created_at")
        .values("slug", "name", "kind", "sampler", "priorities_basis", "priorities_updated_at")
    )
