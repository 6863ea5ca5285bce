"""The registry: versions with rho and intervals, their quantized copies' accuracy gates and
the encoder serving each; promote, roll back, export, import. The versions are those the
viewer may see (``training.access``: their snapshot's whole lineage); promoting or rolling
back needs a role that runs them."""

import shutil
import tempfile
from pathlib import Path

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from annotation.access import roles, scope
from annotation.errors import RoleRefused
from core.errors import refusals_as_messages
from scoring import serving
from training import selectors, services
from training.errors import GroupsFall, ReportsComputing
from training.models import Checkpoint, DatasetSnapshot

from .base import form_errors, found, page, snapshot_param, staff_action, staff_only
from .charts import RhoPoint, draw_response, rho_across_versions

EXPORT_FORMATS = ("seed", "native", "card")


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A seed .pth checkpoint (the published DJ-PO head).")
    encoder = forms.CharField(
        required=False, max_length=300, help_text="Encoder it was trained with (empty: default)."
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if not upload.name.endswith(".pth"):
            raise forms.ValidationError("Choose a .pth file.")
        return upload


def rho_points(viewer, snapshot: DatasetSnapshot | None) -> list[RhoPoint]:
    """Each version's rho with its interval: on its own snapshot, or all on one snapshot."""
    points = []
    for row in selectors.version_metrics(viewer, snapshot):
        metrics = row["metrics"] or {}
        if metrics.get("spearman") is None:
            continue
        low, high = metrics.get("spearman_ci") or (None, None)
        points.append(
            RhoPoint(
                f"v{row['version']}",
                metrics["spearman"],
                low,
                high,
                active=row["status"] == Checkpoint.Status.ACTIVE,
            )
        )
    return points


@staff_only
def registry(request: HttpRequest) -> HttpResponse:
    """Versions with their metrics, status, gates and serving encoder; promote, roll back,
    export, import."""
    snapshot = snapshot_param(request)
    mine = selectors.lineage(request.user)
    checkpoints = list(mine)
    gates = selectors.encoder_gates(among=mine)
    for c in checkpoints:
        c.serving = serving.describe(c, gates.get(c.pk, []))
    events = selectors.registry_events(request.user, 20)
    active = next((c for c in checkpoints if c.status == Checkpoint.Status.ACTIVE), None)
    may_roll_back = active is not None and selectors.may_roll_back(request.user)
    return page(
        request,
        "dashboards/registry.html",
        {
            "checkpoints": checkpoints,
            "active": active,
            "rollback_to": selectors.rollback_target(active) if may_roll_back else None,
            "events": events,
            "snapshot": snapshot,
            "snapshots": selectors.snapshots(request.user)[:20],
            "import_form": ImportForm(),
            "encoder": "/".join(serving.configured()),
            "section": "registry",
        },
    )


@staff_only
def registry_chart(request: HttpRequest) -> HttpResponse:
    """Plot of rho with 95% intervals across versions (``?snapshot=`` for one snapshot)."""
    snapshot = snapshot_param(request)
    points = rho_points(request.user, snapshot)
    title = f"on snapshot {snapshot.pk}" if snapshot else "each on its own snapshot"
    return draw_response(request, "registry-rho", rho_across_versions, points=points, title=title)


@staff_action("dashboards:registry")
def registry_promote(request: HttpRequest, version: int) -> HttpResponse:
    """Make this version the active one, after the group check: a refusal (a group that
    falls, or reports still computing: queued, never computed here) is a 409 page that
    says why, with the way on (force with a reason; try again)."""
    checkpoint = selectors.checkpoint(version, request.user, roles.RUN_STUDY)
    checkpoint = found(checkpoint, "No such version.")
    reason = request.POST.get("reason", "")
    force = request.POST.get("force") == "1"
    try:
        services.promote(checkpoint, user=request.user, reason=reason, force=force, compute=False)
    except (GroupsFall, ReportsComputing) as refusal:
        computing = isinstance(refusal, ReportsComputing)
        context = {"checkpoint": checkpoint, "refusal": refusal.message, "computing": computing}
        return page(request, "dashboards/promote_refused.html", context, status=409)
    messages.success(request, f"Version {version} is now active.")
    return redirect("dashboards:registry")


@staff_action("dashboards:registry")
def registry_rollback(request: HttpRequest) -> HttpResponse:
    """Make the previously active version active again."""
    if not selectors.may_roll_back(request.user):
        raise RoleRefused("You may roll back only from and to versions you may run.")
    checkpoint = services.rollback(user=request.user, reason=request.POST.get("reason", ""))
    messages.success(request, f"Rolled back: version {checkpoint.version} is active.")
    return redirect("dashboards:registry")


@staff_only
@require_GET
@refusals_as_messages("dashboards:registry")
def registry_export(request: HttpRequest, version: int) -> HttpResponse:
    """Download a version: ``?format=seed`` (.pth of the seed), ``native`` (zip, its model
    card inside as README.md) or ``card`` (the model card alone, Markdown)."""
    checkpoint = found(selectors.checkpoint(version, request.user), "No such version.")
    fmt = request.GET.get("format", "seed")
    if fmt not in EXPORT_FORMATS:
        return HttpResponseBadRequest(f"Unknown export format '{fmt}'; use seed, native or card.")
    name = f"stereorank-v{checkpoint.version}"
    if fmt == "card":
        response = HttpResponse(
            services.model_card(checkpoint), content_type="text/markdown; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.md"'
        return response
    folder = Path(tempfile.mkdtemp(prefix="export-"))
    try:
        if fmt == "seed":
            out = services.export_checkpoint(checkpoint, "seed", folder / f"{name}.pth")
        else:
            exported = services.export_checkpoint(checkpoint, "native", folder / name)
            out = Path(shutil.make_archive(str(folder / name), "zip", exported.parent, name))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    response = FileResponse(out.open("rb"), as_attachment=True, filename=out.name)
    # The file is open; unlinking it now frees the space once the response is sent.
    shutil.rmtree(folder, ignore_errors=True)
    return response


@staff_action("dashboards:registry")
def registry_import(request: HttpRequest) -> HttpResponse:
    """Import a seed ``.pth`` file as a new candidate version (no study's: any member who
    runs a study may)."""
    if not scope.has_any(request.user, roles.RUN_STUDY):
        raise PermissionDenied("Your roles allow no training.")
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("dashboards:registry")
    upload = form.cleaned_data["file"]
    with tempfile.TemporaryDirectory(prefix="import-") as folder:
        path = Path(folder) / Path(upload.name).name
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        checkpoint = services.import_checkpoint(
            path, fmt="seed", encoder=form.cleaned_data["encoder"] or None, user=request.user
        )
    messages.success(request, f"Imported {upload.name} as version {checkpoint.version}.")
    return redirect("dashboards:registry")
