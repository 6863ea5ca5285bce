"""Writes of an annotator's status: the quality policy applied, and staff reinstatement.

Every change is recorded (``StatusChange``: from, to, why, by whom, when). The
policy (``annotation/stats/policy.py``, overridden by
``STEREORANK["QUALITY_POLICY"]``) reads an annotator's rankings since their last
reinstatement, so a reinstated annotator starts afresh; it moves ``ok`` and
``warned`` either way and to ``excluded``, but never lifts an exclusion: only
staff do, with a reason. An exclusion releases the annotator's reservations and
screens a crowd participant out (so the portal gives them the study's screen-out code
and a way back to the platform); a reinstatement takes that screen-out back.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from annotation.errors import InvalidAnswer, StatusConflict
from annotation.models import AnnotatorProfile, AnnotatorStatus, StatusChange
from annotation.models.studies import Participation
from annotation.quality import selectors as quality_selectors
from annotation.stats.gold import annotator_quality
from annotation.stats.policy import Decision, Policy

NOTHING_FIRES = "no quality criterion fires any more"


def policy() -> Policy:
    """The configured rule: ``Policy``'s documented defaults with the settings' overrides."""
    overrides = settings.STEREORANK.get("QUALITY_POLICY") or {}
    try:
        return Policy(**overrides)
    except (TypeError, ValueError) as error:
        raise ImproperlyConfigured(f"STEREORANK['QUALITY_POLICY'] {overrides!r}: {error}") from None


def decide(profile: AnnotatorProfile) -> Decision:
    """The policy's decision on one annotator, from their rankings since reinstatement."""
    quality = quality_of(profile)
    if quality is None:
        return Decision(AnnotatorStatus.OK, ())
    return policy().decide(quality)


def quality_of(profile: AnnotatorProfile):
    """The annotator's quality figures (since reinstatement), or None without rankings;
    ``policy().fired(...)`` of them says which criteria fire."""
    inputs = quality_selectors.annotator_quality_inputs(profile)
    quality = annotator_quality(inputs.records, inputs.gold, inputs.checks)
    return quality.get(profile.user_id)


def apply_policy(profile: AnnotatorProfile) -> StatusChange | None:
    """Give the annotator the status the policy decides; the change made, if any.

    One query when nothing changes (the rankings the policy reads).
    """
    decision = decide(profile)
    if decision.status == profile.status or profile.status == AnnotatorStatus.EXCLUDED:
        return None
    return _move(profile, decision.status, "; ".join(decision.reasons) or NOTHING_FIRES)


def apply_policy_to_all(include_synthetic: bool = True) -> list[StatusChange]:
    """Re-apply the policy to every annotator who ranked (after a change of the rule)."""
    profiles = AnnotatorProfile.objects.filter(rankings__isnull=False).distinct().order_by("pk")
    if not include_synthetic:
        profiles = profiles.filter(is_synthetic=False)
    changes = [apply_policy(p) for p in profiles.select_related("user")]
    return [c for c in changes if c is not None]


def reinstate(profile: AnnotatorProfile, by, reason: str) -> StatusChange:
    """Staff lift an excluded or warned annotator back to ``ok``, saying why."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidAnswer("Say why the annotator is reinstated: the reason is recorded.")
    if by is None or not by.is_staff:
        raise StatusConflict("Only staff reinstate an annotator.")
    change = _move(profile, AnnotatorStatus.OK, reason, by=by)
    if change is None:
        raise StatusConflict("This annotator is not warned or excluded: nothing to reinstate.")
    return change


def reinstate_all(profiles, by, reason: str) -> list[StatusChange]:
    """Reinstate several annotators at once, all or none (one action, one reason): e.g.
    everyone a fault of the platform made fail its attention checks."""
    with transaction.atomic():
        return [reinstate(profile, by, reason) for profile in profiles]


def _move(profile: AnnotatorProfile, status: str, reason: str, by=None) -> StatusChange | None:
    """Move from the status ``profile`` holds to ``status`` and record it; None when the
    stored status is no longer the one held (compare and set: a concurrent change wins)."""
    previous = profile.status
    if previous == status:
        return None
    with transaction.atomic():
        moved = AnnotatorProfile.objects.filter(pk=profile.pk, status=previous).update(
            status=status
        )
        if not moved:
            profile.refresh_from_db(fields=["status"])
            return None
        change = StatusChange.objects.create(
            annotator=profile, previous=previous, status=status, reason=reason, by=by
        )
        if status == AnnotatorStatus.EXCLUDED:
            profile.assignments.all().delete()
            _participation(profile, Participation.Outcome.TAKING_PART).update(
                outcome=Participation.Outcome.SCREENED_OUT,
                screen_out_reason=Participation.ScreenOut.EXCLUDED,
                finished_at=change.created_at,
            )
        elif previous == AnnotatorStatus.EXCLUDED:
            _participation(profile, Participation.Outcome.SCREENED_OUT).filter(
                screen_out_reason=Participation.ScreenOut.EXCLUDED
            ).update(
                outcome=Participation.Outcome.TAKING_PART, screen_out_reason="", finished_at=None
            )
    profile.status = status
    return change


def _participation(profile: AnnotatorProfile, outcome: str):
    """The annotator's participation by an entry link, if any, while it has ``outcome``."""
    return Participation.objects.filter(annotator=profile, outcome=outcome)
