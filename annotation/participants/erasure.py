"""The right to erasure (GDPR art. 17): one annotator's data removed for good.

What goes: the demographics, the external ids of a recruitment (the keyed hash
and the platform's submission ids), the quota seats (they say which group the
person is in), the quality standing and its history (``StatusChange``: staff's
free-text reasons are about the person), the rankings with their ranked items,
the reservations, the API tokens; the account is deactivated and renamed, its
e-mail, names and last log-in blanked (docs/privacy.md lists all, each checked).
What stays: a deactivated account with no personal data (its consent history,
so the lawful processing before withdrawal can be shown) and one ``Erasure``
row that says when and how many rankings, never whose.

Rankings are deleted, not anonymised:

- A ranking is not anonymous once its annotator link is cut: its shown order,
  time spent and timestamp single it out for anyone who holds the access logs
  or the platform's submission times (GDPR recital 26). Stripped of all that, it
  is only its contribution to labels, which must go anyway.
- Deleted rankings cannot count by mistake: every reader (labels, exports,
  snapshots, agreement, the scheduler, ``counted_rankings``) sees them gone, with
  no flag that each reader would have to remember.
- No annotation is lost or counted twice: the tasks that held them are locked
  in id order (the lock ``services.submit_ranking`` takes), the rankings deleted
  and each task's ``ranking_count`` decremented in the same transaction, so
  ``ranking_count == rankings.count() <= overlap`` keeps holding and the freed
  slots go to other annotators, so the tasks still reach their overlap.
- Snapshots keep working: a snapshot freezes its aggregate labels, not its
  rankings, and ``last_ranking_id`` stays meaningful because ranking ids are
  never reused (PostgreSQL sequences; Django's SQLite tables are AUTOINCREMENT).
  A snapshot frozen before an erasure can no longer be rebuilt from the database
  (that is the point); its labels of k or more annotators stay as frozen (below),
  and ``selectors.erasures_after`` tells it that an erasure happened since.
- What a snapshot says of the person goes: its lineage names annotators by
  pseudonym (who was left out and why, reliability weights), and a label that pooled
  fewer than k annotators is close to the person's own answer. ``annotator_erased``
  is sent inside the deleting transaction, once the tasks are locked and before the
  rankings go, with the pseudonym, the profile id and the demographics as they were;
  the training app removes the pseudonym from every snapshot, the labels of fewer than
  k annotators from the snapshots that froze the person's rankings (saying so in their
  lineage) and the perspective reports that read them (``training.snapshots.erasure``).

Outside these tables (``traces``): the sessions, the log-in attempts, the admin's
history about the account, tokens and whatever else would go with the account, and,
once the erasure commits, the cached charts and reports and the throttle counters.
Stored quality reports are deleted (they name annotators by pseudonym); the next view
queues them again.

Two transactions, so that nothing can slip in between: the first marks the
profile erased (consent withdrawn, account closed, demographics and external ids
gone), after which ``assignment.next_task`` refuses it and ``services.submit_ranking``
finds no reservation of an erased annotator; the second deletes the reservations
and rankings. A submit already holding its reservation's row lock finishes
first, and its ranking is then deleted with the others. A ``next_task`` that passed
its consent check just before the first step may still leave a reservation; it
holds no slot (``task_selectors.live_reservations`` leaves erased annotators out) and no
submit accepts it. Should the second step
not run (a crash), the rankings already do not count (no consent), and erasing
again finishes it.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.dispatch import Signal
from django.utils import timezone

from annotation.errors import AlreadyErased
from annotation.models import (
    AnnotatorProfile,
    AnnotatorStatus,
    Erasure,
    Participation,
    QuotaSeat,
    Ranking,
    RankingTask,
    StatusChange,
)
from annotation.participants import traces
from annotation.quality import store as quality_store
from annotation.rankings.exports import pseudonym

# Sent inside the transaction that deletes the rankings, before they go, with
# ``pseudonym=``, ``annotator=`` (the profile id) and ``demographics=`` (as they were; None
# when a first, interrupted run already deleted them): a receiver removes what it keeps
# of the person, or the erasure rolls back.
annotator_erased = Signal()


def erase_annotator(profile: AnnotatorProfile, via: str) -> Erasure:
    """Erase one annotator (see the module docstring); ``AlreadyErased`` once all is gone."""
    demographics = None  # unknown when a first run already deleted them
    with transaction.atomic():
        profile = (
            AnnotatorProfile.objects.select_for_update(of=("self",))
            .select_related("user")
            .get(pk=profile.pk)
        )
        if profile.erased_at is None:
            demographics = dict(profile.demographics or {})
            profile.erased_at = timezone.now()
            profile.consents.active().update(withdrawn_at=profile.erased_at)
            _delete_personal_links(profile)
            profile.demographics = {}
            profile.status = AnnotatorStatus.OK
            profile.save(update_fields=["demographics", "erased_at", "status"])
            traces.forget_account(profile.user, profile)
            _deactivate(profile.user)
        elif not (profile.rankings.exists() or profile.assignments.exists()):
            raise AlreadyErased(
                f"This annotator's data was already erased on {profile.erased_at:%Y-%m-%d}."
            )
    with transaction.atomic():
        _lock_tasks(profile)
        annotator_erased.send(
            sender=Erasure,
            pseudonym=pseudonym(profile.user_id),
            annotator=profile.pk,
            demographics=demographics,
        )
        removed = _delete_rankings(profile)
        quality_store.forget_all()
        transaction.on_commit(lambda: traces.forget_cached(profile.user_id), robust=True)
        return Erasure.objects.create(rankings_removed=removed, via=via)


def _lock_tasks(profile: AnnotatorProfile) -> None:
    """Lock the tasks the annotator ranked or holds, in id order (the lock a submit takes):
    a submit in flight on one finishes first, and what it left is read after."""
    task_ids = set(profile.rankings.values_list("task_id", flat=True))
    task_ids |= set(profile.assignments.values_list("task_id", flat=True))
    list(
        RankingTask.objects.select_for_update().filter(pk__in=task_ids).order_by("pk").values("pk")
    )


def _delete_rankings(profile: AnnotatorProfile) -> int:
    """Delete the annotator's reservations and rankings (their tasks locked by
    ``_lock_tasks``), giving their tasks the slots back."""
    profile.assignments.all().delete()
    ranked = dict(profile.rankings.values_list("pk", "task_id"))
    Ranking.objects.filter(pk__in=ranked).delete()  # RankedItem rows cascade
    # One ranking per (task, annotator): each task loses exactly one.
    RankingTask.objects.filter(pk__in=ranked.values()).update(ranking_count=F("ranking_count") - 1)
    return len(ranked)


def _delete_personal_links(profile: AnnotatorProfile) -> None:
    """Rows that tie the profile to a person: the crowd platform's ids (the participant
    could then take part again; the platforms keep their own record), the quota
    seats (they say which group the person is in) and the standing's history."""
    Participation.objects.filter(annotator=profile).delete()
    QuotaSeat.objects.filter(annotator=profile).delete()
    StatusChange.objects.filter(annotator=profile).delete()


def _deactivate(user: AbstractBaseUser) -> None:
    """No log-in, no name: the account is a shell that holds the consent history (its
    tokens went with ``traces.forget_account``)."""
    user.username = f"erased-{uuid.uuid4().hex}"
    for name in ("email", "first_name", "last_name"):
        if hasattr(user, name):
            setattr(user, name, "")
    user.set_unusable_password()
    user.is_active = False
    user.save()
