"""Writes of the annotation side: accounts, consent, demographics, submitting a ranking.

What an annotator ranks next is decided in ``annotation.assignment.next_task``. Each stored
ranking re-applies the quality policy to its annotator (``annotation.quality.standing``).
"""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import DateTimeField, F, IntegerField, OuterRef, QuerySet, Subquery
from django.dispatch import Signal
from django.utils import timezone
from django.utils.translation import gettext

from annotation.assignment import blinding, overlap
from annotation.errors import (
    AlreadyRanked,
    AnnotatorExcluded,
    InvalidAnswer,
    NotReserved,
    RankedBefore,
    TaskNotFound,
)
from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Assignment,
    Consent,
    DemographicField,
    RankedItem,
    Ranking,
    RankingTask,
    Study,
)
from annotation.models.studies import Participation, default_study
from annotation.participants import content
from annotation.participants.recruitment import default_quota
from annotation.quality import standing
from annotation.rankings import tiers as answer_tiers
from annotation.rankings.selectors import demographic_questions, excluded_message
from annotation.stats import tiers
from core.ids import MAX_ID
from core.prepared import Param, Prepared, columns, instance, server_binding


def get_profile(user, study: Study | None = None) -> AnnotatorProfile:
    """The user's annotator profile, created on first use (in ``study``, else the default
    study).

    Free when the profile came with the user (``select_related("annotator")``,
    as annotation.api.auth does for tokens).
    """
    try:
        return user.annotator
    except AnnotatorProfile.DoesNotExist:
        defaults = {"quota": default_quota(study or default_study())}
        if study is not None:
            defaults["study"] = study
        profile, _ = AnnotatorProfile.objects.get_or_create(user=user, defaults=defaults)
        user.annotator = profile
        return profile


@transaction.atomic
def create_annotator(username: str, password: str, *, staff: bool, consent: bool) -> bool:
    """Create an annotator account, or set the password of an existing one; with ``staff``
    it is a staff account (not a superuser: it sees the studies it is granted a role in,
    ``manage.py grant``), with ``consent`` a consent to the newest text.
    True when the account is new."""
    user, created = get_user_model().objects.get_or_create(username=username)
    user.set_password(password)
    if staff:
        user.is_staff = True
    user.save()
    profile = get_profile(user)
    if consent:
        give_consent(profile)
    return created


@transaction.atomic
def give_consent(profile: AnnotatorProfile, language: str | None = None) -> Consent:
    """Agree to the newest consent text of the profile's study in ``language`` (None:
    their participation's, else the study's default; a language without a text of its
    own reads the default language's: ``content.consent_text``), the one they were shown;
    the record's text says which version and language."""
    language = language or participation_language(profile) or None
    text = content.consent_text(profile.study, language)
    current = profile.consents.active().first()
    if current and current.text_id == text.pk:
        return current
    if current:
        current.withdrawn_at = timezone.now()
        current.save(update_fields=["withdrawn_at"])
    return Consent.objects.create(annotator=profile, text=text)


@transaction.atomic
def withdraw_consent(profile: AnnotatorProfile) -> None:
    """End the active consent and release the annotator's reservations."""
    profile.consents.active().update(withdrawn_at=timezone.now())
    profile.assignments.all().delete()


MAX_ANSWER_LENGTH = 200


def clean_answer(field: DemographicField, value: object) -> str:
    """One answer as stored: trimmed; a choice (or "prefer not to say") in its own
    spelling whatever the case; own words only where the field allows them."""
    value = str(value).strip()
    if not value:
        return ""
    if len(value) > MAX_ANSWER_LENGTH:
        raise InvalidAnswer(
            gettext("%(label)s: at most %(limit)s characters, please.")
            % {"label": field.label, "limit": MAX_ANSWER_LENGTH}
        )
    options = [*field.choices, DemographicField.PREFER_NOT_TO_SAY]
    same = [option for option in options if option.lower() == value.lower()]
    if same:
        return same[0]
    if field.choices and not field.allow_other:
        raise InvalidAnswer(
            gettext("'%(value)s' is not one of the options for %(label)s.")
            % {"value": value, "label": field.label}
        )
    return value


def save_demographics(profile: AnnotatorProfile, answers: dict, merge: bool = False) -> None:
    """Store self-described answers, replacing the old ones (or, with ``merge``, only those
    given; a blank removes one); every field optional, unknown keys refused."""
    fields = {f.key: f for f in demographic_questions()}
    if merge:
        kept = {k: v for k, v in profile.demographics.items() if k in fields}
        answers = {**kept, **answers}
    clean = {}
    for key, value in answers.items():
        if key not in fields:
            raise InvalidAnswer(gettext("Unknown demographic field '%(key)s'.") % {"key": key})
        if value := clean_answer(fields[key], value):
            clean[key] = value
    profile.demographics = clean
    profile.save(update_fields=["demographics"])


"""The largest id a row can have (a 64-bit primary key)."""

MAX_VIEWPORT_WIDTH = 20_000
"""The widest window a ranking may record (CSS pixels): past any screen, short of garbage."""


ranking_stored = Signal()
"""Sent inside the transaction that stores a new ranking, with ``ranking_id`` and
``study_id``: receivers read nothing and queue work with ``transaction.on_commit``
(the training side's sampler counts rankings by their id)."""


