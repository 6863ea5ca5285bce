"""Admin: read the pipeline's records; edit the retraining schedules as fields.

Writes of records (snapshot, train, promote, roll back) go through the dashboards, the
API or the commands, which call ``training.services``; here the records are read-only,
so no invariant can be bypassed by a form. A retraining schedule (django-celery-beat's
``PeriodicTask`` of ``training.scheduled_retrain``) is edited as named fields, not as
its JSON kwargs: ``ScheduleForm`` checks them with ``ScheduleSettings.from_kwargs`` (a
bad value is a message and nothing is saved) and writes the kwargs the step reads.

The records are scoped to the viewer (``LineageScopedAdmin``: a snapshot's whole
lineage, ``training.access``); the schedules are the installation's (the superuser's)."""

import json
from dataclasses import fields

from django import forms
from django.conf import settings
from django.contrib import admin
from django.db.models import Q
from django.utils.html import escape
from django_celery_beat import admin as beat_admin
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from annotation.models import DemographicField
from annotation.models.studies import Study
from training import models, selectors
from training.access import LineageScopedAdmin
from training.errors import ScheduleError
from training.ml import recipes
from training.schedule_settings import TASK_NAME, ScheduleSettings

# --- retraining schedules ---------------------------------------------------------------

# The settings that decide when a schedule retrains and whether it promotes; the others
# say what it trains. A setting ScheduleSettings gains is shown with the latter.
POLICY = ("min_new_rankings", "promotion", "group_fields", "group_margin")

# Each setting's label and help text, in the order shown (a setting ScheduleSettings gains
# comes last). Plain text: the admin shows help texts as HTML.
SETTING_TEXTS = {
    "studies": (
        "Studies",
        "The collection studies whose new rankings count and are snapshotted together; "
        "none ticked: the default study.",
    ),
    "encoder": ("Encoder", ""),  # its help names the default (ScheduleForm.__init__)
    "recipe": (
        "Recipe",
        "The named hyper-parameters each run starts from (a recipe search, when on, "
        "replaces those it chooses).",
    ),
    "epochs": ("Epochs", "Training epochs of each run."),
    "paraphrases": ("Paraphrases per prompt", "0: no augmentation."),
    "include_synthetic": (
        "Count synthetic annotators",
        "Their rankings count and train too (for demonstrations and tests).",
    ),
    "search": (
        "Search the recipe first",
        "Choose the recipe by grouped cross-validation on the train split, then train it.",
    ),
    "min_new_rankings": (
        "New rankings before retraining",
        "Retrain once this many new rankings of its studies count, since their newest snapshot.",
    ),
    "promotion": ("Promotion", ""),
    "group_fields": (
        "Check these groups",
        "With auto promotion, a new version is kept back when a group of one of these "
        "fields loses alignment against the active version by more than the margin.",
    ),
    "group_margin": (
        "Group margin",
        "How much alignment (0 to 1) a group may lose before the new version is kept back.",
    ),
}
# Bounds a field checks itself, so that its message stands beside it; the rest, and these
# again, are ScheduleSettings.from_kwargs's.
BOUNDS = {
    "min_new_rankings": {"min_value": 1},
    "epochs": {"min_value": 1},
    "paraphrases": {"min_value": 0},
    "group_margin": {"min_value": 0},
}
PROMOTION_CHOICES = [
    ("manual", "Manual: a new version stays a candidate until staff promote it"),
    (
        "auto",
        "Auto: promoted when the paired 95% interval of its rho difference against the "
        "active version is above zero",
    ),
]
PERIODS = [
    (IntervalSchedule.MINUTES, "minutes"),
    (IntervalSchedule.HOURS, "hours"),
    (IntervalSchedule.DAYS, "days"),
]


