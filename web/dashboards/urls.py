"""URLs of the staff dashboards, under /dashboards/."""

from django.urls import path

from . import (
    compare,
    learning,
    perspectives,
    progress,
    quality,
    registry,
    runs,
    schedules,
    validation,
)

app_name = "dashboards"

urlpatterns = [
    path("", progress.progress, name="progress"),
    path(
        "learning-curve/<int:snapshot_id>.svg",
        learning.learning_curve_chart,
        name="learning-curve-chart",
    ),
    path(
        "learning-curve/<int:snapshot_id>/compute",
        learning.learning_curve_request,
        name="learning-curve-request",
    ),
    path("runs/", runs.runs, name="runs"),
    path("runs/progress.json", runs.runs_progress, name="runs-progress"),
    path("runs/start", runs.run_start, name="run-start"),
    path("runs/<int:run_id>/", runs.run_page, name="run"),
    path("runs/<int:run_id>/search.svg", runs.run_search_chart, name="run-search-chart"),
    path("runs/<int:run_id>/cancel", runs.run_cancel, name="run-cancel"),
    path("snapshots/new", runs.snapshot_create, name="snapshot-create"),
    path("registry/", registry.registry, name="registry"),
    path("registry/rho.svg", registry.registry_chart, name="registry-chart"),
    path("registry/rollback", registry.registry_rollback, name="rollback"),
    path("registry/import", registry.registry_import, name="import"),
    path("registry/<int:version>/promote", registry.registry_promote, name="promote"),
    path("registry/<int:version>/export", registry.registry_export, name="export"),
    path("compare/", compare.compare, name="compare"),
    path("compare/occupations.svg", compare.compare_chart, name="compare-chart"),
    path("perspectives/", perspectives.perspectives, name="perspectives"),
    path("perspectives/groups.svg", perspectives.groups_chart, name="perspectives-groups"),
    path("perspectives/versions.svg", perspectives.versions_chart, name="perspectives-versions"),
    path("schedules/", schedules.schedules, name="schedules"),
    path("quality/", quality.quality, name="quality"),
    path("quality/agreement.svg", quality.quality_agreement_chart, name="quality-chart"),
    path("quality/positions-<int:k>.svg", quality.quality_position_chart, name="position-chart"),
    path("quality/<int:profile_id>/reinstate", quality.quality_reinstate, name="reinstate"),
    path("validation/", validation.validation_studies, name="validation"),
    path("validation/<slug:slug>/", validation.validation_study, name="validation-study"),
    path("validation/<slug:slug>/means.svg", validation.validation_chart, name="validation-chart"),
]
