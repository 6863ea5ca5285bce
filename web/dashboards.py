"""Staff dashboards: annotation progress, training runs, the registry, comparison.

Views are thin: reads are the small query functions here (each a fixed number of
queries whatever the number of rows), writes go through ``training.services``.
Demographics are personal data; every view here is staff only.
"""

from collections import Counter
from collections.abc import Callable, Iterable
from functools import wraps

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, F, Q, Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation.exports import pseudonym
from annotation.models import AnnotatorProfile, DemographicField, Occupation

ANNOTATORS_PER_PAGE = 50


def staff_only(view: Callable) -> Callable:
    """Anonymous visitors go to the log-in page; signed-in non-staff get 403."""
    login_required = staff_member_required(view)

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.user.is_authenticated and not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("Staff only.")
        return login_required(request, *args, **kwargs)

    return wrapped


# --- annotation progress -------------------------------------------------------------------


def occupation_progress() -> list[dict]:
    """Per occupation: tasks, rankings, filled overlap slots and complete tasks (one query)."""
    rows = (
        Occupation.objects.annotate(
            n_tasks=Count("tasks"),
            slots=Sum("tasks__overlap", default=0),
            rankings=Sum("tasks__ranking_count", default=0),
            complete=Count("tasks", filter=Q(tasks__ranking_count__gte=F("tasks__overlap"))),
        )
        .order_by("name")
        .values("name", "n_tasks", "slots", "rankings", "complete")
    )
    return [{**row, "percent": _percent(row["rankings"], row["slots"])} for row in rows]


def annotator_progress(page: int | str | None) -> tuple[list[dict], object]:
    """One page of annotators: username, pseudonym, done / quota (one query plus a count)."""
    profiles = (
        AnnotatorProfile.objects.annotate(done=Count("rankings"))
        .order_by("is_synthetic", "-done", "user__username")
        .values("user_id", "user__username", "quota", "done", "is_synthetic")
    )
    page_obj = Paginator(profiles, ANNOTATORS_PER_PAGE).get_page(page)
    rows = [
        {
            "username": p["user__username"],
            "pseudonym": pseudonym(p["user_id"]),
            "done": p["done"],
            "quota": p["quota"],
            "percent": _percent(p["done"], p["quota"]),
            "synthetic": p["is_synthetic"],
        }
        for p in page_obj.object_list
    ]
    return rows, page_obj


def demographic_counts(fields: Iterable[DemographicField], answers: Iterable[dict]) -> list[dict]:
    """Per field: how many annotators gave each answer, and how many left it blank."""
    answers = list(answers)
    out = []
    for field in fields:
        counts = Counter(a[field.key] for a in answers if a.get(field.key))
        options = list(field.choices) + [DemographicField.PREFER_NOT_TO_SAY]
        ordered = [(o, counts.pop(o, 0)) for o in options] if field.choices else []
        ordered += sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        answered = sum(n for _, n in ordered)
        out.append(
            {
                "key": field.key,
                "label": field.label,
                "counts": ordered,
                "unanswered": len(answers) - answered,
            }
        )
    return out


def _percent(part: int | None, whole: int | None) -> int:
    return round(100 * (part or 0) / whole) if whole else 0


@staff_only
def progress(request: HttpRequest) -> HttpResponse:
    """Annotation progress: per occupation, per annotator, demographic counts."""
    occupations = occupation_progress()
    annotators, page_obj = annotator_progress(request.GET.get("page"))
    answers = list(
        AnnotatorProfile.objects.filter(is_synthetic=False).values_list("demographics", flat=True)
    )
    demographics = demographic_counts(DemographicField.objects.filter(active=True), answers)
    totals = {
        key: sum(row[key] for row in occupations)
        for key in ("n_tasks", "slots", "rankings", "complete")
    }
    totals["percent"] = _percent(totals["rankings"], totals["slots"])
    return render(
        request,
        "dashboards/progress.html",
        {
            "occupations": occupations,
            "totals": totals,
            "annotators": annotators,
            "page_obj": page_obj,
            "demographics": demographics,
            "n_people": len(answers),
            "section": "progress",
        },
    )
