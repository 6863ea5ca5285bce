"""URLs of the staff dashboards, under /dashboards/."""

from django.urls import path

from . import dashboards

app_name = "dashboards"

urlpatterns = [
    path("", dashboards.progress, name="progress"),
    path("runs/", dashboards.runs, name="runs"),
    path("runs/progress.json", dashboards.runs_progress, name="runs-progress"),
    path("runs/start", dashboards.run_start, name="run-start"),
    path("runs/<int:run_id>/cancel", dashboards.run_cancel, name="run-cancel"),
    path("snapshots/new", dashboards.snapshot_create, name="snapshot-create"),
    path("registry/", dashboards.registry, name="registry"),
    path("registry/rho.png", dashboards.registry_chart, name="registry-chart"),
    path("registry/rollback", dashboards.registry_rollback, name="rollback"),
    path("registry/import", dashboards.registry_import, name="import"),
    path("registry/<int:version>/promote", dashboards.registry_promote, name="promote"),
    path("registry/<int:version>/export", dashboards.registry_export, name="export"),
    path("compare/", dashboards.compare, name="compare"),
    path("compare/occupations.png", dashboards.compare_chart, name="compare-chart"),
    path("schedules/", dashboards.schedules, name="schedules"),
]
