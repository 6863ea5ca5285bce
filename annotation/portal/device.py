"""A participation's key on the participant's side: the cookie of the browser that joined,
and the resume link (``annotation.participants.admission`` says what the key opens).

One cookie per study, ``stereorank-p-<slug>``, holds the participation's secret, signed
(``HttpResponse.set_signed_cookie``: a cookie changed in the browser is ignored before
any query), HttpOnly, SameSite=Lax, Secure where the session cookie is, for
``COOKIE_DAYS`` days: the same browser comes back with the same link after its
session ended. It is kept at log-out (a participant on a shared computer comes back
only with their own link: a secret of another crowd id opens nothing) and deleted at
erasure. The resume link (``/join/<slug>/resume/<secret>/``) carries the same secret,
for the participant to keep: it opens the participation on any device (after a
confirming POST), and it is shown only on the browser that holds the cookie.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from annotation.models.studies import Participation, Study
from annotation.participants import admission

COOKIE_DAYS = 60
SALT = "stereorank.portal.participant"


def cookie_name(study: Study) -> str:
    return f"stereorank-p-{study.slug}"


def held_secret(request: HttpRequest, study: Study) -> str:
    """The secret this browser holds for ``study`` ("" when none, or a changed cookie)."""
    return request.get_signed_cookie(
        cookie_name(study), default="", salt=SALT, max_age=COOKIE_DAYS * 24 * 60 * 60
    )


def remember(response: HttpResponse, study: Study, secret: str) -> HttpResponse:
    """Keep ``secret`` in this browser for ``study``."""
    response.set_signed_cookie(
        cookie_name(study),
        secret,
        salt=SALT,
        max_age=COOKIE_DAYS * 24 * 60 * 60,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


def forget(response: HttpResponse, study: Study) -> HttpResponse:
    response.delete_cookie(cookie_name(study), samesite="Lax")
    return response


def resume_link(request: HttpRequest, participation: Participation, secret: str = "") -> str:
    """The participant's resume link, from ``secret`` or the one this browser holds ("" when
    it holds none, or another participation's)."""
    secret = secret or held_secret(request, participation.study)
    if not secret or participation.secret_hash != admission.secret_hash(secret):
        return ""
    return request.build_absolute_uri(
        reverse("portal:resume", args=[participation.study.slug, secret])
    )
