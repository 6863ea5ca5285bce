"""Whose opinions does a version reward? Per field, each group's alignment and rho
beside the human baseline; each group across versions; one version against another.

Reads stored reports only: a missing one is queued on the default queue (on commit)
and the page says so; nothing is scored in a request. Groups under k are hidden (the
page says how many: ``core.small_groups``); no figure is about one person.
"""

from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from annotation.rankings import selectors as annotation_selectors
from core.languages import GROUPING, GROUPING_LABEL
from core.small_groups import hidden_note
from training import selectors, services
from training.errors import PerspectiveError, PerspectivesPending
from training.models import Checkpoint, DatasetSnapshot

from .base import form_errors, page, staff_only
from .charts import (
    GroupPoint,
    chart_response,
    draw_response,
    groups_across_versions,
    groups_alignment,
)

DEFAULT_FIELD = "age_band"


class PerspectivesForm(forms.Form):
    version = forms.ModelChoiceField(
        Checkpoint.objects.none(), to_field_name="version", required=False, label="Version"
    )
    snapshot = forms.ModelChoiceField(
        DatasetSnapshot.objects.none(),
        required=False,
        label="Snapshot",
        empty_label="the version's own",
    )
    field = forms.ChoiceField(required=False, label="Field")
    against = forms.ModelChoiceField(
        Checkpoint.objects.none(), to_field_name="version", required=False, label="Against"
    )

    def __init__(self, *args, viewer, **kwargs):
        super().__init__(*args, **kwargs)  # the versions and snapshots the viewer may see
        for name in ("version", "against"):
            self.fields[name].queryset = selectors.checkpoints(viewer)
        self.fields["snapshot"].queryset = selectors.snapshots(viewer)
        keys = annotation_selectors.demographic_fields().values_list("key", "label")
        self.fields["field"].choices = [("", "default"), *keys, (GROUPING, GROUPING_LABEL)]


def _version(viewer, picked: Checkpoint | None) -> Checkpoint | None:
    """The version asked for, else the active one, else the newest (of the viewer's)."""
    mine = selectors.checkpoints(viewer)
    active = mine.filter(status=Checkpoint.Status.ACTIVE).first()
    return picked or active or mine.order_by("-version").first()


def _field(snapshot: DatasetSnapshot, picked: str) -> str:
    fields = services.report_fields(snapshot)
    return picked or (DEFAULT_FIELD if DEFAULT_FIELD in fields else (fields or [DEFAULT_FIELD])[0])


def _pending(checkpoint: Checkpoint, snapshot: DatasetSnapshot) -> str:
    """Queue every missing field of this report (one task); the message that says so."""
    missing = selectors.perspectives_missing(checkpoint, snapshot, services.report_fields(snapshot))
    services.request_reports(checkpoint, snapshot, missing)
    return (
        f"Computing the report of v{checkpoint.version} on snapshot {snapshot.pk}; reload shortly."
    )


