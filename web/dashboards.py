"""Staff dashboards: annotation progress, training runs, the registry, comparison.

Views are thin: reads are the small query functions here (each a fixed number of
queries whatever the number of rows), writes go through ``training.services``.
Demographics are personal data; every view here is staff only.
"""

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial, wraps
from pathlib import Path
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, F, Q, Sum
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_celery_beat.models import PeriodicTask

from annotation.exports import pseudonym
from annotation.models import AnnotatorProfile, DemographicField, Occupation
from training import services
from training.models import (
    Checkpoint,
    DatasetSnapshot,
    Evaluation,
    RegistryEvent,
    RetrainDecision,
    TrainingRun,
)
from training.schedules import TASK_NAME, ScheduleSettings
from training.tasks import evaluate_checkpoint

from .charts import RhoPoint, chart_response, occupations_side_by_side, rho_across_versions

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


# --- training runs ---------------------------------------------------------------------------

RUNS_SHOWN = 30


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


def _runs():
    # Not the snapshot: its examples are large and the page shows only its id.
    return TrainingRun.objects.select_related("checkpoint")


@staff_only
def runs(request: HttpRequest) -> HttpResponse:
    """Training runs with live progress; start a run, take a snapshot, cancel."""
    shown = list(_runs().order_by("-id")[:RUNS_SHOWN])
    return render(
        request,
        "dashboards/runs.html",
        {
            "runs": [(run, run_row(run)) for run in shown],
            "snapshots": DatasetSnapshot.objects.order_by("-id").defer("examples", "group_labels")[
                :20
            ],
            "default_encoder": settings.TRAINING["DEFAULT_ENCODER"],
            "default_epochs": ScheduleSettings.epochs,
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
    return JsonResponse({"runs": [run_row(r) for r in _runs().filter(pk__in=ids).order_by("-id")]})


@staff_only
@require_POST
def snapshot_create(request: HttpRequest) -> HttpResponse:
    """Freeze today's labels as a new snapshot."""
    include_synthetic = request.POST.get("include_synthetic") == "on"
    with _service_errors(request):
        snap = services.create_snapshot(include_synthetic=include_synthetic, user=request.user)
        messages.success(request, f"Snapshot {snap.pk} taken ({snap.example_count} items).")
    return redirect("dashboards:runs")


@staff_only
@require_POST
def run_start(request: HttpRequest) -> HttpResponse:
    """Start a training run on a snapshot (queued on the gpu queue)."""
    form = RunForm(request.POST)
    if not form.is_valid():
        messages.error(request, _form_errors(form))
        return redirect("dashboards:runs")
    data = form.cleaned_data
    with _service_errors(request):
        run = services.start_run(
            data["snapshot"],
            encoder=data["encoder"] or None,
            epochs=data["epochs"],
            paraphrases=data["paraphrases"],
            user=request.user,
        )
        messages.success(request, f"Run {run.pk} queued.")
    return redirect("dashboards:runs")


@staff_only
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Ask a run to stop; the worker stops at its next check."""
    run = get_object_or_404(TrainingRun, pk=run_id)
    with _service_errors(request):
        run = services.cancel_run(run, user=request.user)
        done = "cancelled" if run.is_finished else "asked to stop"
        messages.success(request, f"Run {run.pk} {done}.")
    return redirect("dashboards:runs")


# --- registry --------------------------------------------------------------------------------


def rho_points(snapshot: DatasetSnapshot | None) -> list[RhoPoint]:
    """Each version's rho with its interval: on its own snapshot, or all on one snapshot."""
    if snapshot is None:
        rows = Checkpoint.objects.order_by("version").values("version", "status", "metrics")
    else:
        rows = (
            Evaluation.objects.filter(snapshot=snapshot)
            .order_by("checkpoint__version")
            .values("metrics", version=F("checkpoint__version"), status=F("checkpoint__status"))
        )
    points = []
    for row in rows:
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


def _snapshot_param(request: HttpRequest) -> DatasetSnapshot | None:
    raw = request.GET.get("snapshot")
    if not raw:
        return None
    if not raw.isdigit():
        raise Http404("No such snapshot.")
    return get_object_or_404(DatasetSnapshot.objects.defer("examples", "group_labels"), pk=raw)


@staff_only
def registry(request: HttpRequest) -> HttpResponse:
    """Versions with their metrics and status; promote, roll back, export, import."""
    snapshot = _snapshot_param(request)
    checkpoints = list(Checkpoint.objects.select_related("parent").order_by("-version"))
    events = RegistryEvent.objects.select_related("checkpoint", "previous", "user")[:20]
    return render(
        request,
        "dashboards/registry.html",
        {
            "checkpoints": checkpoints,
            "events": events,
            "snapshot": snapshot,
            "snapshots": DatasetSnapshot.objects.defer("examples", "group_labels")[:20],
            "import_form": ImportForm(),
            "section": "registry",
        },
    )


@staff_only
def registry_chart(request: HttpRequest) -> HttpResponse:
    """Plot of rho with 95% intervals across versions (``?snapshot=`` for one snapshot)."""
    snapshot = _snapshot_param(request)
    points = rho_points(snapshot)
    title = f"on snapshot {snapshot.pk}" if snapshot else "each on its own snapshot"
    return chart_response(
        request,
        "registry-rho",
        {"points": points, "title": title},
        lambda: rho_across_versions(points, title),
    )


@staff_only
@require_POST
def registry_promote(request: HttpRequest, version: int) -> HttpResponse:
    """Make this version the active one."""
    checkpoint = get_object_or_404(Checkpoint, version=version)
    with _service_errors(request):
        services.promote(checkpoint, user=request.user, reason=request.POST.get("reason", ""))
        messages.success(request, f"Version {version} is now active.")
    return redirect("dashboards:registry")


@staff_only
@require_POST
def registry_rollback(request: HttpRequest) -> HttpResponse:
    """Make the previously active version active again."""
    with _service_errors(request):
        checkpoint = services.rollback(user=request.user, reason=request.POST.get("reason", ""))
        messages.success(request, f"Rolled back: version {checkpoint.version} is active.")
    return redirect("dashboards:registry")


@staff_only
@require_GET
def registry_export(request: HttpRequest, version: int) -> HttpResponse:
    """Download a version: ``?format=seed`` (.pth of the seed) or ``native`` (zip)."""
    checkpoint = get_object_or_404(Checkpoint, version=version)
    fmt = request.GET.get("format", "seed")
    if fmt not in EXPORT_FORMATS:
        return HttpResponseBadRequest(f"Unknown export format '{fmt}'; use seed or native.")
    folder = Path(tempfile.mkdtemp(prefix="export-"))
    name = f"stereorank-v{checkpoint.version}"
    try:
        if fmt == "seed":
            out = services.export_checkpoint(checkpoint, "seed", folder / f"{name}.pth")
        else:
            exported = services.export_checkpoint(checkpoint, "native", folder / name)
            out = Path(shutil.make_archive(str(folder / name), "zip", exported.parent, name))
    except (ValueError, ValidationError) as error:
        shutil.rmtree(folder, ignore_errors=True)
        return HttpResponseBadRequest(_message(error))
    response = FileResponse(out.open("rb"), as_attachment=True, filename=out.name)
    # The file is open; unlinking it now frees the space once the response is sent.
    shutil.rmtree(folder, ignore_errors=True)
    return response


@staff_only
@require_POST
def registry_import(request: HttpRequest) -> HttpResponse:
    """Import a seed ``.pth`` file as a new candidate version."""
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _form_errors(form))
        return redirect("dashboards:registry")
    upload = form.cleaned_data["file"]
    with tempfile.TemporaryDirectory(prefix="import-") as folder:
        path = Path(folder) / Path(upload.name).name
        with path.open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        with _service_errors(request):
            checkpoint = services.import_checkpoint(
                path, fmt="seed", encoder=form.cleaned_data["encoder"] or None, user=request.user
            )
            messages.success(request, f"Imported {upload.name} as version {checkpoint.version}.")
    return redirect("dashboards:registry")


# --- comparison ------------------------------------------------------------------------------


def _pick(request: HttpRequest) -> tuple[Checkpoint, Checkpoint, DatasetSnapshot | None] | str:
    """The versions (and snapshot) asked for, or a readable error message."""
    form = CompareForm(request.GET)
    if not form.is_valid():
        return _form_errors(form)
    data = form.cleaned_data
    return data["a"], data["b"], data["snapshot"]


@staff_only
def compare(request: HttpRequest) -> HttpResponse:
    """Pick A and B: rho of each, the paired difference with interval and p-value."""
    context: dict = {"form": CompareForm(request.GET or None), "section": "compare"}
    picked = _pick(request) if request.GET else None
    if isinstance(picked, str):
        context["error"] = picked
    elif picked is not None:
        a, b, snapshot = picked
        missing = _not_evaluated_on(snapshot, a, b)
        if missing:
            # Scoring loads the encoder: the gpu worker does it, not this request.
            for checkpoint in missing:
                transaction.on_commit(
                    partial(evaluate_checkpoint.delay, checkpoint.pk, snapshot.pk)
                )
            names = " and ".join(f"v{c.version}" for c in missing)
            context["pending"] = f"Evaluating {names} on snapshot {snapshot.pk}; reload shortly."
            return render(request, "dashboards/compare.html", context)
        try:
            result = services.compare(a, b, snapshot)
        except ValueError as error:
            context["error"] = _message(error)
        else:
            context.update(
                a=a,
                b=b,
                result=result,
                occupations=_side_by_side(result["per_occupation_a"], result["per_occupation_b"]),
                chart_query=urlencode(
                    {"a": a.version, "b": b.version, "snapshot": result["snapshot"]}
                ),
            )
    return render(request, "dashboards/compare.html", context)


def _not_evaluated_on(snapshot: DatasetSnapshot | None, *checkpoints: Checkpoint) -> list:
    """The checkpoints with no evaluation on ``snapshot`` yet (none when no snapshot asked)."""
    if snapshot is None:
        return []
    done = set(
        Evaluation.objects.filter(snapshot=snapshot, checkpoint__in=checkpoints).values_list(
            "checkpoint_id", flat=True
        )
    )
    return [c for c in checkpoints if c.pk not in done]


@staff_only
def compare_chart(request: HttpRequest) -> HttpResponse:
    """Per-occupation rho of A and B side by side, from their evaluations on one snapshot."""
    picked = _pick(request)
    if isinstance(picked, str) or picked[2] is None:
        return HttpResponseBadRequest(picked if isinstance(picked, str) else "Pick a snapshot.")
    a, b, snapshot = picked
    per = dict(
        Evaluation.objects.filter(checkpoint__in=[a, b], snapshot=snapshot).values_list(
            "checkpoint_id", "metrics__per_occupation"
        )
    )
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


# --- schedules -------------------------------------------------------------------------------


@staff_only
def schedules(request: HttpRequest) -> HttpResponse:
    """The retraining schedules (edited in the admin) and their recent decisions."""
    tasks = PeriodicTask.objects.filter(task=TASK_NAME).select_related(
        "interval", "crontab", "solar", "clocked"
    )
    decisions = RetrainDecision.objects.select_related("checkpoint")[:50]
    return render(
        request,
        "dashboards/schedules.html",
        {"tasks": tasks, "decisions": decisions, "section": "schedules"},
    )


# --- forms and helpers -----------------------------------------------------------------------

EXPORT_FORMATS = ("seed", "native")


class RunForm(forms.Form):
    snapshot = forms.ModelChoiceField(DatasetSnapshot.objects.defer("examples", "group_labels"))
    encoder = forms.CharField(required=False, max_length=300)
    epochs = forms.IntegerField(min_value=1, max_value=1000, initial=ScheduleSettings.epochs)
    paraphrases = forms.IntegerField(
        min_value=0, max_value=50, initial=ScheduleSettings.paraphrases
    )


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


class CompareForm(forms.Form):
    a = forms.ModelChoiceField(Checkpoint.objects.all(), to_field_name="version", label="A")
    b = forms.ModelChoiceField(Checkpoint.objects.all(), to_field_name="version", label="B")
    snapshot = forms.ModelChoiceField(
        DatasetSnapshot.objects.defer("examples", "group_labels"),
        label="Snapshot",
        required=False,
        empty_label="newest both were evaluated on",
    )

    def clean(self):
        data = super().clean()
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("Pick two different versions.")
        return data


def _side_by_side(per_a: dict, per_b: dict) -> list[tuple[str, float | None, float | None]]:
    return [(o, per_a.get(o), per_b.get(o)) for o in sorted(set(per_a) | set(per_b))]


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error)


def _form_errors(form: forms.Form) -> str:
    return " ".join(
        f"{form[name].label}: {' '.join(errs)}" if name != "__all__" else " ".join(errs)
        for name, errs in form.errors.items()
    )


@contextmanager
def _service_errors(request: HttpRequest) -> Iterator[None]:
    """A refused service call becomes an error message on the next page."""
    try:
        yield
    except (ValueError, ValidationError) as error:
        messages.error(request, _message(error))
