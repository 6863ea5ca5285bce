"""Training runs with live progress: take a snapshot, start a run, cancel one; a run's page
with its hyper-parameter search (every configuration's CV rho, plotted)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from annotation.access import roles
from core.ids import as_id
from training import selectors, services
from training.errors import NothingToSnapshot
from training.ml.recipes import DEFAULT_RECIPE, RECIPES
from training.ml.recipes import choices as recipe_choices
from training.models import DatasetSnapshot, TrainingRun
from training.services import NONE, RELIABILITY, ScheduleSettings, parse_steering

from .base import chosen_study, form_errors, found, page, staff_action, staff_only
from .charts import ACCENT, MUTED, PRIMARY, _empty, _figure, draw_response

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RUNS_SHOWN = 30


class RunForm(forms.Form):
    snapshot = forms.ModelChoiceField(DatasetSnapshot.objects.none())
    encoder = forms.CharField(required=False, max_length=300)
    recipe = forms.ChoiceField(choices=recipe_choices, required=False)
    epochs = forms.IntegerField(min_value=1, max_value=1000, required=False)
    paraphrases = forms.IntegerField(
        min_value=0, max_value=50, initial=ScheduleSettings.paraphrases
    )
    steer = forms.CharField(required=False, max_length=300, help_text="FIELD=VALUE")
    balance = forms.CharField(required=False, max_length=50, help_text="FIELD")
    search = forms.BooleanField(required=False)

    def __init__(self, *args, viewer, **kwargs):
        super().__init__(*args, **kwargs)  # the snapshots the viewer may train on
        self.fields["snapshot"].queryset = selectors.snapshots(viewer, roles.RUN_STUDY)


def augmenting(run: TrainingRun) -> str:
    """What a queued run's augmentation is doing, in words; "" when it waits for nothing."""
    aug = run.augmentation
    if run.status != TrainingRun.Status.QUEUED or aug is None:
        return ""
    if aug.status in (aug.Status.DONE, aug.Status.FAILED):  # a failure fails the run too
        return ""
    if aug.status == aug.Status.QUEUED:
        return f"waiting for augmentation #{aug.pk} ({aug.n} paraphrases per prompt)"
    progress = (aug.stats or {}).get("progress")
    if not progress:
        return f"augmentation #{aug.pk}: writing {aug.n} paraphrases per prompt"
    done, total = progress["embedded"], progress["total"]
    share = f" ({100 * done // total}%)" if total else ""
    return f"augmentation #{aug.pk}: {done:,} of {total:,} texts embedded{share}"


