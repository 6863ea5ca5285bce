"""Recruitment from crowd platforms: entry links, pseudonymous participants, completion.

A study's entry link is ``/join/<slug>/`` plus the platform's ids:

- Prolific: ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID`` (the study URL set on
  Prolific with "URL parameters": ``?PROLIFIC_PID={{%PROLIFIC_PID%}}&...``);
- Amazon Mechanical Turk: ``workerId``, ``assignmentId``, ``hitId`` (what MTurk
  appends to an external link; a HIT preview sends
  ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` and no worker);
- any other platform: ``pid``.

Who may come in, and with which key, is ``annotation.participants.admission``: a
participation's own secret is its key; the participant id is only recorded, as
HMAC-SHA256(``STEREORANK["EXTERNAL_ID_KEY"]``, "platform:id"), with the platform's
session id (Prolific SESSION_ID, MTurk assignmentId) beside it. A new participant gets
an annotator with a random name and no password. A participant who declined consent
may take it back until they follow the link back to the platform. The completion code
comes once no task is left, and only after the study's minimum work
(``Study.minimum_rankings``; blank: one six-card ranking's time in the study's format,
``minimum_answers``). A new participant's quota is ``default_quota``: the study's own, or
``STEREORANK_ANNOTATOR_QUOTA`` rankings' time in its format (``annotation.stats.effort``).

New participants per client IP are rate-limited (DRF's throttle over the cache,
scope ``join``); refusals are logged with a keyed hash of the IP, not the IP.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext, ngettext

from annotation.errors import CannotReconsider, InvalidLink, NotFinished
from annotation.models import AnnotatorProfile
from annotation.models.studies import Participation, Study
from annotation.rankings import selectors
from annotation.stats import effort
from core.throttling import SimpleRateThrottle

log = logging.getLogger(__name__)

# Per platform: the query parameters of (participant id, session id, platform study id).
PLATFORM_PARAMS: dict[str, tuple[str, str | None, str | None]] = {
    Study.Platform.PROLIFIC: ("PROLIFIC_PID", "SESSION_ID", "STUDY_ID"),
    Study.Platform.MTURK: ("workerId", "assignmentId", "hitId"),
    Study.Platform.GENERIC: ("pid", None, None),
}
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
PROLIFIC_COMPLETION = "https://app.prolific.com/submissions/complete?cc={code}"
MAX_ID_LENGTH = 200


@dataclass(frozen=True)
class Arrival:
    """What an entry link says about who arrives."""

    external_id: str
    session_id: str = ""
    platform_study_id: str = ""
    preview: bool = False


def parse_arrival(platform: str, query: Mapping[str, str]) -> Arrival:
    """The platform's ids from an entry link's query; ``InvalidLink`` says what is missing."""
    id_name, session_name, study_name = PLATFORM_PARAMS[platform]
    if platform == Study.Platform.MTURK and query.get("assignmentId") == MTURK_PREVIEW:
        return Arrival(external_id="", preview=True)
    values = {}
    for name in filter(None, (id_name, session_name, study_name)):
        value = (query.get(name) or "").strip()
        if not value or "{" in value or "%" in value:
            raise InvalidLink(
                gettext(
                    "This link lacks the '%(name)s' the platform adds: please start again "
                    "from the platform's page, or contact the researchers."
                )
                % {"name": name}
            )
        if len(value) > MAX_ID_LENGTH:
            raise InvalidLink(
                gettext("The link's '%(name)s' is longer than %(limit)s characters.")
                % {"name": name, "limit": MAX_ID_LENGTH}
            )
        values[name] = value
    return Arrival(
        external_id=values[id_name],
        session_id=values.get(session_name, ""),
        platform_study_id=values.get(study_name, ""),
    )


def external_id_hash(platform: str, external_id: str) -> str:
    """HMAC-SHA256 of "platform:id" under the external-id key: the only form the id is kept in."""
    key = settings.STEREORANK["EXTERNAL_ID_KEY"].encode()
    return hmac.new(key, f"{platform}:{external_id}".encode(), hashlib.sha256).hexdigest()


def participation_of(profile: AnnotatorProfile) -> Participation | None:
    """The profile's participation in a study, if it came by a link."""
    try:
        return profile.participation
    except Participation.DoesNotExist:
        return None


def landing(participation: Participation) -> str:
    """The portal page (URL name) a participant's link leads to now."""
    if participation.outcome == Participation.Outcome.COMPLETED:
        return "portal:complete"
    if participation.outcome == Participation.Outcome.SCREENED_OUT:
        return "portal:screened_out"
    if not selectors.has_consent(participation.annotator):
        return "portal:consent"
    return "portal:home"


def in_format(study: Study, rankings: int) -> int:
    """The answers of ``study``'s format that take as long as ``rankings`` strict rankings
    of ``STEREORANK_TASK_SIZE`` cards (``annotation.stats.effort``)."""
    reference = settings.STEREORANK["TASK_SIZE"]
    size = study.task_size or reference
    return effort.answers_for(rankings, study.question_format, size, study.question_k, reference)


