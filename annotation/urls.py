from django.urls import path

from . import api

urlpatterns = [
    path("auth/token/", api.TokenView.as_view(), name="api-token"),
    path("tasks/next/", api.NextTaskView.as_view(), name="api-next-task"),
    path("tasks/<int:task_id>/ranking/", api.SubmitRankingView.as_view(), name="api-ranking"),
    path("me/", api.MeView.as_view(), name="api-me"),
    path("me/consent/", api.ConsentView.as_view(), name="api-consent"),
    path("export/rankings/", api.ExportView.as_view(), name="api-export-rankings"),
    path("export/pairs/", api.PairsExportView.as_view(), name="api-export-pairs"),
]
