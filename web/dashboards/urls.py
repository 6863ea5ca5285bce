"""URLs of the staff dashboards, under /dashboards/."""

from django.urls import path

from . import compare, progress, quality, registry, runs, schedules

app_name = "dashboards"

urlpatterns = [
    path("", progress.progress, name="progress"),
    path("runs/", runs.runs, name="runs"),
    path("runs/progress.json", runs.runs_progress, name="runs-progress"),
    path("runs/start", runs.run_start, name="run-start"),
    path("runs/<int:run_id>/cancel", runs.run_cancel, name="run-cancel"),
    path("snapshots/new", runs.snapshot_create, name="snapshot-create"),
    path("registry/", registry.registry, name="registry"),
    path("registry/rho.png", registry.registry_chart, name="registry-chart"),
    path("registry/rollback", registry.registry_rollback, name="rollback"),
    path("registry/import", registry.registry_import, name="import"),
    path("registry/<int:version>/promote", registry.registry_promote, name="promote"),
    path("registry/<int:version>/export", registry.registry_export, name="export"),
    path("compare/", compare.compare, name="compare"),
    path("compare/occupations.png", compare.compare_chart, name="compare-chart"),
    path("schedules/", schedules.schedules, name="schedules"),
    path("quality/", quality.quality, name="quality"),
    path("quality/agreement.png", quality.quality_agreement_chart, name="quality-chart"),
    path("quality/positions-<int:k>.png", quality.quality_position_chart, name="position-chart"),
    path("quality/<int:profile_id>/reinstate", quality.quality_reinstate, name="reinstate"),
]
