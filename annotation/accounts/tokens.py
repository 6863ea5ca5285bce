"""API tokens: django-rest-knox's model, hashed at rest, with an expiry, one per log-in.

Each ``POST /api/auth/token/`` issues a new token (so each device holds its own, and
logging one out leaves the others); only its SHA-512 digest is stored (knox's ``digest``
column, the primary key) with its first characters (``token_key``, to tell tokens
apart in the admin), so a token read from the database authenticates nobody. The plain
token is in the answer to the log-in and nowhere else. Tokens expire after
``STEREORANK_TOKEN_TTL_HOURS`` (``REST_KNOX["TOKEN_TTL"]``); a person revokes theirs
(``/api/auth/logout/``, ``/api/auth/logout/all/``), staff any (the admin).

``authenticated`` runs on every API request: one query by the digest, compiled once
(``core.prepared``), bringing the user and the annotator profile along.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils import timezone
from knox.crypto import hash_token
from knox.models import AuthToken
from knox.settings import knox_settings

from annotation.models import AnnotatorProfile
from core.prepared import Param, Prepared, columns, instance


def issue(user) -> tuple[AuthToken, str]:
    """A new token for ``user`` and its plain text (to show once: it is kept nowhere).
    Expired tokens, anyone's, are deleted on the way."""
    AuthToken.objects.filter(expiry__lt=timezone.now()).delete()
    return AuthToken.objects.create(user=user, expiry=knox_settings.TOKEN_TTL)


def _token_query() -> QuerySet:
    user = get_user_model()
    return AuthToken.objects.filter(digest=Param("digest", AuthToken._meta.pk)).values(
        *columns(AuthToken),
        *columns(user, "user__"),
        *columns(AnnotatorProfile, "user__annotator__"),
        "user__annotator__participation__language",
    )[:1]


_TOKEN = Prepared(_token_query)


def authenticated(plain: str) -> AuthToken | None:
    """The live (unexpired) token whose plain text is ``plain``, with its user and the
    user's annotator profile (one query); None for an unknown, expired or revoked one."""
    row = _TOKEN.first(digest=hash_token(plain))
    if row is None:
        return None
    token = instance(AuthToken, row)
    if token.expiry is not None and token.expiry <= timezone.now():
        return None
    token.user = instance(get_user_model(), row, "user__")
    profile = instance(AnnotatorProfile, row, "user__annotator__")
    if profile is not None:
        # the portal language of their participation, for the rankings they submit here
        profile.portal_language = row["user__annotator__participation__language"] or ""
        token.user.annotator = profile
    return token


def revoke(token: AuthToken) -> None:
    """This token authenticates no more."""
    AuthToken.objects.filter(digest=token.digest).delete()


def revoke_all(user) -> int:
    """None of ``user``'s tokens authenticates any more; how many there were."""
    deleted, _ = AuthToken.objects.filter(user=user).delete()
    return deleted
