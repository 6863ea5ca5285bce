"""Who may come in: a participation's own secret is its key; the crowd id is only recorded.

A participant joins a study by posting its entry link's consent page
(``annotation.portal.entry_views.join``; a GET logs nobody in). The participation is
made with a random secret (``secrets.token_urlsafe``, 256 bits) that the browser which
joined keeps in a signed cookie and the participant in a resume link
(``annotation.portal.device``). Only SHA-256 of the secret is stored
(``Participation.secret_hash``): a random 256-bit token needs no slow hash, there is
nothing to guess, and a copy of the table gives nobody a key.

- The browser that joined comes back to its participation with the same link (its
  cookie, or its session while logged in); the resume link brings the participant back
  on any device.
- A crowd id (Prolific's PROLIFIC_PID, MTurk's workerId, ``pid``) is never a key:
  a second device arriving with it gets a new, empty participation marked
  ``duplicate`` for the researchers, never the first one's data.
- Prolific gives a new SESSION_ID when an earlier session was returned or timed out: on
  the same browser the participation continues under it. MTurk pays each assignment:
  the same worker on another assignment is refused (``AlreadyTookPart``).
- The join page's form carries a candidate secret signed with a timestamp
  (``django.core.signing``) and bound to the study, the crowd id and the browser it was
  issued for (all three in the signature's salt; the browser's part is its CSRF secret,
  which Django keeps in that browser's cookie and rotates at log-in), so only secrets this
  server issued for this arrival, in this browser, are accepted: another browser, or the
  same one once its participant logged in, cannot post it. Once its participation exists
  the form is spent: only a second post of it within ``DOUBLE_POST_SECONDS`` (a double
  click, both posts in flight with the page's cookie) reaches that participation.
- The portal's sign-up page admits to a study only where its owner turned open sign-up
  on (``Study.open_signup``, off by default; ``signup_study``).
- Participations made before secrets (``secret_hash`` null) resume only in a session
  that already holds them, which then gets a secret (``issue_secret``); elsewhere
  their crowd id makes a duplicate.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import uuid
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotation.errors import AlreadyTookPart, InvalidLink, SignupClosed, StudyClosed
from annotation.models import AnnotatorProfile
from annotation.models.studies import DEFAULT_STUDY_SLUG, Participation, Study
from annotation.participants.recruitment import Arrival, default_quota, external_id_hash
from annotation.rankings.exports import pseudonym

log = logging.getLogger(__name__)

SECRET_BYTES = 32
FORM_SALT = "stereorank.participants.join-form"
FORM_MAX_AGE = 24 * 60 * 60
"""Seconds a join page's form stays valid (then the link is opened again)."""
DOUBLE_POST_SECONDS = 30
"""How long after its participation was made a join form still reaches it: the second
post of a double click, sent before the first one's answer (and its cookie) came back."""


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def secret_hash(secret: str) -> str:
    """The stored form of a secret: SHA-256, hex."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _form_signer(study: Study, arrival: Arrival, browser: str) -> signing.TimestampSigner:
    """Signs a join form for one study, one crowd id and one browser (``browser``: a secret
    that only the browser which opened the page holds, its CSRF secret): a form posted to
    another study's link, with another crowd id or from another browser does not verify."""
    crowd_hash = external_id_hash(study.platform, arrival.external_id)
    return signing.TimestampSigner(salt=f"{FORM_SALT}:{study.pk}:{crowd_hash}:{browser}")


def form_token(study: Study, arrival: Arrival, browser: str) -> str:
    """A join page's candidate secret for this arrival and browser, signed with the time
    it was issued."""
    return _form_signer(study, arrival, browser).sign(new_secret())


def secret_of_form(study: Study, arrival: Arrival, token: str, browser: str) -> str:
    """The secret a join form carries; ``InvalidLink`` when it was not issued here for this
    study, crowd id and browser, was changed, or is older than ``FORM_MAX_AGE``."""
    try:
        return _form_signer(study, arrival, browser).unsign(token, max_age=FORM_MAX_AGE)
    except signing.BadSignature:  # SignatureExpired included
        raise InvalidLink(
            gettext("This page is out of date: please open the study's link again.")
        ) from None


def by_secret(study: Study, secret: str) -> Participation | None:
    """The participation in ``study`` whose secret this is; None for any other string."""
    if not secret:
        return None
    return (
        Participation.objects.select_related("annotator__user", "study")
        .filter(study=study, secret_hash=secret_hash(secret))
        .first()
    )


def matches(participation: Participation | None, study: Study, arrival: Arrival) -> bool:
    """Whether ``participation`` is this study's and came with this arrival's crowd id."""
    return (
        participation is not None
        and participation.study_id == study.pk
        and participation.external_id_hash == external_id_hash(study.platform, arrival.external_id)
    )


def continue_session(participation: Participation, arrival: Arrival) -> Participation:
    """A returning participant's platform session: another Prolific session continues (the
    new id recorded while taking part); another MTurk assignment is ``AlreadyTookPart``."""
    if participation.session_id == arrival.session_id:
        return participation
    if participation.study.platform != Study.Platform.PROLIFIC:
        raise AlreadyTookPart(gettext("You have already taken part in this study: thank you."))
    if participation.outcome == Participation.Outcome.TAKING_PART:
        participation.session_id = arrival.session_id
        participation.save(update_fields=["session_id"])
    return participation