class CommaList(forms.CharField):
    """A list setting without choices, written comma-separated."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value) -> list[str]:
        return [
            part.strip() for part in (super().to_python(value) or "").split(",") if part.strip()
        ]


def _setting_field(name: str, default) -> forms.Field:
    """The form field of one schedule setting: by name where it has choices, else by the
    type of its default."""
    label, help_text = SETTING_TEXTS.get(name, (name.replace("_", " ").capitalize(), ""))
    common = {"label": label, "help_text": help_text, **BOUNDS.get(name, {})}
    if name == "studies":
        return forms.ModelMultipleChoiceField(
            Study.objects.filter(kind=Study.Kind.COLLECTION).order_by("slug"),
            to_field_name="slug",
            required=False,
            widget=forms.CheckboxSelectMultiple,
            **common,
        )
    if name == "group_fields":  # choices: the demographic fields, read per form
        return forms.MultipleChoiceField(
            required=False, widget=forms.CheckboxSelectMultiple, **common
        )
    if name == "promotion":
        return forms.ChoiceField(choices=PROMOTION_CHOICES, widget=forms.RadioSelect, **common)
    if name == "recipe":
        known = ", ".join(name for name, _ in recipes.choices())
        return forms.ChoiceField(
            choices=lambda: [("", f"The default ({recipes.DEFAULT_RECIPE})")] + recipes.choices(),
            required=False,
            error_messages={"invalid_choice": f"%(value)s is not a recipe: choose one of {known}."},
            **common,
        )
    if isinstance(default, bool):
        return forms.BooleanField(required=False, **common)
    if isinstance(default, int):
        return forms.IntegerField(**common)
    if isinstance(default, float):
        return forms.FloatField(**common)
    if isinstance(default, tuple):
        return CommaList(required=False, **{**common, "help_text": "Comma-separated."})
    return forms.CharField(required=False, max_length=300, **common)


def _kwarg(field: forms.Field, value):
    """A cleaned value as the schedule's JSON kwargs hold it."""
    if isinstance(field, forms.ModelMultipleChoiceField):
        return [study.slug for study in value]
    if isinstance(field, forms.MultipleChoiceField):
        return list(value)
    if isinstance(value, str):
        return value.strip()
    return value


def stored_settings(task: PeriodicTask) -> tuple[dict, str]:
    """A schedule's stored kwargs, and why they are unusable ("" when they are not)."""
    try:
        kwargs = json.loads(task.kwargs or "{}")
    except ValueError as error:
        return {}, f"the settings are not JSON ({error})."
    if not isinstance(kwargs, dict):
        return {}, "the settings are not a JSON object."
    try:
        ScheduleSettings.from_kwargs({k: v for k, v in kwargs.items() if k != "schedule"})
    except ScheduleError as error:
        return kwargs, str(error)
    return kwargs, ""


