"""Annotation quality: agreement with intervals, position bias, the annotator table; reinstate.

The figures are ``annotation.quality.report``'s (the ``quality`` command and the
staff API show the same), served from the stored report with the time it was
computed (``annotation.quality.store``): a worker on the default queue computes it,
and refreshes it in the background when the data moves on. Nothing is computed in
a request. One study's at a time: the chosen study (``?study=slug``, remembered:
``base.chosen_study``; the default study until one is chosen), and no figure of another
study in it. The annotator table is for a role that reads rows; a viewer reads the rest.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from annotation.access import roles
from annotation.models.studies import Study
from annotation.quality import selectors as quality_selectors
from annotation.quality import standing
from annotation.quality import store as quality_store
from annotation.rankings import selectors
from annotation.rankings.exports import pseudonym
from core.languages import GROUPING, GROUPING_LABEL
from core.small_groups import hidden_note

from . import base
from .base import allows, chosen_study, form_errors, found, staff_action, staff_only
from .charts import (
    IntervalPoint,
    chart_response,
    draw_response,
    estimates_with_intervals,
    position_heatmap,
)

# The annotator table's columns, in order, with their headings; a study of thousands
# pages its table (``quality_store.PAGE_SIZE`` rows, read and sorted in SQL), the figures
# above it are the whole study's.
SORTABLE = {
    "pseudonym": "Annotator",
    "tasks": "Tasks",
    "gold_score": "Gold score",
    "check_pass_rate": "Check pass rate",
    "consensus_rho": "Consensus rho",
    "median_seconds": "Median seconds",
    "untouched_rate": "Untouched rate",
    "status": "Status",
}


class ReinstateForm(forms.Form):
    reason = forms.CharField(
        max_length=1000, strip=True, help_text="Recorded with your name in the status history."
    )


def served(request: HttpRequest, study: Study) -> quality_store.Served:
    """The study's stored quality report for ``?synthetic=1`` or not (a refresh queued
    when its data moved on; never computed in the request)."""
    synthetic = request.GET.get("synthetic") == "1"
    n_boot = settings.STEREORANK["QUALITY_N_BOOT"]
    return quality_store.served_report(synthetic, n_boot, study=study)


def report(request: HttpRequest) -> dict:
    """The stored report's figures; 404 until the first one is computed (for the charts)."""
    data = served(request, chosen_study(request)).report
    if data is None:
        raise Http404("The quality report is being computed.")
    return data


def _query(request: HttpRequest, study: Study) -> str:
    """The page's query string without ``page``, naming the study (for the pager's links)."""
    query = request.GET.copy()
    query.pop("page", None)
    query["study"] = study.slug
    return query.urlencode()


@staff_only
def quality(request: HttpRequest) -> HttpResponse:
    """One study's agreement overall, per occupation and per group; position bias; the
    annotators."""
    study = chosen_study(request)
    current = served(request, study)
    if current.report is None:
        return base.page(
            request,
            "dashboards/quality_computing.html",
            {"section": "quality", "study": study},
            status=202,
        )
    data = current.report
    column = request.GET.get("sort", "pseudonym")
    descending = request.GET.get("dir") == "desc"
    page = current.annotator_page(request.GET.get("page"), column, descending)
    rows = allows(request, roles.VIEW_DATA, study)  # a viewer reads the aggregates only
    occupations = [
        (name, a) for name, a in data["agreement"]["per_occupation"].items() if a["n_tasks"]
    ]
    labels = {**selectors.demographic_labels(), GROUPING: GROUPING_LABEL}
    agreement = data["agreement"]
    within = [
        (
            field,
            labels.get(field, field),
            groups,
            hidden_note(agreement["hidden_groups"].get(field, 0), agreement["k"]),
        )
        for field, groups in agreement["within_groups"].items()
    ]
    study_query = urlencode({"study": study.slug})
    synthetic = request.GET.get("synthetic") == "1"
    return base.page(
        request,
        "dashboards/quality.html",
        {
            "report": data,
            "computed_at": current.computed_at,
            "stale": current.stale,
            "synthetic": synthetic,
            "study": study,
            "study_query": study_query,
            # The charts name the study and the report they draw (their URL is their cache key).
            "chart_query": study_query + ("&synthetic=1" if synthetic else ""),
            "occupations": occupations,
            "within_groups": within,
            "gold_tasks": selectors.gold_task_count(study),
            "annotators": page.object_list if rows else [],
            "page": page,
            "query": _query(request, study),
            "sort": column,
            "descending": descending,
            "sortable": SORTABLE,
            "changes": [
                {"change": c, "pseudonym": pseudonym(c.annotator.user_id)}
                for c in (quality_selectors.recent_status_changes(study) if rows else [])
            ],
            "reinstate_form": ReinstateForm(),
            "section": "quality",
        },
    )


@staff_only
def quality_agreement_chart(request: HttpRequest) -> HttpResponse:
    """Kendall's W per occupation with its task-bootstrap 95% interval."""
    data = report(request)
    points = [
        IntervalPoint(name, w["value"], w["ci_low"], w["ci_high"])
        for name, a in data["agreement"]["per_occupation"].items()
        if (w := a["kendall_w"])["value"] is not None
    ]
    return chart_response(
        request,
        "quality-agreement",
        points,
        lambda: estimates_with_intervals(points, "Kendall's W per occupation (95% CI)"),
    )


@staff_only
def quality_position_chart(request: HttpRequest, k: int) -> HttpResponse:
    """The shown x submitted position table of tasks of size ``k`` as a heat map."""
    bias = report(request)["position_bias"].get(str(k))
    if bias is None:
        raise Http404(f"No rankings of {k} items.")
    title = f"K = {k}: {bias['n_rankings']} rankings, chi2 p = {bias['p_value']:.3g}"
    return draw_response(
        request, "quality-position", position_heatmap, table=bias["table"], title=title
    )


@staff_action("dashboards:quality")
def quality_reinstate(request: HttpRequest, profile_id: int) -> HttpResponse:
    """Lift a warned or excluded annotator back to ok, with a recorded reason."""
    profile = selectors.annotator_profile(profile_id, request.user, roles.RUN_STUDY)
    profile = found(profile, "No such annotator.")
    form = ReinstateForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("dashboards:quality")
    standing.reinstate(profile, request.user, form.cleaned_data["reason"])
    messages.success(request, "Reinstated: the annotator's status is ok again.")
    return redirect("dashboards:quality")
