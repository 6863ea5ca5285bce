"""Reads of annotators, their consent and their rankings, one function per question
(the catalogue, tasks and cards: ``annotation.assignment.selectors``).

"The rankings that count" is answered here and only here (``counted_rankings``):
labels, snapshots, exports and the retraining schedule all read through it;
``left_out_rankings`` is its complement, with the reasons. Every read of rankings
takes ``studies`` (studies or their ids; None: the default study alone), so nothing
of one study reaches another's labels, exports or reports.

The quality report's and the policy's reads of the same rankings (with their flags,
parsed for the quality library) are ``annotation.quality.selectors``.
"""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)

from annotation.access import roles, scope
from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Consent,
    ConsentText,
    DemographicField,
    Occupation,
    RankedItem,
    Ranking,
    RankingTask,
)
from annotation.models.studies import Erasure, Study, study_ids
from annotation.rankings.labels import LabelRow
from annotation.stats.tiers import closed_places


def consent_stands(annotator: str = "annotator") -> Q:
    """Whether the basis to use the data of the profile the outer query's ``annotator``
    field (``"pk"`` for profiles) names stands: an active consent of theirs (any version),
    or, for a person imported from another tool (``annotation.imports``: they gave us no
    consent), their source's basis, recorded and not withdrawn, while they are not erased.
    The one definition of whose rankings may count: every reader of rankings, labels
    (``label_sql`` through ``counted_rankings``), quotas and counts asks it.

    One ``IN`` over a ``UNION ALL``, a hashed semi-join on PostgreSQL, not ``EXISTS ...
    OR EXISTS ...``, a subplan per row (docs/benchmarks.md: 2.2 times as long)."""
    return Q(**{f"{annotator}__in": _standing_bases()})


def _standing_bases() -> QuerySet:
    """The ids of the profiles whose basis stands: those with an active consent, and the
    imported people whose source's basis stands. The second is read through the reverse
    relation ``imported`` (``annotation.imports.models``, a package above this one, named
    in the query, never imported)."""
    consented = Consent.objects.active().order_by().values("annotator")
    imported = (
        AnnotatorProfile.objects.filter(
            erased_at__isnull=True,
            imported__source__basis_recorded_at__isnull=False,
            imported__source__basis_withdrawn_at__isnull=True,
        )
        .order_by()
        .values("pk")
    )
    return consented.union(imported, all=True)


def _superseded() -> Exists:
    """``EXISTS`` a newer version, in the same language, of the study's consent text the
    outer consent agreed to."""
    return Exists(
        ConsentText.objects.filter(
            study_id=OuterRef("text__study_id"),
            language=OuterRef("text__language"),
            version__gt=OuterRef("text__version"),
        )
    )


def _current_consents(annotator):
    """The active consents of ``annotator`` to a text no newer version (in its language)
    has replaced."""
    return Consent.objects.active().filter(annotator=annotator).filter(~_superseded())


def consents_to_current_text(annotator) -> Exists:
    """Whether ``annotator`` (a profile or an ``OuterRef``) agreed to the newest text, in
    the language they agreed in, of their study and has not withdrawn; an older version's
    consent still makes its rankings count (``counted_rankings``) but gives no new task.
    Versions count per language: a new Dutch version asks again those who agreed in
    Dutch; a participant who switches language afterwards keeps the consent they gave."""
    return Exists(_current_consents(annotator))


def has_consent(profile: AnnotatorProfile) -> bool:
    """An active consent to the newest consent text of the profile's study, in the
    language they agreed in (``consents_to_current_text``)."""
    return _current_consents(profile).exists()


def progress(profile: AnnotatorProfile) -> dict:
    """The annotator's rankings so far against their quota: ``{"done", "quota"}``."""
    return {"done": profile.rankings.count(), "quota": profile.quota}


def exclusion_reason(profile: AnnotatorProfile) -> str:
    """Why the annotator was excluded, as recorded ("" when no exclusion is on record)."""
    change = profile.status_changes.filter(status=AnnotatorStatus.EXCLUDED).first()
    return change.reason if change else ""


def study_contact(study_id: int) -> str:
    """The study team's e-mail address, from the study's newest consent text ("" if none)."""
    return (
        ConsentText.objects.filter(study_id=study_id)
        .values_list("contact_email", flat=True)
        .first()
        or ""
    )


def excluded_message(profile: AnnotatorProfile) -> str:
    """What an excluded annotator is told: the recorded reason and whom to write to."""
    why = exclusion_reason(profile)
    contact = study_contact(profile.study_id)
    return (
        f"The quality checks excluded you from this study{f' ({why})' if why else ''}: you "
        "will get no more tasks, and your rankings are not used. If you think this is a "
        "mistake, write to the study team"
        + (f" at {contact}" if contact else "")
        + ", quoting your pseudonym."
    )


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

    An attention-check card is dropped and the others close up, so the card neither gets
    a label nor shifts the others'; each row's position is the item's place among the
    rest (``annotation.stats.tiers``: items ranked equal share their tier's mean).
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
            "position",
        )
    )
    rows = []
    for rid, ranked in groupby(values, key=itemgetter(0)):
        kept = [v for v in ranked if v[1] != v[3]]
        places = closed_places([v[6] for v in kept])
        for (_, iid, demo, _, annotator, task, _), place in zip(kept, places, strict=True):
            rows.append(LabelRow(rid, iid, place, demo or {}, annotator, task))
    return rows