def returning(study: Study, arrival: Arrival, held: str) -> Participation | None:
    """The participation the secret this browser ``held`` opens in ``study`` for this crowd
    id; None when it opens none (a secret of another crowd id opens nothing: another
    person on a shared browser)."""
    found = by_secret(study, held)
    return continue_session(found, arrival) if matches(found, study, arrival) else None


def by_form(study: Study, arrival: Arrival, secret: str) -> Participation | None:
    """The participation a join form's ``secret`` made, for a second post of that form:
    only for its own crowd id and only within ``DOUBLE_POST_SECONDS`` of its making;
    None otherwise (the form is spent: see ``spent``)."""
    found = by_secret(study, secret)
    if not matches(found, study, arrival):
        return None
    if timezone.now() - found.started_at > timedelta(seconds=DOUBLE_POST_SECONDS):
        return None
    return continue_session(found, arrival)


def spent(secret: str) -> bool:
    """Whether a participation (of any study) holds ``secret`` already: its form opens
    nothing more."""
    return Participation.objects.filter(secret_hash=secret_hash(secret)).exists()


def _first(study: Study, crowd_hash: str) -> Participation | None:
    return Participation.objects.filter(
        study=study, external_id_hash=crowd_hash, duplicate=False
    ).first()


def check_newcomer(study: Study, arrival: Arrival) -> None:
    """What refuses a newcomer before they read the consent: a study that is not open
    (``StudyClosed``), an MTurk worker on another assignment (``AlreadyTookPart``)."""
    if not study.is_open:
        raise StudyClosed(gettext("This study is closed: thank you for your interest."))
    if study.platform == Study.Platform.MTURK:
        first = _first(study, external_id_hash(study.platform, arrival.external_id))
        if first is not None and first.session_id != arrival.session_id:
            raise AlreadyTookPart(gettext("You have already taken part in this study: thank you."))


def enroll(study: Study, arrival: Arrival, secret: str | None = None) -> Participation:
    """A new pseudonymous annotator (random name, no password) holding ``secret`` (a new
    one when None): a ``duplicate`` when the crowd id has a participation in the study
    already. The same secret twice (a double click) gives one participation. Refused as
    ``check_newcomer`` says."""
    check_newcomer(study, arrival)
    secret = secret or new_secret()
    crowd_hash = external_id_hash(study.platform, arrival.external_id)
    for duplicate in (_first(study, crowd_hash) is not None, True):
        try:
            participation = _create(study, arrival, crowd_hash, secret_hash(secret), duplicate)
        except IntegrityError:
            if spent(secret):
                same = by_form(study, arrival, secret)
                if same is None:  # a replayed form: its participation is another's
                    raise InvalidLink(
                        gettext("This page was used already: please open the study's link again.")
                    ) from None
                return same  # the same form, posted twice at once
            if duplicate:
                raise
            # else another device with this crowd id came first, just now: a duplicate
        else:
            break
    name = pseudonym(participation.annotator.user_id)
    if duplicate:
        log.warning("study %s: participant %s enrolled as a duplicate crowd id", study.slug, name)
    else:
        log.info("study %s: participant %s enrolled", study.slug, name)
    return participation


def _create(
    study: Study, arrival: Arrival, crowd_hash: str, key: str, duplicate: bool
) -> Participation:
    with transaction.atomic():
        user = get_user_model().objects.create_user(f"p-{uuid.uuid4().hex[:16]}")
        user.set_unusable_password()
        user.save(update_fields=["password"])
        profile = AnnotatorProfile.objects.create(
            user=user, quota=default_quota(study), study=study
        )
        return Participation.objects.create(
            study=study,
            annotator=profile,
            external_id_hash=crowd_hash,
            secret_hash=key,
            duplicate=duplicate,
            session_id=arrival.session_id,
            platform_study_id=arrival.platform_study_id,
        )


def issue_secret(participation: Participation) -> str | None:
    """A secret for a participation made before secrets, given to the session that holds
    it; None when it has one already (two pages at once: the first one wins)."""
    if participation.secret_hash is not None:
        return None
    secret = new_secret()
    updated = Participation.objects.filter(pk=participation.pk, secret_hash__isnull=True).update(
        secret_hash=secret_hash(secret)
    )
    if not updated:
        return None
    participation.secret_hash = secret_hash(secret)
    return secret


def signup_study(slug: str | None) -> Study:
    """The study the portal's sign-up page joins: the one named, else the default one;
    ``SignupClosed`` unless it is open and its owner turned open sign-up on (an unknown
    slug reads the same)."""
    study = Study.objects.filter(slug=slug or DEFAULT_STUDY_SLUG).first()
    if study is None or not (study.open_signup and study.is_open):
        raise SignupClosed(
            gettext(
                "Sign-up is closed: this study is joined by the link the researchers sent "
                "you (for example from Prolific), or with an account they made for you."
            )
        )
    return study
