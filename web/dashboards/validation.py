"""Validation studies: the report of each (``annotation.validation.results``: the command and
the staff API show the same), with a plot of each condition's mean rank and of each
occupation's difference, every figure with its 95% interval, and the power analysis.

The report is cached while the study's rankings are unchanged; its module (scipy) is
imported on the first request, not with the URL conf.
"""

from __future__ import annotations

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

from annotation.access import roles, scope
from annotation.errors import ConditionError
from annotation.models import Ranking, Study
from core import personal_cache
from core.small_groups import hidden_note

from .base import found, page, staff_only
from .charts import IntervalPoint, chart_response, estimates_with_intervals

CACHE_SECONDS = 10 * 60


def _studies(request: HttpRequest):
    """The validation studies the viewer has a role in."""
    mine = scope.visible_studies(request.user, roles.ANY_ROLE)
    return mine.filter(kind=Study.Kind.VALIDATION)


def _study(request: HttpRequest, slug: str) -> Study:
    return found(_studies(request).filter(slug=slug).first(), "No such validation study.")


def report(study: Study) -> dict | None:
    """The study's report (None when it has nothing to report yet), cached by its rankings."""
    from annotation.validation import results as validation_results

    rankings = Ranking.objects.filter(task__study=study)
    last = rankings.order_by("-pk").values_list("pk", flat=True).first()
    n_boot = settings.STEREORANK["QUALITY_N_BOOT"]
    # The report's shape (v2: groups under k hidden, not named) and k are in the key.
    k = settings.STEREORANK["GROUP_K"]
    key = f"validation-report:v2:{study.pk}:{rankings.count()}:{last}:{n_boot}:{k}"
    data = cache.get(personal_cache.key(key))  # it names annotators by pseudonym
    if data is None:
        try:
            data = validation_results.report(study, n_boot=n_boot)
        except ConditionError as error:
            data = {"missing": error.message}
        cache.set(personal_cache.key(key), data, CACHE_SECONDS)
    return data


@staff_only
def validation_studies(request: HttpRequest) -> HttpResponse:
    """Every validation study, with its conditions."""
    found_studies = _studies(request).prefetch_related("conditions")
    return page(
        request,
        "dashboards/validation_list.html",
        {"studies": found_studies, "section": "validation"},
    )


@staff_only
def validation_study(request: HttpRequest, slug: str) -> HttpResponse:
    """One validation study's report."""
    study = _study(request, slug)
    data = scope.report_for(request.user, study, report(study))  # a viewer: no one's means
    context = {"study": study, "section": "validation", "conditions": study.conditions.all()}
    if "missing" in data:
        context["missing"] = data["missing"]
    else:
        base, treat = data["conditions"]["baseline"], data["conditions"]["treatment"]
        context.update(
            report=data,
            baseline=data["per_condition"][base],
            treatment=data["per_condition"][treat],
            baseline_name=base,
            treatment_name=treat,
            occupations=sorted(data["per_occupation"].items()),
            groups=[
                (field, values, hidden_note(data["hidden_groups"].get(field, 0), data["group_k"]))
                for field, values in sorted(data["per_group"].items())
            ],
        )
    return page(request, "dashboards/validation.html", context)


def _points(data: dict) -> list[IntervalPoint]:
    base, treat = data["conditions"]["baseline"], data["conditions"]["treatment"]
    points = [
        IntervalPoint(f"{name}: mean rank", c["mean"], c["ci_low"], c["ci_high"])
        for name, c in ((base, data["per_condition"][base]), (treat, data["per_condition"][treat]))
    ]
    d = data["bootstrap"]["difference"]
    points.append(IntervalPoint("difference (bootstrap)", d["value"], d["ci_low"], d["ci_high"]))
    for occupation, f in sorted(data["per_occupation"].items()):
        d = f["difference"]
        points.append(
            IntervalPoint(f"{occupation}: difference", d["value"], d["ci_low"], d["ci_high"])
        )
    return points


@staff_only
def validation_chart(request: HttpRequest, slug: str) -> HttpResponse:
    """Each condition's mean rank, the difference, and each occupation's difference."""
    data = report(_study(request, slug))
    points = [] if "missing" in data else _points(data)
    return chart_response(
        request,
        "validation",
        points,
        lambda: estimates_with_intervals(
            points, "Mean rank (higher = less stereotypical) and differences, 95% CI"
        ),
    )
