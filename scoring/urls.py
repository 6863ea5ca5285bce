from django.urls import path

from scoring import api, checker

app_name = "scoring"

urlpatterns = [
    path("api/score/", api.ScoreView.as_view(), name="score"),
    path("api/optimise/", api.OptimiseView.as_view(), name="optimise"),
    path("check/", checker.prompt_checker, name="check"),
]
