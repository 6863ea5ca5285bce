from django.urls import path

from annotation.portal import entry_views as entry
from annotation.portal import second_factor
from annotation.portal import study_views as portal_study
from annotation.portal import views as portal

app_name = "portal"

urlpatterns = [
    path("", portal.home, name="home"),
    path("signup/", portal.signup, name="signup"),
    path("login/", portal.PortalLoginView.as_view(), name="login"),
    path("logout/", portal_study.logout_view, name="logout"),
    path("account/second-factor/", second_factor.verify, name="second-factor"),
    path("account/second-factor/enrol/", second_factor.enrol, name="second-factor-enrol"),
    path(
        "account/second-factor/recovery-codes/",
        second_factor.recovery_codes,
        name="second-factor-recovery-codes",
    ),
    path("consent/", portal.consent, name="consent"),
    path("consent/withdraw/", portal_study.withdraw, name="withdraw"),
    path("consent/decline/", portal_study.decline, name="decline"),
    path("erased/", portal_study.erased, name="erased"),
    path("join/<slug:slug>/", entry.join, name="join"),
    path("join/<slug:slug>/decline/", entry.join_decline, name="join_decline"),
    path("join/<slug:slug>/resume/<str:secret>/", entry.resume, name="resume"),
    path("complete/", portal_study.complete, name="complete"),
    path("screened-out/", portal_study.screened_out, name="screened_out"),
    path("screened-out/reconsider/", portal_study.reconsider, name="reconsider"),
    path("screened-out/leave/", portal_study.leave, name="leave"),
    path("demographics/", portal.demographics, name="demographics"),
    path("rank/", portal.rank, name="rank"),
    path("instructions/", portal.instructions, name="instructions"),
    path("practice/", portal.practice_task, name="practice"),
]
