from django.urls import path

from training.api import views as api

urlpatterns = [
    path("snapshots/", api.SnapshotsView.as_view(), name="training-snapshots"),
    path("runs/", api.RunsView.as_view(), name="training-runs"),
    path("runs/<int:run_id>/", api.RunView.as_view(), name="training-run"),
    path("runs/<int:run_id>/cancel/", api.CancelRunView.as_view(), name="training-run-cancel"),
    path("checkpoints/", api.CheckpointsView.as_view(), name="training-checkpoints"),
    path("checkpoints/<int:version>/promote/", api.PromoteView.as_view(), name="training-promote"),
    path(
        "checkpoints/<int:version>/perspectives/",
        api.PerspectivesView.as_view(),
        name="training-perspectives",
    ),
    path("checkpoints/<int:version>/card/", api.CardView.as_view(), name="training-card"),
    path("checkpoints/rollback/", api.RollbackView.as_view(), name="training-rollback"),
    path("checkpoints/compare/", api.CompareView.as_view(), name="training-compare"),
]
