"""What the dashboard pages share: the staff gate, the chosen study (among those the
viewer has a role in: ``annotation.access``), the page frame (``page``), and
form/parameter helpers."""

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from annotation.access import roles, scope
from annotation.errors import NotVisible
from annotation.models.studies import DEFAULT_STUDY_SLUG, Study, default_study_pk
from core.errors import StereorankError, refusals_as_messages
from core.ids import as_id
from training import selectors
from training.models import DatasetSnapshot

T = TypeVar("T")

NO_ROLE = (
    "You have no role in any study yet: ask the installation's administrator, or the owner "
    "of a study you work on, to give you one."
)
"""What a staff member with no role reads on every dashboard (it names no study or owner)."""

# The session key of the study chosen on any dashboard page (its slug).
STUDY_KEY = "dashboards_study"


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


def staff_action(back: str) -> Callable[[Callable], Callable]:
    """A staff-only POST whose refused service call becomes a message on the page named
    ``back`` (``core.errors.refusals_as_messages``)."""

    def decorator(view: Callable) -> Callable:
        return staff_only(require_POST(refusals_as_messages(back)(view)))

    return decorator


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
    pk = as_id(raw)
    if pk is None:
        raise Http404("No such snapshot.")
    return found(selectors.snapshots(request.user).filter(pk=pk).first(), "No such snapshot.")


def found(row: T | None, message: str) -> T:
    """A selector's row, or a 404 (with ``message``) where there is none."""
    if row is None:
        raise Http404(message)
    return row


def percent(part: int | None, whole: int | None) -> int:
    return round(100 * (part or 0) / whole) if whole else 0


def chosen_study(request: HttpRequest, capability: str = roles.ANY_ROLE) -> Study:
    """The study the dashboards show, among those the viewer has a role in: ``?study=slug``
    (then remembered in the session), else the one remembered, else the default study,
    else their first; 404 for a slug that names none of theirs (or none at all); 403 saying
    so when they have a role in no study (``NO_ROLE``), or where their role there lacks
    ``capability``."""
    slug = request.GET.get("study")
    if slug:
        study = study_or_404(request, slug, capability)
        if request.session.get(STUDY_KEY) != study.slug:
            request.session[STUDY_KEY] = study.slug
        return study
    default_study_pk()  # made when missing, as every study-scoped read does
    mine = scope.visible_studies(request.user, roles.ANY_ROLE)
    remembered = request.session.get(STUDY_KEY)
    study = mine.filter(slug=remembered).first() if remembered else None
    if study is None:
        request.session.pop(STUDY_KEY, None)  # since renamed, deleted or no longer theirs
        study = mine.filter(slug=DEFAULT_STUDY_SLUG).first() or mine.order_by("slug").first()
    if study is None:
        raise PermissionDenied(NO_ROLE)
    if not request.user.has_perm(capability, study):
        raise PermissionDenied(f"Your role in {study.slug} does not allow this.")
    return study


def study_or_404(request: HttpRequest, slug: str, capability: str = roles.ANY_ROLE) -> Study:
    """``scope.study_for`` on a page: 404 where the viewer has no role in the study (or
    there is none), 403 where their role lacks ``capability``."""
    try:
        return scope.study_for(request.user, slug, capability)
    except NotVisible:
        raise Http404("No such study.") from None
    except StereorankError as error:  # a role that lacks the capability
        raise PermissionDenied(error.message) from None


def allows(request: HttpRequest, capability: str, study: Study) -> bool:
    """Whether the viewer's role in ``study`` allows ``capability`` (a page's optional part)."""
    return scope.may(request.user, capability, study)


def page(request: HttpRequest, template: str, context: dict, status: int = 200) -> HttpResponse:
    """A dashboard page in its frame: the navigation keeps the chosen study (``?study=``)
    and the study chooser lists every study."""
    chosen = chosen_study(request)
    keep = [(k, v) for k, v in request.GET.items() if k not in ("study", "page")]
    frame = {
        "chosen_study": chosen,
        "study_query": urlencode({"study": chosen.slug}),
        "study_choices": scope.visible_studies(request.user, roles.ANY_ROLE)
        .order_by("slug")
        .values_list("slug", "name", "kind"),
        "study_keep": keep,
    }
    return render(request, template, {**frame, **context}, status=status)
