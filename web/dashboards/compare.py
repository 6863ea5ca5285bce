"""Two versions side by side: rho of each, the paired difference, per-occupation rho.

Versions not yet scored on the chosen snapshot are evaluated by the gpu worker
(queued on commit), never inside the request.
"""

from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from core.errors import refusals_as_messages
from training import selectors, services
from training.errors import RegistryError
from training.models import Checkpoint, DatasetSnapshot

from .base import form_errors, page, staff_only
from .charts import chart_response, occupations_side_by_side


class CompareForm(forms.Form):
    a = forms.ModelChoiceField(Checkpoint.objects.none(), to_field_name="version", label="A")
    b = forms.ModelChoiceField(Checkpoint.objects.none(), to_field_name="version", label="B")
    snapshot = forms.ModelChoiceField(
        DatasetSnapshot.objects.none(),
        label="Snapshot",
        required=False,
        empty_label="newest both were evaluated on",
    )

    def __init__(self, *args, viewer, **kwargs):
        super().__init__(*args, **kwargs)  # the versions and snapshots the viewer may see
        for name in ("a", "b"):
            self.fields[name].queryset = selectors.checkpoints(viewer)
        self.fields["snapshot"].queryset = selectors.snapshots(viewer)

    def clean(self):
        data = super().clean()
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("Pick two different versions.")
        return data


def _pick(request: HttpRequest) -> tuple[Checkpoint, Checkpoint, DatasetSnapshot | None] | str:
    """The versions (and snapshot) asked for, or a readable error message."""
    form = CompareForm(request.GET, viewer=request.user)
    if not form.is_valid():
        return form_errors(form)
    data = form.cleaned_data
    return data["a"], data["b"], data["snapshot"]


def side_by_side(per_a: dict, per_b: dict) -> list[tuple[str, float | None, float | None]]:
    """Occupations of either version, each with A's and B's rho (None where one has none)."""
    return [(o, per_a.get(o), per_b.get(o)) for o in sorted(set(per_a) | set(per_b))]


@staff_only
@refusals_as_messages("dashboards:compare")
def compare(request: HttpRequest) -> HttpResponse:
    """Pick A and B: rho of each, the paired difference with interval and p-value."""
    form = CompareForm(request.GET or None, viewer=request.user)
    context: dict = {"form": form, "section": "compare"}
    versions = form.fields["a"].queryset.count()
    if versions < 2:  # nothing to pick: say so, not two empty drop-downs
        context["nothing"] = (
            "No version of yours to compare yet: a comparison needs two. Train one on the "
            "Training runs page, or import one in the registry."
            if versions == 0
            else "Only one version of yours so far: a comparison needs two. Train another on "
            "the Training runs page."
        )
        return page(request, "dashboards/compare.html", context)
    picked = _pick(request) if request.GET else None
    if isinstance(picked, str):
        context["error"] = picked
    elif picked is not None:
        a, b, snapshot = picked
        missing = selectors.not_evaluated_on(snapshot, a, b) if snapshot else []
        if missing:
            services.request_evaluations(snapshot, missing)
            names = " and ".join(f"v{c.version}" for c in missing)
            context["pending"] = f"Evaluating {names} on snapshot {snapshot.pk}; reload shortly."
            return page(request, "dashboards/compare.html", context)
        # without a snapshot: the newest the viewer may see that both were evaluated on
        result = services.compare(a, b, snapshot or _common(request, a, b))
        context.update(
            a=a,
            b=b,
            result=result,
            occupations=side_by_side(result["per_occupation_a"], result["per_occupation_b"]),
            chart_query=urlencode({"a": a.version, "b": b.version, "snapshot": result["snapshot"]}),
        )
    return page(request, "dashboards/compare.html", context)


def _common(request: HttpRequest, a: Checkpoint, b: Checkpoint) -> DatasetSnapshot:
    common = selectors.common_snapshot(request.user, a, b)
    if common is None:
        raise RegistryError(
            f"v{a.version} and v{b.version} were never evaluated on the same snapshot; "
            "name a snapshot to evaluate both on it"
        )
    return common


@staff_only
def compare_chart(request: HttpRequest) -> HttpResponse:
    """Per-occupation rho of A and B side by side, from their evaluations on one snapshot."""
    picked = _pick(request)
    if isinstance(picked, str) or picked[2] is None:
        return HttpResponseBadRequest(picked if isinstance(picked, str) else "Pick a snapshot.")
    a, b, snapshot = picked
    per = selectors.per_occupation_rho(snapshot, a, b)
    if a.pk not in per or b.pk not in per:
        return HttpResponseBadRequest(f"Both versions must be evaluated on snapshot {snapshot.pk}.")
    per_a, per_b = per[a.pk] or {}, per[b.pk] or {}
    label_a, label_b = f"v{a.version}", f"v{b.version}"
    return chart_response(
        request,
        "compare-occupations",
        {"a": [label_a, per_a], "b": [label_b, per_b]},
        lambda: occupations_side_by_side(label_a, per_a, label_b, per_b),
    )
