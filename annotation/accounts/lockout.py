"""Password lockout: who is asking, the answer a locked-out person gets, unlocking.

Every password door (the portal's log-in, the admin's, the API's token endpoint) calls
``django.contrib.auth.authenticate``, where django-axes' backend refuses an account or
an address with too many recent failures (``AXES_*`` in web/settings.py:
``STEREORANK_LOCKOUT_FAILURES`` per account and per address, a cool-off of
``STEREORANK_LOCKOUT_MINUTES`` after the last failure). Axes counts in the database, so a
lockout holds while Redis is down. A locked-out person is told so, and for how long;
staff lift it with ``manage.py unlock``.
"""

from __future__ import annotations

import ipaddress
import math

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework.throttling import BaseThrottle

API_PREFIX = "/api/"
"""Under it the answer is JSON (as web.views answers errors)."""


def client_address(request: HttpRequest) -> str | None:
    """The client's address as the throttles read it (``REMOTE_ADDR``; behind
    ``STEREORANK_NUM_PROXIES`` proxies, the one they add to X-Forwarded-For), so a
    client cannot forge a header to escape the per-address count. None when unreadable."""
    found = BaseThrottle().get_ident(request)
    try:
        return str(ipaddress.ip_address(found))
    except ValueError:
        remote = request.META.get("REMOTE_ADDR")
        return remote or None


def cool_off_minutes(request: HttpRequest | None = None) -> int:
    """The cool-off, in whole minutes (rounded up)."""
    delta = get_cool_off(request)
    return math.ceil(delta.total_seconds() / 60) if delta else 0


def message(request: HttpRequest | None = None) -> str:
    """What a locked-out person reads."""
    minutes = cool_off_minutes(request)
    return (
        "Too many failed log-ins for this account or from this address: log-ins are "
        f"refused until {minutes} minutes have passed since the last failed one (each "
        "new try starts the wait again). If you forgot your password, ask the study team; "
        "they can also lift the lock."
    )


def locked_out(request: HttpRequest) -> bool:
    """Whether axes refused or locked the last ``authenticate`` on this request."""
    return bool(getattr(request, "axes_locked_out", False))


def lockout_response(request: HttpRequest, original_response=None, credentials=None):
    """The answer to a locked-out log-in (``AXES_LOCKOUT_CALLABLE``): 429 with
    Retry-After; JSON ``{"detail": ...}`` under /api/, the portal's page elsewhere."""
    text = message(request)
    if request.path.startswith(API_PREFIX):
        response: HttpResponse = JsonResponse({"detail": text}, status=429)
    else:
        response = render(request, "portal/locked_out.html", {"message": text}, status=429)
    response["Retry-After"] = str(cool_off_minutes(request) * 60)
    return response


def unlock(username: str | None = None, address: str | None = None) -> int:
    """Forget the failures of ``username`` and/or of ``address`` (both: either); the
    number of records removed."""
    if username and address:
        return AxesProxyHandler.reset_attempts(
            username=username, ip_address=address, ip_or_username=True
        )
    return AxesProxyHandler.reset_attempts(username=username, ip_address=address)
