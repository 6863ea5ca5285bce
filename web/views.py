"""Project-level views: the API's root and the plain 404/500/503 pages.

The error handlers answer JSON under ``/api/`` (what an API client can read) and
the portal's plain pages elsewhere; neither shows routes or tracebacks. An outage (the
database or the broker unreachable, a deadlock, a connection lost) is a 503 with
``Retry-After``, saying nothing was saved, instead of a 500: the request's transaction
rolled back, so trying again is safe. A database that refuses writes (read-only) is one.
"""

import sys

from django.conf import settings
from django.db import InterfaceError, InternalError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from django.urls import reverse
from django.utils import translation
from django.views import defaults
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as CacheConnectionError
from redis.exceptions import TimeoutError as CacheTimeoutError
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api_bodies import ParsedFirst

API_PREFIX = "/api/"


def _links(request: Request, names: dict[str, str | tuple[str, str]]) -> dict[str, str]:
    """Absolute URLs by label; a ``(url name, parameter)`` pair gives a URI template."""
    links = {}
    for label, target in names.items():
        if isinstance(target, tuple):
            name, param = target
            url = request.build_absolute_uri(reverse(name, kwargs={param: 0}))
            head, _, tail = url.rpartition("/0/")
            links[label] = f"{head}/{{{param}}}/{tail}"
        else:
            links[label] = request.build_absolute_uri(reverse(target))
    return links


class ApiRootView(ParsedFirst, APIView):
    """``/api/``: what the API offers this user (staff parts only for staff)."""

    permission_classes = [AllowAny]

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, operation_id="api_root")
    def get(self, request: Request) -> Response:
        root: dict = {
            "annotator": _links(
                request,
                {
                    "token": "api-token",
                    "logout": "api-logout",
                    "logout_all": "api-logout-all",
                    "me": "api-me",
                    "consent": "api-consent",
                    "next_task": "api-next-task",
                    "ranking": ("api-ranking", "task_id"),
                },
            ),
        }
        if request.user.is_staff:
            # The schema and its docs map every door of the API: staff only.
            root["schema"] = request.build_absolute_uri(reverse("schema"))
            root["docs"] = request.build_absolute_uri(reverse("api-docs"))
            root["staff"] = _links(
                request,
                {
                    "occupations": "staff-occupation-list",
                    "items": "staff-item-list",
                    "tasks": "staff-task-list",
                    "rankings": "staff-ranking-list",
                    "studies": "api-staff-studies",
                    "study_transition": ("api-staff-study-transition", "slug"),
                    "export_rankings": "api-export-rankings",
                    "export_pairs": "api-export-pairs",
                },
            )
            root["training"] = _links(
                request,
                {
                    "snapshots": "training-snapshots",
                    "runs": "training-runs",
                    "run": ("training-run", "run_id"),
                    "cancel_run": ("training-run-cancel", "run_id"),
                    "checkpoints": "training-checkpoints",
                    "promote": ("training-promote", "version"),
                    "rollback": "training-rollback",
                    "compare": "training-compare",
                },
            )
            root["training"]["compare"] += "?a={a}&b={b}"
        return Response(root)


def _why(exception: Exception | None) -> str:
    """What a refusal said (our ``Http404``/``PermissionDenied`` messages are written for the
    reader); "" for Django's own (a URL that matched nothing carries its route listing)."""
    message = exception.args[0] if exception is not None and exception.args else ""
    return message if isinstance(message, str) else ""


def _refusal_page(request: HttpRequest, template: str, status: int, why: str) -> HttpResponse:
    """A refusal in the site's style: why, and where to go next (staff: their dashboards;
    everyone else: the portal's start)."""
    staff = getattr(request, "user", None) is not None and request.user.is_staff
    context = {"why": why, "request_path": request.path, "staff": staff}
    # In English, the language these pages are written in, whatever a participant's page
    # had active (issue 39: their text is not in the catalogues yet).
    with translation.override(settings.LANGUAGE_CODE):
        page = loader.render_to_string(template, context, request)
    return HttpResponse(page, status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404: JSON under /api/, else templates/404.html with why (never the route listing)."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return _refusal_page(request, "404.html", 404, _why(exception))


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """403: JSON under /api/, else templates/403.html saying why and what to do next."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": _why(exception) or "Forbidden."}, status=403)
    return _refusal_page(request, "403.html", 403, _why(exception))


def not_allowed(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """405 outside /api/ (``require_POST`` answers a bare one): a page saying which methods
    the address takes, its ``Allow`` header kept."""
    allowed = response.get("Allow", "")
    why = f"This address does not take a {request.method} request"
    why += f" (it takes {allowed})." if allowed else "."
    page = _refusal_page(request, "405.html", 405, why)
    if allowed:
        page["Allow"] = allowed
    return page


OUTAGES = (OperationalError, InterfaceError, BrokerError, CacheConnectionError, CacheTimeoutError)
"""Errors of a service that is briefly unavailable, not of the code."""
RETRY_AFTER = 15
"""Seconds an outage's answer asks the client to wait (``Retry-After``)."""
UNAVAILABLE = "The study is briefly unavailable; nothing was saved. Please try again in a moment."
READ_ONLY = "25006"
"""PostgreSQL's SQLSTATE for a write refused by a read-only database (a standby, a server
set ``default_transaction_read_only`` while its disk is repaired): an outage too, though
Django raises it as an ``InternalError``, as it does for every error of that class."""


def is_outage(error: BaseException | None) -> bool:
    """Whether ``error`` says a service is unavailable for now (so a retry may succeed)."""
    if isinstance(error, OUTAGES):
        return True
    cause = getattr(error, "__cause__", None)  # the driver's error, which Django wrapped
    return isinstance(error, InternalError) and getattr(cause, "sqlstate", None) == READ_ONLY


def server_error(request: HttpRequest) -> HttpResponse:
    """500: JSON under /api/, else templates/500.html (the traceback goes to the log).
    The error an outage raised: 503 with ``Retry-After`` (templates/503.html)."""
    if is_outage(sys.exc_info()[1]):
        return unavailable(request)
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Server error."}, status=500)
    return defaults.server_error(request)


def unavailable(request: HttpRequest) -> HttpResponse:
    """503: the API's error shape, or a page rendered without the database (no request
    context: no session, no user) that sends a participant back to their task."""
    if request.path.startswith(API_PREFIX):
        response = JsonResponse({"detail": UNAVAILABLE}, status=503)
    else:
        page = loader.get_template("503.html").render({"message": UNAVAILABLE})
        response = HttpResponse(page, status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    return response
