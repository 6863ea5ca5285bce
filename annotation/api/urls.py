from django.urls import include, path
from rest_framework.routers import SimpleRouter

from annotation.api import cards, tokens
from annotation.api import members as members_api
from annotation.api import participants as api
from annotation.api import staff as staff_api
from annotation.api import studies as study_api

staff = SimpleRouter()
staff.register("occupations", staff_api.OccupationViewSet, basename="staff-occupation")
staff.register("items", staff_api.ItemViewSet, basename="staff-item")
staff.register("tasks", staff_api.TaskViewSet, basename="staff-task")
staff.register("rankings", staff_api.RankingViewSet, basename="staff-ranking")

urlpatterns = [
    path("auth/token/", tokens.TokenView.as_view(), name="api-token"),
    path("auth/logout/", tokens.LogoutView.as_view(), name="api-logout"),
    path("auth/logout/all/", tokens.LogoutAllView.as_view(), name="api-logout-all"),
    path("tasks/next/", api.NextTaskView.as_view(), name="api-next-task"),
    path("tasks/<int:task_id>/ranking/", api.SubmitRankingView.as_view(), name="api-ranking"),
    path("cards/<int:name>/", cards.CardImageView.as_view(), name="api-card"),
    path("me/", api.MeView.as_view(), name="api-me"),
    path("me/consent/", api.ConsentView.as_view(), name="api-consent"),
    path("me/erasure/", api.ErasureView.as_view(), name="api-erasure"),
    path("me/demographics/", api.MyDemographicsView.as_view(), name="api-demographics"),
    path("export/rankings/", api.ExportView.as_view(), name="api-export-rankings"),
    path("export/pairs/", api.PairsExportView.as_view(), name="api-export-pairs"),
    path("staff/quality/", staff_api.QualityView.as_view(), name="api-staff-quality"),
    path(
        "staff/annotators/<str:name>/reinstate/",
        staff_api.ReinstateView.as_view(),
        name="api-staff-reinstate",
    ),
    path("staff/studies/", study_api.StudiesView.as_view(), name="api-staff-studies"),
    path(
        "staff/studies/<slug:slug>/transition/",
        study_api.StudyTransitionView.as_view(),
        name="api-staff-study-transition",
    ),
    path(
        "staff/studies/<slug:slug>/sampler/",
        staff_api.SamplerView.as_view(),
        name="api-staff-sampler",
    ),
    path(
        "staff/studies/<slug:slug>/members/",
        members_api.MembersView.as_view(),
        name="api-staff-members",
    ),
    path(
        "staff/studies/<slug:slug>/members/<str:username>/",
        members_api.MemberView.as_view(),
        name="api-staff-member",
    ),
    path(
        "staff/studies/<slug:slug>/access-log/",
        members_api.AccessLogView.as_view(),
        name="api-staff-access-log",
    ),
    path(
        "staff/studies/<slug:slug>/validation/",
        staff_api.ValidationReportView.as_view(),
        name="api-staff-validation",
    ),
    path("staff/", include(staff.urls)),
]