class ScheduleFormBase(forms.ModelForm):
    """A retraining schedule: its name, whether it runs, how often (an interval), and each
    of its settings as a field; saved as the kwargs ``ScheduleSettings.from_kwargs`` reads
    (``ScheduleForm`` adds one field per setting)."""

    every = forms.IntegerField(min_value=1, label="Run every")
    period = forms.ChoiceField(choices=PERIODS, label="Unit", initial=IntervalSchedule.MINUTES)

    class Meta:
        model = PeriodicTask
        fields = ["name", "enabled", "description"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields[
            "encoder"
        ].help_text = f"Empty: the default encoder, {settings.TRAINING['DEFAULT_ENCODER']}."
        self.fields["group_fields"].choices = [
            (key, f"{label} ({key})")
            for key, label in DemographicField.objects.order_by("order", "key").values_list(
                "key", "label"
            )
        ]
        stored, self.stored_problem = stored_settings(self.instance)
        for setting in fields(ScheduleSettings):
            value = stored.get(setting.name, setting.default)
            self.initial.setdefault(
                setting.name, list(value) if isinstance(value, list | tuple) else value
            )
        interval = self.instance.interval if self.instance.interval_id else None
        if interval is not None and interval.period in dict(PERIODS):
            self.initial.setdefault("every", interval.every)
            self.initial.setdefault("period", interval.period)

    def clean(self):
        data = super().clean()
        if self.errors:  # each field's own message says what is wrong
            return data
        kwargs = {
            s.name: _kwarg(self.fields[s.name], data[s.name]) for s in fields(ScheduleSettings)
        }
        try:
            ScheduleSettings.from_kwargs(kwargs)
        except ScheduleError as error:  # its message starts with the setting it is about
            named = str(error).split(" ", 1)[0]
            self.add_error(named if named in kwargs else None, str(error))
            return data
        self.instance.task = TASK_NAME
        self.instance.kwargs = json.dumps(kwargs, indent=1)
        every, period = data["every"], data["period"]
        self.instance.interval = IntervalSchedule.objects.filter(
            every=every, period=period
        ).first() or IntervalSchedule(every=every, period=period)
        self.instance.crontab = self.instance.solar = self.instance.clocked = None
        return data

    def save(self, commit: bool = True) -> PeriodicTask:
        interval = self.instance.interval
        if interval is not None and interval.pk is None:  # a new cadence, made once valid
            interval.save()
            self.instance.interval = interval
        return super().save(commit)


ScheduleForm = type(
    "ScheduleForm",
    (ScheduleFormBase,),
    {s.name: _setting_field(s.name, s.default) for s in fields(ScheduleSettings)},
)


def schedule_fieldsets(problem: str = "") -> tuple:
    """The change form of a retraining schedule: its settings as fields, in groups."""
    names = [s.name for s in fields(ScheduleSettings)]
    names = [n for n in SETTING_TEXTS if n in names] + [n for n in names if n not in SETTING_TEXTS]
    trains = {"fields": [n for n in names if n not in POLICY]}
    if problem:
        trains["description"] = escape(
            f"The stored settings are unusable ({problem}), so each step skips: correct "
            "them below and save."
        )
    return (
        (None, {"fields": ("name", "enabled", "description")}),
        ("How often", {"fields": (("every", "period"), "last_run_at")}),
        ("What it trains", trains),
        ("When it retrains and promotes", {"fields": [n for n in names if n in POLICY]}),
    )


admin.site.unregister(PeriodicTask)


@admin.register(PeriodicTask)
class PeriodicTaskAdmin(beat_admin.PeriodicTaskAdmin):
    """django-celery-beat's periodic tasks; a retraining schedule (``?task=`` names it on
    the add page) is edited with ``ScheduleForm``, every other task as the package has it."""

    def _retraining(self, request, obj: PeriodicTask | None) -> bool:
        if obj is not None:
            return obj.task == TASK_NAME
        return request.GET.get("task") == TASK_NAME

    def get_form(self, request, obj=None, change=False, **kwargs):
        if self._retraining(request, obj):
            kwargs["form"] = ScheduleForm
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        if self._retraining(request, obj):
            return schedule_fieldsets(stored_settings(obj)[1] if obj is not None else "")
        return super().get_fieldsets(request, obj)


# --- the pipeline's records, read-only --------------------------------------------------


@admin.register(models.DatasetSnapshot)
class DatasetSnapshotAdmin(LineageScopedAdmin):
    list_display = [
        "id",
        "created_at",
        "include_synthetic",
        "ranking_count",
        "example_count",
        "train_count",
        "eval_count",
        "content_hash",
        "erasures_after",
    ]
    list_filter = ["include_synthetic"]
    exclude = ["examples", "group_labels"]

    def get_queryset(self, request):
        return selectors.snapshots(request.user)  # the viewer's: their whole lineage

    @admin.display(description="erasures since")
    def erasures_after(self, snapshot: models.DatasetSnapshot) -> int:
        """Annotators erased after this snapshot was frozen (their rankings are in it)."""
        return snapshot.erasures_after


@admin.register(models.Augmentation)
class AugmentationAdmin(LineageScopedAdmin):
    list_display = ["id", "snapshot", "backend", "model", "n", "status", "created_at"]
    list_filter = ["backend", "status"]


@admin.register(models.Paraphrase)
class ParaphraseAdmin(LineageScopedAdmin):
    snapshot_path = "augmentation__snapshot"
    list_display = ["id", "origin_key", "text", "backend", "template", "cosine"]
    list_filter = ["backend"]
    search_fields = ["text", "origin_key"]


@admin.register(models.TrainingRun)
class TrainingRunAdmin(LineageScopedAdmin):
    list_display = [
        "id",
        "snapshot",
        "encoder",
        "status",
        "epoch",
        "epochs",
        "attempts",
        "created_at",
    ]
    list_filter = ["status", "encoder"]


@admin.register(models.Checkpoint)
class CheckpointAdmin(LineageScopedAdmin):
    snapshot_path, checkpoint_path = None, ""
    list_display = ["version", "status", "rho", "snapshot", "encoder_name", "created_at"]
    list_filter = ["status", "encoder_name"]

    @admin.display(description="rho (own snapshot)")
    def rho(self, checkpoint: models.Checkpoint) -> float | None:
        return checkpoint.metrics.get("spearman")


@admin.register(models.Evaluation)
class EvaluationAdmin(LineageScopedAdmin):
    checkpoint_path = "checkpoint"
    list_display = ["id", "checkpoint", "snapshot", "created_at"]
    exclude = ["predictions"]


@admin.register(models.RegistryEvent)
class RegistryEventAdmin(LineageScopedAdmin):
    snapshot_path, checkpoint_path = None, "checkpoint"
    list_display = ["at", "action", "checkpoint", "previous", "user", "reason"]
    list_filter = ["action"]


@admin.register(models.RetrainDecision)
class RetrainDecisionAdmin(LineageScopedAdmin):
    """A schedule's decisions, for those who may see the schedule (``selectors``)."""

    def visible(self, request) -> Q:
        return Q(pk__in=selectors.retrain_decisions(request.user, None).values("pk"))

    list_display = ["at", "schedule", "decision", "reason", "snapshot", "run", "checkpoint"]
    list_filter = ["decision", "schedule"]


@admin.register(models.EncoderGate)
class EncoderGateAdmin(LineageScopedAdmin):
    checkpoint_path = "checkpoint"
    list_display = ["at", "checkpoint", "backend", "quantization", "snapshot", "passed"]
    list_filter = ["passed", "backend", "quantization"]


@admin.register(models.LearningCurve)
class LearningCurveAdmin(LineageScopedAdmin):
    list_display = ["snapshot", "status", "draws", "n_rankings", "finished_at"]
    list_filter = ["status"]
