"""URLs of the staff dashboards, under /dashboards/."""

from django.urls import path

from . import dashboards

app_name = "dashboards"

urlpatterns = [
    path("", dashboards.progress, name="progress"),
]
