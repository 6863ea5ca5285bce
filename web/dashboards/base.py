"""What the dashboard pages share: the staff gate and form/parameter helpers."""

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from training import selectors
from training.models import DatasetSnapshot

T = TypeVar("T")


def staff_only(view: Callable) -> Callable:
    """Anonymous visitors go to the portal's log-in page (``LOGIN_URL``, as ``/check/``);
    signed-in non-staff get 403."""

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("Staff only.")
        return view(request, *args, **kwargs)

    return wrapped


def form_errors(form: forms.Form) -> str:
    """A form's errors as one line, each prefixed by its field's label."""
    return " ".join(
        f"{form[name].label}: {' '.join(errs)}" if name != "__all__" else " ".join(errs)
        for name, errs in form.errors.items()
    )


def snapshot_param(request: HttpRequest) -> DatasetSnapshot | None:
    """``?snapshot=ID`` as a snapshot (without its examples), None when absent, else 404."""
    raw = request.GET.get("snapshot")
    if not raw:
        return None
    if not raw.isdigit():
        raise Http404("No such snapshot.")
    return found(selectors.snapshots().filter(pk=raw).first(), "No such snapshot.")


def found(row: T | None, message: str) -> T:
    """A selector's row, or a 404 (with ``message``) where there is none."""
    if row is None:
        raise Http404(message)
    return row


def percent(part: int | None, whole: int | None) -> int:
    return round(100 * (part or 0) / whole) if whole else 0
