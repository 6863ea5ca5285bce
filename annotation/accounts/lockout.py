"""Password lockout: who is asking, the answer a locked-out person gets, unlocking.

Every password door (the portal's log-in, the admin's, the API's token endpoint) calls
``django.contrib.auth.authenticate``, where django-axes' backend refuses, until
``STEREORANK_LOCKOUT_MINUTES`` have passed since the last failure (``AXES_*`` and
``LOCKOUT_*`` in web/settings.py):

- an (account, address) pair after ``STEREORANK_LOCKOUT_FAILURES`` (10) failures: axes'
  own count. One address is never locked for everyone by one person's mistakes: a lab
  room, a university's NAT or a wrong proxy count puts many people behind one address;
- an account from every address after ``STEREORANK_LOCKOUT_ACCOUNT_FAILURES`` (50): a
  guesser with many addresses (higher, so that a stranger cannot lock anyone out
  cheaply);
- an address after failures on ``STEREORANK_LOCKOUT_ADDRESS_ACCOUNTS`` (20) distinct
  accounts: a password spray. Axes counts failures per parameter set, not distinct
  accounts, so these two counts are ours (``LabSafeHandler``), over axes' own records.

Axes counts in the database, so a lockout holds while Redis is down. A locked-out
person is told so, and for how long; staff lift it with ``manage.py unlock``.
"""

from __future__ import annotations

import ipaddress
import math

from axes.handlers.database import AxesDatabaseHandler
from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
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


class LabSafeHandler(AxesDatabaseHandler):
    """axes' database handler (the pair's count), and the account's and the address's
    counts over its records of failures within the cool-off."""

    def is_locked(self, request, credentials: dict | None = None) -> bool:
        if super().is_locked(request, credentials):
            return True
        if not settings.AXES_LOCK_OUT_AT_FAILURE:
            return False
        recent = AccessAttempt.objects.filter(
            attempt_time__gte=timezone.now() - get_cool_off(request), failures_since_start__gt=0
        )
        username = get_client_username(request, credentials)
        if username:
            total = recent.filter(username=username).aggregate(n=Sum("failures_since_start"))
            if (total["n"] or 0) >= settings.LOCKOUT_ACCOUNT_FAILURES:
                return True
        address = getattr(request, "axes_ip_address", None) or client_address(request)
        if not address:
            return False
        accounts = recent.filter(ip_address=address).values("username").distinct().count()
        return accounts >= settings.LOCKOUT_ADDRESS_ACCOUNTS

    def user_login_failed(self, sender, credentials: dict, request=None, **kwargs):
        """Axes records the failure and flags a lockout by the pair's count; a lockout by
        the account's or the address's count is flagged here, so it gets the same page."""
        super().user_login_failed(sender, credentials, request, **kwargs)
        flagged = request is None or getattr(request, "axes_locked_out", False)
        if not flagged and self.is_locked(request, credentials):
            request.axes_locked_out = True
            request.axes_credentials = credentials
