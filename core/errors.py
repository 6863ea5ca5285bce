"""The project's errors and the one place per interface that turns them into answers.

Services raise a ``StereorankError`` subclass whose message a person can act
on; they never carry an HTTP status. The kind of refusal is a mix-in
(``NotFound``, ``Forbidden``, ``Conflict``; anything else is invalid input),
and each interface translates it once:

- the API: ``api_exception_handler`` (DRF's ``EXCEPTION_HANDLER``): 404, 403,
  409 or 400 with ``{"detail": message}``;
- the dashboards: ``refusals_as_messages``: the message on the next page;
- the commands: ``core.commands.ServiceCommand``: one line on stderr, exit 1.

Any other exception is a bug and stays loud: a 500 page and a logged traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class StereorankError(Exception):
    """A request the project refuses, with a message that says why (invalid input by default)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class NotFound(StereorankError):
    """What was asked for does not exist."""


class Forbidden(StereorankError):
    """The caller may not do this (now)."""


class Conflict(StereorankError):
    """The request clashes with the current state (already done, already active, full)."""


def http_status(error: StereorankError) -> int:
    """The HTTP status of a refusal, from its kind."""
    for kind, code in (
        (NotFound, status.HTTP_404_NOT_FOUND),
        (Forbidden, status.HTTP_403_FORBIDDEN),
        (Conflict, status.HTTP_409_CONFLICT),
    ):
        if isinstance(error, kind):
            return code
    return status.HTTP_400_BAD_REQUEST


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """DRF's handler, plus the project's errors as ``{"detail": message}`` with their status."""
    if isinstance(exc, StereorankError):
        return Response({"detail": exc.message}, status=http_status(exc))
    return exception_handler(exc, context)


def refusals_as_messages(back: str) -> Callable[[Callable], Callable]:
    """Dashboard views: a refused service call becomes an error message shown on the
    page named ``back`` (a URL name), where the view would have gone on success."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            try:
                return view(request, *args, **kwargs)
            except StereorankError as error:
                messages.error(request, error.message)
                return redirect(back)

        return wrapped

    return decorator