def run_row(run: TrainingRun) -> dict:
    """What the runs table and its JSON endpoint show of one run."""
    history = run.attempt_history
    last = history[-1] if history else {}
    checkpoint = getattr(run, "checkpoint", None)
    stage = augmenting(run)
    status, label = ("augmenting", "Augmenting") if stage else (run.status, None)
    search = run.search or {}
    if run.status == TrainingRun.Status.SEARCHING:
        stage = (
            f"search: {search.get('done', 0)} of {search.get('total', 0)} fold-epochs, "
            f"{search.get('configurations', 0)} configurations"
        )
    return {
        "id": run.pk,
        "status": status,
        "status_label": label or run.get_status_display(),
        "stage": stage or f"epoch {run.epoch} of {run.epochs}",
        "searched": bool(search),
        "recipe": run.hyperparameters.get("recipe", ""),
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
    shown = list(selectors.runs(request.user).order_by("-id")[:RUNS_SHOWN])
    return page(
        request,
        "dashboards/runs.html",
        {
            "runs": [(run, run_row(run)) for run in shown],
            "snapshots": selectors.snapshots(request.user)[:20],
            "default_encoder": settings.TRAINING["DEFAULT_ENCODER"],
            "recipes": recipe_choices(),
            "default_recipe": DEFAULT_RECIPE,
            "default_epochs": RECIPES[DEFAULT_RECIPE]["epochs"],
            "reliability_default": settings.STEREORANK["LABEL_WEIGHTING"] == RELIABILITY,
            "section": "runs",
        },
    )


@staff_only
@require_GET
def runs_progress(request: HttpRequest) -> JsonResponse:
    """``?ids=1,2``: the live state of those runs, polled by the runs page."""
    ids = [as_id(i.strip()) for i in request.GET.get("ids", "").split(",") if i.strip()]
    if None in ids:  # not ASCII digits, or past a bigint (an overflow was a 500)
        return JsonResponse({"error": "ids must be comma-separated run ids."}, status=400)
    if len(ids) > RUNS_SHOWN:
        return JsonResponse({"error": f"At most {RUNS_SHOWN} ids at a time."}, status=400)
    mine = selectors.runs(request.user)
    rows = [run_row(r) for r in mine.filter(pk__in=ids).order_by("-id")]
    return JsonResponse({"runs": rows})


@staff_action("dashboards:runs")
def snapshot_create(request: HttpRequest) -> HttpResponse:
    """Freeze today's labels of the chosen study as a new snapshot."""
    study = chosen_study(request, roles.RUN_STUDY)
    include_synthetic = request.POST.get("include_synthetic") == "on"
    weighting = RELIABILITY if request.POST.get("reliability") == "on" else NONE
    try:
        snap = services.create_snapshot(
            include_synthetic=include_synthetic,
            weighting=weighting,
            user=request.user,
            studies=[study],
        )
    except NothingToSnapshot:  # the service's hint names the command's flag; this is a form
        tick = "" if include_synthetic else ' (tick "include synthetic annotators" to count theirs)'
        messages.error(request, f"No rankings of {study.name} to snapshot{tick}.")
        return redirect("dashboards:runs")
    weighted = ", reliability-weighted" if weighting == RELIABILITY else ""
    messages.success(
        request,
        f"Snapshot {snap.pk} taken ({snap.example_count} items{weighted}) from {study.name}.",
    )
    return redirect("dashboards:runs")


@staff_action("dashboards:runs")
def run_start(request: HttpRequest) -> HttpResponse:
    """Start a training run on a snapshot (queued on the gpu queue)."""
    form = RunForm(request.POST, viewer=request.user)
    if not form.is_valid():
        messages.error(request, form_errors(form))
        return redirect("dashboards:runs")
    data = form.cleaned_data
    run = services.start_run(
        data["snapshot"],
        encoder=data["encoder"] or None,
        epochs=data["epochs"],
        recipe=data["recipe"] or None,
        paraphrases=data["paraphrases"],
        steering=parse_steering(data["steer"], data["balance"]),
        search=data["search"] or None,
        user=request.user,
    )
    messages.success(request, f"Run {run.pk} queued.")
    return redirect("dashboards:runs")


@staff_action("dashboards:runs")
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Ask a run to stop; the worker stops at its next check."""
    run = found(selectors.run(run_id, request.user, roles.RUN_STUDY), "No such run.")
    run = services.cancel_run(run, user=request.user)
    done = "cancelled" if run.is_finished else "asked to stop"
    messages.success(request, f"Run {run.pk} {done}.")
    return redirect("dashboards:runs")


def search_points(run: TrainingRun) -> list[list]:
    """``[mean, low, high]`` of each configuration the run's search scored (None: no figure)."""
    return [[s["mean"], *(s["ci"] or [None, None])] for s in (run.search or {}).get("scores", [])]


def _order(points: list[list]) -> list[int]:
    """Indices of ``points``, the best mean CV rho first (no figure last)."""

    def key(i: int) -> float:
        mean = points[i][0]
        return -mean if mean is not None and math.isfinite(mean) else math.inf

    return sorted(range(len(points)), key=key)


def search_figure(points: list[list], chosen: int | None, title: str = "") -> Figure:
    """Each configuration's mean CV rho with its 95% interval, best first; the chosen one
    orange."""
    fig, ax = _figure((7, 3.2))
    shown = [i for i in _order(points) if points[i][0] is not None]
    if not shown:
        return _empty(fig, ax, "No configuration scored yet")
    for x, i in enumerate(shown):
        mean, low, high = points[i]
        colour, size = (ACCENT, 7) if i == chosen else (PRIMARY, 3)
        if low is not None and high is not None:
            yerr = [[max(mean - low, 0.0)], [max(high - mean, 0.0)]]
            ax.errorbar([x], [mean], yerr=yerr, fmt="o", ms=size, color=colour, elinewidth=0.6)
        else:
            ax.plot([x], [mean], "o", ms=size, color=colour)
    lows = [points[i][1] if points[i][1] is not None else points[i][0] for i in shown]
    ax.axhline(0.0, color=MUTED, linewidth=0.8, linestyle="--")
    ax.set_ylim(min(0.0, *lows) - 0.05, 1.0)
    ax.set_xlim(-1, len(shown))
    ax.set_xlabel("configuration, best mean CV rho first (orange: chosen)")
    ax.set_ylabel("CV Spearman's rho (95% CI)")
    if title:
        ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    return fig


@staff_only
def run_page(request: HttpRequest, run_id: int) -> HttpResponse:
    """One run: its recipe and progress, and its search's configurations (plot and table)."""
    run = found(selectors.runs(request.user).filter(pk=run_id).first(), "No such run.")
    search = run.search or {}
    scores = search.get("scores", [])
    rows = [
        {"rank": r + 1, "index": i, **scores[i]} for r, i in enumerate(_order(search_points(run)))
    ]
    chosen = scores[search["chosen"]] if "chosen" in search else None
    return page(
        request,
        "dashboards/run.html",
        {
            "run": run,
            "row": run_row(run),
            "search": search,
            "rows": rows,
            "chosen": chosen,
            "checkpoint": getattr(run, "checkpoint", None),
            "section": "runs",
        },
    )


@staff_only
def run_search_chart(request: HttpRequest, run_id: int) -> HttpResponse:
    """The plot of a run's search: every configuration's CV rho with its interval."""
    run = found(selectors.runs(request.user).filter(pk=run_id).first(), "No such run.")
    return draw_response(
        request,
        "run-search",
        search_figure,
        points=search_points(run),
        chosen=(run.search or {}).get("chosen"),
        title=f"run {run.pk}: {len(search_points(run))} configurations, "
        f"{(run.search or {}).get('space', {}).get('folds', 0)}-fold grouped CV",
    )