def default_quota(study: Study | None) -> int:
    """A new participant's quota: the study's own, else ``STEREORANK_ANNOTATOR_QUOTA``
    rankings' time in its format."""
    quota = settings.STEREORANK["ANNOTATOR_QUOTA"]
    if study is None:
        return quota
    return study.tasks_per_participant or in_format(study, quota)


def minimum_answers(study: Study) -> int:
    """The study's minimum: its own, else one ranking's time in its format."""
    return study.minimum_rankings or in_format(study, 1)


def minimum_work(participation: Participation) -> int:
    """Answers the participant stores before the completion code: the study's minimum,
    never more than their quota."""
    return max(1, min(minimum_answers(participation.study), participation.annotator.quota))


def complete(participation: Participation) -> Participation:
    """Mark the participation completed (once): the caller checked that no task is left;
    ``NotFinished`` before the study's minimum work."""
    needed, done = minimum_work(participation), participation.annotator.rankings.count()
    if participation.outcome == Participation.Outcome.TAKING_PART and done < needed:
        raise NotFinished(
            ngettext(
                "The completion code comes after %(needed)s ranked task (you have ranked "
                "%(done)s). No task is free for you right now: please try again in a few "
                "minutes, or write to the researchers.",
                "The completion code comes after %(needed)s ranked tasks (you have ranked "
                "%(done)s). No task is free for you right now: please try again in a few "
                "minutes, or write to the researchers.",
                needed,
            )
            % {"needed": needed, "done": done}
        )
    if participation.outcome == Participation.Outcome.TAKING_PART:
        participation.outcome = Participation.Outcome.COMPLETED
        participation.finished_at = timezone.now()
        participation.save(update_fields=["outcome", "finished_at"])
    return participation


def screen_out(participation: Participation, reason: str) -> Participation:
    """Mark the participant screened out (declined consent, group full); a completed
    participation stays completed."""
    if participation.outcome == Participation.Outcome.TAKING_PART:
        participation.outcome = Participation.Outcome.SCREENED_OUT
        participation.screen_out_reason = reason
        participation.finished_at = timezone.now()
        participation.save(update_fields=["outcome", "screen_out_reason", "finished_at"])
    return participation


def can_reconsider(participation: Participation) -> bool:
    """Whether a screen-out can be taken back: a declined consent, before leaving."""
    return (
        participation.outcome == Participation.Outcome.SCREENED_OUT
        and participation.screen_out_reason == Participation.ScreenOut.DECLINED_CONSENT
        and participation.left_at is None
    )


def reconsider(participation: Participation) -> Participation:
    """Take back a declined consent (a mis-tap): the participant is taking part again and
    goes back to the consent text; ``CannotReconsider`` once they left or for a full group."""
    if not can_reconsider(participation):
        raise CannotReconsider(
            gettext("You can no longer change this answer here: you went back to the platform.")
            if participation.left_at
            else gettext("There is no declined consent to take back.")
        )
    participation.outcome = Participation.Outcome.TAKING_PART
    participation.screen_out_reason = ""
    participation.finished_at = None
    participation.save(update_fields=["outcome", "screen_out_reason", "finished_at"])
    return participation


def leave(participation: Participation) -> Participation:
    """Record that a finished participant followed the link back to the platform (once)."""
    if participation.outcome != Participation.Outcome.TAKING_PART and not participation.left_at:
        participation.left_at = timezone.now()
        participation.save(update_fields=["left_at"])
    return participation


def entry_link(study: Study, site_url: str) -> str:
    """The entry link to paste into the study's platform, on the site at ``site_url``
    (scheme and host): Prolific's URL parameters, MTurk's bare address (MTurk appends
    its ids), ``?pid={pid}`` elsewhere (whoever sends it puts each participant's id in
    place of ``{pid}``; left as is, ``parse_arrival`` refuses it)."""
    base = f"{site_url.rstrip('/')}/join/{study.slug}/"
    if study.platform == Study.Platform.PROLIFIC:
        return base + (
            "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
        )
    if study.platform == Study.Platform.MTURK:
        return base
    return base + "?pid={pid}"


def exit_link(study: Study, code: str, url: str) -> str:
    """The address a finished participant goes to, ``{code}`` filled in ("" when none)."""
    if not url and study.platform == Study.Platform.PROLIFIC and code:
        url = PROLIFIC_COMPLETION
    return url.replace("{code}", code) if url else ""


class JoinThrottle(SimpleRateThrottle):
    """New participants per client IP (``DEFAULT_THROTTLE_RATES["join"]``); the IP is the
    one DRF reads, so ``NUM_PROXIES`` must match the proxies in front."""

    scope = "join"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def allow_new_participant(request, study: Study) -> bool:
    """Whether this client may create one more participant now; a refusal is logged."""
    throttle = JoinThrottle()
    if throttle.allow_request(request, None):
        return True
    ip = throttle.get_ident(request) or ""
    key = settings.STEREORANK["EXTERNAL_ID_KEY"].encode()
    log.warning(
        "study %s: new participants from ip %s throttled (rate %s)",
        study.slug,
        hmac.new(key, ip.encode(), hashlib.sha256).hexdigest()[:12],
        throttle.rate,
    )
    return False