@staff_only
def perspectives(request: HttpRequest) -> HttpResponse:
    """One version's report for one field, across versions, and against another version."""
    form = PerspectivesForm(request.GET or None, viewer=request.user)
    context: dict = {"form": form, "section": "perspectives"}
    if form.is_bound and not form.is_valid():
        context["error"] = form_errors(form)
        return page(request, "dashboards/perspectives.html", context)
    data = form.cleaned_data if form.is_bound else {}
    checkpoint = _version(request.user, data.get("version"))
    if checkpoint is None:
        context["error"] = "No versions yet: train a run first."
        return page(request, "dashboards/perspectives.html", context)
    try:
        snapshot = services.report_snapshot(checkpoint, data.get("snapshot"))
    except PerspectiveError as error:
        context["error"] = error.message
        return page(request, "dashboards/perspectives.html", context)
    field = _field(snapshot, data.get("field") or "")
    # The form names what the page shows, picked or defaulted, so the next "Show" keeps it.
    shown = PerspectivesForm(
        {**request.GET.dict(), "version": checkpoint.version, "field": field}, viewer=request.user
    )
    if shown.is_valid():
        context["form"] = shown
    query = {"version": checkpoint.version, "snapshot": snapshot.pk, "field": field}
    across = {"field": field, **({"snapshot": snapshot.pk} if data.get("snapshot") else {})}
    context.update(
        checkpoint=checkpoint,
        snapshot=snapshot,
        field=field,
        field_label={**annotation_selectors.demographic_labels(), GROUPING: GROUPING_LABEL}.get(
            field, field
        ),
        groups_query=urlencode(query),
        versions_query=urlencode(across),
        export_query=urlencode({"snapshot": snapshot.pk, "field": field}),
    )
    if selectors.perspectives_missing(checkpoint, snapshot, [field]):
        context["pending"] = _pending(checkpoint, snapshot)
        return page(request, "dashboards/perspectives.html", context)
    (report,) = services.perspective_report(checkpoint, snapshot, [field])["fields"]
    context.update(report=report, hidden=hidden_note(report["hidden_groups"], report["k"]))
    against = data.get("against")
    if against is not None and against != checkpoint:
        context["against"] = against
        try:
            rows = services.compare_versions(checkpoint, against, snapshot, field)
        except PerspectivesPending:
            context["against_pending"] = _pending(against, snapshot)
        else:
            context.update(
                paired=rows,
                gained=[r["group"] for r in rows if r["verdict"] == "gained"],
                lost=[r["group"] for r in rows if r["verdict"] == "lost"],
            )
    return page(request, "dashboards/perspectives.html", context)


def _picked(request: HttpRequest) -> tuple[Checkpoint, DatasetSnapshot | None, str] | str:
    form = PerspectivesForm(request.GET, viewer=request.user)
    if not form.is_valid():
        return form_errors(form)
    data = form.cleaned_data
    if data["version"] is None or not data["field"]:
        return "Name a version and a field."
    return data["version"], data["snapshot"], data["field"]


@staff_only
def groups_chart(request: HttpRequest) -> HttpResponse:
    """A version's groups: alignment and human baseline with intervals, best aligned first."""
    picked = _picked(request)
    if isinstance(picked, str):
        return HttpResponseBadRequest(picked)
    checkpoint, snapshot, field = picked
    try:
        snapshot = services.report_snapshot(checkpoint, snapshot)
    except PerspectiveError as error:
        return HttpResponseBadRequest(error.message)
    if selectors.perspectives_missing(checkpoint, snapshot, [field]):
        return HttpResponseBadRequest("No stored report for that version, snapshot and field.")
    (report,) = services.perspective_report(checkpoint, snapshot, [field])["fields"]
    points = [
        GroupPoint(
            g["group"],
            g["alignment"],
            *(g["alignment_ci"] or (None, None)),
            g["human_baseline"],
            *(g["human_baseline_ci"] or (None, None)),
        )
        for g in report["groups"]
    ]
    title = f"v{checkpoint.version}, {field}, snapshot {snapshot.pk}"
    return draw_response(
        request, "perspective-groups", groups_alignment, points=points, title=title
    )


@staff_only
def versions_chart(request: HttpRequest) -> HttpResponse:
    """Each group's alignment across versions (one line per group)."""
    form = PerspectivesForm(request.GET, viewer=request.user)
    if not form.is_valid() or not form.cleaned_data["field"]:
        return HttpResponseBadRequest(form_errors(form) or "Name a field.")
    field, snapshot = form.cleaned_data["field"], form.cleaned_data["snapshot"]
    rows = services.alignment_across_versions(request.user, field, snapshot)
    versions = sorted({v for v, _, _ in rows})
    series: dict[str, list[float | None]] = {}
    for version, group, value in rows:
        series.setdefault(group, [None] * len(versions))[versions.index(version)] = value
    labels = [f"v{v}" for v in versions]
    title = f"{field}, " + (
        f"on snapshot {snapshot.pk}" if snapshot else "each on its own snapshot"
    )
    return chart_response(
        request,
        "perspective-versions",
        {"labels": labels, "series": series, "title": title},
        lambda: groups_across_versions(labels, series, title),
    )
