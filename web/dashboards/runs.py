"""Training runs with live progress: take a snapshot, start a run, cancel one."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.errors import refusals_as_messages
from training import selectors, services
from training.models import TrainingRun
from training.services import NONE, RELIABILITY, ScheduleSettings, parse_steering

from .base import form_errors, found, staff_only

RUNS_SHOWN = 30


class RunForm(forms.Form):
    snapshot = forms.ModelChoiceField(selectors.snapshots())
    encoder = forms.CharField(required=False, max_length=300)
    epochs = forms.IntegerField(min_value=1, max_value=1000, initial=ScheduleSettings.epochs)
    paraphrases = forms.IntegerField(
        min_value=0, max_value=50, initial=ScheduleSettings.paraphrases
    )
    steer = forms.CharField(required=False, max_length=300, help_text="FIELD=VALUE")
    balance = forms.CharField(required=False, max_length=50, help_text="FIELD")


def run_row(run: TrainingRun) -> dict:
    """What the runs table and its JSON endpoint show of one run."""
    last = run.history[-1] if run.history else {}
    checkpoint = getattr(run, "checkpoint", None)
    return {
        "id": run.pk,
        "status": run.status,
        "status_label": run.get_status_display(),
        "epoch": run.epoch,
        "epochs": run.epochs,
        "percent": round(100 * run.progress),
        "loss": last.get("loss"),
        "rho": last.get("rho"),
        "error": run.error,
        "finished": run.is_finished,
        "cancel_requested": run.cancel_requested,
        "version": checkpoint.version if checkpoint else None,
    }


@staff_only
def runs(request: HttpRequest) -> HttpResponse:
    """Training runs with live progress; start a run, take a snapshot, cancel."""
    shown = list(selectors.runs().order_by("-id")[:RUNS_SHOWN])
    return render(
        request,
        "dashboards/runs.html",
        {
            "runs": [(run, run_row(run)) for run in shown],
            "snapshots": selectors.snapshots()[:20],
            "default_encoder": settings.TRAINING["DEFAULT_ENCODER"],
            "default_epochs": ScheduleSettings.epochs,
            "reliability_default": settings.STEREORANK["LABEL_WEIGHTING"] == RELIABILITY,
            "section": "runs",
        },
    )


@staff_only
@require_GET
def runs_progress(request: HttpRequest) -> JsonResponse:
    """``?ids=1,2``: the live state of those runs, polled by the runs page."""
    try:
        ids = [int(i) for i in request.GET.get("ids", "").split(",") if i.strip()]
    except ValueError:
        return JsonResponse({"error": "ids must be comma-separated run ids."}, status=400)
    if len(ids) > RUNS_SHOWN:
        return JsonResponse({"error": f"At most {RUNS_SHOWN} ids at a time."}, status=400)
    rows = [run_row(r) for r in selectors.runs().filter(pk__in=ids).order_by("-id")]
    return JsonResponse({"runs": rows})


@staff_only
@require_POST
@refusals_as_messages("dashboards:runs")
def snapshot_create(request: HttpRequest) -> HttpResponse:
    """Freeze today's labels as a new snapshot."""
    include_synthetic = request.POST.get("include_synthetic") == "on"
    weighting = RELIABILITY if request.POST.get("reliability") == "on" else NONE
    snap = services.create_snapshot(
        include_synthetic=include_synthetic, weighting=weighting, user=request.user
    )
    weighted = ", reliability-weighted" if weighting == RELIABILITY else ""
    messages.success(request, f"Snapshot {snap.pk} taken ({snap.example_count} items{weighted}).")
    return redirect("dashboards:runs")


@staff_only
@require_POST
@refusals_as_messages("dashboards:runs")
def run_start(request: HttpRequest) -> HttpResponse:
    """Start a training run on a snapshot (queued on the gpu queue)."""
    form = RunForm(request.POST)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("dashboards:runs")
    data = form.cleaned_data
    run = services.start_run(
        data["snapshot"],
        encoder=data["encoder"] or None,
        epochs=data["epochs"],
        paraphrases=data["paraphrases"],
        steering=parse_steering(data["steer"], data["balance"]),
        user=request.user,
    )
    messages.success(request, f"Run {run.pk} queued.")
    return redirect("dashboards:runs")


@staff_only
@require_POST
@refusals_as_messages("dashboards:runs")
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Ask a run to stop; the worker stops at its next check."""
    run = services.cancel_run(found(selectors.run(run_id), "No such run."), user=request.user)
    done = "cancelled" if run.is_finished else "asked to stop"
    messages.success(request, f"Run {run.pk} {done}.")
    return redirect("dashboards:runs")
