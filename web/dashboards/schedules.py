"""The retraining schedules (edited in the admin) and every decision with its reason."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_celery_beat.models import PeriodicTask

from training.models import RetrainDecision
from training.schedules import TASK_NAME

from .base import staff_only


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
