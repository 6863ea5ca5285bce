"""The retraining schedules, each setting shown as a named field (edited as fields on the
schedule's admin page: ``training.admin.ScheduleForm``), and every decision with its
reason."""

import json
from dataclasses import fields

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django_celery_beat.models import PeriodicTask

from training import selectors
from training.errors import ScheduleError
from training.ml import recipes
from training.services import ScheduleSettings

from .base import page, staff_only

# The settings' names as people read them, in the order shown; a setting ScheduleSettings
# gains and not named here is shown last, under its own name.
LABELS = {
    "studies": "Studies",
    "min_new_rankings": "Retrain after",
    "promotion": "Promotion",
    "encoder": "Encoder",
    "recipe": "Recipe",
    "epochs": "Epochs",
    "paraphrases": "Paraphrases per prompt",
    "include_synthetic": "Synthetic annotators",
    "search": "Recipe search",
    "group_fields": "Group check",
    "group_margin": "Group margin",
}


def _shown(name: str, value, schedule: ScheduleSettings) -> str:
    """One setting's value in words."""
    if name == "studies":
        return ", ".join(value) if value else "the default study"
    if name == "min_new_rankings":
        return f"{value} new rankings"
    if name == "promotion":
        if value == "manual":
            return "manual: a new version stays a candidate"
        return "auto: promoted when its paired 95% interval against the active one is above zero"
    if name == "encoder":
        return value or f"the default ({settings.TRAINING['DEFAULT_ENCODER']})"
    if name == "recipe":
        named = value or recipes.DEFAULT_RECIPE
        words = f"{named}: {recipes.DESCRIPTIONS.get(named, 'no description')}"
        return words if value else f"the default ({words})"
    if name == "group_fields":
        return ", ".join(value) if value else "none"
    if name == "group_margin" and not schedule.group_fields:
        return f"{value} (no group check)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    return str(value)


def describe(task: PeriodicTask) -> dict:
    """A schedule's cadence and its settings as (label, value) rows, or the reason its
    settings are unusable (its steps then skip, saying so)."""
    cadence = task.interval or task.crontab or task.solar or task.clocked
    out = {"task": task, "cadence": str(cadence) if cadence else "no schedule", "settings": []}
    try:
        kwargs = json.loads(task.kwargs or "{}")
        if not isinstance(kwargs, dict):
            raise ScheduleError("the settings are not a JSON object.")
        kwargs.pop("schedule", None)  # a name for a manual run, not a setting
        schedule = ScheduleSettings.from_kwargs(kwargs)
    except (ValueError, ScheduleError) as error:
        out["problem"] = str(error)
        return out
    names = [f.name for f in fields(schedule)]
    ordered = [n for n in LABELS if n in names] + [n for n in names if n not in LABELS]
    out["settings"] = [
        (LABELS.get(n, n.replace("_", " ")), _shown(n, getattr(schedule, n), schedule))
        for n in ordered
    ]
    return out


@staff_only
def schedules(request: HttpRequest) -> HttpResponse:
    """The retraining schedules, their settings as fields, and their recent decisions."""
    tasks = [describe(t) for t in selectors.retrain_schedules(request.user)]
    decisions = selectors.retrain_decisions(request.user, 50)
    return page(
        request,
        "dashboards/schedules.html",
        {"tasks": tasks, "decisions": decisions, "section": "schedules"},
    )