def submit_ranking(
    profile: AnnotatorProfile,
    task_id: int,
    answer: list,
    seconds_spent: float | None = None,
    viewport_width: int | None = None,
    language: str | None = None,
) -> tuple[Ranking, bool]:
    """Store an answer to a task reserved by this annotator; (ranking, created).

    ``answer``: an order (item ids, most to least stereotypical: a strict ranking) or
    tiers (lists of item ids judged equal, ``annotation.stats.tiers``), checked against
    the task's items and its study's question format (``annotation.rankings.tiers``).
    Idempotent: the same answer submitted again returns the stored ranking; another answer
    for a task the annotator ranked already is ``RankedBefore`` (the first one stands).
    The task row is locked first, so a submit racing its own retry stores one ranking.
    ``viewport_width``: the browser window's width in CSS pixels, when the client says.
    ``language``: the portal's language as the participant ranked (None: their
    participation's, read here). A new ranking re-applies the quality policy to the
    annotator (``standing``).
    """
    if profile.status == AnnotatorStatus.EXCLUDED:
        raise AnnotatorExcluded(excluded_message(profile))
    if not 0 < task_id <= MAX_ID:  # an id no row can have (a path takes any digits)
        raise TaskNotFound(gettext("Task %(id)s does not exist.") % {"id": task_id})
    with transaction.atomic():
        row = _LOCKED_TASK.first(task=task_id)
        if row is None:
            raise TaskNotFound(gettext("Task %(id)s does not exist.") % {"id": task_id})
        task = instance(RankingTask, row)
        question = row["study__question_format"], row["study__question_k"]
        assignment, existing_pk = _locked_reservation(task, profile)
        if existing_pk is not None or assignment is None:
            existing = Ranking.objects.filter(task=task, annotator=profile).first()
            if existing:
                shown = existing.shown_order
                given = _answer_tiers(task, profile, answer, shown, question)
                if given == tiers.of_ranking(existing.order, existing.tiers):
                    return existing, False
                raise RankedBefore(gettext("You already ranked this task differently."))
        if assignment is None:
            # A garbled answer is a 400; then that the task is not theirs, and nothing of
            # what it holds (its items are for whoever it is reserved for).
            answer_tiers.check_shape(answer)
            raise NotReserved(gettext("This task is not reserved for you; ask for the next task."))
        given = _answer_tiers(task, profile, answer, assignment.shown_order, question)
        if task.ranking_count >= task.overlap and not (task.is_gold or task.check_item_id):
            raise AlreadyRanked(gettext("This task already has all the rankings it needs."))
        with server_binding():  # prepared: parsed and planned once per connection
            ranking = Ranking.objects.create(
                task=task,
                annotator=profile,
                order=tiers.flatten(given),
                tiers=None if tiers.is_strict(given) else [list(t) for t in given],
                shown_order=assignment.shown_order,
                seconds_spent=seconds_spent,
                viewport_width=viewport_width,
                language=participation_language(profile) if language is None else language,
            )
            shown_at = {item_id: i for i, item_id in enumerate(assignment.shown_order)}
            RankedItem.objects.bulk_create(
                RankedItem(
                    ranking=ranking, item_id=item_id, position=i, shown_position=shown_at[item_id]
                )
                for i, tier in enumerate(given)
                for item_id in tier
            )
            RankingTask.objects.filter(pk=task.pk).update(ranking_count=F("ranking_count") + 1)
            Assignment.objects.filter(pk=assignment.pk).delete()
        overlap.queue_if_full(task, task.ranking_count + 1)  # a send after commit, no query
        ranking_stored.send(sender=Ranking, ranking_id=ranking.pk, study_id=task.study_id)
    standing.apply_policy(profile)
    return ranking, True


def _answer_tiers(task, profile, answer, shown: list[int], question) -> tiers.Tiers:
    """The answer's tiers, checked (``annotation.rankings.tiers.validate``), each tier's
    items in the order they were shown, so an answer has one stored form."""
    # A blinded task's order names its cards as the participant saw them: mapped back.
    answer = blinding.items_of_order(task, profile.pk, answer, shown)
    given = answer_tiers.validate(answer, set(shown), *question)
    at = {item: i for i, item in enumerate(shown)}
    return tuple(tuple(sorted(tier, key=at.__getitem__)) for tier in given)


TASK, PROFILE = Param("task", IntegerField()), Param("profile", IntegerField())


def _locked_task_query() -> QuerySet:
    """The task row, locked: a submit racing its retry, or an erasure, waits here."""
    return (
        RankingTask.objects.select_for_update(of=("self",))
        .filter(pk=TASK)
        .values(*columns(RankingTask), "study__question_format", "study__question_k")
    )


def _reservation_query() -> QuerySet:
    """The live reservation, row-locked, with the ranking already stored, if any; read in a
    statement after the task's lock, so what a transaction that held it did is seen."""
    ranked = Ranking.objects.filter(task=OuterRef("task"), annotator=OuterRef("annotator"))
    return (
        Assignment.objects.select_for_update(of=("self",))
        .filter(
            task_id=TASK,
            annotator_id=PROFILE,
            annotator__erased_at__isnull=True,
            reserved_until__gt=Param("now", DateTimeField()),
        )
        .annotate(ranked=Subquery(ranked.values("pk")[:1]))
        .values(*columns(Assignment), "ranked")[:1]
    )


_LOCKED_TASK, _RESERVATION = Prepared(_locked_task_query), Prepared(_reservation_query)


def _locked_reservation(
    task: RankingTask, profile: AnnotatorProfile
) -> tuple[Assignment | None, int | None]:
    """The annotator's live reservation of ``task``, row-locked, none once erased (an erasure
    then waits for this submit and deletes its ranking, or this submit finds nothing),
    and the id of their ranking of ``task`` if one is stored beside it."""
    row = _RESERVATION.first(task=task.pk, profile=profile.pk, now=timezone.now())
    if row is None:
        return None, None
    return instance(Assignment, row), row["ranked"]


def participation_language(profile: AnnotatorProfile) -> str:
    """The language a participant chose on the portal ("" for an account with no study
    link)."""
    found = Participation.objects.filter(annotator=profile).values_list("language", flat=True)
    return found.first() or ""