NO_IMPORT_BASIS = "imported, basis not recorded or withdrawn"
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
    that applies of: an imported person's source without a standing basis, consent
    withdrawn, excluded annotator, synthetic annotator (when not included), gold task; the
    complement of ``counted_rankings``."""
    consented = consent_stands()
    reasons = [
        When(~consented & Q(annotator__imported__isnull=False), then=Value(NO_IMPORT_BASIS)),
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


def annotators() -> QuerySet[AnnotatorProfile]:
    """Annotator profiles: staff accounts rank only to try the portal and are left out."""
    return AnnotatorProfile.objects.filter(user__is_staff=False)


def annotator_profile(
    profile_id: int, viewer, capability: str = roles.VIEW_DATA
) -> AnnotatorProfile | None:
    """Profile ``profile_id`` with its user (staff included), if there is one in a study
    ``viewer`` may ``capability`` in."""
    found = scope.in_scope(AnnotatorProfile.objects.select_related("user"), viewer, capability)
    return found.filter(pk=profile_id).first()


def active_annotators() -> QuerySet[AnnotatorProfile]:
    """Annotators whose consent stands (any version): not withdrawn, not erased."""
    return annotators().filter(consent_stands("pk"))


def _study_id(study) -> int:
    """The id of ``study`` (a study or its id; None: the default study)."""
    return study_ids(None if study is None else [study])[0]


def annotator_status_counts(study=None) -> dict[str, int]:
    """How many human annotators (staff left out) of ``study`` (a study or its id; None:
    the default study) are active, withdrawn or erased (one query).

    Withdrawn: gave consent once, none stands now, data kept. Erased: data gone.
    """
    stands = consent_stands("pk")
    gave = Exists(Consent.objects.filter(annotator=OuterRef("pk")))
    return (
        annotators()
        .filter(is_synthetic=False, study_id=_study_id(study))
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


def occupation_progress(study=None) -> list[dict]:
    """Per occupation with tasks of ``study`` (a study or its id; None: the default study):
    its tasks, rankings, filled overlap slots and complete tasks in that study (one
    query); gold tasks, which ignore overlap, are not part of it."""
    sid = _study_id(study)
    counted = Q(tasks__is_gold=False, tasks__study_id=sid)
    has_tasks = Exists(
        RankingTask.objects.filter(occupation=OuterRef("pk"), study_id=sid, is_gold=False)
    )
    rows = (
        Occupation.objects.filter(has_tasks)
        .annotate(
            n_tasks=Count("tasks", filter=counted),
            slots=Sum("tasks__overlap", filter=counted, default=0),
            rankings=Sum("tasks__ranking_count", filter=counted, default=0),
            complete=Count(
                "tasks", filter=counted & Q(tasks__ranking_count__gte=F("tasks__overlap"))
            ),
        )
        .order_by("name")
        .values("name", "n_tasks", "slots", "rankings", "complete")
    )
    return list(rows)


def annotator_progress(page: int | str | None, per_page: int = 50, study=None) -> Page:
    """One page of the active annotators of ``study`` (a study or its id; None: the default
    study; staff, withdrawn and erased left out) with ``done`` rankings of that study, most
    active first (one query plus a count); rows are dicts of user id, username, quota,
    done, synthetic."""
    sid = _study_id(study)
    profiles = (
        active_annotators()
        .filter(study_id=sid)
        .annotate(done=Count("rankings", filter=Q(rankings__task__study_id=sid)))
        .order_by("is_synthetic", "-done", "user__username")
        .values("user_id", "user__username", "quota", "done", "is_synthetic")
    )
    return Paginator(profiles, per_page).get_page(page)


def demographic_answers(study=None) -> list[dict]:
    """The demographic answers of the active human annotators of ``study`` (a study or its
    id; None: the default study), one dict each (synthetic ones left out)."""
    return list(
        active_annotators()
        .filter(is_synthetic=False, study_id=_study_id(study))
        .values_list("demographics", flat=True)
    )


def gold_task_count(study: Study) -> int:
    """How many gold tasks (tasks with a reference order) the study has."""
    return RankingTask.objects.filter(study=study, is_gold=True).count()


def demographic_labels() -> dict[str, str]:
    """Each demographic field's key with the label people read (``age_band``: "Age band")."""
    return dict(DemographicField.objects.values_list("key", "label"))


def study(slug: str) -> Study | None:
    """The study whose entry link ends in ``slug``, if there is one."""
    return Study.objects.filter(slug=slug).first()


def study_samplers(viewer) -> QuerySet:
    """The studies ``viewer`` has a role in, not archived, newest first, with their sampler
    and what an ``active`` one's priorities rest on (the progress dashboard's "which
    sampler is on")."""
    from annotation.models.studies import Study

    return (
        scope.visible_studies(viewer, roles.ANY_ROLE)
        .exclude(status=Study.Status.ARCHIVED)
        .order_by("-created_at")
        .values("slug", "name", "kind", "sampler", "priorities_basis", "priorities_updated_at")
    )
