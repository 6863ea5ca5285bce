"""The retraining schedules (edited in the admin) and every decision with its reason."""

from django.http import HttpRequest, HttpResponse

from training import selectors

from .base import page, staff_only


@staff_only
def schedules(request: HttpRequest) -> HttpResponse:
    """The retraining schedules (edited in the admin) and their recent decisions."""
    tasks = selectors.retrain_schedules()
    decisions = selectors.retrain_decisions(50)
    return page(
        request,
        "dashboards/schedules.html",
        {"tasks": tasks, "decisions": decisions, "section": "schedules"},
    )
